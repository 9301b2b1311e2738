#include "api/proc_ws.h"

#include <boost/json.hpp>
#include <mutex>

#include "api/errors.h"

namespace asb::api {

namespace json = boost::json;

namespace {

constexpr size_t kMaxPollBytes = 1 << 20;  // output bytes handed out per Poll()
constexpr int64_t kStdinWriteMs = 30'000;  // a process that reads nothing blocks its writer

std::string Event(const json::object& o) { return json::serialize(o); }

class ProcWebSocket final : public WebSocketSession {
 public:
  explicit ProcWebSocket(core::ProcessAttach attach) : attach_(std::move(attach)) {}
  ~ProcWebSocket() override {
    if (!done_) (void)attach_.events->Cancel();
    attach_.events->SetNotify(nullptr);
  }

  Outgoing Poll() override {
    Outgoing out;
    if (done_) {
      out.done = true;
      return out;
    }
    size_t bytes = 0;
    while (bytes < kMaxPollBytes && !done_) {
      std::optional<core::StreamEvent> ev = attach_.events->TryNext();
      if (!ev) break;
      Handle(*ev, &out);
      if (!out.messages.empty()) bytes += out.messages.back().data.size();
    }
    out.done = done_;
    return out;
  }

  void SetNotify(std::function<void()> notify) override {
    attach_.events->SetNotify(std::move(notify));
  }

  std::string OnMessage(std::string data, bool binary) override {
    if (binary) return Write(data);
    boost::system::error_code ec;
    json::value v = json::parse(data, ec);
    if (ec || !v.is_object()) return "control messages must be JSON objects";
    const json::object& o = v.as_object();
    const json::value* type = o.if_contains("type");
    if (type == nullptr || !type->is_string()) return "control message without a \"type\"";
    std::string_view t = type->get_string();
    if (t == "resize") {
      const json::value* cols = o.if_contains("cols");
      const json::value* rows = o.if_contains("rows");
      if (!cols || !rows || !cols->is_int64() || !rows->is_int64() || cols->get_int64() < 1 ||
          rows->get_int64() < 1 || cols->get_int64() > core::kMaxTerminalSize ||
          rows->get_int64() > core::kMaxTerminalSize) {
        return "resize: cols and rows must be integers in [1, 10000]";
      }
      (void)attach_.events->Resize(static_cast<uint16_t>(cols->get_int64()),
                                   static_cast<uint16_t>(rows->get_int64()));
      return {};
    }
    if (t == "signal") {
      const json::value* sig = o.if_contains("signal");
      if (!sig || !sig->is_string()) return "signal: \"signal\" must be a name such as SIGINT";
      auto signo = core::ParseSignalName(std::string(sig->get_string()));
      if (!signo) return signo.error().message();
      (void)attach_.events->Signal(*signo);
      return {};
    }
    if (t == "stdin") {
      const json::value* d = o.if_contains("data");
      if (!d || !d->is_string()) return "stdin: \"data\" must be a string";
      return Write(std::string(d->get_string()));
    }
    if (t == "close_stdin") {
      (void)attach_.events->CloseWrite();
      return {};
    }
    return "unknown control message type \"" + std::string(t) + "\"";
  }

  void Cancel() override {
    if (!done_) (void)attach_.events->Cancel();
  }

 private:
  std::string Write(std::string_view data) {
    if (data.empty()) return {};
    auto st = attach_.events->Write(data, kStdinWriteMs);
    // A channel that has ended (the process exited) discards input; its exit event follows.
    if (!st && st.error().code() == ErrorCode::kTimeout) return "stdin: the process is not reading";
    return {};
  }

  void Handle(const core::StreamEvent& ev, Outgoing* out) {
    using Kind = core::StreamEvent::Kind;
    switch (ev.kind) {
      case Kind::kOutput:
        out->messages.push_back({ev.data, true});
        break;
      case Kind::kEnd:
        break;
      case Kind::kInfo: {
        if (ev.skipped_bytes == 0) break;
        json::object o;
        o["type"] = "skipped";
        o["bytes"] = ev.skipped_bytes;
        out->messages.push_back({Event(o), false});
        break;
      }
      case Kind::kDone: {
        json::object o;
        if (ev.process) {
          o["type"] = "exit";
          o["exit_code"] = ev.process->exit_code;
          o["signal"] = ev.process->signal;
        } else {
          o["type"] = "error";
          ClientError c = ForClient(asb::Error::Backend("process ended without its state"));
          o["code"] = WireCodeOf(c.code);
          o["message"] = c.message;
        }
        out->messages.push_back({Event(o), false});
        done_ = true;
        break;
      }
      case Kind::kError: {
        asb::Error e = ev.error ? *ev.error : asb::Error::Backend("attach failed");
        json::object o;
        o["type"] = "error";
        ClientError c = ForClient(e);
        o["code"] = WireCodeOf(c.code);
        o["message"] = c.message;
        out->messages.push_back({Event(o), false});
        done_ = true;
        break;
      }
    }
  }

  core::ProcessAttach attach_;
  bool done_ = false;  // Poll() and Cancel() run on the server's strand only
};

}  // namespace

std::shared_ptr<WebSocketSession> MakeProcWebSocket(core::ProcessAttach attach) {
  return std::make_shared<ProcWebSocket>(std::move(attach));
}

}  // namespace asb::api
