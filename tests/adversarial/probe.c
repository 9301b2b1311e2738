// Escape probe: run inside a sandbox (as the sandbox user and as sandbox root), it tries one
// escape per attempt and prints one line per attempt:
//
//   attempt <name> expected=<a|b|...> seen=<token> ok|FAIL
//
// `seen` is the errno name of the refused call (EPERM, EROFS, ...), "success" when the call
// went through, or a word describing what the attempt observed ("same_root", "lo_only",
// "killed_SIGSYS", ...). An attempt is ok when `seen` is one of the expected tokens. The
// expectations differ between uid 0 and uid 1000 only where root inside legitimately holds a
// capability over its own namespaces (Docker's default set; see exec_child.cc), e.g. a raw
// socket that can only ever see the sandbox's own loopback.
//
// Usage: probe [--host-path P]... [--secret NAME] [--tcp-port N] [--abstract NAME]
//              [--shm-key K] [--int80-fault SIG] [--mountinfo-token T]...
//              [ONLY_ATTEMPT]
//   --host-path P  a path that exists on the host; it must not exist here (repeatable)
//   --secret NAME  a file name that exists only in another sandbox's workspace
//   --tcp-port N   a TCP port the host listens on at 127.0.0.1
//   --abstract N   an abstract unix socket name the host listens on
//   --shm-key K    the key of a host SysV shared memory segment
//   --int80-fault SIG  this kernel faults on `int $0x80` before any filter sees it (the host
//                  measured it without a filter: see src/sandboxd/testing/int80_probe.h), so
//                  an i386 call dies of SIG (e.g. SEGV) instead of the filter's SIGSYS
//   --mountinfo-token T  a host string (the data directory, a sandbox id) /proc/self/mountinfo
//                  must not contain (repeatable)
//   ONLY_ATTEMPT   print only this attempt (most attempts still run; inside a sandbox every
//                  one of them is refused or confined)
// Exit status: 0 when every attempt is ok, 1 otherwise, 2 when not run inside a sandbox
// (PID 1 is not sandboxd: the attempts would act on the host).
//
// Built static (no dependency on the template's libc). Single-threaded; children forked here
// only make raw system calls or exec.
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/perf_event.h>
#include <linux/reboot.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/shm.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/swap.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif

static int g_root;
static int g_failures;
static const char* g_only;
static const char* g_host_paths[8];
static int g_n_host_paths;
static const char* g_secret;
static int g_tcp_port;
static const char* g_abstract;
static long g_shm_key;
static char g_i386_expected[48] = "killed_SIGSYS";
static const char* g_mountinfo_tokens[8];
static int g_n_mountinfo_tokens;

static char g_buf[256];

// The result of a system call as a token: "success" or the errno's name.
static const char* Rc(long rc) {
  if (rc >= 0) return "success";
  const char* n = strerrorname_np(errno);
  return n ? n : "E?";
}

// Reports one attempt. `expected` is a '|'-separated list of acceptable tokens.
static void Report(const char* name, const char* expected, const char* seen) {
  if (g_only && strcmp(g_only, name) != 0) return;
  char list[256];
  snprintf(list, sizeof(list), "%s", expected);
  int ok = 0;
  for (char *save = NULL, *t = strtok_r(list, "|", &save); t; t = strtok_r(NULL, "|", &save)) {
    if (strcmp(t, seen) == 0) ok = 1;
  }
  if (!ok) ++g_failures;
  printf("attempt %s expected=%s seen=%s %s\n", name, expected, seen, ok ? "ok" : "FAIL");
  fflush(stdout);
}

// Chooses the expectation by who runs the probe.
static const char* ByUser(const char* as_user, const char* as_root) {
  return g_root ? as_root : as_user;
}

static int Wanted(const char* name) { return !g_only || strcmp(g_only, name) == 0; }

// Runs fn in a child and describes how it ended: "exit_<n>" or "killed_<SIGNAME>".
static const char* InChild(void (*fn)(void)) {
  pid_t pid = fork();
  if (pid < 0) return Rc(-1);
  if (pid == 0) {
    fn();
    _exit(0);
  }
  int st = 0;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  if (WIFSIGNALED(st)) {
    snprintf(g_buf, sizeof(g_buf), "killed_SIG%s", sigabbrev_np(WTERMSIG(st)));
  } else {
    snprintf(g_buf, sizeof(g_buf), "exit_%d", WEXITSTATUS(st));
  }
  return g_buf;
}

// ---- mounts and namespaces -------------------------------------------------------------------

