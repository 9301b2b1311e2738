// The host side of the sandbox protocol (see client.h and docs/design/sandbox-protocol.md).
//
// Structure:
//   Core          the connection's shared state: the socket, the write mutex, the channel map,
//                 the reader loop. Shared by the Connection object, the reader thread and every
//                 channel, so that it outlives whichever of them goes last.
//   ChannelState  one channel: its event queue, its flow-control counters, its waiters.
//   ChannelHandle what Open() returns; dropping it before the terminal event abandons the
//                 channel (CANCEL is sent and further DATA is discarded and credited).
//   ConnectionImpl owns the reader thread; its destructor closes and joins.
//
// Lock order: Core::write_mu_ -> Core::mu_ -> ChannelState::mu_. Nothing takes write_mu_ while
// holding mu_ or a channel's mu_, and user notifiers are called with no lock held.
#include "protocol/client.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <thread>

namespace asb::protocol {

namespace {

using SteadyClock = std::chrono::steady_clock;

/// Bytes of consumed DATA after which the host returns credit (rule 3 of the design doc).
constexpr uint64_t kReturnThreshold = kInitialWindow / 2;
/// Largest window a peer may grant (rule 7).
constexpr uint64_t kMaxWindow = uint64_t{1} << 31;
/// Largest PING payload the host answers (section 9).
constexpr size_t kMaxPingPayload = 64;
/// recv(2) buffer of the reader thread.
constexpr size_t kReadBufferSize = 256 * 1024;

constexpr char kLost[] = "sandbox connection lost";

std::optional<SteadyClock::time_point> DeadlineAfter(int64_t timeout_ms) {
  if (timeout_ms < 0) return std::nullopt;
  return SteadyClock::now() + std::chrono::milliseconds(timeout_ms);
}

/// Milliseconds left until `deadline` for poll(2): -1 = forever, 0 = passed.
int PollTimeout(const std::optional<SteadyClock::time_point>& deadline) {
  if (!deadline) return -1;
  auto left =
      std::chrono::duration_cast<std::chrono::milliseconds>(*deadline - SteadyClock::now()).count();
  if (left <= 0) return 0;
  return left > 1'000'000'000 ? 1'000'000'000 : static_cast<int>(left + 1);
}

int StreamIndex(Stream s) { return static_cast<int>(s); }

Error Violation(std::string what) { return Error::Backend("protocol: " + std::move(what)); }

class Core;

// ---- ChannelState --------------------------------------------------------------------------

class ChannelState {
 public:
  ChannelState(uint32_t id, std::shared_ptr<Core> core) : id_(id), core_(std::move(core)) {}

  uint32_t id() const { return id_; }

  // Consumer side (any thread).
  Result<ChannelEvent> Next(int64_t timeout_ms);
  std::optional<ChannelEvent> TryNext();
  void SetNotify(std::function<void()> notify);
  Status Write(std::string_view data, int64_t timeout_ms);
  Result<size_t> TryWrite(std::string_view data);
  Status CloseWrite();
  Status SendControl(FrameType type, std::string payload);
  Status Cancel();
  void Abandon();

  // Reader side. Returns an error for a protocol violation (the connection is then dropped).
  Status Deliver(Frame& f);
  // Ends the channel because the connection ended (lost or closed).
  void Terminate(const Error& reason);

 private:
  // Takes the front event; returns the WINDOW increment to send for it (0 for none).
  uint32_t PopLocked(ChannelEvent* ev);
  // Adds consumed bytes of `s`; returns the increment to send now (0 below the threshold).
  uint32_t ConsumeLocked(Stream s, uint64_t n);
  void SendWindow(Stream s, uint32_t inc);
  // Error for a write-side call on a channel that can no longer be written.
  std::optional<Error> WriteBlockedLocked() const;
  // Sends up to `data.size()` bytes, at most `window` in total, in DATA frames.
  Status SendData(std::string_view data);
  void NotifyOutsideLock(std::unique_lock<std::mutex>& lock);

  const uint32_t id_;
  const std::shared_ptr<Core> core_;

