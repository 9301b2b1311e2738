#include "api/e2b_connect.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>

#include "api/multipart.h"

namespace asb::api {
namespace {

TEST(ConnectEnvelopeTest, RoundTripsAndRejectsEveryMalformedBodyAtItsBoundary) {
  const std::string env = ConnectEnvelope(0, R"({"a":1})");
  ASSERT_EQ(env.size(), 5u + 7u);
  EXPECT_EQ(env[0], 0);
  EXPECT_EQ(env[4], 7);
  auto msg = ParseConnectRequestEnvelope(env, 7);
  ASSERT_TRUE(msg) << msg.error().ToString();
  EXPECT_EQ(*msg, R"({"a":1})");
  // Exactly at the limit passes, one over fails.
  EXPECT_TRUE(ParseConnectRequestEnvelope(env, 7));
  auto over = ParseConnectRequestEnvelope(env, 6);
  ASSERT_FALSE(over);
  EXPECT_EQ(over.error().code(), ErrorCode::kTooLarge);
  // Short, trailing, truncated, compressed, end-stream: each a clear invalid_argument.
  for (const std::string& bad : {std::string("\0\0\0", 3), env + "x", env.substr(0, env.size() - 1),
                                 ConnectEnvelope(kConnectFlagCompressed, "{}"),
                                 ConnectEnvelope(kConnectFlagEndStream, "{}")}) {
    auto r = ParseConnectRequestEnvelope(bad, 1 << 20);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code(), ErrorCode::kInvalidArgument) << r.error().ToString();
  }
  EXPECT_EQ(*ParseConnectRequestEnvelope(ConnectEnvelope(0, ""), 0), "");
  // A declared length of 4 GiB - 1 is refused by the limit, never allocated.
  EXPECT_EQ(
      ParseConnectRequestEnvelope(std::string("\0\xff\xff\xff\xff", 5), 1 << 20).error().code(),
      ErrorCode::kTooLarge);
}

TEST(ConnectErrorTest, CodesAndStatusesFollowTheConnectProtocolTable) {
  EXPECT_EQ(ConnectCodeOf(ErrorCode::kNotFound), "not_found");
  EXPECT_EQ(ConnectCodeOf(ErrorCode::kConflict), "failed_precondition");
  EXPECT_EQ(ConnectCodeOf(ErrorCode::kLimitExceeded), "resource_exhausted");
  EXPECT_EQ(ConnectCodeOf(ErrorCode::kBackend), "unavailable");
  EXPECT_EQ(ConnectCodeOf(ErrorCode::kTimeout), "deadline_exceeded");
  EXPECT_EQ(ConnectHttpStatus("not_found"), 404);
  EXPECT_EQ(ConnectHttpStatus("unimplemented"), 501);
  EXPECT_EQ(ConnectHttpStatus("unauthenticated"), 401);
  EXPECT_EQ(ConnectHttpStatus("canceled"), 499);
  EXPECT_EQ(ConnectHttpStatus("whatever"), 500);
  HttpResponse r = ConnectUnaryError(Error::FromErrno(ErrorCode::kNotFound, 2, "open /var/lib/x"));
  EXPECT_EQ(r.status, 503);  // a host failure is the backend's (unavailable), never a 404
  EXPECT_EQ(r.body.find("/var/lib"), std::string::npos) << r.body;  // no host path leaves
  EXPECT_NE(r.body.find(R"("code":"unavailable")"), std::string::npos) << r.body;
  HttpResponse nf = ConnectUnaryError(Error::NotFound("file /workspace/x not found"));
  EXPECT_EQ(nf.status, 404);
  EXPECT_NE(nf.body.find(R"("code":"not_found")"), std::string::npos) << nf.body;
  const std::string ok = ConnectEndStream(nullptr);
  EXPECT_EQ(ok, ConnectEnvelope(kConnectFlagEndStream, "{}"));
  const std::string bad = ConnectEndStream("internal", "boom");
  EXPECT_EQ(bad[0], kConnectFlagEndStream);
  EXPECT_EQ(bad.substr(5), R"({"error":{"code":"internal","message":"boom"}})");
}

TEST(MultipartTest, SplitsThePartsAnUndiciFormDataSends) {
  const std::string body =
      std::string(
          "------b\r\n"
          "Content-Disposition: form-data; name=\"file\"; filename=\"/workspace/a b.txt\"\r\n"
          "Content-Type: application/octet-stream\r\n\r\n"
          "hello\r\nworld\r\n"
          "------b\r\n"
          "Content-Disposition: form-data; name=\"file\"; filename=\"rel/\\\"q\\\".bin\"\r\n\r\n") +
      std::string("\0\x01\x02", 3) +  // binary content, a NUL included
      "\r\n------b--\r\n";
  auto boundary = MultipartBoundary("multipart/form-data; boundary=----b");
  ASSERT_TRUE(boundary);
  EXPECT_EQ(*boundary, "----b");
  auto parts = ParseMultipart(std::string_view(body.data(), body.size()), *boundary, 10);
  ASSERT_TRUE(parts) << parts.error().ToString();
  ASSERT_EQ(parts->size(), 2u);
  EXPECT_EQ((*parts)[0].name, "file");
  EXPECT_EQ((*parts)[0].filename, "/workspace/a b.txt");
  EXPECT_EQ((*parts)[0].content_type, "application/octet-stream");
  EXPECT_EQ((*parts)[0].data, "hello\r\nworld");
  EXPECT_EQ((*parts)[1].filename, "rel/\"q\".bin");
  EXPECT_EQ((*parts)[1].data, std::string_view("\0\x01\x02", 3));
  // Exactly max_parts passes, one fewer allowed fails.
  EXPECT_TRUE(ParseMultipart(body, *boundary, 2));
  EXPECT_EQ(ParseMultipart(body, *boundary, 1).error().code(), ErrorCode::kLimitExceeded);
  // Quoted boundary, and an empty form.
  EXPECT_EQ(*MultipartBoundary("Multipart/Form-Data; boundary=\"x y\""), "x y");
  EXPECT_TRUE(ParseMultipart("--x--\r\n", "x", 1)->empty());
}

// The reader as an upload meets it: the body arrives a few bytes at a time, so delimiters and
// header blocks are split across reads; a part's data is handed out before the part ends.
TEST(MultipartTest, ReaderFindsDelimitersSplitAcrossReads) {
  const std::string data(200'000, 'd');
  const std::string body =
      "preamble\r\n--x \t\r\nContent-Disposition: form-data; name=file; "
      "filename=a\r\n\r\n" +
      data + "\r\n--x\r\n\r\n\r\n--\r\n--x--\r\nepilogue";
  for (size_t step : {size_t{1}, size_t{3}, size_t{7}, size_t{4096}}) {
    size_t at = 0, reads = 0;
    MultipartReader reader(
        [&](char* buf, size_t n) -> Result<size_t> {
          const size_t take = std::min({n, step, body.size() - at});
          std::memcpy(buf, body.data() + at, take);
          at += take;
          ++reads;
          return take;
        },
        "x", 4);
    auto first = reader.NextPart();
    ASSERT_TRUE(first && *first) << step;
    EXPECT_EQ((*first)->filename, "a");
    std::string got;
    char chunk[1000];
    size_t n;
    do {
      auto r = reader.ReadData(chunk, sizeof chunk);
      ASSERT_TRUE(r) << r.error().ToString();
      n = *r;
      got.append(chunk, n);
    } while (n != 0);
    EXPECT_EQ(got, data) << step;
    // A part without headers whose data looks like a delimiter's start but is not one.
    auto second = reader.NextPart();
    ASSERT_TRUE(second && *second) << step;
    EXPECT_EQ((*second)->name, "");
    std::string second_data;
    do {
      auto r = reader.ReadData(chunk, sizeof chunk);
      ASSERT_TRUE(r) << r.error().ToString();
      n = *r;
      second_data.append(chunk, n);
    } while (n != 0);
    EXPECT_EQ(second_data, "\r\n--");
    auto end = reader.NextPart();
    ASSERT_TRUE(end) << end.error().ToString();
    EXPECT_FALSE(*end);
    EXPECT_EQ(at, body.size()) << "the epilogue is read to the body's end";
  }
  // A source error ends the reader with it.
  MultipartReader broken([](char*, size_t) -> Result<size_t> { return Fail(Error::Timeout("t")); },
                         "x", 4);
  EXPECT_EQ(broken.NextPart().error().code(), ErrorCode::kTimeout);
}

TEST(MultipartTest, MalformedBodiesAreInvalidArgumentNeverACrash) {
  for (const char* type : {"application/json", "multipart/form-data", "multipart/form-data; x=1",
                           "multipart/form-data; boundary="}) {
    EXPECT_FALSE(MultipartBoundary(type)) << type;
  }
  EXPECT_FALSE(MultipartBoundary("multipart/form-data; boundary=" + std::string(71, 'a')));
  EXPECT_TRUE(MultipartBoundary("multipart/form-data; boundary=" + std::string(70, 'a')));
  for (const std::string& body :
       {std::string(""), std::string("no boundary"), std::string("--x"), std::string("--xjunk"),
        std::string("--x\r\nContent-Disposition: form-data\r\n\r\ndata"),
        std::string("--x\r\nno colon\r\n\r\ndata\r\n--x--"), std::string("--x\r\nA: b\r\n")}) {
    auto r = ParseMultipart(body, "x", 10);
    ASSERT_FALSE(r) << body;
    EXPECT_EQ(r.error().code(), ErrorCode::kInvalidArgument) << body;
  }
}

}  // namespace
}  // namespace asb::api
