#include "isolation/microvm/microvm_backend.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "common/ids.h"
#include "common/log.h"
#include "common/unique_fd.h"
#include "isolation/microvm/guest_console.h"
#include "isolation/microvm/guest_images.h"
#include "isolation/microvm/qemu_command.h"
#include "isolation/microvm/qemu_jail.h"
#include "isolation/net/command.h"
#include "isolation/net/policy.h"
#include "isolation/ns/cgroup.h"
#include "isolation/ns/cgroup_freeze.h"
#include "isolation/ns/contain.h"
#include "isolation/ns/files.h"
#include "isolation/ns/ns_backend.h"
#include "isolation/ns/user.h"
#include "isolation/ns/workspace.h"
#include "isolation/ns/workspace_seed.h"
#include "isolation/ns/workspace_snapshot.h"
#include "protocol/client.h"
#include "protocol/messages.h"
#include "protocol/stats_client.h"
#include "protocol/tcp_client.h"

namespace asb::isolation::microvm {

namespace {

// The sandbox's host directory (0700, root): `root` is QEMU's jail root (mount points only),
// `vm` (0700, the jail's uid) is what the jail sees as /vm; the QEMU log stays host-side.
struct Paths {
  std::string dir, root, vm, image, config, sock, console, log, network;
};

Paths PathsFor(const std::string& state_dir, const std::string& id) {
  Paths p;
  p.dir = state_dir + "/" + id;
  p.root = p.dir + "/root";
  p.vm = p.dir + "/vm";
  p.image = p.vm + "/workspace.img";
  p.config = p.vm + "/config.img";
  p.sock = p.vm + "/sandboxd.sock";
  p.console = p.vm + "/console.sock";
  p.log = p.dir + "/qemu.log";
  p.network = p.dir + "/network.json";  // a networked sandbox's policy (kept for adoption)
  return p;
}

// The same file as the jail shows it (below kJailVmDir).
std::string InJail(const Paths& p, const std::string& host_path) {
  return std::string(kJailVmDir) + host_path.substr(p.vm.size());
}

// What QEMU's process costs beyond the guest's RAM (its own heap, device models, I/O buffers
// and, under TCG, the translated-code cache), MiB: the cgroup's memory limit is RAM + this.
constexpr uint64_t kQemuOverheadMib = 96;
// What the guest itself takes of its RAM before any command runs, MiB: measured on Debian's 6.1
// cloud kernel, 36 MiB the kernel keeps (its image, memmap, the unpacked initramfs) and 37 MiB
// in use after boot (sandboxd, slabs, page tables), plus room for the page cache the workspace
// disk needs. The VM gets the sandbox's memory limit plus this, and the limit itself becomes
// memory.max of the guest's cgroup of commands: a sandbox of 128 MiB has 128 MiB for its
// commands (and its /tmp), as on ns, instead of the 55 MiB a 128 MiB VM leaves them.
constexpr uint64_t kGuestReserveMib = 96;
// How long a usage read waits for the guest's figures; a guest that does not answer in time is
// reported with the host's (the heartbeat ends a guest that stays silent).
constexpr int64_t kStatsTimeoutMs = 2'000;
// QEMU's threads (vCPUs, the main loop, up to 64 block I/O workers, RCU, ...) count against
// the pids limit: this many plus one per vCPU.
constexpr uint32_t kQemuThreads = 96;

// Starts the test boot's QEMU unjailed with `argv`, stdin /dev/null, stdout and stderr appended
// to `log`, in a session of its own. Returns its pid. (A sandbox's QEMU runs jailed:
// qemu_jail.h.)
Result<pid_t> SpawnQemu(const std::vector<std::string>& argv, const std::string& log) {
  UniqueFd null_fd(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  UniqueFd log_fd(::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600));
  if (!null_fd || !log_fd) return FailErrno("open " + log);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  static char* const kEnv[] = {const_cast<char*>("PATH=/usr/bin:/bin"), nullptr};
  const pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0) return FailErrno("fork");
  if (pid == 0) {
    // Async-signal-safe calls only.
    // It dies with the server: a probe whose server was SIGKILLed mid-boot was left spinning
    // in the host kernel for good (a /dev/kvm that takes only PVM guests never ends it).
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);  // the server died before the line above
    ::setsid();
    ::dup2(null_fd.get(), 0);
    ::dup2(log_fd.get(), 1);
    ::dup2(log_fd.get(), 2);
    // Nothing else of the server's: not every descriptor it holds is close-on-exec (the
    // listening socket is not), and a VM that outlives the server must not keep its port.
    ::syscall(SYS_close_range, 3u, ~0u, 0u);
    ::execve(args[0], args.data(), kEnv);
    ::_exit(127);
  }
  return pid;
}

