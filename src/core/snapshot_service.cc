// SnapshotService: snapshots, rollback and fork (snapshot_service.h).
#include "core/snapshot_service.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <set>
#include <string_view>

#include "common/ids.h"
#include "common/log.h"
#include "common/utf8.h"
#include "core/lifecycle.h"
#include "core/paths.h"
#include "core/sandbox_record.h"
#include "core/sandbox_registry.h"
#include "core/snapshot_archive.h"
#include "core/wire_adapter.h"
#include "protocol/client.h"
#include "store/snapshot_store.h"

namespace asb::core {

namespace {

SnapshotInfo ToInfo(const store::SnapshotRecord& r) {
  SnapshotInfo i;
  i.id = r.id;
  i.owner = r.owner;
  i.sandbox_id = r.sandbox_id;
  i.name = r.name;
  i.template_name = r.template_name;
  i.size_bytes = r.size_bytes;
  i.content_bytes = r.content_bytes;
  i.created_at_ms = r.created_at_ms;
  return i;
}

std::string FileName(const std::string& id) { return id + ".tar.zst"; }

Error SnapNotFound(const std::string& id) {
  std::string shown = IsValidId(id, "snap_") ? id : "(invalid id)";
  return Error::NotFound("snapshot " + shown + " not found");
}

Status EnsureDir(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Fail(Error::FromErrno(ec.value(), "create directory " + dir));
  ::chmod(dir.c_str(), 0700);
  return {};
}

/// Checks count and byte limits for one more snapshot of `owner` (and of `sandbox_id`).
Status CheckCounts(store::Store& st, const SnapshotLimits& lim, const std::string& owner,
                   const std::string& sandbox_id) {
  ASB_ASSIGN_OR_RETURN(auto mine, store::ListSnapshots(st, {.owner = owner}));
  if (static_cast<int64_t>(mine.size()) >= lim.max_per_owner) {
    return Fail(Error::LimitExceeded(
        "snapshot limit reached: " + std::to_string(lim.max_per_owner) + " snapshots per owner"));
  }
  uint64_t total = 0;
  int64_t of_sandbox = 0;
  for (const auto& r : mine) {
    total += static_cast<uint64_t>(r.size_bytes);
    if (!sandbox_id.empty() && r.sandbox_id == sandbox_id) ++of_sandbox;
  }
  if (of_sandbox >= lim.max_per_sandbox) {
    return Fail(
        Error::LimitExceeded("snapshot limit reached: " + std::to_string(lim.max_per_sandbox) +
                             " snapshots per sandbox"));
  }
  if (total >= lim.max_total_bytes_per_owner) {
    return Fail(Error::TooLarge("snapshot storage limit reached: " +
                                std::to_string(lim.max_total_bytes_per_owner) + " bytes"));
  }
  return {};
}

std::string ImageName(const std::string& id) { return id + ".img"; }

// A snapshot name: at most 200 bytes of UTF-8 (names reach JSON responses verbatim; the
// import's query string passes no JSON parser).
Status CheckSnapshotName(const std::string& name) {
  if (name.size() > 200) return Fail(Error::InvalidArgument("name is longer than 200 bytes"));
  if (!IsUtf8(name)) return Fail(Error::InvalidArgument("name is not valid UTF-8"));
  return {};
}

Status FsyncDir(const std::string& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return FailErrno("open " + dir);
  int rc = ::fsync(fd);
  int err = errno;
  ::close(fd);
  if (rc != 0) return Fail(Error::FromErrno(err, "fsync " + dir));
  return {};
}

/// Ends every process of the sandbox but sandboxd and empties /tmp (rollback's "running
/// processes and /tmp are cleared"). A /tmp that cannot be emptied is logged, not fatal.
Status ClearRuntime(protocol::Connection& conn, const std::string& sandbox_id) {
  ASB_TRY_CTX(protocol::KillAll(conn), "rollback: kill processes");
  protocol::ExecRequest clear;
  // Only where sandboxd is PID 1 (a real sandbox): a sandboxd run on the host for tests
  // (--no-pid1) must never empty the host's /tmp.
  clear.argv = {"/bin/sh", "-c",
                "[ \"$PPID\" = 1 ] || { echo 'not in a sandbox' >&2; exit 3; }; "
                "find /tmp -mindepth 1 -delete"};
  clear.cwd = "/";
  clear.user = protocol::kUserRoot;
  clear.timeout_ms = 30'000;
  auto cleared = protocol::ExecCollect(conn, clear);
  if (!cleared || cleared->result.exit_code != 0) {
    spdlog::warn("sandbox_id={} rollback: clearing /tmp failed: {}", sandbox_id,
                 cleared ? cleared->stderr_data : cleared.error().ToString());
  }
  return {};
}

/// After an image swap: sandboxd re-opens its workspace fd on its next file operation
/// (sandboxd/daemon.h); one now lets the old file system (and its loop device) go at once
/// instead of at the agent's next file call.
void RefreshWorkspace(protocol::Connection& conn) {
  protocol::FileStatRequest req;
  req.path = "/workspace";
  (void)protocol::StatFile(conn, req);
}

}  // namespace

std::string SnapshotService::SnapshotUploadDir() const { return reg_.cfg.data_dir + "/snapshots"; }

std::optional<std::string> SnapshotService::SnapshotImage(const std::string& snapshot_id) const {
  const isolation::Backend* images = reg_.backends.ImageBackend();
  if (images == nullptr) return std::nullopt;
  auto dir = images->WorkspaceImageDir();
  if (!dir) return std::nullopt;
  std::string path = *dir + "/" + ImageName(snapshot_id);
  if (::access(path.c_str(), F_OK) != 0) return std::nullopt;
  return path;
}

Result<SnapshotInfo> SnapshotService::CreateSnapshot(const std::string& owner,
                                                     const std::string& sandbox_id,
                                                     const std::string& name) {
  return Take(owner, sandbox_id, name, /*transient=*/false);
}

Result<SnapshotInfo> SnapshotService::Take(const std::string& owner, const std::string& sandbox_id,
                                           const std::string& name, bool transient) {
  ASB_TRY(CheckSnapshotName(name));
  ASB_ASSIGN_OR_RETURN(auto e, reg_.Find(owner, sandbox_id));
  std::lock_guard op(e->op_mu);
  return TakeLocked(e, /*stream=*/false, name, transient);
}

Result<SnapshotInfo> SnapshotService::TakeLocked(const std::shared_ptr<Entry>& e, bool stream,
                                                 const std::string& name, bool transient) {
  ASB_ASSIGN_OR_RETURN(SandboxRegistry::Active act,
                       reg_.BeginActivity(e, stream ? SandboxRegistry::Activity::kStream
                                                    : SandboxRegistry::Activity::kCall));
  ASB_ASSIGN_OR_RETURN(auto conn, reg_.ConnectionFor(*e, act));
  const SandboxInfo info = e->Snapshot();
  if (!transient) ASB_TRY(CheckCounts(reg_.store, reg_.cfg.snapshots, info.owner, info.id));
  const std::string dir = SnapshotUploadDir();
  ASB_TRY(EnsureDir(dir));

  store::SnapshotRecord rec;
  rec.id = NewId("snap_");
  rec.owner = info.owner;
  rec.sandbox_id = info.id;
  rec.name = name;
  rec.template_name = info.template_name;
  rec.spec_json = EncodeSpecJson(info);
  rec.state = "pending";
  rec.created_at_ms = reg_.clock.NowUnixMs();
  // Before the side effect: a crash from here on leaves "pending", which recovery deletes.
  ASB_TRY_CTX(store::InsertSnapshot(reg_.store, rec), "snapshot " + info.id);
  // A transient snapshot stays pending: no list or lookup shows it, and recovery removes it.
  auto mark_ready = [&](int64_t stored, int64_t content) -> Status {
    if (transient) return {};
    return store::MarkSnapshotReady(reg_.store, rec.id, stored, content);
  };
  // The image (when the backend has them): the workspace frozen at one instant and cloned,
  // temp + fsync + rename. Fork and rollback clone it; the archive below is the portable form.
  std::string image;
  auto drop = [&] {
    if (!image.empty()) ::unlink(image.c_str());
    (void)store::DeleteSnapshot(reg_.store, rec.id);
  };
  // Only the backend whose directory SnapshotImage reads keeps snapshot images.
  isolation::Backend* const images = reg_.backends.ImageBackend();
  auto own = reg_.BackendOf(info);
  if (own && *own == images && images != nullptr) {
    auto dir_or = images->WorkspaceImageDir();
    if (!dir_or) {
      drop();
      return Fail(std::move(dir_or).error().WithContext("snapshot " + info.id));
    }
    const std::string img_dir = *dir_or;
    const std::string tmp = img_dir + "/" + kSnapshotTempPrefix + ImageName(rec.id);
    auto copy = images->CopyWorkspaceImage(info.id, tmp);
    if (copy) {
      const std::string final_path = img_dir + "/" + ImageName(rec.id);
      if (::rename(tmp.c_str(), final_path.c_str()) != 0) {
        Error err = Error::FromErrno(errno, "rename " + tmp);
        ::unlink(tmp.c_str());
        drop();
        return Fail(std::move(err).WithContext("snapshot " + info.id));
      }
      image = final_path;
      if (Status st = FsyncDir(img_dir); !st) {
        drop();
        return Fail(std::move(st).error().WithContext("snapshot " + info.id));
      }
      spdlog::info("sandbox_id={} snapshot {} image: {} ({} bytes used)", info.id, rec.id,
                   copy->method, copy->used_bytes);
      // The archive is made on demand (EnsureArchive): the snapshot costs the clone only.
      struct stat st;
      const uint64_t stored =
          ::stat(image.c_str(), &st) == 0 ? static_cast<uint64_t>(st.st_blocks) * 512 : 0;
      if (copy->used_bytes > reg_.cfg.snapshots.max_snapshot_bytes) {
        drop();
        return Fail(Error::TooLarge("snapshot of " + info.id + " holds " +
                                    std::to_string(copy->used_bytes) + " bytes, more than " +
                                    std::to_string(reg_.cfg.snapshots.max_snapshot_bytes)));
      }
      if (Status ready =
              mark_ready(static_cast<int64_t>(stored), static_cast<int64_t>(copy->used_bytes));
          !ready) {
        drop();
        return Fail(std::move(ready).error().WithContext("snapshot " + info.id));
      }
      rec.size_bytes = static_cast<int64_t>(stored);
      rec.content_bytes = static_cast<int64_t>(copy->used_bytes);
      return ToInfo(rec);
    } else if (copy.error().code() != ErrorCode::kUnavailable) {
      drop();
      return Fail(std::move(copy).error().WithContext("snapshot " + info.id));
    }
  }

  auto ch = reg_.Checked(*e, act, wire::OpenTarExport(*conn, "/workspace"));
  if (!ch) {
    drop();
    return Fail(std::move(ch).error().WithContext("snapshot " + info.id));
  }
  auto facts = ReceiveTarZst(**ch, dir, FileName(rec.id), reg_.cfg.snapshots.max_snapshot_bytes);
  if (!facts) {
    drop();
    return Fail(std::move(facts).error().WithContext("snapshot " + info.id));
  }
  if (Status st = mark_ready(static_cast<int64_t>(facts->file_bytes),
                             static_cast<int64_t>(facts->content_bytes));
      !st) {
    ::unlink((dir + "/" + FileName(rec.id)).c_str());
    drop();
    return Fail(std::move(st).error().WithContext("snapshot " + info.id));
  }
  rec.size_bytes = static_cast<int64_t>(facts->file_bytes);
  rec.content_bytes = static_cast<int64_t>(facts->content_bytes);
  spdlog::info("sandbox_id={} snapshot {} taken: {} bytes ({} content, {} entries)", info.id,
               rec.id, facts->file_bytes, facts->content_bytes, facts->entries);
  return ToInfo(rec);
}

Result<std::vector<SnapshotInfo>> SnapshotService::ListSnapshots(
    const std::string& owner, const std::optional<std::string>& sandbox_id) {
  store::SnapshotFilter f;
  if (owner != kAnyOwner) f.owner = owner;
  f.sandbox_id = sandbox_id;
  f.state = "ready";
  ASB_ASSIGN_OR_RETURN(auto recs, store::ListSnapshots(reg_.store, f));
  std::vector<SnapshotInfo> out;
  for (const auto& r : recs) out.push_back(ToInfo(r));
  return out;
}

Result<SnapshotInfo> SnapshotService::GetSnapshot(const std::string& owner,
                                                  const std::string& snapshot_id) {
  if (!IsValidId(snapshot_id, "snap_")) return Fail(SnapNotFound(snapshot_id));
  auto r = store::GetSnapshot(reg_.store, snapshot_id);
  if (!r) {
    if (r.error().code() == ErrorCode::kNotFound) return Fail(SnapNotFound(snapshot_id));
    return Fail(std::move(r).error());
  }
  if (r->state != "ready" || (owner != kAnyOwner && r->owner != owner)) {
    return Fail(SnapNotFound(snapshot_id));
  }
  return ToInfo(*r);
}

Status SnapshotService::DeleteSnapshot(const std::string& owner, const std::string& snapshot_id) {
  ASB_ASSIGN_OR_RETURN(SnapshotInfo s, GetSnapshot(owner, snapshot_id));
  ASB_TRY(Drop(s.id));
  spdlog::info("snapshot {} deleted", s.id);
  return {};
}

Status SnapshotService::Drop(const std::string& snapshot_id) {
  // The record goes first: a crash after it leaves an unnamed file, which recovery removes.
  ASB_TRY(store::DeleteSnapshot(reg_.store, snapshot_id));
  const std::string path = SnapshotUploadDir() + "/" + FileName(snapshot_id);
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
    spdlog::warn("snapshot {}: unlink {}: {}", snapshot_id, path, strerror(errno));
  }
  if (auto image = SnapshotImage(snapshot_id); image && ::unlink(image->c_str()) != 0) {
    spdlog::warn("snapshot {}: unlink {}: {}", snapshot_id, *image, strerror(errno));
  }
  return {};
}

