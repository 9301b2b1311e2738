#include "sandboxd/exec_child.h"

#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "common/error.h"
#include "protocol/messages.h"

extern char** environ;

namespace asb::sandboxd {

namespace {

// Docker's default capability set for a container's root (moby oci/caps/defaults.go).
constexpr int kDockerDefaultCaps[] = {
    CAP_CHOWN,   CAP_DAC_OVERRIDE, CAP_FSETID,           CAP_FOWNER,
    CAP_MKNOD,   CAP_NET_RAW,      CAP_SETGID,           CAP_SETUID,
    CAP_SETFCAP, CAP_SETPCAP,      CAP_NET_BIND_SERVICE, CAP_SYS_CHROOT,
    CAP_KILL,    CAP_AUDIT_WRITE,
};
constexpr int kMaxCap = 63;

// 0 = leave RLIMIT_NOFILE alone.
unsigned long g_command_nofile_soft = 0;

[[noreturn]] void Die(int fd, ErrorCode code, int err, const char* what) {
  ChildFailure f;
  f.code = static_cast<int32_t>(code);
  f.sys_errno = err;
  if (err) {
    snprintf(f.message, sizeof f.message, "%s: %s", what, strerror(err));
  } else {
    snprintf(f.message, sizeof f.message, "%s", what);
  }
  ssize_t ignored = write(fd, &f, sizeof f);
  (void)ignored;
  _exit(125);
}

bool InDockerSet(int cap) {
  for (int c : kDockerDefaultCaps) {
    if (c == cap) return true;
  }
  return false;
}

int SetCaps(bool docker_set) {
  __user_cap_header_struct hdr{};
  hdr.version = _LINUX_CAPABILITY_VERSION_3;
  hdr.pid = 0;
  __user_cap_data_struct data[2] = {};
  if (docker_set) {
    for (int c : kDockerDefaultCaps) {
      data[c / 32].effective |= 1u << (c % 32);
      data[c / 32].permitted |= 1u << (c % 32);
    }
  }
  return static_cast<int>(syscall(SYS_capset, &hdr, data));
}

void SetCredentials(const ChildPlan& p) {
  const int efd = p.error_fd;
  const uid_t uid = p.as_root ? 0 : protocol::kSandboxUid;
  const gid_t gid = p.as_root ? 0 : protocol::kSandboxGid;
  if (p.as_root) {
    if (setgroups(0, nullptr) != 0) Die(efd, ErrorCode::kInternal, errno, "setgroups");
  } else {
    if (setgroups(1, &gid) != 0) Die(efd, ErrorCode::kInternal, errno, "setgroups");
  }
  if (setresgid(gid, gid, gid) != 0) Die(efd, ErrorCode::kInternal, errno, "setresgid");
  // The bounding set needs CAP_SETPCAP, so it goes before the uid change drops it.
  for (int cap = 0; cap <= kMaxCap; ++cap) {
    if (p.as_root && InDockerSet(cap)) continue;
    if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0) {
      // Capabilities are numbered without gaps: past the kernel's last one, every higher one
      // is EINVAL too (capabilities(7), /proc/sys/kernel/cap_last_cap), so stop asking.
      if (errno == EINVAL) break;
      Die(efd, ErrorCode::kInternal, errno, "PR_CAPBSET_DROP");
    }
  }
  if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0 && errno != EINVAL) {
    Die(efd, ErrorCode::kInternal, errno, "PR_CAP_AMBIENT_CLEAR_ALL");
  }
  if (setresuid(uid, uid, uid) != 0) Die(efd, ErrorCode::kInternal, errno, "setresuid");
  // uid 1000: permitted and effective are already empty; this also clears inheritable.
  // uid 0: keep exactly Docker's set.
  if (SetCaps(p.as_root) != 0) Die(efd, ErrorCode::kInternal, errno, "capset");
}

}  // namespace

void SetCommandNofileLimit(unsigned long soft) { g_command_nofile_soft = soft; }

namespace {

void ResetSignals() {
  for (int sig = 1; sig < NSIG; ++sig) signal(sig, SIG_DFL);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
}

}  // namespace