  std::mutex writer_mu_;  // one Write/TryWrite/CloseWrite at a time keeps stdin contiguous
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<ChannelEvent> queue_;
  bool terminal_queued_ = false;  // the terminal event has been queued (no more will come)
  bool terminal_taken_ = false;   // ... and the consumer has taken it
  bool abandoned_ = false;
  bool write_closed_ = false;
  std::optional<Error> conn_error_;        // set when the connection ended under this channel
  uint64_t send_window_ = kInitialWindow;  // stdin credit granted by sandboxd
  uint64_t recv_credit_[3] = {0, kInitialWindow, kInitialWindow};  // what sandboxd may still send
  uint64_t unreturned_[3] = {0, 0, 0};                             // consumed but not yet returned
  std::function<void()> notify_;
};

// ---- Core ------------------------------------------------------------------------------------

class Core : public std::enable_shared_from_this<Core> {
 public:
  explicit Core(UniqueFd fd) : fd_(std::move(fd)) {}

  int fd() const { return fd_.get(); }
  bool alive() const { return alive_.load(); }
  uint64_t bytes_received() const { return bytes_received_.load(std::memory_order_relaxed); }
  FrameDecoder& decoder() { return decoder_; }

  /// Sends one whole frame (header and payload in one sendmsg loop, under the write mutex).
  Status SendFrame(uint32_t channel, FrameType type, Stream stream, std::string_view payload) {
    Status st;
    {
      std::lock_guard<std::mutex> w(write_mu_);
      st = WriteLocked(channel, type, stream, payload);
    }
    if (!st) End(st.error(), /*closing=*/false);
    return st;
  }

  Result<std::shared_ptr<ChannelState>> Open(std::string_view open_json) {
    if (open_json.size() > kMaxFramePayload) {
      return Fail(Error::InvalidArgument("OPEN body of " + std::to_string(open_json.size()) +
                                         " bytes exceeds the frame limit"));
    }
    std::shared_ptr<ChannelState> st;
    Status sent;
    {
      // Holding the write mutex across id allocation and the send keeps ids increasing on
      // the wire (sandboxd checks that).
      std::lock_guard<std::mutex> w(write_mu_);
      {
        std::lock_guard<std::mutex> l(mu_);
        if (!alive_) return Fail(end_error_);
        if (ids_exhausted_) return Fail(Error::LimitExceeded("protocol: channel ids exhausted"));
        uint32_t id = next_id_;
        next_id_ += 2;
        if (next_id_ < id) ids_exhausted_ = true;  // wrapped past 2^32-1
        st = std::make_shared<ChannelState>(id, shared_from_this());
        channels_[id] = st;
      }
      sent = WriteLocked(st->id(), FrameType::kOpen, Stream::kNone, open_json);
    }
    if (!sent) {
      End(sent.error(), /*closing=*/false);
      return Fail(sent.error());
    }
    return st;
  }

  /// Ends the connection: every open channel gets a terminal kError (kCancelled when the host
  /// closes, kBackend "sandbox connection lost: ..." otherwise); the socket is shut down so
  /// the reader thread returns. Idempotent: the first reason wins.
  void End(const Error& cause, bool closing) {
    std::map<uint32_t, std::shared_ptr<ChannelState>> chans;
    // A failed host call (recv, send) keeps its detail for the log and its mark (ADR 0016); a
    // protocol error of sandboxd's is client text.
    Error reason = closing ? Error::Cancelled("sandbox connection closed")
                           : Error(cause).WithCode(ErrorCode::kBackend).WithContext(kLost);
    {
      std::lock_guard<std::mutex> l(mu_);
      if (!alive_) return;
      alive_ = false;
      end_error_ = closing ? Error::Backend(std::string(kLost) + ": closed by the host") : reason;
      chans.swap(channels_);
    }
    ::shutdown(fd_.get(), SHUT_RDWR);
    for (auto& [id, ch] : chans) ch->Terminate(reason);
  }

  void Forget(uint32_t id) {
    std::lock_guard<std::mutex> l(mu_);
    channels_.erase(id);
  }

  /// The reader thread's body: reads, decodes and dispatches until the connection ends.
  void ReaderLoop() {
    std::unique_ptr<char[]> buf(new char[kReadBufferSize]);
    while (true) {
      // Drain what is buffered first (bytes that arrived with the HELLO answer).
      while (true) {
        auto next = decoder_.Next();
        if (!next) return End(next.error(), false);
        if (!next->has_value()) break;
        Status st = Dispatch(**next);
        if (!st) return End(st.error(), false);
      }
      ssize_t n = ::recv(fd_.get(), buf.get(), kReadBufferSize, 0);
      if (n == 0) return End(Error::Backend("connection closed by sandboxd"), false);
      if (n < 0) {
        if (errno == EINTR) continue;
        return End(Error::FromErrno(ErrorCode::kBackend, errno, "recv"), false);
      }
      bytes_received_.fetch_add(static_cast<uint64_t>(n), std::memory_order_relaxed);
      decoder_.Feed(std::string_view(buf.get(), static_cast<size_t>(n)));
    }
  }