static void Mounts(void) {
  Report("mount_tmpfs", "EPERM", Rc(mount("none", "/tmp", "tmpfs", 0, NULL)));
  Report("mount_remount_root_rw", "EPERM", Rc(mount(NULL, "/", NULL, MS_REMOUNT | MS_BIND, NULL)));
  Report("mount_bind_proc1_root", "EPERM",
         Rc(mount("/proc/1/root", "/workspace", NULL, MS_BIND | MS_REC, NULL)));
  Report("umount_workspace", "EPERM", Rc(umount2("/workspace", MNT_DETACH)));
  Report("umount_proc_masks", "EPERM", Rc(umount2("/proc/sys", MNT_DETACH)));
  Report("pivot_root", "EPERM", Rc(syscall(SYS_pivot_root, "/tmp", "/tmp")));
  Report("fsopen", "EPERM", Rc(syscall(SYS_fsopen, "tmpfs", 0)));
  Report("open_tree", "EPERM", Rc(syscall(SYS_open_tree, AT_FDCWD, "/", 1 /* OPEN_TREE_CLONE */)));
}

static void Unshares(void) {
  static const struct {
    const char* name;
    int flag;
  } kNs[] = {{"unshare_user", CLONE_NEWUSER},     {"unshare_mnt", CLONE_NEWNS},
             {"unshare_pid", CLONE_NEWPID},       {"unshare_net", CLONE_NEWNET},
             {"unshare_ipc", CLONE_NEWIPC},       {"unshare_uts", CLONE_NEWUTS},
             {"unshare_cgroup", CLONE_NEWCGROUP}, {"unshare_time", CLONE_NEWTIME}};
  for (size_t i = 0; i < sizeof(kNs) / sizeof(kNs[0]); ++i) {
    if (Wanted(kNs[i].name)) Report(kNs[i].name, "EPERM", Rc(unshare(kNs[i].flag)));
  }
}

static void Setns(void) {
  static const char* kNs[] = {"mnt", "net", "pid", "user", "cgroup", "uts", "ipc"};
  for (size_t i = 0; i < sizeof(kNs) / sizeof(kNs[0]); ++i) {
    char name[64], path[64];
    snprintf(name, sizeof(name), "setns_proc1_%s", kNs[i]);
    if (!Wanted(name)) continue;
    snprintf(path, sizeof(path), "/proc/1/ns/%s", kNs[i]);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    // uid 1000 may not even open sandboxd's namespaces; root may, and setns is refused.
    const char* seen = fd < 0 ? Rc(-1) : Rc(setns(fd, 0));
    if (fd >= 0) close(fd);
    Report(name, "EACCES|EPERM", seen);
  }
}

static void CloneNewUser(void) {
  // Raw clone(2) with CLONE_NEWUSER: the child would exit at once if it were ever made.
  long rc = syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0);
  if (rc == 0) _exit(0);
  if (rc > 0) waitpid((pid_t)rc, NULL, 0);
  Report("clone_newuser", "EPERM", Rc(rc));
  rc = syscall(SYS_clone, CLONE_NEWNS | CLONE_NEWPID | SIGCHLD, 0, 0, 0, 0);
  if (rc == 0) _exit(0);
  if (rc > 0) waitpid((pid_t)rc, NULL, 0);
  Report("clone_newns_newpid", "EPERM", Rc(rc));
  struct {
    uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls;
  } args = {CLONE_NEWUSER, 0, 0, 0, SIGCHLD, 0, 0, 0};
  rc = syscall(SYS_clone3, &args, sizeof(args));
  if (rc == 0) _exit(0);
  if (rc > 0) waitpid((pid_t)rc, NULL, 0);
  Report("clone3_newuser", "ENOSYS|EPERM", Rc(rc));
}

// ---- other processes -------------------------------------------------------------------------

