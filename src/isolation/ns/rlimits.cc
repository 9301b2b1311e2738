#include "isolation/ns/rlimits.h"

#include <cerrno>

namespace asb::isolation::ns {
namespace {

int SetLimit(int resource, rlim_t value, const char* step, ChildFailure* f) {
  struct rlimit cur;
  if (::getrlimit(resource, &cur) != 0) return Failed(f, step, errno);
  if (cur.rlim_max != RLIM_INFINITY && value > cur.rlim_max) value = cur.rlim_max;
  struct rlimit next = {value, value};
  if (::setrlimit(resource, &next) != 0) return Failed(f, step, errno);
  return 0;
}

}  // namespace

int ApplyRlimitsInChild(const RlimitPlan& plan, ChildFailure* f) {
  if (int e = SetLimit(RLIMIT_NOFILE, plan.nofile, "setrlimit NOFILE", f)) return e;
  if (int e = SetLimit(RLIMIT_NPROC, plan.nproc, "setrlimit NPROC", f)) return e;
  // 1, not 0: with a piped core_pattern ("|/usr/lib/systemd/systemd-coredump ...") the kernel
  // ignores RLIMIT_CORE except the value 1, which it treats as "never dump" (fs/coredump.c);
  // a crash in a sandbox would otherwise run the host's dump helper as host root. For plain
  // file dumps a 1-byte limit is below any core's minimum size, so none is written either.
  if (int e = SetLimit(RLIMIT_CORE, 1, "setrlimit CORE", f)) return e;
  return 0;
}

}  // namespace asb::isolation::ns
