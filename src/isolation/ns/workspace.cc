#include "isolation/ns/workspace.h"

#include <fcntl.h>
#include <linux/loop.h>
#include <spawn.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <sstream>
#include <vector>

#include "common/ids.h"
#include "common/unique_fd.h"
#include "isolation/ns/files.h"
#include "isolation/ns/workspace_snapshot.h"

extern char** environ;

namespace asb::isolation::ns {

Result<int> RunCapture(const std::vector<std::string>& argv, std::string* output) {
  UniqueFd rd, wr;
  if (!MakePipe(&rd, &wr)) return FailErrno("pipe");
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, wr.get(), 1);
  posix_spawn_file_actions_adddup2(&fa, wr.get(), 2);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid;
  int rc = posix_spawn(&pid, args[0], &fa, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) return Fail(Error::FromErrno(ErrorCode::kBackend, rc, "spawn " + argv[0]));
  wr.Reset();
  char buf[1024];
  ssize_t n;
  while ((n = ::read(rd.get(), buf, sizeof buf)) != 0) {
    if (n < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (output->size() < 16384) output->append(buf, static_cast<size_t>(n));
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return FailErrno("waitpid " + argv[0]);
  }
  return status;
}

namespace {

std::string FindMkfs() {
  for (const char* p : {"/usr/sbin/mkfs.ext4", "/sbin/mkfs.ext4", "/usr/bin/mkfs.ext4"}) {
    if (::access(p, X_OK) == 0) return p;
  }
  return {};
}

}  // namespace

Status MakeWorkspaceImage(const std::string& path, uint64_t bytes, uint32_t owner) {
  const std::string mkfs = FindMkfs();
  if (mkfs.empty()) return Fail(Error::Unavailable("mkfs.ext4 not found"));
  {
    UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
    if (!fd) return Fail(Error::FromErrno(ErrorCode::kBackend, errno, "create " + path));
    if (::ftruncate(fd.get(), static_cast<off_t>(bytes)) != 0) {
      int err = errno;
      ::unlink(path.c_str());
      return Fail(Error::FromErrno(ErrorCode::kBackend, err, "truncate " + path));
    }
  }
  const std::string owner_s = std::to_string(owner);
  std::string out;
  auto status = RunCapture({mkfs, "-q", "-F", "-m", "0", "-E",
                            "root_owner=" + owner_s + ":" + owner_s +
                                ",lazy_itable_init=1,lazy_journal_init=1,nodiscard",
                            path},
                           &out);
  if (!status || !WIFEXITED(*status) || WEXITSTATUS(*status) != 0) {
    ::unlink(path.c_str());
    if (!status) return Fail(status.error());
    return Fail(Error::Backend("mkfs.ext4 " + path + " failed: " + out));
  }
  return {};
}

Result<std::string> MountWorkspace(const std::string& image, const std::string& dir) {
  return MountImage(image, dir, "ext4");
}

Result<std::string> MountImage(const std::string& image, const std::string& dir,
                               const char* fstype) {
  UniqueFd image_fd(::open(image.c_str(), O_RDWR | O_CLOEXEC));
  if (!image_fd) return Fail(Error::FromErrno(ErrorCode::kBackend, errno, "open " + image));
  UniqueFd ctl(::open("/dev/loop-control", O_RDWR | O_CLOEXEC));
  if (!ctl) return Fail(Error::FromErrno(ErrorCode::kBackend, errno, "open /dev/loop-control"));
  // Another process may configure the device we were told is free: retry on EBUSY.
  for (int attempt = 0; attempt < 64; ++attempt) {
    int n = ::ioctl(ctl.get(), LOOP_CTL_GET_FREE);
    if (n < 0) return Fail(Error::FromErrno(ErrorCode::kBackend, errno, "LOOP_CTL_GET_FREE"));
    std::string dev = "/dev/loop" + std::to_string(n);
    UniqueFd loop(::open(dev.c_str(), O_RDWR | O_CLOEXEC));
    if (!loop) {
      if (errno == ENOENT) continue;
      return Fail(Error::FromErrno(ErrorCode::kBackend, errno, "open " + dev));
    }
    struct loop_config cfg;
    std::memset(&cfg, 0, sizeof cfg);
    cfg.fd = static_cast<uint32_t>(image_fd.get());
    cfg.info.lo_flags = LO_FLAGS_AUTOCLEAR;
    std::strncpy(reinterpret_cast<char*>(cfg.info.lo_file_name), image.c_str(), LO_NAME_SIZE - 1);
    if (::ioctl(loop.get(), LOOP_CONFIGURE, &cfg) != 0) {
      if (errno == EBUSY) continue;
      return Fail(Error::FromErrno(ErrorCode::kBackend, errno, "LOOP_CONFIGURE " + dev));
    }
    // The mount holds the device; closing `loop` afterwards leaves autoclear to detach it
    // when the last mount goes. If the mount fails, closing it detaches at once.
    if (::mount(dev.c_str(), dir.c_str(), fstype, MS_NOSUID | MS_NODEV, nullptr) != 0) {
      return Fail(Error::FromErrno(ErrorCode::kBackend, errno, "mount " + dev + " on " + dir));
    }
    return dev;
  }
  return Fail(Error::Backend("no free loop device after 64 attempts"));
}

Result<std::string> MountWorkspaceSharingLoop(const std::string& image, const std::string& dir) {
  auto devs = LoopDevicesBackedBy(image);
  if (devs.empty()) return MountWorkspace(image, dir);
  if (::mount(devs.front().c_str(), dir.c_str(), "ext4", MS_NOSUID | MS_NODEV, nullptr) != 0) {
    return Fail(
        Error::FromErrno(ErrorCode::kBackend, errno, "mount " + devs.front() + " on " + dir));
  }
  return devs.front();
}

Status ChownWorkspace(const std::string& dir, uint32_t root_uid, uint32_t owner) {
  if (::chown(dir.c_str(), owner, owner) != 0) return FailErrno("chown " + dir);
  // mkfs.ext4 makes lost+found; only fsck uses it, and we never fsck a workspace. Agents would
  // see it in every listing and archive, so it goes (rmdir fails harmlessly if it is not empty).
  const std::string lf = dir + "/lost+found";
  if (::rmdir(lf.c_str()) != 0 && errno != ENOENT) {
    if (::lchown(lf.c_str(), root_uid, root_uid) != 0) return FailErrno("chown " + lf);
  }
  return {};
}

bool IsMountPoint(const std::string& dir) {
  auto info = ReadSmallFile("/proc/self/mountinfo");
  if (!info) return false;
  std::istringstream lines(*info);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream f(line);
    std::string id, parent, dev, root, mnt;
    f >> id >> parent >> dev >> root >> mnt;
    if (mnt == dir) return true;
  }
  return false;
}

