// Uploads streamed into a sandbox as they arrive: PUT /v1/sandboxes/{id}/files and E2B's POST
// /files (envd) move the request body into sandboxd's file write a chunk at a time, never
// holding it whole (ADR 0014, round 3). sandboxd's write window is the backpressure: a sandbox
// that takes bytes slowly slows the client's sending, not the server's memory.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "api/http_types.h"
#include "core/file_service.h"

namespace asb::api {

/// How long a write may wait for sandboxd to take bytes (or to finish) before the upload fails.
inline constexpr int64_t kUploadStallMs = 60'000;

/// Streams everything `source` yields into the started write `ws` (core::FileWriteStream),
/// ends it and returns the new file's stat. On any failure the write is cancelled, so the
/// destination keeps its old content (sandboxd writes a temporary file and renames it). Errors:
/// the source's (a client that went away: kCancelled, a stalled body: kTimeout), kTooLarge
/// (past max_file_bytes, from sandboxd), kTimeout (the sandbox took nothing for
/// kUploadStallMs), the sandbox's own (kPermissionDenied, kNotFound, ...).
Result<core::FileStat> StreamUpload(core::FileWriteStream ws, const ByteSource& source);

/// Reads a request body into a file of the sandbox: from `req.body_reader` as it arrives
/// (StreamUpload), or `req.body` when the server had it whole (an empty body). `path` and `mode`
/// as core::FileService::WriteFile; a declared Content-Length over max_file_bytes is refused
/// before a byte is read. Errors: as FileService::OpenFileWrite and StreamUpload.
/// `metadata` (FileService::OpenFileWrite's) is set on the file.
Result<core::FileStat> UploadRequestBody(core::FileService& files, const std::string& owner,
                                         const std::string& id, const std::string& path,
                                         std::optional<uint32_t> mode, HttpRequest& req,
                                         const std::map<std::string, std::string>& metadata = {});

}  // namespace asb::api
