#include "sandboxd/file_watch_op.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "sandboxd/daemon.h"
#include "sandboxd/file_ops.h"
#include "sandboxd/file_stream_ops.h"
#include "sandboxd/fs_path.h"

namespace asb::sandboxd {

using protocol::FileWatchEvent;
using protocol::Stream;

uint32_t FileWatchOp::active_ = 0;

namespace {

// What every watch asks the kernel for. IN_EXCL_UNLINK: no events for files already unlinked
// but still open (a temp file written after its unlink would otherwise report writes to a path
// that no longer exists).
constexpr uint32_t kWatchMask = IN_CREATE | IN_DELETE | IN_MODIFY | IN_ATTRIB | IN_MOVED_FROM |
                                IN_MOVED_TO | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR |
                                IN_EXCL_UNLINK;

// inotify batches read per readiness, so that an event storm cannot starve the other fds of
// the loop (the fd is level-triggered: the rest is read on the next round).
constexpr int kReadsPerWakeup = 16;

FsContext ContextOf(Daemon& d) { return FsContext{d.workspace_fd(), d.options().workspace}; }

std::string Join(const std::string& dir, const std::string& name) {
  return dir == "/" ? "/" + name : dir + "/" + name;
}

bool IsBelow(const std::string& path, const std::string& dir) {
  return path.size() > dir.size() && path.compare(0, dir.size(), dir) == 0 &&
         path[dir.size()] == '/';
}

Error WatchError(int err, const std::string& display) {
  if (err == ENOSPC || err == EMFILE || err == ENFILE) {
    return Error::FromErrno(ErrorCode::kLimitExceeded, err, "watch " + display);
  }
  if (err == ENOTDIR) return Error::InvalidArgument(display + " is not a directory");
  return Error::FromErrno(err, "watch " + display);
}

}  // namespace

FileWatchOp::FileWatchOp(Daemon& d, Connection& c, uint32_t ch, protocol::FileWatchRequest req)
    : Operation(d, c, ch), req_(std::move(req)) {}

FileWatchOp::~FileWatchOp() { Release(); }

void FileWatchOp::Release() {
  if (inotify_) {
    daemon_.loop().Remove(inotify_.get());
    inotify_.Reset();  // closing it removes every kernel watch
  }
  dirs_.clear();
  if (counted_) {
    --active_;
    counted_ = false;
  }
}

void FileWatchOp::Start() {
  if (req_.max_queue > protocol::kWatchQueueMax) {
    FailWith(Error::InvalidArgument("max_queue " + std::to_string(req_.max_queue) +
                                    " is over the limit of " +
                                    std::to_string(protocol::kWatchQueueMax)));
    return;
  }
  if (req_.max_queue != 0) max_queue_ = req_.max_queue;
  if (active_ >= protocol::kWatchMaxOps) {
    FailWith(
        Error(ErrorCode::kLimitExceeded, "at most " + std::to_string(protocol::kWatchMaxOps) +
                                             " directory watches may run at once in a sandbox"));
    return;
  }
  FsContext ctx = ContextOf(daemon_);
  auto p = ResolvePath(ctx, req_.path, req_.scope);
  if (!p) {
    FailWith(p.error());
    return;
  }
  int fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (fd < 0) {
    FailWith(WatchError(errno, p->display));
    return;
  }
  inotify_.Reset(fd);
  ++active_;
  counted_ = true;
  // The top directory is resolved from the path as asked (so ".." and symlinks resolve, or
  // fail, exactly as in the other file operations); the ones below from their display paths.
  if (auto st = AddTree(p->display, /*report=*/false, req_.path); !st) {
    Release();
    FailWith(st.error());
    return;
  }
  if (dirs_capped_) {
    Release();
    FailWith(Error(ErrorCode::kLimitExceeded, p->display + " has more than " +
                                                  std::to_string(protocol::kWatchMaxDirs) +
                                                  " directories to watch"));
    return;
  }
  if (auto st = daemon_.loop().Add(inotify_.get(), EPOLLIN, [this](uint32_t) { OnReadable(); });
      !st) {
    Release();
    FailWith(st.error());
    return;
  }
  SendInfo(protocol::EncodeFileWatchArmed(
      {p->display, static_cast<uint32_t>(std::min<size_t>(dirs_.size(), UINT32_MAX))}));
}

Result<int> FileWatchOp::AddWatch(const std::string& path, const std::string& display,
                                  UniqueFd* dir_fd) {
  FsIdentity id(req_.scope);
  if (!id.ok()) return Fail(Error::InvalidArgument("unknown user \"" + req_.scope.user + "\""));
  FsContext ctx = ContextOf(daemon_);
  ASB_ASSIGN_OR_RETURN(FsPath p, ResolvePath(ctx, path, req_.scope));
  // The top directory may be reached through a symlink (as file.list allows); those below are
  // added from their own events and must be real directories, never links.
  int nofollow = root_wd_ < 0 ? 0 : O_NOFOLLOW;
  auto fd = OpenResolved(ctx, p, p.rel, O_RDONLY | O_DIRECTORY | nofollow);
  if (!fd) {
    if (fd.error().sys_errno() == ENOTDIR) return Fail(WatchError(ENOTDIR, display));
    return Fail(fd.error());
  }
  // inotify_add_watch takes a path; watching "." from inside the opened directory makes it
  // this very directory, whatever happens to the path between the open and the add.
  UniqueFd here(open(".", O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!here || fchdir(fd->get()) != 0) return Fail(Error::FromErrno(errno, "watch " + display));
  int wd = inotify_add_watch(inotify_.get(), ".", kWatchMask);
  int err = errno;
  if (fchdir(here.get()) != 0) return Fail(Error::FromErrno(errno, "watch: restore cwd"));
  if (wd < 0) return Fail(WatchError(err, display));
  *dir_fd = std::move(*fd);
  return wd;
}

Status FileWatchOp::AddTree(const std::string& top, bool report, const std::string& top_path) {
  std::deque<std::string> todo{top};
  bool first = true;
  while (!todo.empty()) {
    std::string display = std::move(todo.front());
    todo.pop_front();
    if (dirs_.size() >= protocol::kWatchMaxDirs) {
      if (!dirs_capped_) Push({"overflow", "", false, 0});
      dirs_capped_ = true;
      return {};
    }
    UniqueFd dir;
    auto wd = AddWatch(first && !top_path.empty() ? top_path : display, display, &dir);
    if (!wd) {
      if (first) return Fail(wd.error());
      // Gone again, or not a directory any more: its removal is (or will be) reported. A
      // kernel limit means events below it are missed, which the reader must learn.
      if (wd.error().code() == ErrorCode::kLimitExceeded) Push({"overflow", "", false, 0});
      continue;
    }
    if (first && root_wd_ < 0) root_wd_ = *wd;
    first = false;
    auto known = dirs_.find(*wd);
    if (known != dirs_.end()) {
      // Already watched: a directory moved within the tree. Its paths, and those of the
      // directories below it, move with it.
      // (The same path again is the create event of a directory the scan of its parent
      // already added: nothing moved, and its IN_MOVE_SELF, if one comes, means it left.)
      std::string old = known->second.display;
      if (old != display) {
        known->second.moved_in = true;
        for (auto& [w, d] : dirs_) {
          if (d.display == old) {
            d.display = display;
          } else if (IsBelow(d.display, old)) {
            d.display = display + d.display.substr(old.size());
          }
        }
      }
      continue;  // its subdirectories are watched already
    }
    dirs_.emplace(*wd, Dir{display});
    if (!report && !req_.recursive) continue;
    // Scan: report what a new directory already holds, and find subdirectories to watch.
    int dup_fd = fcntl(dir.get(), F_DUPFD_CLOEXEC, 0);
    DIR* d = dup_fd >= 0 ? fdopendir(dup_fd) : nullptr;
    if (!d) {
      if (dup_fd >= 0) close(dup_fd);
      continue;
    }
    while (dirent* e = readdir(d)) {
      if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
      if (IsWriteTempName(e->d_name)) continue;
      bool is_dir = e->d_type == DT_DIR;
      if (e->d_type == DT_UNKNOWN) {
        struct stat st;
        is_dir = fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode);
      }
      std::string child = Join(display, e->d_name);
      if (report) Push({"create", child, is_dir, 0});
      if (is_dir && req_.recursive) todo.push_back(std::move(child));
    }
    closedir(d);
    if (!req_.recursive) break;
  }
  return {};
}

void FileWatchOp::OnReadable() {
  alignas(inotify_event) char buf[64 * 1024];
  for (int round = 0; round < kReadsPerWakeup && inotify_ && end_reason_.empty(); ++round) {
    ssize_t n = read(inotify_.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // EAGAIN: drained
    for (ssize_t off = 0; off + static_cast<ssize_t>(sizeof(inotify_event)) <= n;) {
      const auto* ev = reinterpret_cast<const inotify_event*>(buf + off);
      std::string name;
      if (ev->len > 0) name.assign(ev->name, strnlen(ev->name, ev->len));
      Handle(ev->wd, ev->mask, ev->cookie, name);
      off += static_cast<ssize_t>(sizeof(inotify_event) + ev->len);
      if (!end_reason_.empty()) break;
    }
  }
  Pump();
}

void FileWatchOp::Handle(int wd, uint32_t mask, uint32_t cookie, const std::string& name) {
  if (mask & IN_Q_OVERFLOW) {
    Push({"overflow", "", false, 0});
    return;
  }
  auto it = dirs_.find(wd);
  if (it == dirs_.end()) return;  // a watch we dropped; its last events may still come
  if (mask & IN_IGNORED) {
    dirs_.erase(it);
    if (wd == root_wd_) EndWith("removed");
    return;
  }
  if (mask & IN_UNMOUNT) {
    if (wd == root_wd_) EndWith("unmounted");
    return;
  }
  if (mask & (IN_DELETE_SELF | IN_MOVE_SELF)) {
    if (wd == root_wd_) {
      EndWith("removed");
    } else if (mask & IN_MOVE_SELF) {
      // Moved within the tree: re-added under its new name just before (IN_MOVED_TO comes
      // first). Otherwise it left the tree, and its events would carry stale paths.
      if (it->second.moved_in) {
        it->second.moved_in = false;
      } else {
        DropSubtree(wd);
      }
    }
    return;  // a deleted subdirectory's removal was reported by its parent
  }
  if (!name.empty() && (mask & IN_MOVED_FROM) && IsWriteTempName(name)) {
    write_cookie_ = cookie;  // file.write commits: its IN_MOVED_TO follows at once
    write_replaces_ = IsReplacingWriteTempName(name);
    return;
  }
  if (name.empty() || IsWriteTempName(name)) return;
  std::string path = Join(it->second.display, name);  // `it` may dangle after AddTree below
  bool is_dir = (mask & IN_ISDIR) != 0;
  if (mask & IN_CREATE) {
    Push({"create", path, is_dir, 0});
    if (is_dir && req_.recursive) (void)AddTree(path, /*report=*/true);
  } else if ((mask & IN_MOVED_TO) && cookie != 0 && cookie == write_cookie_ && !is_dir) {
    // A write through the file API (a temporary file renamed over its name) reads as the
    // write in place that a shell's `>` is: a new file is created and written, an existing
    // one written (E2B's envd reports the same for its SDK's files.write).
    write_cookie_ = 0;
    if (!write_replaces_) Push({"create", path, false, 0});
    Push({"write", path, false, 0});
  } else if (mask & IN_MOVED_TO) {
    Push({"create", path, is_dir, 0});
    // From outside the tree, its entries are new here too (and one made inside it just after
    // the move may land before its watch exists). Moved within the tree: AddTree finds its
    // watch and only rewrites paths.
    if (is_dir && req_.recursive) (void)AddTree(path, /*report=*/true);
  } else if (mask & IN_MOVED_FROM) {
    Push({"rename", path, is_dir, 0});
  } else if (mask & IN_DELETE) {
    Push({"remove", path, is_dir, 0});
  } else if (mask & IN_MODIFY) {
    Push({"write", path, is_dir, 0});
  } else if (mask & IN_ATTRIB) {
    Push({"chmod", path, is_dir, 0});
  }
}

void FileWatchOp::DropSubtree(int wd) {
  auto it = dirs_.find(wd);
  if (it == dirs_.end()) return;
  std::string top = it->second.display;
  for (auto i = dirs_.begin(); i != dirs_.end();) {
    if (i->first == wd || IsBelow(i->second.display, top)) {
      inotify_rm_watch(inotify_.get(), i->first);
      i = dirs_.erase(i);
    } else {
      ++i;
    }
  }
  dirs_capped_ = false;
}

void FileWatchOp::Push(FileWatchEvent ev) {
  if (!queue_.empty()) {
    FileWatchEvent& last = queue_.back();
    if (ev.type == "overflow" && last.type == "overflow") return;  // one says enough
    // A file being written produces one IN_MODIFY per write(2): one event says it changed.
    if ((ev.type == "write" || ev.type == "chmod") && last.type == ev.type &&
        last.path == ev.path) {
      return;
    }
  }
  const uint64_t cost = protocol::kWatchEventCost + ev.path.size();
  if (ev.type != "overflow" &&
      (queue_.size() >= max_queue_ || queued_bytes_ + cost > protocol::kWatchQueueMaxBytes)) {
    if (!queue_.empty() && queue_.back().type == "overflow") {
      ++queue_.back().dropped;
    } else {
      queue_.push_back({"overflow", "", false, 1});
    }
    return;
  }
  queued_bytes_ += cost;
  queue_.push_back(std::move(ev));
}

void FileWatchOp::Pump() {
  if (finished()) return;
  while (window_ > 0) {
    size_t want = static_cast<size_t>(std::min<uint64_t>(window_, protocol::kDataChunkSize));
    while (pending_.size() < want && !queue_.empty()) {
      AddEntry(&queue_.front());
      pending_ += protocol::EncodeFileWatchEvent(queue_.front());
      pending_ += '\n';
      queued_bytes_ -=
          std::min(queued_bytes_, protocol::kWatchEventCost + queue_.front().path.size());
      queue_.pop_front();
    }
    if (pending_.empty()) break;
    size_t n = std::min(want, pending_.size());
    SendData(Stream::kStdout, std::string_view(pending_).substr(0, n));
    pending_.erase(0, n);
    window_ -= n;
  }
  if (!end_reason_.empty() && pending_.empty() && queue_.empty()) {
    SendEof(Stream::kStdout);
    std::string reason = end_reason_;
    Release();
    Succeed(protocol::EncodeFileWatchEnd({reason}));
  }
}

void FileWatchOp::AddEntry(FileWatchEvent* ev) {
  if (!req_.entries || (ev->type != "create" && ev->type != "write" && ev->type != "chmod")) {
    return;
  }
  // Stat now, when the event leaves, as the file operations do (the watch's user, beneath its
  // root): the entry as it is then, or none when it is gone already.
  protocol::FileStatRequest r;
  r.path = ev->path;
  r.scope = req_.scope;
  r.metadata = true;
  if (auto st = StatFile(ContextOf(daemon_), r)) ev->entry = std::move(*st);
}

void FileWatchOp::EndWith(std::string reason) {
  if (!end_reason_.empty()) return;
  end_reason_ = std::move(reason);
  if (inotify_) daemon_.loop().Remove(inotify_.get());
}

void FileWatchOp::OnWindow(Stream s, uint32_t bytes) {
  if (s != Stream::kStdout) return;
  window_ += bytes;
  Pump();
}

void FileWatchOp::OnCancel() {
  Release();
  FailWith(Error::Cancelled("watch ended"));
}

void FileWatchOp::Abandon() { Release(); }

}  // namespace asb::sandboxd