Status UnmountWorkspace(const std::string& dir) {
  for (int attempt = 0; attempt < 16 && IsMountPoint(dir); ++attempt) {
    if (::umount2(dir.c_str(), UMOUNT_NOFOLLOW) == 0) continue;
    if (errno == EINVAL || errno == ENOENT) break;
    if (errno == EBUSY && ::umount2(dir.c_str(), MNT_DETACH | UMOUNT_NOFOLLOW) == 0) continue;
    return Fail(Error::FromErrno(ErrorCode::kBackend, errno, "umount " + dir));
  }
  return {};
}

std::vector<std::string> LoopDevicesBackedBy(const std::string& image) {
  std::vector<std::string> devs;
  auto names = ListDir("/sys/block");
  if (!names) return devs;
  for (const auto& n : *names) {
    if (n.rfind("loop", 0) != 0) continue;
    auto backing = ReadSmallFile("/sys/block/" + n + "/loop/backing_file");
    if (!backing) continue;
    std::string b = *backing;
    while (!b.empty() && b.back() == '\n') b.pop_back();
    if (b == image || b == image + " (deleted)") devs.push_back("/dev/" + n);
  }
  return devs;
}

Status DetachLoopDevices(const std::string& image) {
  // Autoclear happens when the filesystem's last reference goes, which can lag the umount by
  // a little (the sandbox's mount namespace is released asynchronously).
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(2000);
  std::vector<std::string> devs;
  while (!(devs = LoopDevicesBackedBy(image)).empty() &&
         std::chrono::steady_clock::now() < deadline) {
    ::usleep(5000);
  }
  for (const auto& dev : devs) {
    UniqueFd fd(::open(dev.c_str(), O_RDWR | O_CLOEXEC));
    if (!fd) continue;
    if (::ioctl(fd.get(), LOOP_CLR_FD, 0) != 0 && errno != ENXIO) {
      return Fail(Error::FromErrno(ErrorCode::kBackend, errno, "LOOP_CLR_FD " + dev));
    }
  }
  return {};
}

WorkspacePool::WorkspacePool(std::string dir, uint64_t bytes, uint32_t target,
                             std::function<Result<std::string>()> blank)
    : dir_(std::move(dir)), bytes_(bytes), target_(target), blank_(std::move(blank)) {
  Clear();  // leftovers of an earlier process: their state is unknown
  if (target_ > 0) thread_ = std::thread([this] { Refill(); });
}

