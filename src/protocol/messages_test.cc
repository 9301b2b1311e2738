// Golden JSON strings and round trips for every protocol message. A failing golden string means
// the wire format changed: see docs/design/sandbox-protocol.md, "Versioning", before editing it.
#include "protocol/messages.h"

#include <gtest/gtest.h>

#include "protocol/env_messages.h"

namespace asb::protocol {
namespace {

constexpr char kScopeJson[] = R"("scope":{"user":"sandbox","beneath_workspace":true})";

FileStat SampleStat() {
  FileStat s;
  s.path = "/workspace/a.txt";
  s.name = "a.txt";
  s.type = "file";
  s.size = 3;
  s.mode = 0644;
  s.uid = 1000;
  s.gid = 1000;
  s.mtime_ms = 1764410000000;
  return s;
}

constexpr char kSampleStatJson[] =
    R"({"path":"/workspace/a.txt","name":"a.txt","type":"file","size":3,"mode":420,"uid":1000,)"
    R"("gid":1000,"mtime_ms":1764410000000,"link_target":"","metadata":{}})";

// ---- HELLO -----------------------------------------------------------------------------------

TEST(MessagesTest, HelloFromHostOmitsVersion) {
  Hello h{1, 1, 0, "agent-sandbox 0.1.0"};
  EXPECT_EQ(EncodeHello(h),
            R"({"min_version":1,"max_version":1,"software":"agent-sandbox 0.1.0"})");
  auto d = DecodeHello(EncodeHello(h));
  ASSERT_TRUE(d) << d.error().ToString();
  EXPECT_EQ(d->min_version, 1u);
  EXPECT_EQ(d->max_version, 1u);
  EXPECT_EQ(d->version, 0u);
  EXPECT_EQ(d->software, "agent-sandbox 0.1.0");
}

TEST(MessagesTest, HelloAnswerCarriesVersion) {
  Hello h{1, 2, 2, "sandboxd 0.1.0"};
  EXPECT_EQ(EncodeHello(h),
            R"({"min_version":1,"max_version":2,"version":2,"software":"sandboxd 0.1.0"})");
  auto d = DecodeHello(EncodeHello(h));
  ASSERT_TRUE(d);
  EXPECT_EQ(d->version, 2u);
  EXPECT_EQ(d->max_version, 2u);
}

// ---- exec ------------------------------------------------------------------------------------

TEST(MessagesTest, ExecRequestDefaultsGolden) {
  ExecRequest r;
  r.argv = {"echo", "hi"};
  EXPECT_EQ(EncodeExecRequest(r),
            R"({"op":"exec","argv":["echo","hi"],"env":{},"cwd":"/workspace","user":"sandbox",)"
            R"("timeout_ms":0,"kill_grace_ms":2000,"stdin_pipe":false,"max_stdout_bytes":0,)"
            R"("max_stderr_bytes":0,"max_output_bytes":0})");
}

TEST(MessagesTest, ExecRequestFullGoldenAndRoundTrip) {
  ExecRequest r;
  r.command = "echo \"$A\" | tr a b";
  r.env = {{"B", "2"}, {"A", "1"}};  // encoded sorted by key
  r.cwd = "src";
  r.user = kUserRoot;
  r.timeout_ms = 30000;
  r.kill_grace_ms = 500;
  r.stdin_pipe = true;
  r.max_stdout_bytes = 1048576;
  r.max_stderr_bytes = 4096;
  r.max_output_bytes = 100;
  r.pty = ExecRequest::Pty{120, 40};
  std::string json = EncodeExecRequest(r);
  EXPECT_EQ(json,
            R"({"op":"exec","argv":[],"command":"echo \"$A\" | tr a b","env":{"A":"1","B":"2"},)"
            R"("cwd":"src","user":"root","timeout_ms":30000,"kill_grace_ms":500,)"
            R"("stdin_pipe":true,"max_stdout_bytes":1048576,"max_stderr_bytes":4096,)"
            R"("max_output_bytes":100,"pty":{"cols":120,"rows":40}})");
  auto d = DecodeExecRequest(json);
  ASSERT_TRUE(d) << d.error().ToString();
  EXPECT_TRUE(d->argv.empty());
  ASSERT_TRUE(d->command.has_value());
  EXPECT_EQ(*d->command, *r.command);
  EXPECT_EQ(d->env, r.env);
  EXPECT_EQ(d->cwd, "src");
  EXPECT_EQ(d->user, "root");
  EXPECT_EQ(d->timeout_ms, 30000u);
  EXPECT_EQ(d->kill_grace_ms, 500u);
  EXPECT_TRUE(d->stdin_pipe);
  EXPECT_EQ(d->max_stdout_bytes, 1048576u);
  EXPECT_EQ(d->max_stderr_bytes, 4096u);
  EXPECT_EQ(d->max_output_bytes, 100u);
  ASSERT_TRUE(d->pty.has_value());
  EXPECT_EQ(d->pty->cols, 120);
  EXPECT_EQ(d->pty->rows, 40);
  EXPECT_EQ(EncodeExecRequest(*d), json);
}

TEST(MessagesTest, ExecRequestAbsentOptionalsStayAbsent) {
  ExecRequest r;
  r.argv = {"true"};
  auto d = DecodeExecRequest(EncodeExecRequest(r));
  ASSERT_TRUE(d);
  EXPECT_FALSE(d->command.has_value());
  EXPECT_FALSE(d->pty.has_value());
  // An empty command string is still "present".
  r.command = "";
  d = DecodeExecRequest(EncodeExecRequest(r));
  ASSERT_TRUE(d);
  ASSERT_TRUE(d->command.has_value());
  EXPECT_EQ(*d->command, "");
  // null means absent.
  d = DecodeExecRequest(R"({"op":"exec","argv":["x"],"command":null,"pty":null})");
  ASSERT_TRUE(d);
  EXPECT_FALSE(d->command.has_value());
  EXPECT_FALSE(d->pty.has_value());
}

TEST(MessagesTest, ExecRequestMissingFieldsTakeDefaultsAndUnknownAreIgnored) {
  auto d = DecodeExecRequest(R"({"op":"exec","argv":["ls"],"future_field":{"x":[1,2]}})");
  ASSERT_TRUE(d) << d.error().ToString();
  ExecRequest def;
  EXPECT_EQ(d->argv, std::vector<std::string>{"ls"});
  EXPECT_EQ(d->cwd, def.cwd);
  EXPECT_EQ(d->user, def.user);
  EXPECT_EQ(d->kill_grace_ms, def.kill_grace_ms);
  EXPECT_FALSE(d->stdin_pipe);
  // "op" may be absent, but not another op.
  EXPECT_TRUE(DecodeExecRequest(R"({"argv":["ls"]})"));
  EXPECT_FALSE(DecodeExecRequest(R"({"op":"file.read","argv":["ls"]})"));
}

TEST(MessagesTest, ExecRequestStrictTypes) {
  const char* bad[] = {
      R"({"argv":"ls"})",           // not an array
      R"({"argv":["ls",1]})",       // non-string element
      R"({"timeout_ms":-1})",       // negative unsigned
      R"({"timeout_ms":1.5})",      // not an integer
      R"({"timeout_ms":1.0})",      // a double, even if integral
      R"({"timeout_ms":"5"})",      // string
      R"({"stdin_pipe":1})",        // bool as int
      R"({"env":{"A":1}})",         // non-string value
      R"({"env":["A"]})",           // not an object
      R"({"command":5})",           // wrong type
      R"({"pty":{"cols":70000}})",  // out of u16 range
      R"({"pty":[80,24]})",         // not an object
      R"({"cwd":null})",            // null for a required-typed member
      R"([1,2])",                   // not an object
      R"({"argv":["ls"])",          // truncated
      "",                           // empty
  };
  for (const char* text : bad) {
    auto d = DecodeExecRequest(text);
    ASSERT_FALSE(d) << text;
    EXPECT_EQ(d.error().code(), ErrorCode::kBackend) << text;
    EXPECT_EQ(d.error().message().rfind("protocol: ", 0), 0u) << d.error().message();
  }
}

TEST(MessagesTest, ExecResultGoldenAndRoundTrip) {
  ExecResult r;
  r.exit_code = 137;
  r.signal = 9;
  r.timed_out = true;
  r.stdout_truncated = true;
  r.stdout_bytes = 5000000000;  // > 2^32
  r.stderr_bytes = 7;
  r.duration_ms = 1002;
  std::string json = EncodeExecResult(r);
  EXPECT_EQ(json, R"({"exit_code":137,"signal":9,"timed_out":true,"stdout_truncated":true,)"
                  R"("stderr_truncated":false,"stdout_bytes":5000000000,"stderr_bytes":7,)"
                  R"("duration_ms":1002,"oom_killed":false})");
  auto d = DecodeExecResult(json);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->exit_code, 137);
  EXPECT_EQ(d->signal, 9);
  EXPECT_TRUE(d->timed_out);
  EXPECT_TRUE(d->stdout_truncated);
  EXPECT_FALSE(d->stderr_truncated);
  EXPECT_EQ(d->stdout_bytes, 5000000000u);
  EXPECT_EQ(d->stderr_bytes, 7u);
  EXPECT_EQ(d->duration_ms, 1002u);
  EXPECT_EQ(EncodeExecResult(*d), json);
  // A microVM's sandboxd says which limits the command hit; pids_limited only when true.
  ExecResult hit;
  hit.oom_killed = true;
  hit.pids_limited = true;
  const std::string hit_json = EncodeExecResult(hit);
  EXPECT_NE(hit_json.find(R"("oom_killed":true,"pids_limited":true})"), std::string::npos)
      << hit_json;
  auto dh = DecodeExecResult(hit_json);
  ASSERT_TRUE(dh);
  EXPECT_TRUE(dh->oom_killed && dh->pids_limited);
  // Negative exit codes (the "not set" default) survive.
  ExecResult neg;
  auto dn = DecodeExecResult(EncodeExecResult(neg));
  ASSERT_TRUE(dn);
  EXPECT_EQ(dn->exit_code, -1);
  EXPECT_FALSE(DecodeExecResult(R"({"exit_code":4294967296})"));  // out of int range
}

