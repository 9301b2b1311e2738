// What a sandbox sees of a template's rootfs at run time, for the notes a build prints (ADR
// 0012). A sandbox mounts a fresh /tmp, /proc and /sys over the rootfs, so files a build leaves
// there are hidden; what it leaves under /workspace becomes each new sandbox's initial
// workspace (the ns backend's workspace seed, isolation/ns/workspace_seed.h).
#pragma once

#include <string>
#include <vector>

namespace asb::templates {

/// Lines for the build's progress about `rootfs`: "warning: ..." for each of /tmp, /proc and
/// /sys that holds entries (hidden at run time: put them elsewhere), and a note when /workspace
/// holds entries (copied into every new sandbox's workspace). Empty when there is nothing to say.
std::vector<std::string> RunTimeNotes(const std::string& rootfs);

}  // namespace asb::templates