// ---- WorkspaceKeeper: the files of a files-only pause ----------------------------------------

Result<std::string> SnapshotService::KeepWorkspace(const std::shared_ptr<Entry>& e) {
  // A stream-kind activity: the pause that calls this has already closed the sandbox to calls.
  ASB_ASSIGN_OR_RETURN(SandboxRegistry::Active act,
                       reg_.BeginActivity(e, SandboxRegistry::Activity::kStream));
  ASB_ASSIGN_OR_RETURN(auto conn, reg_.ConnectionFor(*e, act));
  // Every process ends first, so the files are kept as they were left, not mid-write.
  ASB_TRY_CTX(reg_.Checked(*e, act, protocol::KillAll(*conn)), "end its processes");
  ASB_ASSIGN_OR_RETURN(SnapshotInfo snap, TakeLocked(e, /*stream=*/true, "", /*transient=*/true));
  return snap.id;
}

std::string SnapshotService::KeptImage(const std::string& snapshot_id) {
  return SnapshotImage(snapshot_id).value_or("");
}

Status SnapshotService::RestoreWorkspace(const std::shared_ptr<Entry>& e,
                                         const std::string& snapshot_id) {
  ASB_ASSIGN_OR_RETURN(store::SnapshotRecord rec, store::GetSnapshot(reg_.store, snapshot_id));
  ASB_ASSIGN_OR_RETURN(const std::string archive, EnsureArchive(ToInfo(rec)));
  std::shared_ptr<isolation::Sandbox> sandbox;
  {
    std::lock_guard l(e->info_mu);
    sandbox = e->sandbox;
  }
  auto conn = sandbox ? sandbox->connection() : nullptr;
  if (!conn || !conn->alive()) {
    return Fail(Error::Backend("sandbox " + rec.sandbox_id + ": no connection to its sandboxd"));
  }
  ASB_ASSIGN_OR_RETURN(auto ch, wire::OpenTarImport(*conn, "/workspace", true, 0));
  ASB_TRY_CTX(SendTarZst(archive, *ch), "restore its workspace from " + snapshot_id);
  return {};
}

