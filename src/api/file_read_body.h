// The body of a large file download, streamed from the sandbox as it is read: GET
// /v1/sandboxes/{id}/files and E2B's GET /files (envd) answer files past kWholeFileMaxBytes with
// it, so no download is ever held whole in the server's memory (ADR 0014, round 3). Flow
// control reaches sandboxd: a client that does not read holds up only its own stream.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>

#include "api/http_types.h"
#include "core/file_service.h"

namespace asb::api {

/// Files up to this size are read whole and answered with a Content-Length; larger ones stream.
inline constexpr uint64_t kWholeFileMaxBytes = 1 << 20;

/// The output of a file's read stream (core::FileService::OpenFileRead), as it comes, at most
/// 1 MiB per Poll(). A failure after the answer's head was sent aborts the connection
/// (StreamBody::Chunk::abort), so a client never takes a cut file for a whole one.
class FileReadBody final : public StreamBody {
 public:
  explicit FileReadBody(core::FileReadStream rs) : rs_(std::move(rs)) {}
  ~FileReadBody() override;
  Chunk Poll() override;
  void SetNotify(std::function<void()> notify) override;
  void Cancel() override;

 private:
  core::FileReadStream rs_;
  bool done_ = false;
};

}  // namespace asb::api
