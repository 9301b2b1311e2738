// bench_foundation: the foundation's latency and throughput figures, each beside the same work
// done by bubblewrap (the cold-start yardstick of ADR 0003) and the ratio ours / bwrap.
//
//   1. create -> first stdout byte of `echo hi`   (ns backend Create + exec, vs `bwrap ... echo
//   hi`)
//   2. exec round trip of `true` in a running sandbox (vs a whole `bwrap ... true`, since
//      bubblewrap has no running sandbox to exec into)
//   3. stdout throughput of `head -c 1G /dev/zero`  (through sandboxd's flow-controlled stream,
//      vs bwrap's inherited pipe)
//
// Needs root, a built sandboxd and the base template. Usage and figures: bench/README.md.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/ids.h"
#include "common/result.h"
#include "isolation/ns/ns_backend.h"
#include "protocol/client.h"
#include "protocol/messages.h"

extern char** environ;

namespace {
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using asb::Result;

struct Options {
  std::string data_dir = "/var/lib/agent-sandbox";
  std::string rootfs;
  std::string sandboxd;
  int create_iterations = 50;
  int exec_iterations = 500;
  int throughput_iterations = 3;
  uint64_t throughput_bytes = 1ull << 30;
  uint32_t pool = 2;
};

double Ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

struct Stats {
  double p50 = 0, p99 = 0, mean = 0;
};

Stats Summarise(std::vector<double> v) {
  Stats s;
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  auto pick = [&](double q) {
    size_t i = static_cast<size_t>(q * static_cast<double>(v.size() - 1) + 0.5);
    return v[std::min(i, v.size() - 1)];
  };
  s.p50 = pick(0.50);
  s.p99 = pick(0.99);
  for (double x : v) s.mean += x;
  s.mean /= static_cast<double>(v.size());
  return s;
}

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "bench_foundation: %s\n", what.c_str());
  std::exit(1);
}

template <typename T>
T Must(Result<T> r, const char* what) {
  if (!r) Die(std::string(what) + ": " + r.error().ToString());
  return std::move(*r);
}

// ---- ours -------------------------------------------------------------------------------------

asb::isolation::SandboxSpec MakeSpec(const Options& o) {
  asb::isolation::SandboxSpec spec;
  spec.id = asb::NewId("sb_");
  spec.rootfs = o.rootfs;
  spec.cpus = static_cast<double>(std::max(1L, ::sysconf(_SC_NPROCESSORS_ONLN)));
  return spec;
}

std::string ExecJson(std::vector<std::string> argv) {
  asb::protocol::ExecRequest req;
  req.argv = std::move(argv);
  return asb::protocol::EncodeExecRequest(req);
}

