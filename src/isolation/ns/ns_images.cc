// The ns backend's workspace images (docs/adr/0009): a consistent copy of a sandbox's workspace
// image (frozen while it is cloned), and rollback's two steps: stage a clone beside the
// workspace, then swap it in under the running sandbox. Cloning itself is workspace_snapshot.h.
#include <fcntl.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "common/ids.h"
#include "common/unique_fd.h"
#include "isolation/ns/files.h"
#include "isolation/ns/idmap.h"
#include "isolation/ns/ns_backend_impl.h"
#include "isolation/ns/state.h"
#include "isolation/ns/workspace.h"
#include "isolation/ns/workspace_snapshot.h"

namespace asb::isolation::ns {

namespace {

/// The running sandbox's state, if its workspace may be cloned. Errors: kNotFound (no state or
/// not running), kUnavailable (an image with host ids, made before canonical ids).
Result<SandboxState> ImageCapableState(const Layout& l, const std::string& id) {
  auto text = ReadSmallFile(l.state);
  if (!text) return Fail(Error::NotFound("no state for sandbox " + id));
  ASB_ASSIGN_OR_RETURN(SandboxState st, DecodeSandboxState(*text));
  if (!st.canonical_ids) {
    return Fail(Error::Unavailable("the workspace of " + id + " predates canonical-id images"));
  }
  return st;
}

Result<uint64_t> FileSize(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return FailErrno("stat " + path);
  return static_cast<uint64_t>(st.st_size);
}

Status FsyncDir(const std::string& dir) {
  UniqueFd d(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!d || ::fsync(d.get()) != 0) return FailErrno("fsync " + dir);
  return {};
}

}  // namespace

Result<WorkspaceImageCopy> NsBackend::CopyWorkspaceImage(const std::string& id,
                                                         const std::string& dest) {
  if (!IsValidId(id, "sb_")) return Fail(Error::NotFound("no sandbox " + id));
  auto lock = IdLock(id);
  std::lock_guard guard(*lock);
  const Layout l = LayoutFor(opts_.state_dir, id);
  ASB_TRY(ImageCapableState(l, id));
  UniqueFd ws(::open(l.ws.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!ws) return FailErrno("open " + l.ws);
  WorkspaceImageCopy copy;
  struct statfs sfs;
  if (::fstatfs(ws.get(), &sfs) == 0) {
    copy.used_bytes =
        static_cast<uint64_t>(sfs.f_blocks - sfs.f_bfree) * static_cast<uint64_t>(sfs.f_bsize);
  }
  // Frozen while the image is cloned: writers in the sandbox wait, and the copy is the file
  // system at one instant with nothing left in flight (ioctl_fsfreeze(2)). Where the freeze is
  // refused, syncfs(2) flushes instead (consistent per file, not across files).
  const bool frozen = ::ioctl(ws.get(), FIFREEZE, 0) == 0;
  if (!frozen && ::syncfs(ws.get()) != 0) return FailErrno("syncfs " + l.ws);
  auto method = CloneImage(l.image, dest);
  if (frozen && ::ioctl(ws.get(), FITHAW, 0) != 0) {
    ::unlink(dest.c_str());
    return FailErrno("FITHAW " + l.ws);
  }
  if (!method) return Fail(std::move(method).error().WithContext("copy workspace of " + id));
  copy.method = std::string(CloneMethodName(*method));
  ASB_ASSIGN_OR_RETURN(copy.image_bytes, FileSize(dest));
  return copy;
}

Result<WorkspaceImageCopy> NsBackend::StageWorkspace(const std::string& id,
                                                     const std::string& image) {
  if (!IsValidId(id, "sb_")) return Fail(Error::NotFound("no sandbox " + id));
  auto lock = IdLock(id);
  std::lock_guard guard(*lock);
  const Layout l = LayoutFor(opts_.state_dir, id);
  ASB_TRY(ImageCapableState(l, id));
  ASB_ASSIGN_OR_RETURN(uint64_t want, FileSize(l.image));
  ASB_ASSIGN_OR_RETURN(uint64_t have, FileSize(image));
  if (want != have) {
    return Fail(Error::InvalidArgument("image of " + std::to_string(have) +
                                       " bytes does not match the workspace of " +
                                       std::to_string(want) + " bytes"));
  }
  ::unlink(l.next_tmp.c_str());
  ASB_ASSIGN_OR_RETURN(CloneMethod m, CloneImage(image, l.next_tmp));  // fsynced
  if (::rename(l.next_tmp.c_str(), l.next.c_str()) != 0) {
    Error e = Error::FromErrno(errno, "rename " + l.next_tmp);
    ::unlink(l.next_tmp.c_str());
    return Fail(std::move(e));
  }
  ASB_TRY(FsyncDir(l.dir));
  WorkspaceImageCopy copy;
  copy.method = std::string(CloneMethodName(m));
  copy.image_bytes = have;
  return copy;
}

bool NsBackend::HasStagedWorkspace(const std::string& id) {
  return IsValidId(id, "sb_") && PathExists(LayoutFor(opts_.state_dir, id).next);
}

Result<bool> NsBackend::SwapStagedWorkspace(const std::string& id) {
  if (!IsValidId(id, "sb_")) return Fail(Error::NotFound("no sandbox " + id));
  auto lock = IdLock(id);
  std::lock_guard guard(*lock);
  const Layout l = LayoutFor(opts_.state_dir, id);
  if (!PathExists(l.next)) return false;
  ASB_ASSIGN_OR_RETURN(SandboxState st, ImageCapableState(l, id));
  auto start = ProcessStartTime(st.pid);
  if (!start || *start != st.start_time || !ProcessIsRunning(st.pid)) {
    return Fail(Error::NotFound("sandbox " + id + " no longer runs"));
  }
  // 1. The staged image, mounted plainly on ws_next. After a crash in the middle of an earlier
  //    swap its loop device may still exist (the sandbox may already use it): mounting that
  //    device again shares the superblock; a second loop device on the same file would not.
  if (::mkdir(l.ws_next.c_str(), 0700) != 0 && errno != EEXIST) {
    return FailErrno("mkdir " + l.ws_next);
  }
  ASB_TRY(UnmountWorkspace(l.ws_next));
  struct Cleanup {
    const Layout& l;
    ~Cleanup() {
      (void)UnmountWorkspace(l.ws_next);
      ::rmdir(l.ws_next.c_str());
    }
  } cleanup{l};
  ASB_TRY(MountWorkspaceSharingLoop(l.next, l.ws_next));
  // 2. Two idmapped clones of it: one for the sandbox, one for the host's view (l.ws).
  ASB_ASSIGN_OR_RETURN(UniqueFd userns, IdmapUsernsFor(st.uid_base));
  ASB_ASSIGN_OR_RETURN(UniqueFd for_sandbox, IdmappedTree(l.ws_next, userns.get()));
  ASB_ASSIGN_OR_RETURN(UniqueFd for_host, IdmappedTree(l.ws_next, userns.get()));
  // 3. The switch the sandbox sees. If it fails, the sandbox keeps its old /workspace.
  ASB_TRY_CTX(ReplaceMountInNamespace(st.pid, for_sandbox.get(), "/workspace"),
              "swap workspace of " + id);
  // 4. The host's view, then the file: from the rename on, a restart finds the new image in
  //    place and nothing staged.
  ASB_TRY(UnmountWorkspace(l.ws));
  ASB_TRY(AttachTree(for_host.get(), l.ws));
  if (::rename(l.next.c_str(), l.image.c_str()) != 0) return FailErrno("rename " + l.next);
  ASB_TRY(FsyncDir(l.dir));
  return true;
}

Status NsBackend::DropStagedWorkspace(const std::string& id) {
  if (!IsValidId(id, "sb_")) return {};
  auto lock = IdLock(id);
  std::lock_guard guard(*lock);
  const Layout l = LayoutFor(opts_.state_dir, id);
  (void)UnmountWorkspace(l.ws_next);
  ::rmdir(l.ws_next.c_str());
  for (const std::string& p : {l.next_tmp, l.next}) {
    if (::unlink(p.c_str()) != 0 && errno != ENOENT) return FailErrno("unlink " + p);
  }
  return {};
}

}  // namespace asb::isolation::ns