 private:
  Status WriteLocked(uint32_t channel, FrameType type, Stream stream, std::string_view payload) {
    if (!alive_.load()) return Fail(Error::Backend(std::string(kLost)));
    char header[kFrameHeaderSize];
    EncodeFrameHeader(channel, type, stream, static_cast<uint32_t>(payload.size()), header);
    iovec iov[2] = {{header, kFrameHeaderSize},
                    {const_cast<char*>(payload.data()), payload.size()}};
    int iovcnt = payload.empty() ? 1 : 2;
    iovec* cur = iov;
    while (iovcnt > 0) {
      msghdr msg{};
      msg.msg_iov = cur;
      msg.msg_iovlen = static_cast<size_t>(iovcnt);
      ssize_t n = ::sendmsg(fd_.get(), &msg, MSG_NOSIGNAL);
      if (n < 0) {
        if (errno == EINTR) continue;
        return Fail(Error::FromErrno(ErrorCode::kBackend, errno,
                                     "send " + std::string(FrameTypeName(type))));
      }
      auto left = static_cast<size_t>(n);
      while (iovcnt > 0 && left >= cur->iov_len) {
        left -= cur->iov_len;
        ++cur;
        --iovcnt;
      }
      if (iovcnt > 0) {
        cur->iov_base = static_cast<char*>(cur->iov_base) + left;
        cur->iov_len -= left;
      }
    }
    return {};
  }

  Status Dispatch(Frame& f) {
    if (f.channel == 0) return DispatchControl(f);
    switch (f.type) {
      case FrameType::kData:
      case FrameType::kEof:
        if (f.stream != Stream::kStdout && f.stream != Stream::kStderr) {
          return Fail(Violation(std::string(FrameTypeName(f.type)) + " from sandboxd on stream " +
                                std::to_string(static_cast<int>(f.stream))));
        }
        break;
      case FrameType::kWindow:
        if (f.stream != Stream::kStdin) {
          return Fail(Violation("WINDOW from sandboxd on stream " +
                                std::to_string(static_cast<int>(f.stream))));
        }
        break;
      case FrameType::kInfo:
      case FrameType::kResult:
      case FrameType::kError:
        if (f.stream != Stream::kNone) {
          return Fail(Violation(std::string(FrameTypeName(f.type)) + " with a stream set"));
        }
        break;
      default:
        return Fail(Violation(std::string(FrameTypeName(f.type)) + " from sandboxd on channel " +
                              std::to_string(f.channel)));
    }
    std::shared_ptr<ChannelState> ch;
    {
      std::lock_guard<std::mutex> l(mu_);
      auto it = channels_.find(f.channel);
      if (it == channels_.end()) return {};  // finished or never opened: ignored (section 3)
      ch = it->second;
      if (f.type == FrameType::kResult || f.type == FrameType::kError) channels_.erase(it);
    }
    return ch->Deliver(f);
  }

  Status DispatchControl(Frame& f) {
    switch (f.type) {
      case FrameType::kPing:
        if (f.payload.size() > kMaxPingPayload) return Fail(Violation("PING payload too large"));
        return SendFrame(0, FrameType::kPong, Stream::kNone, f.payload);
      case FrameType::kPong:
        return {};
      case FrameType::kError: {
        auto w = DecodeWireError(f.payload);
        std::string msg = w ? "sandboxd: " + w->message : "sandboxd sent a malformed ERROR";
        return Fail(Error::Backend(std::move(msg)));
      }
      default:
        return Fail(Violation(std::string(FrameTypeName(f.type)) + " on the control channel"));
    }
  }

