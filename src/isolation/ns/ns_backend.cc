// The ns backend: Create/Adopt/Destroy/ListOwned and the network over the per-concern files of
// this folder (workspace images: ns_images.cc).
// Create is a column of steps, each with an undo owner, so that a failure at any point leaves
// nothing behind; Destroy works from names alone (state.json only adds the pid), so it also
// cleans up after a server that died in the middle of Create.
#include "isolation/ns/ns_backend.h"

#include <fcntl.h>
#include <linux/fs.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <climits>
#include <cmath>
#include <functional>
#include <mutex>
#include <optional>
#include <set>

#include "common/clock.h"
#include "common/ids.h"
#include "common/unique_fd.h"
#include "isolation/ns/cgroup.h"
#include "isolation/ns/cgroup_freeze.h"
#include "isolation/ns/contain.h"
#include "isolation/ns/files.h"
#include "isolation/ns/idmap.h"
#include "isolation/ns/net.h"
#include "isolation/ns/ns_backend_impl.h"
#include "isolation/ns/state.h"
#include "isolation/ns/user.h"
#include "isolation/ns/workspace.h"
#include "isolation/ns/workspace_snapshot.h"

namespace asb::isolation::ns {
namespace {

constexpr uint32_t kSandboxUserUid = 1000;  // protocol::kSandboxUid, inside the namespace

// The host path of the template's /usr/bin/sudo when it is a regular file reached without
// leaving the rootfs (an imported image may ship a symlink there, or a symlinked /usr/bin),
// else "": then the sandbox simply has no sudo.
std::string SudoPlaceholder(const std::string& rootfs) {
  const std::string path = rootfs + "/usr/bin/sudo";
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return "";
  char root_real[PATH_MAX], real[PATH_MAX];
  if (!::realpath(rootfs.c_str(), root_real) || !::realpath(path.c_str(), real)) return "";
  if (std::string(real) != std::string(root_real) + "/usr/bin/sudo") return "";
  return path;
}

// Runs an undo action at scope exit unless dismissed: the owner of one Create step.
class Undo {
 public:
  explicit Undo(std::function<void()> fn) : fn_(std::move(fn)) {}
  ~Undo() {
    if (fn_) fn_();
  }
  Undo(const Undo&) = delete;
  Undo& operator=(const Undo&) = delete;
  void Dismiss() { fn_ = nullptr; }

 private:
  std::function<void()> fn_;
};

Status ValidateSpec(const SandboxSpec& s) {
  auto bad = [](std::string m) { return Fail(Error::InvalidArgument(std::move(m))); };
  if (!IsValidId(s.id, "sb_")) return bad("sandbox id must be sb_ + 16 hex digits");
  if (s.rootfs.empty() || s.rootfs[0] != '/') return bad("rootfs must be an absolute path");
  if (!std::isfinite(s.cpus) || s.cpus <= 0 || s.cpus > 1024) return bad("cpus out of range");
  if (s.memory_bytes < (8ull << 20)) return bad("memory limit below 8 MiB");
  if (s.pids_limit < 4 || s.pids_limit > 4'194'304) return bad("pids_limit out of range");
  if (s.workspace_bytes < (8ull << 20) || s.workspace_bytes > (16ull << 40)) {
    return bad("workspace size out of range (8 MiB .. 16 TiB)");
  }
  if (s.tmp_bytes < (1ull << 20)) return bad("tmp size below 1 MiB");
  if (s.nofile_limit < 16) return bad("nofile_limit below 16");
  if (s.hostname.empty() || s.hostname.size() > 64) return bad("hostname length out of range");
  for (char c : s.hostname) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '.') {
      return bad("hostname may hold only letters, digits, '-' and '.'");
    }
  }
  for (const auto& [k, v] : s.env) {
    if (k.empty() || k.find('=') != std::string::npos || k.find('\0') != std::string::npos ||
        v.find('\0') != std::string::npos) {
      return bad("env names must be non-empty without '=' or NUL, values without NUL");
    }
  }
  return {};
}

std::string LogTail(const std::string& log) {
  auto text = ReadSmallFile(log);
  if (!text || text->empty()) return {};
  std::string t = text->size() > 400 ? text->substr(text->size() - 400) : *text;
  while (!t.empty() && t.back() == '\n') t.pop_back();
  return " (sandboxd.log: " + t + ")";
}

class NsSandbox final : public Sandbox {
 public:
  NsSandbox(std::string id, std::shared_ptr<protocol::Connection> conn, int pid,
            CgroupPaths cgroups, std::string ws)
      : id_(std::move(id)),
        conn_(std::move(conn)),
        pid_(pid),
        cgroups_(std::move(cgroups)),
        ws_(std::move(ws)) {}

