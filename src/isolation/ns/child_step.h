// What a containment step in the child reports when it fails: a fixed name, an optional path,
// and the errno. Steps run between clone and exec, so this is plain data that never allocates;
// the parent turns it into an Error ("mount /proc: Permission denied").
#pragma once

namespace asb::isolation::ns {

struct ChildFailure {
  const char* step = nullptr;  // static string naming the step, e.g. "pivot_root"
  const char* path = nullptr;  // optional: the path involved (points into the ChildPlan)
  int err = 0;                 // errno
};

/// Records a failure in `*f` and returns its errno (for `return Failed(f, ...)` chains).
inline int Failed(ChildFailure* f, const char* step, int err, const char* path = nullptr) {
  f->step = step;
  f->path = path;
  f->err = err;
  return err;
}

}  // namespace asb::isolation::ns
