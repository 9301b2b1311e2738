// Installing, replacing and removing templates in the data directory (ADR 0004, ADR 0012).
//
// Layout under <data_dir>/templates (TemplateLayout):
//   <name>/rootfs/               the root filesystem, mounted read-only by the backends
//   <name>/manifest.json         core/template_manifest.h
//   <name>/.stamp                the recipe hash the template was built from (incremental builds)
//   .<name>.lock                 flock(2) held by whoever builds, installs or removes <name>
//   .build-<name>.XXXXXX/        a staging directory (MakeStagingDir); its rootfs/ is filled by
//                                a builder and becomes <name>/ through InstallTemplate
//   .retired-<name>-<time>/      a replaced version still used by running sandboxes; removed
//                                by a later CleanupTemplateLeftovers once no mount uses it
//
// A builder's sequence:
//   TemplateLayout layout(cfg.TemplatesDir());
//   ASB_ASSIGN_OR_RETURN(auto lock, LockTemplate(layout, name));       // blocks
//   CleanupTemplateLeftovers(layout, name);
//   ASB_ASSIGN_OR_RETURN(StagingDir stage, MakeStagingDir(layout, name));
//   ... fill stage.rootfs() ...
//   ASB_TRY(FinishRootfs(stage.rootfs()));                              // sandbox user etc.
//   ASB_TRY(InstallTemplate(layout, name, stage, manifest));
// If anything fails before InstallTemplate, `stage`'s destructor removes the staging directory
// and the installed template is untouched.
#pragma once

#include <string>
#include <string_view>

#include "common/result.h"
#include "common/unique_fd.h"
#include "core/template_manifest.h"

namespace asb::core {

/// Template names: [a-z0-9][a-z0-9_-]{0,62}. Errors: kInvalidArgument naming the rule.
Status ValidateTemplateName(std::string_view name);

/// Paths of the layout above; does no I/O.
class TemplateLayout {
 public:
  /// `templates_dir` is ManagerConfig::TemplatesDir(), i.e. <data_dir>/templates.
  explicit TemplateLayout(std::string templates_dir) : dir_(std::move(templates_dir)) {}
  const std::string& dir() const { return dir_; }
  std::string Dir(std::string_view name) const { return dir_ + "/" + std::string(name); }
  std::string Rootfs(std::string_view name) const { return Dir(name) + "/rootfs"; }
  std::string Manifest(std::string_view name) const { return Dir(name) + "/manifest.json"; }
  std::string Stamp(std::string_view name) const { return Dir(name) + "/.stamp"; }
  std::string LockFile(std::string_view name) const {
    return dir_ + "/." + std::string(name) + ".lock";
  }

 private:
  std::string dir_;
};

/// An exclusive flock on .<name>.lock; released on destruction.
class TemplateLock {
 public:
  TemplateLock() = default;
  explicit TemplateLock(UniqueFd fd) : fd_(std::move(fd)) {}

 private:
  UniqueFd fd_;
};

/// Creates the templates directory if needed (0755) and takes the lock of `name`, waiting for
/// another holder. Errors: kInvalidArgument (bad name), errno errors of open/flock.
Result<TemplateLock> LockTemplate(const TemplateLayout& layout, std::string_view name);

/// The current recipe hash of `name` (contents of .stamp, trimmed), or "" when the template is
/// not installed or lacks rootfs/bin/sh or its manifest — i.e. "" means "must build".
std::string InstalledStamp(const TemplateLayout& layout, std::string_view name);

/// A staging directory .build-<name>.XXXXXX beside the installed template (same filesystem, so
/// the swap is a rename). Removed with everything below it (mounts first) on destruction unless
/// it was installed.
class StagingDir {
 public:
  StagingDir() = default;
  explicit StagingDir(std::string path) : path_(std::move(path)) {}
  StagingDir(StagingDir&& o) noexcept : path_(std::exchange(o.path_, {})) {}
  StagingDir& operator=(StagingDir&& o) noexcept;
  StagingDir(const StagingDir&) = delete;
  StagingDir& operator=(const StagingDir&) = delete;
  ~StagingDir();

  const std::string& path() const { return path_; }
  /// <path>/rootfs (not created by MakeStagingDir: mmdebstrap wants to create it itself).
  std::string rootfs() const { return path_ + "/rootfs"; }
  /// Forgets the directory without removing it (InstallTemplate calls this).
  void Release() { path_.clear(); }

 private:
  std::string path_;
};

/// mkdtemp of <templates>/.build-<name>.XXXXXX (mode 0755). Hold the lock first.
Result<StagingDir> MakeStagingDir(const TemplateLayout& layout, std::string_view name);

/// Makes a freshly built root filesystem fit for sandboxes, as ADR 0004 describes: mount points
/// /workspace, /tmp (1777), /proc, /sys, /dev, /run (a microVM guest mounts its tmpfs there: the
/// root filesystem is a read-only disk); /etc/hostname "sandbox", /etc/hosts, an empty
/// /etc/resolv.conf (networked sandboxes bind their resolver there) and /etc/machine-id; the
/// user `sandbox` uid/gid 1000 home /workspace (protocol/messages.h kSandboxUid) unless it
/// exists already; /home/user a symlink to /workspace (E2B's home, docs/e2b.md) unless it
/// exists; apt lists and caches, logs and docs (copyright files kept) removed.
/// Errors: kConflict when uid or gid 1000 belongs to another name; errno errors.
Status FinishRootfs(const std::string& rootfs);

/// Installs `stage` as template `name`, atomically: writes `manifest` (size_bytes filled from
/// the rootfs when 0, created_at from the clock when empty, name set to `name`) as
/// <stage>/manifest.json and manifest.recipe_hash as <stage>/.stamp, syncs them, then swaps
/// <stage> and <templates>/<name> with renameat2(RENAME_EXCHANGE) (plain rename when there is
/// none yet). The previous version is removed, or set aside as .retired-<name>-<time> while a
/// mount still uses it. A reader sees either the old or the new template, never a mix; on any
/// error before the swap the old template is untouched. Requires <stage>/rootfs/bin/sh.
/// Call with the lock held. Errors: kInvalidArgument (name, no rootfs/bin/sh, a workdir or
/// user its sandboxes cannot honour: ResolveTemplateDefaults), errno errors.
Status InstallTemplate(const TemplateLayout& layout, std::string_view name, StagingDir& stage,
                       TemplateManifest manifest);

/// Removes leftovers of `name`: staging dirs of interrupted builds, and retired versions no
/// mount uses any more. Best effort; call with the lock held.
void CleanupTemplateLeftovers(const TemplateLayout& layout, std::string_view name);

/// True when a mount in any process's mount namespace (/proc/*/mountinfo, field 4 — the root
/// within its filesystem, which follows renames) shows `dir` or something below it.
bool TreeInUse(const std::string& dir);

/// Unmounts everything mounted below `dir` (lazily), then removes the tree without crossing
/// into other filesystems. Missing `dir` is not an error.
Status RemoveTree(const std::string& dir);

/// Removes installed template `name`. Errors: kNotFound when it is not installed; kConflict
/// when a running sandbox still has its rootfs mounted (TreeInUse). Callers that know about
/// sandboxes that are not running (the store) check those themselves first. Takes the lock.
Status RemoveTemplate(const TemplateLayout& layout, std::string_view name);

}  // namespace asb::core
