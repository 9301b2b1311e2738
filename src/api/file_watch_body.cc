#include "api/file_watch_body.h"

#include <boost/json.hpp>
#include <chrono>

#include "api/errors.h"
#include "api/text.h"

namespace asb::api {

namespace json = boost::json;

namespace {

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

}  // namespace

FileWatchBody::FileWatchBody(std::shared_ptr<core::FileWatch> watch, FileWatchWire wire,
                             int64_t keepalive_ms, int64_t timeout_ms)
    : watch_(std::move(watch)),
      wire_(std::move(wire)),
      keepalive_ms_(keepalive_ms),
      deadline_ms_(timeout_ms > 0 ? SteadyMs() + timeout_ms : 0),
      last_emit_ms_(SteadyMs()) {}

FileWatchBody::~FileWatchBody() {
  watch_->SetNotify(nullptr);
  if (!done_) watch_->Cancel();
}

StreamBody::Chunk FileWatchBody::Poll() {
  Chunk out;
  if (done_) {
    out.done = true;
    return out;
  }
  if (!started_) {
    started_ = true;
    out.data = wire_.start(*watch_);
  }
  core::FileWatch::Batch batch = watch_->Take(kPollEvents, 0);
  for (const core::FileEvent& e : batch.events) out.data += wire_.event(e);
  int64_t now = SteadyMs();
  if (!batch.ended && deadline_ms_ != 0 && now >= deadline_ms_) {
    watch_->Cancel();
    batch.ended = true;
    batch.end_reason = "timeout";
  }
  if (batch.ended) {
    out.data += wire_.end(batch);
    done_ = true;
    out.done = true;
  }
  if (!out.data.empty()) {
    last_emit_ms_ = now;
  } else if (now - last_emit_ms_ >= keepalive_ms_) {
    out.data = wire_.keepalive();
    last_emit_ms_ = now;
  }
  return out;
}

void FileWatchBody::SetNotify(std::function<void()> notify) {
  watch_->SetNotify(std::move(notify));
}

void FileWatchBody::Cancel() {
  if (!done_) watch_->Cancel();
}

json::object FileEventJson(const core::FileEvent& e) {
  json::object o;
  o["type"] = e.type;
  if (e.type == "overflow") {
    o["dropped"] = e.dropped;
  } else {
    // Names may hold any byte but '/' and NUL; JSON text is UTF-8 (as StatJson).
    o["path"] = SanitizeUtf8(e.path);
    o["dir"] = e.dir;
  }
  return o;
}

FileWatchWire FileWatchNdjson() {
  FileWatchWire w;
  w.start = [](const core::FileWatch& watch) {
    json::object o;
    o["type"] = "start";
    o["path"] = SanitizeUtf8(watch.path());
    o["watches"] = watch.watches();
    return Line(o);
  };
  w.event = [](const core::FileEvent& e) { return Line(FileEventJson(e)); };
  w.keepalive = [] { return std::string("{\"type\":\"keepalive\"}\n"); };
  w.end = [](const core::FileWatch::Batch& b) {
    json::object o;
    if (b.error) {
      ClientError c = ForClient(*b.error);
      o["type"] = "error";
      o["code"] = WireCodeOf(c.code);
      o["message"] = c.message;
    } else {
      o["type"] = "end";
      o["reason"] = b.end_reason;
    }
    return Line(o);
  };
  return w;
}

}  // namespace asb::api
