// Messages that carry file descriptors over a unix socket (unix(7), SCM_RIGHTS): `sudo`'s
// request to sandboxd (sudo_wire.h) and a command's plan to the spare child (spare_child.h).
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <string_view>
#include <vector>

#include "common/unique_fd.h"

namespace asb::sandboxd {

/// Sends `bytes` as one message with `fds` (at most 8) attached, retrying on EINTR. `flags`
/// are sendmsg's (MSG_NOSIGNAL is always added). Returns sendmsg's result: the bytes sent, or
/// -1 with errno set (EMSGSIZE: larger than the socket's send buffer; EPIPE: the peer is gone).
ssize_t SendWithFds(int sock, std::string_view bytes, const std::vector<int>& fds, int flags);

/// Receives one message into `buf` (at most `capacity` bytes), retrying on EINTR. Every fd
/// that came with it is appended to `fds`, owned and close-on-exec, whatever the result;
/// `*truncated` (if given) says whether the message or its fds were cut short. `flags` are
/// recvmsg's (MSG_DONTWAIT...). Returns recvmsg's result: the bytes received, 0 at EOF, or -1
/// with errno set.
ssize_t RecvWithFds(int sock, char* buf, size_t capacity, std::vector<UniqueFd>* fds, int flags,
                    bool* truncated = nullptr);

}  // namespace asb::sandboxd