// ---- files -----------------------------------------------------------------------------------

TEST(MessagesTest, FileStatGoldenAndRoundTrip) {
  EXPECT_EQ(EncodeFileStat(SampleStat()), kSampleStatJson);
  FileStat link = SampleStat();
  link.type = "symlink";
  link.link_target = "../b";
  link.mtime_ms = -5;  // before the epoch is representable
  auto d = DecodeFileStat(EncodeFileStat(link));
  ASSERT_TRUE(d);
  EXPECT_EQ(d->path, link.path);
  EXPECT_EQ(d->name, link.name);
  EXPECT_EQ(d->type, "symlink");
  EXPECT_EQ(d->size, 3u);
  EXPECT_EQ(d->mode, 0644u);
  EXPECT_EQ(d->uid, 1000u);
  EXPECT_EQ(d->gid, 1000u);
  EXPECT_EQ(d->mtime_ms, -5);
  EXPECT_EQ(d->link_target, "../b");
  FileStat tagged = SampleStat();
  tagged.metadata = {{"owner", "agent-7"}};
  EXPECT_EQ(DecodeFileStat(EncodeFileStat(tagged))->metadata, tagged.metadata);
}

TEST(MessagesTest, NonUtf8NamesSurvive) {
  FileStat s = SampleStat();
  s.name = std::string("bad\xff\xfe name\x01", 12);
  s.path = "/workspace/" + s.name;
  std::string json = EncodeFileStat(s);
  auto d = DecodeFileStat(json);
  ASSERT_TRUE(d) << d.error().ToString();
  EXPECT_EQ(d->name, s.name);
  EXPECT_EQ(d->path, s.path);
}

