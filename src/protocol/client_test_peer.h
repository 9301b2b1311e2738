// Test-only: a small fake sandboxd that speaks the real wire format (FrameDecoder/EncodeFrame)
// on the other end of a socketpair, so client_test.cc and client_ops_test.cc exercise the real
// host client against a peer whose behaviour each test scripts.
//
// The fake follows the protocol's flow-control rules on its side: SendData() never exceeds the
// window the host granted (it blocks until WINDOW frames arrive), and with auto_credit_stdin it
// returns stdin credit as soon as bytes arrive (as a sandboxd whose command reads promptly would).
#pragma once

#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/unique_fd.h"
#include "protocol/client.h"
#include "protocol/frame.h"
#include "protocol/messages.h"

namespace asb::protocol::testing {

class FakeSandboxd {
 public:
  /// Called with the host's HELLO; the default answers version 1 as "fake-sandboxd 1".
  std::function<void(FakeSandboxd&, const Hello&)> on_hello = [](FakeSandboxd& d, const Hello&) {
    d.Send(0, FrameType::kHello, Stream::kNone, EncodeHello(Hello{1, 1, 1, "fake-sandboxd 1"}));
  };
  /// Called on a worker thread of its own for every OPEN (channel id, OPEN body).
  std::function<void(FakeSandboxd&, uint32_t, const std::string&)> on_open;
  /// Return stdin credit as soon as stdin DATA arrives.
  std::atomic<bool> auto_credit_stdin{true};

  explicit FakeSandboxd(UniqueFd fd) : fd_(std::move(fd)) {}
  ~FakeSandboxd() { Stop(); }

  void Start() {
    reader_ = std::thread([this] { Loop(); });
  }

  /// Shuts the socket down (the host sees the connection drop) and joins every thread.
  void Stop() {
    Disconnect();
    if (reader_.joinable()) reader_.join();
    std::vector<std::thread> workers;
    {
      std::lock_guard<std::mutex> l(mu_);
      workers.swap(workers_);
    }
    for (auto& t : workers) t.join();
  }

  /// Drops the connection without joining (callable from worker threads).
  void Disconnect() {
    {
      std::lock_guard<std::mutex> l(mu_);
      stopped_ = true;
    }
    cv_.notify_all();
    ::shutdown(fd_.get(), SHUT_RDWR);
  }

  bool Send(uint32_t channel, FrameType type, Stream stream, std::string payload) {
    std::string bytes;
    EncodeFrame(Frame{channel, type, stream, std::move(payload)}, &bytes);
    return SendRaw(bytes);
  }

  bool SendRaw(std::string_view bytes) {
    std::lock_guard<std::mutex> w(write_mu_);
    while (!bytes.empty()) {
      ssize_t n = ::send(fd_.get(), bytes.data(), bytes.size(), MSG_NOSIGNAL);  // no SIGPIPE
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      bytes.remove_prefix(static_cast<size_t>(n));
    }
    return true;
  }

  /// Sends `data` on (channel, stream) in chunks of at most kDataChunkSize, never exceeding the
  /// window the host granted. Returns false if the connection stopped first.
  bool SendData(uint32_t channel, Stream stream, std::string_view data) {
    size_t off = 0;
    while (off < data.size()) {
      size_t n;
      {
        std::unique_lock<std::mutex> l(mu_);
        uint64_t& credit = CreditLocked(channel, stream);
        cv_.wait(l, [&] { return stopped_ || credit > 0; });
        if (stopped_) return false;
        n = std::min<size_t>({data.size() - off, kDataChunkSize, static_cast<size_t>(credit)});
        credit -= n;
        sent_[{channel, stream}] += n;
      }
      if (!Send(channel, FrameType::kData, stream, std::string(data.substr(off, n)))) return false;
      off += n;
    }
    return true;
  }

  /// Bytes the fake has sent on (channel, stream) so far.
  uint64_t SentBytes(uint32_t channel, Stream stream) {
    std::lock_guard<std::mutex> l(mu_);
    return sent_[{channel, stream}];
  }

  /// Waits (up to timeout_ms) for a received frame matching `pred`; returns a copy.
  std::optional<Frame> WaitFrame(const std::function<bool(const Frame&)>& pred,
                                 int timeout_ms = 5000) {
    std::unique_lock<std::mutex> l(mu_);
    std::optional<Frame> found;
    cv_.wait_for(l, std::chrono::milliseconds(timeout_ms), [&] {
      for (const Frame& f : received_) {
        if (pred(f)) {
          found = f;
          return true;
        }
      }
      return false;
    });
    return found;
  }