  const std::string& id() const override { return id_; }
  std::shared_ptr<protocol::Connection> connection() override { return conn_; }
  int host_pid() const override { return pid_; }
  Result<int> ConnectTcp(uint16_t port, int timeout_ms) override {
    return ConnectInNetns(pid_, port, timeout_ms);
  }

  Result<SandboxUsage> Usage() override {
    ASB_ASSIGN_OR_RETURN(SandboxUsage u, ReadCgroupUsage(cgroups_));
    struct statfs sfs;
    if (::statfs(ws_.c_str(), &sfs) == 0) {
      u.workspace_used_bytes =
          static_cast<uint64_t>(sfs.f_blocks - sfs.f_bfree) * static_cast<uint64_t>(sfs.f_bsize);
    }
    return u;
  }

  Result<LimitHitCounts> LimitHits() override {
    std::lock_guard l(limit_files_mu_);
    if (!limit_files_) {  // opened on the first exec: a sandbox that runs none holds no fds
      ASB_ASSIGN_OR_RETURN(LimitCounterFiles files, LimitCounterFiles::Open(cgroups_));
      limit_files_.emplace(std::move(files));
    }
    return limit_files_->Read();
  }

 private:
  std::string id_;
  std::shared_ptr<protocol::Connection> conn_;
  int pid_;
  CgroupPaths cgroups_;
  std::string ws_;
  std::mutex limit_files_mu_;
  std::optional<LimitCounterFiles> limit_files_;  // guarded by limit_files_mu_
};

}  // namespace

std::string SandboxdConfigJson(const SandboxSpec& spec) {
  boost::json::object env;
  for (const auto& [k, v] : spec.env) env[k] = v;
  boost::json::object o;
  o["env"] = std::move(env);
  o["hostname"] = spec.hostname;
  return boost::json::serialize(o);
}

BackendCapabilities NsBackend::Capabilities() const {
  BackendCapabilities c;
  c.adopt = true;
  c.workspace_images = true;
  c.network = opts_.network != nullptr;  // the server was given a host network
  c.tcp_connect = true;
  c.pause = CanFreeze(layout_);  // a cgroup freeze (cgroup_freeze.h); memory snapshots: not yet
  c.live_limits = true;          // cgroup writes (UpdateCgroupLimits)
  return c;
}

Status NsBackend::SetFrozen(const std::string& id, bool frozen) {
  const std::string what = frozen ? "pause " : "resume ";
  if (!Capabilities().pause) return Fail(NotCapable(name(), "pause"));
  if (!IsValidId(id, "sb_")) return Fail(Error::NotFound("no sandbox " + id));
  auto lock = IdLock(id);
  std::lock_guard guard(*lock);
  const CgroupPaths cgroups = CgroupPathsFor(layout_, opts_.cgroup_name, id);
  if (!AnyCgroupExists(cgroups)) return Fail(Error::NotFound("sandbox " + id + " is not running"));
  Status st = frozen ? FreezeCgroups(cgroups, kFreezeTimeoutMs) : ThawCgroups(cgroups);
  return st.map_error([&](Error e) { return std::move(e).WithContext(what + id); });
}

Status NsBackend::UpdateLimits(const std::string& id, uint64_t memory_bytes, double cpus) {
  if (!IsValidId(id, "sb_")) return Fail(Error::NotFound("no sandbox " + id));
  if (memory_bytes == 0 || !(cpus > 0)) {
    return Fail(Error::InvalidArgument("memory and cpus must be positive"));
  }
  auto lock = IdLock(id);
  std::lock_guard guard(*lock);
  const CgroupPaths cgroups = CgroupPathsFor(layout_, opts_.cgroup_name, id);
  if (!AnyCgroupExists(cgroups)) return Fail(Error::NotFound("sandbox " + id + " is not running"));
  CgroupLimits limits;
  limits.memory_bytes = memory_bytes;
  limits.cpus = cpus;
  return UpdateCgroupLimits(layout_, cgroups, limits).map_error([&](Error e) {
    return std::move(e).WithContext("limits of " + id);
  });
}

Status NsBackend::Pause(const std::string& id) { return SetFrozen(id, true); }

Status NsBackend::Resume(const std::string& id) { return SetFrozen(id, false); }

Result<MemorySnapshotInfo> NsBackend::SnapshotMemory(const std::string& id,
                                                     const std::string& dest) {
  (void)id, (void)dest;
  return Fail(NotCapable(name(), "memory snapshots"));
}