WorkspacePool::~WorkspacePool() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  Clear();
}

void WorkspacePool::Clear() {
  auto names = ListDir(dir_);
  if (!names) return;
  for (const auto& n : *names) {
    if (n.rfind("m-", 0) == 0) (void)UnmountWorkspace(dir_ + "/" + n);
  }
  for (const auto& n : *names) {
    const std::string path = dir_ + "/" + n;
    if (n.size() > 4 && n.compare(n.size() - 4, 4, ".img") == 0) {
      (void)DetachLoopDevices(path);
      ::unlink(path.c_str());
    } else if (n.rfind("m-", 0) == 0) {
      ::rmdir(path.c_str());
    }
  }
}

int WorkspacePool::CountReady() const {
  int count = 0;
  if (auto names = ListDir(dir_)) {
    for (const auto& n : *names) {
      if (n.rfind("ready-", 0) == 0) ++count;
    }
  }
  return count;
}

bool WorkspacePool::Take(const std::string& dest_image, const std::string& dest_dir) {
  auto names = ListDir(dir_);
  bool taken = false;
  for (const auto& n : names ? *names : std::vector<std::string>{}) {
    // "ready-<hex>.img" -> mounted on "m-<hex>".
    if (n.rfind("ready-", 0) != 0 || n.size() < 11) continue;
    if (::rename((dir_ + "/" + n).c_str(), dest_image.c_str()) != 0) continue;  // lost a race
    const std::string mnt = dir_ + "/m-" + n.substr(6, n.size() - 10);
    if (::mount(mnt.c_str(), dest_dir.c_str(), nullptr, MS_BIND, nullptr) == 0) {
      // The pool's own mount goes in the background: an umount waits for an RCU grace
      // period (~5-10 ms here), which a create should not.
      std::lock_guard lock(mu_);
      retired_.push_back(mnt);
      last_take_ = std::chrono::steady_clock::now();
      taken = true;
    } else {
      (void)UnmountWorkspace(mnt);
      ::rmdir(mnt.c_str());
      (void)DetachLoopDevices(dest_image);
      ::unlink(dest_image.c_str());
    }
    break;
  }
  cv_.notify_all();
  return taken;
}

bool WorkspacePool::WaitFull(int64_t timeout_ms) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (CountReady() < static_cast<int>(target_)) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

bool WorkspacePool::MakeOne() {
  const std::string hex = RandomHex(8);
  const std::string making = dir_ + "/making-" + hex + ".img";
  const std::string mnt = dir_ + "/m-" + hex;
  Result<std::string> blank = blank_ ? blank_() : Result<std::string>(std::string());
  const bool cloned = blank && !blank->empty() &&
                      CloneImage(*blank, making, /*force_copy=*/false, /*durable=*/false);
  if (!cloned && !MakeWorkspaceImage(making, bytes_, 0)) return false;
  bool ok = ::mkdir(mnt.c_str(), 0700) == 0 && MountWorkspace(making, mnt).has_value() &&
            ::rename(making.c_str(), (dir_ + "/ready-" + hex + ".img").c_str()) == 0;
  if (!ok) {
    (void)UnmountWorkspace(mnt);
    ::rmdir(mnt.c_str());
    (void)DetachLoopDevices(making);
    ::unlink(making.c_str());
  }
  return ok;
}

void WorkspacePool::Refill() {
  std::unique_lock lock(mu_);
  int failures = 0;
  while (!stop_) {
    if (!retired_.empty()) {
      std::vector<std::string> retired;
      retired.swap(retired_);
      lock.unlock();
      for (const auto& mnt : retired) {
        (void)UnmountWorkspace(mnt);
        ::rmdir(mnt.c_str());
      }
      lock.lock();
      continue;
    }
    if (CountReady() >= static_cast<int>(target_)) {
      cv_.wait_for(lock, std::chrono::seconds(5));
      continue;
    }
    const auto quiet_until = last_take_ + std::chrono::milliseconds(kQuietAfterTakeMs);
    if (std::chrono::steady_clock::now() < quiet_until) {
      cv_.wait_until(lock, quiet_until, [this] { return stop_; });
      continue;
    }
    lock.unlock();
    bool ok = MakeOne();
    lock.lock();
    failures = ok ? 0 : failures + 1;
    // Back off when it keeps failing (full disk, no loop devices); Create then formats and
    // mounts on demand.
    if (failures > 0) cv_.wait_for(lock, std::chrono::seconds(std::min(failures, 30)));
  }
}

}  // namespace asb::isolation::ns
