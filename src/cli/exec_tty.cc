#include "cli/exec_tty.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/websocket.hpp>
#include <cstdio>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <thread>

#include "api/url.h"
#include "cli/client_support.h"
#include "cli/terminal.h"
#include "common/unique_fd.h"

namespace asb::cli {
namespace {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace websocket = beast::websocket;
namespace json = boost::json;
using tcp = net::ip::tcp;

// The path prefix of the server URL ("http://h:p/x/" -> "/x").
std::string UrlPrefix(const std::string& url) {
  std::string rest = url.substr(std::min(url.size(), std::string("http://").size()));
  size_t slash = rest.find('/');
  std::string prefix = slash == std::string::npos ? "" : rest.substr(slash);
  while (!prefix.empty() && prefix.back() == '/') prefix.pop_back();
  return prefix;
}

// Reads our stdin on its own thread (a file or terminal cannot be waited on by asio alike)
// and posts each piece, then EOF (an empty string), to the io_context. Joined on destruction.
class StdinPump {
 public:
  StdinPump(net::io_context& ioc, std::function<void(std::string)> on_data)
      : ioc_(ioc), on_data_(std::move(on_data)) {
    int p[2];
    if (::pipe2(p, O_CLOEXEC) == 0) {
      stop_r_ = UniqueFd(p[0]);
      stop_w_ = UniqueFd(p[1]);
    }
    thread_ = std::thread([this] { Loop(); });
  }
  ~StdinPump() {
    if (stop_w_) (void)!::write(stop_w_.get(), "x", 1);
    thread_.join();
  }

 private:
  void Loop() {
    char buf[16384];
    for (;;) {
      struct pollfd fds[2] = {{STDIN_FILENO, POLLIN, 0}, {stop_r_.get(), POLLIN, 0}};
      if (::poll(fds, 2, -1) < 0) {
        if (errno == EINTR) continue;
        return;
      }
      if (fds[1].revents) return;
      ssize_t n = ::read(STDIN_FILENO, buf, sizeof(buf));
      if (n < 0 && errno == EINTR) continue;
      std::string data = n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
      net::post(ioc_, [this, data] { on_data_(data); });
      if (n <= 0) return;
    }
  }

  net::io_context& ioc_;
  std::function<void(std::string)> on_data_;
  UniqueFd stop_r_, stop_w_;
  std::thread thread_;
};

// One terminal session over the WebSocket: a single-threaded asio loop with one read always
// pending and writes queued one at a time (what Beast allows).
class Session {
 public:
  Session(net::io_context& ioc, websocket::stream<tcp::socket>& ws, int tty_fd)
      : ioc_(ioc), ws_(ws), signals_(ioc), tty_fd_(tty_fd) {}

  void Start(bool interactive) {
    signals_.add(SIGWINCH);
    for (int s : {SIGINT, SIGTERM, SIGHUP, SIGQUIT}) signals_.add(s);
    WaitSignal();
    SendResize();
    Read();
    if (interactive) {
      pump_ = std::make_unique<StdinPump>(ioc_, [this](std::string data) {
        if (data.empty()) {
          // EOF: on a terminal ^D is a byte, so this is a closed pipe or file.
          Send(false, R"({"type":"close_stdin"})");
        } else {
          Send(true, std::move(data));
        }
      });
    }
  }

  void StopPump() { pump_.reset(); }
  Result<int> result() const {
    if (failure_) return Fail(*failure_);
    return code_;
  }

 private:
  void WaitSignal() {
    signals_.async_wait([this](const beast::error_code& ec, int sig) {
      if (ec || done_) return;
      if (sig == SIGWINCH) {
        SendResize();
      } else {
        json::object o;
        o["type"] = "signal";
        o["signal"] = sig == SIGINT    ? "SIGINT"
                      : sig == SIGTERM ? "SIGTERM"
                      : sig == SIGHUP  ? "SIGHUP"
                                       : "SIGQUIT";
        Send(false, json::serialize(o));
      }
      WaitSignal();
    });
  }

  void SendResize() {
    if (tty_fd_ < 0) return;
    auto size = TerminalSize(tty_fd_);
    if (!size) return;
    json::object o;
    o["type"] = "resize";
    o["cols"] = size->cols;
    o["rows"] = size->rows;
    Send(false, json::serialize(o));
  }

  void Send(bool binary, std::string data) {
    if (done_) return;
    queue_.push_back({binary, std::move(data)});
    if (queue_.size() == 1) WriteNext();
  }

  void WriteNext() {
    if (queue_.empty() || done_) return;
    ws_.binary(queue_.front().first);
    ws_.async_write(net::buffer(queue_.front().second),
                    [this](const beast::error_code& ec, size_t) {
                      if (ec) return;  // the read side reports how the session ended
                      queue_.pop_front();
                      WriteNext();
                    });
  }

