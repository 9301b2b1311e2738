// Path and mode rules of the file API (writes stay inside /workspace). These are lexical checks
// made on the host before a request reaches sandboxd; sandboxd still resolves every path beneath
// /workspace with openat2(RESOLVE_BENEATH), so a symlink cannot lead outside either.
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
