#include "cli/signal_forwarder.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cerrno>

namespace asb::cli {
namespace {

constexpr int kSignals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGWINCH};
constexpr unsigned char kStopByte = 0;  // written by the destructor to end the watcher

std::atomic<int> g_write_fd{-1};
struct sigaction g_previous[sizeof(kSignals) / sizeof(kSignals[0])];

void OnSignal(int signo) {
  int saved = errno;
  int fd = g_write_fd.load();
  unsigned char byte = static_cast<unsigned char>(signo);
  if (fd >= 0) (void)!::write(fd, &byte, 1);
  errno = saved;
}

}  // namespace

Result<std::unique_ptr<SignalForwarder>> SignalForwarder::Start(int tty_fd) {
  std::unique_ptr<SignalForwarder> f(new SignalForwarder());
  f->tty_fd_ = tty_fd;
  if (!MakePipe(&f->read_end_, &f->write_end_, O_NONBLOCK)) return FailErrno("signal pipe");
  int expected = -1;
  if (!g_write_fd.compare_exchange_strong(expected, f->write_end_.get())) {
    return Fail(Error::Internal("a SignalForwarder is already running"));
  }
  for (size_t i = 0; i < std::size(kSignals); ++i) {
    if (kSignals[i] == SIGWINCH && tty_fd < 0) {
      ::sigaction(SIGWINCH, nullptr, &g_previous[i]);  // left as it is; restored as it was
      continue;
    }
    struct sigaction sa = {};
    sa.sa_handler = OnSignal;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    if (::sigaction(kSignals[i], &sa, &g_previous[i]) != 0) {
      int err = errno;
      for (size_t j = 0; j < i; ++j) ::sigaction(kSignals[j], &g_previous[j], nullptr);
      g_write_fd.store(-1);
      return Fail(Error::FromErrno(ErrorCode::kInternal, err, "sigaction"));
    }
  }
  f->watcher_ = std::thread([p = f.get()] { p->Watch(); });
  return f;
}

SignalForwarder::~SignalForwarder() {
  for (size_t i = 0; i < std::size(kSignals); ++i)
    ::sigaction(kSignals[i], &g_previous[i], nullptr);
  g_write_fd.store(-1);
  unsigned char stop = kStopByte;
  (void)!::write(write_end_.get(), &stop, 1);
  if (watcher_.joinable()) watcher_.join();
}

void SignalForwarder::Attach(std::shared_ptr<protocol::Channel> channel) {
  std::lock_guard<std::mutex> lock(mu_);
  channel_ = std::move(channel);
}

void SignalForwarder::Watch() {
  for (;;) {
    struct pollfd pfd = {read_end_.get(), POLLIN, 0};
    if (::poll(&pfd, 1, -1) < 0 && errno != EINTR) return;
    unsigned char byte = 0;
    ssize_t n = ::read(read_end_.get(), &byte, 1);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
    if (n <= 0 || byte == kStopByte) return;
    int signo = byte;
    if (signo == SIGWINCH) {
      struct winsize ws = {};
      std::lock_guard<std::mutex> lock(mu_);
      if (channel_ && ::ioctl(tty_fd_, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) {
        (void)channel_->Resize(ws.ws_col, ws.ws_row);
      }
      continue;
    }
    int none = 0;
    first_signal_.compare_exchange_strong(none, signo);
    std::lock_guard<std::mutex> lock(mu_);
    if (!channel_) continue;
    // First signal: deliver it to the command; later ones: cancel (kill its process group).
    if (delivered_++ == 0) {
      (void)channel_->Signal(signo);
    } else {
      (void)channel_->Cancel();
    }
  }
}

}  // namespace asb::cli
