#include "templates/dockerfile_build.h"

#include <fcntl.h>
#include <openssl/evp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <optional>
#include <vector>

#include "core/template_defaults.h"
#include "core/template_install.h"
#include "templates/build_sandbox.h"
#include "templates/context_copy.h"
#include "templates/dockerfile.h"
#include "templates/rooted_dir.h"
#include "templates/run_time_view.h"
#include "templates/stage.h"
#include "templates/user_db.h"

namespace asb::templates {

namespace {

using Kind = DockerStep::Kind;
constexpr char kDefaultPath[] = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

Result<std::string> ReadDockerfile(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) {
    if (errno == ENOENT) return Fail(Error::NotFound("Dockerfile " + path + " not found"));
    return FailErrno("open " + path);
  }
  std::string text;
  char buf[65536];
  for (;;) {
    ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return FailErrno("read " + path);
    if (n == 0) break;
    text.append(buf, static_cast<size_t>(n));
    if (text.size() > kMaxDockerfileBytes) {
      return Fail(Error::InvalidArgument("Dockerfile is larger than " +
                                         std::to_string(kMaxDockerfileBytes) + " bytes"));
    }
  }
  return text;
}

std::string Sha256Hex(std::string_view data) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(data.data(), data.size(), md, &len, EVP_sha256(), nullptr);
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < len; ++i) {
    out += hex[md[i] >> 4];
    out += hex[md[i] & 15];
  }
  return out;
}

std::string Describe(const DockerStep& s) {
  static const char* names[] = {"RUN", "COPY", "ADD", "ENV", "WORKDIR", "USER", "LABEL", "ARG"};
  std::string out = names[static_cast<int>(s.kind)];
  if (s.kind == Kind::kRun) {
    out += " " + (s.args.size() == 3 && s.args[0] == "/bin/sh" && s.args[1] == "-c"
                      ? s.args[2]
                      : "[" + std::to_string(s.args.size()) + " args] " + s.args[0]);
  } else if (s.kind == Kind::kCopy || s.kind == Kind::kAdd) {
    for (const auto& a : s.args) out += " " + a;
    out += " " + s.dest;
  } else if (s.kind == Kind::kWorkdir || s.kind == Kind::kUser) {
    out += " " + s.value;
  } else {
    for (const auto& [k, v] : s.pairs) out += " " + k + "=" + (s.kind == Kind::kEnv ? "…" : v);
  }
  if (out.size() > 200) out = out.substr(0, 197) + "...";
  return out;
}

std::vector<std::string> SplitTools(const std::string& s) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i <= s.size()) {
    size_t j = s.find(',', i);
    if (j == std::string::npos) j = s.size();
    std::string t = s.substr(i, j - i);
    t.erase(0, t.find_first_not_of(" \t"));
    t.erase(t.find_last_not_of(" \t") + 1);
    if (!t.empty()) out.push_back(t);
    i = j + 1;
  }
  return out;
}

// The state a Dockerfile's steps change, in the order docker applies them.
struct BuildState {
  std::vector<std::pair<std::string, std::string>> env;  // ENV, in definition order
  std::vector<std::pair<std::string, std::string>> args;
  std::map<std::string, std::string> labels;
  std::string workdir = "/";
  bool workdir_set = false;
  std::string user;  // empty: root while building
  bool user_set = false;

  void SetEnv(const std::string& k, const std::string& v) {
    auto it = std::find_if(env.begin(), env.end(), [&](const auto& p) { return p.first == k; });
    if (it != env.end()) {
      it->second = v;
    } else {
      env.emplace_back(k, v);
    }
  }
  std::vector<std::string> RunEnv(const ResolvedUser& u) const {
    std::map<std::string, std::string> m;
    for (const auto& [k, v] : args) m[k] = v;
    for (const auto& [k, v] : env) m[k] = v;  // ENV wins over ARG
    if (!m.count("PATH")) m["PATH"] = kDefaultPath;
    if (!m.count("HOME")) m["HOME"] = u.uid == 0 ? "/root" : u.home;
    std::vector<std::string> out;
    for (const auto& [k, v] : m) out.push_back(k + "=" + v);
    return out;
  }
};

// The host's resolver for RUN steps (the network is the host's); FinishRootfs empties it again.
Status CopyHostResolver(const RootedDir& root) {
  UniqueFd in(::open("/etc/resolv.conf", O_RDONLY | O_CLOEXEC));
  if (!in) return {};
  ASB_ASSIGN_OR_RETURN(UniqueFd etc, root.OpenDir("etc", true, 0755, 0, 0));
  ASB_TRY(RemoveAt(etc.get(), "resolv.conf"));
  UniqueFd out(::openat(etc.get(), "resolv.conf",
                        O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644));
  if (!out) return FailErrno("create /etc/resolv.conf");
  char buf[8192];
  ssize_t n;
  while ((n = ::read(in.get(), buf, sizeof buf)) > 0) {
    if (!WriteAll(out.get(), buf, static_cast<size_t>(n))) return FailErrno("write resolv.conf");
  }
  return {};
}