static void OtherProcesses(void) {
  Report("ptrace_attach_pid1", "EPERM", Rc(syscall(SYS_ptrace, 16 /* ATTACH */, 1, 0, 0)));
  char b[16];
  struct iovec local = {b, sizeof(b)}, remote = {(void*)0x400000, sizeof(b)};
  Report("process_vm_readv_pid1", "EPERM", Rc(process_vm_readv(1, &local, 1, &remote, 1, 0)));
  Report("process_vm_writev_pid1", "EPERM", Rc(process_vm_writev(1, &local, 1, &remote, 1, 0)));

  // /proc/1/root: either refused or the very same root as ours (sandboxd lives in it).
  struct stat a, r;
  const char* seen;
  if (stat("/proc/1/root/", &a) != 0) {
    seen = Rc(-1);
  } else {
    stat("/", &r);
    seen = (a.st_dev == r.st_dev && a.st_ino == r.st_ino) ? "same_root" : "other_root";
  }
  Report("proc1_root", "EACCES|same_root", seen);

  // /proc/1/fd: sandboxd's descriptors (its listening socket, log) must stay out of reach.
  DIR* d = opendir("/proc/1/fd");
  if (!d) {
    seen = Rc(-1);
  } else {
    seen = "no_fd_opened";
    for (struct dirent* e; (e = readdir(d));) {
      if (e->d_name[0] == '.') continue;
      char p[300];
      snprintf(p, sizeof(p), "/proc/1/fd/%s", e->d_name);
      int fd = open(p, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
      if (fd >= 0) {
        close(fd);
        seen = "opened_sandboxd_fd";
        break;
      }
    }
    closedir(d);
  }
  Report("proc1_fd_reopen", "EACCES|EPERM|no_fd_opened", seen);

  // sandboxd's environment and memory: its credentials are not ours to read or write.
  Report("proc1_environ_read", "EACCES|EPERM", Rc(open("/proc/1/environ", O_RDONLY | O_CLOEXEC)));
  Report("proc1_mem_write", "EACCES|EPERM", Rc(open("/proc/1/mem", O_RDWR | O_CLOEXEC)));
  Report("proc1_cwd", "EACCES|EPERM", Rc(open("/proc/1/cwd/.", O_RDONLY | O_CLOEXEC)));

  // Our own descriptors: only stdio (nothing of the host's inherited).
  d = opendir("/proc/self/fd");
  seen = "only_stdio";
  if (!d) {
    seen = Rc(-1);
  } else {
    for (struct dirent* e; (e = readdir(d));) {
      int fd = atoi(e->d_name);
      if (e->d_name[0] == '.' || fd <= 2 || fd == dirfd(d)) continue;
      seen = "inherited_fd";
    }
    closedir(d);
  }
  Report("proc_self_fd_inherited", "only_stdio", seen);

  // Host processes: only a handful of pids, PID 1 is sandboxd, no kernel threads.
  d = opendir("/proc");
  int n = 0, kthread = 0;
  for (struct dirent* e; d && (e = readdir(d));) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    ++n;
    char p[300], comm[64] = "";
    snprintf(p, sizeof(p), "/proc/%s/comm", e->d_name);
    FILE* f = fopen(p, "r");
    if (f) {
      if (fgets(comm, sizeof(comm), f) &&
          (strncmp(comm, "kthreadd", 8) == 0 || strncmp(comm, "systemd", 7) == 0)) {
        kthread = 1;
      }
      fclose(f);
    }
  }
  if (d) closedir(d);
  char comm1[64] = "";
  FILE* f = fopen("/proc/1/comm", "r");
  if (f) {
    if (!fgets(comm1, sizeof(comm1), f)) comm1[0] = 0;
    fclose(f);
  }
  seen = (n < 20 && !kthread && strncmp(comm1, "sandboxd", 8) == 0) ? "no_host_pids" : "host_pids";
  Report("host_processes_visible", "no_host_pids", seen);
  // SIGKILL to sandboxd: another uid is refused; root's is dropped (pid_namespaces(7): the
  // namespace's init gets only signals it has a handler for, never SIGKILL from inside).
  seen = Rc(kill(1, SIGKILL));
  if (strcmp(seen, "success") == 0) {
    usleep(100000);
    seen = kill(1, 0) == 0 ? "success_ignored" : "pid1_killed";
  }
  Report("kill_pid1", "EPERM|success_ignored", seen);
}

// ---- /proc, /sys, devices -------------------------------------------------------------------

static const char* TryWrite(const char* path, const char* data) {
  int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return Rc(-1);
  long rc = write(fd, data, strlen(data));
  int e = errno;
  close(fd);
  errno = e;
  return rc < 0 ? Rc(-1) : "written";
}

