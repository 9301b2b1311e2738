#include "sandboxd/file_stream_ops.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <limits>

#include "common/ids.h"
#include "sandboxd/daemon.h"
#include "sandboxd/file_ops.h"

namespace asb::sandboxd {

using protocol::Stream;

namespace {
FsContext ContextOf(Daemon& d) { return FsContext{d.workspace_fd(), d.options().workspace}; }
}  // namespace

// ---- file.read -------------------------------------------------------------------------------

void FileReadOp::Start() {
  if (auto st = Open(); !st) {
    FailWith(st.error());
    return;
  }
  SendMore();
}

Status FileReadOp::Open() {
  FsContext ctx = ContextOf(daemon_);
  FsIdentity id(req_.scope);
  ASB_ASSIGN_OR_RETURN(FsPath p, ResolvePath(ctx, req_.path, req_.scope));
  // O_NONBLOCK: opening a FIFO must not wait for a writer.
  ASB_ASSIGN_OR_RETURN(fd_, OpenResolved(ctx, p, p.rel, O_RDONLY | O_NONBLOCK));
  struct stat st;
  if (fstat(fd_.get(), &st) != 0) return FailErrno(p.display);
  if (S_ISDIR(st.st_mode)) {
    return Fail(Error(ErrorCode::kInvalidArgument, p.display + ": is a directory", EISDIR));
  }
  if (!S_ISREG(st.st_mode)) {
    return Fail(Error::InvalidArgument(p.display + ": not a regular file"));
  }
  std::string name = p.name.empty() ? p.display : p.name;
  SendInfo(protocol::EncodeFileStat(MakeFileStat(st, p.display, name, fd_.get(), "")));
  pos_ = req_.offset;
  remaining_ = req_.length ? req_.length : std::numeric_limits<uint64_t>::max();
  return {};
}

void FileReadOp::OnWindow(Stream stream, uint32_t bytes) {
  if (stream != Stream::kStdout) return;
  window_ += bytes;
  SendMore();
}

void FileReadOp::SendMore() {
  static char buf[protocol::kDataChunkSize];
  // Bounded per call so that one big download interleaves with other channels.
  for (int i = 0; i < 8 && !finished(); ++i) {
    if (remaining_ == 0) break;
    if (window_ == 0) return;  // wait for WINDOW
    size_t want = static_cast<size_t>(std::min<uint64_t>({sizeof buf, window_, remaining_}));
    ssize_t n = pread(fd_.get(), buf, want, static_cast<off_t>(pos_));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      FailWith(Error::FromErrno(errno, "read " + req_.path));
      return;
    }
    if (n == 0) {
      remaining_ = 0;
      break;
    }
    pos_ += static_cast<uint64_t>(n);
    window_ -= static_cast<uint64_t>(n);
    if (remaining_ != std::numeric_limits<uint64_t>::max()) remaining_ -= static_cast<uint64_t>(n);
    SendData(Stream::kStdout, std::string_view(buf, static_cast<size_t>(n)));
  }
  if (finished()) return;
  if (remaining_ == 0) {
    SendEof(Stream::kStdout);
    Succeed("{}");
    return;
  }
  // More to send and window left: continue after other channels had their turn.
  daemon_.loop().Defer([this] {
    if (!finished()) SendMore();
  });
}

// ---- file.write ------------------------------------------------------------------------------

FileWriteOp::~FileWriteOp() { Discard(); }

void FileWriteOp::Start() {
  if (auto st = Open(); !st) {
    Discard();
    FailWith(st.error());
  }
}