  UniqueFd fd_;
  FrameDecoder decoder_;  // reader thread only (the handshake runs before it starts)
  std::mutex write_mu_;
  std::mutex mu_;
  std::atomic<bool> alive_{true};
  std::atomic<uint64_t> bytes_received_{0};  // by the reader thread, after the handshake
  Error end_error_ = Error::Backend(kLost);  // what Open answers once the connection ended
  std::map<uint32_t, std::shared_ptr<ChannelState>> channels_;
  uint32_t next_id_ = 1;
  bool ids_exhausted_ = false;
};

// ---- ChannelState implementation -----------------------------------------------------------

void ChannelState::NotifyOutsideLock(std::unique_lock<std::mutex>& lock) {
  std::function<void()> fn = notify_;
  lock.unlock();
  if (fn) fn();
}

uint32_t ChannelState::ConsumeLocked(Stream s, uint64_t n) {
  int i = StreamIndex(s);
  unreturned_[i] += n;
  if (unreturned_[i] < kReturnThreshold || terminal_queued_) return 0;
  auto inc = static_cast<uint32_t>(unreturned_[i]);
  recv_credit_[i] += inc;  // before the WINDOW leaves, so a fast answer is never an overrun
  unreturned_[i] = 0;
  return inc;
}

void ChannelState::SendWindow(Stream s, uint32_t inc) {
  if (inc == 0) return;
  // A failure means the connection is gone; the channel learns that from Terminate().
  (void)core_->SendFrame(id_, FrameType::kWindow, s, EncodeWindowIncrement(inc));
}

uint32_t ChannelState::PopLocked(ChannelEvent* ev) {
  *ev = std::move(queue_.front());
  queue_.pop_front();
  if (ev->terminal()) terminal_taken_ = true;
  if (ev->kind != ChannelEvent::Kind::kData) return 0;
  return ConsumeLocked(ev->stream, ev->payload.size());
}

Result<ChannelEvent> ChannelState::Next(int64_t timeout_ms) {
  std::unique_lock<std::mutex> l(mu_);
  if (queue_.empty() && terminal_taken_) return Fail(Error::Conflict("channel closed"));
  auto ready = [&] { return !queue_.empty(); };
  if (timeout_ms < 0) {
    cv_.wait(l, ready);
  } else if (!cv_.wait_for(l, std::chrono::milliseconds(timeout_ms), ready)) {
    return Fail(Error::Timeout("no event on channel " + std::to_string(id_) + " within " +
                               std::to_string(timeout_ms) + " ms"));
  }
  ChannelEvent ev;
  uint32_t inc = PopLocked(&ev);
  l.unlock();
  SendWindow(ev.stream, inc);
  return ev;
}

std::optional<ChannelEvent> ChannelState::TryNext() {
  std::unique_lock<std::mutex> l(mu_);
  if (queue_.empty()) return std::nullopt;
  ChannelEvent ev;
  uint32_t inc = PopLocked(&ev);
  l.unlock();
  SendWindow(ev.stream, inc);
  return ev;
}

void ChannelState::SetNotify(std::function<void()> notify) {
  std::unique_lock<std::mutex> l(mu_);
  notify_ = std::move(notify);
  // Events may have arrived before the notifier existed: report them now, or they would wait
  // for the next arrival.
  if (!queue_.empty()) NotifyOutsideLock(l);
}

std::optional<Error> ChannelState::WriteBlockedLocked() const {
  if (conn_error_) return conn_error_;
  if (terminal_queued_) return Error::Conflict("channel closed");
  if (write_closed_) return Error::Conflict("stdin already closed");
  return std::nullopt;
}

Status ChannelState::SendData(std::string_view data) {
  size_t off = 0;
  while (off < data.size()) {
    size_t n = std::min<size_t>(data.size() - off, kDataChunkSize);
    ASB_TRY(core_->SendFrame(id_, FrameType::kData, Stream::kStdin, data.substr(off, n)));
    off += n;
  }
  return {};
}

Status ChannelState::Write(std::string_view data, int64_t timeout_ms) {
  std::lock_guard<std::mutex> w(writer_mu_);
  if (data.empty()) return {};
  auto deadline = DeadlineAfter(timeout_ms);
  size_t off = 0;
  do {
    std::unique_lock<std::mutex> l(mu_);
    auto ready = [&] { return send_window_ > 0 || WriteBlockedLocked().has_value(); };
    if (!deadline) {
      cv_.wait(l, ready);
    } else if (!cv_.wait_until(l, *deadline, ready)) {
      return Fail(Error::Timeout("write on channel " + std::to_string(id_) +
                                 ": no flow-control window within " + std::to_string(timeout_ms) +
                                 " ms (" + std::to_string(off) + " of " +
                                 std::to_string(data.size()) + " bytes sent)"));
    }
    if (auto e = WriteBlockedLocked()) return Fail(*e);
    size_t n = static_cast<size_t>(std::min<uint64_t>(data.size() - off, send_window_));
    send_window_ -= n;
    l.unlock();
    ASB_TRY(SendData(data.substr(off, n)));
    off += n;
  } while (off < data.size());
  return {};
}

Result<size_t> ChannelState::TryWrite(std::string_view data) {
  std::lock_guard<std::mutex> w(writer_mu_);
  std::unique_lock<std::mutex> l(mu_);
  if (auto e = WriteBlockedLocked()) return Fail(*e);
  size_t n = static_cast<size_t>(std::min<uint64_t>(data.size(), send_window_));
  send_window_ -= n;
  l.unlock();
  ASB_TRY(SendData(data.substr(0, n)));
  return n;
}

Status ChannelState::CloseWrite() {
  std::lock_guard<std::mutex> w(writer_mu_);
  {
    std::lock_guard<std::mutex> l(mu_);
    if (write_closed_) return {};  // idempotent
    if (conn_error_) return Fail(*conn_error_);
    if (terminal_queued_) return Fail(Error::Conflict("channel closed"));
    write_closed_ = true;
  }
  cv_.notify_all();
  return core_->SendFrame(id_, FrameType::kEof, Stream::kStdin, {});
}

Status ChannelState::SendControl(FrameType type, std::string payload) {
  {
    std::lock_guard<std::mutex> l(mu_);
    if (conn_error_) return Fail(*conn_error_);
    if (terminal_queued_) return Fail(Error::Conflict("channel closed"));
  }
  return core_->SendFrame(id_, type, Stream::kNone, payload);
}

Status ChannelState::Cancel() {
  {
    std::lock_guard<std::mutex> l(mu_);
    if (conn_error_) return Fail(*conn_error_);
    if (terminal_queued_) return {};  // already over: nothing to cancel
  }
  return core_->SendFrame(id_, FrameType::kCancel, Stream::kNone, {});
}

void ChannelState::Abandon() {
  uint32_t inc[3] = {0, 0, 0};
  bool cancel = false;
  {
    std::lock_guard<std::mutex> l(mu_);
    if (abandoned_) return;
    abandoned_ = true;
    notify_ = nullptr;
    cancel = !terminal_queued_ && !conn_error_;
    // Queued bytes nobody will read count as consumed (rule 5).
    for (const ChannelEvent& ev : queue_) {
      if (ev.kind == ChannelEvent::Kind::kData)
        unreturned_[StreamIndex(ev.stream)] += ev.payload.size();
    }
    queue_.clear();
    for (Stream s : {Stream::kStdout, Stream::kStderr}) inc[StreamIndex(s)] = ConsumeLocked(s, 0);
  }
  if (!cancel) return;
  (void)core_->SendFrame(id_, FrameType::kCancel, Stream::kNone, {});
  for (Stream s : {Stream::kStdout, Stream::kStderr}) SendWindow(s, inc[StreamIndex(s)]);
}

Status ChannelState::Deliver(Frame& f) {
  std::unique_lock<std::mutex> l(mu_);
  if (terminal_queued_) return {};  // after a connection-level end; nothing more matters
  ChannelEvent ev;
  switch (f.type) {
    case FrameType::kData: {
      int i = StreamIndex(f.stream);
      if (f.payload.size() > recv_credit_[i]) {
        return Fail(Violation("DATA of " + std::to_string(f.payload.size()) + " bytes on channel " +
                              std::to_string(id_) + " exceeds the window of " +
                              std::to_string(recv_credit_[i])));
      }
      recv_credit_[i] -= f.payload.size();
      if (f.payload.empty()) return {};
      if (abandoned_) {
        uint32_t inc = ConsumeLocked(f.stream, f.payload.size());
        l.unlock();
        SendWindow(f.stream, inc);
        return {};
      }
      ev.kind = ChannelEvent::Kind::kData;
      ev.stream = f.stream;
      ev.payload = std::move(f.payload);
      break;
    }
    case FrameType::kEof:
      ev.kind = ChannelEvent::Kind::kEof;
      ev.stream = f.stream;
      break;
    case FrameType::kWindow: {
      auto inc = DecodeWindowIncrement(f.payload);
      if (!inc) return Fail(inc.error());
      send_window_ += *inc;
      if (send_window_ > kMaxWindow) return Fail(Violation("WINDOW grows the window past 2^31"));
      cv_.notify_all();
      NotifyOutsideLock(l);
      return {};
    }
    case FrameType::kInfo:
      ev.kind = ChannelEvent::Kind::kInfo;
      ev.payload = std::move(f.payload);
      break;
    case FrameType::kResult:
      ev.kind = ChannelEvent::Kind::kResult;
      ev.payload = std::move(f.payload);
      terminal_queued_ = true;
      break;
    case FrameType::kError: {
      ev.kind = ChannelEvent::Kind::kError;
      auto w = DecodeWireError(f.payload);
      ev.error = w ? FromWireError(*w) : Error::Backend("protocol: malformed ERROR body");
      ev.payload = std::move(f.payload);
      terminal_queued_ = true;
      break;
    }
    default:
      return Fail(Violation("unexpected frame type"));  // filtered by Core::Dispatch
  }
  if (!abandoned_) queue_.push_back(std::move(ev));
  cv_.notify_all();
  NotifyOutsideLock(l);
  return {};
}

void ChannelState::Terminate(const Error& reason) {
  std::unique_lock<std::mutex> l(mu_);
  conn_error_ = reason;
  if (!terminal_queued_) {
    terminal_queued_ = true;
    ChannelEvent ev;
    ev.kind = ChannelEvent::Kind::kError;
    ev.error = reason;
    if (!abandoned_) queue_.push_back(std::move(ev));
  }
  cv_.notify_all();
  NotifyOutsideLock(l);
}

// ---- handles -------------------------------------------------------------------------------

class ChannelHandle final : public Channel {
 public:
  explicit ChannelHandle(std::shared_ptr<ChannelState> st) : st_(std::move(st)) {}
  ~ChannelHandle() override { st_->Abandon(); }

