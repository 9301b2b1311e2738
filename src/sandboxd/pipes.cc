#include "sandboxd/pipes.h"

#include <fcntl.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

namespace asb::sandboxd {

namespace {
constexpr int kMaxReadsPerPump = 4;  // 256 KiB per readiness event, then other fds get a turn

void SetNonBlocking(int fd) {
  int fl = fcntl(fd, F_GETFL);
  if (fl >= 0) fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}
}  // namespace

// ---- OutputPipe ------------------------------------------------------------------------------

OutputPipe::OutputPipe(EventLoop& loop, protocol::Stream stream, UniqueFd fd, Owner* owner)
    : loop_(loop), stream_(stream), fd_(std::move(fd)), owner_(owner) {}

OutputPipe::~OutputPipe() {
  if (fd_ && watching_) loop_.Remove(fd_.get());
}

Status OutputPipe::Start() {
  SetNonBlocking(fd_.get());
  ASB_TRY(loop_.Add(fd_.get(), EPOLLIN, [this](uint32_t) { Pump(); }));
  watching_ = true;
  interest_ = EPOLLIN;
  return {};
}

void OutputPipe::AddWindow(uint64_t bytes) {
  window_ += bytes;
  if (fd_ && watching_) Pump();
}

void OutputPipe::Pump() {
  if (!fd_) return;
  static char buf[protocol::kDataChunkSize];
  for (int i = 0; i < kMaxReadsPerPump; ++i) {
    uint64_t keepable = owner_->Keepable(stream_);
    size_t want = sizeof buf;
    if (keepable > 0) {
      if (window_ == 0) break;  // wait for WINDOW: the command blocks on its own write
      want = static_cast<size_t>(std::min<uint64_t>(want, window_));
    }
    ssize_t n = read(fd_.get(), buf, want);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) break;
    if (n <= 0) {  // EOF or a read error: this stream is over
      if (watching_) loop_.Remove(fd_.get());
      watching_ = false;
      fd_.Reset();
      owner_->Closed(stream_);
      return;
    }
    size_t kept = static_cast<size_t>(std::min<uint64_t>(keepable, static_cast<uint64_t>(n)));
    window_ -= kept;
    owner_->Deliver(stream_, std::string_view(buf, kept), static_cast<size_t>(n));
    if (!fd_) return;  // the owner detached us
  }
  UpdateInterest();
}

void OutputPipe::UpdateInterest() {
  if (!fd_ || !watching_) return;
  bool want = window_ > 0 || owner_->Keepable(stream_) == 0;
  uint32_t ev = want ? static_cast<uint32_t>(EPOLLIN) : 0u;
  if (ev != interest_) {
    (void)loop_.Modify(fd_.get(), ev);
    interest_ = ev;
  }
}

bool OutputPipe::Empty() const { return Available() == 0; }

size_t OutputPipe::Available() const {
  if (!fd_) return 0;
  int avail = 0;
  if (ioctl(fd_.get(), FIONREAD, &avail) != 0) return 0;
  return avail > 0 ? static_cast<size_t>(avail) : 0;
}

UniqueFd OutputPipe::Detach() {
  if (fd_ && watching_) loop_.Remove(fd_.get());
  watching_ = false;
  return std::move(fd_);
}

// ---- InputPipe -------------------------------------------------------------------------------

InputPipe::InputPipe(EventLoop& loop, UniqueFd fd, std::function<void(uint32_t)> grant)
    : loop_(loop), fd_(std::move(fd)), grant_(std::move(grant)) {
  SetNonBlocking(fd_.get());
}

InputPipe::~InputPipe() {
  if (fd_ && watching_) loop_.Remove(fd_.get());
}

void InputPipe::Write(std::string&& bytes) {
  if (bytes.empty()) return;
  if (!fd_ || broken_ || eof_) {
    grant_(static_cast<uint32_t>(bytes.size()));  // nobody reads: credit at once
    return;
  }
  queue_.push_back(std::move(bytes));
  Drain();
}

void InputPipe::CloseWhenDrained() {
  eof_ = true;
  Drain();
}

void InputPipe::CloseNow() {
  size_t pending = 0;
  for (auto& s : queue_) pending += s.size();
  pending -= front_pos_;
  queue_.clear();
  front_pos_ = 0;
  if (fd_ && watching_) loop_.Remove(fd_.get());
  watching_ = false;
  fd_.Reset();
  if (pending) grant_(static_cast<uint32_t>(pending));
}

void InputPipe::Drain() {
  if (!fd_) return;
  while (!queue_.empty()) {
    std::string& front = queue_.front();
    ssize_t n = write(fd_.get(), front.data() + front_pos_, front.size() - front_pos_);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) {
      SetWatch(true);
      return;
    }
    if (n < 0) {  // EPIPE or worse: the command closed its stdin; discard from now on
      broken_ = true;
      CloseNow();
      return;
    }
    front_pos_ += static_cast<size_t>(n);
    grant_(static_cast<uint32_t>(n));
    if (front_pos_ == front.size()) {
      queue_.pop_front();
      front_pos_ = 0;
    }
  }
  SetWatch(false);
  if (eof_) CloseNow();
}

void InputPipe::SetWatch(bool want) {
  if (!fd_ || want == watching_) return;
  if (want) {
    if (loop_.Add(fd_.get(), EPOLLOUT, [this](uint32_t) { Drain(); })) watching_ = true;
  } else {
    loop_.Remove(fd_.get());
    watching_ = false;
  }
}

}  // namespace asb::sandboxd
