// FileWatchBody: a response body that relays a core::FileWatch as it runs, in a wire format
// chosen by the route: NDJSON for GET /v1/sandboxes/{id}/files/watch (FileWatchNdjson), Connect
// envelopes for envd's filesystem.Filesystem/WatchDir (e2b_envd_files.cc). It takes the events
// the watch has on each Poll() (at most kPollEvents, so one write stays bounded), sends the
// format's keepalive after keepalive_ms of quiet, and ends with the format's last bytes. A
// client that goes away cancels the watch in the sandbox.
#pragma once

#include <boost/json/object.hpp>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "api/http_types.h"
#include "core/file_watch.h"

namespace asb::api {

/// How a watch is written on one wire. Each function returns the bytes to send ("" for none).
struct FileWatchWire {
  std::function<std::string(const core::FileWatch&)> start;  // first, before any event
  std::function<std::string(const core::FileEvent&)> event;
  std::function<std::string()> keepalive;
  /// Last: the watch ended (batch.end_reason or batch.error says how).
  std::function<std::string(const core::FileWatch::Batch&)> end;
};

class FileWatchBody final : public StreamBody {
 public:
  /// Events taken per Poll().
  static constexpr size_t kPollEvents = 4096;

  /// `keepalive_ms` in milliseconds; `timeout_ms` (0 = none) ends the watch that long after the
  /// start, with end_reason "timeout".
  FileWatchBody(std::shared_ptr<core::FileWatch> watch, FileWatchWire wire, int64_t keepalive_ms,
                int64_t timeout_ms = 0);
  /// Cancels the watch unless it ended, and clears its notifier.
  ~FileWatchBody() override;

  Chunk Poll() override;
  void SetNotify(std::function<void()> notify) override;
  void Cancel() override;

 private:
  std::shared_ptr<core::FileWatch> watch_;
  FileWatchWire wire_;
  int64_t keepalive_ms_;
  int64_t deadline_ms_;
  int64_t last_emit_ms_;
  bool started_ = false;
  bool done_ = false;
};

/// The NDJSON lines of GET /v1/sandboxes/{id}/files/watch:
///   {"type":"start","path":"/workspace/src","watches":N}   once the watch is armed
///   {"type":"create"|"write"|"remove"|"rename"|"chmod","path":"...","dir":false}
///   {"type":"overflow","dropped":N}                        events were lost (core::FileEvent)
///   {"type":"keepalive"}                                   after keepalive_ms of quiet
///   {"type":"end","reason":"removed"}                      last: the directory went away
///                                                          ("timeout": timeout_ms passed)
///   {"type":"error","code":"...","message":"..."}          last: the watch failed
FileWatchWire FileWatchNdjson();

/// One change as those lines (and MCP's sandbox_watch_files) show it: {"type","path","dir"},
/// or {"type":"overflow","dropped"}.
boost::json::object FileEventJson(const core::FileEvent& e);

}  // namespace asb::api
