// One MCP session (issue 6 item 1): JSON-RPC 2.0 message handling over any transport, per the
// MCP specification revision 2025-06-18 (basic/index, basic/lifecycle, basic/utilities/
// {ping,cancellation,progress}, server/tools), negotiating 2025-03-26 and 2024-11-05 when the
// client asks for them. JSON-RPC batches (arrays) are accepted only when the negotiated
// revision is 2025-03-26 or 2024-11-05 (2025-06-18 removed batching); otherwise an array is an
// Invalid Request (-32600).
//
// tools/call runs on its own thread so that notifications/cancelled and ping are handled while
// a long exec runs; a cancelled request gets no response (spec: "receivers ... SHOULD NOT send
// a response for the cancelled request"). Every outgoing message goes through `send`, one
// complete JSON text per call, from any thread (calls are serialized by the session).
#pragma once

#include <atomic>
#include <boost/json.hpp>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "mcp/tools.h"

namespace asb::mcp {

/// The revisions this server speaks, newest first.
inline constexpr std::string_view kProtocolVersions[] = {"2025-06-18", "2025-03-26", "2024-11-05"};

/// The server's `instructions` in the initialize result.
std::string_view ServerInstructions();

class McpSession {
 public:
  using Send = std::function<void(const std::string&)>;

  McpSession(Tools tools, Send send);
  ~McpSession();  // waits for running tool calls (WaitIdle)
  McpSession(const McpSession&) = delete;
  McpSession& operator=(const McpSession&) = delete;

  /// Handles one incoming JSON text (a message, or a batch where allowed). Responses to
  /// everything but tools/call are sent before this returns; tools/call answers later.
  void HandleText(std::string_view text);

  /// Cancels every running tool call and waits for them (the client went away).
  void CancelAll();

  /// Waits until no tool call is running.
  void WaitIdle();

  /// The negotiated revision, "" before initialize.
  std::string protocol_version() const;

 private:
  struct Running {
    std::shared_ptr<std::atomic<bool>> cancelled;
  };
  struct Worker {
    std::thread thread;
    std::shared_ptr<std::atomic<bool>> done;  // set as the thread's last action
  };

  // Handles one message object; returns the response (null value for none). `async_ok` lets
  // tools/call run on a thread (not inside a batch, whose answers are collected).
  boost::json::value HandleMessage(const boost::json::value& msg, bool async_ok);
  boost::json::value Dispatch(const boost::json::value& id, std::string_view method,
                              const boost::json::object& params, bool async_ok);
  // Runs tools/call on a thread; false when a request with this id is already running.
  bool StartToolCall(const boost::json::value& id, const boost::json::object& params);
  boost::json::value RunToolCall(const boost::json::value& id, const boost::json::object& params,
                                 const std::shared_ptr<std::atomic<bool>>& cancelled);
  void SendValue(const boost::json::value& v);

  Tools tools_;
  Send send_;
  std::mutex send_mu_;
  mutable std::mutex mu_;
  std::string version_;
  bool initialized_ = false;  // notifications/initialized seen (or any call after initialize)
  std::map<std::string, Running> running_;  // by serialized request id
  std::vector<Worker> workers_;
};

}  // namespace asb::mcp