Status NsBackend::Probe() {
  auto max_ns = ReadSmallFile("/proc/sys/user/max_user_namespaces");
  if (max_ns) {
    auto n = ParseU64(*max_ns);
    if (n && *n == 0) return Fail(Error::Unavailable("user namespaces are disabled"));
  }
  ASB_TRY(DetectCgroupLayout());
  if (::access(opts_.sandboxd_path.c_str(), X_OK) != 0) {
    return Fail(Error::Unavailable("sandboxd binary not executable: " + opts_.sandboxd_path));
  }
  bool mkfs = false;
  for (const char* p : {"/usr/sbin/mkfs.ext4", "/sbin/mkfs.ext4", "/usr/bin/mkfs.ext4"}) {
    mkfs = mkfs || ::access(p, X_OK) == 0;
  }
  if (!mkfs) return Fail(Error::Unavailable("mkfs.ext4 not found (e2fsprogs)"));
  if (::access("/dev/loop-control", R_OK | W_OK) != 0) {
    return Fail(Error::Unavailable("/dev/loop-control is not usable"));
  }
  return {};
}

Result<UniqueFd> NsBackend::IdmapUsernsFor(uint32_t uid_base) {
  // At most kKeptIdmapUserns kept (one fd each): ranges past them make a helper every time.
  constexpr size_t kKeptIdmapUserns = 256;
  std::lock_guard lock(idmap_mu_);
  auto it = idmap_userns_.find(uid_base);
  if (it == idmap_userns_.end()) {
    ASB_ASSIGN_OR_RETURN(UniqueFd made, MakeIdmapUserns(uid_base));
    if (idmap_userns_.size() >= kKeptIdmapUserns) return made;
    it = idmap_userns_.emplace(uid_base, std::move(made)).first;
  }
  UniqueFd dup(::fcntl(it->second.get(), F_DUPFD_CLOEXEC, 0));
  if (!dup) return FailErrno("dup idmap userns");
  return dup;
}

// The image holds canonical ids (root 0, the sandbox user 1000); the mount at l.ws is idmapped
// to the sandbox's host range (idmap.h), so that an image can move between sandboxes.
Status NsBackend::PrepareWorkspace(const SandboxSpec& spec, const Layout& l, int idmap_userns,
                                   std::string* loop_device) {
  if (::mkdir(l.ws.c_str(), 0755) != 0) return FailErrno("mkdir " + l.ws);
  // A snapshot's image (fork, create from a snapshot) or the template's /workspace content.
  std::string from_image = spec.workspace_image;
  if (from_image.empty()) {
    ASB_ASSIGN_OR_RETURN(from_image, seeds_.ImageFor(spec.rootfs, spec.workspace_bytes));
  }
  if (!from_image.empty()) {
    ASB_ASSIGN_OR_RETURN(CloneMethod m, CloneImage(from_image, l.image, /*force_copy=*/false,
                                                   /*durable=*/false));
    (void)m;
    ASB_ASSIGN_OR_RETURN(*loop_device, MountWorkspace(l.image, l.ws));
  } else if (pool_ && spec.workspace_bytes == pool_->image_bytes() && pool_->Take(l.image, l.ws)) {
    auto devs = LoopDevicesBackedBy(l.image);
    *loop_device = devs.empty() ? "" : devs.front();
  } else {
    // A clone of the blank image of this size (workspace_seed.h), not an mkfs per create.
    ASB_ASSIGN_OR_RETURN(const std::string blank, seeds_.BlankFor(spec.workspace_bytes));
    ASB_TRY_CTX(CloneImage(blank, l.image, /*force_copy=*/false, /*durable=*/false), "workspace");
    ASB_ASSIGN_OR_RETURN(*loop_device, MountWorkspace(l.image, l.ws));
  }
  ASB_TRY(ChownWorkspace(l.ws, 0, kSandboxUserUid));
  ASB_TRY_CTX(IdmapMountInPlace(l.ws, idmap_userns), "idmapped workspace");
  return {};
}

Result<std::shared_ptr<Sandbox>> NsBackend::Create(const SandboxSpec& spec) {
  ASB_TRY(ValidateSpec(spec));
  if (spec.network && !opts_.network) {
    return Fail(Error::InvalidArgument("networking is not enabled on this server"));
  }
  if (!spec.memory_snapshot.empty()) return Fail(NotCapable(name(), "memory snapshots"));
  auto lock = IdLock(spec.id);
  std::lock_guard guard(*lock);
  return CreateLocked(spec).map_error([&](Error e) {
    // The contract's codes (backend.h): anything but a bad spec, a full quota or a duplicate
    // id is the backend's failure (a host ENOENT must not read as "sandbox not found").
    if (e.code() != ErrorCode::kInvalidArgument && e.code() != ErrorCode::kLimitExceeded &&
        e.code() != ErrorCode::kConflict && e.code() != ErrorCode::kBackend) {
      // WithCode keeps the host-text mark: a client reads "create sb_...: mkdir: a host
      // operation failed", never the host path (ADR 0016).
      e = std::move(e).WithCode(ErrorCode::kBackend);
    }
    return std::move(e).WithContext("create " + spec.id);
  });
}