  uint32_t id() const override { return st_->id(); }
  Result<ChannelEvent> Next(int64_t timeout_ms) override { return st_->Next(timeout_ms); }
  std::optional<ChannelEvent> TryNext() override { return st_->TryNext(); }
  void SetNotify(std::function<void()> notify) override { st_->SetNotify(std::move(notify)); }
  Status Write(std::string_view data, int64_t timeout_ms) override {
    return st_->Write(data, timeout_ms);
  }
  Result<size_t> TryWrite(std::string_view data) override { return st_->TryWrite(data); }
  Status CloseWrite() override { return st_->CloseWrite(); }
  Status Signal(int signo) override {
    return st_->SendControl(FrameType::kSignal, "{\"signal\":" + std::to_string(signo) + "}");
  }
  Status Resize(uint16_t cols, uint16_t rows) override {
    return st_->SendControl(FrameType::kResize, "{\"cols\":" + std::to_string(cols) +
                                                    ",\"rows\":" + std::to_string(rows) + "}");
  }
  Status Cancel() override { return st_->Cancel(); }

 private:
  std::shared_ptr<ChannelState> st_;
};

class ConnectionImpl final : public Connection {
 public:
  ConnectionImpl(std::shared_ptr<Core> core, uint32_t version, std::string software)
      : core_(std::move(core)), version_(version), software_(std::move(software)) {
    reader_ = std::thread([core = core_] { core->ReaderLoop(); });
  }