static void ProcSys(void) {
  // /proc/sys is bound read-only, and its files belong to the host's root, which is unmapped
  // here: root inside gets EACCES from the permission check before the EROFS of the mount.
  const char* ro = "EACCES|EROFS";
  Report("proc_sys_hostname_write", ro, TryWrite("/proc/sys/kernel/hostname", "x"));
  Report("proc_sys_core_pattern", ro, TryWrite("/proc/sys/kernel/core_pattern", "|/tmp/x"));
  // These two exist only with CONFIG_MODULES / CONFIG_MAGIC_SYSRQ (ENOENT without them).
  Report("proc_sys_modprobe", "EACCES|EROFS|ENOENT",
         TryWrite("/proc/sys/kernel/modprobe", "/tmp/x"));
  Report("proc_sysrq_trigger", "EACCES|EROFS|ENOENT", TryWrite("/proc/sysrq-trigger", "b"));
  Report("proc_sys_drop_caches", ro, TryWrite("/proc/sys/vm/drop_caches", "3"));
  Report("sys_uevent_helper", "EACCES|EROFS|ENOENT",
         TryWrite("/sys/kernel/uevent_helper", "/tmp/x"));
  Report("sys_net_lo_mtu_write", "EACCES|EROFS", TryWrite("/sys/class/net/lo/mtu", "1000"));
  // cgroup release_agent: no cgroup file system is mounted, and mounting one is refused.
  const char* seen = TryWrite("/sys/fs/cgroup/memory/release_agent", "/tmp/x");
  if (strcmp(seen, "ENOENT") == 0) seen = TryWrite("/sys/fs/cgroup/release_agent", "/tmp/x");
  Report("cgroup_release_agent_file", "ENOENT|EACCES|EROFS", seen);
  mkdir("/tmp/cg", 0700);
  Report("cgroup_mount_v1_release_agent", "EPERM",
         Rc(mount("cgroup", "/tmp/cg", "cgroup", 0, "memory")));
  Report("cgroup_mount_v2", "EPERM", Rc(mount("cgroup2", "/tmp/cg", "cgroup2", 0, NULL)));
  rmdir("/tmp/cg");

  // Masked files read as empty (bind of /dev/null) or not at all.
  int fd = open("/proc/kcore", O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    seen = Rc(-1);
  } else {
    char b[16];
    seen = read(fd, b, sizeof(b)) == 0 ? "empty" : "readable";
    close(fd);
  }
  Report("proc_kcore_read", "empty|EACCES|ENOENT", seen);
}

static void Devices(void) {
  Report("dev_mem_open", "ENOENT|EACCES|EPERM", Rc(open("/dev/mem", O_RDONLY | O_CLOEXEC)));
  Report("dev_kmsg_open", "ENOENT|EACCES|EPERM", Rc(open("/dev/kmsg", O_RDONLY | O_CLOEXEC)));
  Report("syslog_read", "EPERM", Rc(syscall(SYS_syslog, 3 /* READ_ALL */, g_buf, 16)));
  Report("dev_loop_control", "ENOENT|EACCES", Rc(open("/dev/loop-control", O_RDWR | O_CLOEXEC)));
  Report("mknod_char_mem", "EPERM",
         Rc(mknod("/workspace/.adv-mem", S_IFCHR | 0666, makedev(1, 1))));
  Report("mknod_block_sda", "EPERM", Rc(mknod("/tmp/.adv-sda", S_IFBLK | 0666, makedev(8, 0))));
  // No block device nodes anywhere in /dev.
  DIR* d = opendir("/dev");
  const char* seen = "none";
  for (struct dirent* e; d && (e = readdir(d));) {
    char p[300];
    struct stat st;
    snprintf(p, sizeof(p), "/dev/%s", e->d_name);
    if (lstat(p, &st) == 0 && S_ISBLK(st.st_mode)) seen = "block_device_present";
  }
  if (d) closedir(d);
  Report("dev_block_nodes", "none", seen);
  // TIOCSTI on our stdin (and on a fresh pty): refused by the filter whatever the fd is.
  char c = 'x';
  Report("tiocsti_stdin", "EPERM", Rc(ioctl(0, TIOCSTI, &c)));
  int m = posix_openpt(O_RDWR | O_NOCTTY);
  seen = m < 0 ? "no_pty" : Rc(ioctl(m, TIOCSTI, &c));
  if (m >= 0) close(m);
  Report("tiocsti_pty", "EPERM|no_pty", seen);
}

// ---- kernel interfaces ----------------------------------------------------------------------

