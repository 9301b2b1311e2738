#include "isolation/microvm/guest_images.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/ids.h"
#include "common/unique_fd.h"
#include "isolation/ns/files.h"
#include "isolation/ns/workspace.h"

namespace asb::isolation::microvm {

namespace {

void AppendNewcEntry(std::string* out, const std::string& name, uint32_t mode,
                     const std::string& data, uint32_t ino) {
  const uint32_t fields[13] = {ino,
                               mode,
                               0,
                               0,
                               1,
                               0,
                               static_cast<uint32_t>(data.size()),
                               0,
                               0,
                               0,
                               0,
                               static_cast<uint32_t>(name.size() + 1),
                               0};
  *out += "070701";
  for (uint32_t f : fields) *out += HexU64(f, 8);
  *out += name;
  out->push_back('\0');
  while (out->size() % 4 != 0) out->push_back('\0');
  *out += data;
  while (out->size() % 4 != 0) out->push_back('\0');
}

// Writes `data` to `path` through a temporary file and a rename.
Status WriteCache(const std::string& path, const std::string& a, const std::string& b) {
  const std::string tmp = path + ".tmp-" + RandomHex(4);
  {
    UniqueFd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
    if (!fd) return FailErrno("create " + tmp);
    for (const std::string* part : {&a, &b}) {
      if (!WriteAll(fd.get(), part->data(), part->size())) {
        int err = errno;
        ::unlink(tmp.c_str());
        return Fail(Error::FromErrno(ErrorCode::kBackend, err, "write " + tmp));
      }
    }
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    return Fail(Error::FromErrno(ErrorCode::kBackend, err, "rename " + tmp));
  }
  return {};
}

// A cache file as QEMU's jail needs it: readable by the VM's unprivileged uid through the
// bind mount (the cache directory itself stays 0700, so no other host user reaches it).
Result<std::string> ReadableByJail(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return FailErrno("stat " + path);
  if ((st.st_mode & 0777) != 0644 && ::chmod(path.c_str(), 0644) != 0) {
    return FailErrno("chmod " + path);
  }
  return path;
}

}  // namespace

Result<GuestKernel> FindGuestKernel(const std::string& dir) {
  GuestKernel k;
  k.vmlinuz = dir + "/vmlinuz";
  k.initrd_base = dir + "/initrd-base.cpio";
  for (const std::string& f : {k.vmlinuz, k.initrd_base}) {
    if (::access(f.c_str(), R_OK) != 0) {
      return Fail(Error::WithOperatorDetail(
          ErrorCode::kUnavailable, "no guest kernel (the operator runs scripts/microvm-guest.sh)",
          "no guest kernel: " + f + " is missing (run scripts/microvm-guest.sh)"));
    }
  }
  if (auto r = ns::ReadSmallFile(dir + "/kernel-release")) {
    k.release = *r;
    while (!k.release.empty() && (k.release.back() == '\n' || k.release.back() == ' ')) {
      k.release.pop_back();
    }
  }
  return k;
}

std::string CpioWithOneFile(const std::string& name, const std::string& data) {
  std::string out;
  AppendNewcEntry(&out, name, 0100755, data, 1);
  AppendNewcEntry(&out, "TRAILER!!!", 0, "", 0);
  return out;
}

Result<std::string> GuestImages::Initrd() {
  struct stat st;
  if (::stat(sandboxd_.c_str(), &st) != 0) return FailErrno("stat " + sandboxd_);
  struct stat base;
  if (::stat(kernel_.initrd_base.c_str(), &base) != 0) return FailErrno("stat initrd base");
  // Named by both inputs' identity and times: a rebuilt sandboxd or guest gets a new initrd.
  const std::string path =
      dir_ + "/initrd-" +
      HexU64(Fnv1a64(std::to_string(st.st_ino) + ":" + std::to_string(st.st_mtim.tv_sec) + ":" +
                     std::to_string(st.st_mtim.tv_nsec) + ":" + std::to_string(st.st_size) + ":" +
                     std::to_string(base.st_ino) + ":" + std::to_string(base.st_mtim.tv_sec) + ":" +
                     std::to_string(base.st_mtim.tv_nsec)),
             16) +
      ".cpio";
  if (::access(path.c_str(), R_OK) == 0) return ReadableByJail(path);
  std::lock_guard<std::mutex> lock(mu_);
  if (::access(path.c_str(), R_OK) == 0) return ReadableByJail(path);
  ASB_ASSIGN_OR_RETURN(std::string base_bytes, ns::ReadSmallFile(kernel_.initrd_base));
  ASB_ASSIGN_OR_RETURN(std::string sandboxd, ns::ReadSmallFile(sandboxd_));
  ASB_TRY(WriteCache(path, base_bytes, CpioWithOneFile("sandboxd", sandboxd)));
  return ReadableByJail(path);
}

Result<std::string> GuestImages::RootfsImage(const std::string& rootfs) {
  struct stat st;
  if (::stat(rootfs.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return Fail(Error::NotFound("template root filesystem " + rootfs + " is missing"));
  }
  const std::string prefix = "rootfs-" + HexU64(Fnv1a64(rootfs), 16) + "-";
  const std::string name = prefix + HexU64(st.st_dev, 1) + "-" + HexU64(st.st_ino, 1) + ".erofs";
  const std::string path = dir_ + "/" + name;
  if (::access(path.c_str(), R_OK) == 0) return ReadableByJail(path);
  std::lock_guard<std::mutex> lock(mu_);
  if (::access(path.c_str(), R_OK) == 0) return ReadableByJail(path);
  const std::string tmp = dir_ + "/making-" + RandomHex(6) + ".erofs";
  std::string out;
  auto status = ns::RunCapture({"/usr/bin/mkfs.erofs", tmp, rootfs}, &out);
  if (!status || !WIFEXITED(*status) || WEXITSTATUS(*status) != 0) {
    ::unlink(tmp.c_str());
    if (!status) return Fail(status.error());
    return Fail(Error::FromHost(ErrorCode::kBackend, "mkfs.erofs of " + rootfs,
                                "failed: " + out.substr(out.size() > 400 ? out.size() - 400 : 0)));
  }
  if (DIR* d = ::opendir(dir_.c_str())) {  // images of earlier builds of this template
    while (dirent* e = ::readdir(d)) {
      const std::string n = e->d_name;
      if (n.rfind(prefix, 0) == 0 && n != name) ::unlink((dir_ + "/" + n).c_str());
    }
    ::closedir(d);
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    return Fail(Error::FromErrno(ErrorCode::kBackend, err, "rename " + tmp));
  }
  return ReadableByJail(path);
}

}  // namespace asb::isolation::microvm
