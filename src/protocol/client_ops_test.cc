// The convenience operations (client_ops.cc) against a fake sandboxd that implements each op's
// frame sequence from docs/design/sandbox-protocol.md over an in-memory file table.
#include <gtest/gtest.h>

#include <map>

#include "protocol/client.h"
#include "protocol/client_ops_internal.h"
#include "protocol/client_test_peer.h"

namespace asb::protocol {
namespace {

using testing::FakeSandboxd;
using testing::MakePair;

FileStat StatOf(const std::string& path, uint64_t size, std::string type = "file") {
  FileStat s;
  s.path = path;
  s.name = path.substr(path.rfind('/') + 1);
  s.type = std::move(type);
  s.size = size;
  s.mode = s.type == "dir" ? 0755 : 0644;
  s.uid = s.gid = 1000;
  return s;
}

void SendError(FakeSandboxd& d, uint32_t ch, const Error& e) {
  d.Send(ch, FrameType::kError, Stream::kNone, EncodeWireError(ToWireError(e)));
}

/// A sandboxd stand-in: one in-memory directory of files, and a few scripted commands.
class MiniSandboxd {
 public:
  std::map<std::string, std::string> files;
  std::mutex mu;
  std::vector<std::string> opens;  // OPEN bodies, in arrival order

  void Install(FakeSandboxd& d) {
    d.on_open = [this](FakeSandboxd& d, uint32_t ch, const std::string& body) {
      {
        std::lock_guard<std::mutex> l(mu);
        opens.push_back(body);
      }
      auto op = DecodeOpName(body);
      if (!op) return SendError(d, ch, op.error());
      if (*op == "exec") return Exec(d, ch, body);
      if (*op == "file.read") return Read(d, ch, body);
      if (*op == "file.write") return Write(d, ch, body);
      if (*op == "file.list") return List(d, ch);
      if (*op == "file.stat") {
        auto r = DecodeFileStatRequest(body);
        std::lock_guard<std::mutex> l(mu);
        auto it = files.find(r->path);
        if (it == files.end()) return SendError(d, ch, Error::FromErrno(ENOENT, "stat " + r->path));
        d.Send(ch, FrameType::kResult, Stream::kNone,
               EncodeFileStat(StatOf(r->path, it->second.size())));
        return;
      }
      if (*op == "file.mkdir") {
        auto r = DecodeFileMkdirRequest(body);
        d.Send(ch, FrameType::kResult, Stream::kNone, EncodeFileStat(StatOf(r->path, 0, "dir")));
        return;
      }
      if (*op == "file.remove") {
        auto r = DecodeFileRemoveRequest(body);
        std::lock_guard<std::mutex> l(mu);
        if (files.erase(r->path) == 0) return SendError(d, ch, Error::NotFound("no " + r->path));
        d.Send(ch, FrameType::kResult, Stream::kNone, "{}");
        return;
      }
      if (*op == "file.move") {
        auto r = DecodeFileMoveRequest(body);
        std::lock_guard<std::mutex> l(mu);
        if (!r->overwrite && files.count(r->to)) return SendError(d, ch, Error::Conflict("exists"));
        auto node = files.extract(r->from);
        if (node.empty()) return SendError(d, ch, Error::NotFound("no " + r->from));
        node.key() = r->to;
        uint64_t size = node.mapped().size();
        files.insert(std::move(node));
        d.Send(ch, FrameType::kResult, Stream::kNone, EncodeFileStat(StatOf(r->to, size)));
        return;
      }
      if (*op == "kill.all") {
        d.Send(ch, FrameType::kResult, Stream::kNone, R"({"killed":3})");
        return;
      }
      SendError(d, ch, Error::InvalidArgument("unknown op " + *op));
    };
  }

