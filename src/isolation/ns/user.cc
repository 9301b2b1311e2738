#include "isolation/ns/user.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <iterator>

#include "common/unique_fd.h"
#include "isolation/ns/files.h"

namespace asb::isolation::ns {

namespace {

// Holds an exclusive flock(2) on a directory for the lifetime of the object.
class DirLock {
 public:
  static Result<DirLock> Take(const std::string& dir) {
    DirLock l;
    l.fd_.Reset(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!l.fd_) return FailErrno("open " + dir);
    while (::flock(l.fd_.get(), LOCK_EX) != 0) {
      if (errno != EINTR) return FailErrno("flock " + dir);
    }
    return l;
  }

 private:
  UniqueFd fd_;  // closing it drops the lock
};

Status MkdirP(const std::string& path) {
  for (size_t pos = 1; pos != std::string::npos;) {
    pos = path.find('/', pos + 1);
    const std::string cur = path.substr(0, pos);
    if (::mkdir(cur.c_str(), 0700) != 0 && errno != EEXIST) return FailErrno("mkdir " + cur);
  }
  return {};
}

}  // namespace

std::string ChooseUidRegistry(const std::string& state_dir) {
  if (MkdirP(kUidRegistryDir)) return kUidRegistryDir;
  const std::string local = state_dir + "/.uids";
  (void)MkdirP(local);
  return local;
}

Result<std::map<uint64_t, std::string>> UidSlots::ReadAll() const {
  ASB_ASSIGN_OR_RETURN(auto names, ListDir(registry_));
  std::map<uint64_t, std::string> out;
  for (const auto& n : names) {
    auto first = ParseU64(n);
    if (!first) continue;
    auto owner = ReadSmallFile(registry_ + "/" + n);
    if (owner) out[*first] = *owner;
  }
  return out;
}

Result<uint32_t> UidSlots::Acquire(const std::string& id) {
  std::lock_guard guard(mu_);
  ASB_TRY(MkdirP(registry_));
  ASB_ASSIGN_OR_RETURN(DirLock lock, DirLock::Take(registry_));
  ASB_ASSIGN_OR_RETURN(auto taken, ReadAll());
  const std::string owner = state_dir_ + "/" + id;
  for (uint32_t k = 0; k < max_slots_;) {
    const uint64_t first = uint64_t{base_} + uint64_t{k} * kIdsPerSlot;
    // The nearest records on either side decide whether [first, first + 65536) is free.
    auto clash = taken.end();
    auto next = taken.lower_bound(first);
    if (next != taken.end() && next->first < first + kIdsPerSlot) {
      clash = next;
    } else if (next != taken.begin() && std::prev(next)->first + kIdsPerSlot > first) {
      clash = std::prev(next);
    }
    if (clash != taken.end()) {
      if (PathExists(clash->second)) {
        ++k;
        continue;
      }
      // Stale: its sandbox's state directory is gone. Drop it and look at this range again.
      ::unlink((registry_ + "/" + std::to_string(clash->first)).c_str());
      taken.erase(clash);
      continue;
    }
    const std::string path = registry_ + "/" + std::to_string(first);
    const std::string tmp = path + ".tmp";
    {
      UniqueFd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
      if (!fd || !WriteAll(fd.get(), owner.data(), owner.size())) {
        ::unlink(tmp.c_str());
        return FailErrno("write " + tmp);
      }
    }
    if (::rename(tmp.c_str(), path.c_str()) != 0) {
      ::unlink(tmp.c_str());
      return FailErrno("rename " + tmp);
    }
    return k;
  }
  return Fail(Error::LimitExceeded("no free host uid range (" + std::to_string(max_slots_) +
                                   " slots from " + std::to_string(base_) + ")"));
}

Result<std::map<uint32_t, std::string>> UidSlots::List() const {
  std::map<uint32_t, std::string> out;
  auto all = ReadAll();
  if (!all) {
    if (all.error().sys_errno() == ENOENT) return out;
    return Fail(all.error());
  }
  const std::string prefix = state_dir_ + "/";
  for (const auto& [first, owner] : *all) {
    if (owner.rfind(prefix, 0) != 0 || first < base_) continue;
    const std::string id = owner.substr(prefix.size());
    if (id.empty() || id.find('/') != std::string::npos) continue;
    out[static_cast<uint32_t>((first - base_) / kIdsPerSlot)] = id;
  }
  return out;
}

Result<uint32_t> UidSlots::Find(const std::string& id) const {
  ASB_ASSIGN_OR_RETURN(auto slots, List());
  for (const auto& [k, owner] : slots) {
    if (owner == id) return k;
  }
  return Fail(Error::NotFound("no uid slot for " + id));
}

Status UidSlots::ReleaseAll(const std::string& id) {
  std::lock_guard guard(mu_);
  if (!PathExists(registry_)) return {};
  ASB_ASSIGN_OR_RETURN(DirLock lock, DirLock::Take(registry_));
  ASB_ASSIGN_OR_RETURN(auto all, ReadAll());
  const std::string owner = state_dir_ + "/" + id;
  for (const auto& [first, who] : all) {
    if (who != owner) continue;
    const std::string path = registry_ + "/" + std::to_string(first);
    if (::unlink(path.c_str()) != 0 && errno != ENOENT) return FailErrno("unlink " + path);
  }
  return {};
}

Status WriteIdMapsFromParent(int pid, uint32_t host_base) {
  const std::string map = "0 " + std::to_string(host_base) + " " + std::to_string(kIdsPerSlot);
  const std::string proc = "/proc/" + std::to_string(pid);
  ASB_TRY_CTX(WriteControlFile(proc + "/uid_map", map), "uid_map");
  ASB_TRY_CTX(WriteControlFile(proc + "/gid_map", map), "gid_map");
  return {};
}

int BecomeRootInChild(const char** step) {
  // Raw system calls: glibc's wrappers broadcast set*id to every thread of the process, and
  // the clone()d child believes it still has the server's threads.
  *step = "setresgid";
  if (::syscall(SYS_setresgid, 0, 0, 0) != 0) return errno;
  *step = "setgroups";
  if (::syscall(SYS_setgroups, 0, nullptr) != 0) return errno;
  *step = "setresuid";
  if (::syscall(SYS_setresuid, 0, 0, 0) != 0) return errno;
  return 0;
}

}  // namespace asb::isolation::ns
