// tar.export / tar.import (protocol section 7): the event-loop side. Each forks a child that
// runs tar_child.h with the scope user's identity and streams the archive through a pipe:
// export pumps the child's pipe into DATA stdout under the host's window; import feeds host
// DATA into the child's pipe, granting window as it goes. The outcome comes back on a status
// pipe; the operation ends when the child is reaped (and, for export, the pipe is drained).
// CANCEL or a lost connection SIGKILLs the child.
#pragma once

#include <sys/types.h>

#include <memory>

#include "common/unique_fd.h"
#include "protocol/messages.h"
#include "sandboxd/operation.h"
#include "sandboxd/pipes.h"
#include "sandboxd/tar_child.h"

namespace asb::sandboxd {

/// Shared child management of both tar operations.
class TarOpBase : public Operation {
 public:
  using Operation::Operation;
  ~TarOpBase() override;
  void OnCancel() override;
  void Abandon() override;

 protected:
  /// Forks a child that runs `run(plan)`; keeps the status pipe. Errors: from fork/pipe.
  Status Spawn(TarChildPlan plan, void (*run)(const TarChildPlan&));
  /// Called when the child is reaped; finishes if `Ready()`.
  virtual bool Ready() const { return true; }
  void MaybeFinish();
  void KillChild();

  pid_t pid_ = -1;
  bool exited_ = false;
  int wait_status_ = 0;
  UniqueFd status_read_;
};

class TarExportOp final : public TarOpBase, public OutputPipe::Owner {
 public:
  TarExportOp(Daemon& d, Connection& c, uint32_t ch, protocol::TarExportRequest req)
      : TarOpBase(d, c, ch), req_(std::move(req)) {}
  void Start() override;
  void OnWindow(protocol::Stream stream, uint32_t bytes) override;

 private:
  Status Launch();
  bool Ready() const override { return !pipe_ || pipe_->closed(); }
  uint64_t Keepable(protocol::Stream) override { return UINT64_MAX; }
  void Deliver(protocol::Stream s, std::string_view kept, size_t read) override;
  void Closed(protocol::Stream s) override;

  protocol::TarExportRequest req_;
  std::unique_ptr<OutputPipe> pipe_;
};

class TarImportOp final : public TarOpBase {
 public:
  TarImportOp(Daemon& d, Connection& c, uint32_t ch, protocol::TarImportRequest req)
      : TarOpBase(d, c, ch), req_(std::move(req)) {}
  void Start() override;
  void OnData(std::string&& bytes) override;
  void OnEof() override;

 private:
  Status Launch();

  protocol::TarImportRequest req_;
  std::unique_ptr<InputPipe> pipe_;
};

}  // namespace asb::sandboxd
