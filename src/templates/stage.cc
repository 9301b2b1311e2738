#include "templates/stage.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/unique_fd.h"
#include "core/template_install.h"
#include "templates/rooted_dir.h"

extern char** environ;

namespace asb::templates {

namespace {

Result<int> Wait(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return FailErrno("waitpid");
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

}  // namespace

Status CopyRootfs(const std::string& src, const std::string& dst) {
  std::string a0 = "cp", a1 = "-a", a2 = "--reflink=auto", a3 = "-T", a4 = src, a5 = dst;
  char* argv[] = {a0.data(), a1.data(), a2.data(), a3.data(), a4.data(), a5.data(), nullptr};
  pid_t pid;
  if (int e = ::posix_spawnp(&pid, "cp", nullptr, nullptr, argv, environ); e != 0) {
    return Fail(Error::FromErrno(e, "spawn cp"));
  }
  ASB_ASSIGN_OR_RETURN(int code, Wait(pid));
  if (code != 0) {
    return Fail(
        Error::Internal("cp -a " + src + " " + dst + " exited with " + std::to_string(code)));
  }
  return {};
}

Status FinishUntrustedRootfs(const std::string& rootfs) {
  // The files FinishRootfs rewrites in place: a symlink there (even one that stays inside the
  // tree under the chroot) is replaced by the file itself, as resolv.conf already is.
  ASB_ASSIGN_OR_RETURN(RootedDir root, RootedDir::Open(rootfs));
  if (auto etc = root.OpenDir("etc", /*create=*/false)) {
    for (const char* name : {"hostname", "hosts"}) {
      struct stat st;
      if (::fstatat(etc->get(), name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode) &&
          ::unlinkat(etc->get(), name, 0) != 0) {
        return FailErrno(std::string("unlink /etc/") + name);
      }
    }
  }
  UniqueFd rd, wr;
  if (!MakePipe(&rd, &wr)) return FailErrno("pipe");
  pid_t pid = ::fork();
  if (pid < 0) return FailErrno("fork");
  if (pid == 0) {
    rd.Reset();
    // The report: "<code>:<host call 0|1>:<message>\0<detail>" (a host call's detail names
    // host paths; the parent keeps it the operator's, as FromErrno would have).
    std::string msg;
    auto report = [&msg](const Error& e) {
      msg = std::to_string(static_cast<int>(e.code())) + ":" + (e.from_host_call() ? "1" : "0") +
            ":" + e.message() + '\0' + e.detail();
    };
    if (::chdir(rootfs.c_str()) != 0 || ::chroot(".") != 0 || ::chdir("/") != 0) {
      report(Error::FromErrno(ErrorCode::kInternal, errno, "chroot " + rootfs));
    } else if (auto st = core::FinishRootfs("/."); !st) {
      report(st.error());
    }
    (void)WriteAll(wr.get(), msg.data(), msg.size());
    ::_exit(msg.empty() ? 0 : 1);
  }
  wr.Reset();
  std::string msg;
  char buf[4096];
  for (;;) {
    ssize_t n = ::read(rd.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    msg.append(buf, static_cast<size_t>(n));
  }
  ASB_ASSIGN_OR_RETURN(int code, Wait(pid));
  if (code == 0 && msg.empty()) return {};
  if (msg.empty())
    return Fail(Error::Internal("finishing the rootfs: child exited " + std::to_string(code)));
  const size_t colon = msg.find(':');
  const size_t nl = msg.find('\0');
  if (colon == std::string::npos || nl == std::string::npos || nl < colon + 3) {
    return Fail(Error::FromHost(ErrorCode::kInternal, "finishing the rootfs", msg));
  }
  const auto error_code = static_cast<ErrorCode>(std::atoi(msg.substr(0, colon).c_str()));
  const bool host_call = msg[colon + 1] == '1';
  const std::string message = msg.substr(colon + 3, nl - colon - 3);
  const std::string detail = msg.substr(nl + 1);
  if (host_call) return Fail(Error::FromHost(error_code, "finishing the rootfs", detail));
  return Fail(Error::WithOperatorDetail(error_code, message, detail));
}

}  // namespace asb::templates