  void Read() {
    ws_.async_read(buffer_, [this](const beast::error_code& ec, size_t) {
      if (ec) {
        if (!done_) {
          failure_ = Error::Backend("the terminal connection ended without an exit event: " +
                                    ec.message());
        }
        Finish();
        return;
      }
      std::string data = beast::buffers_to_string(buffer_.data());
      buffer_.consume(buffer_.size());
      if (ws_.got_binary()) {
        if (::write(STDOUT_FILENO, data.data(), data.size()) < 0 && errno == EPIPE) {
          failure_ = Error::FromErrno(EPIPE, "write stdout");
          Finish();
          return;
        }
      } else {
        OnEvent(data);
      }
      if (!done_) Read();
    });
  }

  void OnEvent(const std::string& text) {
    json::error_code jec;
    json::value v = json::parse(text, jec);
    if (jec || !v.is_object()) return;
    const json::object& o = v.as_object();
    std::string type = Str(o, "type");
    if (type == "skipped") {
      std::fprintf(stderr, "agent-sandbox: [%s bytes of output skipped]\r\n",
                   Str(o, "bytes").c_str());
    } else if (type == "exit") {
      int code = static_cast<int>(std::strtol(Str(o, "exit_code").c_str(), nullptr, 10));
      int sig = static_cast<int>(std::strtol(Str(o, "signal").c_str(), nullptr, 10));
      code_ = code == 0 && sig > 0 ? 128 + sig : code;
      Finish();
    } else if (type == "error") {
      failure_ =
          Error(ErrorCodeFromName(Str(o, "code")), Str(o, "code") + ": " + Str(o, "message"));
      Finish();
    }
  }

  void Finish() {
    if (done_) return;
    done_ = true;
    signals_.cancel();
    beast::error_code ignored;
    beast::get_lowest_layer(ws_).shutdown(tcp::socket::shutdown_both, ignored);
    beast::get_lowest_layer(ws_).close(ignored);
    ioc_.stop();
  }

  net::io_context& ioc_;
  websocket::stream<tcp::socket>& ws_;
  net::signal_set signals_;
  int tty_fd_;
  beast::flat_buffer buffer_;
  std::deque<std::pair<bool, std::string>> queue_;
  std::unique_ptr<StdinPump> pump_;
  bool done_ = false;
  int code_ = 0;
  std::optional<Error> failure_;
};

}  // namespace

Result<int> RunTtyExec(const TtyExec& t) {
  // As `docker exec -it`: forwarding a pipe or a file into a terminal races the program's own
  // switch to raw mode (an early ^D can arrive as a plain byte and the shell waits for ever),
  // so -i with -t needs a terminal on stdin; without -t, stdin is forwarded as a stream.
  if (t.interactive && !::isatty(STDIN_FILENO)) {
    return Fail(Error::InvalidArgument(
        "the input device is not a TTY: drop -t to forward stdin from a pipe or a file"));
  }
  int tty_fd = ::isatty(STDIN_FILENO) ? STDIN_FILENO : ::isatty(STDOUT_FILENO) ? STDOUT_FILENO : -1;
  json::object start = t.start;
  start["pty"] = true;
  if (auto size = tty_fd >= 0 ? TerminalSize(tty_fd) : std::nullopt) {
    start["cols"] = size->cols;
    start["rows"] = size->rows;
  }
  // Our own output may go to a pipe whose reader leaves: an error, not a death.
  ::signal(SIGPIPE, SIG_IGN);
  const std::string processes = SandboxPath(t.id) + "/processes";
  ASB_ASSIGN_OR_RETURN(json::value started, CallJson("POST", processes, json::serialize(start)));
  const std::string pid = Str(started.as_object(), "pid");

  ASB_ASSIGN_OR_RETURN(api::HttpClient client, MakeClient());
  net::io_context ioc;
  websocket::stream<tcp::socket> ws(ioc);
  beast::error_code ec;
  tcp::resolver resolver(ioc);
  auto endpoints = resolver.resolve(client.host(), client.port(), ec);
  if (!ec) net::connect(beast::get_lowest_layer(ws), endpoints, ec);
  if (ec) {
    return Fail(Error::Unavailable("cannot connect to " + client.host() + ":" + client.port() +
                                   ": " + ec.message()));
  }
  const std::string key = ApiKey();
  ws.set_option(websocket::stream_base::decorator([key](websocket::request_type& req) {
    if (!key.empty()) req.set(beast::http::field::authorization, "Bearer " + key);
  }));
  // The whole ring first: output the process wrote before we attached is not lost.
  const std::string target = UrlPrefix(ServerUrl()) + processes + "/" + api::PercentEncode(pid) +
                             "/ws?replay_bytes=4194304";
  websocket::response_type answer;
  ws.handshake(answer, client.host() + ":" + client.port(), target, ec);
  if (ec) {
    return Fail(Error::Backend("terminal WebSocket: " + ec.message() + " (HTTP " +
                               std::to_string(answer.result_int()) + ")"));
  }

  std::unique_ptr<RawTerminal> raw;  // restored on every return below
  if (t.interactive && ::isatty(STDIN_FILENO)) {
    ASB_ASSIGN_OR_RETURN(raw, RawTerminal::Enter(STDIN_FILENO));
  }
  Session session(ioc, ws, tty_fd);
  session.Start(t.interactive);
  ioc.run();
  session.StopPump();
  return session.result();
}

}  // namespace asb::cli
