#include "protocol/stats_client.h"

#include <chrono>
#include <string>

namespace asb::protocol {

Result<SandboxStats> ReadSandboxStats(Connection& conn, int64_t timeout_ms) {
  ASB_ASSIGN_OR_RETURN(std::shared_ptr<Channel> ch, conn.Open(R"({"op":"stats"})"));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    const int64_t left = std::max<int64_t>(0, std::chrono::duration_cast<std::chrono::milliseconds>(
                                                  deadline - std::chrono::steady_clock::now())
                                                  .count());
    auto ev = ch->Next(left);
    if (!ev) {
      if (ev.error().code() == ErrorCode::kTimeout) (void)ch->Cancel();
      return Fail(std::move(ev).error().WithContext("stats"));
    }
    switch (ev->kind) {
      case ChannelEvent::Kind::kResult:
        return DecodeSandboxStats(ev->payload);
      case ChannelEvent::Kind::kError:
        return Fail(ev->error ? *ev->error : Error::Backend("protocol: ERROR without a body"));
      case ChannelEvent::Kind::kInfo:
      case ChannelEvent::Kind::kEof:
        continue;
      case ChannelEvent::Kind::kData:
        (void)ch->Cancel();
        return Fail(Error::Backend("protocol: unexpected DATA during stats"));
    }
  }
}

}  // namespace asb::protocol
