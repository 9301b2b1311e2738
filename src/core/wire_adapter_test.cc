// core's EventStream over a sandboxd channel (wire_adapter.h): sandboxd's events become core's,
// decoded, and a malformed answer becomes an error event instead of reaching the API.
#include "core/wire_adapter.h"

#include <gtest/gtest.h>

#include <deque>

namespace asb::core::wire {
namespace {

// A channel whose events the test queues; writes and controls are recorded.
class ScriptedChannel final : public protocol::Channel {
 public:
  std::deque<protocol::ChannelEvent> events;
  std::string written;
  bool cancelled = false;

  uint32_t id() const override { return 1; }
  Result<protocol::ChannelEvent> Next(int64_t) override {
    if (events.empty()) return Fail(Error::Timeout("nothing queued"));
    protocol::ChannelEvent ev = std::move(events.front());
    events.pop_front();
    return ev;
  }
  std::optional<protocol::ChannelEvent> TryNext() override {
    if (events.empty()) return std::nullopt;
    return *Next(0);
  }
  void SetNotify(std::function<void()>) override {}
  Status Write(std::string_view data, int64_t) override {
    written += data;
    return {};
  }
  Result<size_t> TryWrite(std::string_view data) override {
    written += data;
    return data.size();
  }
  Status CloseWrite() override { return {}; }
  Status Signal(int) override { return {}; }
  Status Resize(uint16_t, uint16_t) override { return {}; }
  Status Cancel() override {
    cancelled = true;
    return {};
  }

