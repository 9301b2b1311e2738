// Finding and killing processes by scanning /proc/<pid>/stat (proc(5)): sandboxd uses it to kill
// every process of an exec's session (field 6), including ones that left the process group,
// and, for kill.all, every descendant of sandboxd.
#pragma once

#include <sys/types.h>

#include <vector>

namespace asb::sandboxd {

struct ProcEntry {
  pid_t pid = 0;
  char state = '?';   // field 3: R, S, D, Z, T, ...
  pid_t ppid = 0;     // field 4
  pid_t pgrp = 0;     // field 5
  pid_t session = 0;  // field 6
};

/// Every process visible in /proc (sandboxd's pid namespace). Processes that vanish during the
/// scan are skipped.
std::vector<ProcEntry> ScanProcesses();

/// Sends `sig` to every live (non-zombie) process whose session id is `sid`. Returns how many
/// were signalled.
int SignalSession(pid_t sid, int sig);

/// The distinct session ids (other than `sid`, 0 and 1) of the live descendants of `root`: the
/// sessions that processes started under `root` created with setsid(2). An exec's kill must
/// reach them too, or `setsid sleep 300 &` would outlive the exec's timeout.
std::vector<pid_t> DescendantSessions(pid_t root, pid_t sid);

/// Sends `sig` to every live descendant of `root` (not `root` itself). Returns how many were
/// signalled; `signalled` (optional) collects their pids.
int SignalDescendants(pid_t root, int sig, std::vector<pid_t>* signalled = nullptr);

}  // namespace asb::sandboxd

namespace asb::sandboxd {
/// True if `root` has any descendant left, live or zombie.
bool HasDescendants(pid_t root);
}  // namespace asb::sandboxd
