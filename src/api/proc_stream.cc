#include "api/proc_stream.h"

#include <boost/json.hpp>

#include "api/event_ndjson_body.h"

namespace asb::api {

namespace json = boost::json;

namespace {

// Adds the "skipped" lines and the process's exit line to the shared NDJSON relay.
class ProcStreamBody final : public EventNdjsonBody {
 public:
  ProcStreamBody(std::shared_ptr<const core::ProcessAttach> attach, bool base64,
                 int64_t keepalive_ms)
      : EventNdjsonBody(attach->events, attach, base64, keepalive_ms, "attach failed") {}

 private:
  // Output the replay ring no longer held; other INFO (none today) is ignored.
  void OnInfo(const core::StreamEvent& info, std::string* out) override {
    if (info.skipped_bytes == 0) return;
    json::object o;
    o["type"] = "skipped";
    o["bytes"] = info.skipped_bytes;
    *out += Line(o);
  }

  Result<json::object> ExitLine(const core::StreamEvent& done) override {
    if (!done.process) return Fail(Error::Backend("process ended without its state"));
    json::object o;
    o["type"] = "exit";
    o["exit_code"] = done.process->exit_code;
    o["signal"] = done.process->signal;
    return o;
  }
};

}  // namespace

std::shared_ptr<StreamBody> MakeProcStreamBody(core::ProcessAttach attach, bool base64,
                                               int64_t keepalive_ms) {
  return std::make_shared<ProcStreamBody>(
      std::make_shared<const core::ProcessAttach>(std::move(attach)), base64, keepalive_ms);
}

}  // namespace asb::api
