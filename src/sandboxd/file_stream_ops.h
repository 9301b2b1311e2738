// The streaming file operations (docs/design/sandbox-protocol.md section 7):
//   FileReadOp   file.read: INFO FileStat, DATA stdout chunks under the host's window, EOF,
//                RESULT {}. Only regular files (a directory is invalid_request; a FIFO would
//                block the event loop and is refused too).
//   FileWriteOp  file.write: host DATA into a temp file (O_EXCL, same directory, fchmod to the
//                mode), granting window as bytes are written; EOF -> fsync + renameat over the
//                target -> RESULT FileStat. Over max_bytes -> ERROR payload_too_large and the
//                temp file is removed (also on CANCEL or a lost connection).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/unique_fd.h"
#include "protocol/messages.h"
#include "sandboxd/fs_path.h"
#include "sandboxd/operation.h"

namespace asb::sandboxd {

/// The name of file.write's temporary file for `name` (written, fsynced, then renamed over
/// it): "." + the first 200 bytes of name + ".asb-" (".asbr-" when it `replaces` an existing
/// file) + 12 hex digits.
std::string WriteTempName(std::string_view name, bool replaces);
/// Whether `name` has that shape (file.watch leaves such files out: a write through the API
/// is reported as the create and write, or the write, of its real name, never as a hidden
/// temp file).
bool IsWriteTempName(std::string_view name);
/// Whether `name` is a temporary file that replaces an existing file (".asbr-").
bool IsReplacingWriteTempName(std::string_view name);

class FileReadOp final : public Operation {
 public:
  FileReadOp(Daemon& d, Connection& c, uint32_t ch, protocol::FileReadRequest req)
      : Operation(d, c, ch), req_(std::move(req)) {}
  void Start() override;
  void OnWindow(protocol::Stream stream, uint32_t bytes) override;

 private:
  Status Open();
  void SendMore();

  protocol::FileReadRequest req_;
  UniqueFd fd_;
  uint64_t pos_ = 0;
  uint64_t remaining_ = 0;  // UINT64_MAX: to EOF
  uint64_t window_ = protocol::kInitialWindow;
};

class FileWriteOp final : public Operation {
 public:
  FileWriteOp(Daemon& d, Connection& c, uint32_t ch, protocol::FileWriteRequest req)
      : Operation(d, c, ch), req_(std::move(req)) {}
  ~FileWriteOp() override;
  void Start() override;
  void OnData(std::string&& bytes) override;
  void OnEof() override;
  void OnCancel() override;

 private:
  Status Open();
  Status Commit();
  void Discard();

  protocol::FileWriteRequest req_;
  FsPath path_;
  UniqueFd parent_;
  UniqueFd fd_;
  std::string temp_name_;  // "" in append mode or once renamed
  uint64_t written_ = 0;
};

}  // namespace asb::sandboxd
