#include "isolation/microvm/guest_console.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>

namespace asb::isolation::microvm {

namespace {

// A line from the mark on, at most 200 bytes, without trailing CR or spaces.
std::string FromMark(const std::string& line, size_t at) {
  std::string out = line.substr(at, 200);
  while (!out.empty() && (out.back() == '\r' || out.back() == ' ')) out.pop_back();
  return out;
}

}  // namespace

void ConsoleScanner::Feed(std::string_view bytes) {
  bytes_seen_ += bytes.size();
  // The tail: appended, trimmed to its last kTailBytes once it doubles (amortised O(1) a byte).
  tail_.append(bytes);
  if (tail_.size() > 2 * kTailBytes) tail_.erase(0, tail_.size() - kTailBytes);
  while (!bytes.empty()) {
    const size_t nl = bytes.find('\n');
    const std::string_view part = bytes.substr(0, nl);
    if (line_.size() < kMaxLine) line_.append(part.substr(0, kMaxLine - line_.size()));
    if (nl == std::string_view::npos) break;
    EndLine();
    bytes.remove_prefix(nl + 1);
  }
}

void ConsoleScanner::EndLine() {
  if (line_.find(kOomKillMark) != std::string::npos) ++oom_kills_;
  if (size_t at = line_.find(kPanicMark); at != std::string::npos) {
    last_panic_ = FromMark(line_, at);
  }
  if (size_t at = line_.find(kInitFailureMark); at != std::string::npos) {
    last_init_failure_ = FromMark(line_, at);
  }
  line_.clear();
}

std::string ConsoleScanner::LastLine(std::string_view mark) const {
  if (mark == kPanicMark) return last_panic_;
  if (mark == kInitFailureMark) return last_init_failure_;
  return "";
}

std::string ConsoleScanner::Tail() const {
  return tail_.size() > kTailBytes ? tail_.substr(tail_.size() - kTailBytes) : tail_;
}

Result<std::unique_ptr<GuestConsole>> GuestConsole::Connect(const std::string& path,
                                                            int64_t timeout_ms) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof(addr.sun_path)) {
    return Fail(Error::InvalidArgument("console socket path too long or empty"));
  }
  std::memcpy(addr.sun_path, path.data(), path.size());
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (!fd) return FailErrno("socket");
    if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) == 0) {
      return std::make_unique<GuestConsole>(std::move(fd));
    }
    const int err = errno;
    // Not yet made (ENOENT) or bound but not yet listening (ECONNREFUSED): QEMU is starting.
    if (err != EINTR && err != ENOENT && err != ECONNREFUSED) {
      return Fail(Error::FromErrno(ErrorCode::kBackend, err, "connect the guest's console"));
    }
    if (std::chrono::steady_clock::now() > deadline) {
      return Fail(Error::Timeout("the guest's console socket did not open in time"));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

GuestConsole::GuestConsole(UniqueFd fd) : fd_(std::move(fd)) {
  reader_ = std::thread([this] { ReadLoop(); });
}

GuestConsole::~GuestConsole() {
  // Wakes the blocked read (it returns 0) without closing the fd under it.
  ::shutdown(fd_.get(), SHUT_RDWR);
  reader_.join();
}

void GuestConsole::ReadLoop() {
  std::string buf(64 << 10, '\0');
  for (;;) {
    const ssize_t n = ::read(fd_.get(), buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    std::lock_guard lock(mu_);
    scanner_.Feed(std::string_view(buf.data(), static_cast<size_t>(n)));
  }
  {
    std::lock_guard lock(mu_);
    closed_ = true;
  }
  closed_cv_.notify_all();
}

std::string GuestConsole::LastLine(std::string_view mark) const {
  std::lock_guard lock(mu_);
  return scanner_.LastLine(mark);
}

uint64_t GuestConsole::oom_kills() const {
  std::lock_guard lock(mu_);
  return scanner_.oom_kills();
}

uint64_t GuestConsole::bytes_seen() const {
  std::lock_guard lock(mu_);
  return scanner_.bytes_seen();
}

std::string GuestConsole::LastOutputLine() const {
  std::string tail;
  {
    std::lock_guard lock(mu_);
    tail = scanner_.Tail();
  }
  while (!tail.empty() && (tail.back() == '\n' || tail.back() == '\r' || tail.back() == ' ')) {
    tail.pop_back();
  }
  if (tail.empty()) return "no output";
  const size_t nl = tail.rfind('\n');
  std::string line = nl == std::string::npos ? tail : tail.substr(nl + 1);
  if (line.size() > 200) line.resize(200);
  return line;
}

bool GuestConsole::WaitClosed(int64_t timeout_ms) const {
  std::unique_lock lock(mu_);
  return closed_cv_.wait_for(lock, std::chrono::milliseconds(timeout_ms),
                             [this] { return closed_; });
}

}  // namespace asb::isolation::microvm
