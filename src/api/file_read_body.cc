#include "api/file_read_body.h"

#include <optional>

namespace asb::api {

namespace {
// Bytes handed to the server per Poll(), so one write stays bounded.
constexpr size_t kMaxPollBytes = 1 << 20;
}  // namespace

FileReadBody::~FileReadBody() {
  if (!done_) (void)rs_.events->Cancel();
  rs_.events->SetNotify(nullptr);
}

StreamBody::Chunk FileReadBody::Poll() {
  Chunk out;
  while (!done_ && out.data.size() < kMaxPollBytes) {
    std::optional<core::StreamEvent> ev = rs_.events->TryNext();
    if (!ev) break;
    switch (ev->kind) {
      case core::StreamEvent::Kind::kOutput:
        out.data += ev->data;
        break;
      case core::StreamEvent::Kind::kDone:
        done_ = true;
        out.done = true;
        break;
      case core::StreamEvent::Kind::kError:
        done_ = true;
        out.abort = true;
        break;
      default:
        break;
    }
  }
  return out;
}

void FileReadBody::SetNotify(std::function<void()> notify) {
  rs_.events->SetNotify(std::move(notify));
}

void FileReadBody::Cancel() {
  if (!done_) (void)rs_.events->Cancel();
}

}  // namespace asb::api
