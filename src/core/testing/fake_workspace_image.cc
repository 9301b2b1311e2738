#include "core/testing/fake_workspace_image.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <vector>

#include "common/unique_fd.h"

namespace asb::core::testing {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kMagic = "ASBFAKEIMG1\n";

template <typename T>
void Put(std::string* out, T v) {
  out->append(reinterpret_cast<const char*>(&v), sizeof v);
}

template <typename T>
bool Take(std::string_view* in, T* v) {
  if (in->size() < sizeof *v) return false;
  std::memcpy(v, in->data(), sizeof *v);
  in->remove_prefix(sizeof *v);
  return true;
}

/// The first `limit` bytes of the file at `path` (all of it if shorter).
Result<std::string> ReadPrefix(const std::string& path, uint64_t limit) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return FailErrno("open " + path);
  std::string data;
  char buf[65536];
  while (data.size() < limit) {
    ssize_t n = ::read(fd.get(), buf, std::min<uint64_t>(sizeof buf, limit - data.size()));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return FailErrno("read " + path);
    if (n == 0) break;
    data.append(buf, static_cast<size_t>(n));
  }
  return data;
}

/// The records of an image: after the magic, their length (u64), then the records.
Result<std::string> ReadRecords(const std::string& image) {
  constexpr uint64_t kHeader = kMagic.size() + sizeof(uint64_t);
  ASB_ASSIGN_OR_RETURN(std::string head, ReadPrefix(image, kHeader));
  std::string_view in(head);
  uint64_t len = 0;
  if (in.substr(0, kMagic.size()) != kMagic) {
    return Fail(Error::InvalidArgument(image + " is not a fake workspace image"));
  }
  in.remove_prefix(kMagic.size());
  if (!Take(&in, &len)) return Fail(Error::InvalidArgument(image + " is cut short"));
  ASB_ASSIGN_OR_RETURN(std::string all, ReadPrefix(image, kHeader + len));
  if (all.size() != kHeader + len) return Fail(Error::InvalidArgument(image + " is cut short"));
  return all.substr(kHeader);
}

/// Appends one record for `path` (`rel` below the root, "" for the root) to `out`.
Status AddRecord(const std::string& path, const std::string& rel, std::string* out,
                 uint64_t* used) {
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0) return FailErrno("lstat " + path);
  char type = 0;
  std::string data;
  if (S_ISDIR(st.st_mode)) {
    type = 'd';
  } else if (S_ISREG(st.st_mode)) {
    type = 'f';
    ASB_ASSIGN_OR_RETURN(data, ReadPrefix(path, UINT64_MAX));
    *used += data.size();
  } else if (S_ISLNK(st.st_mode)) {
    type = 'l';
    std::error_code ec;
    data = fs::read_symlink(path, ec).string();
    if (ec) return Fail(Error::FromErrno(ec.value(), "readlink " + path));
  } else {
    return {};  // sockets, fifos and devices are not kept
  }
  out->push_back(type);
  Put<uint32_t>(out, st.st_mode & 07777);
  Put<uint32_t>(out, st.st_uid);
  Put<uint32_t>(out, st.st_gid);
  Put<uint32_t>(out, static_cast<uint32_t>(rel.size()));
  Put<uint64_t>(out, data.size());
  out->append(rel);
  out->append(data);
  return {};
}

Status WriteNewFile(const std::string& dest, const std::string& data, uint64_t size) {
  UniqueFd fd(::open(dest.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
  if (!fd) return FailErrno("create " + dest);
  bool ok = WriteAll(fd.get(), data.data(), data.size()) &&
            ::ftruncate(fd.get(), static_cast<off_t>(size)) == 0 && ::fsync(fd.get()) == 0;
  if (!ok) {
    Error e = Error::FromErrno(errno, "write " + dest);
    ::unlink(dest.c_str());
    return Fail(std::move(e));
  }
  return {};
}

}  // namespace

Result<FakeImageFacts> WriteFakeImage(const std::string& dir, const std::string& dest,
                                      uint64_t image_bytes) {
  std::string records;
  FakeImageFacts facts;
  ASB_TRY(AddRecord(dir, "", &records, &facts.used_bytes));
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::end(it);
       it.increment(ec)) {
    const std::string rel = it->path().lexically_relative(dir).string();
    ASB_TRY(AddRecord(it->path().string(), rel, &records, &facts.used_bytes));
  }
  if (ec) return Fail(Error::FromErrno(ec.value(), "walk " + dir));
  records.push_back('\0');  // the end
  std::string out(kMagic);
  Put<uint64_t>(&out, records.size());
  out += records;
  if (out.size() > image_bytes) {
    return Fail(Error::LimitExceeded("workspace of " + std::to_string(out.size()) +
                                     " bytes does not fit an image of " +
                                     std::to_string(image_bytes)));
  }
  ASB_TRY(WriteNewFile(dest, out, image_bytes));
  facts.image_bytes = image_bytes;
  return facts;
}

Status ReadFakeImage(const std::string& image, const std::string& dir) {
  ASB_ASSIGN_OR_RETURN(const std::string data, ReadRecords(image));
  std::string_view in(data);
  auto bad = [&] { return Fail(Error::InvalidArgument(image + " is not a fake workspace image")); };
  const bool chown = ::geteuid() == 0;
  bool first = true;
  while (true) {
    char type = 0;
    if (!Take(&in, &type)) return bad();
    if (type == '\0') break;
    uint32_t mode = 0, uid = 0, gid = 0, path_len = 0;
    uint64_t data_len = 0;
    if (!Take(&in, &mode) || !Take(&in, &uid) || !Take(&in, &gid) || !Take(&in, &path_len) ||
        !Take(&in, &data_len) || in.size() < path_len + data_len) {
      return bad();
    }
    const std::string rel(in.substr(0, path_len));
    const std::string body(in.substr(path_len, data_len));
    in.remove_prefix(path_len + data_len);
    if (first != rel.empty() || rel.find("..") != std::string::npos || rel[0] == '/') {
      return bad();  // the root comes first, and only once; nothing leaves it
    }
    first = false;
    const std::string path = rel.empty() ? dir : dir + "/" + rel;
    if (type == 'd') {
      if (::mkdir(path.c_str(), 0700) != 0) return FailErrno("mkdir " + path);
    } else if (type == 'f') {
      ASB_TRY(WriteNewFile(path, body, body.size()));
    } else if (type == 'l') {
      if (::symlink(body.c_str(), path.c_str()) != 0) return FailErrno("symlink " + path);
    } else {
      return bad();
    }
    if (chown && ::lchown(path.c_str(), uid, gid) != 0) return FailErrno("chown " + path);
    if (type != 'l' && ::chmod(path.c_str(), mode) != 0) return FailErrno("chmod " + path);
  }
  return {};
}

Result<uint64_t> FakeImageSize(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return FailErrno("stat " + path);
  return static_cast<uint64_t>(st.st_size);
}

Status CopyFakeImage(const std::string& src, const std::string& dest) {
  ASB_ASSIGN_OR_RETURN(const uint64_t size, FakeImageSize(src));
  ASB_ASSIGN_OR_RETURN(const std::string records, ReadRecords(src));
  std::string out(kMagic);
  Put<uint64_t>(&out, records.size());
  out += records;
  return WriteNewFile(dest, out, size);  // sparse beyond the records, as the source
}

}  // namespace asb::core::testing