 private:
  void Exec(FakeSandboxd& d, uint32_t ch, const std::string& body) {
    auto req = DecodeExecRequest(body);
    if (!req) return SendError(d, ch, req.error());
    if (req->cwd == "/nope") {
      return SendError(d, ch, Error::FromErrno(ENOENT, "cwd /nope"));
    }
    d.Send(ch, FrameType::kInfo, Stream::kNone, R"({"pid":2})");
    ExecResult res;
    res.exit_code = 0;
    std::string cmd = req->command.value_or(req->argv.empty() ? "" : req->argv[0]);
    if (req->stdin_pipe) {  // cat
      d.WaitFrame([ch](const Frame& f) { return f.channel == ch && f.type == FrameType::kEof; },
                  20000);
      std::string in = d.StdinOf(ch);
      d.SendData(ch, Stream::kStdout, in);
      res.stdout_bytes = in.size();
    } else if (cmd == "hang" || cmd == "hang-hard") {  // a sandboxd that misses the timeout
      d.SendData(ch, Stream::kStdout, "partial");
      auto cancel = d.WaitFrame(
          [ch](const Frame& f) { return f.channel == ch && f.type == FrameType::kCancel; }, 20000);
      if (cmd == "hang" && cancel) {
        SendError(d, ch, Error::Cancelled("cancelled by the host"));
      }
      return;                     // "hang-hard" never answers at all
    } else if (cmd == "flood") {  // a broken sandboxd that ignores the caps
      d.SendData(ch, Stream::kStdout, std::string(80, 'o'));
      d.SendData(ch, Stream::kStderr, std::string(80, 'e'));
      res.stdout_bytes = res.stderr_bytes = 80;
    } else {
      d.SendData(ch, Stream::kStdout, "hi\n");
      d.SendData(ch, Stream::kStderr, "warn\n");
      res.stdout_bytes = 3;
      res.stderr_bytes = 5;
      res.exit_code = 3;
    }
    d.Send(ch, FrameType::kEof, Stream::kStdout, "");
    d.Send(ch, FrameType::kEof, Stream::kStderr, "");
    d.Send(ch, FrameType::kResult, Stream::kNone, EncodeExecResult(res));
  }

  void Read(FakeSandboxd& d, uint32_t ch, const std::string& body) {
    auto req = DecodeFileReadRequest(body);
    std::string data;
    {
      std::lock_guard<std::mutex> l(mu);
      auto it = files.find(req->path);
      if (it == files.end()) return SendError(d, ch, Error::FromErrno(ENOENT, "open " + req->path));
      data = it->second;
    }
    d.Send(ch, FrameType::kInfo, Stream::kNone, EncodeFileStat(StatOf(req->path, data.size())));
    d.SendData(ch, Stream::kStdout, data);
    d.Send(ch, FrameType::kEof, Stream::kStdout, "");
    d.Send(ch, FrameType::kResult, Stream::kNone, "{}");
  }

  void Write(FakeSandboxd& d, uint32_t ch, const std::string& body) {
    auto req = DecodeFileWriteRequest(body);
    bool too_big = false;
    d.WaitUntil(
        [&] {
          too_big = req->max_bytes != 0 && d.StdinOfLocked(ch).size() > req->max_bytes;
          return too_big || d.HasFrameLocked(ch, FrameType::kEof);
        },
        20000);
    if (too_big) {
      return SendError(
          d, ch, Error::TooLarge("upload exceeds " + std::to_string(req->max_bytes) + " bytes"));
    }
    std::string data = d.StdinOf(ch);
    {
      std::lock_guard<std::mutex> l(mu);
      files[req->path] = data;
    }
    d.Send(ch, FrameType::kResult, Stream::kNone, EncodeFileStat(StatOf(req->path, data.size())));
  }

  void List(FakeSandboxd& d, uint32_t ch) {
    std::vector<FileStat> all;
    {
      std::lock_guard<std::mutex> l(mu);
      for (const auto& [path, data] : files) all.push_back(StatOf(path, data.size()));
    }
    // Two INFO batches, as a large listing would be split.
    size_t half = all.size() / 2;
    d.Send(ch, FrameType::kInfo, Stream::kNone,
           EncodeFileStatList(std::vector<FileStat>(all.begin(), all.begin() + half)));
    d.Send(ch, FrameType::kInfo, Stream::kNone,
           EncodeFileStatList(std::vector<FileStat>(all.begin() + half, all.end())));
    d.Send(ch, FrameType::kResult, Stream::kNone, "{\"count\":" + std::to_string(all.size()) + "}");
  }
};

class ClientOpsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto p = MakePair([this](FakeSandboxd& d) { mini_.Install(d); });
    ASSERT_TRUE(p) << p.error().ToString();
    pair_ = std::move(*p);
  }
  Connection& conn() { return *pair_.conn; }
  std::string LastOpen() {
    std::lock_guard<std::mutex> l(mini_.mu);
    return mini_.opens.empty() ? "" : mini_.opens.back();
  }

  MiniSandboxd mini_;
  testing::Pair pair_;
};

TEST_F(ClientOpsTest, ExecCollectSeparatesStreams) {
  ExecRequest req;
  req.command = "echo hi; echo warn >&2; exit 3";
  auto r = ExecCollect(conn(), req);
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_EQ(r->stdout_data, "hi\n");
  EXPECT_EQ(r->stderr_data, "warn\n");
  EXPECT_EQ(r->result.exit_code, 3);
  EXPECT_EQ(r->result.stdout_bytes, 3u);
  EXPECT_FALSE(r->result.stdout_truncated);
  EXPECT_EQ(LastOpen(), EncodeExecRequest(req));
}

