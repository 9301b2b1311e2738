// sandboxd's start-up configuration: the command line (kept stable, the ns backend builds it)
// and the optional JSON config read from --config-fd.
//
//   sandboxd --listen-fd=N [--config-fd=M] [--workspace=/workspace] [--no-pid1]
//            [--work-cgroup-fd=K]... [--allow-packet-sockets] [--sudo] [--no-spare]
//   sandboxd --port=/dev/vport0p1 ...   (in a microVM guest, isolation/microvm/)
//
// --listen-fd  an inherited, bound and listening unix SOCK_STREAM socket.
// --port       instead of --listen-fd: a virtio-serial port device, which is the one connection
//              to the host.
// --config-fd  a pipe carrying one JSON object until EOF:
//              {"env":{"K":"V",...},"hostname":"sandbox"}
// --workspace  the directory file operations are confined to (default /workspace).
// --no-pid1    running on the host (tests): skip PID-1-only duties such as kill(-1).
// --work-cgroup-fd  an inherited fd of a v1 `tasks` file (at most 3): every command moves
//              itself there before exec ("0" = the writing thread), so commands are limited below
//              sandboxd's own cgroup (isolation/ns/cgroup.h). An exec fails if the move does.
// --allow-packet-sockets  commands may open AF_PACKET sockets (seccomp_policy.h).
// --no-spare   fork each command when it comes, without a spare child in the work cgroups
//              waiting for it (spare_child.h; the server's --exec-spare=false).
// --sudo       serve the sandbox's `sudo` (sudo_server.h) on its abstract socket: only where
//              the network namespace is the sandbox's own (never in host-side tests).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "common/result.h"

namespace asb::sandboxd {

struct Options {
  int listen_fd = -1;
  std::string port;  // a virtio-serial port device (microVM guest); "" with listen_fd
  int config_fd = -1;
  std::string workspace = "/workspace";
  bool pid1 = true;
  std::vector<int> work_cgroup_fds;
  bool allow_packet_sockets = false;
  bool sudo = false;
  bool spare = true;  // --no-spare: false
  /// The base environment of every command: defaults overlaid with the config's "env".
  std::map<std::string, std::string> env;
  std::string hostname;
};

/// The environment every command starts from before the config and the exec's own env:
/// PATH, HOME=/workspace, USER=sandbox, LANG=C.UTF-8.
std::map<std::string, std::string> DefaultEnv();

/// Parses argv (argv[0] is the program). Errors: kInvalidArgument naming the bad flag.
Result<Options> ParseCommandLine(const std::vector<std::string>& args);

/// Applies a config JSON object (see above) onto `options`. Errors: kInvalidArgument for
/// malformed JSON or wrong member types.
Status ApplyConfigJson(std::string_view json, Options* options);

/// Reads `fd` to EOF (blocking) and applies it with ApplyConfigJson. Closes nothing.
Status ReadConfigFd(int fd, Options* options);

}  // namespace asb::sandboxd