static void Kernel(void) {
  Report("init_module", "EPERM", Rc(syscall(SYS_init_module, g_buf, 16, "")));
  int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
  Report("finit_module", "EPERM", Rc(syscall(SYS_finit_module, fd, "", 0)));
  if (fd >= 0) close(fd);
  Report("delete_module", "EPERM", Rc(syscall(SYS_delete_module, "loop", O_NONBLOCK)));
  Report("kexec_load", "EPERM", Rc(syscall(SYS_kexec_load, 0, 0, NULL, 0)));
  Report("kexec_file_load", "EPERM", Rc(syscall(SYS_kexec_file_load, -1, -1, 0, "", 0)));
  Report("keyctl_join_session", "EPERM", Rc(syscall(SYS_keyctl, 1 /* JOIN */, "adv")));
  Report("add_key", "EPERM", Rc(syscall(SYS_add_key, "user", "adv", "x", 1, -3)));
  union bpf_attr attr;
  memset(&attr, 0, sizeof(attr));
  attr.map_type = BPF_MAP_TYPE_ARRAY;
  attr.key_size = 4;
  attr.value_size = 4;
  attr.max_entries = 1;
  fd = (int)syscall(SYS_bpf, BPF_MAP_CREATE, &attr, sizeof(attr));
  Report("bpf_map_create", "EPERM", Rc(fd));
  if (fd >= 0) close(fd);
  struct perf_event_attr pe;
  memset(&pe, 0, sizeof(pe));
  pe.type = PERF_TYPE_SOFTWARE;
  pe.size = sizeof(pe);
  pe.config = PERF_COUNT_SW_CPU_CLOCK;
  fd = (int)syscall(SYS_perf_event_open, &pe, 0, -1, -1, 0);
  Report("perf_event_open", "EPERM", Rc(fd));
  if (fd >= 0) close(fd);
  fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
  Report("userfaultfd", "EPERM", Rc(fd));
  if (fd >= 0) close(fd);
  char params[120];
  memset(params, 0, sizeof(params));
  fd = (int)syscall(SYS_io_uring_setup, 4, params);
  Report("io_uring_setup", "EPERM", Rc(fd));
  if (fd >= 0) close(fd);
  Report("personality_addr_no_randomize", "EPERM", Rc(personality(ADDR_NO_RANDOMIZE)));
  Report("personality_read_implies_exec", "EPERM", Rc(personality(READ_IMPLIES_EXEC)));
  Report("reboot_cad_off", "EPERM",
         Rc(syscall(SYS_reboot, LINUX_REBOOT_MAGIC1, LINUX_REBOOT_MAGIC2, LINUX_REBOOT_CMD_CAD_OFF,
                    NULL)));
  Report("swapon", "EPERM", Rc(swapon("/workspace/swap", 0)));
  struct timeval tv = {1, 0};
  Report("settimeofday", "EPERM", Rc(settimeofday(&tv, NULL)));
  struct timespec ts = {1, 0};
  Report("clock_settime", "EPERM", Rc(clock_settime(CLOCK_REALTIME, &ts)));
  Report("acct", "EPERM", Rc(acct("/workspace/acct")));
  Report("quotactl", "EPERM", Rc(syscall(SYS_quotactl, 0x800002 /* Q_GETFMT */, "/", 0, g_buf)));
  Report("iopl", "EPERM", Rc(syscall(SYS_iopl, 3)));
  Report("ioperm", "EPERM", Rc(syscall(SYS_ioperm, 0x80, 1, 1)));
  // The shocker attack: a file handle for the root inode, opened without any path check.
  struct {
    unsigned int handle_bytes;
    int handle_type;
    unsigned char f_handle[128];
  } fh = {128, 0, {0}};
  int mnt = 0;
  Report("name_to_handle_at", "EPERM",
         Rc(syscall(SYS_name_to_handle_at, AT_FDCWD, "/etc/passwd", &fh, &mnt, 0)));
  fh.handle_bytes = 8;
  fh.handle_type = 1;  // FILEID_INO32_GEN, inode 2 (an ext4 root) generation 0
  fh.f_handle[0] = 2;
  Report("open_by_handle_at", "EPERM", Rc(syscall(SYS_open_by_handle_at, AT_FDCWD, &fh, O_RDONLY)));
}

// Other system call ABIs: the filter kills the process rather than let a call through.
static void X32Mount(void) { syscall(0x40000000 | SYS_mount, "none", "/tmp", "tmpfs", 0, 0); }
static void I386Mount(void) {
  long ret;
  // int 0x80 with eax = 21 (i386 mount).
  __asm__ volatile("int $0x80" : "=a"(ret) : "a"(21L), "b"(0L), "c"(0L), "d"(0L) : "memory");
  _exit(ret == 0 ? 0 : 3);
}

static void Abis(void) {
  if (Wanted("x32_abi_mount")) Report("x32_abi_mount", "killed_SIGSYS", InChild(X32Mount));
  // Where the kernel has no i386 entry (--int80-fault) the call faults before the filter runs:
  // still refused, but by the kernel. A child that exits made the call (exit_0 or exit_3).
  if (Wanted("i386_abi_mount")) Report("i386_abi_mount", g_i386_expected, InChild(I386Mount));
}

// ---- sockets ---------------------------------------------------------------------------------

// Names the interfaces this socket could reach: the sandbox's network namespace has only lo.
static const char* OnlyLo(void) {
  struct if_nameindex* ifs = if_nameindex();
  if (!ifs) return "no_if";
  int other = 0;
  for (struct if_nameindex* i = ifs; i->if_index; ++i) other |= strcmp(i->if_name, "lo") != 0;
  if_freenameindex(ifs);
  return other ? "other_interfaces" : "lo_only";
}

