#include "api/channel_ndjson_body.h"

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

ChannelNdjsonBody::ChannelNdjsonBody(std::shared_ptr<protocol::Channel> channel,
                                     std::shared_ptr<const void> owner, bool base64,
                                     int64_t keepalive_ms, std::string failure)
    : owner_(std::move(owner)),
      channel_(std::move(channel)),
      base64_(base64),
      keepalive_ms_(keepalive_ms),
      failure_(std::move(failure)),
      last_emit_ms_(SteadyMs()) {}

ChannelNdjsonBody::~ChannelNdjsonBody() {
  if (!done_) (void)channel_->Cancel();
  channel_->SetNotify(nullptr);
}

StreamBody::Chunk ChannelNdjsonBody::Poll() {
  Chunk out;
  if (done_) {
    out.done = true;
    return out;
  }
  while (out.data.size() < kMaxPollBytes) {
    std::optional<protocol::ChannelEvent> ev = channel_->TryNext();
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

void ChannelNdjsonBody::SetNotify(std::function<void()> notify) {
  channel_->SetNotify(std::move(notify));
}

void ChannelNdjsonBody::Cancel() {
  if (!done_) (void)channel_->Cancel();
}

void ChannelNdjsonBody::OnInfo(std::string_view, std::string*) {}

json::object ChannelNdjsonBody::DataLine(protocol::Stream stream, std::string data) {
  json::object o;
  o["type"] = stream == protocol::Stream::kStderr ? "stderr" : "stdout";
  o["data"] = std::move(data);
  return o;
}

json::object ChannelNdjsonBody::ErrorObject(const Error& e) {
  json::object o;
  o["type"] = "error";
  ClientError c = ForClient(e);
  o["code"] = WireCodeOf(c.code);
  o["message"] = c.message;
  return o;
}

std::string ChannelNdjsonBody::KeepaliveLine() { return "{\"type\":\"keepalive\"}\n"; }

std::string ChannelNdjsonBody::Line(const json::object& o) {
  std::string s = json::serialize(o);
  s.push_back('\n');
  return s;
}

void ChannelNdjsonBody::Data(protocol::Stream stream, std::string_view bytes, bool eof,
                             Chunk* out) {
  bool is_err = stream == protocol::Stream::kStderr;
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
void ChannelNdjsonBody::FlushText(Chunk* out) {
  Data(protocol::Stream::kStdout, {}, true, out);
  Data(protocol::Stream::kStderr, {}, true, out);
}

void ChannelNdjsonBody::Handle(const protocol::ChannelEvent& ev, Chunk* out) {
  using Kind = protocol::ChannelEvent::Kind;
  switch (ev.kind) {
    case Kind::kData:
      Data(ev.stream, ev.payload, false, out);
      break;
    case Kind::kEof:
      Data(ev.stream, {}, true, out);
      break;
    case Kind::kInfo:
      OnInfo(ev.payload, &out->data);
      break;
    case Kind::kResult: {
      FlushText(out);
      Result<json::object> exit = ExitLine(ev.payload);
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

void ChannelNdjsonBody::ErrorLine(const Error& e, Chunk* out) {
  out->data += Line(ErrorObject(e));
  done_ = true;
}

}  // namespace asb::api
