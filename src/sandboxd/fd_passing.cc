#include "sandboxd/fd_passing.h"

#include <sys/socket.h>

#include <cerrno>
#include <cstring>

namespace asb::sandboxd {

namespace {
constexpr size_t kMaxFds = 8;
}  // namespace

ssize_t SendWithFds(int sock, std::string_view bytes, const std::vector<int>& fds, int flags) {
  if (fds.size() > kMaxFds) {
    errno = EINVAL;
    return -1;
  }
  alignas(cmsghdr) char control[CMSG_SPACE(kMaxFds * sizeof(int))] = {};
  iovec iov{const_cast<char*>(bytes.data()), bytes.size()};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  if (!fds.empty()) {
    msg.msg_control = control;
    msg.msg_controllen = CMSG_SPACE(fds.size() * sizeof(int));
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(fds.size() * sizeof(int));
    memcpy(CMSG_DATA(c), fds.data(), fds.size() * sizeof(int));
  }
  ssize_t n;
  do {
    n = sendmsg(sock, &msg, flags | MSG_NOSIGNAL);
  } while (n < 0 && errno == EINTR);
  return n;
}

ssize_t RecvWithFds(int sock, char* buf, size_t capacity, std::vector<UniqueFd>* fds, int flags,
                    bool* truncated) {
  alignas(cmsghdr) char control[CMSG_SPACE(kMaxFds * sizeof(int))];
  iovec iov{buf, capacity};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  ssize_t n;
  do {
    n = recvmsg(sock, &msg, flags | MSG_CMSG_CLOEXEC);
  } while (n < 0 && errno == EINTR);
  const int saved = errno;
  if (n >= 0) {
    for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
      if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
      const size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
      for (size_t i = 0; i < count; ++i) {
        int got;
        memcpy(&got, CMSG_DATA(c) + i * sizeof(int), sizeof got);
        fds->emplace_back(got);
      }
    }
  }
  if (truncated != nullptr) *truncated = n >= 0 && (msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC));
  errno = saved;
  return n;
}

}  // namespace asb::sandboxd
