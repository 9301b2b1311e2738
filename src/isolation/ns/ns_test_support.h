// Test fixture for the ns backend's privileged tests: a backend over a private state dir and a
// private cgroup name, the real sandboxd and a real rootfs, and a snapshot of everything on
// the host that the backend could leak (mounts, loop devices, cgroup dirs, files), so each
// test can assert that Destroy left the host exactly as it found it.
//
// Inputs (skips with the reason when missing): root; env ASB_TEST_ROOTFS (default
// $AGENT_SANDBOX_DATA_DIR or /var/lib/agent-sandbox, + /templates/base/rootfs, else
// /tmp/asbtest/rootfs); env ASB_SANDBOXD or AGENT_SANDBOX_SANDBOXD (default bin/sandboxd in
// the test binary's build dir).
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <set>
#include <string>

#include "isolation/backend.h"
#include "isolation/ns/ns_backend.h"
#include "protocol/client.h"

namespace asb::isolation::ns::testing {

/// Everything the backend owns on the host, filtered to this fixture's state dir and cgroup
/// name (other engineers' tests run concurrently on the same machine).
struct HostSnapshot {
  std::set<std::string> mounts;      // mount points below the state dir
  std::set<std::string> loops;       // backing files of loop devices below the state dir
  std::set<std::string> cgroups;     // directories below <hierarchy>/<cgroup name>
  std::set<std::string> files;       // entries of the state dir (recursive, dot dirs too)
  std::set<std::string> uid_ranges;  // host uid range records owned by the state dir
  bool operator==(const HostSnapshot&) const = default;
};
std::string Describe(const HostSnapshot& s);

class NsBackendTest : public ::testing::Test {
 protected:
  void SetUp() override;
  void TearDown() override;

  /// A spec with a fresh id, the test rootfs and small limits (workspace 64 MiB).
  SandboxSpec Spec();
  /// Creates a sandbox and asserts success.
  std::shared_ptr<Sandbox> MustCreate(const SandboxSpec& spec);
  HostSnapshot Snapshot() const;
  /// Runs a shell command to completion (stdout/stderr collected, 20 s timeout).
  static protocol::CollectedExec Sh(Sandbox& sb, const std::string& command,
                                    uint64_t timeout_ms = 20'000);
  /// Builds another backend object over the same state (as after a server restart).
  std::unique_ptr<Backend> NewBackend();

  static std::string RootfsPath();
  static std::string SandboxdPath();

  std::string state_dir_;
  std::string cgroup_name_;
  std::string rootfs_;
  NsBackendOptions options_;
  std::unique_ptr<Backend> backend_;
};

}  // namespace asb::isolation::ns::testing