void SnapshotService::ReleaseWorkspace(const std::string& snapshot_id) {
  if (Status st = Drop(snapshot_id); !st) {
    spdlog::warn("snapshot {}: removing a kept workspace: {}", snapshot_id, st.error().ToString());
  }
}

Result<std::string> SnapshotService::SnapshotArchivePath(const std::string& owner,
                                                         const std::string& snapshot_id) {
  ASB_ASSIGN_OR_RETURN(SnapshotInfo s, GetSnapshot(owner, snapshot_id));
  return EnsureArchive(s);
}

Result<std::string> SnapshotService::EnsureArchive(const SnapshotInfo& snap) {
  static std::mutex archive_mu;  // one on-demand export at a time (they are rare)
  const std::string dir = SnapshotUploadDir();
  const std::string path = dir + "/" + FileName(snap.id);
  if (::access(path.c_str(), F_OK) == 0) return path;
  std::lock_guard lock(archive_mu);
  if (::access(path.c_str(), F_OK) == 0) return path;
  auto image = SnapshotImage(snap.id);
  if (!image) return Fail(Error::Internal("snapshot " + snap.id + " has no archive and no image"));
  struct stat st;
  if (::stat(image->c_str(), &st) != 0) return FailErrno("stat " + *image);
  // A short-lived sandbox over a clone of the image, so that sandboxd (not the host) walks the
  // tree (ADR 0001). It has no record: a crash mid-way leaves an orphan that Recover destroys.
  auto tmpl = reg_.templates.Find(snap.template_name);
  if (!tmpl) tmpl = reg_.templates.Find(reg_.cfg.default_template);
  if (!tmpl) return Fail(std::move(tmpl).error().WithContext("archive of " + snap.id));
  isolation::SandboxSpec spec;
  spec.id = NewId("sb_");
  spec.template_name = tmpl->name;
  spec.rootfs = tmpl->rootfs;
  spec.cpus = 1;
  spec.memory_bytes = 256ull << 20;
  spec.pids_limit = 64;
  spec.workspace_bytes = static_cast<uint64_t>(st.st_size);
  spec.tmp_bytes = 1ull << 20;
  spec.workspace_image = *image;
  // SnapshotImage found the image, so the image backend exists.
  isolation::Backend& images = *reg_.backends.ImageBackend();
  auto sb = images.Create(spec);
  struct DestroyAtEnd {
    isolation::Backend& b;
    std::string id;
    ~DestroyAtEnd() { (void)b.Destroy(id); }
  } destroy{images, spec.id};
  if (!sb) return Fail(std::move(sb).error().WithContext("archive of " + snap.id));
  ASB_ASSIGN_OR_RETURN(auto ch, wire::OpenTarExport(*(*sb)->connection(), "/workspace"));
  ASB_ASSIGN_OR_RETURN(ArchiveFacts facts, ReceiveTarZst(*ch, dir, FileName(snap.id),
                                                         reg_.cfg.snapshots.max_snapshot_bytes));
  // Stored bytes are now the image's and the archive's; content is now exact.
  const auto stored =
      static_cast<int64_t>(static_cast<uint64_t>(st.st_blocks) * 512 + facts.file_bytes);
  // A transient (fork's) snapshot stays pending: only a ready one's sizes are recorded.
  auto current = store::GetSnapshot(reg_.store, snap.id);
  if (Status up = current && current->state != "ready"
                      ? Status{}
                      : store::MarkSnapshotReady(reg_.store, snap.id, stored,
                                                 static_cast<int64_t>(facts.content_bytes));
      !up) {
    spdlog::warn("snapshot {}: recording the archive's size: {}", snap.id, up.error().ToString());
  }
  spdlog::info("snapshot {} archive made from its image: {} bytes ({} content)", snap.id,
               facts.file_bytes, facts.content_bytes);
  return path;
}