  ~ConnectionImpl() override {
    Close();
    if (!reader_.joinable()) return;
    // The last reference may be dropped by a notifier running on the reader thread itself.
    if (reader_.get_id() == std::this_thread::get_id()) {
      reader_.detach();
    } else {
      reader_.join();
    }
  }

  Result<std::shared_ptr<Channel>> Open(std::string_view open_json) override {
    ASB_ASSIGN_OR_RETURN(auto st, core_->Open(open_json));
    return std::shared_ptr<Channel>(std::make_shared<ChannelHandle>(std::move(st)));
  }
  uint32_t version() const override { return version_; }
  const std::string& peer_software() const override { return software_; }
  bool alive() const override { return core_->alive(); }
  uint64_t bytes_received() const override { return core_->bytes_received(); }
  void Close() override { core_->End(Error::Cancelled("closed"), /*closing=*/true); }

 private:
  std::shared_ptr<Core> core_;
  uint32_t version_;
  std::string software_;
  std::thread reader_;
};

// Reads frames until the peer's HELLO (or ERROR) arrives on channel 0.
Result<Hello> AwaitHello(Core& core, const std::optional<SteadyClock::time_point>& deadline) {
  char buf[4096];
  while (true) {
    auto next = core.decoder().Next();
    if (!next) return Fail(next.error());
    if (next->has_value()) {
      Frame& f = **next;
      if (f.channel == 0 && f.type == FrameType::kHello) return DecodeHello(f.payload);
      if (f.channel == 0 && f.type == FrameType::kError) {
        auto w = DecodeWireError(f.payload);
        return Fail(Error::Backend("sandboxd refused the handshake: " +
                                   (w ? w->message : std::string("malformed ERROR"))));
      }
      return Fail(Violation("expected HELLO, got " + std::string(FrameTypeName(f.type)) +
                            " on channel " + std::to_string(f.channel)));
    }
    pollfd p{core.fd(), POLLIN, 0};
    int timeout = PollTimeout(deadline);
    int r = ::poll(&p, 1, timeout);
    if (r < 0) {
      if (errno == EINTR) continue;
      return FailErrno("poll");
    }
    if (r == 0) return Fail(Error::Timeout("sandboxd did not answer HELLO in time"));
    ssize_t n = ::recv(core.fd(), buf, sizeof(buf), 0);
    if (n == 0) return Fail(Error::Backend("sandboxd closed the connection during the handshake"));
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return Fail(Error::FromErrno(ErrorCode::kBackend, errno, "handshake recv"));
    }
    core.decoder().Feed(std::string_view(buf, static_cast<size_t>(n)));
  }
}

}  // namespace

