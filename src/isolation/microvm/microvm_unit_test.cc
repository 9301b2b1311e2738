// Unprivileged unit tests of the microvm backend's pure parts: the console scanner and reader
// (guest_console.h) and QEMU's command line (qemu_command.h).
#include <gtest/gtest.h>
#include <sys/socket.h>

#include <algorithm>
#include <string>
#include <vector>

#include "isolation/microvm/guest_console.h"
#include "isolation/microvm/qemu_command.h"

namespace asb::isolation::microvm {
namespace {

const std::string kConsole =
    "[    0.000000] Linux version 6.1.0-28-cloud-amd64\n"
    "[    4.210000] Out of memory: Killed process 212 (python3) total-vm:300000kB\r\n"
    "[    5.100000] Memory cgroup out of memory: Killed process 230 (sh)\n"
    "asb-init: cannot mount the workspace   \r\n"
    "[    9.000000] Kernel panic - not syncing: sysrq triggered crash\n"
    "[    9.000001] tail line without a newline";

TEST(ConsoleScanner, FindsTheSameInAnySplit) {
  for (size_t chunk : {size_t{1}, size_t{3}, size_t{17}, kConsole.size()}) {
    ConsoleScanner s;
    for (size_t at = 0; at < kConsole.size(); at += chunk) s.Feed(kConsole.substr(at, chunk));
    EXPECT_EQ(s.oom_kills(), 2u) << chunk;
    EXPECT_EQ(s.LastLine(ConsoleScanner::kPanicMark),
              "Kernel panic - not syncing: sysrq triggered crash")
        << chunk;
    EXPECT_EQ(s.LastLine(ConsoleScanner::kInitFailureMark), "asb-init: cannot mount the workspace")
        << chunk;
    EXPECT_EQ(s.bytes_seen(), kConsole.size());
    EXPECT_EQ(s.Tail(), kConsole);
  }
}

TEST(ConsoleScanner, AMarkIsCountedOncePerLineAndOnlyWhenTheLineEnds) {
  ConsoleScanner s;
  s.Feed("Out of memory: Killed process 1 Out of memory: Killed process 2");
  EXPECT_EQ(s.oom_kills(), 0u);  // the line is not complete yet
  s.Feed("\n");
  EXPECT_EQ(s.oom_kills(), 1u);
  EXPECT_EQ(s.LastLine("something else"), "");
}

TEST(ConsoleScanner, AFloodKeepsOnlyABoundedTailAndStillFindsMarksAfterIt) {
  ConsoleScanner s;
  const std::string junk(1 << 20, 'A');  // one 1 MiB line, then many short ones
  s.Feed(junk);
  for (int i = 0; i < 5000; ++i) s.Feed("flood flood flood flood flood flood flood flood\n");
  s.Feed("Kernel panic - not syncing: " + std::string(500, 'x') + "\n");
  EXPECT_LE(s.Tail().size(), ConsoleScanner::kTailBytes);
  EXPECT_EQ(s.LastLine(ConsoleScanner::kPanicMark).size(), 200u);  // bounded too
  // A mark beyond kMaxLine bytes of its line is not looked at (the kernel prints marks first).
  ConsoleScanner late;
  late.Feed(std::string(ConsoleScanner::kMaxLine, ' ') + "Out of memory: Killed process 3\n");
  EXPECT_EQ(late.oom_kills(), 0u);
}

TEST(GuestConsole, ReadsItsSocketUntilTheOtherEndCloses) {
  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
  UniqueFd qemu_end(sv[1]);
  GuestConsole console{UniqueFd(sv[0])};
  EXPECT_EQ(console.LastOutputLine(), "no output");
  ASSERT_TRUE(WriteAll(qemu_end.get(), kConsole.data(), kConsole.size()));
  EXPECT_FALSE(console.WaitClosed(50));
  qemu_end.Reset();  // QEMU exits
  ASSERT_TRUE(console.WaitClosed(5000));
  EXPECT_EQ(console.oom_kills(), 2u);
  EXPECT_EQ(console.LastLine(ConsoleScanner::kPanicMark),
            "Kernel panic - not syncing: sysrq triggered crash");
  EXPECT_EQ(console.LastOutputLine(), "[    9.000001] tail line without a newline");
}

TEST(GuestConsole, DestroyingItStopsTheReaderWhileTheVmRuns) {
  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
  UniqueFd qemu_end(sv[1]);
  auto console = std::make_unique<GuestConsole>(UniqueFd(sv[0]));
  ASSERT_TRUE(WriteAll(qemu_end.get(), "hello\n", 6));
  console.reset();  // joins: must not wait for the other end
  SUCCEED();
}

TEST(GuestConsole, ConnectTimesOutWhenNothingListens) {
  auto c = GuestConsole::Connect("/nonexistent-asb-dir/console.sock", 50);
  ASSERT_FALSE(c);
  EXPECT_EQ(c.error().code(), ErrorCode::kTimeout);
}

TEST(QemuCommand, TheConsoleIsASocketNeverAFile) {
  VmConfig vm;
  vm.name = "sb_test";
  vm.console_socket = "/vm/console.sock";
  const std::vector<std::string> argv = QemuCommand("/usr/bin/qemu-system-x86_64", vm);
  auto has = [&](const std::string& a) {
    return std::find(argv.begin(), argv.end(), a) != argv.end();
  };
  EXPECT_TRUE(has("socket,id=con,path=/vm/console.sock,server=on,wait=off"));
  EXPECT_TRUE(has("chardev:con"));
  for (const auto& a : argv) EXPECT_EQ(a.find("file:"), std::string::npos) << a;
  EXPECT_TRUE(has("-nodefaults"));
  EXPECT_TRUE(has("-no-reboot"));
}

TEST(QemuCommand, ANetworkedVmGetsATapDeviceAndItsAddressOnlyWhenNetworked) {
  VmConfig vm;
  vm.console_socket = "/vm/console.sock";
  auto has = [](const std::vector<std::string>& argv, const std::string& a) {
    return std::find(argv.begin(), argv.end(), a) != argv.end();
  };
  const auto plain = QemuCommand("/usr/bin/qemu-system-x86_64", vm);
  EXPECT_FALSE(has(plain, "-netdev"));
  vm.net_address = "10.213.0.7/16";
  vm.net_gateway = "10.213.0.1";
  vm.net_mac = "02:a5:0a:d5:00:07";
  const auto net = QemuCommand("/usr/bin/qemu-system-x86_64", vm);
  EXPECT_TRUE(has(net, "tap,id=net0,ifname=tap0,script=no,downscript=no"));
  EXPECT_TRUE(has(net, "virtio-net-device,netdev=net0,mac=02:a5:0a:d5:00:07"));
  const auto append = std::find(net.begin(), net.end(), "-append");
  ASSERT_NE(append, net.end());
  EXPECT_NE(append[1].find(" ASB_NET_ADDR=10.213.0.7/16 ASB_NET_GW=10.213.0.1"), std::string::npos)
      << append[1];
}

}  // namespace
}  // namespace asb::isolation::microvm
