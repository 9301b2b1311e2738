#include "api/server_body_reader.h"

#include <future>

#include "common/log.h"

namespace asb::api::server_detail {

namespace {

std::optional<uint64_t> LengthOf(const http::request_parser<http::string_body>& parser) {
  if (auto n = parser.content_length()) return *n;
  return std::nullopt;
}

}  // namespace

SocketBodyReader::SocketBodyReader(beast::tcp_stream& stream, beast::flat_buffer& buffer,
                                   http::request_parser<http::string_body>& parser,
                                   BodyReaderOptions options)
    : stream_(stream),
      buffer_(buffer),
      head_parser_(parser),
      options_(std::move(options)),
      length_(LengthOf(parser)) {
  done_ = parser.is_done();
}

bool SocketBodyReader::done() const {
  std::lock_guard<std::mutex> lock(mu_);
  return done_;
}

bool SocketBodyReader::started() const {
  std::lock_guard<std::mutex> lock(mu_);
  return started_;
}

void SocketBodyReader::Detach() {
  std::lock_guard<std::mutex> lock(mu_);
  detached_ = true;
  leases_.clear();
}

Result<size_t> SocketBodyReader::Read(char* buf, size_t n) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (detached_) return Fail(Error::Cancelled("the request is over"));
    if (done_) return size_t{0};
    started_ = true;
  }
  if (n == 0) return Fail(Error::InvalidArgument("BodyReader::Read of 0 bytes"));
  // Shared with the read: if the server stops and drops it unrun, the promise goes with it and
  // get() throws instead of waiting forever.
  auto result = std::make_shared<std::promise<Result<size_t>>>();
  std::future<Result<size_t>> got = result->get_future();
  net::co_spawn(stream_.get_executor(), ReadOnStrand(buf, n, std::move(result)), net::detached);
  try {
    return got.get();
  } catch (const std::future_error&) {
    return Fail(Error::Cancelled("the server is stopping"));
  }
}

awaitable<void> SocketBodyReader::ReadOnStrand(char* buf, size_t n,
                                               std::shared_ptr<std::promise<Result<size_t>>> out) {
  auto finish = [&](Result<size_t> r) { out->set_value(std::move(r)); };
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (detached_) {
      finish(Fail(Error::Cancelled("the request is over")));
      co_return;
    }
  }
  if (!body_) {
    // The client waits for this before it sends a body it announced with Expect (curl does
    // for uploads over 1 MiB).
    if (!continue_sent_ && head_parser_.get()[http::field::expect] == "100-continue") {
      continue_sent_ = true;
      http::response<http::empty_body> cont{http::status::continue_, 11};
      stream_.expires_after(std::chrono::seconds(options_.write_timeout_s));
      auto [cec, cn] = co_await http::async_write(stream_, cont, kTuple);
      stream_.expires_never();
      if (cec) {
        finish(Fail(Error::Cancelled("the client went away before sending the body")));
        co_return;
      }
    }
    body_.emplace(std::move(head_parser_));
    body_->body_limit(options_.body_limit);
  }
  // A read takes at most the buffer's free capacity (Beast's read_size): without room for the
  // whole request, it would move the body ~1 KiB at a time.
  buffer_.reserve(std::min<size_t>(n, 1 << 20));
  size_t got = 0;
  while (got == 0 && !body_->is_done()) {
    body_->get().body().data = buf;
    body_->get().body().size = n;
    stream_.expires_after(std::chrono::seconds(options_.body_timeout_s));
    auto [ec, rn] = co_await http::async_read_some(stream_, buffer_, *body_, kTuple);
    stream_.expires_never();
    got = n - body_->get().body().size;
    if (ec == http::error::need_buffer) ec = {};  // `buf` is full: this read is done
    if (ec == http::error::body_limit) {
      finish(Fail(Error::TooLarge("request body too large (limit " +
                                  std::to_string(options_.body_limit) + " bytes)")));
      co_return;
    }
    if (ec == beast::error::timeout) {
      finish(Fail(Error::Timeout("the request body stalled: nothing arrived for " +
                                 std::to_string(options_.body_timeout_s) + " s")));
      co_return;
    }
    if (ec) {
      finish(Fail(Error::Cancelled("the request body broke off (" + ec.message() + ")")));
      co_return;
    }
  }
  if (body_->is_done()) {
    std::lock_guard<std::mutex> lock(mu_);
    done_ = true;
  }
  finish(got);
}

Result<std::string> SocketBodyReader::ReadAll() {
  // Leased like the server's own buffered bodies: a Content-Length at once, else a step at a
  // time as the body grows.
  constexpr uint64_t kLeaseStep = 1 << 20;
  uint64_t leased = 0;
  auto lease = [&](uint64_t bytes) -> Status {
    if (!options_.budget) return {};
    auto l = options_.budget->Acquire(bytes, 0);
    if (!l) {
      spdlog::warn("request bodies held in memory reached --body-buffer-mb ({} MiB); refusing one",
                   options_.budget->capacity() >> 20);
      return Fail(
          Error::Unavailable("the server holds as many request bodies as it may; retry later"));
    }
    leased += bytes;
    std::lock_guard<std::mutex> lock(mu_);
    leases_.push_back(std::move(l));
    return {};
  };
  if (length_ && *length_ > options_.body_limit) {
    return Fail(Error::TooLarge("request body too large (limit " +
                                std::to_string(options_.body_limit) + " bytes)"));
  }
  if (length_) ASB_TRY(lease(*length_));
  std::string all;
  char chunk[64 * 1024];
  for (;;) {
    ASB_ASSIGN_OR_RETURN(size_t n, Read(chunk, sizeof chunk));
    if (n == 0) break;
    all.append(chunk, n);
    while (!length_ && all.capacity() > leased) ASB_TRY(lease(kLeaseStep));
  }
  return all;
}

}  // namespace asb::api::server_detail