  void Queue(protocol::ChannelEvent::Kind kind, std::string payload,
             protocol::Stream stream = protocol::Stream::kNone) {
    protocol::ChannelEvent ev;
    ev.kind = kind;
    ev.payload = std::move(payload);
    ev.stream = stream;
    events.push_back(std::move(ev));
  }
};

using Kind = protocol::ChannelEvent::Kind;

TEST(WireAdapterTest, ExecEventsAreDecodedAndTheResultCompleted) {
  auto ch = std::make_shared<ScriptedChannel>();
  ch->Queue(Kind::kData, "out", protocol::Stream::kStdout);
  ch->Queue(Kind::kData, "err", protocol::Stream::kStderr);
  ch->Queue(Kind::kEof, "", protocol::Stream::kStdout);
  protocol::ExecResult r;
  r.exit_code = 3;
  r.stdout_bytes = 3;
  ch->Queue(Kind::kResult, protocol::EncodeExecResult(r));
  auto s = WrapChannel(ch, Payloads::kExec, [](ExecResult* x) { x->oom_killed = true; });

  auto e1 = s->Next(0);
  ASSERT_TRUE(e1);
  EXPECT_EQ(e1->kind, StreamEvent::Kind::kOutput);
  EXPECT_EQ(e1->stream, OutputStream::kStdout);
  EXPECT_EQ(e1->data, "out");
  auto e2 = s->TryNext();
  ASSERT_TRUE(e2);
  EXPECT_EQ(e2->stream, OutputStream::kStderr);
  EXPECT_EQ(e2->data, "err");
  auto e3 = s->Next(0);
  ASSERT_TRUE(e3);
  EXPECT_EQ(e3->kind, StreamEvent::Kind::kEnd);
  auto done = s->Next(0);
  ASSERT_TRUE(done);
  EXPECT_EQ(done->kind, StreamEvent::Kind::kDone);
  EXPECT_TRUE(done->terminal());
  ASSERT_TRUE(done->exec_result);
  EXPECT_EQ(done->exec_result->exit_code, 3);
  EXPECT_EQ(done->exec_result->stdout_bytes, 3u);
  EXPECT_TRUE(done->exec_result->oom_killed);  // the host's figures were filled in
}

TEST(WireAdapterTest, AMalformedResultIsABackendErrorEvent) {
  auto ch = std::make_shared<ScriptedChannel>();
  ch->Queue(Kind::kResult, "{\"exit_code\":\"three\"}");
  auto done = WrapChannel(ch, Payloads::kExec)->Next(0);
  ASSERT_TRUE(done);
  EXPECT_EQ(done->kind, StreamEvent::Kind::kError);
  ASSERT_TRUE(done->error);
  EXPECT_EQ(done->error->code(), ErrorCode::kBackend);
  EXPECT_FALSE(done->exec_result);
}

TEST(WireAdapterTest, ProcessAttachmentInfoIsTheProcessOrTheSkippedBytes) {
  auto ch = std::make_shared<ScriptedChannel>();
  protocol::ProcInfo p;
  p.pid = 7;
  p.state = "exited";
  p.exit_code = 0;
  p.output_bytes = 9;
  ch->Queue(Kind::kInfo, protocol::EncodeProcInfo(p));
  ch->Queue(Kind::kInfo, "{\"skipped\":4096}");
  ch->Queue(Kind::kResult, protocol::EncodeProcInfo(p));
  auto s = WrapChannel(ch, Payloads::kProcess);
  auto info = s->Next(0);
  ASSERT_TRUE(info);
  EXPECT_EQ(info->kind, StreamEvent::Kind::kInfo);
  ASSERT_TRUE(info->process);
  EXPECT_EQ(info->process->pid, 7);
  EXPECT_EQ(info->process->output_bytes, 9u);
  auto skipped = s->Next(0);
  ASSERT_TRUE(skipped);
  EXPECT_EQ(skipped->skipped_bytes, 4096u);
  EXPECT_FALSE(skipped->process);
  auto done = s->Next(0);
  ASSERT_TRUE(done);
  EXPECT_EQ(done->kind, StreamEvent::Kind::kDone);
  ASSERT_TRUE(done->process);
  EXPECT_EQ(done->process->state, "exited");
}

TEST(WireAdapterTest, ErrorsPassThroughAndControlsReachTheChannel) {
  auto ch = std::make_shared<ScriptedChannel>();
  protocol::ChannelEvent ev;
  ev.kind = Kind::kError;
  ev.error = Error::TooLarge("file over the limit");
  ch->events.push_back(ev);
  auto s = WrapChannel(ch, Payloads::kFileWrite);
  ASSERT_TRUE(s->Write("abc"));
  ASSERT_TRUE(s->Cancel());
  EXPECT_EQ(ch->written, "abc");
  EXPECT_TRUE(ch->cancelled);
  auto e = s->Next(0);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->kind, StreamEvent::Kind::kError);
  EXPECT_EQ(e->error->code(), ErrorCode::kTooLarge);
  EXPECT_EQ(s->Next(0).error().code(), ErrorCode::kTimeout);  // the channel's own answer
}

TEST(WireAdapterTest, ValuesConvertFieldByField) {
  protocol::FileStat w{"/workspace/a", "a",  "symlink", 5,   0644,
                       1000,           1000, 1234,      "b", {{"k", "v"}}};
  FileStat c = FromWire(w);
  EXPECT_EQ(c.metadata, (std::map<std::string, std::string>{{"k", "v"}}));
  EXPECT_EQ(c.path, "/workspace/a");
  EXPECT_EQ(c.type, "symlink");
  EXPECT_EQ(c.size, 5u);
  EXPECT_EQ(c.mode, 0644u);
  EXPECT_EQ(c.mtime_ms, 1234);
  EXPECT_EQ(c.link_target, "b");
  Result<std::vector<protocol::FileStat>> list = std::vector<protocol::FileStat>{w, w};
  auto converted = FromWire(std::move(list));
  ASSERT_TRUE(converted);
  EXPECT_EQ(converted->size(), 2u);
  Result<protocol::FileStat> failed = Fail(Error::NotFound("no such file"));
  EXPECT_EQ(FromWire(std::move(failed)).error().code(), ErrorCode::kNotFound);
}

}  // namespace
}  // namespace asb::core::wire