Result<std::shared_ptr<Sandbox>> NsBackend::CreateLocked(const SandboxSpec& spec) {
  const Layout l = LayoutFor(opts_.state_dir, spec.id);
  if (l.sock.size() >= sizeof(sockaddr_un::sun_path)) {
    return Fail(Error::InvalidArgument("state_dir too long for a unix socket path"));
  }
  // 1. State directory (0700): everything on the host side lives below it.
  if (::mkdir(l.dir.c_str(), 0700) != 0) {
    if (errno == EEXIST) return Fail(Error::Conflict("sandbox " + spec.id + " already exists"));
    return FailErrno("mkdir " + l.dir);
  }
  Undo undo_dir([&] { (void)RemoveTree(l.dir); });

  // 2. A host uid/gid range of its own.
  ASB_ASSIGN_OR_RETURN(uint32_t slot, slots_.Acquire(spec.id));
  Undo undo_slot([&] { (void)slots_.ReleaseAll(spec.id); });
  const uint32_t uid_base = opts_.uid_range_base + slot * kIdsPerSlot;

  // 3. Workspace: sized ext4 image on a loop device, mounted at <dir>/ws.
  std::string loop_device;
  Undo undo_ws([&] {
    (void)UnmountWorkspace(l.ws);
    (void)DetachLoopDevices(l.image);
  });
  // One user namespace describing the sandbox's id map serves both idmapped mounts (the
  // workspace here, the template's rootfs below).
  ASB_ASSIGN_OR_RETURN(UniqueFd idmap_userns, IdmapUsernsFor(uid_base));
  ASB_TRY(PrepareWorkspace(spec, l, idmap_userns.get(), &loop_device));
  // /etc/hostname and /etc/resolv.conf are written by the child into a scratch tmpfs
  // (mount.h), so no host file of the state directory is bound into the sandbox.
  if (spec.network) {
    ASB_TRY(WriteFileAtomic(l.network, net::PolicyToJson(spec.network_policy), false));
  }

  // 4. cgroups with the limits.
  const CgroupPaths cgroups = CgroupPathsFor(layout_, opts_.cgroup_name, spec.id);
  Undo undo_cgroups([&] {
    (void)KillCgroupProcesses(cgroups);
    (void)WaitCgroupsEmpty(cgroups, 5000);
    (void)RemoveCgroups(cgroups);
  });
  ASB_TRY_CTX(CreateCgroupsFromParent(layout_, opts_.cgroup_name, cgroups,
                                      {spec.memory_bytes, spec.pids_limit, spec.cpus}),
              "cgroups");

  // 5. The fds sandboxd inherits: listening socket, config pipe, log, /dev/null, binary.
  UniqueFd listen_fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!listen_fd) return FailErrno("socket");
  struct sockaddr_un addr = {};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, l.sock.c_str(), l.sock.size() + 1);
  if (::bind(listen_fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    return FailErrno("bind " + l.sock);
  }
  if (::listen(listen_fd.get(), 128) != 0) return FailErrno("listen " + l.sock);
  UniqueFd config_rd, config_wr;
  if (!MakePipe(&config_rd, &config_wr)) return FailErrno("pipe");
  const std::string config = SandboxdConfigJson(spec);
  if (config.size() > (1u << 20)) return Fail(Error::InvalidArgument("env too large (> 1 MiB)"));
  if (config.size() > 60000) (void)::fcntl(config_wr.get(), F_SETPIPE_SZ, 1 << 20);
  // Written before sandboxd exists: non-blocking, so a pipe too small fails instead of hanging.
  if (::fcntl(config_wr.get(), F_SETFL, O_NONBLOCK) != 0) return FailErrno("fcntl config pipe");
  if (!WriteAll(config_wr.get(), config.data(), config.size())) {
    if (errno == EAGAIN) return Fail(Error::InvalidArgument("env too large for the config pipe"));
    return FailErrno("write config");
  }
  config_wr.Reset();  // EOF for sandboxd after the one JSON object
  UniqueFd log_fd(::open(l.log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600));
  if (!log_fd) return FailErrno("open " + l.log);
  UniqueFd null_fd(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  if (!null_fd) return FailErrno("open /dev/null");
  UniqueFd sandboxd_fd(::open(opts_.sandboxd_path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!sandboxd_fd) {
    return Fail(Error::FromErrno(ErrorCode::kBackend, errno, "open " + opts_.sandboxd_path));
  }

  // The template's rootfs as an idmapped clone mapping on-disk ids into the sandbox's range, so
  // its files show their owners inside (root 0; sandbox 1000 for what a Dockerfile's `USER
  // sandbox` step wrote, ADR 0012). Where the kernel or filesystem has no idmapped mounts the
  // child binds the plain rootfs and every file shows as nobody (65534), as before.
  UniqueFd root_tree;
  if (auto tree = IdmappedTree(spec.rootfs, idmap_userns.get())) root_tree = std::move(*tree);

  // 6. The child: everything it needs is prepared here, before clone.
  ChildPlan plan;
  plan.hostname = spec.hostname;
  plan.mounts = MakeMountPlan(spec.rootfs, l.ws, spec.hostname + "\n", spec.tmp_bytes);
  plan.mounts.root_tree_fd = root_tree.get();
  // The sandbox's sudo is sandboxd itself (sandboxd/sudo_client.h, ADR 0028), bound read-only
  // over the template's /usr/bin/sudo (FinishRootfs leaves a placeholder there): the same
  // binary as the running sandboxd, so the two always speak the same version.
  if (std::string sudo = SudoPlaceholder(spec.rootfs); !sudo.empty()) {
    plan.mounts.host_binds.push_back({opts_.sandboxd_path, sudo, /*read_only=*/true});
  }
  // Networked sandboxes: the resolver on the gateway (the template's file must exist).
  if (spec.network) {
    AddScratchFile(&plan.mounts, opts_.network->ResolvConf(), "etc/resolv.conf", false);
  }
  plan.rlimits = {spec.nofile_limit, spec.pids_limit};
  plan.exec_fd = sandboxd_fd.get();
  plan.listen_fd = listen_fd.get();
  plan.config_fd = config_rd.get();
  plan.stdin_fd = null_fd.get();
  plan.stdout_fd = plan.stderr_fd = log_fd.get();
  std::vector<std::string> args = {"sandboxd", "--listen-fd=" + std::to_string(kSandboxdListenFd),
                                   "--config-fd=" + std::to_string(kSandboxdConfigFd)};
  if (opts_.allow_packet_sockets) args.push_back("--allow-packet-sockets");
  if (!opts_.exec_spare) args.push_back("--no-spare");
  args.push_back("--sudo");  // the sandbox has a network namespace of its own (sudo_wire.h)
  // Commands go to the work cgroups (cgroup.h): sandboxd moves each one through these fds.
  // RLIMIT_NPROC must not stop sandboxd either: root's commands share its uid, and a fork
  // counts against the rlimit before the pids cgroup refuses it (copy_creds() precedes
  // cgroup_can_fork() in kernel/fork.c), so N processes of a root fork bomb spinning in
  // fork() hold up to 2N of it. Twice the pids limit plus the headroom keeps sandboxd able to
  // fork; the work cgroup's pids.max (the sandbox's limit) is what stops commands.
  // The fds are of the v1 work directories' `tasks`, not `cgroup.procs`: each command's child
  // (single-threaded right after fork) writes "0" there to move itself, and a thread moving
  // itself skips the global threadgroup lock whose write side waits out an RCU grace period
  // (~10 ms after a quiet moment on this CI machine; cgroup_procs_write_start in
  // kernel/cgroup/cgroup.c, as CloneIntoCgroups does for sandboxd itself).
  UniqueFd work_fds[3];
  int n_work = 0;
  for (const std::string* dir : {&cgroups.work_memory, &cgroups.work_pids, &cgroups.work_cpu}) {
    if (dir->empty()) continue;
    const std::string procs = *dir + "/tasks";
    work_fds[n_work].Reset(::open(procs.c_str(), O_WRONLY | O_CLOEXEC));
    if (!work_fds[n_work]) return FailErrno("open " + procs);
    plan.work_cgroup_fds[n_work] = work_fds[n_work].get();
    args.push_back("--work-cgroup-fd=" + std::to_string(kSandboxdWorkCgroupFd0 + n_work));
    ++n_work;
  }
  if (!cgroups.work_pids.empty()) {
    plan.rlimits.nproc = 2 * uint64_t{spec.pids_limit} + kDaemonPidsHeadroom;
  }
  plan.SetArgs(std::move(args),
               {"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"});
  auto prepare = [&](pid_t pid) -> Status {
    ASB_TRY_CTX(WriteIdMapsFromParent(pid, uid_base), "id maps");
    // sandboxd must outlive anything its sandbox does to memory (it reports the OOM).
    // Lowering the score needs CAP_SYS_RESOURCE, which some hosts withhold even from root
    // (this CI machine does): then the OOM killer's preference for the largest process is
    // what spares the small sandboxd.
    auto adj = WriteControlFile("/proc/" + std::to_string(pid) + "/oom_score_adj", "-1000");
    if (!adj && adj.error().sys_errno() != EACCES && adj.error().sys_errno() != EPERM) {
      return adj;
    }
    // Networking before the child runs anything: eth0, rules, limits (host_network.h).
    if (spec.network) {
      ASB_TRY_CTX(opts_.network->Attach(spec.id, slot, pid, spec.network_policy), "network");
    }
    return {};
  };
  Undo undo_network([&] {
    if (spec.network) (void)opts_.network->Detach(spec.id, slot);
  });
  ASB_ASSIGN_OR_RETURN(CloneIntoCgroups into, CloneIntoCgroups::Prepare(layout_, cgroups));
  ASB_ASSIGN_OR_RETURN(ChildProcess child,
                       StartContainedChild(plan, into, prepare, opts_.start_timeout_ms));
  Undo undo_child([&] {
    ::syscall(SYS_pidfd_send_signal, child.pidfd.get(), SIGKILL, nullptr, 0);
    while (::waitpid(child.pid, nullptr, 0) < 0 && errno == EINTR) {
    }
  });
  listen_fd.Reset();
  config_rd.Reset();

  // 7. Durable record for Adopt/Destroy by a later server process (written while sandboxd
  //    initialises on the other CPU).
  SandboxState st;
  st.id = spec.id;
  st.pid = child.pid;
  ASB_ASSIGN_OR_RETURN(st.start_time, ProcessStartTime(child.pid));
  st.slot = slot;
  st.uid_base = uid_base;
  st.loop_device = loop_device;
  st.cgroup_mode = layout_.v2_mode ? "v2" : "v1";
  st.cgroups = cgroups.All();
  st.created_unix_ms = SystemClock::Instance().NowUnixMs();
  st.canonical_ids = true;
  ASB_TRY(WriteFileAtomic(l.state, EncodeSandboxState(st), /*durable=*/false));  // state.h

  // 8. The protocol handshake proves sandboxd runs.
  auto conn = protocol::Connection::Dial(l.sock, opts_.start_timeout_ms);
  if (!conn) {
    // sandboxd's own log (its words from inside the sandbox) is client text; a failed host call
    // of the dial (its socket's host path) stays in the error's detail.
    return Fail(std::move(conn)
                    .error()
                    .WithCode(ErrorCode::kBackend)
                    .WithContext("sandboxd did not answer" + LogTail(l.log)));
  }

  undo_child.Dismiss();
  undo_network.Dismiss();
  undo_cgroups.Dismiss();
  undo_ws.Dismiss();
  undo_slot.Dismiss();
  undo_dir.Dismiss();
  {
    std::lock_guard lock(children_mu_);
    children_[spec.id] = std::move(child);
  }
  return std::make_shared<NsSandbox>(spec.id, std::move(*conn), st.pid, cgroups, l.ws);
}

Result<std::shared_ptr<Sandbox>> NsBackend::Adopt(const std::string& id) {
  if (!IsValidId(id, "sb_")) return Fail(Error::NotFound("no sandbox " + id));
  auto lock = IdLock(id);
  std::lock_guard guard(*lock);
  const Layout l = LayoutFor(opts_.state_dir, id);
  auto text = ReadSmallFile(l.state);
  if (!text) return Fail(Error::NotFound("no state for sandbox " + id));
  auto st = DecodeSandboxState(*text);
  if (!st) return Fail(Error::NotFound("sandbox " + id + " has no readable state: not running"));
  auto start = ProcessStartTime(st->pid);
  if (!start || *start != st->start_time || !ProcessIsRunning(st->pid)) {
    return Fail(Error::NotFound("sandbox " + id + " no longer runs"));
  }
  // A server killed during CopyWorkspaceImage may have left the workspace frozen.
  if (UniqueFd ws(::open(l.ws.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)); ws) {
    (void)::ioctl(ws.get(), FITHAW, 0);  // EINVAL when it is not frozen
  }
  ::unlink(l.next_tmp.c_str());  // a staging clone cut short (the complete one is kept)
  // A paused sandbox's sandboxd cannot answer the handshake: thaw it for the handshake and
  // leave it frozen again, as it was found (the manager decides whether it stays paused).
  const CgroupPaths cgroups = CgroupPathsFor(layout_, opts_.cgroup_name, id);
  const bool was_frozen = CgroupsFrozen(cgroups);
  if (was_frozen) ASB_TRY_CTX(ThawCgroups(cgroups), "adopt " + id);
  auto dialed = protocol::Connection::Dial(l.sock, opts_.start_timeout_ms);
  // A failure to freeze again is not the adoption's: the manager pauses a paused record again
  // right after adopting it and reports a failure there.
  if (was_frozen) (void)FreezeCgroups(cgroups, kFreezeTimeoutMs);
  ASB_ASSIGN_OR_RETURN(auto conn, std::move(dialed));
  // A networked sandbox keeps its network: this process's resolver learns its policy again
  // (addresses it resolved before stay admitted).
  if (auto text = ReadSmallFile(l.network); text && opts_.network) {
    ASB_ASSIGN_OR_RETURN(auto policy, net::PolicyFromJson(*text));
    ASB_TRY_CTX(opts_.network->Update(id, st->slot, st->pid, policy, /*forget_resolved=*/false),
                "adopt " + id);
  }
  return std::make_shared<NsSandbox>(id, std::move(conn), st->pid, cgroups, l.ws);
}

Status NsBackend::Destroy(const std::string& id) {
  if (!IsValidId(id, "sb_")) return Fail(Error::InvalidArgument("not a sandbox id: " + id));
  auto lock = IdLock(id);
  std::lock_guard guard(*lock);
  return DestroyLocked(id).map_error(
      [&](Error e) { return std::move(e).WithContext("destroy " + id); });
}

Status NsBackend::DestroyLocked(const std::string& id) {
  const Layout l = LayoutFor(opts_.state_dir, id);
  const CgroupPaths cgroups = CgroupPathsFor(layout_, opts_.cgroup_name, id);
  Status result;
  auto keep_first = [&](Status st) {
    if (!st && result) result = std::move(st);
  };
  // 1. Every process: the whole cgroup, and PID 1 of the pid namespace (which takes the
  //    namespace with it) if it is still the process we started (start time matches).
  if (AnyCgroupExists(cgroups)) {
    keep_first(KillCgroupProcesses(cgroups));
    // A paused sandbox: frozen v1 tasks take their SIGKILL only once thawed (v2 ones at once).
    keep_first(ThawCgroups(cgroups));
  }
  if (auto text = ReadSmallFile(l.state)) {
    if (auto st = DecodeSandboxState(*text)) {
      // pidfd first, start time second: if the pid was reused in between, the times differ.
      UniqueFd pidfd(static_cast<int>(::syscall(SYS_pidfd_open, st->pid, 0)));
      auto start = ProcessStartTime(st->pid);
      if (pidfd && start && *start == st->start_time) {
        ::syscall(SYS_pidfd_send_signal, pidfd.get(), SIGKILL, nullptr, 0);
      }
    }
  }
  std::optional<ChildProcess> child;
  {
    std::lock_guard lock(children_mu_);
    if (auto it = children_.find(id); it != children_.end()) {
      child = std::move(it->second);
      children_.erase(it);
    }
  }
  if (child) {
    // Our own child: signal and reap through its pidfd (exact even if someone else reaped it).
    ::syscall(SYS_pidfd_send_signal, child->pidfd.get(), SIGKILL, nullptr, 0);
    siginfo_t info;
    while (::waitid(P_PIDFD, static_cast<id_t>(child->pidfd.get()), &info, WEXITED) < 0 &&
           errno == EINTR) {
    }
  }
  // 2. cgroups: wait until empty, remove.
  if (AnyCgroupExists(cgroups)) {
    keep_first(WaitCgroupsEmpty(cgroups, 10'000));
    keep_first(RemoveCgroups(cgroups));
  }
  // 3. Network: rules, sets, resolver state (the veth died with the namespace). Only for a
  //    sandbox made with network: Create writes l.network before it attaches anything, and it
  //    stays until this destroy succeeds, so a sandbox without it has nothing to detach (and
  //    is spared the ~4 ms of nft and ip processes).
  if (opts_.network && PathExists(l.network)) {
    if (auto slot = SlotOf(id, l)) keep_first(opts_.network->Detach(id, *slot));
  }
  // 4. Workspace: unmount, detach the loop device (and those of a staged rollback).
  keep_first(UnmountWorkspace(l.ws));
  keep_first(UnmountWorkspace(l.ws_next));
  keep_first(DetachLoopDevices(l.image));
  keep_first(DetachLoopDevices(l.next));
  // 5. Files, then the uid slot (last: the range stays reserved until nothing uses it).
  if (result) keep_first(RemoveTree(l.dir));
  if (result) keep_first(slots_.ReleaseAll(id));
  return result;
}

std::optional<uint32_t> NsBackend::SlotOf(const std::string& id, const Layout& l) {
  if (auto text = ReadSmallFile(l.state)) {
    if (auto st = DecodeSandboxState(*text)) return st->slot;
  }
  if (auto slots = slots_.List()) {
    for (const auto& [k, owner] : *slots) {
      if (owner == id) return k;
    }
  }
  return std::nullopt;
}

Status NsBackend::UpdateNetwork(const std::string& id, const net::NetworkPolicy& policy) {
  if (!IsValidId(id, "sb_")) return Fail(Error::NotFound("no sandbox " + id));
  auto lock = IdLock(id);
  std::lock_guard guard(*lock);
  const Layout l = LayoutFor(opts_.state_dir, id);
  auto text = ReadSmallFile(l.state);
  if (!text) return Fail(Error::NotFound("no state for sandbox " + id));
  auto st = DecodeSandboxState(*text);
  if (!st || !ProcessIsRunning(st->pid)) {
    return Fail(Error::NotFound("sandbox " + id + " is not running"));
  }
  if (!opts_.network || !PathExists(l.network)) {
    return Fail(Error::InvalidArgument("sandbox " + id + " was created without network"));
  }
  ASB_TRY(opts_.network->Update(id, st->slot, st->pid, policy, /*forget_resolved=*/true));
  return WriteFileAtomic(l.network, net::PolicyToJson(policy), /*durable=*/false);
}

Result<std::vector<std::string>> NsBackend::ListOwned() {
  std::set<std::string> ids;
  ASB_ASSIGN_OR_RETURN(auto names, ListDir(opts_.state_dir));
  for (auto& n : names) {
    if (IsValidId(n, "sb_")) ids.insert(n);
  }
  for (auto& n : ListCgroupIds(layout_, opts_.cgroup_name)) {
    if (IsValidId(n, "sb_")) ids.insert(n);
  }
  ASB_ASSIGN_OR_RETURN(auto slots, slots_.List());
  for (auto& [k, id] : slots) {
    if (IsValidId(id, "sb_")) ids.insert(id);
  }
  return std::vector<std::string>(ids.begin(), ids.end());
}

namespace {

Status MkdirAll(const std::string& path, mode_t mode) {
  std::string cur;
  size_t pos = 0;
  while (pos != std::string::npos) {
    pos = path.find('/', pos + 1);
    cur = path.substr(0, pos);
    if (cur.empty()) continue;
    if (::mkdir(cur.c_str(), mode) != 0 && errno != EEXIST) return FailErrno("mkdir " + cur);
  }
  return {};
}

}  // namespace

Result<std::unique_ptr<Backend>> MakeNsBackend(const NsBackendOptions& options) {
  if (options.state_dir.empty() || options.state_dir[0] != '/') {
    return Fail(Error::InvalidArgument("state_dir must be an absolute path"));
  }
  if (options.cgroup_name.empty() || options.cgroup_name.find('/') != std::string::npos) {
    return Fail(Error::InvalidArgument("cgroup_name must be one path component"));
  }
  if (options.max_slots == 0 ||
      uint64_t{options.uid_range_base} + uint64_t{options.max_slots} * kIdsPerSlot >
          0xFFFFFFFFull) {
    return Fail(Error::InvalidArgument("uid ranges do not fit below 2^32"));
  }
  if (::getuid() != 0) return Fail(Error::Unavailable("the ns backend needs root"));
  if (::access(options.sandboxd_path.c_str(), X_OK) != 0) {
    return Fail(Error::Unavailable("sandboxd binary not executable: " + options.sandboxd_path));
  }
  ASB_ASSIGN_OR_RETURN(CgroupLayout layout, DetectCgroupLayout());
  ASB_TRY(MkdirAll(options.state_dir, 0700));
  if (::chmod(options.state_dir.c_str(), 0700) != 0) return FailErrno("chmod state_dir");
  for (const char* sub : {"/.pool", "/.images", "/.seeds"}) {
    std::string d = options.state_dir + sub;
    if (::mkdir(d.c_str(), 0700) != 0 && errno != EEXIST) return FailErrno("mkdir " + d);
  }
  auto backend = std::make_unique<NsBackend>(options, std::move(layout));
  if (auto st = backend->Probe(); !st) return Fail(st.error());
  return std::unique_ptr<Backend>(std::move(backend));
}

}  // namespace asb::isolation::ns