TEST_F(ClientOpsTest, ExecCollectFeedsStdin) {
  ExecRequest req;
  req.argv = {"cat"};
  req.stdin_pipe = true;
  std::string in(3 * 1024 * 1024 + 7, '\0');
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<char>(i * 131 % 251);
  auto r = ExecCollect(conn(), req, in);
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_EQ(r->stdout_data.size(), in.size());
  EXPECT_TRUE(r->stdout_data == in);
}

TEST_F(ClientOpsTest, ExecCollectEnforcesCapsOnTheHostToo) {
  ExecRequest req;
  req.argv = {"flood"};
  req.max_output_bytes = 100;
  auto r = ExecCollect(conn(), req);
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_EQ(r->stdout_data, std::string(80, 'o'));
  EXPECT_EQ(r->stderr_data, std::string(20, 'e'));
  EXPECT_FALSE(r->result.stdout_truncated);
  EXPECT_TRUE(r->result.stderr_truncated);
  EXPECT_EQ(r->result.stderr_bytes, 80u);  // sandboxd's count stands

  req.max_output_bytes = 0;
  req.max_stdout_bytes = 10;
  r = ExecCollect(conn(), req);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->stdout_data.size(), 10u);
  EXPECT_EQ(r->stderr_data.size(), 80u);
  EXPECT_TRUE(r->result.stdout_truncated);
  EXPECT_FALSE(r->result.stderr_truncated);
}

TEST_F(ClientOpsTest, ExecCollectReturnsSandboxdErrors) {
  ExecRequest req;
  req.argv = {"true"};
  req.cwd = "/nope";
  auto r = ExecCollect(conn(), req);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), ErrorCode::kNotFound);
  EXPECT_EQ(r.error().sys_errno(), ENOENT);
}

TEST_F(ClientOpsTest, HostCancelsAnExecThatSandboxdDoesNotEndInTime) {
  ExecRequest req;
  req.argv = {"hang"};
  req.timeout_ms = 50;
  req.kill_grace_ms = 50;
  auto start = std::chrono::steady_clock::now();
  auto r = internal::ExecCollectWithDeadline(conn(), req, {}, {100, 5000});
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                                  start)
                .count();
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), ErrorCode::kTimeout);
  EXPECT_NE(r.error().message().find("cancelled by the host"), std::string::npos);
  EXPECT_GE(ms, 190);   // 50 + 50 + 100
  EXPECT_LT(ms, 4000);  // answered by the CANCEL, not by cancel_wait_ms
  EXPECT_TRUE(pair_.fake->WaitFrame([](const Frame& f) { return f.type == FrameType::kCancel; }));
}

TEST_F(ClientOpsTest, HostGivesUpWhenEvenCancelIsNotAnswered) {
  ExecRequest req;
  req.argv = {"hang-hard"};
  req.timeout_ms = 20;
  req.kill_grace_ms = 0;
  auto start = std::chrono::steady_clock::now();
  auto r = internal::ExecCollectWithDeadline(conn(), req, {}, {30, 150});
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                                  start)
                .count();
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), ErrorCode::kTimeout);
  EXPECT_NE(r.error().message().find("did not end the command"), std::string::npos);
  EXPECT_GE(ms, 190);  // 20 + 30, then 150 waiting for the answer to CANCEL
  EXPECT_TRUE(conn().alive());
}

TEST_F(ClientOpsTest, WriteThenReadBinaryFiles) {
  std::string big(2 * 1024 * 1024 + 3, '\0');
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>(i * 7 % 256);
  for (const std::string& data : {std::string(), std::string("a\0b\xff", 4), big}) {
    FileWriteRequest w;
    w.path = "/workspace/f.bin";
    auto st = WriteFile(conn(), w, data);
    ASSERT_TRUE(st) << st.error().ToString();
    EXPECT_EQ(st->size, data.size());
    EXPECT_EQ(st->path, "/workspace/f.bin");
    FileReadRequest r;
    r.path = "/workspace/f.bin";
    auto got = ReadFile(conn(), r);
    ASSERT_TRUE(got) << got.error().ToString();
    EXPECT_EQ(got->size(), data.size());
    EXPECT_TRUE(*got == data);
  }
}

TEST_F(ClientOpsTest, ReadMissingFileIsNotFound) {
  FileReadRequest r;
  r.path = "/workspace/missing";
  auto got = ReadFile(conn(), r);
  ASSERT_FALSE(got);
  EXPECT_EQ(got.error().code(), ErrorCode::kNotFound);
}

TEST_F(ClientOpsTest, OversizeUploadReportsSandboxdsError) {
  FileWriteRequest w;
  w.path = "/workspace/big";
  w.max_bytes = 10;
  // Larger than the initial window, so the upload is still in flight when sandboxd refuses.
  auto st = WriteFile(conn(), w, std::string(kInitialWindow * 3, 'x'));
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().code(), ErrorCode::kTooLarge);
  EXPECT_TRUE(conn().alive());
}

