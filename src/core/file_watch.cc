// FileService::WatchDirectory and the FileWatch over a file.watch channel (file_watch.h).
#include "core/file_watch.h"

#include <deque>
#include <mutex>

#include "core/file_service.h"
#include "core/paths.h"
#include "core/sandbox_registry.h"
#include "core/wire_adapter.h"
#include "protocol/client.h"

namespace asb::core {

static_assert(kWatchQueueDefault == protocol::kWatchQueueDefault);
static_assert(kMaxWatchQueue == protocol::kWatchQueueMax);

namespace {

/// How long arming a watch may take in sandboxd (a recursive one opens every directory).
constexpr int64_t kArmAnswerMs = 60'000;
/// A line longer than this is a broken peer (a path is at most 4 KiB, twice that escaped).
constexpr size_t kMaxLineBytes = 64 * 1024;

class ChannelFileWatch final : public FileWatch {
 public:
  ChannelFileWatch(std::shared_ptr<protocol::Channel> ch, std::string path, uint32_t watches)
      : ch_(std::move(ch)), path_(std::move(path)), watches_(watches) {}
  ~ChannelFileWatch() override {
    ch_->SetNotify(nullptr);
    Cancel();
  }

  const std::string& path() const override { return path_; }
  uint32_t watches() const override { return watches_; }

  Batch Take(size_t max_events, int64_t wait_ms) override {
    std::lock_guard lock(mu_);
    Batch out;
    Fill(max_events, /*wait_ms=*/0);
    if (decoded_.empty() && !ended_ && wait_ms > 0) Fill(1, wait_ms);
    while (!decoded_.empty() && out.events.size() < max_events) {
      out.events.push_back(std::move(decoded_.front()));
      decoded_.pop_front();
    }
    if (decoded_.empty() && ended_) {
      out.ended = true;
      out.end_reason = end_reason_;
      out.error = error_;
    }
    return out;
  }

  void SetNotify(std::function<void()> notify) override { ch_->SetNotify(std::move(notify)); }

  void Cancel() override {
    std::lock_guard lock(mu_);
    if (!ended_ && !cancelled_) {
      cancelled_ = true;
      (void)ch_->Cancel();
    }
  }

 private:
  // Pulls channel events until `want` events are decoded or the channel ends; waits for the
  // first one up to `wait_ms` (0: only what is queued).
  void Fill(size_t want, int64_t wait_ms) {
    while (!ended_ && decoded_.size() < want) {
      std::optional<protocol::ChannelEvent> ev;
      if (wait_ms > 0) {
        auto next = ch_->Next(wait_ms);
        if (!next) return;  // kTimeout: nothing came
        ev = std::move(*next);
        wait_ms = 0;
      } else {
        ev = ch_->TryNext();
        if (!ev) return;
      }
      Handle(std::move(*ev));
    }
  }

  void Handle(protocol::ChannelEvent ev) {
    using Kind = protocol::ChannelEvent::Kind;
    switch (ev.kind) {
      case Kind::kData:
        partial_ += ev.payload;
        for (size_t nl; (nl = partial_.find('\n')) != std::string::npos;) {
          auto e = protocol::DecodeFileWatchEvent(std::string_view(partial_).substr(0, nl));
          partial_.erase(0, nl + 1);
          if (!e) return Broken(e.error().message());
          FileEvent fe{std::move(e->type), std::move(e->path), e->dir, e->dropped};
          if (e->entry) fe.entry = wire::FromWire(*e->entry);
          decoded_.push_back(std::move(fe));
        }
        if (partial_.size() > kMaxLineBytes) Broken("event line too long");
        return;
      case Kind::kResult: {
        ended_ = true;
        auto end = protocol::DecodeFileWatchEnd(ev.payload);
        end_reason_ = end ? end->reason : "removed";
        return;
      }
      case Kind::kError:
        ended_ = true;
        error_ = ev.error ? *ev.error : Error::Backend("the watch failed in the sandbox");
        return;
      case Kind::kEof:
      case Kind::kInfo:
        return;
    }
  }

  void Broken(const std::string& why) {
    (void)ch_->Cancel();
    ended_ = true;
    error_ = Error::Backend("malformed file.watch event from sandboxd: " + why);
  }

  std::shared_ptr<protocol::Channel> ch_;
  const std::string path_;
  const uint32_t watches_;
  std::mutex mu_;
  std::string partial_;
  std::deque<FileEvent> decoded_;
  bool ended_ = false;
  bool cancelled_ = false;
  std::string end_reason_;
  std::optional<Error> error_;
};

}  // namespace

Result<std::shared_ptr<FileWatch>> FileService::WatchDirectory(const std::string& owner,
                                                               const std::string& id,
                                                               const std::string& path,
                                                               bool recursive, uint32_t max_queue,
                                                               bool entries) {
  ASB_ASSIGN_OR_RETURN(auto e, reg_.Find(owner, id));
  ASB_ASSIGN_OR_RETURN(FilePath fp, NormalizeFilePath(path));
  const std::string p = fp.path;
  // The activity ends when this returns: an open watch is not somebody using the sandbox, so
  // it neither holds off the idle timeout nor keeps the sandbox alive.
  ASB_ASSIGN_OR_RETURN(SandboxRegistry::Active act,
                       reg_.BeginActivity(e, SandboxRegistry::Activity::kStream));
  ASB_ASSIGN_OR_RETURN(auto conn, reg_.ConnectionFor(*e, act));
  protocol::FileWatchRequest req;
  req.path = p;
  req.scope.beneath_workspace = fp.in_workspace;
  req.recursive = recursive;
  req.max_queue = max_queue;
  req.entries = entries;
  ASB_ASSIGN_OR_RETURN(auto channel,
                       reg_.Checked(*e, act, conn->Open(protocol::EncodeFileWatchRequest(req))));
  auto first = channel->Next(kArmAnswerMs);
  if (!first) {
    (void)channel->Cancel();
    return Fail(std::move(first)
                    .error()
                    .WithCode(ErrorCode::kBackend)
                    .WithContext("watch " + p + ": sandboxd did not answer"));
  }
  if (first->kind == protocol::ChannelEvent::Kind::kError && first->error) {
    return Fail(*first->error);
  }
  if (first->kind != protocol::ChannelEvent::Kind::kInfo) {
    if (!first->terminal()) (void)channel->Cancel();
    return Fail(Error::Backend("watch " + p + ": unexpected answer from sandboxd"));
  }
  auto armed = protocol::DecodeFileWatchArmed(first->payload);
  if (!armed) {
    (void)channel->Cancel();
    return Fail(std::move(armed).error().WithCode(ErrorCode::kBackend).WithContext("watch " + p));
  }
  return std::shared_ptr<FileWatch>(std::make_shared<ChannelFileWatch>(
      std::move(channel), std::move(armed->path), armed->watches));
}

}  // namespace asb::core
