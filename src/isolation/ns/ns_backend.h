// The namespaces backend ("ns"): our own container runtime in nsjail's style, the embedded
// default (ADR 0003; docs/ARCHITECTURE.md, "Isolation backends"). One file per isolation concern
// (user, mount, net, cgroup, rlimits, workspace) and one readable containment sequence in
// contain.cc, whose order is the security argument.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "common/result.h"
#include "isolation/backend.h"
#include "isolation/net/host_network.h"

namespace asb::isolation::ns {

struct NsBackendOptions {
  /// Directory of per-sandbox runtime state: <state_dir>/<id>/{sandboxd.sock, state.json,
  /// sandboxd.log, ws/ (host-side workspace mount point), workspace.img}. Created 0700.
  std::string state_dir = "/var/lib/agent-sandbox/sandboxes";
  /// Absolute path of the statically linked sandboxd binary to run as PID 1.
  std::string sandboxd_path;
  /// Name of our cgroup under each hierarchy (v1: /sys/fs/cgroup/<ctrl>/<name>/<id>; v2:
  /// <v2 mount>/<name>/<id>). Only directories below it are ever created or removed.
  std::string cgroup_name = "agent-sandbox";
  /// First host uid/gid of the ranges handed to sandboxes; sandbox slot k maps uids
  /// 0..65535 inside to uid_range_base + k*65536 .. +65535 outside.
  uint32_t uid_range_base = 1'000'000'000;
  /// Most sandboxes at once (uid range slots).
  uint32_t max_slots = 16384;
  /// Pre-formatted workspace images of the default size kept ready (0 = none), so a create
  /// does not wait for mkfs.
  uint32_t workspace_pool_size = 2;
  /// Size of the pooled images, bytes.
  uint64_t default_workspace_bytes = 1ull << 30;
  /// How long Create waits for sandboxd's handshake, milliseconds.
  int64_t start_timeout_ms = 10'000;
  /// Commands may open AF_PACKET sockets (raw packet capture; sandboxd
  /// --allow-packet-sockets). Off: socket(AF_PACKET) fails with EAFNOSUPPORT (ADR 0014).
  bool allow_packet_sockets = false;
  /// sandboxd keeps a child already in the commands' cgroups for the next command
  /// (sandboxd/spare_child.h); false passes --no-spare.
  bool exec_spare = true;
  /// The host side of networked sandboxes (ADR 0013); null = `network: true` is refused.
  std::shared_ptr<net::HostNetwork> network;
};

/// The JSON sandboxd reads from --config-fd (sandboxd/options.h): the spec's env and hostname.
/// Every backend hands it to its sandboxd (a pipe here, a disk in a microVM).
std::string SandboxdConfigJson(const SandboxSpec& spec);

/// Builds the backend. Errors: kUnavailable when the host lacks what it needs (user
/// namespaces, a memory/pids/cpu cgroup controller on v1 or v2, the sandboxd binary, mkfs.ext4).
Result<std::unique_ptr<Backend>> MakeNsBackend(const NsBackendOptions& options);

}  // namespace asb::isolation::ns
