#include "sandboxd/tar_ops.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

#include "sandboxd/daemon.h"
#include "sandboxd/file_ops.h"
#include "sandboxd/fs_path.h"

namespace asb::sandboxd {

using protocol::Stream;

namespace {
FsContext ContextOf(Daemon& d) { return FsContext{d.workspace_fd(), d.options().workspace}; }
}  // namespace

// ---- shared ----------------------------------------------------------------------------------

TarOpBase::~TarOpBase() {
  if (pid_ > 0 && !exited_) {
    daemon_.ForgetChild(pid_);
    kill(pid_, SIGKILL);
  }
}

Status TarOpBase::Spawn(TarChildPlan plan, void (*run)(const TarChildPlan&)) {
  UniqueFd status_write;
  if (!MakePipe(&status_read_, &status_write, O_NONBLOCK)) return FailErrno("tar: pipe");
  plan.status_fd = status_write.get();
  pid_t pid = fork();
  if (pid < 0) return Fail(Error::FromErrno(errno, "fork"));
  if (pid == 0) run(plan);  // never returns
  pid_ = pid;
  daemon_.WatchChild(pid_, [this](int status) {
    exited_ = true;
    wait_status_ = status;
    MaybeFinish();
  });
  return {};
}

void TarOpBase::MaybeFinish() {
  if (finished() || !exited_ || !Ready()) return;
  TarOutcome o;
  ssize_t n = read(status_read_.get(), &o, sizeof o);
  if (n != static_cast<ssize_t>(sizeof o)) {
    std::string how = WIFSIGNALED(wait_status_)
                          ? "killed by signal " + std::to_string(WTERMSIG(wait_status_))
                          : "exited with status " + std::to_string(WEXITSTATUS(wait_status_));
    FailWith(Error::Internal("tar: worker " + how + " without a report"));
    return;
  }
  o.message[sizeof o.message - 1] = '\0';
  if (!o.ok) {
    FailWith(Error(static_cast<ErrorCode>(o.code), o.message, o.sys_errno));
    return;
  }
  protocol::TarResult r;
  r.entries = o.entries;
  r.bytes = o.bytes;
  Succeed(protocol::EncodeTarResult(r));
}

void TarOpBase::KillChild() {
  if (pid_ > 0 && !exited_) kill(pid_, SIGKILL);  // still reaped (and ignored) by the daemon
  if (pid_ > 0 && !exited_) daemon_.ForgetChild(pid_);
  exited_ = true;
}

void TarOpBase::OnCancel() {
  KillChild();
  FailWith(Error::Cancelled("tar cancelled"));
}

void TarOpBase::Abandon() { KillChild(); }

// ---- export ----------------------------------------------------------------------------------

void TarExportOp::Start() {
  if (auto st = Launch(); !st) FailWith(st.error());
}

Status TarExportOp::Launch() {
  FsContext ctx = ContextOf(daemon_);
  UniqueFd dir;
  std::string file_name;
  {
    FsIdentity id(req_.scope);
    ASB_ASSIGN_OR_RETURN(FsPath p, ResolvePath(ctx, req_.path, req_.scope));
    ASB_ASSIGN_OR_RETURN(UniqueFd target, OpenResolved(ctx, p, p.rel, O_PATH));
    struct stat st;
    if (fstat(target.get(), &st) != 0) return FailErrno(p.display);
    if (S_ISDIR(st.st_mode)) {
      ASB_ASSIGN_OR_RETURN(dir, OpenResolved(ctx, p, p.rel, O_RDONLY | O_DIRECTORY));
    } else {
      ASB_ASSIGN_OR_RETURN(dir, OpenParent(ctx, p));
      file_name = p.name;
    }
  }
  UniqueFd data_read, data_write;
  if (!MakePipe(&data_read, &data_write)) return FailErrno("tar: pipe");
  TarChildPlan plan;
  plan.as_root = req_.scope.user == protocol::kUserRoot;
  plan.dir_fd = dir.get();
  plan.file_name = file_name.empty() ? nullptr : file_name.c_str();
  plan.data_fd = data_write.get();
  ASB_TRY(Spawn(plan, &RunTarExportChild));
  pipe_ = std::make_unique<OutputPipe>(daemon_.loop(), Stream::kStdout, std::move(data_read), this);
  return pipe_->Start();
}

void TarExportOp::OnWindow(Stream stream, uint32_t bytes) {
  if (stream == Stream::kStdout && pipe_) pipe_->AddWindow(bytes);
}

void TarExportOp::Deliver(Stream s, std::string_view kept, size_t) { SendData(s, kept); }

void TarExportOp::Closed(Stream s) {
  SendEof(s);
  daemon_.loop().Defer([this] { MaybeFinish(); });
}

// ---- import ----------------------------------------------------------------------------------

void TarImportOp::Start() {
  if (auto st = Launch(); !st) FailWith(st.error());
}

Status TarImportOp::Launch() {
  FsContext ctx = ContextOf(daemon_);
  UniqueFd dir;
  {
    FsIdentity id(req_.scope);
    ASB_ASSIGN_OR_RETURN(FsPath p, ResolvePath(ctx, req_.path, req_.scope));
    ASB_TRY(MakeParents(ctx, p, p.rel, 0755));
    ASB_ASSIGN_OR_RETURN(dir, OpenResolved(ctx, p, p.rel, O_RDONLY | O_DIRECTORY));
  }
  UniqueFd data_read, data_write;
  if (!MakePipe(&data_read, &data_write)) return FailErrno("tar: pipe");
  TarChildPlan plan;
  plan.as_root = req_.scope.user == protocol::kUserRoot;
  plan.dir_fd = dir.get();
  plan.data_fd = data_read.get();
  plan.max_bytes = req_.max_bytes;
  plan.max_entries = req_.max_entries;
  plan.clear_first = req_.clear_first;
  ASB_TRY(Spawn(plan, &RunTarImportChild));
  pipe_ = std::make_unique<InputPipe>(daemon_.loop(), std::move(data_write),
                                      [this](uint32_t n) { SendWindow(n); });
  return {};
}

void TarImportOp::OnData(std::string&& bytes) {
  if (pipe_) {
    pipe_->Write(std::move(bytes));
  } else {
    Operation::OnData(std::move(bytes));
  }
}

void TarImportOp::OnEof() {
  if (pipe_) pipe_->CloseWhenDrained();
}

}  // namespace asb::sandboxd
