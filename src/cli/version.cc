// `agent-sandbox version`: the software version and the sandbox protocol versions it speaks.
#include <cstdio>

#include "cli/command.h"
#include "protocol/frame.h"

namespace asb::cli {

void RegisterVersionCommand(CLI::App& app) {
  CLI::App* sub = app.add_subcommand("version", "Print the version and the protocol version");
  SetAction(sub, [] {
    std::printf("agent-sandbox %s\nprotocol %u (speaks %u..%u)\n", ASB_VERSION,
                protocol::kProtocolVersion, protocol::kMinProtocolVersion,
                protocol::kProtocolVersion);
    return 0;
  });
}

}  // namespace asb::cli
