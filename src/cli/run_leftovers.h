// What `agent-sandbox run` leaves if it is SIGKILLed (OOM kill, CI timeout, kill -9), and how
// that is removed (ADR 0015), as bubblewrap's --die-with-parent:
//  - Before creating its sandbox, run claims it: <state_dir>/<id>.owner, flock(2)ed by run for
//    its whole life (the file names run's pid). The lock, not the pid, says "alive": it cannot
//    be fooled by pid reuse and is released by the kernel however run dies.
//  - run starts a watcher (a fork of run named run-watch, setsid, so a kill of run's process
//    group spares it) that shares the lock and a pipe with run. When the pipe ends without
//    run's "done" byte, run died: the watcher execs the hidden `run-watch` subcommand, which
//    destroys the sandbox (ns backend Destroy, which works from names: sandboxd, workspace
//    mount, loop device, cgroups, run directory) and removes the claim. (It waits as a bare
//    fork and loads the executable only then, so a running `run` never shares its CPUs with
//    that ~5 ms of loading.)
//  - If the watcher was killed too, the next `run` or `serve` finds claims whose lock it can
//    take (no live run or watcher holds it, and the named pid is gone) and destroys those.
// A server's sandboxes live in another state dir and cgroup and are never looked at.
#pragma once

#include <CLI/CLI.hpp>
#include <memory>
#include <string>
#include <string_view>

#include "common/result.h"
#include "common/unique_fd.h"
#include "isolation/backend.h"
#include "isolation/ns/ns_backend.h"

namespace asb::cli {

/// The ns backend options of `run`'s sandboxes in `data_dir` (state dir <data_dir>/run,
/// cgroup agent-sandbox-run), apart from a server's.
isolation::ns::NsBackendOptions RunBackendOptions(const std::string& data_dir,
                                                  const std::string& sandboxd);

/// The backends `run --backend` takes, and the one it takes by default.
inline constexpr std::string_view kRunBackends[] = {"ns", "microvm"};

/// A backend of `run`'s own and the directory of its sandboxes' state and claims: for ns as
/// RunBackendOptions says; for microvm <data_dir>/run-microvm, cgroup agent-sandbox-run-vm, the
/// guest of scripts/microvm-guest.sh (<data_dir>/microvm, or $AGENT_SANDBOX_MICROVM_GUEST), no
/// network. Apart from a server's, as run's ns sandboxes are.
struct RunBackend {
  std::unique_ptr<isolation::Backend> backend;
  std::string state_dir;
};
/// Errors: kInvalidArgument for a name not in kRunBackends; the backend's own (kUnavailable
/// naming what is missing: QEMU, the guest kernel).
Result<RunBackend> MakeRunBackend(const std::string& name, const std::string& data_dir,
                                  const std::string& sandboxd);
/// Where MakeRunBackend(name, data_dir, ...) keeps its state, without making the backend.
std::string RunStateDir(const std::string& name, const std::string& data_dir);

/// run's claim on its sandbox plus its watcher; destroying it (after the sandbox is gone)
/// tells the watcher all is done, removes the claim and reaps the watcher.
class RunClaim {
 public:
  /// Claims `id` of run's `backend` (a kRunBackends name) and starts the watcher (a fork that
  /// execs this executable's `run-watch` when there is a sandbox to destroy). Errors:
  /// FromErrno of open/flock/pipe/fork.
  static Result<std::unique_ptr<RunClaim>> Start(const std::string& data_dir,
                                                 const std::string& backend, const std::string& id);
  /// Leaves the destroy of the sandbox, and the claim's removal, to the watcher, so that run
  /// can exit as soon as its command's output and exit code are out (the teardown, ~30 ms of
  /// unmount, loop detach and cgroup removal, is off the caller's path, as the kernel's is for
  /// bubblewrap). Returns false, changing nothing, when the watcher is gone: the caller then
  /// destroys the sandbox itself. After true the caller must not destroy it.
  bool HandOff();
  ~RunClaim();
  RunClaim(const RunClaim&) = delete;
  RunClaim& operator=(const RunClaim&) = delete;

 private:
  RunClaim() = default;
  std::string path_;
  UniqueFd lock_;
  UniqueFd done_w_;
  int watcher_ = -1;
};

/// Destroys the sandboxes of dead runs in `backend` (whose state dir is `state_dir`); returns
/// how many. Claims held by a live run or watcher are left alone.
int RemoveDeadRunLeftovers(isolation::Backend& backend, const std::string& state_dir);

/// The same for a data dir, with a backend of its own for each kRunBackends name whose state
/// dir exists (for `serve`); errors are logged.
void RemoveDeadRunLeftovers(const std::string& data_dir, const std::string& sandboxd);

/// Registers the hidden `run-watch` subcommand (the watcher).
void RegisterRunWatchCommand(CLI::App& app);

}  // namespace asb::cli
