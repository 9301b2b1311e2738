// FileService: files and directories of a sandbox (docs/ARCHITECTURE.md, "core/"), forwarded to
// its sandboxd, which resolves every path beneath the sandbox's own root as the sandbox user.
// Paths follow core/paths.h (absolute under /workspace, or relative to it). Every call touches
// the sandbox's last activity; none holds a lock while sandboxd works. Errors of all: kNotFound
// (the sandbox, or the path), kConflict (sandbox not running), kInvalidArgument (path rules),
// kBackend.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "core/event_stream.h"
#include "core/file_watch.h"
#include "core/sandbox_types.h"

namespace asb::core {

class SandboxRegistry;

/// A started streaming file read: `stat` of the file (type "file", size <= max_file_bytes),
/// then the caller drains `events`: kOutput chunks, kEnd, a terminal kDone (or kError).
struct FileReadStream {
  FileStat stat;
  std::shared_ptr<EventStream> events;
  std::shared_ptr<void> keepalive;
};

/// A started streaming file write: the caller Write()s the bytes to `events` (at most
/// max_file_bytes in total; beyond, sandboxd ends it with kError payload_too_large),
/// CloseWrite()s, then waits for the terminal kDone (with `file`) or kError. A caller that gives
/// up Cancel()s, and the partial file is discarded (the write is atomic: temp file + rename).
struct FileWriteStream {
  std::shared_ptr<EventStream> events;
  std::shared_ptr<void> keepalive;
};

class FileService {
 public:
  /// `registry` must outlive the service.
  explicit FileService(SandboxRegistry& registry) : reg_(registry) {}

  /// Reads a whole file. Errors: kInvalidArgument (a directory), kTooLarge (over
  /// max_file_bytes).
  Result<std::string> ReadFile(const std::string& owner, const std::string& id,
                               const std::string& path);
  /// Opens a file for streamed reading (see FileReadStream). Errors as ReadFile.
  Result<FileReadStream> OpenFileRead(const std::string& owner, const std::string& id,
                                      const std::string& path);

  /// Writes a whole file atomically, creating parent directories. `mode` defaults to 0644 and
  /// must be <= 0777. Errors: kInvalidArgument (mode), kTooLarge (data over max_file_bytes).
  /// Returns the new file's stat.
  Result<FileStat> WriteFile(const std::string& owner, const std::string& id,
                             const std::string& path, std::string_view data,
                             std::optional<uint32_t> mode = std::nullopt);
  /// Opens a file for streamed writing (see FileWriteStream). `size_hint` (e.g. the request's
  /// Content-Length) over max_file_bytes is kTooLarge at once. Other errors as WriteFile.
  /// `metadata`: key/value pairs kept with the file (FileStat::metadata; the caller checks
  /// their shape and size), set before the file appears; a file system without them answers
  /// kUnavailable.
  Result<FileWriteStream> OpenFileWrite(const std::string& owner, const std::string& id,
                                        const std::string& path,
                                        std::optional<uint32_t> mode = std::nullopt,
                                        std::optional<uint64_t> size_hint = std::nullopt,
                                        const std::map<std::string, std::string>& metadata = {});

  /// Lists a directory (entries sorted by name, dotfiles and symlinks included). Errors:
  /// kTooLarge over 16 MiB of listing, kLimitExceeded over 100,000 entries.
  /// `with_metadata`: each entry's FileStat::metadata is read too.
  Result<std::vector<FileStat>> ListFiles(const std::string& owner, const std::string& id,
                                          const std::string& path, bool recursive,
                                          bool with_metadata = false);
  /// The entry at `path` (a symlink itself, not its target); `with_metadata` as ListFiles.
  Result<FileStat> StatFile(const std::string& owner, const std::string& id,
                            const std::string& path, bool with_metadata = false);
  /// Creates a directory (and its parents). `mode` defaults to 0755, must be <= 0777.
  Result<FileStat> MakeDir(const std::string& owner, const std::string& id, const std::string& path,
                           std::optional<uint32_t> mode = std::nullopt);
  /// Removes a file, or a directory (recursive: with its contents). Removing /workspace itself
  /// is kInvalidArgument.
  Status RemoveFile(const std::string& owner, const std::string& id, const std::string& path,
                    bool recursive);
  /// Moves/renames `from` to `to` (both under /workspace). Returns the destination's stat.
  Result<FileStat> MoveFile(const std::string& owner, const std::string& id,
                            const std::string& from, const std::string& to, bool overwrite);

  /// Watches a directory (with `recursive`, everything below it too) and returns once the
  /// watch is armed: every change after that is reported (file_watch.h). `max_queue` is the
  /// number of events sandboxd holds for a reader that falls behind (0: 4096; at most 65536)
  /// before it drops and counts them. The watch does not count as activity (idle timeout) and
  /// ends with the sandbox. Errors: kInvalidArgument (not a directory, max_queue),
  /// kLimitExceeded (8 watches at once per sandbox, more than 8192 directories, the kernel's
  /// inotify limits). `entries`: each create, write and chmod event carries the entry
  /// (FileEvent::entry, with its file metadata), statted in the sandbox as the event leaves.
  Result<std::shared_ptr<FileWatch>> WatchDirectory(const std::string& owner, const std::string& id,
                                                    const std::string& path, bool recursive,
                                                    uint32_t max_queue = 0, bool entries = false);

  /// Streams a tar of a directory of the sandbox into `sink` chunks; a sink error ends it.
  Status ExportDirectory(const std::string& owner, const std::string& id, const std::string& path,
                         const std::function<Status(std::string_view)>& sink);
  /// Extracts a plain tar read from `source` (returns "" at the end) into a directory of the
  /// sandbox (created if missing). Hostile members (absolute, "..", devices) are rejected by
  /// sandboxd with kInvalidArgument.
  Result<TarResult> ImportDirectory(const std::string& owner, const std::string& id,
                                    const std::string& path,
                                    const std::function<Result<std::string>()>& source);

 private:
  SandboxRegistry& reg_;
};

}  // namespace asb::core