Result<SandboxInfo> SnapshotService::Rollback(const std::string& owner,
                                              const std::string& sandbox_id,
                                              const std::string& snapshot_id) {
  ASB_ASSIGN_OR_RETURN(auto e, reg_.Find(owner, sandbox_id));
  const std::string snap_owner = owner == kAnyOwner ? e->Snapshot().owner : owner;
  // The snapshot is a field of the request body, not the resource the request addresses: a
  // missing one is a 400 naming the field. A 404 here would read as "sandbox gone" to every SDK.
  auto found = GetSnapshot(snap_owner, snapshot_id);
  if (!found && found.error().code() == ErrorCode::kNotFound) {
    return Fail(Error::InvalidArgument("snapshot_id: " + found.error().message()));
  }
  ASB_ASSIGN_OR_RETURN(SnapshotInfo snap, std::move(found));
  const std::string dir = SnapshotUploadDir();

  std::lock_guard op(e->op_mu);
  ASB_ASSIGN_OR_RETURN(SandboxRegistry::Active act, reg_.BeginActivity(e));
  ASB_ASSIGN_OR_RETURN(auto conn, reg_.ConnectionFor(*e, act));
  const SandboxInfo info = e->Snapshot();
  auto commit = [&]() -> Result<SandboxInfo> {
    SandboxInfo updated;
    {
      std::lock_guard l(e->info_mu);
      e->info.source_snapshot_id = snap.id;
      e->info.rolled_back_to_snapshot_id = snap.id;  // its origin (forked_from) stays
      e->info.updated_at_ms = reg_.clock.NowUnixMs();
      e->info.rolled_back_at_ms = e->info.updated_at_ms;
      updated = e->info;
    }
    ASB_TRY_CTX(reg_.store.UpdateSandbox(ToRecord(updated)), "rollback " + info.id);
    return updated;
  };

  // Fast path: the snapshot's image becomes the workspace. Staging (a clone beside the
  // workspace) touches nothing the sandbox sees; the swap happens after the processes ended.
  // If the swap fails the old workspace stays mounted (S5); a crash after staging is rolled
  // forward by RecoverSnapshots.
  ASB_ASSIGN_OR_RETURN(isolation::Backend* const backend, reg_.BackendOf(info));
  if (auto image = SnapshotImage(snap.id)) {
    // A backend without workspace images answers kUnavailable: the archive path below.
    auto staged = backend->StageWorkspace(info.id, *image);
    if (staged) {
      Status done = [&]() -> Status {
        ASB_TRY(reg_.Checked(*e, act, ClearRuntime(*conn, info.id)));
        ASB_ASSIGN_OR_RETURN(bool swapped, backend->SwapStagedWorkspace(info.id));
        if (!swapped) return Fail(Error::Backend("the staged workspace disappeared"));
        RefreshWorkspace(*conn);
        return {};
      }();
      if (!done) {
        (void)backend->DropStagedWorkspace(info.id);
        return Fail(std::move(done).error().WithContext("rollback " + info.id + " to " + snap.id));
      }
      spdlog::info("sandbox_id={} rolled back to {} (image, {})", info.id, snap.id, staged->method);
      return commit();
    }
    if (staged.error().code() != ErrorCode::kUnavailable &&
        staged.error().code() != ErrorCode::kInvalidArgument) {
      return Fail(std::move(staged).error().WithContext("rollback " + info.id + " to " + snap.id));
    }
    spdlog::info("sandbox_id={} rollback to {}: archive path ({})", info.id, snap.id,
                 staged.error().detail());
  }

  // Portable path. Checks that touch nothing come first.
  if (snap.content_bytes > (info.workspace_mb << 20)) {
    return Fail(Error::TooLarge("snapshot " + snap.id + " holds " +
                                std::to_string(snap.content_bytes) +
                                " bytes, more than the workspace of " + info.id + " (" +
                                std::to_string(info.workspace_mb) + " MiB)"));
  }
  ASB_ASSIGN_OR_RETURN(const std::string archive, EnsureArchive(snap));
  ASB_TRY_CTX(ScanArchive(archive, 0), "rollback to " + snap.id);

  // The current workspace, kept until the rollback succeeded (S5).
  const std::string backup_name = ".rollback-" + info.id + ".tar.zst";
  const std::string backup = dir + "/" + backup_name;
  {
    ASB_ASSIGN_OR_RETURN(auto ch, reg_.Checked(*e, act, wire::OpenTarExport(*conn, "/workspace")));
    ASB_TRY_CTX(ReceiveTarZst(*ch, dir, backup_name, 0), "rollback: save current workspace");
  }
  struct Unlink {
    std::string p;
    ~Unlink() { ::unlink(p.c_str()); }
  } backup_guard{backup};

  ASB_TRY(reg_.Checked(*e, act, ClearRuntime(*conn, info.id)));

  auto restore = [&](const std::string& path) -> Result<protocol::TarResult> {
    ASB_ASSIGN_OR_RETURN(auto ch, wire::OpenTarImport(*conn, "/workspace", true, 0));
    return SendTarZst(path, *ch);
  };
  if (auto r = restore(archive); !r) {
    Error err = std::move(r).error();
    spdlog::warn("sandbox_id={} rollback to {} failed ({}); restoring the previous workspace",
                 info.id, snap.id, err.ToString());
    if (auto back = restore(backup); !back) {
      spdlog::error("sandbox_id={} restoring the previous workspace failed: {}", info.id,
                    back.error().ToString());
    }
    if (err.code() == ErrorCode::kLimitExceeded) {
      err = std::move(err).WithCode(ErrorCode::kTooLarge);  // it does not fit this workspace
    }
    return Fail(std::move(err).WithContext("rollback " + info.id + " to " + snap.id));
  }
  spdlog::info("sandbox_id={} rolled back to {} (archive)", info.id, snap.id);
  return commit();
}

