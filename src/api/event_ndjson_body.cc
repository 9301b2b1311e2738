#include "api/event_ndjson_body.h"

#include <boost/json.hpp>
#include <chrono>
#include <optional>
#include <utility>

#include "api/errors.h"

namespace asb::api {

namespace json = boost::json;

namespace {

// Bytes of lines handed out per Poll(), so a fast producer cannot make one write unbounded.
constexpr size_t kMaxPollBytes = 1 << 20;

int64_t SteadyMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

EventNdjsonBody::EventNdjsonBody(std::shared_ptr<core::EventStream> events,
                                 std::shared_ptr<const void> owner, bool base64,
                                 int64_t keepalive_ms, std::string failure)
    : owner_(std::move(owner)),
      events_(std::move(events)),
      base64_(base64),
      keepalive_ms_(keepalive_ms),
      failure_(std::move(failure)),
      last_emit_ms_(SteadyMs()) {}

EventNdjsonBody::~EventNdjsonBody() {
  if (!done_) (void)events_->Cancel();
  events_->SetNotify(nullptr);
}

StreamBody::Chunk EventNdjsonBody::Poll() {
  Chunk out;
  if (done_) {
    out.done = true;
    return out;
  }
  while (out.data.size() < kMaxPollBytes) {
    std::optional<core::StreamEvent> ev = events_->TryNext();
    if (!ev) break;
    Handle(*ev, &out);
    if (done_) {
      out.done = true;
      break;
    }
  }
  int64_t now = SteadyMs();
  if (!out.data.empty()) {
    last_emit_ms_ = now;
  } else if (now - last_emit_ms_ >= keepalive_ms_) {
    out.data = KeepaliveLine();
    last_emit_ms_ = now;
  }
  return out;
}

void EventNdjsonBody::SetNotify(std::function<void()> notify) {
  events_->SetNotify(std::move(notify));
}

void EventNdjsonBody::Cancel() {
  if (!done_) (void)events_->Cancel();
}

void EventNdjsonBody::OnInfo(const core::StreamEvent&, std::string*) {}

json::object EventNdjsonBody::DataLine(core::OutputStream stream, std::string data) {
  json::object o;
  o["type"] = stream == core::OutputStream::kStderr ? "stderr" : "stdout";
  o["data"] = std::move(data);
  return o;
}

json::object EventNdjsonBody::ErrorObject(const Error& e) {
  json::object o;
  o["type"] = "error";
  ClientError c = ForClient(e);
  o["code"] = WireCodeOf(c.code);
  o["message"] = c.message;
  return o;
}

std::string EventNdjsonBody::KeepaliveLine() { return "{\"type\":\"keepalive\"}\n"; }

std::string EventNdjsonBody::Line(const json::object& o) {
  std::string s = json::serialize(o);
  s.push_back('\n');
  return s;
}

void EventNdjsonBody::Data(core::OutputStream stream, std::string_view bytes, bool eof,
                           Chunk* out) {
  bool is_err = stream == core::OutputStream::kStderr;
  std::string text;
  if (base64_) {
    if (!bytes.empty()) text = Base64Encode(bytes);
  } else {
    Utf8Stream& u = is_err ? err_utf8_ : out_utf8_;
    text = u.Feed(bytes);
    if (eof) text += u.Flush();
  }
  if (text.empty()) return;
  out->data += Line(DataLine(stream, std::move(text)));
}

// Whatever is still held back by the decoders belongs before the last line.
void EventNdjsonBody::FlushText(Chunk* out) {
  Data(core::OutputStream::kStdout, {}, true, out);
  Data(core::OutputStream::kStderr, {}, true, out);
}

void EventNdjsonBody::Handle(const core::StreamEvent& ev, Chunk* out) {
  using Kind = core::StreamEvent::Kind;
  switch (ev.kind) {
    case Kind::kOutput:
      Data(ev.stream, ev.data, false, out);
      break;
    case Kind::kEnd:
      Data(ev.stream, {}, true, out);
      break;
    case Kind::kInfo:
      OnInfo(ev, &out->data);
      break;
    case Kind::kDone: {
      FlushText(out);
      Result<json::object> exit = ExitLine(ev);
      if (!exit) {
        ErrorLine(exit.error(), out);
        break;
      }
      out->data += Line(*exit);
      done_ = true;
      break;
    }
    case Kind::kError:
      FlushText(out);
      ErrorLine(ev.error ? *ev.error : Error::Backend(failure_), out);
      break;
  }
}

void EventNdjsonBody::ErrorLine(const Error& e, Chunk* out) {
  out->data += Line(ErrorObject(e));
  done_ = true;
}

}  // namespace asb::api
