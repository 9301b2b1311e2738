#include "api/exec_stream.h"

#include <boost/json.hpp>

#include "api/event_ndjson_body.h"

namespace asb::api {

namespace json = boost::json;

namespace {

// Adds the exec's exit line to the shared NDJSON relay.
class ExecStreamBody final : public EventNdjsonBody {
 public:
  ExecStreamBody(std::shared_ptr<const core::ExecStream> exec, bool base64, int64_t keepalive_ms)
      : EventNdjsonBody(exec->events, exec, base64, keepalive_ms, "exec failed") {}

 private:
  Result<json::object> ExitLine(const core::StreamEvent& done) override {
    if (!done.exec_result) return Fail(Error::Backend("exec ended without a result"));
    const core::ExecResult& r = *done.exec_result;
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
};

}  // namespace

std::shared_ptr<StreamBody> MakeExecStreamBody(core::ExecStream exec, bool base64,
                                               int64_t keepalive_ms) {
  return std::make_shared<ExecStreamBody>(std::make_shared<const core::ExecStream>(std::move(exec)),
                                          base64, keepalive_ms);
}

}  // namespace asb::api
