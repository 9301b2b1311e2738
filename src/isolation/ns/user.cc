#include "isolation/ns/user.h"

#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

#include "common/ids.h"
#include "common/unique_fd.h"
#include "isolation/ns/files.h"

namespace asb::isolation::ns {

Result<uint32_t> UidSlots::Acquire(const std::string& id) {
  std::lock_guard lock(mu_);
  const std::string tmp = dir_ + "/.tmp-" + RandomHex(8);
  {
    UniqueFd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
    if (!fd) return FailErrno("create " + tmp);
    if (!WriteAll(fd.get(), id.data(), id.size())) {
      int err = errno;
      ::unlink(tmp.c_str());
      return Fail(Error::FromErrno(err, "write " + tmp));
    }
  }
  for (uint32_t i = 0; i < max_slots_; ++i) {
    uint32_t k = (next_ + i) % max_slots_;
    std::string slot = dir_ + "/" + std::to_string(k);
    if (::link(tmp.c_str(), slot.c_str()) == 0) {
      ::unlink(tmp.c_str());
      next_ = (k + 1) % max_slots_;
      return k;
    }
    if (errno != EEXIST) {
      int err = errno;
      ::unlink(tmp.c_str());
      return Fail(Error::FromErrno(err, "link " + slot));
    }
  }
  ::unlink(tmp.c_str());
  return Fail(Error::LimitExceeded("all " + std::to_string(max_slots_) + " uid slots are taken"));
}

Result<std::map<uint32_t, std::string>> UidSlots::List() const {
  ASB_ASSIGN_OR_RETURN(auto names, ListDir(dir_));
  std::map<uint32_t, std::string> out;
  for (const auto& n : names) {
    auto k = ParseU64(n);
    if (!k || *k >= max_slots_) continue;
    auto content = ReadSmallFile(dir_ + "/" + n);
    if (content) out[static_cast<uint32_t>(*k)] = *content;
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
  std::lock_guard lock(mu_);
  ASB_ASSIGN_OR_RETURN(auto slots, List());
  for (const auto& [k, owner] : slots) {
    if (owner != id) continue;
    std::string slot = dir_ + "/" + std::to_string(k);
    if (::unlink(slot.c_str()) != 0 && errno != ENOENT) return FailErrno("unlink " + slot);
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
