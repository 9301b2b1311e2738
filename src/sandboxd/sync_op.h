// SyncOp: an Operation that does all its work in Start() (file.stat, file.list, proc.list,
// proc.signal, ...). Shared by op_factory.cc and proc_ops.cc.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>

#include "common/result.h"
#include "sandboxd/operation.h"

namespace asb::sandboxd {

class SyncOp final : public Operation {
 public:
  /// The work: returns the RESULT body (JSON) or the error to end with; may send INFO frames
  /// through the SyncOp it is given (Info) before it returns.
  using Body = std::function<Result<std::string>(SyncOp&)>;

  SyncOp(Daemon& d, Connection& c, uint32_t ch, Body body)
      : Operation(d, c, ch), body_(std::move(body)) {}

  /// Runs the body once and ends with RESULT (its value) or ERROR (its error).
  void Start() override {
    auto r = body_(*this);
    if (r) {
      Succeed(*r);
    } else {
      FailWith(r.error());
    }
  }

  /// Sends an INFO frame with `json` (only from within the body).
  void Info(const std::string& json) { SendInfo(json); }

 private:
  Body body_;
};

}  // namespace asb::sandboxd
