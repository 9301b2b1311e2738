#include "api/exec_stream.h"

#include <boost/json.hpp>
#include <chrono>
#include <mutex>

#include "api/errors.h"
#include "api/text.h"

namespace asb::api {

namespace json = boost::json;

namespace {

// Bytes of events handed out per Poll(), so a fast producer cannot make one write unbounded.
constexpr size_t kMaxPollBytes = 1 << 20;

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

class ExecStreamBody final : public StreamBody {
 public:
  ExecStreamBody(core::ExecStream exec, bool base64, int64_t keepalive_ms)
      : exec_(std::move(exec)), base64_(base64), keepalive_ms_(keepalive_ms),
        last_emit_ms_(SteadyMs()) {}

  ~ExecStreamBody() override {
    if (!done_) exec_.channel->Cancel();
    exec_.channel->SetNotify(nullptr);
  }

  Chunk Poll() override {
    Chunk out;
    if (done_) {
      out.done = true;
      return out;
    }
    while (out.data.size() < kMaxPollBytes) {
      std::optional<protocol::ChannelEvent> ev = exec_.channel->TryNext();
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
    exec_.channel->SetNotify(std::move(notify));
  }

  void Cancel() override {
    if (!done_) exec_.channel->Cancel();
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
      case Kind::kInfo:
        break;
      case Kind::kResult: {
        // Whatever is still held back by the decoders belongs before the exit event.
        Data(protocol::Stream::kStdout, {}, true, out);
        Data(protocol::Stream::kStderr, {}, true, out);
        Result<protocol::ExecResult> r = exec_.Finish(ev.payload);
        if (!r) {
          Error(r.error(), out);
          break;
        }
        json::object o;
        o["type"] = "exit";
        o["exit_code"] = r->exit_code;
        o["signal"] = r->signal;
        o["timed_out"] = r->timed_out;
        o["duration_ms"] = r->duration_ms;
        o["oom_killed"] = r->oom_killed;
        o["pids_limited"] = r->pids_limited;
        o["truncated"] = r->stdout_truncated || r->stderr_truncated;
        out->data += Line(o);
        done_ = true;
        break;
      }
      case Kind::kError:
        Data(protocol::Stream::kStdout, {}, true, out);
        Data(protocol::Stream::kStderr, {}, true, out);
        Error(ev.error ? *ev.error : asb::Error::Backend("exec failed"), out);
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

  core::ExecStream exec_;
  bool base64_;
  int64_t keepalive_ms_;
  int64_t last_emit_ms_;
  bool done_ = false;
  Utf8Stream out_utf8_;
  Utf8Stream err_utf8_;
};

}  // namespace

std::shared_ptr<StreamBody> MakeExecStreamBody(core::ExecStream exec, bool base64,
                                               int64_t keepalive_ms) {
  return std::make_shared<ExecStreamBody>(std::move(exec), base64, keepalive_ms);
}

}  // namespace asb::api
