// The microvm backend's options as both of the binary's users of it make them: `serve` (its
// microvm backend) and `run --backend microvm` (run_leftovers.h). One place, so that where the
// guest is found and which sandboxd it runs cannot differ between them.
#pragma once

#include <string>

#include "isolation/microvm/microvm_backend.h"

namespace asb::cli {

/// Options for a microvm backend keeping its VMs' state in `state_dir` and its cgroups under
/// `cgroup_name`: the guest kernel from <data_dir>/microvm, or AGENT_SANDBOX_MICROVM_GUEST
/// when set (scripts/microvm-guest.sh makes it); sandboxd's stripped `-guest` copy beside
/// `sandboxd` when the build made one (src/sandboxd/CMakeLists.txt), else `sandboxd` itself.
/// The rest keep MicrovmOptions's defaults.
isolation::microvm::MicrovmOptions MicrovmOptionsFor(const std::string& data_dir,
                                                     const std::string& sandboxd,
                                                     const std::string& state_dir,
                                                     const std::string& cgroup_name);

}  // namespace asb::cli