static void Sockets(void) {
  int fd = socket(AF_INET, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_RAW);
  const char* seen = fd < 0 ? Rc(-1) : OnlyLo();
  if (fd >= 0) close(fd);
  // Root inside holds CAP_NET_RAW over its own network namespace (Docker's default set); the
  // socket then reaches nothing but the sandbox's loopback.
  Report("raw_socket", ByUser("EPERM", "lo_only"), seen);
  fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, htons(ETH_P_ALL));
  seen = fd < 0 ? Rc(-1) : OnlyLo();
  if (fd >= 0) close(fd);
  // ADR 0014: families no sandbox needs are refused by the seccomp filter, as root too
  // (AF_VSOCK reaches the hypervisor's agents on a VM host).
  Report("packet_socket", "EAFNOSUPPORT", seen);
  const struct {
    const char* name;
    int family, type;
  } kRefused[] = {{"vsock_socket", AF_VSOCK, SOCK_STREAM},
                  {"xdp_socket", AF_XDP, SOCK_RAW},
                  {"key_socket", AF_KEY, SOCK_RAW},
                  {"alg_socket", AF_ALG, SOCK_SEQPACKET}};
  for (size_t i = 0; i < sizeof(kRefused) / sizeof(kRefused[0]); ++i) {
    fd = socket(kRefused[i].family, kRefused[i].type | SOCK_CLOEXEC, 0);
    seen = Rc(fd);
    if (fd >= 0) close(fd);
    Report(kRefused[i].name, "EAFNOSUPPORT", seen);
  }
  // Reaching the host over the network: nothing but lo, so no route.
  fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in sa = {0};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(80);
  sa.sin_addr.s_addr = htonl(0x08080808);
  seen = Rc(connect(fd, (struct sockaddr*)&sa, sizeof(sa)));
  close(fd);
  Report("connect_outside", "ENETUNREACH", seen);
  // The host's loopback and abstract unix sockets belong to the host's network namespace.
  if (g_tcp_port > 0) {
    fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sa.sin_port = htons((uint16_t)g_tcp_port);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    seen = Rc(connect(fd, (struct sockaddr*)&sa, sizeof(sa)));
    close(fd);
    Report("host_loopback_tcp", "ECONNREFUSED", seen);
  }
  if (g_abstract) {
    struct sockaddr_un un = {0};
    un.sun_family = AF_UNIX;
    size_t n = strlen(g_abstract);
    if (n > sizeof(un.sun_path) - 1) n = sizeof(un.sun_path) - 1;
    memcpy(un.sun_path + 1, g_abstract, n);
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    seen = Rc(connect(fd, (struct sockaddr*)&un,
                      (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n)));
    close(fd);
    Report("host_abstract_unix", "ECONNREFUSED", seen);
  }
  // Net sysctls belong to the sandbox's network namespace, yet /proc/sys stays read-only.
  Report("proc_sys_net_ip_forward", "EACCES|EROFS", TryWrite("/proc/sys/net/ipv4/ip_forward", "1"));
}

// SysV IPC objects of the host live in the host's IPC namespace.
static void Ipc(void) {
  if (g_shm_key == 0 || !Wanted("host_sysv_shm")) return;
  Report("host_sysv_shm", "ENOENT", Rc(shmget((key_t)g_shm_key, 0, 0)));
}

static void Crash(void) {
  if (chdir("/workspace") != 0) _exit(3);
  raise(SIGSEGV);
}

// Limits the sandbox's root cannot lift (CAP_SYS_RESOURCE counts only in the host's namespace).
static void Limits(void) {
  Report("oom_score_adj_lower", "EACCES|EPERM", TryWrite("/proc/self/oom_score_adj", "-1000"));
  struct rlimit rl;
  const char* seen = "no_limit";
  if (getrlimit(RLIMIT_NPROC, &rl) == 0 && rl.rlim_max != RLIM_INFINITY) {
    rl.rlim_max = RLIM_INFINITY;
    rl.rlim_cur = RLIM_INFINITY;
    seen = Rc(setrlimit(RLIMIT_NPROC, &rl));
  }
  Report("rlimit_nproc_raise", "EPERM", seen);
  // Core dumps: RLIMIT_CORE is 1 (hard; the "never dump" value, see ns/rlimits.cc), so a crash writes nothing (the host's core_pattern
  // is the host's; a dump must not be how a sandbox reaches it).
  rl.rlim_cur = rl.rlim_max = RLIM_INFINITY;
  Report("rlimit_core_raise", "EPERM", Rc(setrlimit(RLIMIT_CORE, &rl)));
  if (Wanted("core_dump_on_crash")) {
    unlink("/workspace/core");
    const char* how = InChild(Crash);
    struct stat st;
    seen = stat("/workspace/core", &st) == 0 ? "core_written" : how;
    Report("core_dump_on_crash", "killed_SIGSEGV", seen);
  }
  // The id maps were written once by the host; they cannot be rewritten from inside.
  Report("uid_map_rewrite", "EPERM|EACCES", TryWrite("/proc/self/uid_map", "0 0 1\n"));
  Report("setgroups_map_allow", "EPERM|EACCES", TryWrite("/proc/self/setgroups", "allow"));
}

