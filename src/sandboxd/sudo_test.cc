// The sandbox's sudo: its request encoding and its command line (sudo_wire.h, sudo_client.h).
// The relay itself runs in real sandboxes: tests/e2e/test_sudo.py.
#include <gtest/gtest.h>

#include <algorithm>

#include "sandboxd/sudo_client.h"
#include "sandboxd/sudo_wire.h"

namespace asb::sandboxd {
namespace {

const std::string kPasswd =
    "root:x:0:0:root:/root:/bin/bash\n"
    "daemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin\n"
    "sandbox:x:1000:1000:sandbox:/workspace:/bin/bash\n";

const std::vector<std::string> kEnv = {"PATH=/home/x/bin:/usr/bin",
                                       "HOME=/workspace",
                                       "USER=sandbox",
                                       "TERM=xterm",
                                       "LC_ALL=C.UTF-8",
                                       "SECRET=1",
                                       "SHELL=/bin/zsh"};

Result<SudoInvocation> Parse(std::vector<std::string> args) {
  args.insert(args.begin(), "sudo");
  return ParseSudoCommandLine(args, kEnv, kPasswd, 1000, "/workspace/src");
}

std::string EnvOf(const SudoRequest& r, const std::string& name) {
  for (const auto& e : r.env) {
    if (e.rfind(name + "=", 0) == 0) return e.substr(name.size() + 1);
  }
  return "<unset>";
}

TEST(SudoWireTest, RequestRoundTrips) {
  SudoRequest r;
  r.as_root = false;
  r.cwd = "/workspace";
  r.argv = {"sh", "-c", "echo 'a b'", ""};
  r.env = {"A=1", "B=x=y", "EMPTY="};
  auto back = DecodeSudoRequest(EncodeSudoRequest(r));
  ASSERT_TRUE(back) << back.error().ToString();
  EXPECT_FALSE(back->as_root);
  EXPECT_EQ(back->cwd, "/workspace");
  EXPECT_EQ(back->argv, r.argv);
  EXPECT_EQ(back->env, r.env);
}

TEST(SudoWireTest, MalformedRequestsAreRefused) {
  SudoRequest good;
  good.argv = {"id"};
  const std::string bytes = EncodeSudoRequest(good);
  EXPECT_TRUE(DecodeSudoRequest(bytes));
  for (const std::string& bad :
       {std::string(),                                               // empty
        bytes.substr(0, bytes.size() - 1),                           // no final NUL
        std::string("asb-sudo/9\0root\0/\0001\0id\0", 23),           // another version
        std::string("asb-sudo/1\0admin\0/\0001\0id\0", 24),          // unknown user
        std::string("asb-sudo/1\0root\0rel\0001\0id\0", 25),         // relative cwd
        std::string("asb-sudo/1\0root\0/\0000\0", 20),               // empty argv
        std::string("asb-sudo/1\0root\0/\0003\0id\0", 21),           // argc too large
        std::string("asb-sudo/1\0root\0/\0001\0id\0NOVALUE\0", 29),  // env without '='
        std::string(kSudoRequestMax + 1, 'x')}) {                    // too long
    EXPECT_FALSE(DecodeSudoRequest(bad)) << "accepted: " << bad.size() << " bytes";
  }
}

TEST(SudoClientTest, AccountsAreRootAndTheSandboxUserOnly) {
  EXPECT_EQ(FindSudoAccount(kPasswd, "root")->home, "/root");
  EXPECT_EQ(FindSudoAccount(kPasswd, "#0")->name, "root");
  EXPECT_EQ(FindSudoAccount(kPasswd, "1000")->name, "sandbox");
  EXPECT_EQ(FindSudoAccount(kPasswd, "sandbox")->shell, "/bin/bash");
  EXPECT_FALSE(FindSudoAccount(kPasswd, "daemon"));  // exists, but is neither
  EXPECT_FALSE(FindSudoAccount(kPasswd, "nobody"));
  EXPECT_FALSE(FindSudoAccount(kPasswd, "1"));
  // A passwd without them (an unusual image) still has both.
  EXPECT_EQ(FindSudoAccount("", "root")->uid, 0u);
  EXPECT_EQ(FindSudoAccount("", "sandbox")->uid, 1000u);
}

TEST(SudoClientTest, ACommandRunsAsRootWithDebiansResetEnvironment) {
  auto inv = Parse({"apt-get", "install", "-y", "jq"});
  ASSERT_TRUE(inv) << inv.error().ToString();
  EXPECT_EQ(inv->action, SudoInvocation::Action::kRun);
  const SudoRequest& r = inv->request;
  EXPECT_TRUE(r.as_root);
  EXPECT_EQ(r.argv, (std::vector<std::string>{"apt-get", "install", "-y", "jq"}));
  EXPECT_EQ(r.cwd, "/workspace/src");
  EXPECT_EQ(EnvOf(r, "PATH"), "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
  EXPECT_EQ(EnvOf(r, "HOME"), "/root");
  EXPECT_EQ(EnvOf(r, "USER"), "root");
  EXPECT_EQ(EnvOf(r, "LOGNAME"), "root");
  EXPECT_EQ(EnvOf(r, "TERM"), "xterm");      // kept through env_reset
  EXPECT_EQ(EnvOf(r, "LC_ALL"), "C.UTF-8");  // kept through env_reset
  EXPECT_EQ(EnvOf(r, "SECRET"), "<unset>");  // not kept
  EXPECT_EQ(EnvOf(r, "SUDO_USER"), "sandbox");
  EXPECT_EQ(EnvOf(r, "SUDO_UID"), "1000");
  EXPECT_EQ(EnvOf(r, "SUDO_COMMAND"), "apt-get install -y jq");
}

TEST(SudoClientTest, OptionsAsSudoReadsThem) {
  auto e = Parse({"-E", "env"});
  ASSERT_TRUE(e);
  EXPECT_EQ(EnvOf(e->request, "SECRET"), "1");
  EXPECT_EQ(EnvOf(e->request, "HOME"), "/workspace");                      // -E keeps HOME
  EXPECT_EQ(EnvOf(e->request, "PATH").substr(0, 16), "/usr/local/sbin:");  // secure_path

  auto keep = Parse({"--preserve-env=SECRET,NOPE", "env"});
  ASSERT_TRUE(keep);
  EXPECT_EQ(EnvOf(keep->request, "SECRET"), "1");
  EXPECT_EQ(EnvOf(keep->request, "HOME"), "/root");

  auto as_user = Parse({"-u", "sandbox", "-n", "id"});
  ASSERT_TRUE(as_user);
  EXPECT_FALSE(as_user->request.as_root);
  EXPECT_EQ(EnvOf(as_user->request, "HOME"), "/workspace");
  auto glued = Parse({"-nHuroot", "id"});
  ASSERT_TRUE(glued) << glued.error().ToString();
  EXPECT_TRUE(glued->request.as_root);
  auto long_form = Parse({"--user=#1000", "--non-interactive", "--", "id", "-u"});
  ASSERT_TRUE(long_form);
  EXPECT_FALSE(long_form->request.as_root);
  EXPECT_EQ(long_form->request.argv, (std::vector<std::string>{"id", "-u"}));

  auto assign = Parse({"FOO=bar", "BAZ=", "env", "X=1"});
  ASSERT_TRUE(assign);
  EXPECT_EQ(assign->request.argv, (std::vector<std::string>{"env", "X=1"}));
  EXPECT_EQ(EnvOf(assign->request, "FOO"), "bar");
  EXPECT_EQ(EnvOf(assign->request, "BAZ"), "");

  auto dir = Parse({"-D", "/tmp", "pwd"});
  ASSERT_TRUE(dir);
  EXPECT_EQ(dir->request.cwd, "/tmp");
  auto rel = Parse({"--chdir=build", "pwd"});
  ASSERT_TRUE(rel);
  EXPECT_EQ(rel->request.cwd, "/workspace/src/build");

  auto bg = Parse({"-b", "sleep", "1"});
  ASSERT_TRUE(bg);
  EXPECT_TRUE(bg->background);
  auto group = Parse({"-g", "root", "id"});
  EXPECT_TRUE(group);
}

TEST(SudoClientTest, ShellsAndLoginShellsEscapeTheCommandAsSudoDoes) {
  auto login = Parse({"-i"});
  ASSERT_TRUE(login);
  EXPECT_EQ(login->request.argv, (std::vector<std::string>{"/bin/bash", "-l"}));
  EXPECT_EQ(login->request.cwd, "/root");
  auto with_cmd = Parse({"-i", "echo", "a b;c"});
  ASSERT_TRUE(with_cmd);
  EXPECT_EQ(with_cmd->request.argv,
            (std::vector<std::string>{"/bin/bash", "-l", "-c", "echo a\\ b\\;c"}));
  auto shell = Parse({"-s"});
  ASSERT_TRUE(shell);
  EXPECT_EQ(shell->request.argv, (std::vector<std::string>{"/bin/zsh"}));  // the caller's SHELL
  EXPECT_EQ(shell->request.cwd, "/workspace/src");
}

TEST(SudoClientTest, InformationalFormsAndErrors) {
  EXPECT_EQ(Parse({"-V"})->action, SudoInvocation::Action::kVersion);
  EXPECT_EQ(Parse({"--help"})->action, SudoInvocation::Action::kHelp);
  EXPECT_EQ(Parse({"-l"})->action, SudoInvocation::Action::kList);
  EXPECT_EQ(Parse({"-v"})->action, SudoInvocation::Action::kNothing);
  EXPECT_EQ(Parse({"-k"})->action, SudoInvocation::Action::kNothing);
  EXPECT_EQ(Parse({"-k", "id"})->action, SudoInvocation::Action::kRun);

  auto none = Parse({});
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().message(), "a command is required");
  auto missing = Parse({"-u"});
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().message(), "option requires an argument -- 'u'");
  auto bad = Parse({"-X", "id"});
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().message(), "invalid option -- 'X'");
  auto bad_long = Parse({"--frobnicate", "id"});
  ASSERT_FALSE(bad_long);
  EXPECT_EQ(bad_long.error().message(), "unrecognized option '--frobnicate'");
  auto other = Parse({"-u", "daemon", "id"});
  ASSERT_FALSE(other);
  EXPECT_NE(other.error().message().find("unknown user daemon"), std::string::npos);
  EXPECT_FALSE(Parse({"-g", "staff", "id"}));
}

}  // namespace
}  // namespace asb::sandboxd