Result<std::shared_ptr<Connection>> Connection::Establish(UniqueFd fd, int64_t timeout_ms) {
  if (!fd) return Fail(Error::InvalidArgument("Establish: no socket"));
  auto deadline = DeadlineAfter(timeout_ms);
  // The reader thread uses blocking reads; the handshake waits with poll(2).
  int flags = ::fcntl(fd.get(), F_GETFL);
  if (flags < 0 || ::fcntl(fd.get(), F_SETFL, flags & ~O_NONBLOCK) < 0) {
    return FailErrno("fcntl O_NONBLOCK");
  }
  auto core = std::make_shared<Core>(std::move(fd));
  Hello mine{kMinProtocolVersion, kProtocolVersion, 0, "agent-sandbox " ASB_VERSION};
  ASB_TRY_CTX(core->SendFrame(0, FrameType::kHello, Stream::kNone, EncodeHello(mine)), "handshake");
  ASB_ASSIGN_OR_RETURN(Hello theirs, AwaitHello(*core, deadline));
  if (theirs.version < kMinProtocolVersion || theirs.version > kProtocolVersion) {
    return Fail(Error::Backend("protocol: sandboxd chose version " +
                               std::to_string(theirs.version) + ", the host speaks " +
                               std::to_string(kMinProtocolVersion) + ".." +
                               std::to_string(kProtocolVersion)));
  }
  return std::shared_ptr<Connection>(
      std::make_shared<ConnectionImpl>(std::move(core), theirs.version, theirs.software));
}

Result<std::shared_ptr<Connection>> Connection::Dial(const std::string& path, int64_t timeout_ms) {
  auto deadline = DeadlineAfter(timeout_ms);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof(addr.sun_path)) {
    return Fail(Error::InvalidArgument("unix socket path too long or empty: " + path));
  }
  std::memcpy(addr.sun_path, path.data(), path.size());
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!fd) return FailErrno("socket");
  while (true) {
    if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) == 0) break;
    int err = errno;
    if (err == EINTR) continue;
    if (err == EAGAIN || err == EINPROGRESS) {
      // AF_UNIX: the listener's backlog is full. Retry until the deadline.
      if (PollTimeout(deadline) == 0) {
        return Fail(Error::Timeout("connect " + path + ": listener busy"));
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      continue;
    }
    std::string ctx = "connect " + path;
    if (err == ENOENT) return Fail(Error::FromErrno(ErrorCode::kNotFound, err, ctx));
    if (err == ECONNREFUSED) return Fail(Error::FromErrno(ErrorCode::kUnavailable, err, ctx));
    return Fail(Error::FromErrno(ErrorCode::kBackend, err, ctx));
  }
  int left = PollTimeout(deadline);
  return Establish(std::move(fd), deadline ? left : -1);
}

}  // namespace asb::protocol