TEST_F(ClientOpsTest, ListStatMkdirMoveRemoveKillAll) {
  {
    std::lock_guard<std::mutex> l(mini_.mu);
    mini_.files = {{"/workspace/.env", "x"}, {"/workspace/a", "aa"}, {"/workspace/b", "bbb"}};
  }
  FileListRequest lr;
  lr.path = "/workspace";
  auto list = ListFiles(conn(), lr);
  ASSERT_TRUE(list) << list.error().ToString();
  ASSERT_EQ(list->size(), 3u);
  EXPECT_EQ((*list)[0].name, ".env");
  EXPECT_EQ((*list)[2].size, 3u);

  lr.max_entries = 2;  // the host refuses to collect more than asked for
  auto capped = ListFiles(conn(), lr);
  ASSERT_FALSE(capped);
  EXPECT_EQ(capped.error().code(), ErrorCode::kLimitExceeded);

  // The byte budget, checked by the host too: this fake sandboxd ignores max_bytes, as a
  // hostile one would. Paths 15 + 12 + 12 bytes, plus the fixed cost of each entry.
  lr.max_entries = 100000;
  lr.max_bytes = 15 + 12 + 12 + 3 * kListingEntryCost;
  auto at_budget = ListFiles(conn(), lr);
  ASSERT_TRUE(at_budget) << at_budget.error().ToString();
  EXPECT_EQ(at_budget->size(), 3u);
  lr.max_bytes -= 1;
  auto over_budget = ListFiles(conn(), lr);
  ASSERT_FALSE(over_budget);
  EXPECT_EQ(over_budget.error().code(), ErrorCode::kTooLarge);
  EXPECT_EQ(over_budget.error().message(), "listing exceeds " + std::to_string(lr.max_bytes) +
                                               " bytes; list a narrower path or without recursive");
  EXPECT_TRUE(conn().alive());

  FileStatRequest sr;
  sr.path = "/workspace/a";
  auto st = StatFile(conn(), sr);
  ASSERT_TRUE(st);
  EXPECT_EQ(st->size, 2u);
  sr.path = "/workspace/zz";
  EXPECT_EQ(StatFile(conn(), sr).error().code(), ErrorCode::kNotFound);

  FileMkdirRequest mr;
  mr.path = "/workspace/d";
  auto md = MakeDir(conn(), mr);
  ASSERT_TRUE(md);
  EXPECT_EQ(md->type, "dir");
  EXPECT_EQ(LastOpen(), EncodeFileMkdirRequest(mr));

  FileMoveRequest mv;
  mv.from = "/workspace/a";
  mv.to = "/workspace/b";
  EXPECT_EQ(MoveFile(conn(), mv).error().code(), ErrorCode::kConflict);
  mv.overwrite = true;
  auto moved = MoveFile(conn(), mv);
  ASSERT_TRUE(moved);
  EXPECT_EQ(moved->path, "/workspace/b");
  EXPECT_EQ(moved->size, 2u);

  FileRemoveRequest rr;
  rr.path = "/workspace/b";
  EXPECT_TRUE(RemoveFile(conn(), rr));
  EXPECT_EQ(RemoveFile(conn(), rr).error().code(), ErrorCode::kNotFound);

  auto killed = KillAll(conn());
  ASSERT_TRUE(killed);
  EXPECT_EQ(*killed, 3u);
  EXPECT_EQ(LastOpen(), R"({"op":"kill.all"})");
}

TEST_F(ClientOpsTest, ManyOpsInParallelOnOneConnection) {
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 10; ++i) {
        FileWriteRequest w;
        w.path = "/workspace/t" + std::to_string(t) + "_" + std::to_string(i);
        std::string data(1000 * (i + 1) + t, static_cast<char>('a' + t));
        if (!WriteFile(conn(), w, data)) continue;
        FileReadRequest r;
        r.path = w.path;
        auto got = ReadFile(conn(), r);
        ExecRequest e;
        e.argv = {"echo"};
        auto ex = ExecCollect(conn(), e);
        if (got && *got == data && ex && ex->stdout_data == "hi\n") ++ok;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok.load(), 80);
}

TEST_F(ClientOpsTest, OpsFailWithBackendErrorAfterConnectionLoss) {
  pair_.fake->Disconnect();
  for (int i = 0; i < 500 && conn().alive(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  ExecRequest e;
  e.argv = {"true"};
  auto r = ExecCollect(conn(), e);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), ErrorCode::kBackend);
  EXPECT_EQ(KillAll(conn()).error().code(), ErrorCode::kBackend);
}

}  // namespace
}  // namespace asb::protocol
