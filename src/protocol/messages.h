// The sandbox protocol's messages: the JSON bodies of HELLO, OPEN, INFO, RESULT and ERROR
// frames, as C++ structs, each encoded and decoded by one field table (field_table.h, in
// messages.cc). Shared verbatim by the host (protocol/client.h) and sandboxd, so the two sides
// cannot disagree about a field.
//
// Decoders are strict about types and lenient about unknown fields (a newer peer may add
// fields); they return kBackend errors for malformed input because a malformed message from
// the peer is a broken peer, never the API caller's fault.
//
// Operation names ("op" of OPEN) and the frames each operation exchanges:
//   exec         OPEN ExecRequest; INFO {"pid"}; d->host DATA stdout/stderr + EOF each;
//                host->d DATA stdin + EOF; SIGNAL; RESIZE; RESULT ExecResult.
//   file.read    OPEN FileReadRequest; INFO FileStat; DATA stdout...; EOF; RESULT {}.
//   file.write   OPEN FileWriteRequest; host DATA stdin...; EOF; RESULT FileStat.
//   file.list    OPEN FileListRequest; INFO {"entries":[FileStat...]}...; RESULT {"count"}
//                (or ERROR limit_exceeded over max_entries, payload_too_large over max_bytes).
//   file.stat    OPEN FileStatRequest; RESULT FileStat.
//   file.mkdir   OPEN FileMkdirRequest; RESULT FileStat.
//   file.remove  OPEN FileRemoveRequest; RESULT {}.
//   file.move    OPEN FileMoveRequest; RESULT FileStat (of the destination).
//   file.watch   OPEN FileWatchRequest; INFO FileWatchArmed once armed; DATA stdout: NDJSON
//                lines, one FileWatchEvent each, under the stdout window; RESULT
//                FileWatchEnd when the watched directory goes away; CANCEL ends it.
//   tar.export   OPEN TarExportRequest; DATA stdout (a POSIX pax tar)...; EOF; RESULT TarResult.
//   tar.import   OPEN TarImportRequest; host DATA stdin (tar)...; EOF; RESULT TarResult.
//   kill.all     OPEN {}; RESULT {"killed"}: SIGKILL every process but sandboxd (rollback).
// Any operation may end with ERROR instead of RESULT.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"