TEST(MessagesTest, FileStatListGoldenAndRoundTrip) {
  EXPECT_EQ(EncodeFileStatList({}), R"({"entries":[]})");
  FileStat dir = SampleStat();
  dir.path = "/workspace/src";
  dir.name = "src";
  dir.type = "dir";
  dir.mode = 0755;
  std::string json = EncodeFileStatList({SampleStat(), dir});
  EXPECT_EQ(json, std::string(R"({"entries":[)") + kSampleStatJson +
                      R"(,{"path":"/workspace/src","name":"src","type":"dir","size":3,)"
                      R"("mode":493,"uid":1000,"gid":1000,"mtime_ms":1764410000000,)"
                      R"("link_target":"","metadata":{}}]})");
  auto d = DecodeFileStatList(json);
  ASSERT_TRUE(d);
  ASSERT_EQ(d->size(), 2u);
  EXPECT_EQ((*d)[1].type, "dir");
  EXPECT_EQ((*d)[1].mode, 0755u);
  EXPECT_FALSE(DecodeFileStatList(R"({"entries":[1]})"));
  EXPECT_FALSE(DecodeFileStatList(R"({"entries":{}})"));
}

TEST(MessagesTest, FileReadRequestGoldenAndRoundTrip) {
  FileReadRequest r;
  r.path = "src/app.py";
  r.offset = 10;
  r.length = 20;
  std::string json = EncodeFileReadRequest(r);
  EXPECT_EQ(json, std::string(R"({"op":"file.read","path":"src/app.py","offset":10,"length":20,)") +
                      kScopeJson + "}");
  auto d = DecodeFileReadRequest(json);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->path, "src/app.py");
  EXPECT_EQ(d->offset, 10u);
  EXPECT_EQ(d->length, 20u);
  EXPECT_EQ(d->scope.user, "sandbox");
  EXPECT_TRUE(d->scope.beneath_workspace);
}

