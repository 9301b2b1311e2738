// Runs the host's network tools (ip, nft, tc, nsenter) for host_network.cc: argv without a
// shell, a script on stdin, stdout+stderr captured for the error message.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace asb::isolation::net {

/// Runs argv[0] (an absolute path) with `input` on stdin (a memfd, so a large script cannot
/// deadlock against the output pipe). Returns the captured output (at most 16 KiB). Errors:
/// kBackend "<argv0 argv1>: exit N: <output>" when it fails, FromErrno when it cannot start.
Result<std::string> RunTool(const std::vector<std::string>& argv, std::string_view input = {});

/// Absolute path of a tool found in /usr/sbin, /sbin, /usr/bin or /bin; "" if none.
std::string FindTool(std::string_view name);

}  // namespace asb::isolation::net
