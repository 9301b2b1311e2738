// `agent-sandbox run [options] -- CMD...`: the `docker run --rm` habit. Creates an ephemeral
// sandbox with the ns backend (or, with --backend microvm, the microvm one) directly (no
// server), runs CMD in it with its output streamed to
// this terminal as it comes, passes the exit code through, and destroys the sandbox afterwards:
// after a command that ended, its watcher does (RunClaim::HandOff), so run exits at once and the
// sandbox is gone within a few tens of milliseconds; after Ctrl-C or SIGTERM
// (cli/signal_forwarder.h) run itself does before it exits; and the watcher does when run is
// SIGKILLed (cli/run_leftovers.h).
//
// CMD is an argv, exactly as given (like `docker run`): `run -- sh -c 'a | b'` for a shell.
// Exit codes (cli/command.h): the command's own; 128+N if signal N killed it; 124 on --timeout;
// 125 when agent-sandbox itself failed.
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "cli/command.h"
#include "cli/exec_stream.h"
#include "cli/local_sandbox.h"
#include "cli/run_leftovers.h"
#include "cli/run_support.h"
#include "cli/signal_forwarder.h"
#include "cli/terminal.h"
#include "common/ids.h"
#include "common/log.h"
#include "common/unique_fd.h"
#include "core/sandbox_resources.h"
#include "core/template_defaults.h"
#include "core/template_manifest.h"
#include "isolation/ns/ns_backend.h"

