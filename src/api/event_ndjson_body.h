// EventNdjsonBody: the shared part of the NDJSON bodies that relay a core::EventStream line by
// line (exec_stream.h, proc_stream.h). It drains the stream's queued events on each Poll()
// (at most ~1 MiB of lines per Poll, so a fast producer cannot make one write unbounded) and
// writes, one JSON object per line:
//   {"type":"stdout","data":"..."}  {"type":"stderr","data":"..."}   for kOutput / kEnd
//   {"type":"keepalive"}            after keepalive_ms without a line
//   the subclass's exit line        for the terminal kDone (ExitLine); last
//   {"type":"error","code":"...","message":"..."}  instead, for kError or a bad kDone; last
// Text is UTF-8 with invalid bytes replaced and characters never split across lines (each
// stream has its own Utf8Stream, flushed at its EOF and before the last line); with base64
// the data is base64 of the raw bytes. kInfo events go to OnInfo.
#pragma once

#include <boost/json/object.hpp>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "api/http_types.h"
#include "api/text.h"
#include "common/result.h"
#include "core/event_stream.h"

namespace asb::api {

class EventNdjsonBody : public StreamBody {
 public:
  /// `events` is the stream to drain; `owner` is whatever holds it and the sandbox alive (the
  /// core::ExecStream or ProcessAttach), released only after the stream was cancelled and its
  /// notifier cleared. `failure` is the message of the error line when a kError event carries
  /// no error. `keepalive_ms` in milliseconds.
  EventNdjsonBody(std::shared_ptr<core::EventStream> events, std::shared_ptr<const void> owner,
                  bool base64, int64_t keepalive_ms, std::string failure);
  /// Cancels the stream unless it ended, and clears its notifier.
  ~EventNdjsonBody() override;

  Chunk Poll() final;
  void SetNotify(std::function<void()> notify) final;
  /// Cancels the stream (the work behind it) unless it already ended.
  void Cancel() final;

 protected:
  /// The last line's object for the terminal kDone event; an error becomes an error line.
  virtual Result<boost::json::object> ExitLine(const core::StreamEvent& done) = 0;
  /// A kInfo event; may append lines (Line()) to `out`. Default: ignored.
  virtual void OnInfo(const core::StreamEvent& info, std::string* out);
  /// The object of one output line: `data` is text (or base64) of `stream`. Default:
  /// {"type":"stdout"|"stderr","data":...}.
  virtual boost::json::object DataLine(core::OutputStream stream, std::string data);
  /// The object of the error line that ends a failed stream. Default: {"type":"error","code",
  /// "message"} (internal errors say only "internal error").
  virtual boost::json::object ErrorObject(const Error& e);
  /// The line written after keepalive_ms of quiet, newline included. Default:
  /// {"type":"keepalive"}.
  virtual std::string KeepaliveLine();
  /// `o` serialized, with the newline.
  static std::string Line(const boost::json::object& o);

 private:
  void Data(core::OutputStream stream, std::string_view bytes, bool eof, Chunk* out);
  void FlushText(Chunk* out);
  void Handle(const core::StreamEvent& ev, Chunk* out);
  void ErrorLine(const Error& e, Chunk* out);

  // Declared first, destroyed last: the owner outlives the stream reference below.
  std::shared_ptr<const void> owner_;
  std::shared_ptr<core::EventStream> events_;
  bool base64_;
  int64_t keepalive_ms_;
  std::string failure_;
  int64_t last_emit_ms_;
  bool done_ = false;
  Utf8Stream out_utf8_;
  Utf8Stream err_utf8_;
};

}  // namespace asb::api