Result<SandboxInfo> SnapshotService::Fork(const std::string& owner, const std::string& snapshot_id,
                                          const ForkRequest& req) {
  ASB_ASSIGN_OR_RETURN(SnapshotInfo snap, GetSnapshot(owner, snapshot_id));
  return ForkFrom(snap, req, /*from_snapshot=*/true);
}

Result<std::vector<ForkedChild>> SnapshotService::ForkSandbox(const std::string& owner,
                                                              const std::string& sandbox_id,
                                                              const SandboxForkRequest& req) {
  const int64_t most = reg_.cfg.limits.max_fork_count;
  if (req.count < 1 || req.count > most) {
    return Fail(Error::InvalidArgument("count: must be between 1 and " + std::to_string(most)));
  }
  const Limits& limits = reg_.cfg.limits;
  if (req.timeout_seconds && (*req.timeout_seconds < limits.min_timeout_seconds ||
                              *req.timeout_seconds > limits.max_timeout_seconds)) {
    return Fail(Error::InvalidArgument("timeout_seconds: must be between " +
                                       std::to_string(limits.min_timeout_seconds) + " and " +
                                       std::to_string(limits.max_timeout_seconds)));
  }
  // The parent's workspace at one instant, as a snapshot no one else sees (it stays pending,
  // so a crash from here on leaves nothing that recovery does not remove). The parent runs on.
  ASB_ASSIGN_OR_RETURN(SnapshotInfo snap, Take(owner, sandbox_id, "", /*transient=*/true));
  struct DropAtEnd {
    SnapshotService* self;
    std::string id;
    ~DropAtEnd() {
      if (Status st = self->Drop(id); !st) {
        spdlog::warn("fork: removing its snapshot {}: {}", id, st.error().ToString());
      }
    }
  } drop{this, snap.id};
  ForkRequest fr;
  fr.timeout_seconds = req.timeout_seconds;
  std::vector<ForkedChild> out;
  out.reserve(static_cast<size_t>(req.count));
  for (int64_t i = 0; i < req.count; ++i) {
    ForkedChild child;
    if (req.quota_left && i >= *req.quota_left) {
      child.error = Error::LimitExceeded("the API key's sandbox quota is full (" +
                                         std::to_string(*req.quota_left) + " more were allowed)");
      out.push_back(std::move(child));
      continue;
    }
    auto made = ForkFrom(snap, fr, /*from_snapshot=*/false);
    if (made) {
      child.sandbox = std::move(made).value();
    } else {
      child.error = std::move(made).error();
    }
    out.push_back(std::move(child));
  }
  spdlog::info("sandbox_id={} forked {} time(s): {} made", sandbox_id, req.count,
               std::count_if(out.begin(), out.end(),
                             [](const ForkedChild& c) { return c.sandbox.has_value(); }));
  return out;
}

