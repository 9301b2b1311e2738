// Golden-bytes tests of the frame codec: the exact bytes of representative frames are pinned
// here, so any change to the header layout, an enum value, a constant or an encoder's member order
// fails. If one of these fails you changed the wire format: undo it, or bump kProtocolVersion
// and follow docs/design/sandbox-protocol.md, "Versioning". Never just paste the new hex.
#include "protocol/frame.h"

#include <gtest/gtest.h>

#include "protocol/messages.h"

namespace asb::protocol {
namespace {

std::string Hex(std::string_view bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out += kDigits[c >> 4];
    out += kDigits[c & 15];
  }
  return out;
}

std::string Unhex(std::string_view hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    out += static_cast<char>(std::stoi(std::string(hex.substr(i, 2)), nullptr, 16));
  }
  return out;
}

std::string Encoded(const Frame& f) {
  std::string out;
  EncodeFrame(f, &out);
  return out;
}

// Each constant: header (length, channel, type, stream, reserved), then the payload. The
// payloads are the hex of the JSON texts in the design document's examples.
// clang-format off
constexpr char kHelloHex[] =
    "42000000" "00000000" "01" "00" "0000"
    "7b226d696e5f76657273696f6e223a312c226d61785f76657273696f6e223a312c22736f667477617265223a"
    "226167656e742d73616e64626f7820302e312e30227d";
constexpr char kOpenExecHex[] =
    "d2000000" "01000000" "02" "00" "0000"
    "7b226f70223a2265786563222c2261726776223a5b226563686f222c226869225d2c22656e76223a7b224122"
    "3a2231227d2c22637764223a222f776f726b7370616365222c2275736572223a2273616e64626f78222c2274"
    "696d656f75745f6d73223a353030302c226b696c6c5f67726163655f6d73223a323030302c22737464696e5f"
    "70697065223a66616c73652c226d61785f7374646f75745f6279746573223a313032342c226d61785f737464"
    "6572725f6279746573223a302c226d61785f6f75747075745f6279746573223a307d";
constexpr char kDataStdoutHex[] =
    "03000000" "01000000" "03" "01" "0000"
    "68690a";
constexpr char kWindowHex[] =
    "04000000" "01000000" "05" "01" "0000"
    "00000200";
constexpr char kEofStdoutHex[] =
    "00000000" "01000000" "04" "01" "0000";
constexpr char kResultHex[] =
    "a3000000" "01000000" "08" "00" "0000"
    "7b22657869745f636f6465223a302c227369676e616c223a302c2274696d65645f6f7574223a66616c73652c"
    "227374646f75745f7472756e6361746564223a66616c73652c227374646572725f7472756e6361746564223a"
    "66616c73652c227374646f75745f6279746573223a332c227374646572725f6279746573223a302c22647572"
    "6174696f6e5f6d73223a342c226f6f6d5f6b696c6c6564223a66616c73657d";
constexpr char kErrorHex[] =
    "37000000" "03000000" "09" "00" "0000"
    "7b22636f6465223a226e6f745f666f756e64222c226572726e6f223a322c226d657373616765223a226e6f20"
    "737563682066696c65227d";

// clang-format on

// ---- golden bytes ----------------------------------------------------------------------------

TEST(FrameGoldenTest, HostHello) {
  Hello h{kMinProtocolVersion, kProtocolVersion, 0, "agent-sandbox 0.1.0"};
  EXPECT_EQ(Hex(Encoded({0, FrameType::kHello, Stream::kNone, EncodeHello(h)})), kHelloHex);
}

TEST(FrameGoldenTest, OpenExec) {
  ExecRequest r;
  r.argv = {"echo", "hi"};
  r.env = {{"A", "1"}};
  r.timeout_ms = 5000;
  r.max_stdout_bytes = 1024;
  EXPECT_EQ(Hex(Encoded({1, FrameType::kOpen, Stream::kNone, EncodeExecRequest(r)})), kOpenExecHex);
}

TEST(FrameGoldenTest, DataStdout) {
  EXPECT_EQ(Hex(Encoded({1, FrameType::kData, Stream::kStdout, "hi\n"})), kDataStdoutHex);
}

TEST(FrameGoldenTest, Window) {
  EXPECT_EQ(Hex(Encoded({1, FrameType::kWindow, Stream::kStdout, EncodeWindowIncrement(131072)})),
            kWindowHex);
}

TEST(FrameGoldenTest, EofStdout) {
  EXPECT_EQ(Hex(Encoded({1, FrameType::kEof, Stream::kStdout, ""})), kEofStdoutHex);
}

TEST(FrameGoldenTest, ResultExec) {
  ExecResult r;
  r.exit_code = 0;
  r.stdout_bytes = 3;
  r.duration_ms = 4;
  EXPECT_EQ(Hex(Encoded({1, FrameType::kResult, Stream::kNone, EncodeExecResult(r)})), kResultHex);
}

TEST(FrameGoldenTest, Error) {
  WireError w{"not_found", 2, "no such file"};
  EXPECT_EQ(Hex(Encoded({3, FrameType::kError, Stream::kNone, EncodeWireError(w)})), kErrorHex);
}

