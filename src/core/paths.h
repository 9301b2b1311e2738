// Path and mode rules of the file API. These are lexical checks made on the host before a
// request reaches sandboxd; sandboxd then resolves the path with openat2(2) as the sandbox user:
// beneath /workspace (RESOLVE_BENEATH) for a path in it, so a symlink there cannot lead out,
// and from the sandbox's own root for any other (it has no path to the host's).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/result.h"

namespace asb::core {

/// The directory every file operation is confined to.
inline constexpr std::string_view kWorkspaceDir = "/workspace";

/// Normalizes a file API path into an absolute path under /workspace:
///   ""                -> "/workspace"
///   "src/app.py"      -> "/workspace/src/app.py"   (relative paths are under /workspace)
///   "/workspace"      -> "/workspace"
///   "/workspace/a//b/./c/" -> "/workspace/a/b/c"
///   "a/../b"          -> "/workspace/b"
/// Errors (kInvalidArgument, message names the path rule): a NUL byte; an absolute path that is
/// not /workspace or below it ("/etc/x", "/workspacex/a"); a ".." that would leave /workspace
/// at any point ("../etc/passwd", "/workspace/..").
Result<std::string> NormalizeWorkspacePath(std::string_view path);

/// A file API path, normalized by NormalizeFilePath.
struct FilePath {
  std::string path;           // absolute and clean: "/workspace/a/b", "/tmp/x", "/"
  bool in_workspace = false;  // "/workspace" or below it
};

/// Normalizes a file API path, as E2B's and Daytona's file APIs take them: relative paths are
/// under /workspace and may not leave it (NormalizeWorkspacePath); absolute paths may name any
/// path of the sandbox and are cleaned lexically ("/tmp//a/../b" -> "/tmp/b"). Errors
/// (kInvalidArgument): a NUL byte, over 4096 bytes, a relative ".." out of /workspace, an
/// absolute ".." above "/".
Result<FilePath> NormalizeFilePath(std::string_view path);

/// Normalizes an exec working directory: "" -> "/workspace"; relative -> under /workspace
/// (same rules as NormalizeWorkspacePath); absolute paths anywhere in the sandbox are allowed
/// ("/tmp") but are cleaned lexically and may not contain NUL or climb above "/".
Result<std::string> NormalizeWorkdir(std::string_view path);

/// Parses a permission mode written in octal ("755", "0644", "0o600"). Errors: kInvalidArgument
/// "mode must be an octal number between 0 and 0777" for anything else ("999", "", "-1",
/// "01000", "rwx").
Result<uint32_t> ParseFileMode(std::string_view text);

/// Checks a numeric mode: kInvalidArgument unless mode <= 0777.
Status CheckFileMode(uint32_t mode);

}  // namespace asb::core
