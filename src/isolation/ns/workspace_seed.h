// Workspace seeds: what a template holds under /workspace (a Dockerfile's COPY, RUN or WORKDIR
// there, an imported image's files) becomes each new sandbox's initial workspace. A sandbox
// mounts its own workspace image over the rootfs's /workspace, which would otherwise hide it.
//
// The first create of a template (and workspace size) makes a seed image: a fresh workspace
// image with a copy of the rootfs's /workspace, every entry owned by the sandbox user (the
// workspace is the user's, as /home/user is in an E2B template). Every create after that clones
// it as a fork clones a snapshot's image (workspace_snapshot.h: a reflink where the host file
// system shares extents, else a sparse copy of its data), so a seeded create costs about what a
// fork does, and the content counts against the sandbox's quota like anything it writes.
//
// Seeds live in <state_dir>/.seeds, named by the rootfs's path (hashed), the identity of its
// /workspace directory (a rebuilt template is a new directory) and the size. They are a cache:
// making one for a rebuilt template removes those of its earlier builds.
//
// An empty workspace is cloned too, from a blank image per size (BlankFor): a sparse copy of a
// freshly made file system's ~0.7 MB of data costs ~1 ms where mkfs.ext4 costs ~5 ms of a
// process of its own, on the path of every create the pre-mounted pool (workspace.h) cannot
// serve: `agent-sandbox run`, other sizes, a burst past the pool.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>

#include "common/result.h"

namespace asb::isolation::ns {

class WorkspaceSeeds {
 public:
  /// `dir` must exist (0700) and belong to the backend. `owner` is the canonical id every seeded
  /// entry gets (kSandboxUserUid).
  WorkspaceSeeds(std::string dir, uint32_t owner) : dir_(std::move(dir)), owner_(owner) {}

  /// The seed image for a workspace of `bytes` of the template whose root filesystem is
  /// `rootfs`, made now when missing; "" when the rootfs's /workspace is empty, missing or not
  /// a directory (a fresh workspace then). Errors: kInvalidArgument when the content does not
  /// fit `bytes` ("the template's /workspace does not fit a workspace of N MiB"), kBackend from
  /// mkfs, mount or the copy.
  Result<std::string> ImageFor(const std::string& rootfs, uint64_t bytes);

  /// A blank workspace image of `bytes` (a fresh ext4 whose root is `owner`'s, as
  /// MakeWorkspaceImage makes it) to clone, made now when missing. At most kMaxBlankImages
  /// sizes are kept; making another removes the rest. Errors: kBackend from mkfs or the file
  /// system.
  Result<std::string> BlankFor(uint64_t bytes);
  static constexpr int kMaxBlankImages = 8;

 private:
  // Makes seed `name`; removes the seeds of `prefix` (this rootfs) not of `build` (this build).
  Result<std::string> Make(const std::string& rootfs, const std::string& name,
                           const std::string& prefix, const std::string& build, uint64_t bytes);

  const std::string dir_;
  const uint32_t owner_;
  std::mutex mu_;  // one seed is made at a time; lookups of made ones do not wait for it
};

}  // namespace asb::isolation::ns