// (WithContext keeps a host call's mark: its host text never reaches a client, ADR 0016.)
Error AtLine(const DockerStep& s, const Error& e) {
  return e.WithContext("Dockerfile line " + std::to_string(s.line));
}

class Builder {
 public:
  Builder(const DockerfileBuildOptions& o, const RootedDir& ctx, const RootedDir& root,
          const std::string& rootfs)
      : o_(o), ctx_(ctx), root_(root), rootfs_(rootfs) {}

  Status Step(const DockerStep& s, BuildState* st) {
    switch (s.kind) {
      case Kind::kRun:
        return Run(s, *st);
      case Kind::kCopy:
      case Kind::kAdd:
        return Copy(s, *st);
      case Kind::kEnv:
        for (const auto& [k, v] : s.pairs) st->SetEnv(k, v);
        return {};
      case Kind::kArg:
        for (const auto& kv : s.pairs) st->args.push_back(kv);
        return {};
      case Kind::kLabel:
        for (const auto& [k, v] : s.pairs) st->labels[k] = v;
        return {};
      case Kind::kWorkdir:
        st->workdir = s.value;
        st->workdir_set = true;
        ASB_TRY(root_.OpenDir(s.value, /*create=*/true, 0755, 0, 0));
        return {};
      case Kind::kUser:
        st->user = s.value;
        st->user_set = true;
        return {};
    }
    return {};
  }

 private:
  Result<ResolvedUser> User(const BuildState& st) const {
    if (st.user.empty()) return ResolvedUser{0, 0, "/root"};
    return ResolveUser(root_, st.user);
  }

  Status Run(const DockerStep& s, const BuildState& st) {
    ASB_ASSIGN_OR_RETURN(ResolvedUser u, User(st));
    ASB_TRY(CopyHostResolver(root_));
    BuildCommand c;
    c.rootfs = rootfs_;
    c.argv = s.args;
    c.env = st.RunEnv(u);
    c.workdir = st.workdir;
    c.uid = u.uid;
    c.gid = u.gid;
    c.stdout_fd = o_.output_fd;
    c.stderr_fd = o_.output_fd;
    c.resources = o_.resources;
    ASB_ASSIGN_OR_RETURN(int status, RunBuildCommand(c));
    if (status != 0) {
      return Fail(Error::InvalidArgument(Describe(s) + ": exit status " + std::to_string(status)));
    }
    return {};
  }

  Status Copy(const DockerStep& s, const BuildState& st) {
    ResolvedUser owner{0, 0, "/"};
    if (!s.chown.empty()) {
      ASB_ASSIGN_OR_RETURN(owner, ResolveUser(root_, s.chown));
    }
    const std::string dest = s.dest[0] == '/' ? s.dest : st.workdir + "/" + s.dest;
    for (const auto& src : s.args) {
      CopyRequest req;
      req.source = src;
      req.dest = dest;
      req.dest_is_dir =
          s.dest.back() == '/' || (s.dest.size() >= 2 && s.dest.substr(s.dest.size() - 2) == "/.");
      req.unpack_archives = s.kind == Kind::kAdd;
      req.owner = owner;
      ASB_TRY(CopyFromContext(ctx_, root_, req));
    }
    return {};
  }

  const DockerfileBuildOptions& o_;
  const RootedDir& ctx_;
  const RootedDir& root_;
  std::string rootfs_;
};

// /bin/sh resolved inside the rootfs: an executable regular file.
bool HasShell(const RootedDir& root) {
  auto fd = root.OpenRead("bin/sh");
  struct stat st;
  return fd && ::fstat(fd->get(), &st) == 0 && S_ISREG(st.st_mode) && (st.st_mode & 0111) != 0;
}

std::string Dirname(const std::string& path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

}  // namespace

