// File and tar operations of the real sandboxd binary, driven by the real host client.
// Label: privileged (setfsuid, files owned by uid 1000).
#include <archive.h>
#include <archive_entry.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <fstream>
#include <random>
#include <sstream>

#include "protocol/client.h"
#include "sandboxd/sandboxd_harness.h"

namespace asb::sandboxd::testing {
namespace {

using protocol::ChannelEvent;
using protocol::FileStat;

class SandboxdFilesTest : public SandboxdTest {
 protected:
  Result<FileStat> Write(const std::string& path, std::string_view data, uint32_t mode = 0644,
                         uint64_t max_bytes = 0) {
    protocol::FileWriteRequest req;
    req.path = path;
    req.mode = mode;
    req.max_bytes = max_bytes;
    return protocol::WriteFile(*conn_, req, data);
  }
  Result<std::string> Read(const std::string& path) {
    protocol::FileReadRequest req;
    req.path = path;
    return protocol::ReadFile(*conn_, req);
  }
  Result<std::vector<FileStat>> List(const std::string& path, bool recursive = false) {
    protocol::FileListRequest req;
    req.path = path;
    req.recursive = recursive;
    return protocol::ListFiles(*conn_, req);
  }
  Result<FileStat> Stat(const std::string& path, bool follow = false) {
    protocol::FileStatRequest req;
    req.path = path;
    req.follow_symlinks = follow;
    return protocol::StatFile(*conn_, req);
  }

