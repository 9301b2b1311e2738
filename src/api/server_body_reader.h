// Private to api/server*.cc: the BodyReader (http_types.h) of a stream_body route. A blocking
// handler calls Read on a pool thread; each call runs one read of the request body on the
// session's strand and waits for it, so the body moves only as fast as the handler consumes it
// (the socket's receive window throttles the client). The session coroutine is suspended in
// RunHandler meanwhile, so nothing else touches the stream.
#pragma once

#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "api/server_impl.h"

namespace asb::api::server_detail {

struct BodyReaderOptions {
  size_t body_limit = 0;  // bytes; past it Read fails kTooLarge
  int body_timeout_s = 60;
  int write_timeout_s = 60;              // for the interim 100 Continue
  std::shared_ptr<BufferBudget> budget;  // for ReadAll; null: unbounded
};

class SocketBodyReader final : public BodyReader {
 public:
  /// `stream`, `buffer` and `parser` (whose head is read) belong to the session and must
  /// outlive the reader's use: the session calls Detach() before they go.
  SocketBodyReader(beast::tcp_stream& stream, beast::flat_buffer& buffer,
                   http::request_parser<http::string_body>& parser, BodyReaderOptions options);

  Result<size_t> Read(char* buf, size_t n) override;
  std::optional<uint64_t> content_length() const override { return length_; }
  Result<std::string> ReadAll() override;

  /// Ends the reader's use (the handler has returned): later Reads fail kCancelled. Also
  /// releases the budget leases of ReadAll. Called on the session's strand.
  void Detach();
  /// Whether the whole body has been read (so the connection may serve another request).
  bool done() const;
  /// Whether a Read has begun on the body (the session's parser is then spent).
  bool started() const;

 private:
  awaitable<void> ReadOnStrand(char* buf, size_t n,
                               std::shared_ptr<std::promise<Result<size_t>>> out);

  beast::tcp_stream& stream_;
  beast::flat_buffer& buffer_;
  http::request_parser<http::string_body>& head_parser_;
  std::optional<http::request_parser<http::buffer_body>> body_;
  const BodyReaderOptions options_;
  const std::optional<uint64_t> length_;
  bool continue_sent_ = false;
  mutable std::mutex mu_;
  bool detached_ = false;  // guarded by mu_
  bool done_ = false;      // guarded by mu_
  bool started_ = false;   // guarded by mu_
  std::vector<std::unique_ptr<BufferBudget::Lease>> leases_;
};

}  // namespace asb::api::server_detail
