#include "api/proc_stream.h"

#include <boost/json.hpp>

#include "api/channel_ndjson_body.h"

namespace asb::api {

namespace json = boost::json;

namespace {

// Adds the "skipped" lines and the process's exit line to the shared NDJSON relay.
class ProcStreamBody final : public ChannelNdjsonBody {
 public:
  ProcStreamBody(std::shared_ptr<const core::ProcessAttach> attach, bool base64,
                 int64_t keepalive_ms)
      : ChannelNdjsonBody(attach->channel, attach, base64, keepalive_ms, "attach failed") {}

 private:
  // {"skipped":N}; other INFO (none today) is ignored.
  void OnInfo(std::string_view payload, std::string* out) override {
    boost::system::error_code ec;
    json::value v = json::parse(payload, ec);
    if (ec || !v.is_object()) return;
    const json::value* n = v.as_object().if_contains("skipped");
    if (n == nullptr || !n->is_number()) return;
    json::object o;
    o["type"] = "skipped";
    o["bytes"] = *n;
    *out += Line(o);
  }

  Result<json::object> ExitLine(std::string_view payload) override {
    ASB_ASSIGN_OR_RETURN(protocol::ProcInfo info, protocol::DecodeProcInfo(payload));
    json::object o;
    o["type"] = "exit";
    o["exit_code"] = info.exit_code;
    o["signal"] = info.signal;
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