// ---- file system -----------------------------------------------------------------------------

static void ChrootBreakout(void) {
  // The classic: chroot into a subdirectory, walk up with "..", chroot(".").
  mkdir("/tmp/.adv-jail", 0700);
  if (chroot("/tmp/.adv-jail") != 0) _exit(10);
  for (int i = 0; i < 64; ++i) {
    if (chdir("..") != 0) _exit(11);
  }
  if (chroot(".") != 0) _exit(12);
  // Where are we? The sandbox's root has /workspace and none of the host's paths.
  struct stat st;
  for (int i = 0; i < g_n_host_paths; ++i) {
    if (stat(g_host_paths[i], &st) == 0) _exit(20);
  }
  _exit(stat("/workspace", &st) == 0 ? 0 : 21);
}

static void FileSystem(void) {
  if (Wanted("chroot_breakout")) {
    const char* r = InChild(ChrootBreakout);
    // uid 1000 cannot chroot (exit 10); root can and stays in the sandbox's root (exit 0).
    Report("chroot_breakout", ByUser("exit_10", "exit_0"), r);
    rmdir("/tmp/.adv-jail");
  }
  Report("hardlink_outside_workspace", "EXDEV", Rc(link("/etc/passwd", "/workspace/.adv-passwd")));
  Report("root_fs_write", ByUser("EACCES|EROFS", "EROFS"),
         Rc(open("/etc/.adv-probe", O_WRONLY | O_CREAT | O_CLOEXEC, 0644)));
  for (int i = 0; i < g_n_host_paths; ++i) {
    char name[64];
    snprintf(name, sizeof(name), "host_path_%d", i);
    struct stat st;
    Report(name, "ENOENT", Rc(stat(g_host_paths[i], &st)));
  }
  Report("setuid_self_to_root", ByUser("EPERM", "success"), Rc(setuid(0)));
  unsigned long nnp = (unsigned long)prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0);
  long clr = prctl(PR_SET_NO_NEW_PRIVS, 0, 0, 0, 0);
  Report("no_new_privs_clear", "EINVAL", nnp == 1 ? Rc(clr) : "nnp_not_set");
}

// A setuid-root binary of the template must not give euid 0: no_new_privs (and nosuid) ignore
// the bit. Its credentials are read from /proc/<pid>/status once it has exec'd (the line stays
// readable while it is a zombie, so a binary that exits at once is still seen).
static void SetuidBinary(void) {
  if (!Wanted("setuid_binary_su")) return;
  const char* bin = "/usr/bin/su";
  struct stat st;
  if (stat(bin, &st) != 0 || !(st.st_mode & S_ISUID)) {
    Report("setuid_binary_su", "euid_unchanged", "no_setuid_binary");
    return;
  }
  int in[2];
  if (pipe2(in, O_CLOEXEC) != 0) return;
  pid_t pid = fork();
  if (pid == 0) {
    dup2(in[0], 0);
    int null = open("/dev/null", O_WRONLY);
    dup2(null, 1);
    dup2(null, 2);
    execl(bin, "su", "-c", "true", "root", (char*)NULL);
    _exit(127);
  }
  close(in[0]);
  char p[64];
  snprintf(p, sizeof(p), "/proc/%d/status", pid);
  const char* seen = "not_observed";
  for (int i = 0; i < 400; ++i) {
    FILE* f = fopen(p, "r");
    char line[256], name[64] = "";
    unsigned ruid = 0, euid = 0;
    int have_uid = 0;
    while (f && fgets(line, sizeof(line), f)) {
      if (sscanf(line, "Name:\t%63s", name) == 1) continue;
      if (sscanf(line, "Uid:\t%u\t%u", &ruid, &euid) == 2) have_uid = 1;
    }
    if (f) fclose(f);
    if (have_uid && strcmp(name, "su") == 0) {
      seen = euid == ruid ? "euid_unchanged" : "euid_raised";
      break;
    }
    usleep(5000);
  }
  close(in[1]);
  kill(pid, SIGKILL);
  waitpid(pid, NULL, 0);
  Report("setuid_binary_su", "euid_unchanged", seen);
}

// ---- host facts ------------------------------------------------------------------------------

// Reads up to sizeof(g_file) - 1 bytes of `path` into g_file; returns the count or -1 (errno).
static char g_file[65536];
static long ReadSmall(const char* path) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  long total = 0;
  for (;;) {
    ssize_t n = read(fd, g_file + total, sizeof(g_file) - 1 - (size_t)total);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    total += n;
    if ((size_t)total == sizeof(g_file) - 1) break;
  }
  close(fd);
  g_file[total] = 0;
  return total;
}

