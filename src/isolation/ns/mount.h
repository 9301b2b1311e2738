// Mount namespace of a sandbox: the template's rootfs read-only as /, fresh /proc with Docker's
// masked and read-only paths, a minimal /dev with a private devpts, read-only sysfs, a
// size-limited /tmp, the workspace at /workspace, then pivot_root and the old root detached.
// A template build step (MakeBuildMountPlan) gets the same /proc and /dev over a writable
// staged rootfs, and no /sys, /tmp or /workspace of its own (its writes are the template).
//
// Every path and option string is computed by MakeMountPlan in the parent; the child only
// reads them (c_str()), because code between clone and exec must not allocate.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "isolation/ns/child_step.h"

namespace asb::isolation::ns {

struct MountPlan {
  std::string root;            // template rootfs on the host; bound onto itself as the new /
  bool read_only_root = true;  // false: the root stays writable (a build's staged rootfs)
  // A detached, idmapped clone of `root` (idmap.h IdmappedTree, mapping the on-disk ids to the
  // sandbox's range, so files show their real owners inside: root 0, sandbox 1000). Attached
  // on `root` instead of the plain bind when >= 0 (it is inherited across clone).
  int root_tree_fd = -1;
  std::string ws_source;  // host-side workspace mount -> /workspace; "" = none
  // Absolute targets below `root`, for the binds of host paths (phase 1):
  std::string workspace, etc_hostname, etc_resolv;
  // Small files the child writes into a scratch tmpfs and binds read-only onto their targets
  // (relative to the new root), so that /proc/self/mountinfo names a tmpfs, never a host path
  // of the data directory (ADR 0014): /etc/hostname, /etc/resolv.conf of networked sandboxes,
  // a benign /proc/cmdline. An optional target that does not exist is skipped.
  struct ScratchFile {
    std::string content, path, target;
    bool optional = false;
  };
  std::vector<ScratchFile> scratch_files;
  // Targets relative to the new root (phase 2 runs with cwd = root); sys and tmp "" = none
  // (scratch files need tmp):
  std::string proc, sys, dev, dev_pts, dev_shm, tmp;
  std::vector<std::string> dev_node_src, dev_node_dst;      // bind-mounted host device nodes
  std::vector<std::string> dev_link_target, dev_link_path;  // /dev/fd, stdin, ..., ptmx
  std::vector<std::string> masked_files;    // /dev/null bound over them (read as empty)
  std::vector<std::string> masked_dirs;     // read-only empty tmpfs over them
  std::vector<std::string> readonly_paths;  // bound onto themselves read-only
  std::string tmp_options, shm_options, dev_options, devpts_options;
  // More host paths bound in phase 1 (after the workspace), onto absolute targets below
  // `root` that exist; read_only ones are remounted read-only, nosuid and nodev. For a
  // helper's jail (a microVM's QEMU: its binary's /usr, its images and its socket directory).
  struct HostBind {
    std::string source, target;
    bool read_only = true;
  };
  std::vector<HostBind> host_binds;
};

/// What /proc/cmdline reads inside: the host's boot line is not the sandbox's business.
inline constexpr char kSandboxCmdline[] = "ro quiet\n";

/// Builds the plan. `hostname_text` is /etc/hostname's content ("" = the template's file);
/// `tmp_bytes` sizes /tmp and /dev/shm.
MountPlan MakeMountPlan(const std::string& rootfs, const std::string& ws_source,
                        const std::string& hostname_text, uint64_t tmp_bytes);
/// The plan of a template build step (templates/build_sandbox.h): `rootfs` writable as /, with
/// the sandbox's /proc (masked) and /dev; `shm_bytes` sizes /dev/shm.
MountPlan MakeBuildMountPlan(const std::string& rootfs, uint64_t shm_bytes);
/// The plan of a helper jailed in an empty root we made (`root`, a host directory holding the
/// mount points of `binds`): the sandbox's /proc (masked) and /dev, no /sys or /tmp, and
/// nothing of the host but `binds`; / read-only. `extra_dev_nodes` are (source, name below
/// dev/) pairs bound like /dev/null (a source relative to `root` resolves inside it).
MountPlan MakeJailMountPlan(
    const std::string& root, std::vector<MountPlan::HostBind> binds,
    const std::vector<std::pair<std::string, std::string>>& extra_dev_nodes);
/// Adds a scratch file (see MountPlan::ScratchFile) for `target`, relative to the new root.
void AddScratchFile(MountPlan* plan, std::string content, const std::string& target, bool optional);

/// Phase 1, in the child while it still has the host's uid 0 (before BecomeRootInChild): the
/// host paths reach into the server's 0700 state directory, which only host root may walk.
/// Makes every mount private, binds the rootfs onto itself, binds the workspace into it, and
/// changes directory to it. Returns 0 or an errno in `*f`.
int BindHostPathsInChild(const MountPlan& plan, ChildFailure* f);

/// Phase 2, as root of the new user namespace (files it creates must have a mapped owner):
/// fresh /proc (masked), /dev, /sys, the scratch files, /tmp below the cwd, then pivot_root
/// into it, detach the
/// host's tree and make / read-only (unless the plan keeps it writable). On return 0, cwd and root
/// are the sandbox's "/".
int BuildRootAndPivotInChild(const MountPlan& plan, ChildFailure* f);

}  // namespace asb::isolation::ns
