#include "cli/microvm_options.h"

#include <unistd.h>

#include <cstdlib>

namespace asb::cli {

isolation::microvm::MicrovmOptions MicrovmOptionsFor(const std::string& data_dir,
                                                     const std::string& sandboxd,
                                                     const std::string& state_dir,
                                                     const std::string& cgroup_name) {
  isolation::microvm::MicrovmOptions mo;
  mo.state_dir = state_dir;
  mo.cgroup_name = cgroup_name;
  mo.guest_dir = data_dir + "/microvm";
  if (const char* g = std::getenv("AGENT_SANDBOX_MICROVM_GUEST"); g != nullptr && *g != '\0') {
    mo.guest_dir = g;
  }
  const std::string stripped = sandboxd + "-guest";
  mo.sandboxd_path = ::access(stripped.c_str(), R_OK) == 0 ? stripped : sandboxd;
  return mo;
}

}  // namespace asb::cli
