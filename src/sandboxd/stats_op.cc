#include "sandboxd/stats_op.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <sstream>

#include "common/unique_fd.h"

namespace asb::sandboxd {

namespace {

// A small control or proc file's text; "" when it cannot be read.
std::string ReadText(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return "";
  std::string out;
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0 || out.size() > (1u << 20)) break;
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

uint64_t Number(const std::string& path) {
  return std::strtoull(ReadText(path).c_str(), nullptr, 10);
}

// The directory of the cgroup whose `tasks` (or cgroup.procs) `fd` is open on (as this process's
// mount namespace names it), or "".
std::string CgroupDirOf(int fd) {
  char link[4096];
  const ssize_t n =
      ::readlink(("/proc/self/fd/" + std::to_string(fd)).c_str(), link, sizeof link - 1);
  if (n <= 0) return "";
  std::string path(link, static_cast<size_t>(n));
  const size_t slash = path.rfind('/');
  return slash == std::string::npos || path[0] != '/' ? "" : path.substr(0, slash);
}

}  // namespace

uint64_t KeyedValue(const std::string& text, const std::string& key) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream words(line);
    std::string k, unit;
    uint64_t v = 0;
    if (!(words >> k >> v)) continue;
    if (!k.empty() && k.back() == ':') k.pop_back();  // /proc/meminfo's "MemTotal:"
    if (k != key) continue;
    return words >> unit && unit == "kB" ? v * 1024 : v;
  }
  return 0;
}

LimitCounters ReadLimitCounters(const std::vector<int>& work_cgroup_fds, const std::string& proc) {
  LimitCounters c;
  for (int fd : work_cgroup_fds) {
    const std::string dir = CgroupDirOf(fd);
    if (dir.empty()) continue;
    if (uint64_t v = KeyedValue(ReadText(dir + "/pids.events"), "max")) c.pids_limit_hits = v;
  }
  c.oom_kills = KeyedValue(ReadText(proc + "/vmstat"), "oom_kill");
  return c;
}

protocol::SandboxStats ReadSandboxStats(const std::vector<int>& work_cgroup_fds,
                                        const std::string& proc) {
  protocol::SandboxStats s;
  // One cgroup v2 directory, or (v1) one per hierarchy: each figure from whichever has it.
  for (int fd : work_cgroup_fds) {
    const std::string dir = CgroupDirOf(fd);
    if (dir.empty()) continue;
    if (uint64_t v = Number(dir + "/memory.current")) s.memory_bytes = v;
    if (uint64_t v = Number(dir + "/memory.usage_in_bytes")) s.memory_bytes = v;
    if (uint64_t v = Number(dir + "/memory.peak")) s.memory_peak_bytes = v;
    if (uint64_t v = Number(dir + "/memory.max_usage_in_bytes")) s.memory_peak_bytes = v;
    if (uint64_t v = Number(dir + "/pids.current")) s.pids = v;
    if (uint64_t v = KeyedValue(ReadText(dir + "/pids.events"), "max")) s.pids_limit_hits = v;
    if (uint64_t v = KeyedValue(ReadText(dir + "/cpu.stat"), "usage_usec")) {
      s.cpu_usage_ns = v * 1000;
    }
    if (uint64_t v = Number(dir + "/cpuacct.usage")) s.cpu_usage_ns = v;
  }
  s.memory_total_bytes = KeyedValue(ReadText(proc + "/meminfo"), "MemTotal");
  s.oom_kills = KeyedValue(ReadText(proc + "/vmstat"), "oom_kill");
  return s;
}

}  // namespace asb::sandboxd
