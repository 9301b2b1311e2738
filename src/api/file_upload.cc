#include "api/file_upload.h"

#include <algorithm>
#include <cstring>
#include <vector>

namespace asb::api {

namespace {

constexpr size_t kChunkBytes = 256 * 1024;

// The reason sandboxd ended a write early (kTooLarge past max_file_bytes, a full disk), which
// beats the caller's own view of the failure (its Write found the stream ended).
Error EndedBecause(core::EventStream& events, Error fallback) {
  for (;;) {
    auto ev = events.Next(5000);
    if (!ev) return fallback;
    if (ev->kind == core::StreamEvent::Kind::kError && ev->error) return *ev->error;
    if (ev->terminal()) return fallback;
  }
}

}  // namespace

Result<core::FileStat> StreamUpload(core::FileWriteStream ws, const ByteSource& source) {
  core::EventStream& events = *ws.events;
  auto abandon = [&](Error e) -> Result<core::FileStat> {
    (void)events.Cancel();  // the temporary file goes; the destination is untouched
    return Fail(std::move(e));
  };
  std::vector<char> chunk(kChunkBytes);
  for (;;) {
    Result<size_t> n = source(chunk.data(), chunk.size());
    if (!n) return abandon(n.error());
    if (*n == 0) break;
    if (Status st = events.Write(std::string_view(chunk.data(), *n), kUploadStallMs); !st) {
      if (st.error().code() == ErrorCode::kTimeout) {
        return abandon(Error::Timeout("the sandbox took no bytes of the upload for " +
                                      std::to_string(kUploadStallMs / 1000) + " s"));
      }
      Error why = EndedBecause(events, st.error());
      return abandon(std::move(why));
    }
  }
  if (Status st = events.CloseWrite(); !st) return abandon(EndedBecause(events, st.error()));
  for (;;) {
    auto ev = events.Next(kUploadStallMs);
    if (!ev) return abandon(ev.error());
    if (ev->kind == core::StreamEvent::Kind::kError && ev->error) return Fail(*ev->error);
    if (ev->kind == core::StreamEvent::Kind::kDone) {
      if (!ev->file) return Fail(Error::Backend("sandboxd ended a file write without its stat"));
      return *ev->file;
    }
  }
}

Result<core::FileStat> UploadRequestBody(core::FileService& files, const std::string& owner,
                                         const std::string& id, const std::string& path,
                                         std::optional<uint32_t> mode, HttpRequest& req,
                                         const std::map<std::string, std::string>& metadata) {
  if (!req.body_reader && metadata.empty()) {
    return files.WriteFile(owner, id, path, req.body, mode);
  }
  if (!req.body_reader) {  // a body read whole (an inflated gzip upload), with metadata
    ASB_ASSIGN_OR_RETURN(core::FileWriteStream ws,
                         files.OpenFileWrite(owner, id, path, mode, req.body.size(), metadata));
    size_t at = 0;
    return StreamUpload(std::move(ws), [&req, &at](char* buf, size_t n) -> Result<size_t> {
      const size_t take = std::min(n, req.body.size() - at);
      std::memcpy(buf, req.body.data() + at, take);
      at += take;
      return take;
    });
  }
  BodyReader& body = *req.body_reader;
  ASB_ASSIGN_OR_RETURN(core::FileWriteStream ws,
                       files.OpenFileWrite(owner, id, path, mode, body.content_length(), metadata));
  return StreamUpload(std::move(ws), [&body](char* buf, size_t n) { return body.Read(buf, n); });
}

}  // namespace asb::api
