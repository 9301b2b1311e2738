// The disks and initramfs a microVM sandbox boots from (docs/adr/0025-microvm-backend.md):
//
// - the guest kernel and the base of its initramfs (busybox, the virtio and EROFS modules, our
//   init), prepared from Debian's packages by scripts/microvm-guest.sh in one directory;
// - that initramfs with sandboxd appended as a second cpio archive (the kernel unpacks
//   concatenated archives in order), made once per sandboxd binary;
// - a template's root filesystem as a read-only EROFS image (mkfs.erofs), made once per template
//   build and shared by every VM of it. It keeps the template's canonical owners (root 0, the
//   sandbox user 1000): a guest needs no id mapping.
//
// All are caches in the backend's state directory, made under a temporary name and renamed
// into place, so a crash leaves no half-made image behind a final name.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>

#include "common/result.h"

namespace asb::isolation::microvm {

/// The files scripts/microvm-guest.sh leaves in its directory.
struct GuestKernel {
  std::string vmlinuz;      // the kernel
  std::string initrd_base;  // uncompressed newc cpio: /init, busybox, modules
  std::string release;      // "6.1.0-57-cloud-amd64"
};

/// Finds the guest kernel in `dir`. Errors: kUnavailable naming what is missing and the
/// command that makes it.
Result<GuestKernel> FindGuestKernel(const std::string& dir);

/// A newc cpio archive holding the one regular file `name` (mode 0755, owner 0) with the
/// bytes of `data`, and the trailer.
std::string CpioWithOneFile(const std::string& name, const std::string& data);

class GuestImages {
 public:
  /// `cache_dir` must exist (0700) and belong to the backend.
  GuestImages(std::string cache_dir, GuestKernel kernel, std::string sandboxd_path)
      : dir_(std::move(cache_dir)),
        kernel_(std::move(kernel)),
        sandboxd_(std::move(sandboxd_path)) {}

  const GuestKernel& kernel() const { return kernel_; }

  /// The initramfs with sandboxd, made on first use. Errors: FromErrno of reading sandboxd or
  /// writing the cache.
  Result<std::string> Initrd();

  /// The EROFS image of the template root filesystem `rootfs` (a host directory), made on first
  /// use; a rebuilt template (a new directory) gets a new image and the old ones of the same
  /// path go. Errors: kBackend with mkfs.erofs's output.
  Result<std::string> RootfsImage(const std::string& rootfs);

 private:
  const std::string dir_;
  const GuestKernel kernel_;
  const std::string sandboxd_;
  std::mutex mu_;  // one image is made at a time
};

}  // namespace asb::isolation::microvm
