// One MCP session (ADR 0010): JSON-RPC 2.0 message handling over any transport, per the
// MCP specification revision 2025-06-18 (basic/index, basic/lifecycle, basic/utilities/
// {ping,cancellation,progress}, server/tools), negotiating 2025-03-26 and 2024-11-05 when the
// client asks for them. JSON-RPC batches (arrays) are accepted only when the negotiated
// revision is 2025-03-26 or 2024-11-05 (2025-06-18 removed batching); otherwise an array is an
// Invalid Request (-32600).
//
// tools/call runs on its own thread so that notifications/cancelled and ping are handled while
// a long exec runs; a cancelled request gets no response (spec: "receivers ... SHOULD NOT send
// a response for the cancelled request"). Every outgoing message goes through a sink, one
// complete JSON text per call, from any thread (calls are serialized by the session): the
// session's `send` (stdio: one stream for everything), or the `reply` given with the incoming
// text (Streamable HTTP: the answers and progress of one POST go back on that POST's response).
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

/// What an outgoing message is, for transports that route answers per request.
enum class Outgoing {
  kNotification,  // notifications/progress of a running request
  kResponse,      // the answer to a request (or a batch's array of answers)
  kNoResponse,    // a request ended without an answer (it was cancelled); text is ""
};

class McpSession {
 public:
  using Send = std::function<void(const std::string&)>;
  using Reply = std::function<void(Outgoing kind, const std::string& text)>;

  /// `send` receives every message of HandleText(text) calls (never kNoResponse ones).
  McpSession(Tools tools, Send send);
  ~McpSession();  // waits for running tool calls (WaitIdle)
  McpSession(const McpSession&) = delete;
  McpSession& operator=(const McpSession&) = delete;

  /// Handles one incoming JSON text (a message, or a batch where allowed). Responses to
  /// everything but tools/call are sent before this returns; tools/call answers later.
  void HandleText(std::string_view text);
  /// The same, but the answers to this text's requests and their progress notifications go to
  /// `reply` (also from tool-call threads, after this returns), and a request that ends without
  /// an answer is reported as kNoResponse. A parse error is answered to `reply` too.
  void HandleText(std::string_view text, Reply reply);

  /// Cancels the running tool call with request id `id` (as notifications/cancelled does);
  /// no-op when none runs.
  void Cancel(const boost::json::value& id);

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
  using ReplyPtr = std::shared_ptr<const Reply>;
  boost::json::value HandleMessage(const boost::json::value& msg, bool async_ok,
                                   const ReplyPtr& reply);
  boost::json::value Dispatch(const boost::json::value& id, std::string_view method,
                              const boost::json::object& params, bool async_ok,
                              const ReplyPtr& reply);
  // Runs tools/call on a thread; false when a request with this id is already running.
  bool StartToolCall(const boost::json::value& id, const boost::json::object& params,
                     const ReplyPtr& reply);
  boost::json::value RunToolCall(const boost::json::value& id, const boost::json::object& params,
                                 const std::shared_ptr<std::atomic<bool>>& cancelled,
                                 const ReplyPtr& reply);
  void SendValue(const ReplyPtr& reply, Outgoing kind, const boost::json::value& v);

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