// A test boot with the guest's probe mode (it powers off at once): does `accel` work here?
// Where KVM works this boot takes well under a second; where it does not, it may fail at once
// or spin without end (a /dev/kvm that takes only PVM guest kernels, as on the machines of
// docs/ARCHITECTURE.md, burns a core in the host kernel): `timeout` bounds what the server's
// start pays for finding that out.
bool BootWorks(const std::string& qemu, const GuestKernel& k, const std::string& accel,
               std::chrono::seconds timeout) {
  std::vector<std::string> argv = ProbeCommand(qemu, k, accel);
  auto pid = SpawnQemu(argv, "/dev/null");
  if (!pid) return false;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  int status = 0;
  for (;;) {
    pid_t r = ::waitpid(*pid, &status, WNOHANG);
    if (r == *pid) break;
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(*pid, SIGKILL);
      ::waitpid(*pid, &status, 0);
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

// The guest's MAC: locally administered (02:), then the guest's IPv4 address, so unique on the
// host's bridge as the address is.
std::string MacFor(const std::string& dotted) {
  unsigned a = 0, b = 0, c = 0, d = 0;
  std::sscanf(dotted.c_str(), "%u.%u.%u.%u", &a, &b, &c, &d);
  char mac[32];
  std::snprintf(mac, sizeof mac, "02:a5:%02x:%02x:%02x:%02x", a & 255, b & 255, c & 255, d & 255);
  return mac;
}

// In the network namespace of QEMU (`pid`), where HostNetwork::Attach put the sandbox's veth
// as eth0: eth0 becomes a bare port (its address and route are the guest's now), a tap device
// owned by QEMU's host uid is made, and tc redirects every frame between the two, so the guest
// is on the host's bridge as an ns sandbox's eth0 would be (Kata Containers' "tcfilter" model;
// no bridge in the namespace, nothing learnt there).
Status JoinTapToVeth(pid_t pid, uint32_t qemu_uid) {
  const std::string ip = net::FindTool("ip"), tc = net::FindTool("tc");
  const std::string nsenter = net::FindTool("nsenter");
  if (ip.empty() || tc.empty() || nsenter.empty()) {
    return Fail(Error::Unavailable("ip, tc or nsenter not found (iproute2, util-linux)"));
  }
  const std::string netns = "--net=/proc/" + std::to_string(pid) + "/ns/net";
  const std::string tap = kNetTap, uid = std::to_string(qemu_uid);
  ASB_TRY_CTX(net::RunTool({nsenter, netns, ip, "-batch", "-"},
                           "route flush dev eth0\naddr flush dev eth0\n"
                           "tuntap add dev " +
                               tap + " mode tap user " + uid + " group " + uid + "\nlink set " +
                               tap + " up\n"),
              "tap device");
  const std::string redirect =
      " parent ffff: protocol all u32 match u32 0 0 action mirred egress"
      " redirect dev ";
  ASB_TRY_CTX(net::RunTool({nsenter, netns, tc, "-batch", "-"},
                           "qdisc add dev eth0 ingress\nqdisc add dev " + tap + " ingress\n" +
                               "filter add dev eth0" + redirect + tap + "\n" + "filter add dev " +
                               tap + redirect + "eth0\n"),
              "tap to veth");
  return {};
}

class MicrovmSandbox final : public Sandbox {
 public:
  /// `pidfd` refers to QEMU (`pid`): this server's child, or the QEMU of an earlier server
  /// process when adopted, which this one cannot reap (so its pid is never signalled, only
  /// its pidfd).
  MicrovmSandbox(std::string id, std::shared_ptr<protocol::Connection> conn, pid_t pid,
                 UniqueFd pidfd, std::string image, std::unique_ptr<GuestConsole> console,
                 ns::CgroupPaths cgroups)
      : id_(std::move(id)),
        conn_(std::move(conn)),
        pid_(pid),
        pidfd_(std::move(pidfd)),
        image_(std::move(image)),
        console_(std::move(console)),
        cgroups_(std::move(cgroups)) {}
  const std::string& id() const override { return id_; }
  std::shared_ptr<protocol::Connection> connection() override { return conn_; }
  int host_pid() const override { return pid_; }
  Result<SandboxUsage> Usage() override {
    // The host sees QEMU (the guest RAM it touched plus its own memory, its cpu time, its
    // threads) and the QEMU kills of the host's OOM killer; the commands' figures are the
    // guest's own, from its sandboxd (the stats operation). The workspace: the image's
    // allocated size.
    ASB_ASSIGN_OR_RETURN(SandboxUsage u, ns::ReadCgroupUsage(cgroups_));
    struct stat st;
    if (::stat(image_.c_str(), &st) == 0) u.workspace_used_bytes = uint64_t(st.st_blocks) * 512;
    // Exec results compare oom_kills and pids_limit_hits before and after a command
    // (oom_killed, pids_limited): the guest's counters are read as the command ends, while the
    // console's count of kill lines may lag its reader, so it only stands in when the guest
    // cannot answer.
    uint64_t guest_oom_kills = GuestOomKills();
    u.pids_limit_hits = 0;
    if (!paused_.load() && conn_ && conn_->alive()) {  // a frozen guest cannot answer
      if (auto s = protocol::ReadSandboxStats(*conn_, kStatsTimeoutMs)) {
        if (s->memory_bytes > 0) u.memory_bytes = s->memory_bytes;
        if (s->memory_peak_bytes > 0) u.memory_peak_bytes = s->memory_peak_bytes;
        u.pids = s->pids;
        u.cpu_usage_ns = s->cpu_usage_ns;
        u.pids_limit_hits = s->pids_limit_hits;
        guest_oom_kills = std::max(guest_oom_kills, s->oom_kills);
      }
    }
    u.oom_kills += guest_oom_kills;
    return u;
  }
  // The guest has no network of the host's to reach (none at all unless networked): its
  // sandboxd connects inside and relays over the protocol (tcp.connect).
  Result<int> ConnectTcp(uint16_t port, int timeout_ms) override {
    if (!conn_ || !conn_->alive()) return Fail(Error::Unavailable("the sandbox is not running"));
    return protocol::ConnectTcpThroughSandboxd(*conn_, port, timeout_ms);
  }

  /// Starts one heartbeat: a small request (a stat) the guest's sandboxd must answer. Any
  /// answer, an error included, proves the guest runs. nullptr when there is nothing to ask
  /// (the connection is gone or the guest was already found hung).
  /// Bytes the guest's sandboxd has sent on any channel so far (0 without a connection).
  uint64_t BytesReceived() const { return conn_ ? conn_->bytes_received() : 0; }

  std::shared_ptr<protocol::Channel> StartHeartbeat() {
    if (paused_.load() || hung_.load() || !conn_ || !conn_->alive()) return nullptr;
    protocol::FileStatRequest stat;
    stat.path = "/";
    auto ch = conn_->Open(protocol::EncodeFileStatRequest(stat));
    return ch ? std::move(*ch) : nullptr;
  }
  /// Paused (its cgroups frozen, so it cannot answer): the heartbeat leaves it alone. Set before
  /// the freeze and cleared after the thaw.
  void SetPaused(bool paused) { paused_.store(paused); }
  bool paused() const { return paused_.load(); }

  /// Sets the guest's wall clock to the host's: it stood still while the VM was frozen.
  /// Best effort (a guest that does not answer is the heartbeat's concern).
  void SyncClock() {
    if (!conn_ || !conn_->alive()) return;
    const int64_t now_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                               std::chrono::system_clock::now().time_since_epoch())
                               .count();
    if (auto st = protocol::SetGuestClock(*conn_, now_ns, kStatsTimeoutMs); !st) {
      spdlog::warn("sandbox_id={} the guest's clock was not set after the resume: {}", id_,
                   st.error().ToString());
    }
  }

  /// The guest did not answer a heartbeat in `waited_ms`: the VM is ended (QEMU killed through
  /// its pidfd) and the connection closed, so every call in flight fails at once and the
  /// registry records the sandbox's failure with LostReason.
  void MarkHung(int64_t waited_ms) {
    hung_after_s_.store(static_cast<int>((waited_ms + 999) / 1000));
    if (hung_.exchange(true)) return;
    spdlog::warn("sandbox_id={} the guest did not answer its heartbeat in {} ms: ending the VM",
                 id_, waited_ms);
    ::syscall(SYS_pidfd_send_signal, pidfd_.get(), SIGKILL, nullptr, 0);
    conn_->Close();
  }

  // How many processes the guest kernel's OOM killer ended so far, as its console says
  // (ConsoleScanner::kOomKillMark). Guest text: a guest can forge a line, which only marks its
  // own command as OOM-killed.
  uint64_t GuestOomKills() { return console_->oom_kills(); }

  // What ended the VM: a guest kernel panic (panic=-1 and -no-reboot end the VM) or our init's
  // failure as the guest's console says, the host's OOM killer in the VM's cgroup, else that
  // the VM is gone. Guest text only, never a host path.
  std::string LostReason() override {
    if (hung_.load()) {
      return "the guest stopped answering (no heartbeat answer in " +
             std::to_string(hung_after_s_.load()) + " s)";
    }
    // The VM's last words: QEMU closes the console as it exits, which comes with the end of
    // the protocol connection that made the registry ask; reading them is a moment's work.
    console_->WaitClosed(1000);
    if (auto line = console_->LastLine(ConsoleScanner::kPanicMark); !line.empty()) {
      return "the guest kernel panicked (" + line + ")";
    }
    if (auto line = console_->LastLine(ConsoleScanner::kInitFailureMark); !line.empty()) {
      return "the guest failed (" + line + ")";
    }
    if (::syscall(SYS_pidfd_send_signal, pidfd_.get(), 0, nullptr, 0) == 0) return "";
    auto usage = ns::ReadCgroupUsage(cgroups_);
    if (usage && usage->oom_kills > 0) {
      return "the virtual machine was killed: it exceeded its memory limit on the host";
    }
    return "the virtual machine ended";
  }

 private:
  std::string id_;
  std::shared_ptr<protocol::Connection> conn_;
  pid_t pid_;
  UniqueFd pidfd_;
  std::string image_;
  std::unique_ptr<GuestConsole> console_;
  ns::CgroupPaths cgroups_;
  std::atomic<bool> hung_{false};
  std::atomic<bool> paused_{false};
  std::atomic<int> hung_after_s_{0};  // how long the unanswered heartbeat waited
};

// The guest's own account of a boot that never reached sandboxd, for the create's error: a
// kernel panic or our init's failure when the console has one (the VM powers off right after,
// so its last line is the kernel's "Power down"), else its last line. Guest text only.
std::string BootFailure(GuestConsole& console) {
  console.WaitClosed(1000);
  if (auto line = console.LastLine(ConsoleScanner::kPanicMark); !line.empty()) return line;
  if (auto line = console.LastLine(ConsoleScanner::kInitFailureMark); !line.empty()) return line;
  return console.LastOutputLine();
}

class MicrovmBackend final : public Backend {
 public:
  MicrovmBackend(MicrovmOptions opts, GuestKernel kernel, std::string accel,
                 ns::CgroupLayout layout)
      : opts_(std::move(opts)),
        requested_accel_(std::move(accel)),
        images_(opts_.state_dir + "/.images", std::move(kernel), opts_.sandboxd_path),
        seeds_(opts_.state_dir + "/.seeds", protocol::kSandboxUid),
        layout_(std::move(layout)),
        slots_(ns::ChooseUidRegistry(opts_.state_dir), opts_.state_dir, opts_.uid_range_base,
               opts_.max_slots) {
    heartbeat_ = std::thread([this] { HeartbeatLoop(); });
  }
  ~MicrovmBackend() override {
    {
      std::lock_guard lock(heartbeat_mu_);
      heartbeat_stop_ = true;
    }
    heartbeat_cv_.notify_all();
    heartbeat_.join();
  }

  std::string_view name() const override { return "microvm"; }
  BackendCapabilities Capabilities() const override {
    return {.adopt = true,
            .network = opts_.network != nullptr,
            .tcp_connect = true,
            .pause = ns::CanFreeze(layout_),
            .exec_limit_hits = true};
  }
  Status Probe() override {
    if (::access(opts_.qemu_path.c_str(), X_OK) != 0) {
      return Fail(Error::WithOperatorDetail(ErrorCode::kUnavailable, "QEMU not found",
                                            opts_.qemu_path + " not found (qemu-system-x86)"));
    }
    return {};
  }
  std::string accelerator() const override { return Accel(); }

  Result<std::shared_ptr<Sandbox>> Create(const SandboxSpec& spec) override {
    if (!IsValidId(spec.id, "sb_")) return Fail(Error::InvalidArgument("bad sandbox id"));
    if (spec.network && !opts_.network) {
      return Fail(Error::InvalidArgument("networking is not enabled on this server"));
    }
    if (!spec.workspace_image.empty()) return Fail(NotCapable("microvm", "workspace images"));
    if (!spec.memory_snapshot.empty()) return Fail(NotCapable("microvm", "memory snapshots"));
    const Paths p = PathsFor(opts_.state_dir, spec.id);
    if (p.sock.size() >= sizeof(sockaddr_un::sun_path)) {
      return Fail(Error::InvalidArgument("state_dir too long for a unix socket path"));
    }
    if (::mkdir(p.dir.c_str(), 0700) != 0) {
      if (errno == EEXIST) return Fail(Error::Conflict("sandbox " + spec.id + " already exists"));
      return FailErrno("mkdir " + p.dir);
    }
    auto result = CreateIn(spec, p);
    if (!result) {
      (void)Destroy(spec.id);
      return Fail(std::move(result).error().WithContext("create " + spec.id));
    }
    return result;
  }

  // A VM outlives the server that started it (QEMU runs in a session and cgroups of its own):
  // a restarted server finds its QEMU by the VM's cgroup, reads its console again and dials
  // its protocol socket, where the guest's sandboxd, which opens its port again whenever the
  // host side comes back, answers. kNotFound when the VM is gone (the registry then drops the
  // record and Destroy clears what is left).
  Result<std::shared_ptr<Sandbox>> Adopt(const std::string& id) override {
    if (!IsValidId(id, "sb_")) return Fail(Error::NotFound("no such sandbox"));
    const Paths p = PathsFor(opts_.state_dir, id);
    const ns::CgroupPaths cgroups = ns::CgroupPathsFor(layout_, opts_.cgroup_name, id);
    const std::vector<int> pids = ns::CgroupProcesses(cgroups);
    if (pids.size() != 1 || !ns::PathExists(p.sock)) {
      // No QEMU (the VM ended while no server ran), or not the one process a VM's cgroups
      // hold: nothing of it is adopted.
      return Fail(Error::NotFound("the virtual machine of " + id + " is gone"));
    }
    const pid_t pid = pids[0];
    UniqueFd pidfd(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));
    if (!pidfd) return Fail(Error::NotFound("the virtual machine of " + id + " is gone"));
    ASB_ASSIGN_OR_RETURN(std::unique_ptr<GuestConsole> console,
                         GuestConsole::Connect(p.console, 2'000));
    // A paused VM cannot answer the handshake: thawed for it and frozen again, as it was found
    // (the manager then decides whether it stays paused).
    const bool was_frozen = ns::CgroupsFrozen(cgroups);
    if (was_frozen) ASB_TRY_CTX(ns::ThawCgroups(cgroups), "adopt " + id);
    // The guest's sandboxd notices the old connection's end and opens its port again within
    // Daemon::kPortRetryMs; until then QEMU holds our HELLO.
    auto conn = protocol::Connection::Dial(p.sock, 10'000);
    if (was_frozen) (void)ns::FreezeCgroups(cgroups, kFreezeTimeoutMs);
    if (!conn) {
      return Fail(std::move(conn).error().WithContext(
          "adopt " + id + ": the guest did not answer (" + console->LastOutputLine() + ")"));
    }
    // A networked VM keeps its network: this process's resolver learns its policy again.
    if (auto text = ns::ReadSmallFile(p.network); text && opts_.network) {
      ASB_ASSIGN_OR_RETURN(auto policy, net::PolicyFromJson(*text));
      ASB_ASSIGN_OR_RETURN(uint32_t slot, slots_.Find(id));
      ASB_TRY_CTX(opts_.network->Update(id, slot, pid, policy, /*forget_resolved=*/false),
                  "adopt " + id);
    }
    // Not this process's child: Destroy ends it through the VM's cgroups.
    auto sandbox = std::make_shared<MicrovmSandbox>(id, std::move(*conn), pid, std::move(pidfd),
                                                    p.image, std::move(console), cgroups);
    sandbox->SetPaused(was_frozen && ns::CgroupsFrozen(cgroups));
    {
      std::lock_guard lock(mu_);
      live_[id] = sandbox;
    }
    spdlog::info("sandbox_id={} microvm adopted: accel={} pid={}", id, Accel(), pid);
    return std::shared_ptr<Sandbox>(std::move(sandbox));
  }

  // QEMU first when this process started it (killed through its pidfd and reaped), then
  // whatever is left in the VM's cgroups (an adopted QEMU, an earlier server's), the cgroups,
  // the uid range and the directory.
  Status Destroy(const std::string& id) override {
    if (!IsValidId(id, "sb_")) return {};
    const Paths p = PathsFor(opts_.state_dir, id);
    ns::ChildProcess child;
    {
      std::lock_guard lock(mu_);
      auto it = children_.find(id);
      if (it != children_.end()) {
        child = std::move(it->second);
        children_.erase(it);
      }
      live_.erase(id);
    }
    if (child.pid > 0) {
      ::syscall(SYS_pidfd_send_signal, child.pidfd.get(), SIGKILL, nullptr, 0);
      while (::waitpid(child.pid, nullptr, 0) < 0 && errno == EINTR) {
      }
    }
    const ns::CgroupPaths cgroups = ns::CgroupPathsFor(layout_, opts_.cgroup_name, id);
    if (ns::AnyCgroupExists(cgroups)) {
      (void)ns::KillCgroupProcesses(cgroups);
      ASB_TRY_CTX(ns::WaitCgroupsEmpty(cgroups, 5000), "destroy " + id);
      ASB_TRY_CTX(ns::RemoveCgroups(cgroups), "destroy " + id);
      ns::RemoveEmptyCgroupParents(layout_, opts_.cgroup_name);
    }
    if (opts_.network) {
      // Idempotent; the veth went with QEMU's network namespace, its rules go here.
      if (auto slot = slots_.Find(id)) {
        ASB_TRY_CTX(opts_.network->Detach(id, *slot), "destroy " + id);
      }
    }
    ASB_TRY_CTX(slots_.ReleaseAll(id), "destroy " + id);
    return ns::RemoveTree(p.dir);
  }

  Result<std::vector<std::string>> ListOwned() override {
    ASB_ASSIGN_OR_RETURN(auto names, ns::ListDir(opts_.state_dir));
    std::set<std::string> ids;
    for (auto& n : names) {
      if (IsValidId(n, "sb_")) ids.insert(std::move(n));
    }
    for (auto& n : ns::ListCgroupIds(layout_, opts_.cgroup_name)) {
      if (IsValidId(n, "sb_")) ids.insert(std::move(n));
    }
    return std::vector<std::string>(ids.begin(), ids.end());
  }

  Result<std::string> WorkspaceImageDir() const override {
    return Fail(NotCapable("microvm", "workspace images"));
  }
  Result<WorkspaceImageCopy> CopyWorkspaceImage(const std::string&, const std::string&) override {
    return Fail(NotCapable("microvm", "workspace images"));
  }
  Result<WorkspaceImageCopy> StageWorkspace(const std::string&, const std::string&) override {
    return Fail(NotCapable("microvm", "workspace images"));
  }
  bool HasStagedWorkspace(const std::string&) override { return false; }
  Result<bool> SwapStagedWorkspace(const std::string&) override {
    return Fail(NotCapable("microvm", "workspace images"));
  }
  Status DropStagedWorkspace(const std::string&) override { return {}; }
  // A VM's memory is fixed when it boots (no balloon yet), so a warm pool's VMs match their
  // claims' limits exactly instead (core/warm_pool.h).
  Status UpdateLimits(const std::string&, uint64_t, double) override {
    return Fail(NotCapable("microvm", "changing the limits of a running sandbox"));
  }
  Status UpdateNetwork(const std::string& id, const net::NetworkPolicy& policy) override {
    if (!IsValidId(id, "sb_")) return Fail(Error::InvalidArgument("not a sandbox id: " + id));
    const Paths p = PathsFor(opts_.state_dir, id);
    if (!opts_.network || !ns::PathExists(p.network)) {
      return Fail(Error::InvalidArgument("sandbox " + id + " was created without network"));
    }
    pid_t pid = -1;
    {
      std::lock_guard lock(mu_);
      auto it = live_.find(id);
      if (auto vm = it == live_.end() ? nullptr : it->second.lock()) pid = vm->host_pid();
    }
    if (pid <= 0) return Fail(Error::NotFound("sandbox " + id + " is not running"));
    ASB_ASSIGN_OR_RETURN(uint32_t slot, slots_.Find(id));
    ASB_TRY(opts_.network->Update(id, slot, pid, policy, /*forget_resolved=*/true));
    return ns::WriteFileAtomic(p.network, net::PolicyToJson(policy), /*durable=*/false);
  }
  // Pause freezes the VM's cgroups: QEMU's every thread stops, so the guest (its vCPUs, its
  // clocks as QEMU drives them, its devices) stops where it is and keeps its memory, and later
  // continues. Pause to disk (the VM's state saved and QEMU gone) is a later step.
  Status Pause(const std::string& id) override { return SetFrozen(id, true); }
  Status Resume(const std::string& id) override { return SetFrozen(id, false); }
  Result<MemorySnapshotInfo> SnapshotMemory(const std::string&, const std::string&) override {
    return Fail(NotCapable("microvm", "memory snapshots (yet)"));
  }

 private:
  static constexpr int64_t kFreezeTimeoutMs = 5000;

  Status SetFrozen(const std::string& id, bool frozen) {
    const std::string what = frozen ? "pause " : "resume ";
    if (!ns::CanFreeze(layout_)) return Fail(NotCapable(name(), "pause"));
    if (!IsValidId(id, "sb_")) return Fail(Error::NotFound("no sandbox " + id));
    const ns::CgroupPaths cgroups = ns::CgroupPathsFor(layout_, opts_.cgroup_name, id);
    if (!ns::AnyCgroupExists(cgroups)) {
      return Fail(Error::NotFound("sandbox " + id + " is not running"));
    }
    std::shared_ptr<MicrovmSandbox> vm;
    {
      std::lock_guard lock(mu_);
      if (auto it = live_.find(id); it != live_.end()) vm = it->second.lock();
    }
    if (vm && frozen) vm->SetPaused(true);  // before: no heartbeat may time out on the freeze
    Status st = frozen ? ns::FreezeCgroups(cgroups, kFreezeTimeoutMs) : ns::ThawCgroups(cgroups);
    if (vm && (frozen ? !st : static_cast<bool>(st))) vm->SetPaused(false);
    if (vm && !frozen && st) vm->SyncClock();
    return st.map_error([&](Error e) { return std::move(e).WithContext(what + id); });
  }

  // The files QEMU opens, in the jail's /vm, owned by the jail's uid.
  Status PrepareVmDir(const SandboxSpec& spec, const Paths& p, uint32_t jail_id) {
    if (::mkdir(p.vm.c_str(), 0700) != 0) return FailErrno("mkdir " + p.vm);
    // What the template holds under /workspace (a Dockerfile's COPY or WORKDIR there) starts
    // every sandbox's workspace, as on the ns backend: the guest mounts this disk over the
    // rootfs's /workspace, which would otherwise hide it. The seed holds canonical ids, which
    // the guest sees as they are (root 0, the sandbox user 1000).
    ASB_ASSIGN_OR_RETURN(std::string seed, seeds_.ImageFor(spec.rootfs, spec.workspace_bytes));
    if (!seed.empty()) {
      ASB_TRY_CTX(ns::CloneImage(seed, p.image, /*force_copy=*/false, /*durable=*/false),
                  "workspace");
    } else {
      ASB_TRY_CTX(ns::MakeWorkspaceImage(p.image, spec.workspace_bytes, protocol::kSandboxUid),
                  "workspace");
    }
    // sandboxd's config (env, hostname) as a small read-only disk, padded with NULs to whole
    // sectors; the guest's init strips them and hands the JSON to sandboxd's --config-fd.
    std::string config = ns::SandboxdConfigJson(spec);
    if (config.size() > (1u << 20)) return Fail(Error::InvalidArgument("env too large (> 1 MiB)"));
    config.resize((config.size() / 4096 + 1) * 4096, '\0');
    ASB_TRY(ns::WriteFileAtomic(p.config, config, /*durable=*/false));
    for (const std::string* path : {&p.vm, &p.image, &p.config}) {
      if (::chown(path->c_str(), jail_id, jail_id) != 0) return FailErrno("chown " + *path);
    }
    return {};
  }

  Result<std::shared_ptr<Sandbox>> CreateIn(const SandboxSpec& spec, const Paths& p) {
    ASB_ASSIGN_OR_RETURN(std::string rootfs, images_.RootfsImage(spec.rootfs));
    ASB_ASSIGN_OR_RETURN(std::string initrd, images_.Initrd());
    // A host uid range of its own (shared machine-wide with the ns backend's sandboxes).
    ASB_ASSIGN_OR_RETURN(uint32_t slot, slots_.Acquire(spec.id));
    const uint32_t id_base = opts_.uid_range_base + slot * ns::kIdsPerSlot;
    ASB_TRY(PrepareVmDir(spec, p, JailHostId(id_base)));

    VmConfig vm;
    vm.name = spec.id;
    vm.kernel = images_.kernel();
    vm.kernel.vmlinuz = std::string(kJailGuestDir) + "/vmlinuz";
    vm.initrd = std::string(kJailGuestDir) + "/initrd";
    vm.rootfs_image = std::string(kJailGuestDir) + "/rootfs.img";
    vm.workspace_image = InJail(p, p.image);
    vm.config_image = InJail(p, p.config);
    vm.socket = InJail(p, p.sock);
    vm.console_socket = InJail(p, p.console);
    vm.accel = Accel();
    vm.work_memory_bytes = std::max<uint64_t>(spec.memory_bytes, 32ull << 20);
    vm.memory_mib = (vm.work_memory_bytes >> 20) + kGuestReserveMib;
    vm.vcpus = std::max(1, static_cast<int>(std::ceil(spec.cpus)));
    vm.hostname = spec.hostname;
    vm.tmp_bytes = spec.tmp_bytes;
    vm.pids_limit = spec.pids_limit;
    if (spec.network) {
      ASB_ASSIGN_OR_RETURN(std::string address, opts_.network->AddressOf(slot));
      vm.net_address = address + "/" + std::to_string(opts_.network->prefix_length());
      vm.net_gateway = opts_.network->GatewayAddress();
      vm.net_mac = MacFor(address);
      ASB_TRY(ns::WriteFileAtomic(p.network, net::PolicyToJson(spec.network_policy), false));
    }

    JailSpec jail;
    jail.root = p.root;
    jail.vm_dir = p.vm;
    jail.guest_files = {
        {images_.kernel().vmlinuz, "vmlinuz"}, {initrd, "initrd"}, {rootfs, "rootfs.img"}};
    jail.qemu_path = opts_.qemu_path;
    jail.kvm = Accel() == "kvm";
    jail.tun = spec.network;
    jail.host_id_base = id_base;
    UniqueFd null_fd(::open("/dev/null", O_RDONLY | O_CLOEXEC));
    UniqueFd log_fd(::open(p.log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600));
    if (!null_fd || !log_fd) return FailErrno("open " + p.log);
    ASB_ASSIGN_OR_RETURN(ns::ChildPlan plan, PrepareQemuJail(jail, QemuCommand(opts_.qemu_path, vm),
                                                             null_fd.get(), log_fd.get()));

    // The VM's cgroups: QEMU is born into the limits (no sandboxd on the host side to move
    // commands, so the v1 work children are where it runs). Memory: the guest's RAM plus
    // QEMU's own; a VM that passes it is OOM-killed on the host and reported as such.
    const ns::CgroupPaths cgroups = ns::CgroupPathsFor(layout_, opts_.cgroup_name, spec.id);
    const uint64_t overhead_mib = kQemuOverheadMib + (Accel() == "kvm" ? 0 : kTcgCacheMib);
    ASB_TRY_CTX(
        ns::CreateCgroupsFromParent(layout_, opts_.cgroup_name, cgroups,
                                    {(vm.memory_mib + overhead_mib) << 20,
                                     kQemuThreads + static_cast<uint32_t>(vm.vcpus), spec.cpus}),
        "cgroups");
    ASB_ASSIGN_OR_RETURN(ns::CloneIntoCgroups into,
                         ns::CloneIntoCgroups::Prepare(layout_, ns::CommandCgroupPaths(cgroups)));
    // While QEMU waits before its exec: its id maps, and for a networked VM the network its
    // tap device will join (QEMU opens the tap by name as it starts).
    auto prepare = [&](pid_t pid) -> Status {
      ASB_TRY(ns::WriteIdMapsFromParent(pid, id_base));
      if (!spec.network) return {};
      ASB_TRY_CTX(opts_.network->Attach(spec.id, slot, pid, spec.network_policy), "network");
      return JoinTapToVeth(pid, JailHostId(id_base));
    };
    ASB_ASSIGN_OR_RETURN(ns::ChildProcess started,
                         ns::StartContainedChild(plan, into, prepare, 10'000));
    const pid_t pid = started.pid;
    {
      std::lock_guard lock(mu_);
      children_[spec.id] = std::move(started);
    }
    const int64_t timeout = opts_.start_timeout_ms > 0 ? opts_.start_timeout_ms
                            : Accel() == "kvm"         ? 20'000
                                                       : 60'000;
    // QEMU makes the socket at once and holds our HELLO until the guest's sandboxd opens the
    // port, so one dial waits out the boot; a VM that ended meanwhile fails it at once.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout);
    while (!ns::PathExists(p.sock)) {
      int status = 0;
      if (::waitpid(pid, &status, WNOHANG) == pid) {
        std::lock_guard lock(mu_);
        children_.erase(spec.id);
        spdlog::warn("sandbox_id={} QEMU exited at start: {}", spec.id, Tail(p.log));
        return Fail(Error::Backend("QEMU exited at start (the server's log says why)"));
      }
      if (std::chrono::steady_clock::now() > deadline) {
        return Fail(Error::Timeout("QEMU made no socket in time"));
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    // QEMU binds each socket a moment before it listens: a refused connect in that window is
    // retried (as long as QEMU runs and time is left), not the create's failure. The console
    // first (QEMU made it before the protocol's socket): the boot's lines are read from here on.
    auto ms_left = [&] {
      return std::chrono::duration_cast<std::chrono::milliseconds>(deadline -
                                                                   std::chrono::steady_clock::now())
          .count();
    };
    ASB_ASSIGN_OR_RETURN(std::unique_ptr<GuestConsole> console,
                         GuestConsole::Connect(p.console, std::max<int64_t>(ms_left(), 1000)));
    auto conn = protocol::Connection::Dial(p.sock, std::max<int64_t>(ms_left(), 1000));
    while (!conn && conn.error().sys_errno() == ECONNREFUSED && ms_left() > 0 &&
           ::kill(pid, 0) == 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      conn = protocol::Connection::Dial(p.sock, std::max<int64_t>(ms_left(), 1000));
    }
    if (!conn) {
      return Fail(std::move(conn).error().WithContext("the guest's sandboxd did not answer (" +
                                                      Accel() + "): " + BootFailure(*console)));
    }
    spdlog::info("sandbox_id={} microvm up: accel={} pid={} uid={}", spec.id, Accel(), pid,
                 JailHostId(id_base));
    UniqueFd pidfd;
    {
      std::lock_guard lock(mu_);
      pidfd.Reset(::fcntl(children_[spec.id].pidfd.get(), F_DUPFD_CLOEXEC, 0));
    }
    if (!pidfd) return FailErrno("dup pidfd");
    auto sandbox = std::make_shared<MicrovmSandbox>(
        spec.id, std::move(*conn), pid, std::move(pidfd), p.image, std::move(console), cgroups);
    {
      std::lock_guard lock(mu_);
      live_[spec.id] = sandbox;
    }
    return std::shared_ptr<Sandbox>(std::move(sandbox));
  }

  // A hung guest (its kernel stuck, QEMU stopped, a vCPU spinning with interrupts off) keeps
  // its socket open and answers nothing: without this, every call to it would wait out its
  // own timeout and the sandbox would look running forever. Every interval, each VM gets a
  // heartbeat (all sent first, then awaited against one deadline, so one hung guest does not
  // delay the others' checks); one unanswered within the timeout ends that VM.
  // Every interval, a stat of "/" to each running guest. A guest that sends nothing at all for
  // the whole timeout is hung (MarkHung ends its VM); one that sends other channels' frames but
  // is late with this answer is busy (under TCG, 200 commands starting at once keep a guest's
  // sandboxd from answering for seconds) and is asked again at the next interval.
  void HeartbeatLoop() {
    const auto interval = std::chrono::milliseconds(
        opts_.heartbeat_timeout_ms > 0 ? std::min<int64_t>(5'000, opts_.heartbeat_timeout_ms / 2)
                                       : 5'000);
    for (;;) {
      {
        std::unique_lock lock(heartbeat_mu_);
        if (heartbeat_cv_.wait_for(lock, interval, [this] { return heartbeat_stop_; })) return;
      }
      std::vector<std::shared_ptr<MicrovmSandbox>> vms;
      {
        std::lock_guard lock(mu_);
        for (auto& [id, weak] : live_) {
          if (auto vm = weak.lock()) vms.push_back(std::move(vm));
        }
      }
      if (vms.empty()) continue;
      // Not before: deciding the accelerator may cost a test boot (Accel()).
      const int64_t timeout = opts_.heartbeat_timeout_ms > 0 ? opts_.heartbeat_timeout_ms
                              : Accel() == "kvm"             ? 10'000
                                                             : 30'000;
      struct Pending {
        std::shared_ptr<MicrovmSandbox> vm;
        std::shared_ptr<protocol::Channel> ch;
        uint64_t bytes_before = 0;
      };
      std::vector<Pending> pending;
      for (auto& vm : vms) {
        const uint64_t before = vm->BytesReceived();
        if (auto ch = vm->StartHeartbeat()) pending.push_back({vm, std::move(ch), before});
      }
      const auto start = std::chrono::steady_clock::now();
      const auto deadline = start + std::chrono::milliseconds(timeout);
      for (auto& [vm, ch, bytes_before] : pending) {
        for (;;) {
          const int64_t left =
              std::max<int64_t>(0, std::chrono::duration_cast<std::chrono::milliseconds>(
                                       deadline - std::chrono::steady_clock::now())
                                       .count());
          auto ev = ch->Next(left);
          if (ev && !ev->terminal()) continue;
          // A VM paused while its heartbeat was out cannot answer it: not a hung guest. Nor is
          // one that answered other channels meanwhile.
          if (!ev && ev.error().code() == ErrorCode::kTimeout && !vm->paused() &&
              vm->BytesReceived() == bytes_before) {
            vm->MarkHung(std::chrono::duration_cast<std::chrono::milliseconds>(
                             std::chrono::steady_clock::now() - start)
                             .count());
          }
          break;  // answered, or the connection ended (the registry notices that itself)
        }
      }
    }
  }

  // The last line of a log, for an error message (guest and QEMU text, not host paths).
  static std::string Tail(const std::string& path) {
    auto text = ns::ReadSmallFile(path);
    if (!text || text->empty()) return "no output";
    std::string t = *text;
    while (!t.empty() && (t.back() == '\n' || t.back() == '\r')) t.pop_back();
    size_t nl = t.rfind('\n');
    return nl == std::string::npos ? t : t.substr(nl + 1);
  }

  /// The accelerator VMs use, decided on first use: "auto" costs a test boot (up to 5 s on a
  /// /dev/kvm that spins), which a server that may never start a VM should not pay at start.
  //
  // The test boot's answer is kept in <state_dir>/.images/accel for this boot of the host and this
  // guest kernel, so a server restart or each `agent-sandbox run --backend microvm` does not
  // pay it again; a reboot (another boot_id) or another guest kernel asks again.
  const std::string& Accel() const {
    std::call_once(accel_once_, [this] {
      if (requested_accel_ != "auto") {
        accel_ = requested_accel_;
      } else {
        const std::string cache = opts_.state_dir + "/.images/accel";
        std::string boot_id = ns::ReadSmallFile("/proc/sys/kernel/random/boot_id").value_or("?");
        while (!boot_id.empty() && boot_id.back() == '\n') boot_id.pop_back();
        const std::string key =
            boot_id + " " + images_.kernel().release + " " + images_.kernel().vmlinuz;
        auto cached = ns::ReadSmallFile(cache);
        if (cached && cached->rfind(key + "\n", 0) == 0) {
          accel_ = cached->substr(key.size() + 1);
          while (!accel_.empty() && accel_.back() == '\n') accel_.pop_back();
        }
        if (accel_ != "kvm" && accel_ != "tcg") {
          // Decided by a boot, never by the device: /dev/kvm here may take only PVM guests.
          accel_ =
              ::access("/dev/kvm", R_OK | W_OK) == 0 &&
                      BootWorks(opts_.qemu_path, images_.kernel(), "kvm", std::chrono::seconds(5))
                  ? "kvm"
                  : "tcg";
          (void)ns::WriteFileAtomic(cache, key + "\n" + accel_ + "\n", false);
        }
      }
      spdlog::info("microvm backend: accelerator {}", accel_);
    });
    return accel_;
  }

  const MicrovmOptions opts_;
  const std::string requested_accel_;  // "auto", "kvm" or "tcg"
  mutable std::once_flag accel_once_;
  mutable std::string accel_;  // written once, under accel_once_
  GuestImages images_;
  ns::WorkspaceSeeds seeds_;  // templates' /workspace content (ns/workspace_seed.h)
  const ns::CgroupLayout layout_;
  ns::UidSlots slots_;
  std::mutex mu_;
  // guarded by mu_: QEMUs this process started (not adopted ones: another process reaps them)
  std::map<std::string, ns::ChildProcess> children_;
  std::map<std::string, std::weak_ptr<MicrovmSandbox>> live_;  // guarded by mu_: heartbeats
  std::mutex heartbeat_mu_;
  std::condition_variable heartbeat_cv_;
  bool heartbeat_stop_ = false;  // guarded by heartbeat_mu_
  std::thread heartbeat_;        // last: started after every member it reads
};

}  // namespace

Result<std::unique_ptr<Backend>> MakeMicrovmBackend(const MicrovmOptions& options) {
  if (options.state_dir.empty() || options.state_dir[0] != '/') {
    return Fail(Error::InvalidArgument("state_dir must be an absolute path"));
  }
  if (::getuid() != 0) return Fail(Error::Unavailable("the microvm backend needs root"));
  if (::access(options.qemu_path.c_str(), X_OK) != 0) {
    return Fail(Error::WithOperatorDetail(
        ErrorCode::kUnavailable, "QEMU not found",
        options.qemu_path + " not found: install qemu-system-x86 (scripts/install-deps.sh)"));
  }
  if (::access("/usr/bin/mkfs.erofs", X_OK) != 0) {
    return Fail(Error::Unavailable("mkfs.erofs not found: install erofs-utils"));
  }
  if (::access(options.sandboxd_path.c_str(), R_OK) != 0) {
    return Fail(
        Error::WithOperatorDetail(ErrorCode::kUnavailable, "sandboxd binary not readable",
                                  "sandboxd binary not readable: " + options.sandboxd_path));
  }
  ASB_ASSIGN_OR_RETURN(GuestKernel kernel, FindGuestKernel(options.guest_dir));
  const std::string& accel = options.accel;
  if (accel != "auto" && accel != "kvm" && accel != "tcg") {
    return Fail(Error::InvalidArgument("accel must be auto, kvm or tcg"));
  }
  {
    std::error_code ec;
    std::filesystem::create_directories(options.state_dir, ec);
    if (ec || ::chmod(options.state_dir.c_str(), 0700) != 0) {
      return Fail(Error::Backend("cannot make the microvm state directory"));
    }
  }
  for (const char* sub : {"/.images", "/.seeds"}) {
    const std::string cache = options.state_dir + sub;
    if (::mkdir(cache.c_str(), 0700) != 0 && errno != EEXIST) return FailErrno("mkdir " + cache);
  }
  ASB_ASSIGN_OR_RETURN(ns::CgroupLayout layout, ns::DetectCgroupLayout());
  return std::unique_ptr<Backend>(
      std::make_unique<MicrovmBackend>(options, std::move(kernel), accel, std::move(layout)));
}

}  // namespace asb::isolation::microvm
