#include "sandboxd/proc_scan.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <unordered_map>

#include "common/unique_fd.h"

namespace asb::sandboxd {

namespace {

// Parses "pid (comm) S ppid pgrp session ...". comm may contain spaces and parentheses, so
// the fields after it are found from the last ')'.
bool ParseStat(const char* text, ProcEntry* e) {
  const char* close = strrchr(text, ')');
  if (!close || close[1] != ' ') return false;
  const char* p = close + 2;
  e->state = *p;
  char* end = nullptr;
  p += 1;
  e->ppid = static_cast<pid_t>(strtol(p, &end, 10));
  if (end == p) return false;
  p = end;
  e->pgrp = static_cast<pid_t>(strtol(p, &end, 10));
  if (end == p) return false;
  p = end;
  e->session = static_cast<pid_t>(strtol(p, &end, 10));
  return end != p;
}

}  // namespace

std::vector<ProcEntry> ScanProcesses() {
  std::vector<ProcEntry> out;
  DIR* dir = opendir("/proc");
  if (!dir) return out;
  while (dirent* d = readdir(dir)) {
    char* end = nullptr;
    long pid = strtol(d->d_name, &end, 10);
    if (*end != '\0' || pid <= 0) continue;
    char path[64];
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    UniqueFd fd(open(path, O_RDONLY | O_CLOEXEC));
    if (!fd) continue;
    char buf[1024];
    ssize_t n = read(fd.get(), buf, sizeof buf - 1);
    if (n <= 0) continue;
    buf[n] = '\0';
    ProcEntry e;
    e.pid = static_cast<pid_t>(pid);
    if (ParseStat(buf, &e)) out.push_back(e);
  }
  closedir(dir);
  return out;
}

int SignalSession(pid_t sid, int sig) {
  int count = 0;
  pid_t self = getpid();
  for (const ProcEntry& e : ScanProcesses()) {
    if (e.session != sid || e.state == 'Z' || e.pid == self) continue;
    if (kill(e.pid, sig) == 0) ++count;
  }
  return count;
}

int SignalDescendants(pid_t root, int sig, std::vector<pid_t>* signalled) {
  std::vector<ProcEntry> all = ScanProcesses();
  std::unordered_multimap<pid_t, const ProcEntry*> children;
  for (const ProcEntry& e : all) children.emplace(e.ppid, &e);
  int count = 0;
  std::vector<pid_t> todo{root};
  while (!todo.empty()) {
    pid_t p = todo.back();
    todo.pop_back();
    auto [b, e] = children.equal_range(p);
    for (auto it = b; it != e; ++it) {
      const ProcEntry* c = it->second;
      if (c->pid == root) continue;
      todo.push_back(c->pid);
      if (c->state == 'Z') continue;
      if (kill(c->pid, sig) == 0) {
        ++count;
        if (signalled) signalled->push_back(c->pid);
      }
    }
  }
  return count;
}

std::vector<pid_t> DescendantSessions(pid_t root, pid_t sid) {
  std::vector<ProcEntry> all = ScanProcesses();
  std::unordered_multimap<pid_t, const ProcEntry*> children;
  for (const ProcEntry& e : all) children.emplace(e.ppid, &e);
  std::vector<pid_t> sessions;
  std::vector<pid_t> todo{root};
  while (!todo.empty()) {
    pid_t p = todo.back();
    todo.pop_back();
    auto [b, e] = children.equal_range(p);
    for (auto it = b; it != e; ++it) {
      const ProcEntry* c = it->second;
      if (c->pid == root) continue;
      todo.push_back(c->pid);
      if (c->state == 'Z' || c->session == sid || c->session <= 1) continue;
      bool known = false;
      for (pid_t s : sessions) known = known || s == c->session;
      if (!known) sessions.push_back(c->session);
    }
  }
  return sessions;
}

}  // namespace asb::sandboxd

namespace asb::sandboxd {
bool HasDescendants(pid_t root) {
  for (const ProcEntry& e : ScanProcesses()) {
    if (e.ppid == root && e.pid != root) return true;
  }
  return false;
}
}  // namespace asb::sandboxd