Result<SandboxInfo> SnapshotService::ForkFrom(const SnapshotInfo& snap, const ForkRequest& req,
                                              bool from_snapshot) {
  ASB_ASSIGN_OR_RETURN(store::SnapshotRecord rec, store::GetSnapshot(reg_.store, snap.id));
  SandboxInfo base;
  base.cpus = reg_.cfg.limits.default_cpus;
  base.memory_mb = reg_.cfg.limits.default_memory_mb;
  base.pids_limit = reg_.cfg.limits.default_pids_limit;
  base.workspace_mb = reg_.cfg.limits.default_workspace_mb;
  base.timeout_seconds = reg_.cfg.limits.default_timeout_seconds;
  // The source's command defaults, if its record has them (older ones and uploads do not:
  // the template's apply then).
  base.default_workdir.clear();
  base.default_user.clear();
  DecodeSpecJson(rec.spec_json, &base);
  std::optional<CommandDefaults> inherited;
  if (!base.default_workdir.empty() && !base.default_user.empty()) {
    inherited = CommandDefaults{base.default_workdir, base.default_user};
  }
  CreateRequest cr;
  cr.template_name = rec.template_name;
  cr.cpus = req.cpus.value_or(base.cpus);
  cr.memory_mb = req.memory_mb.value_or(base.memory_mb);
  cr.pids_limit = base.pids_limit;
  cr.workspace_mb = std::max<int64_t>(base.workspace_mb, (snap.content_bytes >> 20) + 16);
  cr.timeout_seconds = req.timeout_seconds.value_or(base.timeout_seconds);
  cr.env = base.env;
  for (const auto& [k, v] : req.env) cr.env[k] = v;
  cr.metadata = req.metadata.value_or(base.metadata);
  cr.auto_pause = req.auto_pause.value_or(base.auto_pause);
  cr.auto_pause_keep_memory = base.auto_pause_keep_memory;
  cr.auto_resume = req.auto_resume.value_or(base.auto_resume);
  cr.allow_public_traffic = base.allow_public_traffic;
  cr.mask_request_host = base.mask_request_host;
  cr.network = req.network.value_or(base.network);

  // Fast path: the new sandbox's workspace is a clone of the snapshot's image (a reflink where
  // the file system shares extents); its quota is the image's size.
  std::string image;
  cr.backend = base.backend;  // a fork runs where its source ran
  auto target = reg_.backends.Find(cr.backend);
  if (!target) {
    return Fail(std::move(target).error().WithContext("fork of " + snap.id));
  }
  if (auto img = SnapshotImage(snap.id); img && *target == reg_.backends.ImageBackend()) {
    struct stat st;
    if (::stat(img->c_str(), &st) == 0 && st.st_size % (1 << 20) == 0 &&
        (st.st_size >> 20) <= reg_.cfg.limits.max_workspace_mb &&
        (st.st_size >> 20) >= reg_.cfg.limits.min_workspace_mb) {
      image = *img;
      cr.workspace_mb = static_cast<int64_t>(st.st_size >> 20);
    }
  }
  cr.network_when_offered = req.network_when_offered;
  if (req.network_policy) {
    cr.network_policy = req.network_policy;
  } else if (cr.network && base.network) {
    cr.network_policy = base.network_policy;
  }
  ASB_ASSIGN_OR_RETURN(SandboxInfo created,
                       lifecycle_.CreateWith(snap.owner, cr, image, inherited));

  auto fill = [&]() -> Result<SandboxInfo> {
    ASB_ASSIGN_OR_RETURN(auto e, reg_.Find(kAnyOwner, created.id));
    std::lock_guard op(e->op_mu);
    ASB_ASSIGN_OR_RETURN(SandboxRegistry::Active act, reg_.BeginActivity(e));
    if (image.empty()) {
      ASB_ASSIGN_OR_RETURN(const std::string archive, EnsureArchive(snap));
      ASB_ASSIGN_OR_RETURN(auto conn, reg_.ConnectionFor(*e, act));
      ASB_ASSIGN_OR_RETURN(auto ch, wire::OpenTarImport(*conn, "/workspace", true, 0));
      ASB_TRY(SendTarZst(archive, *ch));
    }
    // A fork of a running sandbox names no snapshot: its snapshot is gone after the fork.
    if (!from_snapshot) return e->Snapshot();
    SandboxInfo updated;
    {
      std::lock_guard l(e->info_mu);
      e->info.source_snapshot_id = snap.id;
      e->info.forked_from_snapshot_id = snap.id;
      updated = e->info;
    }
    ASB_TRY(reg_.store.UpdateSandbox(ToRecord(updated)));
    return updated;
  };
  auto r = fill();
  if (!r) {
    (void)lifecycle_.Destroy(kAnyOwner, created.id);
    return Fail(std::move(r).error().WithContext("fork " + snap.id));
  }
  spdlog::info("sandbox_id={} forked from {} ({})", created.id, snap.id,
               image.empty() ? "archive" : "image");
  return r;
}

