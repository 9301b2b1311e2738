// The fake backend's workspace images: a directory tree serialized into one regular file whose
// size is the workspace's quota (the records, then zeros), so that core's image code (rename,
// unlink, st_size as the quota) handles it exactly as an ns backend's ext4 image. Regular
// files, directories and symlinks are kept with mode and owner (owners only when run as root).
#pragma once

#include <cstdint>
#include <string>

#include "common/result.h"

namespace asb::core::testing {

/// Facts of a written image. Bytes: `used_bytes` is the sum of the regular files' sizes.
struct FakeImageFacts {
  uint64_t image_bytes = 0;
  uint64_t used_bytes = 0;
};

/// Writes the tree at `dir` (the directory itself included) into the new file `dest`, padded
/// to `image_bytes`, fsynced. Errors: kLimitExceeded when the records do not fit in
/// `image_bytes`, FromErrno; `dest` does not exist after a failure.
Result<FakeImageFacts> WriteFakeImage(const std::string& dir, const std::string& dest,
                                      uint64_t image_bytes);

/// Recreates the tree of image `image` at `dir`, which must not exist. Errors: kInvalidArgument
/// (not an image), FromErrno; `dir` may hold part of the tree after a failure.
Status ReadFakeImage(const std::string& image, const std::string& dir);

/// The size of the file at `path` (an image's quota). Errors: FromErrno.
Result<uint64_t> FakeImageSize(const std::string& path);

/// Copies the file `src` to the new file `dest` (fsynced). Errors: FromErrno; `dest` does not
/// exist after a failure.
Status CopyFakeImage(const std::string& src, const std::string& dest);

}  // namespace asb::core::testing