TEST(MessagesTest, FileScopeRoundTripAndStrictness) {
  FileReadRequest r;
  r.path = "/etc/hostname";
  r.scope.user = kUserRoot;
  r.scope.beneath_workspace = false;
  std::string json = EncodeFileReadRequest(r);
  EXPECT_NE(json.find(R"("scope":{"user":"root","beneath_workspace":false})"), std::string::npos);
  auto d = DecodeFileReadRequest(json);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->scope.user, "root");
  EXPECT_FALSE(d->scope.beneath_workspace);
  // Absent scope = defaults; wrong-typed scope = error.
  d = DecodeFileReadRequest(R"({"op":"file.read","path":"a"})");
  ASSERT_TRUE(d);
  EXPECT_EQ(d->scope.user, "sandbox");
  EXPECT_TRUE(d->scope.beneath_workspace);
  EXPECT_FALSE(DecodeFileReadRequest(R"({"path":"a","scope":"root"})"));
  EXPECT_FALSE(DecodeFileReadRequest(R"({"path":"a","scope":{"beneath_workspace":0}})"));
}

TEST(MessagesTest, FileWriteRequestGoldenAndRoundTrip) {
  FileWriteRequest r;
  r.path = "src/app.py";
  r.mode = 0755;
  r.max_bytes = 10;
  std::string json = EncodeFileWriteRequest(r);
  EXPECT_EQ(json, std::string(R"({"op":"file.write","path":"src/app.py","mode":493,)"
                              R"("make_parents":true,"append":false,"max_bytes":10,)") +
                      kScopeJson + R"(,"metadata":{}})");
  auto d = DecodeFileWriteRequest(json);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->mode, 0755u);
  EXPECT_TRUE(d->make_parents);
  EXPECT_FALSE(d->append);
  EXPECT_EQ(d->max_bytes, 10u);
  r.metadata = {{"stage", "draft"}};
  EXPECT_EQ(DecodeFileWriteRequest(EncodeFileWriteRequest(r))->metadata, r.metadata);
  auto dd = DecodeFileWriteRequest(R"({"op":"file.write","path":"x"})");
  ASSERT_TRUE(dd);
  EXPECT_EQ(dd->mode, 0644u);
}

