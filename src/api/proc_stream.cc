#include "api/proc_stream.h"

#include <boost/json.hpp>
#include <chrono>

#include "api/errors.h"
#include "api/text.h"

namespace asb::api {

namespace json = boost::json;

namespace {

constexpr size_t kMaxPollBytes = 1 << 20;  // bytes of events handed out per Poll()

int64_t SteadyMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::string Line(const json::object& o) {
  std::string s = json::serialize(o);
  s.push_back('\n');
  return s;
}

class ProcStreamBody final : public StreamBody {
 public:
  ProcStreamBody(core::ProcessAttach attach, bool base64, int64_t keepalive_ms)
      : attach_(std::move(attach)),
        base64_(base64),
        keepalive_ms_(keepalive_ms),
        last_emit_ms_(SteadyMs()) {}

  ~ProcStreamBody() override {
    if (!done_) (void)attach_.channel->Cancel();
    attach_.channel->SetNotify(nullptr);
  }

  Chunk Poll() override {
    Chunk out;
    if (done_) {
      out.done = true;
      return out;
    }
    while (out.data.size() < kMaxPollBytes) {
      std::optional<protocol::ChannelEvent> ev = attach_.channel->TryNext();
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
      out.data = "{\"type\":\"keepalive\"}\n";
      last_emit_ms_ = now;
    }
    return out;
  }

  void SetNotify(std::function<void()> notify) override {
    attach_.channel->SetNotify(std::move(notify));
  }

  void Cancel() override {
    if (!done_) (void)attach_.channel->Cancel();
  }

 private:
  void Data(protocol::Stream stream, std::string_view bytes, bool eof, Chunk* out) {
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
    json::object o;
    o["type"] = is_err ? "stderr" : "stdout";
    o["data"] = text;
    out->data += Line(o);
  }

  void Handle(const protocol::ChannelEvent& ev, Chunk* out) {
    using Kind = protocol::ChannelEvent::Kind;
    switch (ev.kind) {
      case Kind::kData:
        Data(ev.stream, ev.payload, false, out);
        break;
      case Kind::kEof:
        Data(ev.stream, {}, true, out);
        break;
      case Kind::kInfo: {
        // {"skipped":N}; other INFO (none today) is ignored.
        boost::system::error_code ec;
        json::value v = json::parse(ev.payload, ec);
        if (ec || !v.is_object()) break;
        const json::value* n = v.as_object().if_contains("skipped");
        if (n == nullptr || !n->is_number()) break;
        json::object o;
        o["type"] = "skipped";
        o["bytes"] = *n;
        out->data += Line(o);
        break;
      }
      case Kind::kResult: {
        Data(protocol::Stream::kStdout, {}, true, out);
        Data(protocol::Stream::kStderr, {}, true, out);
        auto info = protocol::DecodeProcInfo(ev.payload);
        if (!info) {
          Error(info.error(), out);
          break;
        }
        json::object o;
        o["type"] = "exit";
        o["exit_code"] = info->exit_code;
        o["signal"] = info->signal;
        out->data += Line(o);
        done_ = true;
        break;
      }
      case Kind::kError:
        Data(protocol::Stream::kStdout, {}, true, out);
        Data(protocol::Stream::kStderr, {}, true, out);
        Error(ev.error ? *ev.error : asb::Error::Backend("attach failed"), out);
        break;
    }
  }

  void Error(const asb::Error& e, Chunk* out) {
    json::object o;
    o["type"] = "error";
    o["code"] = WireCodeOf(e.code());
    o["message"] = e.code() == ErrorCode::kInternal ? "internal error" : e.message();
    out->data += Line(o);
    done_ = true;
  }

  core::ProcessAttach attach_;
  bool base64_;
  int64_t keepalive_ms_;
  int64_t last_emit_ms_;
  bool done_ = false;
  Utf8Stream out_utf8_;
  Utf8Stream err_utf8_;
};

}  // namespace

std::shared_ptr<StreamBody> MakeProcStreamBody(core::ProcessAttach attach, bool base64,
                                               int64_t keepalive_ms) {
  return std::make_shared<ProcStreamBody>(std::move(attach), base64, keepalive_ms);
}

}  // namespace asb::api
