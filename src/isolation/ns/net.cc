#include "isolation/ns/net.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <thread>

#include "common/unique_fd.h"

namespace asb::isolation::ns {

int BringUpLoopbackInChild(ChildFailure* f) {
  int s = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (s < 0) return Failed(f, "socket for lo", errno);
  struct ifreq ifr;
  std::memset(&ifr, 0, sizeof ifr);
  std::memcpy(ifr.ifr_name, "lo", 3);
  int err = 0;
  if (::ioctl(s, SIOCGIFFLAGS, &ifr) != 0) {
    err = Failed(f, "SIOCGIFFLAGS lo", errno);
  } else {
    ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
    if (::ioctl(s, SIOCSIFFLAGS, &ifr) != 0) err = Failed(f, "SIOCSIFFLAGS lo", errno);
  }
  ::close(s);
  return err;
}

Result<int> ConnectInNetns(int pid, uint16_t port, int timeout_ms) {
  const std::string path = "/proc/" + std::to_string(pid) + "/ns/net";
  UniqueFd ns(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!ns) {
    if (errno == ENOENT)
      return Fail(Error::NotFound("sandbox process " + std::to_string(pid) + " is gone"));
    return FailErrno("open " + path);
  }
  // setns in a thread of its own that ends right after: the server's threads never change
  // namespace.
  int fd = -1, err = 0;
  std::thread t([&] {
    if (::setns(ns.get(), CLONE_NEWNET) != 0) {
      err = errno;
      return;
    }
    fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) err = errno;
  });
  t.join();
  if (fd < 0) return Fail(Error::FromErrno(err, "socket in the sandbox's network namespace"));
  UniqueFd sock(fd);
  sockaddr_in addr = {};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(sock.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    if (errno != EINPROGRESS) {
      if (errno == ECONNREFUSED) {
        return Fail(Error::Unavailable("nothing listens on port " + std::to_string(port) +
                                       " in the sandbox"));
      }
      return FailErrno("connect to port " + std::to_string(port));
    }
    pollfd p = {sock.get(), POLLOUT, 0};
    int n;
    while ((n = ::poll(&p, 1, timeout_ms)) < 0 && errno == EINTR) {
    }
    if (n == 0)
      return Fail(Error::Timeout("connect to port " + std::to_string(port) + " timed out"));
    int soerr = 0;
    socklen_t len = sizeof soerr;
    ::getsockopt(sock.get(), SOL_SOCKET, SO_ERROR, &soerr, &len);
    if (soerr == ECONNREFUSED) {
      return Fail(Error::Unavailable("nothing listens on port " + std::to_string(port) +
                                     " in the sandbox"));
    }
    if (soerr != 0) return Fail(Error::FromErrno(soerr, "connect to port " + std::to_string(port)));
  }
  int flags = ::fcntl(sock.get(), F_GETFL);
  if (flags < 0 || ::fcntl(sock.get(), F_SETFL, flags & ~O_NONBLOCK) != 0) {
    return FailErrno("fcntl");
  }
  return sock.Release();
}

}  // namespace asb::isolation::ns
