// libFuzzer target: HTTP request handling, from raw bytes on a connection to a handler's
// answer, without sockets: Beast's request parser with the server's limits (api/server.h),
// the server's translation to HttpRequest (api/beast_request.h: target splitting and
// percent-decoding, headers), then the routing table behind the auth layer and the handlers
// over the real manager (fuzz/api_fixture.h). Pipelined requests on one "connection" are
// handled one after another, as the server's keep-alive loop does.
//
// Invariants: no crash or sanitizer report anywhere on the way; a request Beast accepts gets
// an answer with a status in [200, 599] that is never 500; every error answer has the one
// error shape; the request id the server would use is sane.
#include <algorithm>
#include <boost/asio/buffer.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cstddef>
#include <cstdint>

#include "api/beast_request.h"
#include "api/server.h"
#include "common/ids.h"
#include "fuzz/api_fixture.h"
#include "fuzz/fuzz_check.h"

namespace {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;

constexpr int kMaxRequestsPerInput = 4;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const asb::api::ServerOptions limits;
  net::const_buffer rest(data, size);
  for (int n = 0; n < kMaxRequestsPerInput && rest.size() > 0; ++n) {
    http::request_parser<http::string_body> parser;
    parser.header_limit(static_cast<uint32_t>(limits.max_header_bytes));
    parser.body_limit(std::max(limits.max_json_body_bytes, limits.max_file_body_bytes));
    parser.eager(true);
    beast::error_code ec;
    while (!parser.is_done() && rest.size() > 0) {
      size_t used = parser.put(rest, ec);
      rest += used;
      if (ec == http::error::need_more) {
        ec = {};
        if (used == 0) break;  // the parser wants more than is left
        continue;
      }
      if (ec) break;
    }
    if (!ec && !parser.is_done()) parser.put_eof(ec);  // the client closed its end
    if (ec || !parser.is_done()) return 0;             // the server answers 400/413/431 or drops it

    asb::api::HttpRequest req = asb::api::ToRequest(parser.get());
    std::string_view rid = req.Header("x-request-id");
    req.request_id = asb::api::SaneRequestId(rid) ? std::string(rid) : asb::NewId("req_");
    ASB_FUZZ_CHECK(asb::api::SaneRequestId(req.request_id));
    // The server's per-route body limit (file routes take more than JSON routes).
    auto match = asb::fuzz::ApiRouter().Find(req.method, req.path, req.Header("host"));
    size_t limit = match.route && match.route->options.file_body ? limits.max_file_body_bytes
                                                                 : limits.max_json_body_bytes;
    if (parser.get().body().size() > limit) continue;  // 413 without running the handler
    req.body = std::move(parser.get().body());
    asb::fuzz::RunAndCheck(req);
    if (!parser.get().keep_alive()) break;
  }
  return 0;
}