// Runs the exec to its end. Calls `on_data` for each stdout chunk; returns the RESULT.
asb::protocol::ExecResult Drain(asb::protocol::Channel& ch,
                                const std::function<void(const std::string&)>& on_data) {
  for (;;) {
    auto ev = Must(ch.Next(60'000), "exec event");
    if (ev.kind == asb::protocol::ChannelEvent::Kind::kData) {
      if (on_data) on_data(ev.payload);
    } else if (ev.kind == asb::protocol::ChannelEvent::Kind::kResult) {
      return Must(asb::protocol::DecodeExecResult(ev.payload), "decode result");
    } else if (ev.kind == asb::protocol::ChannelEvent::Kind::kError) {
      Die("exec failed: " + ev.error->ToString());
    }
  }
}

std::vector<double> OursCreateToFirstByte(asb::isolation::Backend& backend, const Options& o) {
  std::vector<double> ms;
  for (int i = 0; i < o.create_iterations; ++i) {
    auto spec = MakeSpec(o);
    auto t0 = Clock::now();
    auto sb = Must(backend.Create(spec), "create");
    auto ch = Must(sb->connection()->Open(ExecJson({"echo", "hi"})), "open exec");
    bool first = false;
    Drain(*ch, [&](const std::string&) {
      if (!first) ms.push_back(Ms(Clock::now() - t0));
      first = true;
    });
    if (!first) Die("echo hi printed nothing");
    sb->connection()->Close();
    sb.reset();
    Must(backend.Destroy(spec.id).map([] { return 0; }), "destroy");
    // Let the workspace pool refill, as it would between requests of a real server.
    ::usleep(20'000);
  }
  return ms;
}

std::vector<double> OursExecRoundTrip(asb::isolation::Sandbox& sb, const Options& o) {
  std::vector<double> ms;
  for (int i = 0; i < o.exec_iterations + 10; ++i) {
    auto t0 = Clock::now();
    auto ch = Must(sb.connection()->Open(ExecJson({"true"})), "open exec");
    auto r = Drain(*ch, nullptr);
    if (r.exit_code != 0) Die("true failed");
    if (i >= 10) ms.push_back(Ms(Clock::now() - t0));  // the first 10 warm up
  }
  return ms;
}

std::vector<double> OursThroughput(asb::isolation::Sandbox& sb, const Options& o) {
  std::vector<double> mib_s;
  std::string n = std::to_string(o.throughput_bytes);
  for (int i = 0; i < o.throughput_iterations; ++i) {
    uint64_t got = 0;
    auto t0 = Clock::now();
    auto ch = Must(sb.connection()->Open(ExecJson({"head", "-c", n, "/dev/zero"})), "open exec");
    Drain(*ch, [&](const std::string& d) { got += d.size(); });
    double s = Ms(Clock::now() - t0) / 1000.0;
    if (got != o.throughput_bytes) Die("throughput: got " + std::to_string(got) + " bytes");
    mib_s.push_back(static_cast<double>(got) / (1 << 20) / s);
  }
  return mib_s;
}

// ---- bwrap ------------------------------------------------------------------------------------

std::vector<std::string> BwrapArgv(const Options& o, std::vector<std::string> cmd) {
  std::vector<std::string> a = {"bwrap",
                                "--unshare-all",
                                "--die-with-parent",
                                "--new-session",
                                "--ro-bind",
                                o.rootfs,
                                "/",
                                "--proc",
                                "/proc",
                                "--dev",
                                "/dev",
                                "--tmpfs",
                                "/tmp",
                                "--tmpfs",
                                "/workspace",
                                "--chdir",
                                "/workspace",
                                "--hostname",
                                "sandbox",
                                "--uid",
                                "1000",
                                "--gid",
                                "1000",
                                "--cap-drop",
                                "ALL",
                                "--setenv",
                                "HOME",
                                "/workspace",
                                "--"};
  a.insert(a.end(), cmd.begin(), cmd.end());
  return a;
}

// Spawns argv with stdout on a pipe; calls on_data per read; returns ms to first byte (or to
// exit when there was no output) and fills total bytes.
double SpawnAndRead(const std::vector<std::string>& args, uint64_t* total, double* first_ms) {
  int p[2];
  if (::pipe2(p, O_CLOEXEC) != 0) Die("pipe");
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, p[1], 1);
  std::vector<std::string> copy = args;
  std::vector<char*> argv;
  for (auto& s : copy) argv.push_back(s.data());
  argv.push_back(nullptr);
  pid_t pid;
  auto t0 = Clock::now();
  if (posix_spawnp(&pid, argv[0], &fa, nullptr, argv.data(), environ) != 0) Die("spawn bwrap");
  posix_spawn_file_actions_destroy(&fa);
  ::close(p[1]);
  static char buf[1 << 16];
  *total = 0;
  *first_ms = -1;
  for (;;) {
    ssize_t n = ::read(p[0], buf, sizeof buf);
    if (n <= 0) break;
    if (*first_ms < 0) *first_ms = Ms(Clock::now() - t0);
    *total += static_cast<uint64_t>(n);
  }
  ::close(p[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  double all = Ms(Clock::now() - t0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) Die("bwrap command failed");
  return all;
}

std::vector<double> BwrapFirstByte(const Options& o, std::vector<std::string> cmd, int n) {
  std::vector<double> ms;
  for (int i = 0; i < n; ++i) {
    uint64_t total;
    double first;
    double all = SpawnAndRead(BwrapArgv(o, cmd), &total, &first);
    ms.push_back(first >= 0 ? first : all);
  }
  return ms;
}

std::vector<double> BwrapWhole(const Options& o, std::vector<std::string> cmd, int n) {
  std::vector<double> ms;
  for (int i = 0; i < n; ++i) {
    uint64_t total;
    double first;
    ms.push_back(SpawnAndRead(BwrapArgv(o, cmd), &total, &first));
  }
  return ms;
}

std::vector<double> BwrapThroughput(const Options& o) {
  std::vector<double> mib_s;
  for (int i = 0; i < o.throughput_iterations; ++i) {
    uint64_t total;
    double first;
    double all =
        SpawnAndRead(BwrapArgv(o, {"head", "-c", std::to_string(o.throughput_bytes), "/dev/zero"}),
                     &total, &first);
    mib_s.push_back(static_cast<double>(total) / (1 << 20) / (all / 1000.0));
  }
  return mib_s;
}

// ---- report -----------------------------------------------------------------------------------

void Row(const char* name, const char* unit, const Stats& ours, const Stats& bwrap) {
  std::printf("%-38s %9.3f %9.3f   %9.3f %9.3f   %6.2fx  %s\n", name, ours.p50, ours.p99, bwrap.p50,
              bwrap.p99, bwrap.p50 > 0 ? ours.p50 / bwrap.p50 : 0.0, unit);
}

void Usage() {
  std::fprintf(stderr,
               "usage: bench_foundation [--data-dir D] [--rootfs R] [--sandboxd PATH]\n"
               "         [--creates N] [--execs N] [--throughput-runs N] [--bytes N] [--pool N]\n");
  std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (const char* d = std::getenv("AGENT_SANDBOX_DATA_DIR")) o.data_dir = d;
  if (const char* s = std::getenv("AGENT_SANDBOX_SANDBOXD")) o.sandboxd = s;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) Usage();
      return argv[++i];
    };
    if (a == "--data-dir")
      o.data_dir = next();
    else if (a == "--rootfs")
      o.rootfs = next();
    else if (a == "--sandboxd")
      o.sandboxd = next();
    else if (a == "--creates")
      o.create_iterations = std::stoi(next());
    else if (a == "--execs")
      o.exec_iterations = std::stoi(next());
    else if (a == "--throughput-runs")
      o.throughput_iterations = std::stoi(next());
    else if (a == "--bytes")
      o.throughput_bytes = std::stoull(next());
    else if (a == "--pool")
      o.pool = static_cast<uint32_t>(std::stoul(next()));
    else
      Usage();
  }
  if (::geteuid() != 0) Die("needs root");
  if (o.rootfs.empty()) o.rootfs = o.data_dir + "/templates/base/rootfs";
  if (o.sandboxd.empty()) {
    o.sandboxd = (fs::read_symlink("/proc/self/exe").parent_path() / "sandboxd").string();
    if (!fs::exists(o.sandboxd)) {
      o.sandboxd = (fs::read_symlink("/proc/self/exe").parent_path() / "../bin/sandboxd").string();
    }
  }
  if (!fs::exists(o.rootfs + "/usr/bin/head")) Die("no template rootfs at " + o.rootfs);
  if (!fs::exists(o.sandboxd)) Die("no sandboxd at " + o.sandboxd + " (use --sandboxd)");
  ::signal(SIGPIPE, SIG_IGN);

  char tmpl[] = "/tmp/asb-bench-XXXXXX";
  if (::mkdtemp(tmpl) == nullptr) Die("mkdtemp");
  asb::isolation::ns::NsBackendOptions bo;
  bo.state_dir = std::string(tmpl) + "/sandboxes";
  bo.sandboxd_path = o.sandboxd;
  bo.workspace_pool_size = o.pool;
  auto backend = Must(asb::isolation::ns::MakeNsBackend(bo), "ns backend");

  std::printf("bench_foundation: rootfs %s, %d creates, %d execs, %d x %llu MiB, pool %u\n",
              o.rootfs.c_str(), o.create_iterations, o.exec_iterations, o.throughput_iterations,
              static_cast<unsigned long long>(o.throughput_bytes >> 20), o.pool);
  std::fflush(stdout);
  // Warm-up: page cache of the rootfs and sandboxd, the pool's first images.
  BwrapWhole(o, {"true"}, 3);
  {
    Options w = o;
    w.create_iterations = 3;
    OursCreateToFirstByte(*backend, w);
  }

  Stats c_ours = Summarise(OursCreateToFirstByte(*backend, o));
  Stats c_bwrap = Summarise(BwrapFirstByte(o, {"echo", "hi"}, o.create_iterations));

  auto spec = MakeSpec(o);
  auto sb = Must(backend->Create(spec), "create");
  Stats e_ours = Summarise(OursExecRoundTrip(*sb, o));
  Stats e_bwrap = Summarise(BwrapWhole(o, {"true"}, std::min(o.exec_iterations, 200)));
  Stats t_ours = Summarise(OursThroughput(*sb, o));
  sb->connection()->Close();
  sb.reset();
  Must(backend->Destroy(spec.id).map([] { return 0; }), "destroy");
  Stats t_bwrap = Summarise(BwrapThroughput(o));
  backend.reset();
  std::error_code ec;
  fs::remove_all(tmpl, ec);

  std::printf("\n%-38s %9s %9s   %9s %9s   %7s\n", "", "ours p50", "ours p99", "bwrap p50",
              "bwrap p99", "ratio");
  Row("create -> first byte of `echo hi`", "ms", c_ours, c_bwrap);
  Row("exec round trip of `true` (bwrap: run)", "ms", e_ours, e_bwrap);
  std::string tp = "stdout throughput `head -c " + std::to_string(o.throughput_bytes >> 20) + "M`";
  Row(tp.c_str(), "MiB/s", t_ours, t_bwrap);
  std::printf(
      "\n(ratio = ours p50 / bwrap p50; targets: create -> first byte p50 <= 10 ms, exec "
      "round trip p50 <= 1 ms)\n");
  return 0;
}
