#include "cli/template_build.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <thread>
#include <vector>

#include "cli/exec_stream.h"
#include "cli/local_sandbox.h"
#include "cli/run_leftovers.h"
#include "cli/run_support.h"
#include "common/ids.h"
#include "common/unique_fd.h"
#include "core/template_install.h"
#include "isolation/ns/ns_backend.h"

namespace asb::cli {

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

double Since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// Single-quotes `s` for /bin/sh.
std::string ShellQuote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

// Runs argv with stdout+stderr into a pipe; every line goes to `log` and, when it looks like
// progress (mmdebstrap's "I: " lines, or any line when `all_lines`), to `progress`. Returns the
// exit status (128+N for a signal).
Result<int> RunLogged(const std::vector<std::string>& argv, int log_fd,
                      const ProgressFn& progress) {
  UniqueFd rd, wr;
  if (!MakePipe(&rd, &wr)) return FailErrno("pipe");
  pid_t pid = fork();
  if (pid < 0) return FailErrno("fork");
  if (pid == 0) {
    dup2(wr.get(), STDOUT_FILENO);
    dup2(wr.get(), STDERR_FILENO);
    int devnull = open("/dev/null", O_RDONLY);
    if (devnull >= 0) dup2(devnull, STDIN_FILENO);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execvp(args[0], args.data());
    _exit(127);
  }
  wr.Reset();
  std::string buf;
  char chunk[4096];
  for (;;) {
    ssize_t n = read(rd.get(), chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    if (log_fd >= 0) (void)WriteAll(log_fd, chunk, static_cast<size_t>(n));
    buf.append(chunk, static_cast<size_t>(n));
    size_t nl;
    while ((nl = buf.find('\n')) != std::string::npos) {
      std::string line = buf.substr(0, nl);
      buf.erase(0, nl + 1);
      if (line.rfind("I: ", 0) == 0 || line.rfind("E: ", 0) == 0 || line.rfind("W: ", 0) == 0) {
        progress("mmdebstrap: " + line);
      }
    }
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return FailErrno("waitpid");
  }
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return WEXITSTATUS(status);
}

std::string TailOfFile(const std::string& path, size_t lines) {
  std::ifstream in(path);
  std::vector<std::string> all;
  std::string line;
  while (std::getline(in, line)) all.push_back(line);
  std::string out;
  for (size_t i = all.size() > lines ? all.size() - lines : 0; i < all.size(); ++i) {
    out += "  " + all[i] + "\n";
  }
  return out;
}

// The setup commands as one script run by /bin/sh -e inside the new rootfs, with the spec's env.
std::string SetupScript(const core::TemplateSpec& spec) {
  std::string s = "set -e\nexport DEBIAN_FRONTEND=noninteractive HOME=/root\n";
  for (const auto& [k, v] : spec.env) s += "export " + k + "=" + ShellQuote(v) + "\n";
  for (const auto& c : spec.setup) s += "(\n" + c + "\n)\n";
  return s;
}

Status RunMmdebstrap(const core::TemplateSpec& spec, const TemplateBuildOptions& o,
                     const core::StagingDir& stage, const std::string& log_path,
                     const ProgressFn& progress) {
  const std::string cache = o.data_dir + "/cache/debs";
  std::error_code ec;
  fs::create_directories(cache, ec);
  std::vector<std::string> argv = {
      "mmdebstrap", "--variant=minbase", "--mode=root", "--format=directory",
      "--aptopt=Acquire::Retries \"3\"", "--dpkgopt=path-exclude=/usr/share/man/*",
      "--dpkgopt=path-exclude=/usr/share/info/*", "--dpkgopt=path-exclude=/usr/share/doc/*",
      "--dpkgopt=path-include=/usr/share/doc/*/copyright",
      "--dpkgopt=path-exclude=/usr/share/locale/*",
      "--dpkgopt=path-include=/usr/share/locale/locale.alias",
      // Reuse downloaded .debs across builds (mmdebstrap(1), "EXAMPLES"); apt re-checks their
      // hashes against the index, and fetches what is missing or stale.
      "--setup-hook=mkdir -p \"$1\"/var/cache/apt/archives/",
      "--setup-hook=sync-in " + cache + " /var/cache/apt/archives/",
      "--customize-hook=sync-out /var/cache/apt/archives " + cache};
  std::string include;
  for (const auto& p : spec.packages) include += (include.empty() ? "" : ",") + p;
  if (!include.empty()) argv.push_back("--include=" + include);
  if (!spec.setup.empty()) {
    const std::string script = stage.path() + "/setup.sh";
    std::ofstream(script) << SetupScript(spec);
    argv.push_back("--customize-hook=cp " + script + " \"$1\"/tmp/.asb-setup.sh");
    argv.push_back("--customize-hook=chroot \"$1\" /bin/sh -e /tmp/.asb-setup.sh");
    argv.push_back("--customize-hook=rm -f \"$1\"/tmp/.asb-setup.sh");
  }
  argv.insert(argv.end(), {"bookworm", stage.rootfs(), "deb " + o.mirror + " bookworm main",
                           "deb " + o.mirror + " bookworm-updates main",
                           "deb " + o.security_mirror + " bookworm-security main"});
  for (int attempt = 1; attempt <= o.mirror_attempts; ++attempt) {
    UniqueFd log(open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
    if (!log) return FailErrno("open " + log_path);
    ASB_ASSIGN_OR_RETURN(int rc, RunLogged(argv, log.get(), progress));
    if (rc == 0) return {};
    ASB_TRY(core::RemoveTree(stage.rootfs()));  // mmdebstrap wants to create it afresh
    if (attempt < o.mirror_attempts) {
      progress("mmdebstrap failed (exit " + std::to_string(rc) + "); retrying once in 5 s");
      std::this_thread::sleep_for(std::chrono::seconds(5));
      continue;
    }
    return Fail(Error::Backend("mmdebstrap failed (exit " + std::to_string(rc) +
                               "); the installed template is kept. Last lines of " + log_path +
                               ":\n" + TailOfFile(log_path, 25)));
  }
  return {};
}

}  // namespace

Result<int> RunInRootfs(const std::string& rootfs, const std::string& template_name,
                        const std::map<std::string, std::string>& env,
                        const core::TemplateResources& resources_of_template,
                        const std::string& command, const TemplateBuildOptions& o,
                        std::string* output) {
  ::signal(SIGPIPE, SIG_IGN);
  // A sandbox as the server would start from this template: its default resources within the
  // server's limits (cli/local_sandbox.h), in the state dir and cgroup of `agent-sandbox run`.
  ASB_ASSIGN_OR_RETURN(const core::SandboxResources resources,
                       LocalResources(resources_of_template, ResourceFlags{}));
  isolation::ns::NsBackendOptions bo = RunBackendOptions(o.data_dir, o.sandboxd);
  bo.default_workspace_bytes = static_cast<uint64_t>(resources.workspace_mb) << 20;
  ASB_ASSIGN_OR_RETURN(auto backend, isolation::ns::MakeNsBackend(bo));
  isolation::SandboxSpec spec;
  spec.id = NewId("sb_");
  spec.template_name = template_name;
  spec.rootfs = rootfs;
  core::ApplyResources(resources, &spec);
  spec.env = env;
  SandboxGuard guard(*backend, spec.id);
  ASB_ASSIGN_OR_RETURN(auto sandbox, backend->Create(spec).map_error([](Error e) {
    return std::move(e).WithContext("create the smoke-test sandbox");
  }));
  guard.set(sandbox);
  protocol::ExecRequest req;
  req.argv = {"/bin/sh", "-c", command};
  req.env = env;
  req.cwd = "/workspace";
  req.user = protocol::kUserSandbox;
  req.timeout_ms = static_cast<uint64_t>(o.smoke_timeout_seconds * 1000);
  ASB_ASSIGN_OR_RETURN(auto channel,
                       guard.sandbox().connection()->Open(protocol::EncodeExecRequest(req)));
  UniqueFd out(memfd_create("smoke-output", MFD_CLOEXEC));
  if (!out) return FailErrno("memfd_create");
  StreamIo io;
  io.stdout_fd = out.get();
  io.stderr_fd = out.get();
  ASB_ASSIGN_OR_RETURN(auto result, StreamExec(*channel, io));
  if (output != nullptr) {
    off_t size = lseek(out.get(), 0, SEEK_END);
    off_t from = size > 65536 ? size - 65536 : 0;
    output->resize(static_cast<size_t>(size - from));
    if (pread(out.get(), output->data(), output->size(), from) < 0) output->clear();
  }
  return ExitCodeFor(result);
}

Result<TemplateBuildResult> BuildTemplate(const core::TemplateSpec& spec,
                                          const TemplateBuildOptions& o,
                                          const ProgressFn& progress) {
  if (geteuid() != 0) {
    return Fail(Error::PermissionDenied(
        "template build must run as root (mmdebstrap --mode=root, and the smoke test's sandbox)"));
  }
  const auto start = Clock::now();
  core::TemplateLayout layout(o.data_dir + "/templates");
  const std::string hash = core::TemplateRecipeHash(spec, kTemplateBuilderId);
  ASB_ASSIGN_OR_RETURN(auto lock, core::LockTemplate(layout, spec.name));
  core::CleanupTemplateLeftovers(layout, spec.name);

  TemplateBuildResult result;
  if (!o.force && core::InstalledStamp(layout, spec.name) == hash) {
    auto m = core::ReadManifest(layout.Manifest(spec.name));
    if (m) {
      result.manifest = std::move(*m);
      result.seconds = Since(start);
      progress("up to date (" + layout.Dir(spec.name) + ", recipe " + hash.substr(0, 12) + ")");
      return result;
    }
  }

  ASB_ASSIGN_OR_RETURN(core::StagingDir stage, core::MakeStagingDir(layout, spec.name));
  const std::string log_path = layout.dir() + "/.build-" + spec.name + ".log";
  progress("building " + std::to_string(spec.packages.size()) + " packages from bookworm" +
           (spec.setup.empty() ? "" : " + " + std::to_string(spec.setup.size()) + " setup steps") +
           " into " + stage.path() + " (log: " + log_path + ")");
  ASB_TRY(RunMmdebstrap(spec, o, stage, log_path, progress));
  (void)unlink(log_path.c_str());  // kept only when mmdebstrap failed (the error names it)
  (void)unlink((stage.path() + "/setup.sh").c_str());
  progress("mmdebstrap done in " + std::to_string(static_cast<int>(Since(start))) +
           " s; finishing the rootfs");
  ASB_TRY(core::FinishRootfs(stage.rootfs()));

  progress("smoke test: " + spec.smoke_test.substr(0, spec.smoke_test.find('\n')) +
           (spec.smoke_test.find('\n') != std::string::npos ? " ..." : ""));
  std::string output;
  const auto smoke_start = Clock::now();
  ASB_ASSIGN_OR_RETURN(int code, RunInRootfs(stage.rootfs(), spec.name, spec.env, spec.resources,
                                             spec.smoke_test, o, &output));
  if (code != 0) {
    return Fail(Error::InvalidArgument(
        "template '" + spec.name + "': the smoke test failed with exit code " +
        std::to_string(code) + "; the installed template is kept. Its output:\n" + output));
  }
  progress("smoke test passed in " + std::to_string(Since(smoke_start)).substr(0, 4) + " s");

  core::TemplateManifest manifest = core::ManifestFromSpec(spec, hash);
  ASB_TRY(core::InstallTemplate(layout, spec.name, stage, manifest));
  auto installed = core::ReadManifest(layout.Manifest(spec.name));
  result.manifest = installed ? std::move(*installed) : manifest;
  result.built = true;
  result.seconds = Since(start);
  progress("installed " + layout.Dir(spec.name) + " (" +
           std::to_string(result.manifest.size_bytes >> 20) + " MiB, " +
           std::to_string(spec.packages.size()) + " packages, " +
           std::to_string(static_cast<int>(result.seconds)) + " s)");
  return result;
}

}  // namespace asb::cli