Result<SnapshotInfo> SnapshotService::ImportSnapshot(const std::string& owner,
                                                     const std::string& temp_path,
                                                     const std::string& name,
                                                     const std::string& template_name) {
  struct Unlink {
    std::string p;
    ~Unlink() { ::unlink(p.c_str()); }
  } guard{temp_path};
  ASB_TRY(CheckSnapshotName(name));
  const std::string tname = template_name.empty() ? reg_.cfg.default_template : template_name;
  ASB_TRY(reg_.templates.Find(tname));
  ASB_TRY(CheckCounts(reg_.store, reg_.cfg.snapshots, owner, ""));
  ASB_ASSIGN_OR_RETURN(ArchiveFacts facts,
                       ScanArchive(temp_path, reg_.cfg.snapshots.max_snapshot_bytes));
  if (facts.content_bytes > static_cast<uint64_t>(reg_.cfg.limits.max_workspace_mb) << 20) {
    return Fail(Error::TooLarge("archive expands to more than the largest workspace"));
  }
  store::SnapshotRecord rec;
  rec.id = NewId("snap_");
  rec.owner = owner;
  rec.name = name;
  rec.template_name = tname;
  rec.state = "pending";
  rec.created_at_ms = reg_.clock.NowUnixMs();
  ASB_TRY(store::InsertSnapshot(reg_.store, rec));
  const std::string dir = SnapshotUploadDir();
  if (Status st = InstallFile(temp_path, dir, FileName(rec.id)); !st) {
    (void)store::DeleteSnapshot(reg_.store, rec.id);
    return Fail(std::move(st).error());
  }
  rec.size_bytes = static_cast<int64_t>(facts.file_bytes);
  rec.content_bytes = static_cast<int64_t>(facts.content_bytes);
  ASB_TRY(store::MarkSnapshotReady(reg_.store, rec.id, rec.size_bytes, rec.content_bytes));
  spdlog::info("snapshot {} imported: {} bytes", rec.id, rec.size_bytes);
  return ToInfo(rec);
}

Status SnapshotService::RestoreInterruptedRollback(const std::string& sandbox_id,
                                                   const std::string& backup) {
  auto e = reg_.Find(kAnyOwner, sandbox_id);
  if (!e) return {};  // the sandbox is gone; the file is removed below as a stray
  std::lock_guard op((*e)->op_mu);
  ASB_ASSIGN_OR_RETURN(SandboxRegistry::Active act, reg_.BeginActivity(*e));
  ASB_ASSIGN_OR_RETURN(auto conn, reg_.ConnectionFor(**e, act));
  ASB_TRY(protocol::KillAll(*conn));
  ASB_ASSIGN_OR_RETURN(auto ch, wire::OpenTarImport(*conn, "/workspace", true, 0));
  ASB_TRY(SendTarZst(backup, *ch));
  spdlog::info("sandbox_id={} workspace restored after an interrupted rollback", sandbox_id);
  return {};
}

