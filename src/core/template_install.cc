#include "core/template_install.h"

#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "core/template_defaults.h"

namespace asb::core {

namespace fs = std::filesystem;

namespace {

std::string ReadSmallFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Writes `data` to `path` (truncating) and fsyncs it.
Status WriteFileSynced(const std::string& path, std::string_view data, mode_t mode = 0644) {
  UniqueFd fd(open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode));
  if (!fd) return FailErrno("open " + path);
  if (!WriteAll(fd.get(), data.data(), data.size())) return FailErrno("write " + path);
  if (fsync(fd.get()) != 0) return FailErrno("fsync " + path);
  return {};
}

Status AppendLine(const std::string& path, const std::string& line) {
  UniqueFd fd(open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644));
  if (!fd) return FailErrno("open " + path);
  std::string l = line + "\n";
  if (!WriteAll(fd.get(), l.data(), l.size())) return FailErrno("write " + path);
  return {};
}

// The fields of one /proc/<pid>/mountinfo line we need (proc(5)).
struct MountLine {
  std::string dev;    // field 3, "major:minor"
  std::string root;   // field 4, path within the filesystem
  std::string point;  // field 5, mount point
};

std::string Unescape(const std::string& s) {  // mountinfo octal escapes (\040 etc.)
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size()) {
      int v = 0;
      bool ok = true;
      for (size_t k = 1; k <= 3; ++k) {
        if (s[i + k] < '0' || s[i + k] > '7') {
          ok = false;
          break;
        }
        v = v * 8 + (s[i + k] - '0');
      }
      if (ok) {
        out += static_cast<char>(v);
        i += 3;
        continue;
      }
    }
    out += s[i];
  }
  return out;
}

std::vector<MountLine> ReadMountInfo(const std::string& path) {
  std::vector<MountLine> out;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    std::string id, parent;
    MountLine m;
    if (ls >> id >> parent >> m.dev >> m.root >> m.point) {
      m.root = Unescape(m.root);
      m.point = Unescape(m.point);
      out.push_back(std::move(m));
    }
  }
  return out;
}

bool IsUnder(const std::string& path, const std::string& dir) {
  if (dir == "/") return true;
  return path == dir || (path.size() > dir.size() && path.compare(0, dir.size(), dir) == 0 &&
                         path[dir.size()] == '/');
}

// nftw callbacks keep their state in these (nftw has no user-data argument); each use is
// short and serialised by the template lock's callers, but guard with thread_local anyway.
thread_local int tl_remove_errno = 0;
thread_local std::string tl_remove_path;
thread_local uint64_t tl_size_bytes = 0;

int RemoveEntry(const char* path, const struct stat*, int type, struct FTW*) {
  int rc = (type == FTW_DP || type == FTW_D) ? rmdir(path) : unlink(path);
  if (rc != 0 && errno != ENOENT && tl_remove_errno == 0) {
    tl_remove_errno = errno;
    tl_remove_path = path;
  }
  return 0;  // keep going: remove as much as possible
}

int AddSize(const char*, const struct stat* st, int type, struct FTW*) {
  if (type == FTW_F) tl_size_bytes += static_cast<uint64_t>(st->st_size);
  return 0;
}

}  // namespace

Status ValidateTemplateName(std::string_view name) {
  bool ok = !name.empty() && name.size() <= 63 &&
            ((name[0] >= 'a' && name[0] <= 'z') || (name[0] >= '0' && name[0] <= '9')) &&
            std::all_of(name.begin(), name.end(), [](char c) {
              return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
            });
  if (ok) return {};
  std::string shown(name.substr(0, 70));
  return Fail(Error::InvalidArgument("invalid template name '" + shown +
                                     "': 1-63 of a-z, 0-9, '-', '_', starting with a letter "
                                     "or digit"));
}

Result<TemplateLock> LockTemplate(const TemplateLayout& layout, std::string_view name) {
  ASB_TRY(ValidateTemplateName(name));
  std::error_code ec;
  fs::create_directories(layout.dir(), ec);
  if (ec) return Fail(Error::FromErrno(ec.value(), "mkdir " + layout.dir()));
  std::string path = layout.LockFile(name);
  UniqueFd fd(open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644));
  if (!fd) return FailErrno("open " + path);
  while (flock(fd.get(), LOCK_EX) != 0) {
    if (errno != EINTR) return FailErrno("flock " + path);
  }
  return TemplateLock(std::move(fd));
}