Result<core::TemplateManifest> BuildFromDockerfile(const DockerfileBuildOptions& o) {
  ASB_ASSIGN_OR_RETURN(std::string text, ReadDockerfile(o.dockerfile));
  ASB_ASSIGN_OR_RETURN(Dockerfile df, ParseDockerfile(text));
  std::string name = o.name;
  if (name.empty()) {
    for (const auto& s : df.steps) {
      for (const auto& [k, v] : s.pairs) {
        if (s.kind == Kind::kLabel && k == "template.name") name = v;
      }
    }
  }
  if (name.empty()) {
    return Fail(Error::InvalidArgument("name the template: --name NAME or LABEL template.name"));
  }
  ASB_TRY(core::ValidateTemplateName(name));
  const std::string context = o.context.empty() ? Dirname(o.dockerfile) : o.context;
  ASB_ASSIGN_OR_RETURN(RootedDir ctx, RootedDir::Open(context));

  core::TemplateLayout layout(o.templates_dir);
  BuildState state;
  core::TemplateManifest base;
  if (df.from != "scratch") {
    if (core::InstalledStamp(layout, df.from).empty()) {
      return Fail(Error::NotFound("Dockerfile line " + std::to_string(df.from_line) + ": FROM " +
                                  df.from + ": no such template installed"));
    }
    if (auto m = core::ReadManifest(layout.Manifest(df.from))) base = *m;
    for (const auto& [k, v] : base.env) state.env.emplace_back(k, v);
    state.labels = base.labels;
    if (!base.workdir.empty()) state.workdir = base.workdir;
  }
  // The final USER becomes the default user of the template's sandboxes, which have only
  // "sandbox" and "root": refuse any other before a step runs (InstallTemplate checks again).
  const DockerStep* last_user = nullptr;
  for (const auto& s : df.steps) {
    if (s.kind == Kind::kUser) last_user = &s;
  }
  if (auto u = core::ResolveTemplateUser(last_user ? last_user->value : base.user); !u) {
    if (last_user == nullptr) return Fail(std::move(u).error().WithContext("FROM " + df.from));
    return Fail(AtLine(*last_user, u.error().WithContext("USER")));
  }

  ASB_ASSIGN_OR_RETURN(core::TemplateLock lock, core::LockTemplate(layout, name));
  core::CleanupTemplateLeftovers(layout, name);
  ASB_ASSIGN_OR_RETURN(core::StagingDir stage, core::MakeStagingDir(layout, name));
  const size_t total = df.steps.size() + 1;
  o.progress("Step 1/" + std::to_string(total) + " : FROM " + df.from);
  if (df.from == "scratch") {
    if (::mkdir(stage.rootfs().c_str(), 0755) != 0) return FailErrno("mkdir " + stage.rootfs());
  } else {
    // Hold the FROM template's lock while copying it, so a rebuild of it cannot swap it
    // mid-copy (ours is already held when FROM names the template being rebuilt).
    std::optional<core::TemplateLock> from_lock;
    if (df.from != name) {
      ASB_ASSIGN_OR_RETURN(from_lock, core::LockTemplate(layout, df.from));
    }
    ASB_TRY_CTX(CopyRootfs(layout.Rootfs(df.from), stage.rootfs()), "FROM " + df.from);
  }
  ASB_ASSIGN_OR_RETURN(RootedDir root, RootedDir::Open(stage.rootfs()));
  Builder builder(o, ctx, root, stage.rootfs());
  for (size_t i = 0; i < df.steps.size(); ++i) {
    const auto& s = df.steps[i];
    o.progress("Step " + std::to_string(i + 2) + "/" + std::to_string(total) + " : " + Describe(s));
    if (auto st = builder.Step(s, &state); !st) return Fail(AtLine(s, st.error()));
  }
  if (state.workdir_set || !base.workdir.empty()) {
    // Docker makes a missing WORKDIR when a container starts; our rootfs is read-only then. One
    // under /workspace reaches every sandbox through the workspace seed.
    auto workdir = core::ResolveTemplateWorkdir(state.workdir);
    if (!workdir) return Fail(std::move(workdir).error().WithContext("WORKDIR"));
    auto dir = root.OpenDir(*workdir, /*create=*/true, 0755, 0, 0);
    if (!dir) return Fail(std::move(dir).error().WithContext("WORKDIR " + state.workdir));
  }
  o.progress("finishing the rootfs (sandbox user, mount points)");
  ASB_TRY_CTX(FinishUntrustedRootfs(stage.rootfs()), "finish rootfs");
  for (const std::string& note : RunTimeNotes(stage.rootfs())) o.progress(note);
  if (!HasShell(root)) {
    return Fail(
        Error::InvalidArgument("the built rootfs has no executable /bin/sh; sandboxes "
                               "need one (FROM scratch: ADD a rootfs archive)"));
  }

  core::TemplateManifest m;
  m.name = name;
  m.source = "dockerfile";
  m.base = df.from;
  m.labels = state.labels;
  auto label = [&](const char* k) {
    auto it = state.labels.find(k);
    return it == state.labels.end() ? std::string() : it->second;
  };
  m.display_name = label("template.displayName");
  m.description = label("template.description");
  m.version = label("template.version");
  m.tools = state.labels.count("template.tools") ? SplitTools(label("template.tools")) : base.tools;
  for (const auto& [k, v] : state.env) m.env[k] = v;
  m.workdir = state.workdir_set || !base.workdir.empty() ? state.workdir : "";
  m.user = state.user_set ? state.user : base.user;
  m.resources = base.resources;
  m.recipe_hash = Sha256Hex(text);
  ASB_TRY(core::InstallTemplate(layout, name, stage, m));
  auto installed = core::ReadManifest(layout.Manifest(name));
  if (!installed) return Fail(installed.error());
  o.progress("installed template " + name);
  return *installed;
}

}  // namespace asb::templates
