// sandboxd: the in-sandbox daemon, PID 1 of every sandbox. See options.h for the command line
// and daemon.h for what it does; this file only wires them together.
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "isolation/seccomp/seccomp_policy.h"
#include "sandboxd/daemon.h"
#include "sandboxd/event_loop.h"
#include "sandboxd/exec_child.h"
#include "sandboxd/options.h"
#include "sandboxd/spare_child.h"
#include "sandboxd/sudo_client.h"

namespace {

int Fatal(const asb::Error& e) {
  fprintf(stderr, "sandboxd: %s\n", e.ToString().c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace asb::sandboxd;
  // Keep 0-2 occupied so that no pipe or socket of ours ever lands there.
  for (int fd = 0; fd < 3; ++fd) {
    if (fcntl(fd, F_GETFD) < 0) open("/dev/null", O_RDWR);
  }
  // Under the name sudo (the backends bind this binary over the template's /usr/bin/sudo) it
  // is the sandbox's sudo (sudo_client.h).
  const char* slash = strrchr(argv[0], '/');
  if (strcmp(slash ? slash + 1 : argv[0], "sudo") == 0) return SudoMain(argc, argv);
  SetProcessArgv(argc, argv);
  auto options = ParseCommandLine(std::vector<std::string>(argv, argv + argc));
  if (!options) return Fatal(options.error());
  if (options->config_fd >= 0) {
    auto st = ReadConfigFd(options->config_fd, &*options);
    close(options->config_fd);
    if (!st) return Fatal(st.error());
  }
  // The work cgroups' fds are for commands' children to use before exec, never to inherit.
  for (int fd : options->work_cgroup_fds) {
    if (fcntl(fd, F_SETFD, FD_CLOEXEC) != 0) {
      return Fatal(asb::Error::FromErrno(errno, "--work-cgroup-fd"));
    }
  }
  // Many concurrent execs hold several pipes each: use the whole hard limit of open files;
  // commands get the original soft limit back.
  rlimit nofile;
  if (getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur < nofile.rlim_max) {
    SetCommandNofileLimit(nofile.rlim_cur);
    nofile.rlim_cur = nofile.rlim_max;
    setrlimit(RLIMIT_NOFILE, &nofile);
  }
  // Files sandboxd creates get exactly the requested mode; commands get umask 022 back.
  umask(0);
  asb::UniqueFd workspace(open(options->workspace.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!workspace) {
    return Fatal(asb::Error::FromErrno(errno, "open workspace " + options->workspace));
  }
  auto seccomp = asb::isolation::SeccompProgram::Compile(
      {.allow_packet_sockets = options->allow_packet_sockets});
  if (!seccomp) return Fatal(seccomp.error());
  auto loop = EventLoop::Create();
  if (!loop) return Fatal(loop.error());

  Daemon daemon(std::move(*options), std::move(*loop), std::move(*seccomp), std::move(workspace));
  if (auto st = daemon.Init(); !st) return Fatal(st.error());
  if (auto st = daemon.Run(); !st) return Fatal(st.error());
  return 0;
}
