// EventLoop: sandboxd's single-threaded epoll(7) loop. Every fd sandboxd watches (the listen
// socket, host connections, command pipes, timerfds, the SIGCHLD signalfd) is registered here
// with a handler that runs on readiness. Being single-threaded is what lets a fork()ed child
// allocate before exec (no other thread can hold the allocator's lock).
#pragma once

#include <sys/epoll.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <unordered_map>
#include <vector>

#include "common/result.h"
#include "common/unique_fd.h"

namespace asb::sandboxd {

class EventLoop {
 public:
  /// Called with the epoll event mask (EPOLLIN, EPOLLOUT, EPOLLHUP, EPOLLERR...).
  using Handler = std::function<void(uint32_t events)>;

  /// Creates the epoll instance. Errors: those of epoll_create1(2).
  static Result<std::unique_ptr<EventLoop>> Create();

  /// Watches `fd` (not owned) for `events`; `handler` runs on each readiness. Registering an
  /// fd twice is an error (EEXIST).
  Status Add(int fd, uint32_t events, Handler handler);
  /// Changes the watched events of a registered fd (0 = watch nothing, keep the handler).
  Status Modify(int fd, uint32_t events);
  /// Stops watching `fd`. Safe to call from inside any handler, also the fd's own; no handler
  /// of a removed fd runs afterwards. Call before closing the fd. Unknown fds are ignored.
  void Remove(int fd);
  bool Watching(int fd) const { return by_fd_.count(fd) != 0; }

  /// Runs the handlers of one epoll_wait batch, waiting up to `timeout_ms` (-1 = forever),
  /// then the deferred tasks. Errors: those of epoll_wait other than EINTR.
  Status RunOnce(int timeout_ms);

  /// Runs `task` after the current batch of handlers (for destroying objects whose methods
  /// are on the stack).
  void Defer(std::function<void()> task) { deferred_.push_back(std::move(task)); }

 private:
  struct Entry {
    int fd;
    uint32_t events;
    Handler handler;
  };
  explicit EventLoop(UniqueFd epfd) : epfd_(std::move(epfd)) {}

  UniqueFd epfd_;
  uint64_t next_token_ = 1;
  std::unordered_map<int, uint64_t> by_fd_;
  std::unordered_map<uint64_t, std::shared_ptr<Entry>> entries_;
  std::vector<std::function<void()>> deferred_;
};

/// Destroys `owned` two rounds of deferred tasks from now, i.e. after every task that may have
/// been queued with a pointer to it during the current batch (and after the tasks those queue).
template <typename T>
void DestroyLater(EventLoop& loop, std::shared_ptr<T> owned) {
  loop.Defer([&loop, owned]() mutable { loop.Defer([owned] {}); });
}

}  // namespace asb::sandboxd
