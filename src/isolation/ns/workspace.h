// The workspace of a sandbox: a sparse ext4 image of exactly the quota's size, attached to a
// loop device and mounted on the host at <state_dir>/<id>/ws (nosuid, nodev), then bound to
// /workspace inside. The quota is enforced by construction: a full filesystem answers ENOSPC
// inside and can never grow past its image on the host disk.
//
// mkfs choice (measured on this machine for 1 GiB, 5 runs each): default options 21 ms and
// 33 MiB allocated (the journal is zeroed); with lazy_itable_init=1,lazy_journal_init=1 8 ms
// and 0.65 MiB, mount 6 ms; without a journal 7 ms and 0.65 MiB. We keep the journal (the
// workspace survives a host crash consistently, which matters for snapshots) and take the
// lazy init options: the image is a fresh sparse file, so the skipped zeroing reads back as
// zeros anyway. -m 0: no blocks reserved for root, the sandbox user gets the whole quota.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/result.h"

namespace asb::isolation::ns {

/// Runs argv[0] (absolute path) with stdin /dev/null and stdout+stderr captured into `output`
/// (first 16 KiB). Returns the exit status (waitpid encoding). Errors: FromErrno of spawn.
Result<int> RunCapture(const std::vector<std::string>& argv, std::string* output);

/// Creates a sparse file of `bytes` at `path` and formats it as ext4 whose root directory is
/// owned by `owner` (host uid = gid). Errors: kBackend with mkfs's stderr, FromErrno.
Status MakeWorkspaceImage(const std::string& path, uint64_t bytes, uint32_t owner);

/// Attaches `image` to a free loop device (LOOP_CTL_GET_FREE + LOOP_CONFIGURE with
/// LO_FLAGS_AUTOCLEAR, so the device detaches itself when unmounted) and mounts it on `dir`
/// with nosuid,nodev. Returns "/dev/loopN". Errors: FromErrno of the failing step (kBackend).
Result<std::string> MountWorkspace(const std::string& image, const std::string& dir);

/// MountWorkspace, except that a loop device already backed by `image` (one left by an
/// interrupted operation, possibly mounted elsewhere) is mounted again instead of attaching a
/// second one: the same superblock, never two file systems on one file.
Result<std::string> MountWorkspaceSharingLoop(const std::string& image, const std::string& dir);

/// MountWorkspace for a file system of type `fstype` ("ext4", "xfs").
Result<std::string> MountImage(const std::string& image, const std::string& dir,
                               const char* fstype);

/// Sets the owner of the workspace root to (`owner`, `owner`) and of lost+found to the
/// sandbox's root, after mounting (images from the pool were formatted before their slot was
/// known).
Status ChownWorkspace(const std::string& dir, uint32_t root_uid, uint32_t owner);

/// True if `dir` is a mount point in this mount namespace (per /proc/self/mountinfo).
bool IsMountPoint(const std::string& dir);

/// Unmounts `dir` until it is no longer a mount point; a busy mount is detached lazily
/// (MNT_DETACH) as a last resort. Not mounted is success.
Status UnmountWorkspace(const std::string& dir);

/// Detaches every loop device whose backing file is `image` (normally already gone through
/// autoclear; waits briefly for that first, then LOOP_CLR_FD). None is success.
Status DetachLoopDevices(const std::string& image);

/// "/dev/loopN" devices whose backing file is `image` (by /sys/block/loop*/loop/backing_file,
/// which follows renames of the file).
std::vector<std::string> LoopDevicesBackedBy(const std::string& image);

/// Background pool of pre-formatted, pre-mounted images of one size in `dir`, so that a create
/// of the default size neither formats nor mounts ext4 (mkfs ~8 ms, mount ~12 ms here).
/// The refill thread makes "making-<hex>.img" (a clone of `blank` when given, as
/// WorkspaceSeeds::BlankFor makes it, else mkfs), mounts it on "m-<hex>" and renames the image to
/// "ready-<hex>.img". Take() claims one by an atomic rename(2) of the image to the caller's
/// path (so concurrent takers never share one), bind-mounts "m-<hex>" onto the caller's
/// directory and detaches the pool's own mount (a bind, not MS_MOVE: moving is refused below
/// shared mounts, as on systemd hosts) in the background. The loop device follows the renamed
/// file.
/// Everything in `dir` is removed when the pool is built and when it is destroyed.
class WorkspacePool {
 public:
  /// `blank`, when set, returns an image of `bytes` to clone for each new one (the refill then
  /// spends ~1 ms of copying where mkfs takes ~5 ms of a process); on its error, mkfs.
  WorkspacePool(std::string dir, uint64_t bytes, uint32_t target,
                std::function<Result<std::string>()> blank = nullptr);
  ~WorkspacePool();  // stops the refill thread, unmounts and removes the unused images
  WorkspacePool(const WorkspacePool&) = delete;
  WorkspacePool& operator=(const WorkspacePool&) = delete;

  uint64_t image_bytes() const { return bytes_; }
  /// Moves a ready image to `dest_image` and mounts it on `dest_dir` (which must exist).
  /// Returns false if none was ready or the hand-over failed (then nothing is left at the
  /// destination). Wakes the refill thread.
  bool Take(const std::string& dest_image, const std::string& dest_dir);
  /// Waits until `target` images are ready (tests), up to `timeout_ms`.
  bool WaitFull(int64_t timeout_ms);

 private:
  void Refill();
  bool MakeOne();
  void Clear();
  int CountReady() const;

  /// After a Take the refill waits this long before making the next one: the create that took
  /// it has ~10 ms of work left on a 2-core host, which a refill beside it would slow.
  static constexpr int kQuietAfterTakeMs = 50;

  std::string dir_;
  uint64_t bytes_;
  uint32_t target_;
  std::function<Result<std::string>()> blank_;
  std::chrono::steady_clock::time_point last_take_{};  // guarded by mu_
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::vector<std::string> retired_;  // pool mounts handed over, to unmount in the background
  std::thread thread_;
};

}  // namespace asb::isolation::ns
