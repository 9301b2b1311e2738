#include "isolation/net/command.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

#include "common/unique_fd.h"

extern char** environ;

namespace asb::isolation::net {

std::string FindTool(std::string_view name) {
  for (const char* dir : {"/usr/sbin/", "/sbin/", "/usr/bin/", "/bin/"}) {
    std::string p = std::string(dir) + std::string(name);
    if (::access(p.c_str(), X_OK) == 0) return p;
  }
  return {};
}

Result<std::string> RunTool(const std::vector<std::string>& argv, std::string_view input) {
  if (argv.empty() || argv[0].empty() || argv[0][0] != '/') {
    return Fail(Error::Internal("RunTool needs an absolute path"));
  }
  UniqueFd in(::memfd_create("asb-net-input", MFD_CLOEXEC));
  if (!in) return FailErrno("memfd_create");
  for (size_t off = 0; off < input.size();) {
    ssize_t n = ::write(in.get(), input.data() + off, input.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return FailErrno("write tool input");
    off += static_cast<size_t>(n);
  }
  if (::lseek(in.get(), 0, SEEK_SET) != 0) return FailErrno("lseek tool input");
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return FailErrno("pipe");
  UniqueFd rd(fds[0]), wr(fds[1]);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, in.get(), 0);
  posix_spawn_file_actions_adddup2(&fa, wr.get(), 1);
  posix_spawn_file_actions_adddup2(&fa, wr.get(), 2);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  int rc = ::posix_spawn(&pid, args[0], &fa, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) return Fail(Error::FromErrno(ErrorCode::kBackend, rc, "spawn " + argv[0]));
  wr.Reset();
  std::string out;
  char buf[2048];
  for (;;) {
    ssize_t n = ::read(rd.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    if (out.size() < 16384) out.append(buf, static_cast<size_t>(n));
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return FailErrno("waitpid " + argv[0]);
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::string what = argv[0].substr(argv[0].rfind('/') + 1);
    if (argv.size() > 1) what += " " + argv[1];
    while (!out.empty() && out.back() == '\n') out.pop_back();
    return Fail(Error(ErrorCode::kBackend,
                      what + ": " +
                          (WIFEXITED(status) ? "exit " + std::to_string(WEXITSTATUS(status))
                                             : std::string("killed")) +
                          ": " + out.substr(0, 600)));
  }
  return out;
}

}  // namespace asb::isolation::net
