// KillAllOp: "kill.all" (used before a rollback): SIGKILL every process in the sandbox except
// sandboxd, wait until all are reaped, RESULT {"killed":N}. As PID 1 it uses kill(-1, SIGKILL)
// (kill(2): every process it may signal except itself, i.e. the whole pid namespace); on the
// host (--no-pid1) only sandboxd's descendants are touched.
#pragma once

#include <sys/types.h>

#include <set>

#include "common/unique_fd.h"
#include "sandboxd/operation.h"

namespace asb::sandboxd {

class KillAllOp final : public Operation {
 public:
  using Operation::Operation;
  ~KillAllOp() override;
  void Start() override;

 private:
  void Sweep();
  void OnTimer();

  UniqueFd timer_fd_;
  std::set<pid_t> killed_;
  int rounds_ = 0;
};

}  // namespace asb::sandboxd
