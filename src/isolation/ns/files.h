// Small host-side file helpers of the ns backend: whole-file reads and writes of the tiny
// control files it deals with (cgroup knobs, /proc entries, state.json), durable replacement
// (temp + fsync + rename), and recursive removal that never follows symlinks or crosses mounts.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/result.h"

namespace asb::isolation::ns {

/// Reads a whole (small) file. Errors: FromErrno of open/read (kNotFound for ENOENT).
Result<std::string> ReadSmallFile(const std::string& path);

/// Writes `data` to an existing file with one write(2), as cgroupfs and procfs want (no
/// O_CREAT, no truncation games). Errors: FromErrno with "write <path>" as context.
Status WriteControlFile(const std::string& path, const std::string& data);

/// Replaces `path` atomically: writes `path`.tmp (mode 0600), renames it over `path`, so a
/// reader sees the old or the new content, never a mix. With `durable`, also fsyncs the file
/// before and the directory after the rename (survives a machine crash, at a cost of 3-30 ms
/// on a busy disk). Errors: FromErrno of the failing step.
Status WriteFileAtomic(const std::string& path, const std::string& data, bool durable = true);

/// Removes `path` and everything below it without following symlinks and without descending
/// into other mounts (a still-mounted directory fails with EBUSY instead). A missing `path` is
/// success. Errors: FromErrno of the first failure (the walk continues past failures).
Status RemoveTree(const std::string& path);

/// Names in directory `path` (without "." and ".."). Errors: FromErrno of opendir.
Result<std::vector<std::string>> ListDir(const std::string& path);

/// Parses a decimal unsigned integer (surrounding whitespace allowed); "max" is UINT64_MAX.
Result<uint64_t> ParseU64(std::string_view text);

/// True if `path` exists (lstat succeeds).
bool PathExists(const std::string& path);

}  // namespace asb::isolation::ns