  /// Waits until `cond()` (evaluated under the fake's lock) holds; false on timeout.
  bool WaitUntil(const std::function<bool()>& cond, int timeout_ms = 5000) {
    std::unique_lock<std::mutex> l(mu_);
    return cv_.wait_for(l, std::chrono::milliseconds(timeout_ms), cond);
  }

  std::vector<Frame> Received() {
    std::lock_guard<std::mutex> l(mu_);
    return received_;
  }

  /// Stdin bytes received on `channel`, concatenated. Call under WaitUntil or after the fact.
  std::string StdinOf(uint32_t channel) {
    std::lock_guard<std::mutex> l(mu_);
    return StdinOfLocked(channel);
  }
  std::string StdinOfLocked(uint32_t channel) {
    std::string s;
    for (const Frame& f : received_) {
      if (f.channel == channel && f.type == FrameType::kData) s += f.payload;
    }
    return s;
  }
  bool HasFrameLocked(uint32_t channel, FrameType type) {
    for (const Frame& f : received_) {
      if (f.channel == channel && f.type == type) return true;
    }
    return false;
  }

  /// The host's HELLO body as received.
  std::string host_hello() {
    std::lock_guard<std::mutex> l(mu_);
    return host_hello_;
  }

 private:
  uint64_t& CreditLocked(uint32_t channel, Stream stream) {
    auto it = credit_.find({channel, stream});
    if (it == credit_.end())
      it = credit_.emplace(std::make_pair(channel, stream), kInitialWindow).first;
    return it->second;
  }

  void Loop() {
    FrameDecoder dec;
    char buf[65536];
    bool hello_seen = false;
    while (true) {
      ssize_t n = ::recv(fd_.get(), buf, sizeof(buf), 0);
      if (n <= 0) break;
      dec.Feed(std::string_view(buf, static_cast<size_t>(n)));
      while (true) {
        auto next = dec.Next();
        if (!next || !next->has_value()) break;
        Frame f = std::move(**next);
        if (!hello_seen) {
          hello_seen = true;
          {
            std::lock_guard<std::mutex> l(mu_);
            host_hello_ = f.payload;
          }
          auto h = DecodeHello(f.payload);
          if (on_hello) on_hello(*this, h ? *h : Hello{});
          continue;
        }
        Handle(f);
      }
    }
    {
      std::lock_guard<std::mutex> l(mu_);
      stopped_ = true;
    }
    cv_.notify_all();
  }

  void Handle(const Frame& f) {
    {
      std::lock_guard<std::mutex> l(mu_);
      received_.push_back(f);
      if (f.type == FrameType::kWindow) {
        auto inc = DecodeWindowIncrement(f.payload);
        if (inc) CreditLocked(f.channel, f.stream) += *inc;
      }
    }
    cv_.notify_all();
    if (f.type == FrameType::kOpen && on_open) {
      std::lock_guard<std::mutex> l(mu_);
      workers_.emplace_back([this, ch = f.channel, body = f.payload] { on_open(*this, ch, body); });
    } else if (f.type == FrameType::kData && f.stream == Stream::kStdin && auto_credit_stdin) {
      Send(f.channel, FrameType::kWindow, Stream::kStdin,
           EncodeWindowIncrement(static_cast<uint32_t>(f.payload.size())));
    } else if (f.type == FrameType::kPing && f.channel == 0) {
      Send(0, FrameType::kPong, Stream::kNone, f.payload);
    }
  }

  UniqueFd fd_;
  std::mutex write_mu_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopped_ = false;
  std::string host_hello_;
  std::vector<Frame> received_;
  std::map<std::pair<uint32_t, Stream>, uint64_t> credit_;
  std::map<std::pair<uint32_t, Stream>, uint64_t> sent_;
  std::vector<std::thread> workers_;
  std::thread reader_;
};

/// A connected host Connection and FakeSandboxd on a socketpair. `setup` configures the fake
/// before it starts. The fake is declared first so that the connection is destroyed first.
struct Pair {
  std::unique_ptr<FakeSandboxd> fake;
  std::shared_ptr<Connection> conn;
};

inline Result<Pair> MakePair(const std::function<void(FakeSandboxd&)>& setup = {},
                             int64_t timeout_ms = 5000) {
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) return FailErrno("socketpair");
  UniqueFd host(sv[0]);
  Pair p;
  p.fake = std::make_unique<FakeSandboxd>(UniqueFd(sv[1]));
  if (setup) setup(*p.fake);
  p.fake->Start();
  ASB_ASSIGN_OR_RETURN(p.conn, Connection::Establish(std::move(host), timeout_ms));
  return p;
}

}  // namespace asb::protocol::testing