TEST(FrameGoldenTest, ConstantsAndEnumValues) {
  // The numbers the design document promises; changing any of them is a version bump.
  EXPECT_EQ(kProtocolVersion, 1u);
  EXPECT_EQ(kMinProtocolVersion, 1u);
  EXPECT_EQ(kFrameHeaderSize, 12u);
  EXPECT_EQ(kMaxFramePayload, 1048576u);
  EXPECT_EQ(kDataChunkSize, 65536u);
  EXPECT_EQ(kInitialWindow, 262144u);
  const std::pair<FrameType, int> types[] = {
      {FrameType::kHello, 1},   {FrameType::kOpen, 2},    {FrameType::kData, 3},
      {FrameType::kEof, 4},     {FrameType::kWindow, 5},  {FrameType::kSignal, 6},
      {FrameType::kInfo, 7},    {FrameType::kResult, 8},  {FrameType::kError, 9},
      {FrameType::kCancel, 10}, {FrameType::kResize, 11}, {FrameType::kPing, 12},
      {FrameType::kPong, 13}};
  for (auto [t, v] : types) EXPECT_EQ(static_cast<int>(t), v) << FrameTypeName(t);
  EXPECT_EQ(static_cast<int>(Stream::kStdin), 0);
  EXPECT_EQ(static_cast<int>(Stream::kStdout), 1);
  EXPECT_EQ(static_cast<int>(Stream::kStderr), 2);
}

TEST(FrameGoldenTest, HeaderMatchesEncodeFrame) {
  char header[kFrameHeaderSize];
  EncodeFrameHeader(0x01020304, FrameType::kData, Stream::kStderr, 0xa0b0c0d, header);
  EXPECT_EQ(Hex(std::string_view(header, kFrameHeaderSize)),
            "0d0c0b0a"
            "04030201"
            "03"
            "02"
            "0000");
}

TEST(FrameTest, TypeNames) {
  EXPECT_EQ(FrameTypeName(FrameType::kHello), "HELLO");
  EXPECT_EQ(FrameTypeName(FrameType::kWindow), "WINDOW");
  EXPECT_EQ(FrameTypeName(FrameType::kPong), "PONG");
  EXPECT_EQ(FrameTypeName(static_cast<FrameType>(99)), "UNKNOWN");
}

// ---- decoder ---------------------------------------------------------------------------------

// Every golden frame back to back: what a peer would send in one exec.
std::string GoldenStream() {
  return Unhex(std::string(kHelloHex) + kOpenExecHex + kDataStdoutHex + kWindowHex + kEofStdoutHex +
               kResultHex + kErrorHex);
}

void ExpectGoldenFrames(const std::vector<Frame>& frames) {
  ASSERT_EQ(frames.size(), 7u);
  EXPECT_EQ(frames[0].type, FrameType::kHello);
  EXPECT_EQ(frames[0].channel, 0u);
  auto hello = DecodeHello(frames[0].payload);
  ASSERT_TRUE(hello);
  EXPECT_EQ(hello->software, "agent-sandbox 0.1.0");
  EXPECT_EQ(frames[1].type, FrameType::kOpen);
  EXPECT_EQ(frames[1].channel, 1u);
  auto open = DecodeExecRequest(frames[1].payload);
  ASSERT_TRUE(open);
  EXPECT_EQ(open->argv, (std::vector<std::string>{"echo", "hi"}));
  EXPECT_EQ(frames[2].type, FrameType::kData);
  EXPECT_EQ(frames[2].stream, Stream::kStdout);
  EXPECT_EQ(frames[2].payload, "hi\n");
  EXPECT_EQ(frames[3].type, FrameType::kWindow);
  auto inc = DecodeWindowIncrement(frames[3].payload);
  ASSERT_TRUE(inc);
  EXPECT_EQ(*inc, 131072u);
  EXPECT_EQ(frames[4].type, FrameType::kEof);
  EXPECT_EQ(frames[4].payload, "");
  EXPECT_EQ(frames[5].type, FrameType::kResult);
  auto res = DecodeExecResult(frames[5].payload);
  ASSERT_TRUE(res);
  EXPECT_EQ(res->stdout_bytes, 3u);
  EXPECT_EQ(frames[6].type, FrameType::kError);
  EXPECT_EQ(frames[6].channel, 3u);
}

TEST(FrameDecoderTest, WholeStreamAtOnce) {
  FrameDecoder d;
  d.Feed(GoldenStream());
  std::vector<Frame> frames;
  while (true) {
    auto next = d.Next();
    ASSERT_TRUE(next) << next.error().ToString();
    if (!next->has_value()) break;
    frames.push_back(std::move(**next));
  }
  ExpectGoldenFrames(frames);
  EXPECT_EQ(d.buffered(), 0u);
}

