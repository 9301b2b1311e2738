#include "sandboxd/sudo_client.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <set>
#include <string_view>

#include "common/unique_fd.h"
#include "sandboxd/fd_passing.h"

extern char** environ;

namespace asb::sandboxd {

namespace {

// Debian's sudoers: `Defaults secure_path=...`.
constexpr char kSecurePath[] = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

constexpr char kUsage[] =
    "usage: sudo [-AbEHknPSis] [-u user] [-g group] [-D directory] [--preserve-env[=list]]\n"
    "            [--] [NAME=value]... command [arg...]\n"
    "       sudo -v | -k | -K | -l | -V | -h\n"
    "In this sandbox sudo never asks for a password: sandboxd runs the command as root (or\n"
    "-u sandbox), as confined as any root command of the sandbox.\n";

// Names Debian's sudo keeps through env_reset (sudo's own env_keep list, less what means
// nothing here), besides LC_*.
bool KeptThroughReset(std::string_view name) {
  static const std::set<std::string_view> kKept = {
      "TERM", "COLORTERM", "COLORS", "LS_COLORS", "DISPLAY", "XAUTHORITY", "XAUTHORIZATION",
      "LANG", "LANGUAGE",  "TZ",     "PS1",       "PS2",     "HOSTNAME",   "XDG_CURRENT_DESKTOP"};
  return kKept.count(name) != 0 || name.substr(0, 3) == "LC_";
}

bool ValidEnvName(std::string_view name) {
  if (name.empty() || (name[0] >= '0' && name[0] <= '9')) return false;
  for (char c : name) {
    if (!(c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))) {
      return false;
    }
  }
  return true;
}

std::optional<uint32_t> ParseId(std::string_view s) {
  if (!s.empty() && s[0] == '#') s.remove_prefix(1);
  uint32_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

// sudo(8) on -s/-i with a command: every character but letters, digits, '_', '-' and '$' is
// escaped with a backslash, and the arguments are joined with spaces, for the shell's -c.
std::string ShellEscapedCommand(const std::vector<std::string>& args) {
  std::string out;
  for (const auto& a : args) {
    if (!out.empty()) out.push_back(' ');
    for (char c : a) {
      const bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                         (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '$';
      if (!plain) out.push_back('\\');
      out.push_back(c);
    }
  }
  return out;
}

Error Usage(std::string what) { return Error::InvalidArgument(std::move(what)); }

}  // namespace

std::optional<SudoAccount> FindSudoAccount(const std::string& passwd, const std::string& spec) {
  std::optional<uint32_t> want_uid = ParseId(spec);
  size_t at = 0;
  while (at < passwd.size()) {
    size_t nl = passwd.find('\n', at);
    if (nl == std::string::npos) nl = passwd.size();
    std::string_view line(passwd.data() + at, nl - at);
    at = nl + 1;
    std::vector<std::string_view> f;
    for (size_t p = 0;;) {
      size_t c = line.find(':', p);
      f.push_back(line.substr(p, c == std::string_view::npos ? std::string_view::npos : c - p));
      if (c == std::string_view::npos) break;
      p = c + 1;
    }
    if (f.size() < 7) continue;
    std::optional<uint32_t> uid = ParseId(f[2]), gid = ParseId(f[3]);
    if (!uid || !gid || f[2][0] == '#') continue;
    if (want_uid ? *uid != *want_uid : f[0] != spec) continue;
    if (*uid != 0 && *uid != 1000) return std::nullopt;  // nobody else may be run as
    return SudoAccount{std::string(f[0]), *uid, *gid, std::string(f[5]), std::string(f[6])};
  }
  // A rootfs whose passwd lacks them still has both users (ns backend and template builder).
  if (spec == "root" || (want_uid && *want_uid == 0)) {
    return SudoAccount{"root", 0, 0, "/root", "/bin/sh"};
  }
  if (spec == "sandbox" || (want_uid && *want_uid == 1000)) {
    return SudoAccount{"sandbox", 1000, 1000, "/workspace", "/bin/sh"};
  }
  return std::nullopt;
}

Result<SudoInvocation> ParseSudoCommandLine(const std::vector<std::string>& argv,
                                            const std::vector<std::string>& env,
                                            const std::string& passwd, uint32_t caller_uid,
                                            const std::string& cwd) {
  SudoInvocation inv;
  std::string user = "root", group, chdir;
  bool preserve_all = false, login = false, shell = false, list = false, validate = false,
       forget = false, help = false, version = false;
  std::set<std::string> preserve;
  size_t i = 1;
  auto set_value = [&](std::string_view option, const std::string& value) {
    if (option == "u" || option == "user") {
      user = value;
    } else if (option == "g" || option == "group") {
      group = value;
    } else if (option == "D" || option == "chdir") {
      chdir = value;
    }  // the rest (prompt, close-from, timeout, host, role, type, other-user) mean nothing here
  };
  for (; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    if (a == "--") {
      ++i;
      break;
    }
    if (a.size() > 2 && a.compare(0, 2, "--") == 0) {
      const size_t eq = a.find('=');
      const std::string name = a.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
      const std::optional<std::string> value =
          eq == std::string::npos ? std::nullopt : std::optional<std::string>(a.substr(eq + 1));
      static const std::set<std::string> kWithValue = {
          "user", "group",      "chdir", "prompt", "close-from", "command-timeout",
          "host", "other-user", "role",  "type"};
      if (kWithValue.count(name)) {
        std::string v;
        if (value) {
          v = *value;
        } else if (i + 1 < argv.size()) {
          v = argv[++i];
        } else {
          return Fail(Usage("option '--" + name + "' requires an argument"));
        }
        set_value(name, v);
      } else if (name == "preserve-env") {
        if (!value) {
          preserve_all = true;
        } else {
          for (size_t p = 0; p <= value->size();) {
            size_t c = value->find(',', p);
            if (c == std::string::npos) c = value->size();
            if (c > p) preserve.insert(value->substr(p, c - p));
            p = c + 1;
          }
        }
      } else if (value) {
        return Fail(Usage("option '--" + name + "' doesn't allow an argument"));
      } else if (name == "login") {
        login = true;
      } else if (name == "shell") {
        shell = true;
      } else if (name == "background") {
        inv.background = true;
      } else if (name == "list") {
        list = true;
      } else if (name == "validate") {
        validate = true;
      } else if (name == "reset-timestamp" || name == "remove-timestamp") {
        forget = true;
      } else if (name == "help") {
        help = true;
      } else if (name == "version") {
        version = true;
      } else if (name == "non-interactive" || name == "set-home" || name == "stdin" ||
                 name == "askpass" || name == "bell" || name == "preserve-groups") {
      } else {
        return Fail(Usage("unrecognized option '" + a + "'"));
      }
      continue;
    }
    if (a.size() < 2 || a[0] != '-') break;
    for (size_t j = 1; j < a.size(); ++j) {
      const char c = a[j];
      if (std::string_view("ugDpCTrtU").find(c) != std::string_view::npos) {
        std::string v;
        if (j + 1 < a.size()) {
          v = a.substr(j + 1);
        } else if (i + 1 < argv.size()) {
          v = argv[++i];
        } else {
          return Fail(Usage(std::string("option requires an argument -- '") + c + "'"));
        }
        set_value(std::string_view(&c, 1), v);
        break;
      }
      switch (c) {
        case 'E':
          preserve_all = true;
          break;
        case 'i':
          login = true;
          break;
        case 's':
          shell = true;
          break;
        case 'b':
          inv.background = true;
          break;
        case 'l':
          list = true;
          break;
        case 'v':
          validate = true;
          break;
        case 'k':
        case 'K':
          forget = true;
          break;
        case 'h':
          help = true;
          break;
        case 'V':
          version = true;
          break;
        case 'A':
        case 'B':
        case 'H':
        case 'n':
        case 'N':
        case 'P':
        case 'S':
          break;
        default:
          return Fail(Usage(std::string("invalid option -- '") + c + "'"));
      }
    }
  }
  std::vector<std::string> rest(argv.begin() + static_cast<std::ptrdiff_t>(i), argv.end());
  if (version) {
    inv.action = SudoInvocation::Action::kVersion;
    return inv;
  }
  if (help) {
    inv.action = SudoInvocation::Action::kHelp;
    return inv;
  }
  if (list) {
    inv.action = SudoInvocation::Action::kList;
    return inv;
  }
  // NAME=value before the command sets it in the command's environment.
  std::vector<std::pair<std::string, std::string>> assignments;
  while (!rest.empty()) {
    const size_t eq = rest.front().find('=');
    if (eq == std::string::npos || !ValidEnvName(std::string_view(rest.front()).substr(0, eq))) {
      break;
    }
    assignments.emplace_back(rest.front().substr(0, eq), rest.front().substr(eq + 1));
    rest.erase(rest.begin());
  }
  if (rest.empty() && !login && !shell) {
    if (validate || forget) {
      inv.action = SudoInvocation::Action::kNothing;
      return inv;
    }
    return Fail(Usage("a command is required"));
  }

  std::optional<SudoAccount> target = FindSudoAccount(passwd, user);
  if (!target) {
    return Fail(Usage("unknown user " + user + " (this sandbox's users: root and sandbox)"));
  }
  if (!group.empty()) {
    std::optional<uint32_t> gid = ParseId(group);
    const bool matches =
        gid ? *gid == target->gid : (group == (target->uid == 0 ? "root" : "sandbox"));
    if (!matches) {
      return Fail(Usage("-g " + group + ": commands run with their user's own group here"));
    }
  }
  std::optional<SudoAccount> caller = FindSudoAccount(passwd, std::to_string(caller_uid));
  const std::string caller_name = caller ? caller->name : std::to_string(caller_uid);

  std::map<std::string, std::string> vars;
  for (const auto& e : env) {
    const size_t eq = e.find('=');
    if (eq == std::string::npos || eq == 0) continue;
    const std::string name = e.substr(0, eq);
    if (preserve_all || KeptThroughReset(name) || preserve.count(name)) {
      vars[name] = e.substr(eq + 1);
    }
  }
  vars["PATH"] = kSecurePath;
  if (!preserve_all || !vars.count("HOME")) vars["HOME"] = target->home;
  vars["USER"] = vars["LOGNAME"] = vars["USERNAME"] = target->name;
  vars["SHELL"] = target->shell.empty() ? "/bin/sh" : target->shell;
  vars["MAIL"] = "/var/mail/" + target->name;
  vars["SUDO_USER"] = caller_name;
  vars["SUDO_UID"] = std::to_string(caller_uid);
  vars["SUDO_GID"] = std::to_string(caller ? caller->gid : caller_uid);

  SudoRequest& r = inv.request;
  r.as_root = target->uid == 0;
  if (login || shell) {
    std::string sh = vars["SHELL"];
    if (shell && !login) {
      for (const auto& e : env) {
        if (e.rfind("SHELL=", 0) == 0 && e.size() > 6) sh = e.substr(6);
      }
    }
    r.argv = {sh};
    if (login) r.argv.push_back("-l");
    if (!rest.empty()) {
      r.argv.push_back("-c");
      r.argv.push_back(ShellEscapedCommand(rest));
    }
  } else {
    r.argv = rest;
  }
  std::string joined;
  for (const auto& a : rest.empty() ? r.argv : rest) joined += (joined.empty() ? "" : " ") + a;
  vars["SUDO_COMMAND"] = joined.substr(0, 4096);
  for (const auto& [k, v] : assignments) vars[k] = v;
  for (const auto& [k, v] : vars) r.env.push_back(k + "=" + v);

  r.cwd = login ? target->home : cwd;
  if (!chdir.empty()) r.cwd = chdir[0] == '/' ? chdir : cwd + "/" + chdir;
  if (r.cwd.empty() || r.cwd[0] != '/') r.cwd = "/";
  return inv;
}

namespace {

std::string ReadPasswd() {
  std::string out;
  UniqueFd fd(open("/etc/passwd", O_RDONLY | O_CLOEXEC));
  if (!fd) return out;
  char buf[8192];
  ssize_t n;
  while (out.size() < (1u << 20) && (n = read(fd.get(), buf, sizeof buf)) > 0) {
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

int Die(const std::string& what) {
  fprintf(stderr, "sudo: %s\n", what.c_str());
  return 1;
}

// Connects to this sandbox's sandboxd and sends the request with fds 0-2.
Result<UniqueFd> SendRequest(const std::string& bytes) {
  UniqueFd sock(socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0));
  if (!sock) return FailErrno("socket");
  int sndbuf = static_cast<int>(kSudoRequestMax + 4096);
  (void)setsockopt(sock.get(), SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof sndbuf);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  const size_t len = strlen(kSudoSocketName);
  memcpy(addr.sun_path + 1, kSudoSocketName, len);
  const socklen_t addr_len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + len);
  if (connect(sock.get(), reinterpret_cast<sockaddr*>(&addr), addr_len) != 0) {
    return FailErrno(
        "this sandbox offers no sudo (an older agent-sandbox, or a backend without "
        "it): connect");
  }
  if (SendWithFds(sock.get(), bytes, {0, 1, 2}, 0) < 0) {
    const int err = errno;
    if (err == EMSGSIZE) {
      return Fail(Error::InvalidArgument("the command line and environment are too long"));
    }
    // sandboxd refused the connection before reading it (too many at once): its reason is
    // still queued for us.
    char why[kSudoMessageMax + 1];
    ssize_t got = recv(sock.get(), why, kSudoMessageMax, MSG_DONTWAIT);
    if (got > 6 && memcmp(why, "error ", 6) == 0) {
      return Fail(Error::Unavailable(std::string(why + 6, static_cast<size_t>(got - 6))));
    }
    return Fail(Error::FromErrno(err, "send"));
  }
  return sock;
}

// Ends this process the way the command ended: by the same signal when it was killed.
[[noreturn]] void DieBySignal(int sig) {
  signal(sig, SIG_DFL);
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, sig);
  sigprocmask(SIG_UNBLOCK, &set, nullptr);
  kill(getpid(), sig);
  _exit(128 + sig);
}

}  // namespace

int SudoMain(int argc, char** argv) {
  std::vector<std::string> args(argv, argv + argc);
  std::vector<std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) env.emplace_back(*e);
  char cwd_buf[4096];
  const std::string cwd = getcwd(cwd_buf, sizeof cwd_buf) ? cwd_buf : "/";
  const std::string passwd = ReadPasswd();
  auto inv = ParseSudoCommandLine(args, env, passwd, getuid(), cwd);
  if (!inv) {
    fprintf(stderr, "sudo: %s\n%s", inv.error().detail().c_str(), kUsage);
    return 1;
  }
  switch (inv->action) {
    case SudoInvocation::Action::kVersion:
      printf("Sudo version 1.9 (agent-sandbox: sandboxd runs the command)\n");
      return 0;
    case SudoInvocation::Action::kHelp:
      fputs(kUsage, stdout);
      return 0;
    case SudoInvocation::Action::kList: {
      auto me = FindSudoAccount(passwd, std::to_string(getuid()));
      char host[256] = "sandbox";
      gethostname(host, sizeof host - 1);
      printf("User %s may run the following commands on %s:\n    (ALL : ALL) NOPASSWD: ALL\n",
             me ? me->name.c_str() : "?", host);
      return 0;
    }
    case SudoInvocation::Action::kNothing:
      return 0;
    case SudoInvocation::Action::kRun:
      break;
  }
  const std::string bytes = EncodeSudoRequest(inv->request);
  if (bytes.size() > kSudoRequestMax) {
    return Die("the command line and environment are too long (" + std::to_string(bytes.size()) +
               " bytes; at most " + std::to_string(kSudoRequestMax) + ")");
  }
  if (inv->background) {
    pid_t pid = fork();
    if (pid < 0) return Die(std::string("fork: ") + strerror(errno));
    if (pid > 0) return 0;
  }
  // Signals that would end us are forwarded instead, so the command gets them.
  sigset_t forwarded;
  sigemptyset(&forwarded);
  for (int sig : {SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGUSR1, SIGUSR2, SIGALRM, SIGWINCH}) {
    sigaddset(&forwarded, sig);
  }
  sigprocmask(SIG_BLOCK, &forwarded, nullptr);
  UniqueFd sigfd(signalfd(-1, &forwarded, SFD_CLOEXEC | SFD_NONBLOCK));
  auto sock = SendRequest(bytes);
  if (!sock) return Die(sock.error().detail());
  pollfd pfds[2] = {{sock->get(), POLLIN, 0}, {sigfd.get(), POLLIN, 0}};
  for (;;) {
    if (poll(pfds, sigfd ? 2 : 1, -1) < 0) {
      if (errno == EINTR) continue;
      return Die(std::string("poll: ") + strerror(errno));
    }
    if (sigfd && (pfds[1].revents & POLLIN)) {
      signalfd_siginfo si;
      while (read(sigfd.get(), &si, sizeof si) == static_cast<ssize_t>(sizeof si)) {
        const std::string m = "signal " + std::to_string(si.ssi_signo);
        (void)send(sock->get(), m.data(), m.size(), MSG_NOSIGNAL);
      }
    }
    if (pfds[0].revents & (POLLIN | POLLHUP | POLLERR)) {
      char buf[kSudoMessageMax + 1];
      ssize_t n = recv(sock->get(), buf, kSudoMessageMax, 0);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return Die("sandboxd ended the command without saying how");
      std::string_view m(buf, static_cast<size_t>(n));
      int value = 0;
      auto number_after = [&](std::string_view prefix) -> bool {
        if (m.substr(0, prefix.size()) != prefix) return false;
        auto [end, ec] = std::from_chars(m.data() + prefix.size(), m.data() + m.size(), value);
        return ec == std::errc() && end == m.data() + m.size();
      };
      if (number_after("exit ")) return value;
      if (number_after("signal ")) DieBySignal(value);
      if (m.substr(0, 6) == "error ") return Die(std::string(m.substr(6)));
      return Die("an answer sandboxd should not give: " + std::string(m.substr(0, 64)));
    }
  }
}

}  // namespace asb::sandboxd
