#include "api/exec_stream.h"

#include <boost/json.hpp>

#include "api/channel_ndjson_body.h"

namespace asb::api {

namespace json = boost::json;

namespace {

// Adds the exec's exit line to the shared NDJSON relay.
class ExecStreamBody final : public ChannelNdjsonBody {
 public:
  ExecStreamBody(std::shared_ptr<const core::ExecStream> exec, bool base64, int64_t keepalive_ms)
      : ChannelNdjsonBody(exec->channel, exec, base64, keepalive_ms, "exec failed"), exec_(*exec) {}

 private:
  Result<json::object> ExitLine(std::string_view payload) override {
    ASB_ASSIGN_OR_RETURN(protocol::ExecResult r, exec_.Finish(payload));
    json::object o;
    o["type"] = "exit";
    o["exit_code"] = r.exit_code;
    o["signal"] = r.signal;
    o["timed_out"] = r.timed_out;
    o["duration_ms"] = r.duration_ms;
    o["oom_killed"] = r.oom_killed;
    o["pids_limited"] = r.pids_limited;
    o["truncated"] = r.stdout_truncated || r.stderr_truncated;
    o["stdout_truncated"] = r.stdout_truncated;
    o["stderr_truncated"] = r.stderr_truncated;
    return o;
  }

  const core::ExecStream& exec_;  // owned by the base (its `owner`)
};

}  // namespace

std::shared_ptr<StreamBody> MakeExecStreamBody(core::ExecStream exec, bool base64,
                                               int64_t keepalive_ms) {
  return std::make_shared<ExecStreamBody>(std::make_shared<const core::ExecStream>(std::move(exec)),
                                          base64, keepalive_ms);
}

}  // namespace asb::api