Status SnapshotService::FinishStagedRollback(const std::string& sandbox_id) {
  ASB_ASSIGN_OR_RETURN(auto e, reg_.Find(kAnyOwner, sandbox_id));
  std::lock_guard op(e->op_mu);
  ASB_ASSIGN_OR_RETURN(SandboxRegistry::Active act, reg_.BeginActivity(e));
  ASB_ASSIGN_OR_RETURN(auto conn, reg_.ConnectionFor(*e, act));
  ASB_ASSIGN_OR_RETURN(isolation::Backend * backend, reg_.BackendOf(*e));
  ASB_TRY(ClearRuntime(*conn, sandbox_id));
  ASB_TRY(backend->SwapStagedWorkspace(sandbox_id));
  RefreshWorkspace(*conn);
  spdlog::info("sandbox_id={} interrupted rollback finished (staged image swapped in)", sandbox_id);
  return {};
}

Status SnapshotService::RecoverSnapshots() {
  const std::string dir = SnapshotUploadDir();
  ASB_TRY(EnsureDir(dir));
  ASB_ASSIGN_OR_RETURN(auto pending, store::ListSnapshots(reg_.store, {.state = "pending"}));
  isolation::Backend* const image_backend = reg_.backends.ImageBackend();
  const bool images = image_backend != nullptr;
  std::string img_dir;
  if (images) {
    ASB_ASSIGN_OR_RETURN(img_dir, image_backend->WorkspaceImageDir());
  }
  // The workspaces of files-only paused sandboxes are pending snapshots their records name:
  // kept. Any other pending one is half-made (or its pause or resume was cut short).
  std::set<std::string> kept;
  for (const auto& e : reg_.AllEntries()) {
    const SandboxInfo i = e->Snapshot();
    if (i.state == SandboxState::kPaused && i.paused_workspace_snapshot_id) {
      kept.insert(*i.paused_workspace_snapshot_id);
    }
  }
  for (const auto& r : pending) {
    if (kept.count(r.id) != 0) continue;
    ::unlink((dir + "/" + FileName(r.id)).c_str());
    if (images) ::unlink((img_dir + "/" + ImageName(r.id)).c_str());
    ASB_TRY(store::DeleteSnapshot(reg_.store, r.id));
    spdlog::info("snapshot {}: removed a half-made snapshot", r.id);
  }
  // A complete ".rollback-<sandbox>.tar.zst" means a rollback was cut short after it saved
  // the workspace: the import may have stopped half-way, so the saved workspace goes back.
  std::error_code dec;
  for (const auto& de : std::filesystem::directory_iterator(dir, dec)) {
    const std::string n = de.path().filename().string();
    constexpr std::string_view kPrefix = ".rollback-", kSuffix = ".tar.zst";
    if (n.rfind(kPrefix, 0) != 0 || n.size() <= kPrefix.size() + kSuffix.size() ||
        n.substr(n.size() - kSuffix.size()) != kSuffix) {
      continue;
    }
    const std::string sid = n.substr(kPrefix.size(), n.size() - kPrefix.size() - kSuffix.size());
    if (Status st = RestoreInterruptedRollback(sid, de.path().string()); !st) {
      spdlog::warn("sandbox_id={} restoring the workspace of an interrupted rollback: {}", sid,
                   st.error().ToString());
    }
  }
  // A staged image means an image rollback was cut short after staging: finish it.
  for (const auto& e : reg_.AllEntries()) {
    if (!images) break;
    const std::string sid = e->Snapshot().id;
    auto backend = reg_.BackendOf(*e);
    if (!backend || !(*backend)->HasStagedWorkspace(sid)) continue;
    if (Status st = FinishStagedRollback(sid); !st) {
      spdlog::warn("sandbox_id={} finishing an interrupted rollback: {}", sid,
                   st.error().ToString());
      (void)(*backend)->DropStagedWorkspace(sid);
    }
  }
  ASB_ASSIGN_OR_RETURN(auto ready, store::ListSnapshots(reg_.store, {.state = "ready"}));
  std::set<std::string> named, named_images;
  for (const std::string& id : kept) {
    named.insert(FileName(id));
    named_images.insert(ImageName(id));
  }
  for (const auto& r : ready) {
    named.insert(FileName(r.id));
    named_images.insert(ImageName(r.id));
  }
  std::error_code iec;
  for (const auto& de : std::filesystem::directory_iterator(
           images ? std::filesystem::path(img_dir) : std::filesystem::path(), iec)) {
    const std::string n = de.path().filename().string();
    if (named_images.count(n)) continue;
    bool ours = n.rfind(kSnapshotTempPrefix, 0) == 0 ||
                (n.rfind("snap_", 0) == 0 && n.size() > 4 && n.substr(n.size() - 4) == ".img");
    if (!ours) continue;
    ::unlink(de.path().c_str());
    spdlog::info("snapshots: removed stray image {}", n);
  }
  std::error_code ec;
  for (const auto& de : std::filesystem::directory_iterator(dir, ec)) {
    const std::string n = de.path().filename().string();
    if (named.count(n)) continue;
    // Temp files, rollback backups and archives no record names (a crash after a delete).
    bool ours = n.rfind(kSnapshotTempPrefix, 0) == 0 || n.rfind(".rollback-", 0) == 0 ||
                n.rfind(".upload-", 0) == 0 ||
                (n.rfind("snap_", 0) == 0 && n.size() > 8 && n.substr(n.size() - 8) == ".tar.zst");
    if (!ours) continue;
    ::unlink(de.path().c_str());
    spdlog::info("snapshots: removed stray file {}", n);
  }
  return {};
}

}  // namespace asb::core
