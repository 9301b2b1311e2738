#include "core/data_dir.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "common/unique_fd.h"

namespace asb::core {

Result<std::vector<TightenedMode>> TightenDataDirModes(const std::string& data_dir) {
  UniqueFd dir(::open(data_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW));
  if (!dir) return Fail(Error(ErrorCode::kNotFound, "open data dir " + data_dir, errno));
  std::vector<TightenedMode> changed;
  struct stat st {};
  if (::fstat(dir.get(), &st) != 0) return FailErrno("stat " + data_dir);
  if ((st.st_mode & 0066) != 0) {  // read or write for group or others: at most 0711
    const mode_t want = (st.st_mode & 07700) | ((st.st_mode & 0011));
    if (::fchmod(dir.get(), want) != 0) return FailErrno("chmod " + data_dir);
    changed.push_back({data_dir, st.st_mode & 07777u, want & 07777u});
  }
  // A second fd for the listing: closedir() closes the fd it was given.
  DIR* d = ::fdopendir(::dup(dir.get()));
  if (d == nullptr) return FailErrno("list " + data_dir);
  std::vector<std::string> names;
  while (const dirent* e = ::readdir(d)) {
    if (e->d_type == DT_REG || e->d_type == DT_UNKNOWN) names.emplace_back(e->d_name);
  }
  ::closedir(d);
  // By name, never by opening the files: closing any fd of a database file drops every POSIX
  // lock this process holds on it, and SQLite's locks on agent-sandbox.db and its -shm are
  // exactly that (a lost -shm lock lets another connection reset a WAL in use). The dir is the
  // server's own (0711, root), so nobody can swap a name for a symlink between stat and chmod.
  for (const std::string& name : names) {
    if (name == "." || name == "..") continue;
    if (::fstatat(dir.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;  // gone
    if (!S_ISREG(st.st_mode) || (st.st_mode & 0077) == 0) continue;  // a symlink, or tight
    const mode_t want = st.st_mode & 0700;
    if (::fchmodat(dir.get(), name.c_str(), want, 0) != 0) {
      return FailErrno("chmod " + data_dir + "/" + name);
    }
    changed.push_back({data_dir + "/" + name, st.st_mode & 07777u, want});
  }
  return changed;
}

}  // namespace asb::core
