#include "sandboxd/event_loop.h"

#include <cerrno>

namespace asb::sandboxd {

Result<std::unique_ptr<EventLoop>> EventLoop::Create() {
  UniqueFd fd(epoll_create1(EPOLL_CLOEXEC));
  if (!fd) return FailErrno("epoll_create1");
  return std::unique_ptr<EventLoop>(new EventLoop(std::move(fd)));
}

Status EventLoop::Add(int fd, uint32_t events, Handler handler) {
  if (by_fd_.count(fd)) return Fail(Error::FromErrno(EEXIST, "epoll add"));
  uint64_t token = next_token_++;
  epoll_event ev{};
  ev.events = events;
  ev.data.u64 = token;
  if (epoll_ctl(epfd_.get(), EPOLL_CTL_ADD, fd, &ev) != 0) return FailErrno("epoll_ctl add");
  by_fd_[fd] = token;
  entries_[token] = std::make_shared<Entry>(Entry{fd, events, std::move(handler)});
  return {};
}

Status EventLoop::Modify(int fd, uint32_t events) {
  auto it = by_fd_.find(fd);
  if (it == by_fd_.end()) return Fail(Error::FromErrno(ENOENT, "epoll modify"));
  auto& entry = entries_[it->second];
  if (entry->events == events) return {};
  epoll_event ev{};
  ev.events = events;
  ev.data.u64 = it->second;
  if (epoll_ctl(epfd_.get(), EPOLL_CTL_MOD, fd, &ev) != 0) return FailErrno("epoll_ctl mod");
  entry->events = events;
  return {};
}

void EventLoop::Remove(int fd) {
  auto it = by_fd_.find(fd);
  if (it == by_fd_.end()) return;
  epoll_ctl(epfd_.get(), EPOLL_CTL_DEL, fd, nullptr);
  entries_.erase(it->second);
  by_fd_.erase(it);
}

Status EventLoop::RunOnce(int timeout_ms) {
  epoll_event events[64];
  int n = epoll_wait(epfd_.get(), events, 64, timeout_ms);
  if (n < 0) {
    if (errno == EINTR) return {};
    return FailErrno("epoll_wait");
  }
  for (int i = 0; i < n; ++i) {
    auto it = entries_.find(events[i].data.u64);
    if (it == entries_.end()) continue;         // removed by an earlier handler of this batch
    std::shared_ptr<Entry> entry = it->second;  // keeps the handler alive while it runs
    entry->handler(events[i].events);
  }
  while (!deferred_.empty()) {
    auto tasks = std::move(deferred_);
    deferred_.clear();
    for (auto& t : tasks) t();
  }
  return {};
}

}  // namespace asb::sandboxd