TEST(MessagesTest, FileListRequestGoldenAndRoundTrip) {
  FileListRequest r;
  r.path = ".";
  r.recursive = true;
  std::string json = EncodeFileListRequest(r);
  EXPECT_EQ(json,
            std::string(R"({"op":"file.list","path":".","recursive":true,"max_entries":100000,)"
                        R"("max_bytes":16777216,)") +
                kScopeJson + R"(,"metadata":false})");
  auto d = DecodeFileListRequest(json);
  ASSERT_TRUE(d);
  EXPECT_TRUE(d->recursive);
  EXPECT_EQ(d->max_entries, 100000u);
  EXPECT_EQ(d->max_bytes, kMaxListingBytes);
  r.max_bytes = 100;
  auto small = DecodeFileListRequest(EncodeFileListRequest(r));
  ASSERT_TRUE(small);
  EXPECT_EQ(small->max_bytes, 100u);
  // An older host that does not send max_bytes still gets the budget.
  auto old = DecodeFileListRequest(R"({"op":"file.list","path":"."})");
  ASSERT_TRUE(old);
  EXPECT_EQ(old->max_bytes, kMaxListingBytes);
}

TEST(MessagesTest, FileStatRequestGoldenAndRoundTrip) {
  FileStatRequest r;
  r.path = "a";
  r.follow_symlinks = true;
  std::string json = EncodeFileStatRequest(r);
  EXPECT_EQ(json, std::string(R"({"op":"file.stat","path":"a","follow_symlinks":true,)") +
                      kScopeJson + R"(,"metadata":false})");
  auto d = DecodeFileStatRequest(json);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->path, "a");
  EXPECT_TRUE(d->follow_symlinks);
  EXPECT_FALSE(d->metadata);
  r.metadata = true;
  EXPECT_TRUE(DecodeFileStatRequest(EncodeFileStatRequest(r))->metadata);
}

TEST(MessagesTest, FileMkdirRequestGoldenAndRoundTrip) {
  FileMkdirRequest r;
  r.path = "a/b";
  r.parents = false;
  std::string json = EncodeFileMkdirRequest(r);
  EXPECT_EQ(json, std::string(R"({"op":"file.mkdir","path":"a/b","mode":493,"parents":false,)") +
                      kScopeJson + "}");
  auto d = DecodeFileMkdirRequest(json);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->mode, 0755u);
  EXPECT_FALSE(d->parents);
}

TEST(MessagesTest, FileRemoveRequestGoldenAndRoundTrip) {
  FileRemoveRequest r;
  r.path = "a";
  r.recursive = true;
  std::string json = EncodeFileRemoveRequest(r);
  EXPECT_EQ(json,
            std::string(R"({"op":"file.remove","path":"a","recursive":true,)") + kScopeJson + "}");
  auto d = DecodeFileRemoveRequest(json);
  ASSERT_TRUE(d);
  EXPECT_TRUE(d->recursive);
}

TEST(MessagesTest, FileMoveRequestGoldenAndRoundTrip) {
  FileMoveRequest r;
  r.from = "a";
  r.to = "b/c";
  r.overwrite = true;
  std::string json = EncodeFileMoveRequest(r);
  EXPECT_EQ(json, std::string(R"({"op":"file.move","from":"a","to":"b/c","overwrite":true,)") +
                      kScopeJson + "}");
  auto d = DecodeFileMoveRequest(json);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->from, "a");
  EXPECT_EQ(d->to, "b/c");
  EXPECT_TRUE(d->overwrite);
}

