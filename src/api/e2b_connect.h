// The Connect protocol (connectrpc.com/docs/protocol), JSON codec only, as E2B's in-sandbox
// daemon "envd" speaks it and the official `e2b` SDKs call it (docs/e2b.md, ADR 0023):
//   unary          POST /<package.Service>/<Method>, Content-Type application/json, the message
//                  as JSON; errors answer an HTTP status and {"code": "not_found", "message"}.
//   server stream  Content-Type application/connect+json; request and answer are envelopes of
//                  1 flag byte + 4-byte big-endian length + JSON; the answer always ends with one
//                  end-of-stream envelope (flag 0x02) holding {} or {"error": {...}}.
// Compressed envelopes (flag 0x01) are refused: we never advertise a Connect-Content-Encoding.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "api/http_types.h"
#include "common/error.h"
#include "common/result.h"

namespace asb::api {

/// Envelope flags (Connect protocol, "Streaming-Response").
inline constexpr uint8_t kConnectFlagCompressed = 0x01;
inline constexpr uint8_t kConnectFlagEndStream = 0x02;
/// The envelope header: flags (1 byte) and length (4 bytes, big-endian).
inline constexpr size_t kConnectEnvelopeHeaderBytes = 5;

/// One envelope: `flags` then the length and `payload`.
std::string ConnectEnvelope(uint8_t flags, std::string_view payload);

/// The one message of a server-streaming request body: exactly one uncompressed envelope of at
/// most `max_bytes`. Errors: kInvalidArgument (short, trailing bytes, compressed, end-stream
/// flag), kTooLarge (declared length over max_bytes).
Result<std::string> ParseConnectRequestEnvelope(std::string_view body, size_t max_bytes);

/// The Connect error code of one of ours ("not_found", "invalid_argument", "unavailable", ...).
std::string_view ConnectCodeOf(ErrorCode code);
/// The HTTP status a unary Connect error answers with (Connect protocol's code table).
int ConnectHttpStatus(std::string_view connect_code);

/// {"code": connect_code, "message": message} — the Connect error JSON.
std::string ConnectErrorJson(std::string_view connect_code, std::string_view message);

/// A unary call's error answer: the Connect status and JSON; what a client is told follows
/// api::ForClient as in every error (host failures are unavailable without host text).
HttpResponse ConnectUnaryError(const Error& error);
HttpResponse ConnectUnaryError(std::string_view connect_code, std::string_view message);

/// E2B's error on its plain HTTP routes (control plane, envd's /files, the interpreter):
/// {"code": <HTTP status>, "message"}, the status and message by api::ForClient's rule. The
/// SDKs read the status.
HttpResponse E2bHttpError(const Error& error);
/// The same shape with a status and message of the caller's (501 for what is not supported).
HttpResponse E2bHttpError(int status, std::string_view message);

/// A server stream's answer: HTTP 200, application/connect+json, its envelopes from `body`.
HttpResponse ConnectStreamResponse(std::shared_ptr<StreamBody> body, const std::string& sandbox_id);
/// A server stream's failure before its first message: still HTTP 200, with the error in the
/// end-of-stream envelope, as the Connect protocol has it for streams.
HttpResponse ConnectStreamError(const Error& error, const std::string& sandbox_id);

/// The end-of-stream envelope: {} on success, {"error": ConnectErrorJson} otherwise.
std::string ConnectEndStream(const Error* error);
std::string ConnectEndStream(std::string_view connect_code, std::string_view message);

}  // namespace asb::api
