#include "isolation/ns/cgroup.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <iterator>
#include <set>
#include <sstream>
#include <thread>

#include "isolation/ns/files.h"

namespace asb::isolation::ns {
namespace {

bool HasWord(std::string_view list, std::string_view word, char sep) {
  size_t pos = 0;
  while (pos <= list.size()) {
    size_t end = list.find(sep, pos);
    if (end == std::string_view::npos) end = list.size();
    if (list.substr(pos, end - pos) == word) return true;
    pos = end + 1;
  }
  return false;
}

Status MkdirIfMissing(const std::string& path) {
  if (::mkdir(path.c_str(), 0755) != 0 && errno != EEXIST) return FailErrno("mkdir " + path);
  return {};
}

// A sandbox's cgroup below our parent directory, which another process may remove while it is
// empty (an `agent-sandbox run` that ended, a test's cleanup) between our mkdir of the parent
// and this one: then the parent is made again and the mkdir retried.
Status MkdirBelowParent(const std::string& path) {
  for (int attempt = 0;; ++attempt) {
    if (::mkdir(path.c_str(), 0755) == 0 || errno == EEXIST) return {};
    if (errno != ENOENT || attempt == 3) return FailErrno("mkdir " + path);
    const std::string parent = path.substr(0, path.rfind('/'));
    if (::mkdir(parent.c_str(), 0755) != 0 && errno != EEXIST) return FailErrno("mkdir " + parent);
  }
}

std::string Trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

// Value of "key N" in a flat-keyed file such as memory.events or memory.oom_control.
Result<uint64_t> ReadKeyedValue(const std::string& path, std::string_view key) {
  ASB_ASSIGN_OR_RETURN(std::string text, ReadSmallFile(path));
  std::istringstream in(text);
  std::string k;
  uint64_t v;
  while (in >> k >> v) {
    if (k == key) return v;
  }
  return uint64_t{0};
}

Result<uint64_t> ReadU64File(const std::string& path) {
  ASB_ASSIGN_OR_RETURN(std::string text, ReadSmallFile(path));
  return ParseU64(text).map_error([&](Error e) { return e.WithContext(path); });
}

}  // namespace

Result<CgroupLayout> DetectCgroupLayout() {
  ASB_ASSIGN_OR_RETURN(std::string info, ReadSmallFile("/proc/self/mountinfo"));
  CgroupLayout layout;
  std::istringstream lines(info);
  std::string line;
  while (std::getline(lines, line)) {
    // "<id> <parent> <maj:min> <root> <mount point> <opts> [optional...] - <type> <src> <sopts>"
    std::istringstream f(line);
    std::string id, parent, dev, root, mnt, opts, tok;
    f >> id >> parent >> dev >> root >> mnt >> opts;
    while (f >> tok && tok != "-") {
    }
    std::string type, src, sopts;
    f >> type >> src >> sopts;
    if (root != "/") continue;  // a bind of a sub-tree is not a hierarchy root
    if (type == "cgroup2") {
      if (layout.v2_mount.empty()) layout.v2_mount = mnt;
    } else if (type == "cgroup") {
      auto take = [&](std::string* slot, std::string_view ctrl) {
        if (slot->empty() && HasWord(sopts, ctrl, ',')) *slot = mnt;
      };
      take(&layout.v1_memory, "memory");
      take(&layout.v1_pids, "pids");
      take(&layout.v1_cpu, "cpu");
      take(&layout.v1_cpuacct, "cpuacct");
      take(&layout.v1_freezer, "freezer");
    }
  }
  if (!layout.v2_mount.empty()) {
    auto ctrls = ReadSmallFile(layout.v2_mount + "/cgroup.controllers");
    if (ctrls) {
      std::string c = Trim(*ctrls);
      if (HasWord(c, "memory", ' ') && HasWord(c, "pids", ' ') && HasWord(c, "cpu", ' ')) {
        layout.v2_mode = true;
        return layout;
      }
    }
  }
  std::string missing;
  if (layout.v1_memory.empty()) missing += " memory";
  if (layout.v1_pids.empty()) missing += " pids";
  if (layout.v1_cpu.empty()) missing += " cpu";
  if (!missing.empty()) {
    return Fail(Error::Unavailable("cgroup controller(s) missing on v1 and v2:" + missing));
  }
  return layout;
}

std::vector<std::string> CgroupPaths::All() const {
  std::vector<std::string> out;
  for (const std::string* p :
       {&memory, &pids, &cpu, &cpuacct, &freezer, &v2, &work_memory, &work_pids, &work_cpu}) {
    if (!p->empty() && std::find(out.begin(), out.end(), *p) == out.end()) out.push_back(*p);
  }
  return out;
}

CgroupPaths CgroupPathsFor(const CgroupLayout& layout, const std::string& name,
                           const std::string& id) {
  CgroupPaths p;
  p.v2_mode = layout.v2_mode;
  auto under = [&](const std::string& mnt) {
    return mnt.empty() ? std::string() : mnt + "/" + name + "/" + id;
  };
  p.v2 = under(layout.v2_mount);
  if (!layout.v2_mode) {
    p.memory = under(layout.v1_memory);
    p.pids = under(layout.v1_pids);
    p.cpu = under(layout.v1_cpu);
    p.cpuacct = under(layout.v1_cpuacct);
    p.freezer = under(layout.v1_freezer);
    p.work_memory = p.memory + "/work";
    p.work_pids = p.pids + "/work";
    if (!p.cpu.empty() && p.cpu != p.memory && p.cpu != p.pids) p.work_cpu = p.cpu + "/work";
  }
  return p;
}

CgroupPaths CommandCgroupPaths(const CgroupPaths& paths) {
  CgroupPaths c = paths;
  if (!paths.work_memory.empty()) c.memory = paths.work_memory;
  if (!paths.work_pids.empty()) c.pids = paths.work_pids;
  // cpu shares a hierarchy with memory or pids when it has no work child of its own.
  if (!paths.work_cpu.empty()) {
    c.cpu = paths.work_cpu;
  } else if (!paths.cpu.empty() && paths.cpu == paths.memory) {
    c.cpu = c.memory;
  } else if (!paths.cpu.empty() && paths.cpu == paths.pids) {
    c.cpu = c.pids;
  }
  return c;
}

namespace {

// CPU quota per CFS period for `cpus` (at least 1 ms of each 100 ms period).
constexpr uint64_t kCfsPeriodUs = 100'000;
uint64_t CfsQuotaUs(double cpus) {
  return std::max<uint64_t>(1000, static_cast<uint64_t>(std::llround(cpus * kCfsPeriodUs)));
}

// A v1 memory directory to `bytes`, memsw (memory + swap) kept equal to it: raised first when
// growing, lowered after when shrinking, so that memsw never sits below the memory limit.
Status SetV1MemoryLimit(const std::string& dir, uint64_t bytes) {
  const std::string memsw = dir + "/memory.memsw.limit_in_bytes";
  const bool has_memsw = PathExists(memsw);
  auto now = ReadSmallFile(dir + "/memory.limit_in_bytes");
  const uint64_t old = now ? ParseU64(Trim(*now)).value_or(0) : 0;
  auto write_memory = [&]() -> Status {
    auto st = WriteControlFile(dir + "/memory.limit_in_bytes", std::to_string(bytes));
    if (!st && st.error().sys_errno() == EBUSY) {
      return Fail(Error::InvalidArgument("the sandbox uses more memory than " +
                                         std::to_string(bytes >> 20) + " MiB"));
    }
    return st;
  };
  if (has_memsw && bytes > old) ASB_TRY(WriteControlFile(memsw, std::to_string(bytes)));
  ASB_TRY(write_memory());
  if (has_memsw && bytes <= old) ASB_TRY(WriteControlFile(memsw, std::to_string(bytes)));
  return {};
}

}  // namespace

Status CreateCgroupsFromParent(const CgroupLayout& layout, const std::string& name,
                               const CgroupPaths& paths, const CgroupLimits& limits) {
  // Our parent directories first (kept across sandboxes).
  std::vector<std::string> mounts = {layout.v2_mount};
  if (!layout.v2_mode) {
    for (auto* m : {&layout.v1_memory, &layout.v1_pids, &layout.v1_cpu, &layout.v1_cpuacct,
                    &layout.v1_freezer}) {
      mounts.push_back(*m);
    }
  }
  for (const auto& m : mounts) {
    if (!m.empty()) ASB_TRY(MkdirIfMissing(m + "/" + name));
  }
  const uint64_t period_us = kCfsPeriodUs;
  const uint64_t quota_us = CfsQuotaUs(limits.cpus);
  if (layout.v2_mode) {
    // Controllers must be enabled on the path down to our directory (no-internal-process rule:
    // only leaves hold processes).
    // Writing is skipped where they already are (systemd enables them at the root; a root
    // that holds processes, as in a container, would refuse the write with EBUSY).
    for (const std::string& dir : {layout.v2_mount, layout.v2_mount + "/" + name}) {
      auto on = ReadSmallFile(dir + "/cgroup.subtree_control");
      const std::string enabled = on ? Trim(*on) : "";
      if (HasWord(enabled, "memory", ' ') && HasWord(enabled, "pids", ' ') &&
          HasWord(enabled, "cpu", ' ')) {
        continue;
      }
      ASB_TRY(WriteControlFile(dir + "/cgroup.subtree_control", "+memory +pids +cpu"));
    }
    ASB_TRY(MkdirBelowParent(paths.v2));
    ASB_TRY(WriteControlFile(paths.v2 + "/memory.max", std::to_string(limits.memory_bytes)));
    if (PathExists(paths.v2 + "/memory.swap.max")) {
      ASB_TRY(WriteControlFile(paths.v2 + "/memory.swap.max", "0"));
    }
    ASB_TRY(WriteControlFile(paths.v2 + "/pids.max", std::to_string(limits.pids)));
    ASB_TRY(WriteControlFile(paths.v2 + "/cpu.max",
                             std::to_string(quota_us) + " " + std::to_string(period_us)));
    return {};
  }
  for (const auto& dir : paths.All()) ASB_TRY(MkdirBelowParent(dir));
  // Parents before children: a v1 child's limit may exceed its parent's only in vain, but
  // memsw must never sit below the memory limit of the same directory.
  auto memory_limits = [&](const std::string& dir, uint64_t bytes) -> Status {
    ASB_TRY(WriteControlFile(dir + "/memory.limit_in_bytes", std::to_string(bytes)));
    if (PathExists(dir + "/memory.memsw.limit_in_bytes")) {
      // memsw = memory + swap; equal to the memory limit means no swap at all.
      ASB_TRY(WriteControlFile(dir + "/memory.memsw.limit_in_bytes", std::to_string(bytes)));
    } else if (PathExists(dir + "/memory.swappiness")) {
      ASB_TRY(WriteControlFile(dir + "/memory.swappiness", "0"));
    }
    return {};
  };
  ASB_TRY(memory_limits(paths.memory, limits.memory_bytes + kDaemonMemoryHeadroom));
  ASB_TRY(memory_limits(paths.work_memory, limits.memory_bytes));
  ASB_TRY(WriteControlFile(paths.pids + "/pids.max",
                           std::to_string(uint64_t{limits.pids} + kDaemonPidsHeadroom)));
  ASB_TRY(WriteControlFile(paths.work_pids + "/pids.max", std::to_string(limits.pids)));
  const std::string& cpu = paths.work_cpu.empty() ? paths.cpu : paths.work_cpu;
  ASB_TRY(WriteControlFile(cpu + "/cpu.cfs_period_us", std::to_string(period_us)));
  ASB_TRY(WriteControlFile(cpu + "/cpu.cfs_quota_us", std::to_string(quota_us)));
  return {};
}

Status UpdateCgroupLimits(const CgroupLayout& layout, const CgroupPaths& paths,
                          const CgroupLimits& limits) {
  const std::string quota = std::to_string(CfsQuotaUs(limits.cpus));
  if (layout.v2_mode) {
    ASB_TRY(WriteControlFile(paths.v2 + "/memory.max", std::to_string(limits.memory_bytes)));
    return WriteControlFile(paths.v2 + "/cpu.max", quota + " " + std::to_string(kCfsPeriodUs));
  }
  // Growing: the sandbox's directory (sandboxd's headroom above the commands) first; shrinking:
  // the commands' first. A child's limit above its parent's would only be in vain.
  const uint64_t daemon = limits.memory_bytes + kDaemonMemoryHeadroom;
  auto now = ReadSmallFile(paths.work_memory + "/memory.limit_in_bytes");
  const bool growing = now && ParseU64(Trim(*now)).value_or(0) < limits.memory_bytes;
  if (growing) {
    ASB_TRY(SetV1MemoryLimit(paths.memory, daemon));
    ASB_TRY(SetV1MemoryLimit(paths.work_memory, limits.memory_bytes));
  } else {
    ASB_TRY(SetV1MemoryLimit(paths.work_memory, limits.memory_bytes));
    ASB_TRY(SetV1MemoryLimit(paths.memory, daemon));
  }
  const std::string& cpu = paths.work_cpu.empty() ? paths.cpu : paths.work_cpu;
  return WriteControlFile(cpu + "/cpu.cfs_quota_us", quota);
}

Result<CloneIntoCgroups> CloneIntoCgroups::Prepare(const CgroupLayout& layout,
                                                   const CgroupPaths& paths) {
  CloneIntoCgroups c;
  if (!paths.v2.empty()) {
    c.v2_fd_.Reset(::open(paths.v2.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!c.v2_fd_) return FailErrno("open " + paths.v2);
  }
  if (layout.v2_mode) return c;
  // "<n>:<controllers>:<path>" per hierarchy, for this thread.
  ASB_ASSIGN_OR_RETURN(std::string self, ReadSmallFile("/proc/thread-self/cgroup"));
  const std::pair<const std::string*, const std::string*> v1[] = {
      {&layout.v1_memory, &paths.memory},
      {&layout.v1_pids, &paths.pids},
      {&layout.v1_cpu, &paths.cpu},
      {&layout.v1_cpuacct, &paths.cpuacct},
      {&layout.v1_freezer, &paths.freezer}};
  const char* names[] = {"memory", "pids", "cpu", "cpuacct", "freezer"};
  for (size_t i = 0; i < std::size(v1); ++i) {
    const std::string& mount = *v1[i].first;
    const std::string& dir = *v1[i].second;
    if (mount.empty() || dir.empty()) continue;
    if (std::find(c.enter_.begin(), c.enter_.end(), dir + "/tasks") != c.enter_.end()) continue;
    std::string current;
    std::istringstream lines(self);
    std::string line;
    while (std::getline(lines, line)) {
      auto a = line.find(':');
      auto b = line.find(':', a + 1);
      if (a == std::string::npos || b == std::string::npos) continue;
      if (HasWord(std::string_view(line).substr(a + 1, b - a - 1), names[i], ',')) {
        current = line.substr(b + 1);
      }
    }
    if (current.empty()) return Fail(Error::Internal(std::string("no v1 cgroup for ") + names[i]));
    c.enter_.push_back(dir + "/tasks");
    c.leave_.push_back(mount + (current == "/" ? "" : current) + "/tasks");
    c.roots_.push_back(mount + "/tasks");
  }
  return c;
}

Status CloneIntoCgroups::Enter() {
  for (size_t i = 0; i < enter_.size(); ++i) {
    if (auto st = WriteControlFile(enter_[i], "0"); !st) {
      Leave();
      return st;
    }
  }
  return {};
}

void CloneIntoCgroups::Leave() {
  for (size_t i = 0; i < leave_.size(); ++i) {
    if (!WriteControlFile(leave_[i], "0")) (void)WriteControlFile(roots_[i], "0");
  }
}

Status AddProcessFromParent(const CgroupPaths& paths, int pid) {
  for (const auto& dir : paths.All()) {
    ASB_TRY(WriteControlFile(dir + "/cgroup.procs", std::to_string(pid)));
  }
  return {};
}

namespace {

std::vector<int> ReadProcs(const std::string& dir) {
  std::vector<int> pids;
  auto text = ReadSmallFile(dir + "/cgroup.procs");
  if (!text) return pids;
  std::istringstream in(*text);
  int pid;
  while (in >> pid) pids.push_back(pid);
  return pids;
}

}  // namespace

std::vector<int> CgroupProcesses(const CgroupPaths& paths) {
  std::set<int> pids;
  for (const auto& dir : paths.All()) {
    for (int pid : ReadProcs(dir)) pids.insert(pid);
  }
  return std::vector<int>(pids.begin(), pids.end());
}

Status KillCgroupProcesses(const CgroupPaths& paths) {
  if (!paths.v2.empty() && PathExists(paths.v2 + "/cgroup.kill")) {
    ASB_TRY(WriteControlFile(paths.v2 + "/cgroup.kill", "1"));
    return {};
  }
  // Without cgroup.kill: freeze so that nothing forks while we kill, kill, thaw (frozen v1
  // tasks only die once thawed).
  std::string freeze_file, frozen, thawed;
  if (!paths.v2.empty() && PathExists(paths.v2 + "/cgroup.freeze")) {
    freeze_file = paths.v2 + "/cgroup.freeze", frozen = "1", thawed = "0";
  } else if (!paths.freezer.empty() && PathExists(paths.freezer + "/freezer.state")) {
    freeze_file = paths.freezer + "/freezer.state", frozen = "FROZEN", thawed = "THAWED";
  }
  if (!freeze_file.empty()) (void)WriteControlFile(freeze_file, frozen);
  for (int round = 0; round < 3; ++round) {
    for (const auto& dir : paths.All()) {
      for (int pid : ReadProcs(dir)) {
        if (pid != ::getpid()) ::kill(pid, SIGKILL);  // (a server thread mid-clone: not us)
      }
    }
  }
  if (!freeze_file.empty()) (void)WriteControlFile(freeze_file, thawed);
  return {};
}

Status WaitCgroupsEmpty(const CgroupPaths& paths, int64_t timeout_ms) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    bool empty = true;
    for (const auto& dir : paths.All()) {
      if (!ReadProcs(dir).empty()) empty = false;
    }
    if (empty) return {};
    if (std::chrono::steady_clock::now() > deadline) {
      return Fail(Error::Timeout("cgroups of the sandbox still hold processes"));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

namespace {

// Removes `dir` and any child cgroups below it (deepest first). Child cgroups are the only
// directories in a cgroup directory; d_type spares a stat of every control file.
int RemoveCgroupDir(const std::string& dir) {
  if (DIR* d = ::opendir(dir.c_str())) {
    std::vector<std::string> children;
    while (struct dirent* e = ::readdir(d)) {
      std::string_view n = e->d_name;
      if (e->d_type == DT_DIR && n != "." && n != "..") children.emplace_back(n);
    }
    ::closedir(d);
    for (const auto& c : children) RemoveCgroupDir(dir + "/" + c);
  } else if (errno == ENOENT) {
    return 0;
  }
  for (int attempt = 0; attempt < 200; ++attempt) {
    if (::rmdir(dir.c_str()) == 0 || errno == ENOENT) return 0;
    if (errno != EBUSY) return errno;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return EBUSY;
}

}  // namespace

Status RemoveCgroups(const CgroupPaths& paths) {
  Status result;
  for (const auto& dir : paths.All()) {
    int err = RemoveCgroupDir(dir);
    if (err != 0 && result) result = Fail(Error::FromErrno(err, "rmdir " + dir));
  }
  return result;
}

bool AnyCgroupExists(const CgroupPaths& paths) {
  for (const auto& dir : paths.All()) {
    if (PathExists(dir)) return true;
  }
  return false;
}

Result<SandboxUsage> ReadCgroupUsage(const CgroupPaths& paths) {
  SandboxUsage u;
  const std::string& probe = paths.v2_mode ? paths.v2 : paths.memory;
  if (probe.empty() || !PathExists(probe)) {
    return Fail(Error::NotFound("sandbox cgroup is gone: " + probe));
  }
  if (paths.v2_mode) {
    ASB_ASSIGN_OR_RETURN(u.memory_bytes, ReadU64File(paths.v2 + "/memory.current"));
    if (auto peak = ReadU64File(paths.v2 + "/memory.peak")) u.memory_peak_bytes = *peak;
    ASB_ASSIGN_OR_RETURN(u.pids, ReadU64File(paths.v2 + "/pids.current"));
    ASB_ASSIGN_OR_RETURN(uint64_t usec, ReadKeyedValue(paths.v2 + "/cpu.stat", "usage_usec"));
    u.cpu_usage_ns = usec * 1000;
    ASB_ASSIGN_OR_RETURN(u.oom_kills, ReadKeyedValue(paths.v2 + "/memory.events", "oom_kill"));
    if (auto hits = ReadKeyedValue(paths.v2 + "/pids.events", "max")) u.pids_limit_hits = *hits;
    return u;
  }
  ASB_ASSIGN_OR_RETURN(u.memory_bytes, ReadU64File(paths.memory + "/memory.usage_in_bytes"));
  ASB_ASSIGN_OR_RETURN(u.memory_peak_bytes,
                       ReadU64File(paths.memory + "/memory.max_usage_in_bytes"));
  ASB_ASSIGN_OR_RETURN(u.pids, ReadU64File(paths.pids + "/pids.current"));
  if (!paths.cpuacct.empty()) {
    ASB_ASSIGN_OR_RETURN(u.cpu_usage_ns, ReadU64File(paths.cpuacct + "/cpuacct.usage"));
  }
  ASB_ASSIGN_OR_RETURN(u.oom_kills,
                       ReadKeyedValue(paths.memory + "/memory.oom_control", "oom_kill"));
  // v1 counts an OOM kill only in the cgroup whose limit was hit: commands hit the work one.
  if (!paths.work_memory.empty() && PathExists(paths.work_memory)) {
    ASB_ASSIGN_OR_RETURN(uint64_t work_kills,
                         ReadKeyedValue(paths.work_memory + "/memory.oom_control", "oom_kill"));
    u.oom_kills += work_kills;
  }
  for (const std::string* dir : {&paths.pids, &paths.work_pids}) {
    if (dir->empty()) continue;
    if (auto hits = ReadKeyedValue(*dir + "/pids.events", "max")) u.pids_limit_hits += *hits;
  }
  return u;
}

Result<LimitCounterFiles> LimitCounterFiles::Open(const CgroupPaths& paths) {
  const std::string& probe = paths.v2_mode ? paths.v2 : paths.memory;
  if (probe.empty() || !PathExists(probe)) {
    return Fail(Error::NotFound("sandbox cgroup is gone: " + probe));
  }
  // The same files as ReadCgroupUsage's oom_kills and pids_limit_hits.
  std::vector<std::pair<std::string, bool>> wanted;
  if (paths.v2_mode) {
    wanted = {{paths.v2 + "/memory.events", true}, {paths.v2 + "/pids.events", false}};
  } else {
    wanted = {{paths.memory + "/memory.oom_control", true}};
    if (!paths.work_memory.empty())
      wanted.emplace_back(paths.work_memory + "/memory.oom_control", true);
    for (const std::string* dir : {&paths.pids, &paths.work_pids}) {
      if (!dir->empty()) wanted.emplace_back(*dir + "/pids.events", false);
    }
  }
  LimitCounterFiles out;
  for (const auto& [path, oom] : wanted) {
    UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (fd) out.files_.push_back(File{std::move(fd), oom});
  }
  return out;
}

Result<LimitHitCounts> LimitCounterFiles::Read() const {
  LimitHitCounts c;
  for (const File& f : files_) {
    char buf[512];
    ssize_t n;
    do {
      n = ::pread(f.fd.get(), buf, sizeof buf - 1, 0);
    } while (n < 0 && errno == EINTR);
    if (n < 0) {
      if (errno == ENODEV || errno == ENOENT) {
        return Fail(Error::NotFound("sandbox cgroup is gone"));
      }
      return Fail(Error::FromErrno(errno, "read a cgroup limit counter"));
    }
    std::istringstream in(std::string(buf, static_cast<size_t>(n)));
    const std::string_view key = f.oom ? "oom_kill" : "max";
    std::string k;
    uint64_t v;
    while (in >> k >> v) {
      if (k != key) continue;
      (f.oom ? c.oom_kills : c.pids_limit_hits) += v;
      break;
    }
  }
  return c;
}

void RemoveEmptyCgroupParents(const CgroupLayout& layout, const std::string& name) {
  for (const auto& m : {layout.v2_mount, layout.v1_memory, layout.v1_pids, layout.v1_cpu,
                        layout.v1_cpuacct, layout.v1_freezer}) {
    if (!m.empty()) ::rmdir((m + "/" + name).c_str());
  }
}

std::vector<std::string> ListCgroupIds(const CgroupLayout& layout, const std::string& name) {
  std::vector<std::string> ids;
  std::vector<std::string> mounts = {layout.v2_mount, layout.v1_memory,  layout.v1_pids,
                                     layout.v1_cpu,   layout.v1_cpuacct, layout.v1_freezer};
  for (const auto& m : mounts) {
    if (m.empty()) continue;
    auto names = ListDir(m + "/" + name);
    if (!names) continue;
    for (auto& n : *names) {
      struct stat st;
      std::string p = m + "/" + name + "/" + n;
      if (::lstat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode) &&
          std::find(ids.begin(), ids.end(), n) == ids.end()) {
        ids.push_back(n);
      }
    }
  }
  return ids;
}

}  // namespace asb::isolation::ns