std::string InstalledStamp(const TemplateLayout& layout, std::string_view name) {
  if (!ValidateTemplateName(name)) return "";
  if (access((layout.Rootfs(name) + "/bin/sh").c_str(), X_OK) != 0) return "";
  if (access(layout.Manifest(name).c_str(), R_OK) != 0) return "";
  std::string s = ReadSmallFile(layout.Stamp(name));
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

StagingDir& StagingDir::operator=(StagingDir&& o) noexcept {
  if (this != &o) {
    if (!path_.empty()) (void)RemoveTree(path_);
    path_ = std::exchange(o.path_, {});
  }
  return *this;
}

StagingDir::~StagingDir() {
  if (!path_.empty()) (void)RemoveTree(path_);
}

Result<StagingDir> MakeStagingDir(const TemplateLayout& layout, std::string_view name) {
  ASB_TRY(ValidateTemplateName(name));
  std::string tmpl = layout.dir() + "/.build-" + std::string(name) + ".XXXXXX";
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  if (mkdtemp(buf.data()) == nullptr) return FailErrno("mkdtemp " + tmpl);
  std::string path(buf.data());
  if (chmod(path.c_str(), 0755) != 0) {
    int err = errno;
    rmdir(path.c_str());
    return Fail(Error::FromErrno(err, "chmod " + path));
  }
  return StagingDir(path);
}

Status FinishRootfs(const std::string& r) {
  if (chmod(r.c_str(), 0755) != 0) return FailErrno("chmod " + r);
  struct Dir {
    const char* path;
    mode_t mode;
  };
  for (const Dir& d :
       {Dir{"/workspace", 0755}, Dir{"/tmp", 01777}, Dir{"/proc", 0755}, Dir{"/sys", 0755},
        Dir{"/dev", 0755}, Dir{"/run", 0755}, Dir{"/etc", 0755}}) {
    std::string p = r + d.path;
    if (mkdir(p.c_str(), d.mode) != 0 && errno != EEXIST) return FailErrno("mkdir " + p);
    if (chmod(p.c_str(), d.mode) != 0) return FailErrno("chmod " + p);
  }
  // E2B's convention (docs/e2b.md): the user's home is /home/user, and programs written for
  // E2B name it; here it is the workspace under that name too. An image that has its own
  // /home/user keeps it.
  std::string home = r + "/home";
  if (mkdir(home.c_str(), 0755) != 0 && errno != EEXIST) return FailErrno("mkdir " + home);
  std::string e2b_home = home + "/user";
  if (symlink("/workspace", e2b_home.c_str()) != 0 && errno != EEXIST) {
    return FailErrno("symlink " + e2b_home);
  }
  // The sandbox's sudo (ADR 0028): the backends bind sandboxd over this file. A template's own
  // sudo stays and is covered the same way (setuid cannot work under no_new_privs); where
  // nothing covers it, the placeholder says so instead of running nothing.
  std::string sudo = r + "/usr/bin/sudo";
  struct stat sudo_st;
  if (lstat(sudo.c_str(), &sudo_st) != 0 && errno == ENOENT &&
      access((r + "/usr/bin").c_str(), F_OK) == 0) {
    ASB_TRY(
        WriteFileSynced(sudo, "#!/bin/sh\necho 'sudo: this sandbox offers no sudo' >&2\nexit 1\n"));
    if (chmod(sudo.c_str(), 0755) != 0) return FailErrno("chmod " + sudo);
  }
  ASB_TRY(WriteFileSynced(r + "/etc/hostname", "sandbox\n"));
  ASB_TRY(WriteFileSynced(r + "/etc/hosts",
                          "127.0.0.1\tlocalhost sandbox\n"
                          "::1\tlocalhost ip6-localhost ip6-loopback\n"));
  // Networked sandboxes bind their resolver here: the target must be a plain file (images
  // often ship a symlink into /run).
  for (const char* f : {"/etc/resolv.conf", "/etc/machine-id"}) {
    std::string p = r + f;
    if (unlink(p.c_str()) != 0 && errno != ENOENT) return FailErrno("unlink " + p);
    ASB_TRY(WriteFileSynced(p, ""));
  }

  // The user every command runs as (protocol/messages.h kSandboxUid/kSandboxGid).
  auto owner_of = [](const std::string& file, const char* id) -> std::string {
    std::ifstream in(file);
    std::string line;
    while (std::getline(in, line)) {
      auto c1 = line.find(':');
      auto c2 = c1 == std::string::npos ? c1 : line.find(':', c1 + 1);
      auto c3 = c2 == std::string::npos ? c2 : line.find(':', c2 + 1);
      if (c3 != std::string::npos && line.substr(c2 + 1, c3 - c2 - 1) == id) {
        return line.substr(0, c1);
      }
    }
    return "";
  };
  std::string uid_owner = owner_of(r + "/etc/passwd", "1000");
  std::string gid_owner = owner_of(r + "/etc/group", "1000");
  if ((!uid_owner.empty() && uid_owner != "sandbox") ||
      (!gid_owner.empty() && gid_owner != "sandbox")) {
    return Fail(Error::Conflict("uid/gid 1000 is taken in the rootfs by '" +
                                (uid_owner.empty() ? gid_owner : uid_owner) +
                                "'; sandboxes run as sandbox (1000)"));
  }
  if (uid_owner.empty()) {
    ASB_TRY(AppendLine(r + "/etc/passwd", "sandbox:x:1000:1000:sandbox:/workspace:/bin/bash"));
    if (access((r + "/etc/shadow").c_str(), F_OK) == 0) {
      ASB_TRY(AppendLine(r + "/etc/shadow", "sandbox:*:19000:0:99999:7:::"));
    }
  }
  if (gid_owner.empty()) {
    ASB_TRY(AppendLine(r + "/etc/group", "sandbox:x:1000:"));
    if (access((r + "/etc/gshadow").c_str(), F_OK) == 0) {
      ASB_TRY(AppendLine(r + "/etc/gshadow", "sandbox:!::"));
    }
  }

  // Caches, package lists, logs and documentation: nothing an agent needs at run time.
  std::error_code ec;
  for (const char* d :
       {"/var/cache/apt", "/var/lib/apt/lists", "/var/log", "/usr/share/man", "/usr/share/info"}) {
    for (fs::directory_iterator it(r + d, ec), end; !ec && it != end; it.increment(ec)) {
      if (it->path().filename() == "partial" || it->path().filename() == "lock") continue;
      fs::remove_all(it->path(), ec);
    }
    ec.clear();
  }
  std::string doc = r + "/usr/share/doc";
  std::vector<fs::path> files;
  for (fs::recursive_directory_iterator it(doc, ec), end; !ec && it != end; it.increment(ec)) {
    if (!it->is_directory(ec) && it->path().filename() != "copyright") files.push_back(it->path());
  }
  for (const auto& f : files) fs::remove(f, ec);
  // Directories left empty, deepest first (rmdir fails on the others, which is fine).
  std::vector<std::string> dirs;
  for (fs::recursive_directory_iterator it(doc, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->is_directory(ec) && !it->is_symlink(ec)) dirs.push_back(it->path().string());
  }
  std::sort(dirs.begin(), dirs.end(),
            [](const std::string& a, const std::string& b) { return a.size() > b.size(); });
  for (const auto& d : dirs) (void)rmdir(d.c_str());
  return {};
}

Status RemoveTree(const std::string& dir) {
  struct stat st;
  if (lstat(dir.c_str(), &st) != 0) {
    if (errno == ENOENT) return {};
    return FailErrno("stat " + dir);
  }
  char real[PATH_MAX];
  std::string abs = realpath(dir.c_str(), real) != nullptr ? std::string(real) : dir;
  std::vector<std::string> points;
  for (const auto& m : ReadMountInfo("/proc/self/mountinfo")) {
    if (IsUnder(m.point, abs)) points.push_back(m.point);
  }
  std::sort(points.rbegin(), points.rend());  // deepest first
  for (const auto& p : points) (void)umount2(p.c_str(), MNT_DETACH);
  if (!S_ISDIR(st.st_mode)) {
    if (unlink(dir.c_str()) != 0 && errno != ENOENT) return FailErrno("unlink " + dir);
    return {};
  }
  tl_remove_errno = 0;
  tl_remove_path.clear();
  if (nftw(abs.c_str(), RemoveEntry, 64, FTW_DEPTH | FTW_PHYS | FTW_MOUNT) != 0) {
    return FailErrno("walk " + abs);
  }
  if (tl_remove_errno != 0)
    return Fail(Error::FromErrno(tl_remove_errno, "remove " + tl_remove_path));
  return {};
}

bool TreeInUse(const std::string& dir) {
  char real[PATH_MAX];
  if (realpath(dir.c_str(), real) == nullptr) return false;
  std::string abs(real);
  // Which mount holds `dir`, and so its path within that filesystem.
  const MountLine* best = nullptr;
  auto self = ReadMountInfo("/proc/self/mountinfo");
  for (const auto& m : self) {
    if (IsUnder(abs, m.point) && (best == nullptr || m.point.size() >= best->point.size())) {
      best = &m;
    }
  }
  if (best == nullptr) return false;
  std::string rel = abs.substr(best->point == "/" ? 0 : best->point.size());
  if (best->root != "/") rel = best->root + rel;
  if (rel.empty()) rel = "/";
  std::error_code ec;
  for (fs::directory_iterator it("/proc", ec), end; !ec && it != end; it.increment(ec)) {
    const std::string pid = it->path().filename().string();
    if (pid.empty() || !std::all_of(pid.begin(), pid.end(), ::isdigit)) continue;
    for (const auto& m : ReadMountInfo("/proc/" + pid + "/mountinfo")) {
      if (m.dev == best->dev && IsUnder(m.root, rel)) return true;
    }
  }
  return false;
}

void CleanupTemplateLeftovers(const TemplateLayout& layout, std::string_view name) {
  const std::string building = ".build-" + std::string(name) + ".";
  const std::string retired = ".retired-" + std::string(name) + "-";
  std::error_code ec;
  std::vector<std::string> stale;
  for (fs::directory_iterator it(layout.dir(), ec), end; !ec && it != end; it.increment(ec)) {
    std::string f = it->path().filename().string();
    if (f.rfind(building, 0) == 0) {
      stale.push_back(it->path().string());
    } else if (f.rfind(retired, 0) == 0 && !TreeInUse(it->path().string())) {
      stale.push_back(it->path().string());
    }
  }
  for (const auto& p : stale) (void)RemoveTree(p);
}

Status InstallTemplate(const TemplateLayout& layout, std::string_view name, StagingDir& stage,
                       TemplateManifest manifest) {
  ASB_TRY(ValidateTemplateName(name));
  if (access((stage.rootfs() + "/bin/sh").c_str(), X_OK) != 0) {
    return Fail(Error::InvalidArgument("template '" + std::string(name) +
                                       "': the built rootfs has no /bin/sh"));
  }
  manifest.name = std::string(name);
  // Its workdir and user become its sandboxes' command defaults: one they cannot honour is
  // refused now, while the old template is still in place.
  ASB_TRY(ResolveTemplateDefaults(manifest));
  if (manifest.display_name.empty()) manifest.display_name = manifest.name;
  if (manifest.created_at.empty()) manifest.created_at = NowRfc3339();
  if (manifest.size_bytes == 0) {
    tl_size_bytes = 0;
    nftw(stage.rootfs().c_str(), AddSize, 64, FTW_PHYS | FTW_MOUNT);
    manifest.size_bytes = static_cast<int64_t>(tl_size_bytes);
  }
  ASB_TRY(WriteFileSynced(stage.path() + "/manifest.json", ManifestToJson(manifest)));
  ASB_TRY(WriteFileSynced(stage.path() + "/.stamp", manifest.recipe_hash + "\n"));
  {
    UniqueFd dfd(open(stage.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!dfd) return FailErrno("open " + stage.path());
    if (syncfs(dfd.get()) != 0) return FailErrno("syncfs " + stage.path());
  }
  const std::string dest = layout.Dir(name);
  struct stat st;
  if (lstat(dest.c_str(), &st) == 0) {
    if (renameat2(AT_FDCWD, stage.path().c_str(), AT_FDCWD, dest.c_str(), RENAME_EXCHANGE) != 0) {
      return FailErrno("renameat2 " + stage.path() + " <-> " + dest);
    }
  } else {
    if (rename(stage.path().c_str(), dest.c_str()) != 0) {
      return FailErrno("rename " + stage.path() + " -> " + dest);
    }
    stage.Release();
    return {};
  }
  // The previous version is now at stage.path(). Sandboxes running from it keep it.
  if (TreeInUse(stage.path())) {
    auto now = std::chrono::duration_cast<std::chrono::milliseconds>(
                   std::chrono::system_clock::now().time_since_epoch())
                   .count();
    std::string retired =
        layout.dir() + "/.retired-" + std::string(name) + "-" + std::to_string(now);
    if (rename(stage.path().c_str(), retired.c_str()) == 0) stage.Release();
  }
  stage = StagingDir();  // removes the previous version unless it was retired
  return {};
}

Status RemoveTemplate(const TemplateLayout& layout, std::string_view name) {
  ASB_TRY(ValidateTemplateName(name));
  ASB_ASSIGN_OR_RETURN(TemplateLock lock, LockTemplate(layout, name));
  const std::string dest = layout.Dir(name);
  struct stat st;
  if (lstat(dest.c_str(), &st) != 0) {
    return Fail(Error::NotFound("template '" + std::string(name) + "' is not installed"));
  }
  if (TreeInUse(dest)) {
    return Fail(
        Error::Conflict("template '" + std::string(name) + "' is in use by a running sandbox"));
  }
  // Move it out of the catalog's sight first, so a reader never sees a half-removed tree.
  ASB_ASSIGN_OR_RETURN(StagingDir gone, MakeStagingDir(layout, name));
  if (renameat2(AT_FDCWD, dest.c_str(), AT_FDCWD, gone.path().c_str(), RENAME_EXCHANGE) != 0) {
    return FailErrno("renameat2 " + dest + " <-> " + gone.path());
  }
  // `dest` is now the empty staging dir; remove it, and the old tree with `gone`.
  if (rmdir(dest.c_str()) != 0) return FailErrno("rmdir " + dest);
  Status removed = RemoveTree(gone.path());
  gone.Release();
  return removed;
}

}  // namespace asb::core
