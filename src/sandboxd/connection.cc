#include "sandboxd/connection.h"

#include <sys/socket.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <cerrno>
#include <cstdio>

#include "protocol/messages.h"
#include "sandboxd/daemon.h"
#include "sandboxd/op_factory.h"

namespace asb::sandboxd {

using protocol::Frame;
using protocol::FrameType;
using protocol::Stream;

namespace {
constexpr size_t kReadChunk = 64 * 1024;
constexpr size_t kMaxPingPayload = 64;
constexpr uint64_t kMaxWindow = 1ull << 31;

// The integer member `key` of a small JSON object (SIGNAL, RESIZE bodies); -1 if absent or
// malformed.
int64_t JsonInt(std::string_view json, std::string_view key) {
  boost::system::error_code ec;
  boost::json::value v = boost::json::parse(json, ec);
  if (ec || !v.is_object()) return -1;
  const boost::json::value* m = v.get_object().if_contains(key);
  if (!m) return -1;
  if (m->is_int64()) return m->get_int64();
  if (m->is_uint64() && m->get_uint64() < (1ull << 62))
    return static_cast<int64_t>(m->get_uint64());
  return -1;
}
}  // namespace

Connection::Connection(Daemon& daemon, UniqueFd fd) : daemon_(daemon), fd_(std::move(fd)) {}

Connection::~Connection() {
  closed_ = true;  // operations being abandoned below must not queue frames
  if (fd_) daemon_.loop().Remove(fd_.get());
  for (auto& [id, ch] : channels_) {
    if (ch.op) ch.op->AbandonByConnection();
  }
  channels_.clear();
}

Status Connection::Start() {
  return daemon_.loop().Add(fd_.get(), EPOLLIN | EPOLLRDHUP, [this](uint32_t ev) { OnEvents(ev); });
}

void Connection::OnEvents(uint32_t events) {
  if (closed_) return;
  if (events & EPOLLOUT) Flush();
  if (closed_) return;
  if (events & (EPOLLIN | EPOLLHUP | EPOLLERR | EPOLLRDHUP)) ReadSome();
}

void Connection::ReadSome() {
  char buf[kReadChunk];
  for (int round = 0; round < 4 && !closed_; ++round) {
    ssize_t n = read(fd_.get(), buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN) return;
      Close("read error");
      return;
    }
    if (n == 0) {
      Close("host closed the connection");
      return;
    }
    decoder_.Feed(std::string_view(buf, static_cast<size_t>(n)));
    for (;;) {
      auto next = decoder_.Next();
      if (!next) {
        ProtocolError(next.error().detail());
        return;
      }
      if (!next->has_value()) break;
      HandleFrame(std::move(**next));
      if (closed_) return;
    }
    if (static_cast<size_t>(n) < sizeof buf) return;
  }
}

void Connection::SendFrame(uint32_t channel, FrameType type, Stream stream,
                           std::string_view payload) {
  if (closed_) return;
  char header[protocol::kFrameHeaderSize];
  protocol::EncodeFrameHeader(channel, type, stream, static_cast<uint32_t>(payload.size()), header);
  out_.append(header, sizeof header);
  out_.append(payload);
  ScheduleFlush();
}

void Connection::ScheduleFlush() {
  if (flush_scheduled_ || want_write_) return;
  flush_scheduled_ = true;
  daemon_.loop().Defer([this] {
    flush_scheduled_ = false;
    Flush();
  });
}

void Connection::Flush() {
  while (out_pos_ < out_.size() && !closed_) {
    // write(2), not send(2): in a microVM the connection is a virtio-serial port, not a socket
    // (SIGPIPE is ignored, so a closed socket peer is EPIPE either way).
    ssize_t n = write(fd_.get(), out_.data() + out_pos_, out_.size() - out_pos_);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN) break;
      Close("write error");
      return;
    }
    out_pos_ += static_cast<size_t>(n);
  }
  if (closed_) return;
  if (out_pos_ == out_.size()) {
    out_.clear();
    out_pos_ = 0;
  } else if (out_pos_ > (1u << 20)) {
    out_.erase(0, out_pos_);
    out_pos_ = 0;
  }
  bool want = queued() > 0;
  if (want != want_write_) {
    want_write_ = want;
    uint32_t ev = EPOLLIN | EPOLLRDHUP;
    if (want) ev |= EPOLLOUT;
    (void)daemon_.loop().Modify(fd_.get(), ev);
  }
}

void Connection::FinishChannel(uint32_t channel) {
  auto it = channels_.find(channel);
  if (it == channels_.end()) return;
  std::shared_ptr<Operation> op(std::move(it->second.op));
  channels_.erase(it);
  DestroyLater(daemon_.loop(), std::move(op));
}

void Connection::GrantedStdin(uint32_t channel, uint32_t bytes) {
  auto it = channels_.find(channel);
  if (it != channels_.end()) it->second.stdin_window += bytes;
}

