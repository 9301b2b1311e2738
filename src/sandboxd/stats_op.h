// The "stats" operation (protocol/stats_messages.h): the sandbox's figures as its own kernel
// keeps them, read from the commands' cgroup (the one sandboxd moves every command into, named
// by its --work-cgroup-fd descriptors) and /proc. In a microVM these are the only true figures
// (the host sees QEMU); on the host side of the ns backend the host reads the cgroups itself.
#pragma once

#include <string>
#include <vector>

#include "protocol/stats_messages.h"

namespace asb::sandboxd {

/// Reads the figures. `work_cgroup_fds` are the descriptors of the commands' `tasks`
/// files; `proc` is the proc mount ("/proc"; tests give another). A file that is missing or
/// unreadable leaves its figure 0: never an error.
protocol::SandboxStats ReadSandboxStats(const std::vector<int>& work_cgroup_fds,
                                        const std::string& proc = "/proc");

/// The counters an exec compares before and after its command (oom_killed, pids_limited).
struct LimitCounters {
  uint64_t oom_kills = 0;
  uint64_t pids_limit_hits = 0;
};

/// Reads just those counters (the same sources as ReadSandboxStats). Meaningful only where the
/// kernel is the sandbox's own (a microVM): elsewhere /proc/vmstat counts the host's kills.
LimitCounters ReadLimitCounters(const std::vector<int>& work_cgroup_fds,
                                const std::string& proc = "/proc");

/// The value of `key` in a "key value" per line text (cpu.stat, pids.events, /proc/vmstat,
/// /proc/meminfo with its " kB" unit scaled to bytes); 0 when absent.
uint64_t KeyedValue(const std::string& text, const std::string& key);

}  // namespace asb::sandboxd