TEST(MessagesTest, FileWatchMessagesGoldenAndRoundTrip) {
  FileWatchRequest r;
  r.path = "/workspace/src";
  r.recursive = true;
  r.max_queue = 16;
  std::string json = EncodeFileWatchRequest(r);
  EXPECT_EQ(json, std::string(R"({"op":"file.watch","path":"/workspace/src","recursive":true,)"
                              R"("max_queue":16,)") +
                      kScopeJson + R"(,"entries":false})");
  auto d = DecodeFileWatchRequest(json);
  ASSERT_TRUE(d);
  EXPECT_TRUE(d->recursive);
  EXPECT_EQ(d->max_queue, 16u);
  EXPECT_FALSE(d->entries);
  r.entries = true;
  d = DecodeFileWatchRequest(EncodeFileWatchRequest(r));
  ASSERT_TRUE(d);
  EXPECT_TRUE(d->entries);
  // A sandboxd from before `entries` reads a request without it: events without entries.
  d = DecodeFileWatchRequest(R"({"op":"file.watch","path":"/w"})");
  ASSERT_TRUE(d);
  EXPECT_FALSE(d->entries);

  FileWatchEvent ev{"create", "/workspace/src/a b\n", false, 0};
  std::string line = EncodeFileWatchEvent(ev);
  EXPECT_EQ(line, R"({"type":"create","path":"/workspace/src/a b\n","dir":false,"dropped":0})");
  auto e = DecodeFileWatchEvent(line);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->path, ev.path);
  EXPECT_FALSE(e->entry);
  // With an entry: the FileStat, nested, metadata and all.
  FileStat st;
  st.path = "/workspace/src/a";
  st.name = "a";
  st.type = "file";
  st.size = 5;
  st.mode = 0644;
  st.uid = st.gid = 1000;
  st.mtime_ms = 1700000000123;
  st.metadata = {{"stage", "draft"}};
  ev.entry = st;
  e = DecodeFileWatchEvent(EncodeFileWatchEvent(ev));
  ASSERT_TRUE(e);
  ASSERT_TRUE(e->entry);
  EXPECT_EQ(e->entry->path, "/workspace/src/a");
  EXPECT_EQ(e->entry->size, 5u);
  EXPECT_EQ(e->entry->mtime_ms, 1700000000123);
  EXPECT_EQ(e->entry->metadata.at("stage"), "draft");
  EXPECT_EQ(EncodeFileWatchArmed({"/workspace/src", 3}),
            R"({"path":"/workspace/src","watches":3})");
  EXPECT_EQ(EncodeFileWatchEnd({"removed"}), R"({"reason":"removed"})");
  EXPECT_FALSE(DecodeFileWatchEvent(R"({"type":5})"));
}

// ---- tar -------------------------------------------------------------------------------------

TEST(MessagesTest, TarRequestsGoldenAndRoundTrip) {
  TarExportRequest e;
  e.path = ".";
  EXPECT_EQ(EncodeTarExportRequest(e),
            std::string(R"({"op":"tar.export","path":".",)") + kScopeJson + "}");
  auto de = DecodeTarExportRequest(EncodeTarExportRequest(e));
  ASSERT_TRUE(de);
  EXPECT_EQ(de->path, ".");

  TarImportRequest i;
  i.path = "/workspace";
  i.max_bytes = 1 << 20;
  i.max_entries = 1000;
  i.clear_first = true;
  std::string json = EncodeTarImportRequest(i);
  EXPECT_EQ(json, std::string(R"({"op":"tar.import","path":"/workspace","max_bytes":1048576,)"
                              R"("max_entries":1000,"clear_first":true,)") +
                      kScopeJson + "}");
  auto di = DecodeTarImportRequest(json);
  ASSERT_TRUE(di);
  EXPECT_EQ(di->max_bytes, 1u << 20);
  EXPECT_EQ(di->max_entries, 1000u);
  EXPECT_TRUE(di->clear_first);

  TarResult t{12, 4096};
  EXPECT_EQ(EncodeTarResult(t), R"({"entries":12,"bytes":4096})");
  auto dt = DecodeTarResult(EncodeTarResult(t));
  ASSERT_TRUE(dt);
  EXPECT_EQ(dt->entries, 12u);
  EXPECT_EQ(dt->bytes, 4096u);
}

