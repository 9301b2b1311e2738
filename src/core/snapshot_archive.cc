#include "core/snapshot_archive.h"

#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "common/unique_fd.h"
#include "protocol/messages.h"

namespace asb::core {

namespace {

/// How long to wait for sandboxd's next frame of a tar stream, milliseconds.
constexpr int64_t kFrameWaitMs = 120'000;
/// zstd level: 3 is zstd's default, fast enough to keep up with sandboxd's tar on one core.
constexpr int kZstdLevel = 3;

Status WriteAll(int fd, const char* p, size_t n, const std::string& what) {
  while (n > 0) {
    ssize_t w = ::write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return FailErrno("write " + what);
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
  return {};
}

Status FsyncDir(const std::string& dir) {
  UniqueFd d(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!d) return FailErrno("open " + dir);
  if (::fsync(d.get()) != 0) return FailErrno("fsync " + dir);
  return {};
}

struct CCtxFree {
  void operator()(ZSTD_CCtx* c) const { ZSTD_freeCCtx(c); }
};
struct DCtxFree {
  void operator()(ZSTD_DCtx* c) const { ZSTD_freeDCtx(c); }
};

Error EventError(const protocol::ChannelEvent& ev, std::string_view what) {
  if (ev.kind == protocol::ChannelEvent::Kind::kError && ev.error) return *ev.error;
  return Error::Backend(std::string(what) + ": unexpected event from sandboxd");
}

/// Removes the temp file unless released.
struct TempFile {
  std::string path;
  bool keep = false;
  ~TempFile() {
    if (!keep && !path.empty()) ::unlink(path.c_str());
  }
};

}  // namespace

Result<ArchiveFacts> ReceiveTarZst(protocol::Channel& channel, const std::string& dir,
                                   const std::string& name, uint64_t max_tar_bytes) {
  TempFile tmp{dir + "/" + kSnapshotTempPrefix + name};
  const std::string final_path = dir + "/" + name;
  UniqueFd fd(::open(tmp.path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
  if (!fd) {
    (void)channel.Cancel();
    return FailErrno("create " + tmp.path);
  }
  std::unique_ptr<ZSTD_CCtx, CCtxFree> cctx(ZSTD_createCCtx());
  if (!cctx) return Fail(Error::Internal("zstd: out of memory"));
  ZSTD_CCtx_setParameter(cctx.get(), ZSTD_c_compressionLevel, kZstdLevel);
  ZSTD_CCtx_setParameter(cctx.get(), ZSTD_c_checksumFlag, 1);
  std::vector<char> out(ZSTD_CStreamOutSize());
  uint64_t tar_bytes = 0;

  auto compress = [&](std::string_view in, ZSTD_EndDirective mode) -> Status {
    ZSTD_inBuffer ib{in.data(), in.size(), 0};
    while (true) {
      ZSTD_outBuffer ob{out.data(), out.size(), 0};
      size_t rest = ZSTD_compressStream2(cctx.get(), &ob, &ib, mode);
      if (ZSTD_isError(rest)) {
        return Fail(Error::Internal(std::string("zstd: ") + ZSTD_getErrorName(rest)));
      }
      ASB_TRY(WriteAll(fd.get(), out.data(), ob.pos, tmp.path));
      bool done = mode == ZSTD_e_end ? rest == 0 : ib.pos == ib.size;
      if (done) return {};
    }
  };

  protocol::TarResult result;
  while (true) {
    auto ev = channel.Next(kFrameWaitMs);
    if (!ev) {
      (void)channel.Cancel();
      return Fail(std::move(ev)
                      .error()
                      .WithCode(ErrorCode::kBackend)
                      .WithContext("tar export: sandboxd did not answer"));
    }
    using Kind = protocol::ChannelEvent::Kind;
    if (ev->kind == Kind::kData) {
      tar_bytes += ev->payload.size();
      if (max_tar_bytes != 0 && tar_bytes > max_tar_bytes) {
        (void)channel.Cancel();
        return Fail(Error::TooLarge("workspace archive is larger than the snapshot limit of " +
                                    std::to_string(max_tar_bytes) + " bytes"));
      }
      if (Status st = compress(ev->payload, ZSTD_e_continue); !st) {
        (void)channel.Cancel();
        return Fail(std::move(st).error());
      }
    } else if (ev->kind == Kind::kEof || ev->kind == Kind::kInfo) {
      continue;
    } else if (ev->kind == Kind::kResult) {
      ASB_ASSIGN_OR_RETURN(result, protocol::DecodeTarResult(ev->payload));
      break;
    } else {
      return Fail(EventError(*ev, "tar export"));
    }
  }
  ASB_TRY(compress({}, ZSTD_e_end));
  if (::fsync(fd.get()) != 0) return FailErrno("fsync " + tmp.path);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return FailErrno("stat " + tmp.path);
  fd.Reset();
  if (::rename(tmp.path.c_str(), final_path.c_str()) != 0) {
    return FailErrno("rename " + tmp.path);
  }
  tmp.keep = true;
  ASB_TRY(FsyncDir(dir));
  ArchiveFacts f;
  f.file_bytes = static_cast<uint64_t>(st.st_size);
  f.content_bytes = result.bytes;
  f.entries = result.entries;
  return f;
}

Result<protocol::TarResult> SendTarZst(const std::string& path, protocol::Channel& channel) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) {
    (void)channel.Cancel();
    return FailErrno("open " + path);
  }
  std::unique_ptr<ZSTD_DCtx, DCtxFree> dctx(ZSTD_createDCtx());
  std::vector<char> in(ZSTD_DStreamInSize()), out(ZSTD_DStreamOutSize());
  auto fail = [&](Error e) -> Result<protocol::TarResult> {
    (void)channel.Cancel();
    // Drain to the terminal event so the channel is finished.
    while (true) {
      auto ev = channel.Next(kFrameWaitMs);
      if (!ev || ev->terminal()) break;
    }
    return Fail(std::move(e));
  };
  size_t last = 0;
  while (true) {
    ssize_t n = ::read(fd.get(), in.data(), in.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return fail(Error::FromErrno(errno, "read " + path));
    }
    if (n == 0) break;
    ZSTD_inBuffer ib{in.data(), static_cast<size_t>(n), 0};
    while (ib.pos < ib.size) {
      ZSTD_outBuffer ob{out.data(), out.size(), 0};
      last = ZSTD_decompressStream(dctx.get(), &ob, &ib);
      if (ZSTD_isError(last)) {
        return fail(Error::InvalidArgument(std::string("snapshot archive is not valid zstd: ") +
                                           ZSTD_getErrorName(last)));
      }
      if (ob.pos > 0) {
        Status st = channel.Write(std::string_view(out.data(), ob.pos), kFrameWaitMs);
        if (!st) break;  // sandboxd refused (bad member, full disk): its ERROR follows
      }
    }
  }
  (void)channel.CloseWrite();
  while (true) {
    auto ev = channel.Next(kFrameWaitMs);
    if (!ev) {
      (void)channel.Cancel();
      return Fail(std::move(ev)
                      .error()
                      .WithCode(ErrorCode::kBackend)
                      .WithContext("tar import: sandboxd did not answer"));
    }
    using Kind = protocol::ChannelEvent::Kind;
    if (ev->kind == Kind::kResult) return protocol::DecodeTarResult(ev->payload);
    if (ev->kind == Kind::kError) return Fail(EventError(*ev, "tar import"));
  }
}

Result<ArchiveFacts> ScanArchive(const std::string& path, uint64_t max_content_bytes) {
  struct ArchiveFree {
    void operator()(struct archive* a) const { archive_read_free(a); }
  };
  std::unique_ptr<struct archive, ArchiveFree> a(archive_read_new());
  archive_read_support_filter_zstd(a.get());
  archive_read_support_filter_none(a.get());
  archive_read_support_format_tar(a.get());
  if (archive_read_open_filename(a.get(), path.c_str(), 1 << 16) != ARCHIVE_OK) {
    return Fail(Error::InvalidArgument(std::string("not a tar.zst archive: ") +
                                       archive_error_string(a.get())));
  }
  auto bad_name = [](std::string_view n) {
    if (!n.empty() && n.front() == '/') return "absolute path";
    size_t i = 0;
    while (i <= n.size()) {
      size_t j = n.find('/', i);
      if (j == std::string_view::npos) j = n.size();
      if (n.substr(i, j - i) == "..") return "path contains ..";
      i = j + 1;
    }
    return static_cast<const char*>(nullptr);
  };
  // Member names as their components ("./a//b/" is "a/b"), for matching against symlinks.
  auto normal = [](std::string_view n) {
    std::string out;
    size_t i = 0;
    while (i <= n.size()) {
      size_t j = n.find('/', i);
      if (j == std::string_view::npos) j = n.size();
      std::string_view c = n.substr(i, j - i);
      if (!c.empty() && c != ".") {
        if (!out.empty()) out += '/';
        out += c;
      }
      i = j + 1;
    }
    return out;
  };
  // sandboxd extracts with ARCHIVE_EXTRACT_SECURE_SYMLINKS: a member below an earlier symlink
  // member fails there, so it is refused here, before the archive is stored as a snapshot.
  std::set<std::string> symlinks;
  auto through_symlink = [&](const std::string& n) -> const std::string* {
    for (size_t k = n.find('/'); k != std::string::npos; k = n.find('/', k + 1)) {
      auto it = symlinks.find(n.substr(0, k));
      if (it != symlinks.end()) return &*it;
    }
    return nullptr;
  };
  ArchiveFacts f;
  std::vector<char> buf(1 << 16);
  while (true) {
    struct archive_entry* e = nullptr;
    int r = archive_read_next_header(a.get(), &e);
    if (r == ARCHIVE_EOF) break;
    if (r < ARCHIVE_WARN) {
      return Fail(Error::InvalidArgument(std::string("unreadable archive: ") +
                                         archive_error_string(a.get())));
    }
    const char* pn = archive_entry_pathname(e);
    std::string name = pn ? pn : "";
    if (const char* why = bad_name(name)) {
      return Fail(Error::InvalidArgument("archive member " + name + ": " + why));
    }
    if (const char* hl = archive_entry_hardlink(e)) {
      if (const char* why = bad_name(hl)) {
        return Fail(Error::InvalidArgument("archive member " + name + ": hard link " + why));
      }
    }
    const std::string norm = normal(name);
    if (const std::string* link = through_symlink(norm)) {
      return Fail(Error::InvalidArgument("archive member " + name + ": path goes through symlink " +
                                         *link));
    }
    if (const char* hl = archive_entry_hardlink(e)) {
      if (const std::string* link = through_symlink(normal(hl))) {
        return Fail(Error::InvalidArgument("archive member " + name +
                                           ": hard link goes through symlink " + *link));
      }
    }
    switch (archive_entry_filetype(e)) {
      case AE_IFCHR:
      case AE_IFBLK:
        return Fail(Error::InvalidArgument("archive member " + name + ": device node"));
      case AE_IFSOCK:
        return Fail(Error::InvalidArgument("archive member " + name + ": socket"));
      case AE_IFIFO:  // sandboxd's tar.import refuses them too
        return Fail(Error::InvalidArgument("archive member " + name + ": FIFO"));
      case AE_IFLNK:
        symlinks.insert(norm);
        break;
      default:
        break;
    }
    ++f.entries;
    if (archive_entry_filetype(e) == AE_IFREG && archive_entry_size_is_set(e)) {
      f.content_bytes += static_cast<uint64_t>(archive_entry_size(e));
    }
    if (max_content_bytes != 0 && f.content_bytes > max_content_bytes) {
      return Fail(Error::TooLarge("archive expands to more than the limit of " +
                                  std::to_string(max_content_bytes) + " bytes"));
    }
    // Read the data rather than trusting the header: what counts is what comes out.
    while (true) {
      la_ssize_t n = archive_read_data(a.get(), buf.data(), buf.size());
      if (n == 0) break;
      if (n < 0) {
        return Fail(Error::InvalidArgument(std::string("unreadable archive: ") +
                                           archive_error_string(a.get())));
      }
    }
  }
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) f.file_bytes = static_cast<uint64_t>(st.st_size);
  return f;
}

Status InstallFile(const std::string& src, const std::string& dir, const std::string& name) {
  {
    UniqueFd fd(::open(src.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd) return FailErrno("open " + src);
    if (::fsync(fd.get()) != 0) return FailErrno("fsync " + src);
  }
  const std::string final_path = dir + "/" + name;
  if (::rename(src.c_str(), final_path.c_str()) != 0) return FailErrno("rename " + src);
  return FsyncDir(dir);
}

}  // namespace asb::core
