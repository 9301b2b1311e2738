// UniqueFd: sole owner of a file descriptor; closes it on destruction. Movable, not copyable.
#pragma once

#include <cstddef>
#include <utility>

namespace asb {

class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  ~UniqueFd() { Reset(); }
  UniqueFd(UniqueFd&& other) noexcept : fd_(other.Release()) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept {
    if (this != &other) Reset(other.Release());
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  explicit operator bool() const { return valid(); }

  /// Gives up ownership without closing; returns the fd (-1 if none).
  int Release() { return std::exchange(fd_, -1); }

  /// Closes the current fd (if any) and takes ownership of `fd`.
  void Reset(int fd = -1);

 private:
  int fd_ = -1;
};

/// Creates a pipe with O_CLOEXEC (plus `extra_flags`, e.g. O_NONBLOCK); returns {read, write}.
/// Returns false and sets errno on failure.
bool MakePipe(UniqueFd* read_end, UniqueFd* write_end, int extra_flags = 0);

/// Writes all of `len` bytes, retrying on EINTR and short writes. Blocking fds only.
/// Returns false and sets errno on failure.
bool WriteAll(int fd, const void* data, size_t len);

/// Reads exactly `len` bytes unless EOF comes first; returns the count read, or -1 with errno.
long ReadFull(int fd, void* data, size_t len);

}  // namespace asb