int ConfineAhead(const isolation::SeccompProgram* seccomp) {
  ResetSignals();
  if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0) return errno;
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return errno;
  return seccomp ? seccomp->InstallInChild() : 0;
}

void RunExecChild(const ChildPlan& p) {
  const int efd = p.error_fd;
  // 1. Signals.
  if (!p.confined_ahead) ResetSignals();

  // 1b. Below sandboxd's headroom: the work cgroups; and orphans of this command stay below it
  //     while it runs (prctl(2) PR_SET_CHILD_SUBREAPER; the attribute survives execve).
  for (int i = 0; i < p.work_cgroup_fd_count; ++i) {
    if (write(p.work_cgroup_fds[i], "0", 1) != 1) {
      Die(efd, ErrorCode::kInternal, errno, "move into the work cgroup");
    }
  }
  if (!p.confined_ahead && prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0) {
    Die(efd, ErrorCode::kInternal, errno, "PR_SET_CHILD_SUBREAPER");
  }

  // 2. Own session and process group.
  if (setsid() < 0) Die(efd, ErrorCode::kInternal, errno, "setsid");

  // 3. Standard fds. The sources are >= 3 (sandboxd keeps 0-2 open), and dup2 clears CLOEXEC.
  if (dup2(p.stdin_fd, 0) < 0 || dup2(p.stdout_fd, 1) < 0 || dup2(p.stderr_fd, 2) < 0) {
    Die(efd, ErrorCode::kInternal, errno, "dup2");
  }
  if (p.controlling_tty && ioctl(0, TIOCSCTTY, 0) != 0) {
    Die(efd, ErrorCode::kInternal, errno, "TIOCSCTTY");
  }
  // Belt and braces: nothing of sandboxd's (sockets, other commands' pipes) leaks into a
  // command even if some fd lacked O_CLOEXEC.
  syscall(SYS_close_range, 3u, ~0u, 4u /* CLOSE_RANGE_CLOEXEC */);

  // 4. Let the OOM killer pick the command, never sandboxd.
  int oom = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
  if (oom >= 0) {
    ssize_t ignored = write(oom, "0", 1);
    (void)ignored;
    close(oom);
  }

  umask(022);  // sandboxd itself runs with umask 0
  if (g_command_nofile_soft != 0) {
    rlimit nofile;
    if (getrlimit(RLIMIT_NOFILE, &nofile) == 0) {
      nofile.rlim_cur = g_command_nofile_soft;
      setrlimit(RLIMIT_NOFILE, &nofile);
    }
  }

  // 5. Credentials and capabilities.
  SetCredentials(p);

  // 6. Working directory, checked with the command's own permissions. A workdir that is missing,
  //    not a directory or not searchable is a bad field of the request (400 naming `workdir`),
  //    never a 404: every SDK reads 404 as "this sandbox is gone" (E2B's maps it to
  //    SandboxNotFoundError).
  if (chdir(p.cwd) != 0) {
    int err = errno;
    char what[200];
    snprintf(what, sizeof what, "workdir %s", p.cwd);
    Die(efd, ErrorCode::kInvalidArgument, err, what);
  }

  // 7. no_new_privs, then seccomp (after the calls above, though the filter blocks none of
  //    them: a spare installs it before its request comes, ConfineAhead).
  if (!p.confined_ahead && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
    Die(efd, ErrorCode::kInternal, errno, "PR_SET_NO_NEW_PRIVS");
  }
  if (p.seccomp && !p.confined_ahead) {
    int err = p.seccomp->InstallInChild();
    if (err != 0) Die(efd, ErrorCode::kInternal, err, "seccomp");
  }

  // 8. exec, searching PATH of the command's own environment.
  environ = const_cast<char**>(p.envp);
  execvp(p.argv[0], p.argv);
  int err = errno;
  if (err == ENOENT || err == ENOTDIR) {
    dprintf(2, "sandboxd: %s: command not found\n", p.argv[0]);
    _exit(127);
  }
  dprintf(2, "sandboxd: %s: %s\n", p.argv[0], strerror(err));
  _exit(126);
}

}  // namespace asb::sandboxd
