#include "protocol/stats_client.h"

#include <chrono>
#include <string>

#include "protocol/clock_messages.h"
#include "protocol/env_messages.h"

namespace asb::protocol {

namespace {

// The RESULT body of a one-shot operation `open_json`, waiting at most `timeout_ms` (the
// channel is cancelled when that passes).
Result<std::string> Call(Connection& conn, std::string_view open_json, std::string_view op,
                         int64_t timeout_ms) {
  ASB_ASSIGN_OR_RETURN(std::shared_ptr<Channel> ch, conn.Open(open_json));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    const int64_t left = std::max<int64_t>(0, std::chrono::duration_cast<std::chrono::milliseconds>(
                                                  deadline - std::chrono::steady_clock::now())
                                                  .count());
    auto ev = ch->Next(left);
    if (!ev) {
      if (ev.error().code() == ErrorCode::kTimeout) (void)ch->Cancel();
      return Fail(std::move(ev).error().WithContext(std::string(op)));
    }
    switch (ev->kind) {
      case ChannelEvent::Kind::kResult:
        return std::move(ev->payload);
      case ChannelEvent::Kind::kError:
        return Fail(ev->error ? *ev->error : Error::Backend("protocol: ERROR without a body"));
      case ChannelEvent::Kind::kInfo:
      case ChannelEvent::Kind::kEof:
        continue;
      case ChannelEvent::Kind::kData:
        (void)ch->Cancel();
        return Fail(Error::Backend("protocol: unexpected DATA during " + std::string(op)));
    }
  }
}

}  // namespace

Result<SandboxStats> ReadSandboxStats(Connection& conn, int64_t timeout_ms) {
  ASB_ASSIGN_OR_RETURN(std::string body, Call(conn, R"({"op":"stats"})", "stats", timeout_ms));
  return DecodeSandboxStats(body);
}

Status SetGuestClock(Connection& conn, int64_t unix_ns, int64_t timeout_ms) {
  ClockSetRequest req;
  req.unix_ns = unix_ns;
  ASB_TRY(Call(conn, EncodeClockSetRequest(req), "clock.set", timeout_ms));
  return {};
}

Status SetSandboxEnv(Connection& conn, const std::map<std::string, std::string>& env,
                     int64_t timeout_ms) {
  EnvSetRequest req;
  req.env = env;
  ASB_TRY(Call(conn, EncodeEnvSetRequest(req), "env.set", timeout_ms));
  return {};
}

}  // namespace asb::protocol
