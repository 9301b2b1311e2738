// ADR 0014: escape attempts from inside a real sandbox (ns backend, real sandboxd, the
// base template). The static probe (probe.c) is copied into the sandbox's /workspace through
// the file API and run there as the sandbox user and as sandbox root; each of its lines is one
// attempt with what was expected and what was seen. This test prints them as one table and
// asserts every attempt. A second test races the file API against a sandbox that keeps
// swapping the directory being written for a symlink out of the workspace.
//
// Needs root and the template (skips with the reason otherwise): see README.md.
#include <netinet/in.h>
#include <sys/ipc.h>
#include <sys/shm.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/unique_fd.h"
#include "isolation/ns/ns_test_support.h"
#include "sandboxd/testing/int80_probe.h"

namespace asb::isolation::ns::testing {
namespace {

#ifndef ASB_PROBE_PATH
#error "ASB_PROBE_PATH must name the built probe"
#endif

struct Attempt {
  std::string expected;
  std::string seen;
  bool ok = false;
};

// Parses "attempt <name> expected=<e> seen=<s> ok|FAIL" lines; other lines are kept as noise.
std::map<std::string, Attempt> ParseAttempts(const std::string& out, std::string* noise) {
  std::map<std::string, Attempt> m;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);) {
    std::istringstream l(line);
    std::string word, name, expected, seen, verdict;
    if (!(l >> word >> name >> expected >> seen >> verdict) || word != "attempt" ||
        expected.rfind("expected=", 0) != 0 || seen.rfind("seen=", 0) != 0) {
      *noise += line + "\n";
      continue;
    }
    m[name] = Attempt{expected.substr(9), seen.substr(5), verdict == "ok"};
  }
  return m;
}

std::string ReadHostFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

class AdversarialTest : public NsBackendTest {
 protected:
  void SetUp() override {
    NsBackendTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    probe_ = ReadHostFile(ASB_PROBE_PATH);
    if (probe_.empty()) GTEST_SKIP() << "no probe at " << ASB_PROBE_PATH;
  }

  // Copies the probe into the sandbox's /workspace through the file API.
  void InstallProbe(Sandbox& sb) {
    protocol::FileWriteRequest w;
    w.path = "/workspace/probe";
    w.mode = 0755;
    auto st = protocol::WriteFile(*sb.connection(), w, probe_);
    ASSERT_TRUE(st) << st.error().ToString();
    ASSERT_EQ(st->size, probe_.size());
  }

  static protocol::CollectedExec Run(Sandbox& sb, const std::vector<std::string>& argv,
                                     bool as_root) {
    protocol::ExecRequest req;
    req.argv = argv;
    req.user = as_root ? protocol::kUserRoot : protocol::kUserSandbox;
    req.timeout_ms = 60'000;
    auto r = protocol::ExecCollect(*sb.connection(), req);
    EXPECT_TRUE(r) << r.error().ToString();
    return r ? *r : protocol::CollectedExec{};
  }

  std::string probe_;
};