Status FileWriteOp::Open() {
  if (req_.mode > 07777) return Fail(Error::InvalidArgument("mode must be at most 07777"));
  FsContext ctx = ContextOf(daemon_);
  FsIdentity id(req_.scope);
  ASB_ASSIGN_OR_RETURN(path_, ResolvePath(ctx, req_.path, req_.scope));
  if (req_.make_parents) ASB_TRY(MakeParents(ctx, path_, path_.parent_rel, 0755));
  ASB_ASSIGN_OR_RETURN(parent_, OpenParent(ctx, path_));
  struct stat st;
  const bool exists = fstatat(parent_.get(), path_.name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0;
  if (exists && S_ISDIR(st.st_mode)) {
    return Fail(Error(ErrorCode::kInvalidArgument, path_.display + ": is a directory", EISDIR));
  }
  if (req_.append) {
    // O_NOFOLLOW: a final symlink is refused (ELOOP), never written through.
    fd_.Reset(openat(parent_.get(), path_.name.c_str(),
                     O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC, req_.mode));
    if (!fd_) return FailErrno(path_.display);
    return {};
  }
  for (int attempt = 0; attempt < 5 && !fd_; ++attempt) {
    std::string name = WriteTempName(path_.name, exists);
    fd_.Reset(openat(parent_.get(), name.c_str(),
                     O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (fd_) {
      temp_name_ = name;
    } else if (errno != EEXIST) {
      return FailErrno(path_.display);
    }
  }
  if (!fd_) return FailErrno(path_.display);
  if (fchmod(fd_.get(), req_.mode) != 0) return FailErrno(path_.display);
  // Set before the rename: the file appears with its metadata or not at all.
  ASB_TRY(WriteMetadata(fd_.get(), req_.metadata, path_.display));
  return {};
}

void FileWriteOp::OnData(std::string&& bytes) {
  if (finished() || !fd_) {
    Operation::OnData(std::move(bytes));
    return;
  }
  size_t n = bytes.size();
  if (req_.max_bytes > 0 && written_ + n > req_.max_bytes) {
    Discard();
    FailWith(Error::TooLarge(path_.display + ": more than " + std::to_string(req_.max_bytes) +
                             " bytes"));
    return;
  }
  if (!WriteAll(fd_.get(), bytes.data(), n)) {
    Error e = Error::FromErrno(errno, "write " + path_.display);
    Discard();
    FailWith(e);
    return;
  }
  written_ += n;
  SendWindow(static_cast<uint32_t>(n));
}

void FileWriteOp::OnEof() {
  if (finished()) return;
  if (auto st = Commit(); !st) {
    Discard();
    FailWith(st.error());
    return;
  }
  FsIdentity id(req_.scope);
  auto stat = StatAt(parent_.get(), path_.name, path_.display);
  if (!stat) {
    FailWith(stat.error());
    return;
  }
  if (!req_.metadata.empty()) stat->metadata = ReadMetadata(parent_.get(), path_.name);
  Succeed(protocol::EncodeFileStat(*stat));
}

Status FileWriteOp::Commit() {
  if (fsync(fd_.get()) != 0) return FailErrno("fsync " + path_.display);
  if (close(fd_.Release()) != 0) return FailErrno("close " + path_.display);
  if (temp_name_.empty()) return {};
  FsIdentity id(req_.scope);
  if (renameat(parent_.get(), temp_name_.c_str(), parent_.get(), path_.name.c_str()) != 0) {
    return FailErrno(path_.display);
  }
  temp_name_.clear();
  return {};
}

void FileWriteOp::Discard() {
  fd_.Reset();
  if (!temp_name_.empty() && parent_) {
    FsIdentity id(req_.scope);
    unlinkat(parent_.get(), temp_name_.c_str(), 0);
    temp_name_.clear();
  }
}

void FileWriteOp::OnCancel() {
  Discard();
  Operation::OnCancel();
}

std::string WriteTempName(std::string_view name, bool replaces) {
  return "." + std::string(name.substr(0, 200)) + (replaces ? ".asbr-" : ".asb-") + RandomHex(6);
}

namespace {

// Whether `name` is "." + something + `mark` + 12 lower-case hex digits.
bool HasTempShape(std::string_view name, std::string_view mark) {
  constexpr size_t kHex = 12;
  if (name.size() < 1 + mark.size() + kHex || name[0] != '.') return false;
  std::string_view tail = name.substr(name.size() - kHex);
  if (name.substr(name.size() - kHex - mark.size(), mark.size()) != mark) return false;
  return std::all_of(tail.begin(), tail.end(),
                     [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

}  // namespace

bool IsWriteTempName(std::string_view name) {
  return HasTempShape(name, ".asb-") || HasTempShape(name, ".asbr-");
}

bool IsReplacingWriteTempName(std::string_view name) { return HasTempShape(name, ".asbr-"); }

}  // namespace asb::sandboxd