  // tar.export of `path`: the archive bytes.
  Result<std::string> Export(const std::string& path, protocol::TarResult* result = nullptr) {
    protocol::TarExportRequest req;
    req.path = path;
    ASB_ASSIGN_OR_RETURN(auto ch, conn_->Open(protocol::EncodeTarExportRequest(req)));
    std::string data;
    for (;;) {
      ASB_ASSIGN_OR_RETURN(ChannelEvent ev, ch->Next(30000));
      if (ev.kind == ChannelEvent::Kind::kData) data += ev.payload;
      if (ev.kind == ChannelEvent::Kind::kError) return Fail(*ev.error);
      if (ev.kind == ChannelEvent::Kind::kResult) {
        if (result) *result = *protocol::DecodeTarResult(ev.payload);
        return data;
      }
    }
  }
  Result<protocol::TarResult> Import(const protocol::TarImportRequest& req, std::string_view tar) {
    ASB_ASSIGN_OR_RETURN(auto ch, conn_->Open(protocol::EncodeTarImportRequest(req)));
    // The worker may refuse the archive early; then writing fails or is discarded: ignore.
    (void)ch->Write(tar, 30000);
    (void)ch->CloseWrite();
    for (;;) {
      ASB_ASSIGN_OR_RETURN(ChannelEvent ev, ch->Next(30000));
      if (ev.kind == ChannelEvent::Kind::kError) return Fail(*ev.error);
      if (ev.kind == ChannelEvent::Kind::kResult) return *protocol::DecodeTarResult(ev.payload);
    }
  }
};

std::string RandomBytes(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::string s(n, '\0');
  for (auto& c : s) c = static_cast<char>(rng());
  return s;
}

std::string ReadHostFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

TEST_F(SandboxdFilesTest, WriteReadAndRunAScript) {
  auto st = Write("src/app.py", "#!/bin/sh\necho ran\n", 0755);
  ASSERT_TRUE(st) << st.error().ToString();
  EXPECT_EQ(st->path, Ws("src/app.py"));
  EXPECT_EQ(st->name, "app.py");
  EXPECT_EQ(st->type, "file");
  EXPECT_EQ(st->mode, 0755u);
  EXPECT_EQ(st->uid, 1000u);
  EXPECT_EQ(st->gid, 1000u);
  EXPECT_EQ(st->size, 19u);
  EXPECT_EQ(*Read("src/app.py"), "#!/bin/sh\necho ran\n");
  EXPECT_EQ(*Read(Ws("src/app.py")), "#!/bin/sh\necho ran\n");         // absolute form
  EXPECT_EQ(*Read("/workspace/src/app.py"), "#!/bin/sh\necho ran\n");  // canonical form
  EXPECT_EQ(Sh("./src/app.py").stdout_data, "ran\n");
  struct stat hs;
  ASSERT_EQ(stat(Ws("src").c_str(), &hs), 0);
  EXPECT_EQ(hs.st_uid, 1000u);  // created parents belong to the sandbox user too
  // Overwrite is atomic and leaves no temp file behind.
  ASSERT_TRUE(Write("src/app.py", "v2"));
  EXPECT_EQ(*Read("src/app.py"), "v2");
  auto entries = List("src");
  ASSERT_TRUE(entries);
  ASSERT_EQ(entries->size(), 1u);
}

TEST_F(SandboxdFilesTest, BinaryEmptyAndLargeFilesRoundTripByteExact) {
  std::string random16k = RandomBytes(16 * 1024, 1);
  std::string nul_and_bad_utf8("a\0b\xff\xfe\xc3\x28\0", 8);
  std::string big = RandomBytes(50 << 20, 2);
  for (auto& [name, data] : std::vector<std::pair<std::string, std::string>>{
           {"r.bin", random16k}, {"nul.bin", nul_and_bad_utf8}, {"empty", ""}, {"big", big}}) {
    auto st = Write(name, data);
    ASSERT_TRUE(st) << name << ": " << st.error().ToString();
    EXPECT_EQ(st->size, data.size());
    auto back = Read(name);
    ASSERT_TRUE(back) << back.error().ToString();
    EXPECT_TRUE(*back == data) << name;
    EXPECT_TRUE(ReadHostFile(Ws(name)) == data) << name;
  }
  // Ranged read.
  protocol::FileReadRequest req;
  req.path = "big";
  req.offset = 1000;
  req.length = 70000;
  auto part = protocol::ReadFile(*conn_, req);
  ASSERT_TRUE(part);
  EXPECT_TRUE(*part == big.substr(1000, 70000));
}

TEST_F(SandboxdFilesTest, ListIsSortedWithDotfilesDirsSymlinksAndSizes) {
  ASSERT_EQ(Sh("mkdir -p dir/sub && echo -n 12345 > file && touch .hidden dir/sub/x && "
               "ln -s file link")
                .result.exit_code,
            0);
  auto l = List(".");
  ASSERT_TRUE(l) << l.error().ToString();
  std::vector<std::string> names;
  for (auto& e : *l) names.push_back(e.name);
  EXPECT_EQ(names, (std::vector<std::string>{".hidden", "dir", "file", "link"}));
  EXPECT_EQ((*l)[1].type, "dir");
  EXPECT_EQ((*l)[2].size, 5u);
  EXPECT_EQ((*l)[2].path, Ws("file"));
  EXPECT_EQ((*l)[3].type, "symlink");
  EXPECT_EQ((*l)[3].link_target, "file");
  auto r = List(".", true);
  ASSERT_TRUE(r);
  std::vector<std::string> paths;
  for (auto& e : *r) paths.push_back(e.path.substr(proc_->workspace().size()));
  EXPECT_EQ(paths, (std::vector<std::string>{"/.hidden", "/dir", "/dir/sub", "/dir/sub/x", "/file",
                                             "/link"}));
  // Listing a file, or a missing path.
  auto f = List("file");
  ASSERT_FALSE(f);
  EXPECT_EQ(f.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(List("missing").error().code(), ErrorCode::kNotFound);
  protocol::FileListRequest capped;
  capped.path = ".";
  capped.recursive = true;
  capped.max_entries = 3;
  EXPECT_EQ(protocol::ListFiles(*conn_, capped).error().code(), ErrorCode::kLimitExceeded);
}

// Security review W5: a listing has a byte budget (protocol::kMaxListingBytes), which sandboxd
// enforces while it lists, before it holds more: exactly at the budget passes, one over fails.
TEST_F(SandboxdFilesTest, ListingByteBudgetExactlyAtPassesOneOverFails) {
  ASSERT_EQ(Sh("mkdir -p budget/d && touch budget/a budget/d/bb && ln -s /a/long/target "
               "budget/link")
                .result.exit_code,
            0);
  auto all = List("budget", true);
  ASSERT_TRUE(all) << all.error().ToString();
  ASSERT_EQ(all->size(), 4u);
  uint64_t exact = 0;
  for (const auto& e : *all) exact += protocol::ListingBytes(e);
  EXPECT_EQ(exact, 4 * protocol::kListingEntryCost + 4 * Ws("budget/").size() + 1 + 1 + 4 + 4 +
                       std::string("/a/long/target").size());
  // Straight to sandboxd (one OPEN, its first answer), so the host's own check is not involved.
  auto first_answer = [&](uint64_t max_bytes) -> ChannelEvent {
    protocol::FileListRequest req;
    req.path = "budget";
    req.recursive = true;
    req.max_bytes = max_bytes;
    auto ch = conn_->Open(protocol::EncodeFileListRequest(req));
    EXPECT_TRUE(ch);
    auto ev = (*ch)->Next();
    EXPECT_TRUE(ev);
    ChannelEvent out = *ev;
    while (ev && ev->kind != ChannelEvent::Kind::kResult &&
           ev->kind != ChannelEvent::Kind::kError) {
      ev = (*ch)->Next();
    }
    return out;
  };
  EXPECT_EQ(first_answer(exact).kind, ChannelEvent::Kind::kInfo);
  const std::string msg = "listing exceeds " + std::to_string(exact - 1) +
                          " bytes; list a narrower path or without recursive";
  for (uint64_t budget : {exact - 1, uint64_t{100}}) {  // the last entry; the names themselves
    ChannelEvent over = first_answer(budget);
    ASSERT_EQ(over.kind, ChannelEvent::Kind::kError) << budget;
    ASSERT_TRUE(over.error);
    EXPECT_EQ(over.error->code(), ErrorCode::kTooLarge);
    EXPECT_EQ(over.error->message(), protocol::ListingTooLargeMessage(budget));
  }
  EXPECT_EQ(protocol::ListingTooLargeMessage(exact - 1), msg);
  // Through the host client: the same error, and the daemon keeps answering.
  protocol::FileListRequest req;
  req.path = "budget";
  req.recursive = true;
  req.max_bytes = exact;
  EXPECT_TRUE(protocol::ListFiles(*conn_, req));
  req.max_bytes = exact - 1;
  EXPECT_EQ(protocol::ListFiles(*conn_, req).error().code(), ErrorCode::kTooLarge);
  EXPECT_TRUE(List("budget"));
}

TEST_F(SandboxdFilesTest, LargeListingsArriveInSeveralChunks) {
  ASSERT_EQ(Sh("mkdir many && cd many && L=$(head -c 200 /dev/zero | tr '\\0' x) && "
               "for i in $(seq -f %05g 0 2499); do : > f${i}_$L; done")
                .result.exit_code,
            0);
  auto l = List("many");
  ASSERT_TRUE(l) << l.error().ToString();
  ASSERT_EQ(l->size(), 2500u);
  EXPECT_EQ((*l)[0].name.substr(0, 7), "f00000_");
  EXPECT_EQ((*l)[2499].name.substr(0, 7), "f02499_");
}

TEST_F(SandboxdFilesTest, PathsOutsideTheWorkspaceAreRefused) {
  for (const char* p : {"/etc/x", "../etc/passwd", "/workspace/..", "/workspacex/a", "a/../../x"}) {
    auto st = Write(p, "x");
    ASSERT_FALSE(st) << p;
    EXPECT_EQ(st.error().code(), ErrorCode::kInvalidArgument) << p << ": " << st.error().message();
  }
  EXPECT_EQ(Write(Ws("../escape"), "x").error().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(access((proc_->workspace() + "/../escape").c_str(), F_OK), 0);
  EXPECT_EQ(Write("m", "x", 07777 + 1).error().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(Read("missing").error().code(), ErrorCode::kNotFound);
  ASSERT_EQ(Sh("mkdir d").result.exit_code, 0);
  EXPECT_EQ(Read("d").error().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(Write("d", "x").error().code(), ErrorCode::kInvalidArgument);
}

TEST_F(SandboxdFilesTest, SymlinksOutOfTheWorkspaceAreNeverFollowed) {
  std::string passwd_before = ReadHostFile("/etc/passwd");
  ASSERT_EQ(Sh("ln -s /etc etcdir && ln -s /etc/passwd pw && ln -s ../.. up").result.exit_code, 0);
  EXPECT_EQ(Read("etcdir/passwd").error().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(Read("pw").error().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(List("up").error().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(Write("etcdir/evil", "x").error().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(Stat("pw", true).error().code(), ErrorCode::kInvalidArgument);
  auto lst = Stat("pw");  // lstat of the link itself is fine
  ASSERT_TRUE(lst);
  EXPECT_EQ(lst->type, "symlink");
  EXPECT_EQ(lst->link_target, "/etc/passwd");
  // Writing to the link's path replaces the link, never the target.
  ASSERT_TRUE(Write("pw", "mine"));
  EXPECT_EQ(ReadHostFile("/etc/passwd"), passwd_before);
  EXPECT_EQ(Stat("pw")->type, "file");
  // Recursive remove of a tree holding a link to a directory outside removes only the link.
  ASSERT_EQ(Sh("mkdir -p t && ln -s /etc t/etc").result.exit_code, 0);
  protocol::FileRemoveRequest rm;
  rm.path = "t";
  rm.recursive = true;
  ASSERT_TRUE(protocol::RemoveFile(*conn_, rm));
  EXPECT_EQ(access("/etc/passwd", F_OK), 0);
  EXPECT_EQ(ReadHostFile("/etc/passwd"), passwd_before);
}

TEST_F(SandboxdFilesTest, AppendAndFollowedStat) {
  protocol::FileWriteRequest req;
  req.path = "log";
  req.append = true;
  ASSERT_TRUE(protocol::WriteFile(*conn_, req, "one\n"));
  auto st = protocol::WriteFile(*conn_, req, "two\n");
  ASSERT_TRUE(st) << st.error().ToString();
  EXPECT_EQ(st->size, 8u);
  EXPECT_EQ(*Read("log"), "one\ntwo\n");
  ASSERT_EQ(Sh("ln -s log loglink").result.exit_code, 0);
  EXPECT_EQ(Stat("loglink")->type, "symlink");
  auto followed = Stat("loglink", true);
  ASSERT_TRUE(followed);
  EXPECT_EQ(followed->type, "file");
  EXPECT_EQ(followed->size, 8u);
  req.path = "loglink";  // append never writes through a final symlink
  EXPECT_FALSE(protocol::WriteFile(*conn_, req, "x"));
}

TEST_F(SandboxdFilesTest, FileMetadataIsKeptWithTheFileAndReadOnlyWhenAsked) {
  using Md = std::map<std::string, std::string>;
  protocol::FileWriteRequest req;
  req.path = "tagged.txt";
  req.metadata = {{"owner", "agent-7"}, {"stage", "draft"}};
  auto w = protocol::WriteFile(*conn_, req, "x");
  ASSERT_TRUE(w) << w.error().ToString();
  EXPECT_EQ(w->metadata, req.metadata);  // a write that set some answers them
  // Stored as user.e2b.* extended attributes of the file itself.
  char value[64] = {};
  const std::string host = proc_->workspace() + "/tagged.txt";
  ASSERT_EQ(::getxattr(host.c_str(), "user.e2b.stage", value, sizeof value), 5);
  EXPECT_STREQ(value, "draft");
  EXPECT_TRUE(Stat("tagged.txt")->metadata.empty());  // not asked for: not read
  protocol::FileStatRequest sr;
  sr.path = "tagged.txt";
  sr.metadata = true;
  EXPECT_EQ(protocol::StatFile(*conn_, sr)->metadata, req.metadata);
  protocol::FileListRequest lr;
  lr.path = ".";
  lr.metadata = true;
  auto list = protocol::ListFiles(*conn_, lr);
  ASSERT_TRUE(list);
  for (const FileStat& e : *list) {
    EXPECT_EQ(e.metadata, e.name == "tagged.txt" ? req.metadata : Md{}) << e.name;
  }
  // A plain write replaces the file and its metadata; the answer then carries none.
  auto plain = Write("tagged.txt", "y");
  ASSERT_TRUE(plain);
  EXPECT_TRUE(plain->metadata.empty());
  EXPECT_TRUE(protocol::StatFile(*conn_, sr)->metadata.empty());
}

TEST_F(SandboxdFilesTest, MaxBytesIsEnforcedAndTheTempFileRemoved) {
  EXPECT_TRUE(Write("ten", "0123456789", 0644, 10));
  auto st = Write("eleven", "0123456789A", 0644, 10);
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().code(), ErrorCode::kTooLarge);
  auto l = List(".");
  ASSERT_TRUE(l);
  ASSERT_EQ(l->size(), 1u);
  EXPECT_EQ((*l)[0].name, "ten");
}

TEST_F(SandboxdFilesTest, PermissionsAreTheSandboxUsers) {
  ASSERT_EQ(system(("echo secret > " + Ws("rootfile") + " && chmod 600 " + Ws("rootfile")).c_str()),
            0);
  auto r = Read("rootfile");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), ErrorCode::kPermissionDenied);
  protocol::FileReadRequest as_root;
  as_root.path = "rootfile";
  as_root.scope.user = "root";
  EXPECT_EQ(*protocol::ReadFile(*conn_, as_root), "secret\n");
}

TEST_F(SandboxdFilesTest, MkdirRemoveMoveStat) {
  protocol::FileMkdirRequest mk;
  mk.path = "a/b/c";
  mk.mode = 0700;
  auto d = protocol::MakeDir(*conn_, mk);
  ASSERT_TRUE(d) << d.error().ToString();
  EXPECT_EQ(d->type, "dir");
  EXPECT_EQ(d->mode, 0700u);
  EXPECT_EQ(d->uid, 1000u);
  EXPECT_TRUE(protocol::MakeDir(*conn_, mk));  // exists + parents: fine
  mk.parents = false;
  EXPECT_EQ(protocol::MakeDir(*conn_, mk).error().code(), ErrorCode::kConflict);

  protocol::FileRemoveRequest rm;
  rm.path = "a";
  EXPECT_EQ(protocol::RemoveFile(*conn_, rm).error().code(), ErrorCode::kConflict);
  ASSERT_TRUE(Write("f1", "one"));
  ASSERT_TRUE(Write("f2", "two"));
  protocol::FileMoveRequest mv;
  mv.from = "f1";
  mv.to = "f2";
  EXPECT_EQ(protocol::MoveFile(*conn_, mv).error().code(), ErrorCode::kConflict);
  mv.overwrite = true;
  auto moved = protocol::MoveFile(*conn_, mv);
  ASSERT_TRUE(moved) << moved.error().ToString();
  EXPECT_EQ(moved->path, Ws("f2"));
  EXPECT_EQ(*Read("f2"), "one");
  EXPECT_EQ(Read("f1").error().code(), ErrorCode::kNotFound);
  mv.from = "f2";
  mv.to = "a/b/moved";
  mv.overwrite = false;
  ASSERT_TRUE(protocol::MoveFile(*conn_, mv));
  EXPECT_EQ(Stat("a/b/moved")->size, 3u);

  rm.recursive = true;
  ASSERT_TRUE(protocol::RemoveFile(*conn_, rm));
  EXPECT_EQ(Stat("a").error().code(), ErrorCode::kNotFound);
  EXPECT_EQ(protocol::RemoveFile(*conn_, rm).error().code(), ErrorCode::kNotFound);
  rm.path = ".";
  EXPECT_EQ(protocol::RemoveFile(*conn_, rm).error().code(), ErrorCode::kInvalidArgument);
  auto root = Stat(".");
  ASSERT_TRUE(root);
  EXPECT_EQ(root->type, "dir");
  EXPECT_EQ(root->path, proc_->workspace());
}

// ---- tar -------------------------------------------------------------------------------------

TEST_F(SandboxdFilesTest, TarRoundTripKeepsEveryFileType) {
  ASSERT_EQ(Sh("mkdir -p src/empty src/deep/er && printf 'hello' > src/f && "
               "printf '#!/bin/sh\\n' > src/exe && chmod 751 src/exe && "
               "ln -s f src/link && ln -s /etc/passwd src/abs && ln src/f src/hard && "
               "truncate -s 20M src/sparse && printf x | dd of=src/sparse bs=1 seek=10000000 "
               "conv=notrunc 2>/dev/null && head -c 100000 /dev/urandom > src/deep/er/rand")
                .result.exit_code,
            0);
  protocol::TarResult exported;
  auto tar = Export("src", &exported);
  ASSERT_TRUE(tar) << tar.error().ToString();
  EXPECT_EQ(exported.entries, 10u);
  EXPECT_GT(tar->size(), 100000u);
  EXPECT_LT(tar->size(), 1000000u);  // the 20 MiB sparse file is stored sparse

  protocol::TarImportRequest imp;
  imp.path = "restore";
  auto res = Import(imp, *tar);
  ASSERT_TRUE(res) << res.error().ToString();
  EXPECT_EQ(res->entries, 10u);

  const std::string describe =
      "find . -printf '%p %y %m %s %l\\n' | sort; stat -c '%h' f hard; "
      "du -k sparse | cut -f1 | awk '{print ($1 < 1000)}'; md5sum deep/er/rand | cut -c1-32";
  auto a = Sh("cd src && " + describe);
  auto b = Sh("cd restore && " + describe);
  EXPECT_EQ(a.stdout_data, b.stdout_data);
  EXPECT_NE(b.stdout_data.find("./empty d 755"), std::string::npos) << b.stdout_data;
  EXPECT_NE(b.stdout_data.find("./exe f 751"), std::string::npos);
  EXPECT_NE(b.stdout_data.find("./abs l 777 11 /etc/passwd"), std::string::npos);
  EXPECT_NE(b.stdout_data.find("\n2\n2\n1\n"), std::string::npos) << b.stdout_data;

  // A single file exports as one member named after it.
  protocol::TarResult one;
  auto single = Export("src/f", &one);
  ASSERT_TRUE(single) << single.error().ToString();
  EXPECT_EQ(one.entries, 1u);
  protocol::TarImportRequest imp1;
  imp1.path = "single";
  ASSERT_TRUE(Import(imp1, *single));
  EXPECT_EQ(*Read("single/f"), "hello");

  // clear_first: the target is emptied before extracting.
  ASSERT_TRUE(Write("restore/extra", "x"));
  imp.clear_first = true;
  ASSERT_TRUE(Import(imp, *tar));
  EXPECT_EQ(Stat("restore/extra").error().code(), ErrorCode::kNotFound);
  EXPECT_EQ(*Read("restore/f"), "hello");
}

TEST_F(SandboxdFilesTest, TarOfTheWorkspaceSkipsTheFileSystemsLostAndFound) {
  ASSERT_EQ(system(("mkdir -m 700 " + Ws("lost+found")).c_str()), 0);  // root-owned, as on ext4
  ASSERT_TRUE(Write("a/b", "data"));
  protocol::TarResult r;
  auto tar = Export(".", &r);
  ASSERT_TRUE(tar) << tar.error().ToString();
  EXPECT_EQ(r.entries, 2u);  // a, a/b
  protocol::TarImportRequest imp;
  imp.path = ".";
  imp.clear_first = true;
  ASSERT_TRUE(Write("later", "x"));
  auto res = Import(imp, *tar);
  ASSERT_TRUE(res) << res.error().ToString();
  EXPECT_EQ(access(Ws("lost+found").c_str(), F_OK), 0);
  EXPECT_EQ(Stat("later").error().code(), ErrorCode::kNotFound);
  EXPECT_EQ(*Read("a/b"), "data");
}

TEST_F(SandboxdFilesTest, TarSkipsSocketsAndFifosSoAWorkspaceHoldingThemStillExports) {
  // A sandbox may leave a listening unix socket or a FIFO in /workspace; a snapshot of it used
  // to fail with a 500 ("pax format cannot archive sockets").
  ASSERT_TRUE(Write("keep", "data"));
  ASSERT_EQ(mkfifo(Ws("fifo").c_str(), 0644), 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  const std::string sock = Ws("sock");
  if (sock.size() >= sizeof addr.sun_path) GTEST_SKIP() << "workspace path too long for a socket";
  memcpy(addr.sun_path, sock.c_str(), sock.size() + 1);
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0) << errno;
  close(fd);
  protocol::TarResult r;
  auto tar = Export(".", &r);
  ASSERT_TRUE(tar) << tar.error().ToString();
  EXPECT_EQ(r.entries, 1u);  // keep
  protocol::TarImportRequest imp;
  imp.path = "back";
  auto res = Import(imp, *tar);  // and the archive imports (a FIFO member would be refused)
  ASSERT_TRUE(res) << res.error().ToString();
  EXPECT_EQ(*Read("back/keep"), "data");
}

TEST_F(SandboxdFilesTest, ScopeOutsideTheWorkspaceStillUsesTheUsersPermissions) {
  protocol::FileReadRequest rd;
  rd.path = "/etc/passwd";
  rd.scope.beneath_workspace = false;
  auto passwd = protocol::ReadFile(*conn_, rd);
  ASSERT_TRUE(passwd) << passwd.error().ToString();
  EXPECT_EQ(*passwd, ReadHostFile("/etc/passwd"));
  rd.path = "/etc/shadow";
  EXPECT_EQ(protocol::ReadFile(*conn_, rd).error().code(), ErrorCode::kPermissionDenied);
  protocol::FileWriteRequest wr;
  wr.path = "/etc/sandboxd-test-must-not-exist";
  wr.scope.beneath_workspace = false;
  EXPECT_EQ(protocol::WriteFile(*conn_, wr, "x").error().code(), ErrorCode::kPermissionDenied);
  EXPECT_NE(access("/etc/sandboxd-test-must-not-exist", F_OK), 0);
}

// Builds a pax archive in memory from (name, type, content-or-link-target) members.
struct Member {
  std::string name;
  unsigned type;  // AE_IFREG, AE_IFDIR, AE_IFLNK, AE_IFCHR, AE_IFIFO
  std::string data;
  bool hardlink = false;
};
std::string MakeTar(const std::vector<Member>& members) {
  std::string out(4 << 20, '\0');
  size_t used = 0;
  struct archive* a = archive_write_new();
  archive_write_set_format_pax_restricted(a);
  archive_write_open_memory(a, out.data(), out.size(), &used);
  for (const auto& m : members) {
    struct archive_entry* e = archive_entry_new();
    archive_entry_set_pathname(e, m.name.c_str());
    archive_entry_set_filetype(e, m.type);
    archive_entry_set_perm(e, 0644);
    if (m.hardlink) {
      archive_entry_set_hardlink(e, m.data.c_str());
    } else if (m.type == AE_IFLNK) {
      archive_entry_set_symlink(e, m.data.c_str());
    } else if (m.type == AE_IFREG) {
      archive_entry_set_size(e, static_cast<la_int64_t>(m.data.size()));
    } else if (m.type == AE_IFCHR) {
      archive_entry_set_rdev(e, makedev(1, 3));
    }
    archive_write_header(a, e);
    if (m.type == AE_IFREG && !m.hardlink && !m.data.empty()) {
      archive_write_data(a, m.data.data(), m.data.size());
    }
    archive_entry_free(e);
  }
  archive_write_close(a);
  archive_write_free(a);
  out.resize(used);
  return out;
}

TEST_F(SandboxdFilesTest, HostileArchivesAreRejected) {
  protocol::TarImportRequest imp;
  imp.path = "in";
  struct Case {
    std::vector<Member> members;
    ErrorCode code;
    std::string needle;
  };
  std::vector<Case> cases = {
      {{{"/tmp/sandboxd-evil-abs", AE_IFREG, "x"}},
       ErrorCode::kInvalidArgument,
       "/tmp/sandboxd-evil-abs"},
      {{{"../evil-dotdot", AE_IFREG, "x"}}, ErrorCode::kInvalidArgument, "../evil-dotdot"},
      {{{"ok", AE_IFREG, "x"}, {"a/../../evil2", AE_IFREG, "x"}},
       ErrorCode::kInvalidArgument,
       "a/../../evil2"},
      {{{"null", AE_IFCHR, ""}}, ErrorCode::kInvalidArgument, "null"},
      {{{"fifo", AE_IFIFO, ""}}, ErrorCode::kInvalidArgument, "fifo"},
      {{{"hl", AE_IFREG, "../../etc/passwd", true}}, ErrorCode::kInvalidArgument, "hl"},
      {{{"link", AE_IFLNK, "/tmp"}, {"link/sandboxd-evil-through", AE_IFREG, "x"}},
       ErrorCode::kInvalidArgument,
       "link/sandboxd-evil-through"},
  };
  for (const auto& c : cases) {
    auto r = Import(imp, MakeTar(c.members));
    ASSERT_FALSE(r) << c.needle;
    EXPECT_EQ(r.error().code(), c.code) << r.error().ToString();
    EXPECT_NE(r.error().message().find(c.needle), std::string::npos) << r.error().message();
  }
  EXPECT_NE(access("/tmp/sandboxd-evil-abs", F_OK), 0);
  EXPECT_NE(access("/tmp/sandboxd-evil-through", F_OK), 0);
  EXPECT_NE(access((proc_->workspace() + "/../evil-dotdot").c_str(), F_OK), 0);

  // Limits.
  std::vector<Member> three = {
      {"a", AE_IFREG, "1234"}, {"b", AE_IFREG, "5678"}, {"c", AE_IFREG, "9"}};
  imp.max_entries = 2;
  EXPECT_EQ(Import(imp, MakeTar(three)).error().code(), ErrorCode::kLimitExceeded);
  imp.max_entries = 0;
  imp.max_bytes = 8;
  EXPECT_EQ(Import(imp, MakeTar(three)).error().code(), ErrorCode::kTooLarge);
  imp.max_bytes = 9;
  auto ok = Import(imp, MakeTar(three));
  ASSERT_TRUE(ok) << ok.error().ToString();
  EXPECT_EQ(ok->bytes, 9u);
  // Not a tar at all.
  EXPECT_FALSE(Import(imp, std::string(5000, 'z')));
  // The daemon is fine afterwards.
  EXPECT_EQ(Sh("echo fine").stdout_data, "fine\n");
}

}  // namespace
}  // namespace asb::sandboxd::testing