TEST_F(AdversarialTest, EscapeAttemptsFailAsUserAndAsRoot) {
  auto a = MustCreate(Spec());
  auto b = MustCreate(Spec());
  ASSERT_TRUE(a && b);
  // A secret in B's workspace, /tmp and /dev/shm, and a marker on the host: neither may be visible
  // from A.
  const std::string secret = "adv-secret-" + b->id();
  EXPECT_EQ(Sh(*b, "echo s > /workspace/" + secret + " && echo s > /tmp/" + secret +
                       " && echo s > /dev/shm/" + secret + " && echo ok")
                .stdout_data,
            "ok\n");
  ASSERT_NO_FATAL_FAILURE(InstallProbe(*a));
  const std::string marker = state_dir_ + "-host-marker";
  { std::ofstream(marker) << "host"; }
  // Host-side objects the sandbox must not reach: a loopback TCP listener, an abstract unix
  // socket and a SysV shared memory segment.
  UniqueFd tcp(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t sa_len = sizeof(sa);
  ASSERT_EQ(::bind(tcp.get(), reinterpret_cast<sockaddr*>(&sa), sizeof(sa)), 0);
  ASSERT_EQ(::listen(tcp.get(), 4), 0);
  ASSERT_EQ(::getsockname(tcp.get(), reinterpret_cast<sockaddr*>(&sa), &sa_len), 0);
  const std::string abstract = "asb-adv-" + a->id();
  UniqueFd unix_listener(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_un un{};
  un.sun_family = AF_UNIX;
  std::memcpy(un.sun_path + 1, abstract.data(), abstract.size());
  const auto un_len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + abstract.size());
  ASSERT_EQ(::bind(unix_listener.get(), reinterpret_cast<sockaddr*>(&un), un_len), 0);
  ASSERT_EQ(::listen(unix_listener.get(), 4), 0);
  const key_t shm_key = static_cast<key_t>(0x5a000000 | (::getpid() & 0xffffff));
  const int shm_id = ::shmget(shm_key, 4096, IPC_CREAT | IPC_EXCL | 0666);
  ASSERT_GE(shm_id, 0) << std::strerror(errno);
  struct ShmRemover {
    int id;
    ~ShmRemover() { ::shmctl(id, IPC_RMID, nullptr); }
  } shm_remover{shm_id};
  std::vector<std::string> argv = {"/workspace/probe",
                                   "--secret",
                                   secret,
                                   "--host-path",
                                   state_dir_,
                                   "--host-path",
                                   state_dir_ + "/" + b->id(),
                                   "--host-path",
                                   marker,
                                   "--host-path",
                                   "/work/main",
                                   "--host-path",
                                   rootfs_,
                                   "--host-path",
                                   "/run/agent-sandbox/uid-ranges",
                                   "--tcp-port",
                                   std::to_string(ntohs(sa.sin_port)),
                                   "--abstract",
                                   abstract,
                                   "--shm-key",
                                   std::to_string(shm_key),
                                   "--mountinfo-token",
                                   state_dir_,
                                   "--mountinfo-token",
                                   a->id()};
  // What this kernel does with int 0x80 decides what the i386 row must see (probe.c).
  const int i386_signal = ::asb::kernel_probe::ExpectedI386DeathSignal();
  ASSERT_GT(i386_signal, 0) << "could not tell what this kernel does with int 0x80";
  if (i386_signal != SIGSYS) {
    argv.push_back("--int80-fault");
    argv.push_back(sigabbrev_np(i386_signal));
    std::printf(
        "note: this kernel faults on int 0x80 without a filter (SIG%s): the i386 row "
        "expects that signal, not SIGSYS\n",
        sigabbrev_np(i386_signal));
  }

  std::map<std::string, Attempt> seen[2];
  for (int as_root = 0; as_root < 2; ++as_root) {
    auto r = Run(*a, argv, as_root != 0);
    std::string noise;
    seen[as_root] = ParseAttempts(r.stdout_data, &noise);
    EXPECT_EQ(noise, "") << "unparsed probe output";
    EXPECT_EQ(r.result.exit_code, 0) << (as_root ? "root" : "user") << " stderr: " << r.stderr_data;
    // The sandbox must still answer after every attempt (none may have taken sandboxd down).
    EXPECT_EQ(Sh(*a, "echo alive").stdout_data, "alive\n");
  }
  ::unlink(marker.c_str());

  // The table: attempt, then expected/seen as the sandbox user and as sandbox root.
  std::set<std::string> names;
  for (const auto& m : seen) {
    for (const auto& [name, _] : m) names.insert(name);
  }
  std::printf("%-32s %-24s %-22s %-24s %-22s\n", "attempt", "expected (uid 1000)", "seen",
              "expected (root)", "seen");
  int failures = 0;
  for (const auto& name : names) {
    const Attempt* u = seen[0].count(name) ? &seen[0].at(name) : nullptr;
    const Attempt* r = seen[1].count(name) ? &seen[1].at(name) : nullptr;
    std::printf("%-32s %-24s %-22s %-24s %-22s %s\n", name.c_str(), u ? u->expected.c_str() : "-",
                u ? u->seen.c_str() : "MISSING", r ? r->expected.c_str() : "-",
                r ? r->seen.c_str() : "MISSING", (u && u->ok && r && r->ok) ? "ok" : "FAIL");
    EXPECT_TRUE(u && u->ok) << name << " as uid 1000: expected " << (u ? u->expected : "")
                            << ", seen " << (u ? u->seen : "nothing");
    EXPECT_TRUE(r && r->ok) << name << " as root: expected " << (r ? r->expected : "") << ", seen "
                            << (r ? r->seen : "nothing");
    failures += !(u && u->ok && r && r->ok);
  }
  std::printf("%zu attempts, %d failed\n", names.size(), failures);
  EXPECT_GE(names.size(), 40u);
  // The list, each by at least one attempt (a renamed attempt must not drop silently).
  for (const char* must : {"mount_tmpfs",
                           "umount_workspace",
                           "unshare_user",
                           "unshare_mnt",
                           "setns_proc1_mnt",
                           "ptrace_attach_pid1",
                           "proc1_root",
                           "proc1_fd_reopen",
                           "proc_sys_core_pattern",
                           "sys_uevent_helper",
                           "proc_sysrq_trigger",
                           "init_module",
                           "finit_module",
                           "keyctl_join_session",
                           "bpf_map_create",
                           "perf_event_open",
                           "userfaultfd",
                           "io_uring_setup",
                           "raw_socket",
                           "packet_socket",
                           "vsock_socket",
                           "xdp_socket",
                           "proc_config_gz",
                           "proc_partitions",
                           "proc_cmdline",
                           "mountinfo_host_paths",
                           "mknod_char_mem",
                           "mknod_block_sda",
                           "chroot_breakout",
                           "setuid_binary_su",
                           "cgroup_release_agent_file",
                           "cgroup_mount_v1_release_agent",
                           "dev_mem_open",
                           "dev_kmsg_open",
                           "tiocsti_stdin",
                           "other_sandbox_workspace",
                           "host_path_0",
                           "host_processes_visible",
                           "hardlink_outside_workspace",
                           "clone3_newuser",
                           "personality_addr_no_randomize",
                           "kexec_load",
                           "reboot_cad_off",
                           "swapon",
                           "settimeofday",
                           "acct",
                           "quotactl",
                           "name_to_handle_at",
                           "open_by_handle_at",
                           "iopl",
                           "ioperm",
                           "process_vm_readv_pid1",
                           "x32_abi_mount",
                           "i386_abi_mount",
                           "host_loopback_tcp",
                           "host_abstract_unix",
                           "host_sysv_shm",
                           "proc1_environ_read",
                           "proc1_mem_write",
                           "core_dump_on_crash",
                           "uid_map_rewrite"}) {
    EXPECT_TRUE(names.count(must)) << "attempt missing from the probe: " << must;
  }
  // The probe can fail: a path that does exist inside is reported as a failed attempt.
  auto neg = Run(*a, {"/workspace/probe", "--host-path", "/workspace", "host_path_0"}, false);
  EXPECT_EQ(neg.stdout_data, "attempt host_path_0 expected=ENOENT seen=success FAIL\n");
  EXPECT_EQ(neg.result.exit_code, 1);
  // B is untouched, and nothing the probe tried left a file on the host's side of A.
  EXPECT_EQ(Sh(*b, "cat /workspace/" + secret).stdout_data, "s\n");
}

// The sandbox swaps /workspace/d between a directory and a symlink out of the workspace (to
// /tmp, absolute and relative) as fast as it can, while the host writes files into d through
// the file API, as the sandbox user and as root. Every write must either fail or land inside
// the workspace; nothing may appear in /tmp (or anywhere else).
TEST_F(AdversarialTest, FileApiSymlinkRaceStaysInWorkspace) {
  auto sb = MustCreate(Spec());
  ASSERT_TRUE(sb);
  std::atomic<bool> loop_done{false};
  protocol::CollectedExec loop;
  std::thread swapper([&] {
    protocol::ExecRequest req;
    req.command =
        "cd /workspace; n=0; while [ ! -e stop ]; do "
        "rm -rf d; mkdir d; rm -rf d; ln -s /tmp d; rm -f d; mkdir d; rmdir d; ln -s ../tmp d; "
        "rm -f d; ln -s / d; rm -f d; n=$((n+1)); done; echo $n";
    req.timeout_ms = 60'000;
    auto r = protocol::ExecCollect(*sb->connection(), req);
    if (r) loop = *r;
    loop_done = true;
  });
  // Let the loop start before writing.
  for (int i = 0; i < 100 && Sh(*sb, "test -e /workspace/d && echo y").stdout_data != "y\n"; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  int written = 0, refused = 0;
  for (int i = 0; i < 600; ++i) {
    protocol::FileWriteRequest w;
    w.path = "/workspace/d/race-" + std::to_string(i);
    w.make_parents = (i % 2) == 0;
    w.append = (i % 3) == 0;
    if (i % 4 == 1) w.scope.user = protocol::kUserRoot;
    auto st = protocol::WriteFile(*sb->connection(), w, "x");
    if (st) {
      ++written;
      EXPECT_EQ(st->path.rfind("/workspace/d/race-", 0), 0u) << st->path;
    } else {
      ++refused;
    }
  }
  // Directory creation and moves through the same race.
  for (int i = 0; i < 100; ++i) {
    protocol::FileMkdirRequest m;
    m.path = "/workspace/d/race-dir-" + std::to_string(i);
    (void)protocol::MakeDir(*sb->connection(), m);
  }
  protocol::FileWriteRequest stop;
  stop.path = "/workspace/stop";
  ASSERT_TRUE(protocol::WriteFile(*sb->connection(), stop, ""));
  swapper.join();
  ASSERT_TRUE(loop_done);
  const int swaps = std::atoi(loop.stdout_data.c_str());
  std::printf("race: %d swap rounds, %d writes landed in the workspace, %d refused\n", swaps,
              written, refused);
  EXPECT_GT(swaps, 0) << loop.stderr_data;
  EXPECT_GT(written + refused, 0);
  // Nothing outside the workspace, as seen by root inside (everything it can see).
  protocol::ExecRequest find;
  find.command =
      "find / -xdev -name 'race-*' 2>/dev/null; find /tmp /dev/shm -name 'race-*'; "
      "echo done";
  find.user = protocol::kUserRoot;
  auto r = protocol::ExecCollect(*sb->connection(), find);
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_EQ(r->stdout_data, "done\n");
  // ... and the ones that landed are inside /workspace (on its own file system).
  auto in_ws = Sh(*sb, "find /workspace -name 'race-*' | grep -vc '^/workspace/d/race-'");
  EXPECT_EQ(in_ws.stdout_data, "0\n");
}

// The file API runs in sandboxd, PID 1 of the sandbox, which holds every capability of the
// sandbox's user namespace and no seccomp filter: "/proc/self" there is sandboxd itself. With
// the scope outside the workspace, no magic link (/proc/*/fd, root, cwd, exe) may be followed,
// sandboxd's memory and environment stay out of the sandbox user's reach, and the
// environment it has holds nothing of the host server's.
TEST_F(AdversarialTest, FileApiProcSelfTricks) {
  ASSERT_EQ(::setenv("ASB_ADV_HOST_CANARY", "host-secret-canary", 1), 0);
  auto sb = MustCreate(Spec());
  ::unsetenv("ASB_ADV_HOST_CANARY");
  ASSERT_TRUE(sb);
  auto read = [&](const std::string& path, const char* user, uint64_t offset = 0) {
    protocol::FileReadRequest r;
    r.path = path;
    r.offset = offset;
    r.scope.user = user;
    r.scope.beneath_workspace = false;
    return protocol::ReadFile(*sb->connection(), r);
  };
  for (const char* user : {protocol::kUserSandbox, protocol::kUserRoot}) {
    for (const std::string p :
         {"/proc/self/root/etc/hostname", "/proc/1/root/etc/hostname", "/proc/self/cwd",
          "/proc/self/exe", "/proc/self/fd/0", "/proc/self/fd/3", "/proc/self/fd/4",
          "/proc/thread-self/root/etc/hostname", "/proc/1/map_files"}) {
      auto r = read(p, user);
      EXPECT_FALSE(r) << user << " read " << p << " through the file API";
      std::printf("file-api %-6s read %-36s -> %s\n", user, p.c_str(),
                  r ? "READ" : r.error().ToString().c_str());
    }
    // Writing through a magic link or into sandboxd's memory.
    protocol::FileWriteRequest w;
    w.path = "/proc/self/fd/1";
    w.append = true;
    w.scope.user = user;
    w.scope.beneath_workspace = false;
    EXPECT_FALSE(protocol::WriteFile(*sb->connection(), w, "x")) << user;
    w.path = "/proc/self/mem";
    EXPECT_FALSE(protocol::WriteFile(*sb->connection(), w, "x")) << user;
    w.path = "/proc/1/mem";
    w.append = false;
    EXPECT_FALSE(protocol::WriteFile(*sb->connection(), w, "x")) << user;
  }
  // The sandbox user may not read sandboxd's environment or memory.
  EXPECT_FALSE(read("/proc/self/environ", protocol::kUserSandbox));
  EXPECT_FALSE(read("/proc/1/mem", protocol::kUserSandbox, 0x400000));
  // Root may read sandboxd's environment: it holds nothing of the host server's.
  auto env = read("/proc/1/environ", protocol::kUserRoot);
  std::printf("file-api root   read /proc/1/environ -> %s\n",
              env ? "read (checked for host values)" : env.error().ToString().c_str());
  if (env) {
    EXPECT_EQ(env->find("host-secret-canary"), std::string::npos) << *env;
    EXPECT_EQ(env->find(state_dir_), std::string::npos) << *env;
  }
  // And the sandbox still answers.
  EXPECT_EQ(Sh(*sb, "echo alive").stdout_data, "alive\n");
}

// Removal and moves through the same race: victims planted outside the workspace (in /tmp,
// by root inside) must survive removes, recursive removes and moves aimed at /workspace/d
// while d keeps flipping to a symlink to /tmp; a recursive remove of d itself may take the
// symlink, never what it points to.
TEST_F(AdversarialTest, FileApiRemoveAndMoveRaceSparesOutside) {
  auto sb = MustCreate(Spec());
  ASSERT_TRUE(sb);
  protocol::ExecRequest plant;
  plant.command =
      "mkdir -p /tmp/vdir && echo v > /tmp/vdir/inner && echo v > /tmp/victim && "
      "chmod -R a+rwX /tmp/vdir /tmp/victim && echo ok";
  plant.user = protocol::kUserRoot;
  auto planted = protocol::ExecCollect(*sb->connection(), plant);
  ASSERT_TRUE(planted && planted->stdout_data == "ok\n");
  std::atomic<bool> done{false};
  protocol::CollectedExec loop;
  std::thread swapper([&] {
    protocol::ExecRequest req;
    req.command =
        "cd /workspace; n=0; while [ ! -e stop ]; do "
        "rm -rf d; mkdir -p d/vdir; echo w > d/victim; echo w > d/vdir/inner; rm -rf d; "
        "ln -s /tmp d; rm -f d; ln -s ../tmp d; rm -f d; n=$((n+1)); done; echo $n";
    req.timeout_ms = 60'000;
    auto r = protocol::ExecCollect(*sb->connection(), req);
    if (r) loop = *r;
    done = true;
  });
  for (int i = 0; i < 100 && Sh(*sb, "test -e /workspace/d && echo y").stdout_data != "y\n"; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  int ok_ops = 0, refused = 0;
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < 400 || std::chrono::steady_clock::now() - t0 < std::chrono::seconds(3); ++i) {
    const char* user = (i % 2) ? protocol::kUserRoot : protocol::kUserSandbox;
    Status st;
    switch (i % 4) {
      case 0: {
        protocol::FileRemoveRequest r;
        r.path = "/workspace/d/victim";
        r.scope.user = user;
        st = protocol::RemoveFile(*sb->connection(), r);
        break;
      }
      case 1: {
        protocol::FileRemoveRequest r;
        r.path = (i % 8 == 1) ? "/workspace/d/vdir" : "/workspace/d";
        r.recursive = true;
        r.scope.user = user;
        st = protocol::RemoveFile(*sb->connection(), r);
        break;
      }
      case 2: {
        protocol::FileMoveRequest m;
        m.from = "/workspace/d/victim";
        m.to = "/workspace/moved-" + std::to_string(i);
        m.scope.user = user;
        auto r = protocol::MoveFile(*sb->connection(), m);
        st = r ? Status{} : Status(tl::unexpected(r.error()));
        break;
      }
      default: {
        protocol::FileMoveRequest m;
        m.from = "/workspace/d/vdir";
        m.to = "/workspace/moved-dir-" + std::to_string(i);
        m.overwrite = true;
        m.scope.user = user;
        auto r = protocol::MoveFile(*sb->connection(), m);
        st = r ? Status{} : Status(tl::unexpected(r.error()));
        break;
      }
    }
    st ? ++ok_ops : ++refused;
  }
  protocol::FileWriteRequest stop;
  stop.path = "/workspace/stop";
  ASSERT_TRUE(protocol::WriteFile(*sb->connection(), stop, ""));
  swapper.join();
  ASSERT_TRUE(done);
  const int swaps = std::atoi(loop.stdout_data.c_str());
  std::printf("remove/move race: %d swap rounds, %d operations done, %d refused\n", swaps, ok_ops,
              refused);
  EXPECT_GT(swaps, 10) << loop.stderr_data;
  EXPECT_GT(ok_ops, 0);
  // The victims outside the workspace are intact, with their contents.
  protocol::ExecRequest check;
  check.command = "cat /tmp/victim /tmp/vdir/inner; ls /tmp/vdir";
  check.user = protocol::kUserRoot;
  auto r = protocol::ExecCollect(*sb->connection(), check);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->stdout_data, "v\nv\ninner\n") << r->stderr_data;
  // Whatever was moved came from inside the workspace (its content is the loop's "w").
  auto moved = Sh(*sb,
                  "cat /workspace/moved-* /workspace/moved-dir-*/inner 2>/dev/null | "
                  "grep -vc '^w$'");
  EXPECT_EQ(moved.stdout_data, "0\n");
}

// The same attacks as an agent would type them, with the template's own tools; each must
// fail (non-zero exit) as the sandbox user and as sandbox root.
TEST_F(AdversarialTest, ShellOneLinersFail) {
  auto sb = MustCreate(Spec());
  ASSERT_TRUE(sb);
  const char* kCommands[] = {
      "unshare -r true",
      "unshare -m true",
      "unshare -n true",
      "nsenter -t 1 -m -u -n -i -p true",
      "mount -t tmpfs none /mnt",
      "mount -o remount,rw /",
      "mount --bind /proc/1/root /mnt",
      "umount -l /workspace",
      "umount -l /proc/sys",
      "sysctl -w kernel.hostname=x",
      "sysctl -w net.ipv4.ip_forward=1",
      "swapon /workspace/nothing",
      "losetup -f",
      "dmesg",
      "ip link add dummy0 type dummy",
      "echo b > /proc/sysrq-trigger",
      "echo '|/workspace/x' > /proc/sys/kernel/core_pattern",
      "cat /sys/fs/cgroup/release_agent",
      "setpriv --inh-caps=+sys_admin --ambient-caps=+sys_admin true",
      "python3 -c 'import ctypes,sys; l=ctypes.CDLL(None); "
      "sys.exit(0 if l.unshare(0x10000000)==0 else 1)'",
      "perl -e 'exit(syscall(272, 0x10000000) == 0 ? 0 : 1)'",
  };
  std::printf("%-64s %-10s %-10s\n", "shell attempt", "uid 1000", "root");
  for (const char* cmd : kCommands) {
    int codes[2];
    for (int as_root = 0; as_root < 2; ++as_root) {
      protocol::ExecRequest req;
      req.command = std::string(cmd) + " >/dev/null 2>&1";
      req.user = as_root ? protocol::kUserRoot : protocol::kUserSandbox;
      req.timeout_ms = 20'000;
      auto r = protocol::ExecCollect(*sb->connection(), req);
      ASSERT_TRUE(r) << r.error().ToString();
      codes[as_root] = r->result.exit_code;
      EXPECT_NE(r->result.exit_code, 0) << cmd << (as_root ? " as root" : " as uid 1000");
    }
    std::printf("%-64s exit %-5d exit %-5d %s\n", cmd, codes[0], codes[1],
                codes[0] != 0 && codes[1] != 0 ? "ok" : "FAIL");
  }
  // Still the same sandbox afterwards: hostname, read-only root, workspace in place.
  EXPECT_EQ(Sh(*sb,
               "hostname; touch /etc/x 2>/dev/null || echo ro; test -d /workspace && "
               "echo ws")
                .stdout_data,
            "sandbox\nro\nws\n");
}

}  // namespace
}  // namespace asb::isolation::ns::testing
