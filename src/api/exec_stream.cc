#include "api/exec_stream.h"

#include <boost/json.hpp>

#include "api/event_ndjson_body.h"
#include "api/exec_result_json.h"

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
    json::object o;
    o["type"] = "exit";
    PutExecResult(*done.exec_result, &o);
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