void Connection::HandleFrame(Frame&& f) {
  if (!handshake_done_) {
    if (f.type != FrameType::kHello || f.channel != 0) {
      ProtocolError("expected HELLO first");
      return;
    }
    HandleHello(f);
    return;
  }
  bool has_stream =
      f.type == FrameType::kData || f.type == FrameType::kEof || f.type == FrameType::kWindow;
  if (!has_stream && f.stream != Stream::kNone) {
    ProtocolError("stream set on a frame type without one");
    return;
  }
  switch (f.type) {
    case FrameType::kHello:
      ProtocolError("second HELLO");
      return;
    case FrameType::kPing:
      if (f.payload.size() > kMaxPingPayload) {
        ProtocolError("PING payload over 64 bytes");
        return;
      }
      SendFrame(f.channel, FrameType::kPong, Stream::kNone, f.payload);
      return;
    case FrameType::kPong:
      return;
    case FrameType::kOpen:
      HandleOpen(std::move(f));
      return;
    case FrameType::kInfo:
    case FrameType::kResult:
    case FrameType::kError:
      ProtocolError(std::string(protocol::FrameTypeName(f.type)) + " sent by the host");
      return;
    default:
      break;
  }
  if ((f.type == FrameType::kData || f.type == FrameType::kEof) && f.stream != Stream::kStdin) {
    ProtocolError("host DATA/EOF on a stream other than stdin");
    return;
  }
  if (f.type == FrameType::kWindow && f.stream != Stream::kStdout && f.stream != Stream::kStderr) {
    ProtocolError("host WINDOW on a stream other than stdout/stderr");
    return;
  }
  auto it = channels_.find(f.channel);
  if (it == channels_.end()) return;  // finished or never opened: ignore (section 3)
  Operation& op = *it->second.op;
  switch (f.type) {
    case FrameType::kData: {
      if (f.payload.empty()) return;
      if (f.payload.size() > it->second.stdin_window) {
        ProtocolError("stdin window overrun");
        return;
      }
      it->second.stdin_window -= f.payload.size();
      op.OnData(std::move(f.payload));
      return;
    }
    case FrameType::kEof:
      op.OnEof();
      return;
    case FrameType::kWindow: {
      auto inc = protocol::DecodeWindowIncrement(f.payload);
      if (!inc || *inc > kMaxWindow) {
        ProtocolError("bad WINDOW");
        return;
      }
      op.OnWindow(f.stream, *inc);
      return;
    }
    case FrameType::kSignal: {
      int64_t signo = JsonInt(f.payload, "signal");
      if (signo > 0 && signo < 65) op.OnSignal(static_cast<int>(signo));
      return;
    }
    case FrameType::kResize: {
      int64_t cols = JsonInt(f.payload, "cols"), rows = JsonInt(f.payload, "rows");
      if (cols > 0 && rows > 0 && cols < 65536 && rows < 65536) {
        op.OnResize(static_cast<uint16_t>(cols), static_cast<uint16_t>(rows));
      }
      return;
    }
    case FrameType::kCancel:
      op.OnCancel();
      return;
    default:
      return;
  }
}

void Connection::HandleHello(const Frame& f) {
  auto hello = protocol::DecodeHello(f.payload);
  if (!hello) {
    ProtocolError("malformed HELLO: " + hello.error().detail());
    return;
  }
  uint32_t hi = std::min(hello->max_version, protocol::kProtocolVersion);
  uint32_t lo = std::max(hello->min_version, protocol::kMinProtocolVersion);
  if (hi < lo) {
    std::string msg = "protocol: no common version: host speaks " +
                      std::to_string(hello->min_version) + ".." +
                      std::to_string(hello->max_version) + ", sandboxd speaks " +
                      std::to_string(protocol::kMinProtocolVersion) + ".." +
                      std::to_string(protocol::kProtocolVersion);
    ProtocolError(msg);
    return;
  }
  protocol::Hello answer;
  answer.min_version = protocol::kMinProtocolVersion;
  answer.max_version = protocol::kProtocolVersion;
  answer.version = hi;
  answer.software = std::string("sandboxd ") + ASB_VERSION;
  SendFrame(0, FrameType::kHello, Stream::kNone, protocol::EncodeHello(answer));
  handshake_done_ = true;
}

void Connection::HandleOpen(Frame&& f) {
  if (f.channel == 0 || f.channel % 2 == 0 || f.channel <= last_channel_) {
    ProtocolError("OPEN with a bad channel id " + std::to_string(f.channel));
    return;
  }
  last_channel_ = f.channel;
  auto refuse = [&](const Error& e) {
    SendFrame(f.channel, FrameType::kError, Stream::kNone,
              protocol::EncodeWireError(protocol::ToWireError(e)));
  };
  if (channels_.size() >= kMaxChannels) {
    refuse(Error::LimitExceeded("too many concurrent operations (max 1024)"));
    return;
  }
  auto op = MakeOperation(daemon_, *this, f.channel, f.payload);
  if (!op) {
    refuse(op.error());
    return;
  }
  Operation* raw = op->get();
  channels_[f.channel].op = std::move(*op);
  raw->Start();
}

void Connection::ProtocolError(std::string_view why) {
  if (closed_) return;
  fprintf(stderr, "sandboxd: connection: %.*s\n", static_cast<int>(why.size()), why.data());
  Error e = Error::Backend(std::string(why.substr(0, 9) == "protocol:" ? "" : "protocol: ") +
                           std::string(why));
  SendFrame(0, FrameType::kError, Stream::kNone,
            protocol::EncodeWireError(protocol::ToWireError(e)));
  Flush();
  Close(why);
}

void Connection::Close(std::string_view why) {
  if (closed_) return;
  closed_ = true;
  daemon_.loop().Remove(fd_.get());
  shutdown(fd_.get(), SHUT_RDWR);
  for (auto& [id, ch] : channels_) {
    if (ch.op) ch.op->AbandonByConnection();
  }
  // Keep the operations alive until the deferred destruction (they may be on the stack).
  auto ops = std::make_shared<std::map<uint32_t, ChannelState>>(std::move(channels_));
  channels_.clear();
  DestroyLater(daemon_.loop(), std::move(ops));
  daemon_.ConnectionClosed(this);
}

}  // namespace asb::sandboxd
