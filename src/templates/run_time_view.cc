#include "templates/run_time_view.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstring>

namespace asb::templates {

namespace {

// Entries of the directory `rel` of `rootfs` (not following a symlink); 0 when it is missing
// or not a directory.
size_t CountEntries(const std::string& rootfs, const char* rel) {
  int root = ::open(rootfs.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (root < 0) return 0;
  int fd = ::openat(root, rel, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  ::close(root);
  if (fd < 0) return 0;
  DIR* d = ::fdopendir(fd);
  if (d == nullptr) {
    ::close(fd);
    return 0;
  }
  size_t n = 0;
  while (dirent* e = ::readdir(d)) {
    if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0) ++n;
  }
  ::closedir(d);
  return n;
}

std::string Entries(size_t n) { return std::to_string(n) + (n == 1 ? " entry" : " entries"); }

}  // namespace

std::vector<std::string> RunTimeNotes(const std::string& rootfs) {
  std::vector<std::string> out;
  for (const char* dir : {"tmp", "proc", "sys"}) {
    if (size_t n = CountEntries(rootfs, dir); n > 0) {
      out.push_back("warning: /" + std::string(dir) + " holds " + Entries(n) +
                    " that no sandbox will see: a sandbox mounts its own /" + dir +
                    " over it. Put files a sandbox needs under /workspace or in the image's "
                    "other directories.");
    }
  }
  if (size_t n = CountEntries(rootfs, "workspace"); n > 0) {
    out.push_back("/workspace holds " + Entries(n) +
                  ": every new sandbox of this template starts with a copy of it in its own "
                  "workspace, owned by the sandbox user and counted against its quota.");
  }
  return out;
}

}  // namespace asb::templates
