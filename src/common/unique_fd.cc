#include "common/unique_fd.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

namespace asb {

void UniqueFd::Reset(int fd) {
  if (fd_ >= 0) {
    // close() must not be retried on EINTR on Linux: the fd is gone either way.
    ::close(fd_);
  }
  fd_ = fd;
}

bool MakePipe(UniqueFd* read_end, UniqueFd* write_end, int extra_flags) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC | extra_flags) != 0) return false;
  read_end->Reset(fds[0]);
  write_end->Reset(fds[1]);
  return true;
}

bool WriteAll(int fd, const void* data, size_t len) {
  const char* p = static_cast<const char*>(data);
  while (len > 0) {
    ssize_t n = ::write(fd, p, len);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    p += n;
    len -= static_cast<size_t>(n);
  }
  return true;
}

long ReadFull(int fd, void* data, size_t len) {
  char* p = static_cast<char*>(data);
  size_t done = 0;
  while (done < len) {
    ssize_t n = ::read(fd, p + done, len - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return -1;
    }
    if (n == 0) break;
    done += static_cast<size_t>(n);
  }
  return static_cast<long>(done);
}

}  // namespace asb
