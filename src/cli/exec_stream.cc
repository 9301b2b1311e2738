#include "cli/exec_stream.h"

#include <fcntl.h>
#include <poll.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

#include "common/unique_fd.h"
#include "protocol/frame.h"

namespace asb::cli {
namespace {

/// Forwards `fd` to the channel's stdin on its own thread until EOF or Stop().
class StdinPump {
 public:
  StdinPump(protocol::Channel& channel, int fd) : channel_(channel), fd_(fd) {}
  ~StdinPump() { Stop(); }

  Status Start() {
    if (!MakePipe(&stop_read_, &stop_write_, O_NONBLOCK)) return FailErrno("stdin stop pipe");
    channel_.SetNotify([this] {
      std::lock_guard<std::mutex> lock(mu_);
      cv_.notify_all();
    });
    thread_ = std::thread([this] { Run(); });
    return {};
  }

  void Stop() {
    if (!thread_.joinable()) return;
    stop_.store(true);
    {
      std::lock_guard<std::mutex> lock(mu_);
      cv_.notify_all();
    }
    char b = 1;
    (void)!::write(stop_write_.get(), &b, 1);
    thread_.join();
    channel_.SetNotify(nullptr);
  }

 private:
  void Run() {
    std::string buf(protocol::kDataChunkSize, '\0');
    for (;;) {
      struct pollfd pfds[2] = {{fd_, POLLIN, 0}, {stop_read_.get(), POLLIN, 0}};
      if (::poll(pfds, 2, -1) < 0) {
        if (errno == EINTR) continue;
        break;
      }
      if (pfds[1].revents != 0 || stop_.load()) return;
      ssize_t n = ::read(fd_, buf.data(), buf.size());
      if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      if (n <= 0) break;  // EOF or a read error: either way the command's stdin ends here
      if (!SendAll(std::string_view(buf.data(), static_cast<size_t>(n)))) return;
    }
    (void)channel_.CloseWrite();
  }

  // Sends without ever blocking indefinitely, so that Stop() always finishes promptly.
  bool SendAll(std::string_view data) {
    while (!data.empty()) {
      if (stop_.load()) return false;
      auto sent = channel_.TryWrite(data);
      if (!sent) return false;  // the channel or connection is closed
      data.remove_prefix(*sent);
      if (*sent == 0) {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait_for(lock, std::chrono::milliseconds(50));
      }
    }
    return true;
  }

  protocol::Channel& channel_;
  int fd_;
  UniqueFd stop_read_, stop_write_;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::condition_variable cv_;
};

}  // namespace

Result<protocol::ExecResult> StreamExec(protocol::Channel& channel, const StreamIo& io) {
  std::unique_ptr<StdinPump> pump;
  if (io.stdin_fd >= 0) {
    pump = std::make_unique<StdinPump>(channel, io.stdin_fd);
    ASB_TRY(pump->Start());
  }
  bool out_open = true, err_open = true;
  for (;;) {
    ASB_ASSIGN_OR_RETURN(protocol::ChannelEvent ev, channel.Next(-1));
    switch (ev.kind) {
      case protocol::ChannelEvent::Kind::kData: {
        bool to_err = ev.stream == protocol::Stream::kStderr;
        bool& open = to_err ? err_open : out_open;
        if (open &&
            !WriteAll(to_err ? io.stderr_fd : io.stdout_fd, ev.payload.data(), ev.payload.size())) {
          open = false;  // EPIPE or similar: keep draining, stop writing
        }
        break;
      }
      case protocol::ChannelEvent::Kind::kEof:
      case protocol::ChannelEvent::Kind::kInfo:
        break;
      case protocol::ChannelEvent::Kind::kResult: {
        if (pump) pump->Stop();
        auto result = protocol::DecodeExecResult(ev.payload);
        if (!result) return Fail(result.error().WithContext("exec result"));
        return *result;
      }
      case protocol::ChannelEvent::Kind::kError:
        if (pump) pump->Stop();
        return Fail(ev.error.value_or(Error::Backend("exec failed")));
    }
  }
}

}  // namespace asb::cli