// ADR 0014: what reveals the host or the other sandboxes is masked or virtualised.
static void HostFacts(void) {
  // The host kernel's build configuration.
  long n = ReadSmall("/proc/config.gz");
  Report("proc_config_gz", "empty|ENOENT", n < 0 ? Rc(-1) : n == 0 ? "empty" : "readable");
  // Every block device of the host, the other sandboxes' loop devices among them.
  n = ReadSmall("/proc/partitions");
  const char* seen = n < 0 ? Rc(-1) : n == 0 ? "empty" : "readable";
  Report("proc_partitions", "empty", seen);
  // The host's boot command line; the sandbox reads a benign one.
  n = ReadSmall("/proc/cmdline");
  Report("proc_cmdline", "benign",
         n < 0 ? Rc(-1) : strcmp(g_file, "ro quiet\n") == 0 ? "benign" : "host_cmdline");
  // Host paths of the data directory (state dir, sandbox ids) as mount sources.
  n = ReadSmall("/proc/self/mountinfo");
  seen = n < 0 ? Rc(-1) : "no_host_paths";
  for (int i = 0; n > 0 && i < g_n_mountinfo_tokens; ++i) {
    if (strstr(g_file, g_mountinfo_tokens[i])) seen = "shows_host_path";
  }
  Report("mountinfo_host_paths", "no_host_paths", seen);
}

// Another sandbox's workspace file must not be anywhere in this one's tree.
static int Find(const char* dir, const char* name, int depth) {
  if (depth > 12) return 0;
  DIR* d = opendir(dir);
  if (!d) return 0;
  int found = 0;
  for (struct dirent* e; !found && (e = readdir(d));) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
    if (strcmp(e->d_name, name) == 0) found = 1;
    if (e->d_type == DT_DIR) {
      char p[4096];
      snprintf(p, sizeof(p), "%s/%s", strcmp(dir, "/") == 0 ? "" : dir, e->d_name);
      if (strcmp(p, "/proc") == 0 || strcmp(p, "/sys") == 0) continue;
      found = Find(p, name, depth + 1);
    }
  }
  closedir(d);
  return found;
}

static void OtherSandbox(void) {
  if (!g_secret || !Wanted("other_sandbox_workspace")) return;
  Report("other_sandbox_workspace", "not_found", Find("/", g_secret, 0) ? "found" : "not_found");
}

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "--host-path") == 0 && i + 1 < argc && g_n_host_paths < 8) {
      g_host_paths[g_n_host_paths++] = argv[++i];
    } else if (strcmp(argv[i], "--tcp-port") == 0 && i + 1 < argc) {
      g_tcp_port = atoi(argv[++i]);
    } else if (strcmp(argv[i], "--abstract") == 0 && i + 1 < argc) {
      g_abstract = argv[++i];
    } else if (strcmp(argv[i], "--shm-key") == 0 && i + 1 < argc) {
      g_shm_key = strtol(argv[++i], NULL, 0);
    } else if (strcmp(argv[i], "--int80-fault") == 0 && i + 1 < argc) {
      snprintf(g_i386_expected, sizeof(g_i386_expected), "killed_SIG%s", argv[++i]);
    } else if (strcmp(argv[i], "--mountinfo-token") == 0 && i + 1 < argc &&
               g_n_mountinfo_tokens < 8) {
      g_mountinfo_tokens[g_n_mountinfo_tokens++] = argv[++i];
    } else if (strcmp(argv[i], "--secret") == 0 && i + 1 < argc) {
      g_secret = argv[++i];
    } else {
      g_only = argv[i];
    }
  }
  // Interlock: these attempts are harmless only inside a sandbox (outside, as host root,
  // settimeofday or swapon would act on the machine). Refuse to run unless PID 1 is sandboxd.
  char comm1[32] = "";
  FILE* f = fopen("/proc/1/comm", "r");
  if (f) {
    if (!fgets(comm1, sizeof(comm1), f)) comm1[0] = 0;
    fclose(f);
  }
  if (strncmp(comm1, "sandboxd", 8) != 0) {
    fprintf(stderr, "probe: PID 1 is not sandboxd; run me only inside a sandbox\n");
    return 2;
  }
  g_root = geteuid() == 0;
  setvbuf(stdout, NULL, _IOLBF, 0);
  Mounts();
  Unshares();
  Setns();
  CloneNewUser();
  OtherProcesses();
  ProcSys();
  Devices();
  Kernel();
  Abis();
  Sockets();
  HostFacts();
  Ipc();
  Limits();
  FileSystem();
  SetuidBinary();
  OtherSandbox();
  return g_failures ? 1 : 0;
}