namespace asb::cli {
namespace {

struct RunOptions {
  std::string template_name = "base";
  std::string backend = "ns";  // a kRunBackends name (cli/run_leftovers.h)
  ResourceFlags resources;     // checked by core, as a create request's (cli/local_sandbox.h)
  double timeout_s = 0;
  std::vector<std::string> env;
  std::string workdir;  // "" = the template's WORKDIR, else /workspace
  std::string user;     // "" = the template's USER, else sandbox
  std::string data_dir = DefaultDataDir();
  bool interactive = false;
  bool tty = false;
  std::string cidfile;
  std::vector<std::string> argv;
};

Result<int> Run(const RunOptions& o) {
  ASB_ASSIGN_OR_RETURN(auto env, ParseEnvAssignments(o.env));
  ASB_ASSIGN_OR_RETURN(std::string rootfs, TemplateRootfs(o.data_dir, o.template_name));
  // The template's environment (its manifest, ADR 0012) under the command's own --env, its
  // WORKDIR and USER under --workdir and --user (core/template_defaults.h), its default
  // resources under the flags, all checked as the server checks a create request.
  core::TemplateManifest manifest;
  if (auto m =
          core::ReadManifest(o.data_dir + "/templates/" + o.template_name + "/manifest.json")) {
    manifest = std::move(*m);
  }
  ASB_ASSIGN_OR_RETURN(const core::SandboxResources resources,
                       LocalResources(manifest.resources, o.resources));
  ASB_ASSIGN_OR_RETURN(const core::CommandDefaults defaults,
                       core::ResolveTemplateDefaults(manifest));
  ASB_ASSIGN_OR_RETURN(std::string sandboxd, FindSandboxd());

  // Our own output may go to a pipe whose reader leaves; that must not kill us before cleanup.
  ::signal(SIGPIPE, SIG_IGN);
  int tty_fd = !o.tty                    ? -1
               : ::isatty(STDOUT_FILENO) ? STDOUT_FILENO
               : ::isatty(STDIN_FILENO)  ? STDIN_FILENO
                                         : -1;
  ASB_ASSIGN_OR_RETURN(auto signals, SignalForwarder::Start(tty_fd));

  ASB_ASSIGN_OR_RETURN(RunBackend run, MakeRunBackend(o.backend, o.data_dir, sandboxd));
  isolation::Backend* const backend = run.backend.get();
  // Sandboxes of runs that were SIGKILLed together with their watchers (cli/run_leftovers.h).
  RemoveDeadRunLeftovers(*backend, run.state_dir);

  isolation::SandboxSpec spec;
  spec.id = NewId("sb_");
  spec.template_name = o.template_name;
  spec.rootfs = rootfs;
  core::ApplyResources(resources, &spec);
  spec.env = manifest.env;

  if (!o.cidfile.empty()) {
    std::string line = spec.id + "\n";
    UniqueFd fd(::open(o.cidfile.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
    if (!fd || !WriteAll(fd.get(), line.data(), line.size())) {
      return FailErrno("write --cidfile " + o.cidfile);
    }
  }
  spdlog::debug("run: sandbox_id={} template={} argc={} argv0={}", spec.id, spec.template_name,
                o.argv.size(), o.argv.empty() ? "" : o.argv[0]);
  // Claimed and watched before it exists, so that a SIGKILL at any later point is cleaned up;
  // released after the guard has destroyed it.
  ASB_ASSIGN_OR_RETURN(auto claim, RunClaim::Start(o.data_dir, o.backend, spec.id));
  SandboxGuard guard(*backend, spec.id);
  ASB_ASSIGN_OR_RETURN(auto sandbox, backend->Create(spec).map_error([](Error e) {
    return std::move(e).WithContext("create sandbox");
  }));
  guard.set(sandbox);
  if (int sig = signals->first_signal()) return 128 + sig;  // interrupted while creating

  protocol::ExecRequest req;
  req.argv = o.argv;
  req.env = std::move(env);
  req.cwd = o.workdir.empty() ? defaults.workdir : o.workdir;
  req.user = o.user.empty() ? defaults.user : o.user;
  req.timeout_ms = static_cast<uint64_t>(o.timeout_s * 1000.0);
  req.stdin_pipe = o.interactive;
  if (o.tty) {
    req.pty =
        (tty_fd >= 0 ? TerminalSize(tty_fd) : std::nullopt).value_or(protocol::ExecRequest::Pty{});
  }
  ASB_ASSIGN_OR_RETURN(auto channel, sandbox->connection()->Open(protocol::EncodeExecRequest(req)));
  std::unique_ptr<RawTerminal> raw;  // restored before the sandbox is destroyed
  if (o.tty && o.interactive && ::isatty(STDIN_FILENO)) {
    ASB_ASSIGN_OR_RETURN(raw, RawTerminal::Enter(STDIN_FILENO));
  }
  signals->Attach(channel);
  StreamIo io;
  io.stdin_fd = o.interactive ? STDIN_FILENO : -1;
  auto result = StreamExec(*channel, io);
  signals->Attach(nullptr);
  if (!result) {
    if (int sig = signals->first_signal()) return 128 + sig;  // cancelled by a second Ctrl-C
    return Fail(result.error());
  }
  if (result->oom_killed) {
    std::fprintf(stderr, "agent-sandbox: the command ran out of memory (limit %llu MiB)\n",
                 static_cast<unsigned long long>(resources.memory_mb));
  }
  // The command is over and its output out: the watcher destroys the sandbox while we exit.
  // (Failures and signals above keep the destroy here, before run answers.)
  raw.reset();
  std::fflush(stdout);
  std::fflush(stderr);
  if (claim->HandOff()) guard.Release();
  return ExitCodeFor(*result);
}

}  // namespace

void RegisterRunCommand(CLI::App& app) {
  auto o = std::make_shared<RunOptions>();
  CLI::App* sub = app.add_subcommand(
      "run", "Run a command in a new sandbox, stream its output, then destroy the sandbox");
  sub->add_option("--template,-T", o->template_name, "Template whose rootfs the sandbox runs")
      ->capture_default_str();
  sub->add_option(
         "--backend", o->backend,
         "Isolation: ns (Linux namespaces) or microvm (a QEMU microVM with a kernel of its "
         "own; its guest comes from scripts/microvm-guest.sh)")
      ->check(CLI::IsMember({std::string(kRunBackends[0]), std::string(kRunBackends[1])}))
      ->capture_default_str();
  AddResourceFlags(sub, &o->resources, /*with_workspace=*/true);
  sub->add_option("--timeout", o->timeout_s,
                  "Kill the command after this many seconds (exit code 124); 0 = none")
      ->check(CLI::Range(0.0, 1e7))
      ->capture_default_str();
  sub->add_option("--env,-e", o->env, "Set an environment variable: K=V, or K to copy ours");
  sub->add_option("--workdir,-w", o->workdir,
                  "Working directory inside the sandbox (default: the template's WORKDIR, else "
                  "/workspace)");
  sub->add_option("--user,-u", o->user,
                  "Run as 'sandbox' (uid 1000) or 'root' (of the sandbox) (default: the "
                  "template's USER, else sandbox)")
      ->check(
          CLI::IsMember({std::string(protocol::kUserSandbox), std::string(protocol::kUserRoot)}));
  sub->add_option("--data-dir", o->data_dir, "Data directory (env AGENT_SANDBOX_DATA_DIR)")
      ->capture_default_str();
  sub->add_flag("--interactive,-i", o->interactive,
                "Forward this process's stdin to the command (default: stdin is closed)");
  sub->add_flag("--tty,-t", o->tty,
                "Run the command on a pseudo-terminal (stdout and stderr merge); with -i and a "
                "terminal, ours is put in raw mode");
  sub->add_option("--cidfile", o->cidfile, "Write the sandbox's id to this file (as docker run)");
  sub->add_option("command", o->argv, "The command and its arguments, after --")->required();
  sub->positionals_at_end();
  SetAction(sub, [o] {
    auto code = Run(*o);
    if (!code) return ReportError(code.error());
    return *code;
  });
}

}  // namespace asb::cli
