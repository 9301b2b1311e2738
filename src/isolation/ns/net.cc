#include "isolation/ns/net.h"

#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

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

}  // namespace asb::isolation::ns