TEST(FrameDecoderTest, SplitAtEveryByteBoundary) {
  const std::string all = GoldenStream();
  for (size_t split = 0; split <= all.size(); ++split) {
    FrameDecoder d;
    std::vector<Frame> frames;
    auto drain = [&] {
      while (true) {
        auto next = d.Next();
        ASSERT_TRUE(next) << next.error().ToString();
        if (!next->has_value()) return;
        frames.push_back(std::move(**next));
      }
    };
    d.Feed(std::string_view(all).substr(0, split));
    drain();
    d.Feed(std::string_view(all).substr(split));
    drain();
    ExpectGoldenFrames(frames);
    EXPECT_EQ(d.buffered(), 0u) << "split at " << split;
  }
}

TEST(FrameDecoderTest, OneByteAtATime) {
  const std::string all = GoldenStream();
  FrameDecoder d;
  std::vector<Frame> frames;
  for (char c : all) {
    d.Feed(std::string_view(&c, 1));
    auto next = d.Next();
    ASSERT_TRUE(next);
    if (next->has_value()) frames.push_back(std::move(**next));
  }
  ExpectGoldenFrames(frames);
}

TEST(FrameDecoderTest, MaxPayloadIsAcceptedOversizeIsRejectedBeforeBuffering) {
  std::string big(kMaxFramePayload, 'x');
  std::string bytes;
  EncodeFrame({5, FrameType::kData, Stream::kStdout, big}, &bytes);
  FrameDecoder d;
  d.Feed(bytes);
  auto ok = d.Next();
  ASSERT_TRUE(ok);
  ASSERT_TRUE(ok->has_value());
  EXPECT_EQ((*ok)->payload.size(), kMaxFramePayload);

  // A header claiming kMaxFramePayload + 1 is rejected as soon as the header is complete.
  char header[kFrameHeaderSize];
  EncodeFrameHeader(5, FrameType::kData, Stream::kStdout, kMaxFramePayload + 1, header);
  FrameDecoder d2;
  d2.Feed(std::string_view(header, kFrameHeaderSize));
  auto bad = d2.Next();
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code(), ErrorCode::kBackend);
  EXPECT_NE(bad.error().message().find("exceeds"), std::string::npos);

  EncodeFrameHeader(5, FrameType::kData, Stream::kStdout, 0xffffffffu, header);
  FrameDecoder d3;
  d3.Feed(std::string_view(header, kFrameHeaderSize));
  EXPECT_FALSE(d3.Next());
}

TEST(FrameDecoderTest, UnknownTypeRejected) {
  for (int type : {0, 14, 255}) {
    std::string bytes = Unhex(
                            "00000000"
                            "01000000") +
                        static_cast<char>(type) + Unhex("000000");
    FrameDecoder d;
    d.Feed(bytes);
    auto r = d.Next();
    ASSERT_FALSE(r) << type;
    EXPECT_EQ(r.error().code(), ErrorCode::kBackend);
    EXPECT_NE(r.error().message().find("unknown frame type"), std::string::npos);
  }
}

TEST(FrameDecoderTest, ReservedBitsRejected) {
  for (const char* reserved : {"0100", "0001", "ffff"}) {
    FrameDecoder d;
    d.Feed(Unhex(std::string("00000000"
                             "01000000"
                             "03"
                             "01") +
                 reserved));
    auto r = d.Next();
    ASSERT_FALSE(r) << reserved;
    EXPECT_NE(r.error().message().find("reserved"), std::string::npos);
  }
}

TEST(FrameDecoderTest, PartialHeaderWaits) {
  FrameDecoder d;
  d.Feed(Unhex("0300000001"));
  auto r = d.Next();
  ASSERT_TRUE(r);
  EXPECT_FALSE(r->has_value());
  EXPECT_EQ(d.buffered(), 5u);
}

TEST(FrameDecoderTest, LongRunningBufferIsCompacted) {
  // Many frames through one decoder, fed in uneven pieces: all come out intact.
  std::string stream;
  for (uint32_t i = 0; i < 2000; ++i) {
    EncodeFrame({2 * i + 1, FrameType::kData, Stream::kStdout, std::string(i % 700, 'a' + i % 26)},
                &stream);
  }
  FrameDecoder d;
  uint32_t seen = 0;
  for (size_t pos = 0; pos < stream.size(); pos += 997) {
    d.Feed(std::string_view(stream).substr(pos, 997));
    while (true) {
      auto next = d.Next();
      ASSERT_TRUE(next);
      if (!next->has_value()) break;
      const Frame& f = **next;
      ASSERT_EQ(f.channel, 2 * seen + 1);
      ASSERT_EQ(f.payload, std::string(seen % 700, 'a' + seen % 26));
      ++seen;
    }
  }
  EXPECT_EQ(seen, 2000u);
  EXPECT_EQ(d.buffered(), 0u);
}

TEST(FrameTest, WindowIncrement) {
  EXPECT_EQ(Hex(EncodeWindowIncrement(0x01020304)), "04030201");
  auto v = DecodeWindowIncrement(EncodeWindowIncrement(kInitialWindow));
  ASSERT_TRUE(v);
  EXPECT_EQ(*v, kInitialWindow);
  EXPECT_FALSE(DecodeWindowIncrement("abc"));
  EXPECT_FALSE(DecodeWindowIncrement("abcde"));
  EXPECT_FALSE(DecodeWindowIncrement(""));
}

}  // namespace
}  // namespace asb::protocol