namespace asb::protocol {

// ---- handshake -------------------------------------------------------------------------------

/// HELLO, both directions on channel 0. The host sends the range it speaks; sandboxd answers
/// with the version it chose (the highest both speak) or closes the connection with an ERROR.
struct Hello {
  uint32_t min_version = 0;
  uint32_t max_version = 0;
  uint32_t version = 0;  // set in sandboxd's answer
  std::string software;  // "sandboxd 0.1.0" / "agent-sandbox 0.1.0"
};

// ---- exec ------------------------------------------------------------------------------------

/// Who a command runs as. "sandbox" (uid/gid 1000, no capabilities) is the default; "root" is
/// uid 0 of the sandbox's user namespace, still without host privileges.
inline constexpr char kUserSandbox[] = "sandbox";
inline constexpr char kUserRoot[] = "root";
inline constexpr uint32_t kSandboxUid = 1000;
inline constexpr uint32_t kSandboxGid = 1000;

struct ExecRequest {
  /// Exactly one of argv / command. `command` runs as ["/bin/sh", "-c", command].
  std::vector<std::string> argv;
  std::optional<std::string> command;
  /// Added to (and overriding) the sandbox's base environment (PATH, HOME=/workspace, LANG...).
  std::map<std::string, std::string> env;
  /// Working directory inside the sandbox; relative paths are taken from /workspace.
  std::string cwd = "/workspace";
  std::string user = kUserSandbox;
  /// Kill the process group after this many milliseconds (0 = no timeout): SIGTERM, then
  /// SIGKILL after kill_grace_ms.
  uint64_t timeout_ms = 0;
  uint64_t kill_grace_ms = 2000;
  /// false: stdin is /dev/null (EOF at once). true: stdin is a pipe fed by host DATA frames.
  bool stdin_pipe = false;
  /// Output caps in bytes (0 = unlimited). Bytes past a cap are read and discarded (the command
  /// is never blocked or killed by a cap) and the result's *_truncated flag is set.
  /// max_output_bytes caps stdout+stderr together, in arrival order.
  uint64_t max_stdout_bytes = 0;
  uint64_t max_stderr_bytes = 0;
  uint64_t max_output_bytes = 0;
  /// Run on a pseudo-terminal of this size (stdout carries the merged terminal output).
  struct Pty {
    uint16_t cols = 80;
    uint16_t rows = 24;
  };
  std::optional<Pty> pty;
};

struct ExecResult {
  int exit_code = -1;  // exit status, or 128+signal when killed by a signal
  int signal = 0;      // terminating signal number, 0 if it exited
  bool timed_out = false;
  bool stdout_truncated = false;
  bool stderr_truncated = false;
  uint64_t stdout_bytes = 0;  // total bytes the command wrote, including discarded ones
  uint64_t stderr_bytes = 0;
  uint64_t duration_ms = 0;
  // A process was OOM-killed / the pids limit refused a fork while the command ran: sandboxd's
  // own where the kernel is the sandbox's (a microVM), else filled in by the host.
  bool oom_killed = false;
  bool pids_limited = false;
};

// ---- files -----------------------------------------------------------------------------------

struct FileStat {
  std::string path;   // absolute path inside the sandbox
  std::string name;   // last component
  std::string type;   // "file", "dir", "symlink", "fifo", "socket", "char", "block"
  uint64_t size = 0;  // bytes
  uint32_t mode = 0;  // permission bits (07777)
  uint32_t uid = 0;
  uint32_t gid = 0;
  int64_t mtime_ms = 0;     // Unix epoch milliseconds
  std::string link_target;  // for symlinks
  /// The entry's file metadata (its "user.e2b.<key>" extended attributes, by key), when the
  /// request asked for it (FileStatRequest/FileListRequest::metadata, or a write that set some).
  std::map<std::string, std::string> metadata;
};

/// Every file operation resolves its paths inside the sandbox's own root with openat2(2)
/// RESOLVE_BENEATH|RESOLVE_NO_MAGICLINKS from `root` (default "/workspace" when beneath is
/// true), so a symlink can never lead it elsewhere, and runs with the sandbox user's fs
/// identity (setfsuid), so it can touch only what that user can.
struct FileScope {
  std::string user = kUserSandbox;
  bool beneath_workspace = true;  // false: any path in the sandbox (still as `user`)
};

struct FileReadRequest {
  std::string path;
  uint64_t offset = 0;
  uint64_t length = 0;  // 0 = to the end
  FileScope scope;
};

struct FileWriteRequest {
  std::string path;
  uint32_t mode = 0644;
  bool make_parents = true;
  bool append = false;     // false: write to a temp file, fsync, rename over `path`
  uint64_t max_bytes = 0;  // 0 = unlimited; more is an ERROR payload_too_large
  FileScope scope;
  /// File metadata to set on the written file, as "user.e2b.<key>" extended attributes (E2B's
  /// envd >= 0.6.2). A file system without user xattrs answers ERROR unavailable.
  std::map<std::string, std::string> metadata;
};

/// Budget of one listing, in "listing bytes": each entry costs kListingEntryCost plus the
/// lengths of its path and link target (ListingBytes below). Without it a listing was capped
/// only by max_entries, and with 4 KiB paths 100,000 entries are ~400 MB, built whole in
/// sandboxd (which the sandbox's memory limit then OOM-kills) and again in the server (security
/// review W5). 16 MiB keeps the server's copy (its JSON answer is ~2x that) well below what one
/// request may hold, and still admits 100,000 entries of paths up to ~100 bytes.
inline constexpr uint64_t kMaxListingBytes = 16 * 1024 * 1024;
/// Fixed cost per listed entry: a rough upper bound of a FileStat's own size (struct, type,
/// numbers) apart from its strings.
inline constexpr uint64_t kListingEntryCost = 64;

/// The cost of `e` against FileListRequest::max_bytes: path + link target + kListingEntryCost
/// (the name is a suffix of the path, so it is not counted twice).
inline uint64_t ListingBytes(const FileStat& e) {
  uint64_t n = kListingEntryCost + e.path.size() + e.link_target.size();
  for (const auto& [k, v] : e.metadata) n += k.size() + v.size();
  return n;
}

/// The message of the kTooLarge error of a listing over `max_bytes`; sandboxd and the host
/// (which enforces the same budget against a hostile sandboxd) use the same words.
std::string ListingTooLargeMessage(uint64_t max_bytes);

struct FileListRequest {
  std::string path;
  bool recursive = false;
  uint32_t max_entries = 100000;  // more is an ERROR limit_exceeded
  /// Sum of ListingBytes over the entries; more is an ERROR payload_too_large. An older peer
  /// that omits it gets the default.
  uint64_t max_bytes = kMaxListingBytes;
  FileScope scope;
  bool metadata = false;  // read each entry's file metadata (FileStat::metadata)
};

struct FileStatRequest {
  std::string path;
  bool follow_symlinks = false;
  FileScope scope;
  bool metadata = false;  // read the entry's file metadata (FileStat::metadata)
};

struct FileMkdirRequest {
  std::string path;
  uint32_t mode = 0755;
  bool parents = true;
  FileScope scope;
};

struct FileRemoveRequest {
  std::string path;
  bool recursive = false;
  FileScope scope;
};

struct FileMoveRequest {
  std::string from;
  std::string to;
  bool overwrite = false;
  FileScope scope;
};

// ---- file watch (inotify) ---------------------------------------------------------------------

/// Events a watch holds while the host's window is closed: default and largest. Beyond it,
/// newer events are dropped and counted in one "overflow" event (its `dropped`).
inline constexpr uint32_t kWatchQueueDefault = 4096;
inline constexpr uint32_t kWatchQueueMax = 65536;
/// ... and at most this many bytes of them (path lengths plus kWatchEventCost each), whatever
/// max_queue says: with 4 KiB paths 65536 events would be 270 MB inside the sandbox's memory
/// limit (found by the breaker). 8 watches of 1 MiB each bound a sandbox's queues at 8 MiB.
inline constexpr uint64_t kWatchQueueMaxBytes = 1 << 20;
inline constexpr uint64_t kWatchEventCost = 64;
/// Directories one recursive watch follows; more is an ERROR limit_exceeded at the start and an
/// "overflow" event (dropped 0: events may be missing) when later ones cannot be added.
inline constexpr uint32_t kWatchMaxDirs = 8192;
/// file.watch operations one sandboxd runs at once (each holds an inotify instance; the
/// sandbox's user namespace grants 16, isolation/ns/mount.cc); more is ERROR limit_exceeded.
inline constexpr uint32_t kWatchMaxOps = 8;

struct FileWatchRequest {
  std::string path;        // a directory
  bool recursive = false;  // also every directory below it, including ones created later
  uint32_t max_queue = 0;  // 0 = kWatchQueueDefault; more than kWatchQueueMax is invalid
  FileScope scope;
  /// Each create, write and chmod event carries the entry (FileWatchEvent::entry).
  bool entries = false;
};

/// INFO once the watch is armed: every change after it is reported.
struct FileWatchArmed {
  std::string path;      // the watched directory, absolute in the sandbox
  uint32_t watches = 0;  // directories watched (1 unless recursive)
};

/// One change, one NDJSON line on stdout. `type` is one of create, write, remove, rename
/// (moved away from `path`), chmod (metadata: mode, owner, times, links) and overflow (events
/// were lost: `dropped` counts those dropped by the queue; 0 when the kernel's own queue
/// overflowed or a new directory could not be watched). Moving into a watched directory is a
/// create. `path` is absolute in the sandbox ("" for overflow); `dir` says whether the entry
/// is a directory.
struct FileWatchEvent {
  std::string type;
  std::string path;
  bool dir = false;
  uint64_t dropped = 0;
  /// With FileWatchRequest::entries, for create, write and chmod: the entry as sandboxd finds
  /// it (lstat, with its file metadata) when it sends the event, as the watch's user; absent
  /// when it is gone by then.
  std::optional<FileStat> entry{};
};

/// RESULT: why the watch ended by itself ("removed": the watched directory was deleted or
/// moved; "unmounted": its file system went away).
struct FileWatchEnd {
  std::string reason;
};

// ---- tar -------------------------------------------------------------------------------------

struct TarExportRequest {
  std::string path;  // directory (or file) to archive; member names are relative to it
  FileScope scope;
};

struct TarImportRequest {
  std::string path;          // directory to extract into (created if missing)
  uint64_t max_bytes = 0;    // cap on the sum of extracted file sizes (0 = unlimited)
  uint64_t max_entries = 0;  // cap on the member count (0 = unlimited)
  bool clear_first = false;  // empty the directory before extracting (rollback)
  FileScope scope;
};

struct TarResult {
  uint64_t entries = 0;
  uint64_t bytes = 0;  // sum of regular file sizes
};

// ---- errors ----------------------------------------------------------------------------------

/// The body of an ERROR frame.
struct WireError {
  std::string code;  // ErrorCodeName(), e.g. "not_found"
  int sys_errno = 0;
  std::string message;
};
WireError ToWireError(const Error& e);
Error FromWireError(const WireError& w);

// ---- JSON ------------------------------------------------------------------------------------
// Encode* returns compact JSON; Decode* parses it. Field names are the struct's member names
// (snake_case) except where noted in docs/design/sandbox-protocol.md.

std::string EncodeHello(const Hello& m);
Result<Hello> DecodeHello(std::string_view json);

/// OPEN payloads carry {"op": "<name>", ...fields}. DecodeOpName extracts "op" only.
Result<std::string> DecodeOpName(std::string_view json);

std::string EncodeExecRequest(const ExecRequest& m);  // op "exec"
Result<ExecRequest> DecodeExecRequest(std::string_view json);
std::string EncodeExecResult(const ExecResult& m);
Result<ExecResult> DecodeExecResult(std::string_view json);

std::string EncodeFileStat(const FileStat& m);
Result<FileStat> DecodeFileStat(std::string_view json);
/// INFO payload of file.list: {"entries":[...]}.
std::string EncodeFileStatList(const std::vector<FileStat>& entries);
Result<std::vector<FileStat>> DecodeFileStatList(std::string_view json);

std::string EncodeFileReadRequest(const FileReadRequest& m);  // op "file.read"
Result<FileReadRequest> DecodeFileReadRequest(std::string_view json);
std::string EncodeFileWriteRequest(const FileWriteRequest& m);  // op "file.write"
Result<FileWriteRequest> DecodeFileWriteRequest(std::string_view json);
std::string EncodeFileListRequest(const FileListRequest& m);  // op "file.list"
Result<FileListRequest> DecodeFileListRequest(std::string_view json);
std::string EncodeFileStatRequest(const FileStatRequest& m);  // op "file.stat"
Result<FileStatRequest> DecodeFileStatRequest(std::string_view json);
std::string EncodeFileMkdirRequest(const FileMkdirRequest& m);  // op "file.mkdir"
Result<FileMkdirRequest> DecodeFileMkdirRequest(std::string_view json);
std::string EncodeFileRemoveRequest(const FileRemoveRequest& m);  // op "file.remove"
Result<FileRemoveRequest> DecodeFileRemoveRequest(std::string_view json);
std::string EncodeFileMoveRequest(const FileMoveRequest& m);  // op "file.move"
Result<FileMoveRequest> DecodeFileMoveRequest(std::string_view json);
std::string EncodeFileWatchRequest(const FileWatchRequest& m);  // op "file.watch"
Result<FileWatchRequest> DecodeFileWatchRequest(std::string_view json);
std::string EncodeFileWatchArmed(const FileWatchArmed& m);
Result<FileWatchArmed> DecodeFileWatchArmed(std::string_view json);
/// One line's JSON, without the newline.
std::string EncodeFileWatchEvent(const FileWatchEvent& m);
Result<FileWatchEvent> DecodeFileWatchEvent(std::string_view json);
std::string EncodeFileWatchEnd(const FileWatchEnd& m);
Result<FileWatchEnd> DecodeFileWatchEnd(std::string_view json);
std::string EncodeTarExportRequest(const TarExportRequest& m);  // op "tar.export"
Result<TarExportRequest> DecodeTarExportRequest(std::string_view json);
std::string EncodeTarImportRequest(const TarImportRequest& m);  // op "tar.import"
Result<TarImportRequest> DecodeTarImportRequest(std::string_view json);
std::string EncodeTarResult(const TarResult& m);
Result<TarResult> DecodeTarResult(std::string_view json);

std::string EncodeWireError(const WireError& m);
Result<WireError> DecodeWireError(std::string_view json);

}  // namespace asb::protocol
