// The portable snapshot format (ADR 0008): a POSIX pax tar of /workspace, as
// sandboxd's tar.export writes it, compressed with zstd on the host (RFC 8878). These helpers
// move that stream between a sandboxd channel and a file, and check an archive from outside
// before anything of it reaches a sandbox.
//
// Files are written temp + fsync + rename + fsync of the directory (ADR 0008), so a crash leaves
// either the whole file or a temp file that recovery deletes.
#pragma once

#include <cstdint>
#include <string>

#include "common/result.h"
#include "protocol/client.h"

namespace asb::core {

/// Name prefix of the temp files made next to final ones (recovery deletes every one of them).
inline constexpr char kSnapshotTempPrefix[] = ".tmp-";

/// What a finished archive holds.
struct ArchiveFacts {
  uint64_t file_bytes = 0;     // size of the .tar.zst file
  uint64_t content_bytes = 0;  // sum of regular file sizes inside
  uint64_t entries = 0;        // tar members
};

/// Drains `channel` of a started tar.export (DATA stdout..., EOF, RESULT TarResult),
/// compresses it with zstd into `<dir>/.tmp-<name>`, fsyncs, renames it to `<dir>/<name>` and
/// fsyncs `dir`. `max_tar_bytes` (0 = none) caps the uncompressed stream: beyond it the channel
/// is cancelled and kTooLarge returned. On any failure the temp file is removed.
/// Errors: sandboxd's (kBackend when the connection dies), kTooLarge, kInternal (I/O, zstd).
Result<ArchiveFacts> ReceiveTarZst(protocol::Channel& channel, const std::string& dir,
                                   const std::string& name, uint64_t max_tar_bytes);

/// Decompresses `path` (tar.zst) into the stdin of a started tar.import on `channel`, closes it
/// and waits for the RESULT. Errors: sandboxd's (kInvalidArgument for a bad member,
/// kLimitExceeded for a full workspace), kInternal (bad zstd data, I/O).
Result<protocol::TarResult> SendTarZst(const std::string& path, protocol::Channel& channel);

/// Reads a tar.zst (or plain tar) archive header by header without extracting anything and
/// rejects what an import must never see: absolute member names or link targets of hard
/// links, `..` components, device nodes, sockets, FIFOs, members (or hard-link targets) below
/// an earlier symlink member (sandboxd's extraction refuses those too), and content (sum of regular
/// file sizes, also counted from the bytes actually decompressed) over `max_content_bytes` (0 =
/// none). Errors: kInvalidArgument (naming the member), kTooLarge (zip bomb), kInternal (unreadable
/// or not a tar archive: kInvalidArgument).
Result<ArchiveFacts> ScanArchive(const std::string& path, uint64_t max_content_bytes);

/// Makes the complete file `src` (a temp file inside `dir`) durable as `<dir>/<name>`: fsync,
/// rename, fsync of `dir`. Used for uploads. Errors: kInternal (I/O).
Status InstallFile(const std::string& src, const std::string& dir, const std::string& name);

}  // namespace asb::core