// ---- OPEN op name ----------------------------------------------------------------------------

TEST(MessagesTest, DecodeOpName) {
  FileStatRequest s;
  s.path = "x";
  auto op = DecodeOpName(EncodeFileStatRequest(s));
  ASSERT_TRUE(op);
  EXPECT_EQ(*op, "file.stat");
  ExecRequest e;
  op = DecodeOpName(EncodeExecRequest(e));
  ASSERT_TRUE(op);
  EXPECT_EQ(*op, "exec");
  op = DecodeOpName(R"({"op":"kill.all"})");
  ASSERT_TRUE(op);
  EXPECT_EQ(*op, "kill.all");
  EXPECT_FALSE(DecodeOpName(R"({"path":"x"})"));
  EXPECT_FALSE(DecodeOpName(R"({"op":7})"));
  EXPECT_FALSE(DecodeOpName("not json"));
}

TEST(MessagesTest, RequestDecodersRejectTheWrongOp) {
  EXPECT_FALSE(DecodeFileWriteRequest(R"({"op":"file.read","path":"a"})"));
  EXPECT_FALSE(DecodeFileMoveRequest(R"({"op":"file.remove"})"));
  EXPECT_FALSE(DecodeTarImportRequest(R"({"op":"tar.export"})"));
}

// ---- errors ----------------------------------------------------------------------------------

TEST(MessagesTest, WireErrorGoldenAndRoundTrip) {
  WireError w{"not_found", 2, "open /workspace/x: No such file or directory"};
  std::string json = EncodeWireError(w);
  EXPECT_EQ(
      json,
      R"({"code":"not_found","errno":2,"message":"open /workspace/x: No such file or directory"})");
  auto d = DecodeWireError(json);
  ASSERT_TRUE(d);
  Error e = FromWireError(*d);
  EXPECT_EQ(e.code(), ErrorCode::kNotFound);
  EXPECT_EQ(e.sys_errno(), 2);
  EXPECT_EQ(e.message(), "open /workspace/x: No such file or directory");
}

TEST(MessagesTest, ErrorToWireAndBack) {
  Error e = Error::TooLarge("upload over 10 bytes");
  WireError w = ToWireError(e);
  EXPECT_EQ(w.code, "payload_too_large");
  EXPECT_EQ(w.sys_errno, 0);
  Error back = FromWireError(w);
  EXPECT_EQ(back.code(), ErrorCode::kTooLarge);
  EXPECT_EQ(back.message(), "upload over 10 bytes");
  // An unknown code from a newer peer becomes internal.
  EXPECT_EQ(FromWireError(WireError{"brand_new", 0, "x"}).code(), ErrorCode::kInternal);
  // Control characters and quotes are escaped, and survive.
  WireError tricky{"internal", 5, "line1\nline2 \"quoted\" \\ \x01"};
  auto d = DecodeWireError(EncodeWireError(tricky));
  ASSERT_TRUE(d);
  EXPECT_EQ(d->message, tricky.message);
}

TEST(MessagesTest, EnvSetGoldenAndRoundTrip) {
  EnvSetRequest m;
  m.env = {{"API_KEY", "k=1"}, {"LANG", "C"}};
  EXPECT_EQ(EncodeEnvSetRequest(m), R"({"op":"env.set","env":{"API_KEY":"k=1","LANG":"C"}})");
  auto d = DecodeEnvSetRequest(EncodeEnvSetRequest(m));
  ASSERT_TRUE(d) << d.error().ToString();
  EXPECT_EQ(d->env, m.env);
  EXPECT_FALSE(DecodeEnvSetRequest(R"({"op":"env.set","env":{"A":1}})"));
  EXPECT_FALSE(DecodeEnvSetRequest(R"({"op":"env.set","env":["A=1"]})"));
  EXPECT_FALSE(DecodeEnvSetRequest(R"({"op":"stats","env":{}})"));
}

}  // namespace
}  // namespace asb::protocol
