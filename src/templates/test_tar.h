// Test helper: writes tar archives with libarchive (plain, gzip or zstd), so tests make their
// own layers and images instead of downloading any.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace asb::templates::testing {

struct TarEntry {
  enum Type { kFile, kDir, kSymlink, kHardlink, kCharDevice, kFifo };
  TarEntry(std::string n, Type t = kFile, std::string d = "", int m = 0644)
      : name(std::move(n)), type(t), data(std::move(d)), mode(m) {}
  std::string name;
  Type type = kFile;
  std::string data;  // file content, or the link target
  int mode = 0644;
  uid_t uid = 0;
  gid_t gid = 0;
};

enum class TarFilter { kNone, kGzip, kZstd };

/// Writes `entries` to `path` as a pax tar with `filter`; aborts the test process on failure.
/// Entries owned by uid/gid 0 are written with the current process's ids unless the process
/// runs as root (so the unit tests run unprivileged too).
void WriteTar(const std::string& path, const std::vector<TarEntry>& entries,
              TarFilter filter = TarFilter::kNone);

}  // namespace asb::templates::testing
