// CodeService: the code interpreter (ADR 0019). A code context is a kernel kept alive in the
// sandbox: a Jupyter kernel for Python, a `vm` context in Node for JavaScript, one bash for
// bash. Each runs under a driver (src/core/code/) started as a background process of the
// sandbox (ProcessService), tagged "code:<context id>:<language>[:default]", so the contexts
// are the sandbox's processes: they end with it, and a restarted server finds them again.
// Variables, imports and the working directory persist between executions in one context and
// never leak between contexts. One execution runs in a context at a time.
//
// Errors of all: kNotFound (sandbox, context), kConflict (sandbox not running; context dead or
// busy; the template lacks the language's kernel), kInvalidArgument, kLimitExceeded
// (kMaxCodeContexts), kTimeout (a kernel that never became ready), kBackend.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/result.h"
#include "core/code_types.h"
#include "core/config.h"
#include "core/process_service.h"

namespace asb::core {

class CodeService;

/// One running execution: the caller pulls its events until kEnd (always the last, also when
/// the kernel dies: an error KernelDied and an end with status "dead"). Destroying it before
/// the end interrupts the code.
class CodeExecution {
 public:
  ~CodeExecution();
  CodeExecution(const CodeExecution&) = delete;
  CodeExecution& operator=(const CodeExecution&) = delete;

  /// The context it runs in.
  const CodeContextInfo& context() const { return context_; }
  /// Waits up to `timeout_ms` (-1 = forever) for the next event. Errors: kTimeout (nothing in
  /// time), kConflict (after kEnd).
  Result<CodeEvent> Next(int64_t timeout_ms = -1);
  /// The next event if one is ready now. Never blocks (safe on an I/O thread).
  std::optional<CodeEvent> TryNext();
  /// Called (on another thread, must not block) when an event may be ready; nullptr clears.
  void SetNotify(std::function<void()> notify);
  /// Interrupts the code (SIGINT to the kernel) and waits for sandboxd to deliver it; the end
  /// follows.
  void Interrupt();
  bool ended() const { return ended_; }

 private:
  friend class CodeService;
  CodeExecution() = default;
  // Feeds an attachment event into pending_; checks the guard deadline.
  void Absorb(const StreamEvent& ev);
  void AbsorbLine(std::string_view line);
  void CheckGuard(bool wait);
  // Acknowledges the driver's stdout bytes read so far (its flow control, driver.py).
  void FlushAcks();
  void ReleaseHeldEnd();
  // Sends `signal` to the kernel's process group; without `wait` from a thread of its own.
  void Signal(const char* signal, bool wait);
  void Die(std::string value);
  std::optional<CodeEvent> Pop();

  ProcessService* procs_ = nullptr;
  std::string owner_, sandbox_id_, exec_id_;
  CodeContextInfo context_;
  ProcessAttach attach_;
  std::shared_ptr<void> busy_;  // held while running: the context's one execution
  std::string partial_;         // an incomplete line of the driver's stdout
  bool resync_ = false;         // bytes were skipped: drop until the next newline
  bool truncated_ = false;      // the server cut something the driver sent
  uint64_t output_left_ = 0;    // stdout+stderr+result bytes still allowed
  size_t results_seen_ = 0;
  std::set<std::string> cut_outputs_;  // CodeEnd::truncated_outputs, as the server cut them
  int64_t dropped_results_ = 0;
  uint64_t unacked_ = 0;               // driver stdout bytes read but not yet acknowledged
  std::string ack_out_;                // acknowledgement lines not yet written
  std::optional<CodeEvent> held_end_;  // a "dead" end, held until the driver's exit is seen
  int64_t held_until_ms_ = 0;
  std::vector<CodeEvent> pending_;
  size_t pending_pos_ = 0;
  bool ended_ = false;
  int64_t started_ms_ = 0;
  int64_t guard_ms_ = 0;        // past it the server interrupts, then kills the context
  int64_t interrupted_ms_ = 0;  // when the guard interrupted (0 = not yet)
};

class CodeService {
 public:
  /// The language of `/code` without context_id and language, for sandbox `id` of `owner`.
  using DefaultLanguageFn = std::function<std::string(const std::string&, const std::string&)>;

  /// `processes` and `limits` must outlive the service. `default_language` may be empty
  /// (then "python").
  CodeService(ProcessService& processes, const Limits& limits,
              DefaultLanguageFn default_language = {})
      : procs_(processes), limits_(limits), default_language_(std::move(default_language)) {}

  /// Starts a context and returns once its kernel answers (a Python kernel takes a second or
  /// two). Errors: kInvalidArgument (language, cwd), kConflict (sandbox not running; the
  /// template has no kernel for the language: the message names the packages or template),
  /// kLimitExceeded (kMaxCodeContexts running), kTimeout (no answer within 60 s).
  Result<CodeContextInfo> CreateContext(const std::string& owner, const std::string& id,
                                        const CodeContextOptions& opts);
  /// The sandbox's contexts, running and dead (deleted ones are gone), oldest first.
  Result<std::vector<CodeContextInfo>> ListContexts(const std::string& owner,
                                                    const std::string& id);
  Result<CodeContextInfo> GetContext(const std::string& owner, const std::string& id,
                                     const std::string& context_id);
  /// Ends the context's kernel. Errors: kNotFound.
  Status DeleteContext(const std::string& owner, const std::string& id,
                       const std::string& context_id);
  /// A fresh kernel under the same context id, language and cwd: all state is gone. Works on
  /// a dead context. Errors as CreateContext, and kNotFound.
  Result<CodeContextInfo> RestartContext(const std::string& owner, const std::string& id,
                                         const std::string& context_id);
  /// Interrupts what the context is running (SIGINT); a no-op when idle. Errors: kNotFound,
  /// kConflict (dead).
  Status InterruptContext(const std::string& owner, const std::string& id,
                          const std::string& context_id);

  /// Starts an execution (see CodeExecution). Without context_id it runs in the default
  /// context of `language`, started on first use; without language either, the sandbox's:
  /// "javascript" for a Node template (its tools list node but not pip), else "python". Errors:
  /// kInvalidArgument (empty or over kMaxCodeBytes code, timeout, language, max_output_bytes),
  /// kNotFound (the context), kConflict (context dead or busy), and CreateContext's.
  Result<std::unique_ptr<CodeExecution>> Start(const std::string& owner, const std::string& id,
                                               const CodeRequest& req);

 private:
  Result<CodeContextInfo> Spawn(const std::string& owner, const std::string& id,
                                const std::string& context_id, const std::string& language,
                                const std::string& cwd, bool is_default);
  Result<CodeContextInfo> Find(const std::string& owner, const std::string& id,
                               const std::string& context_id);
  Result<CodeContextInfo> DefaultContext(const std::string& owner, const std::string& id,
                                         const std::string& language);
  std::shared_ptr<std::mutex> SandboxLock(const std::string& id);
  Result<std::shared_ptr<void>> MarkBusy(const std::string& id, const std::string& context_id);

  ProcessService& procs_;
  const Limits& limits_;
  DefaultLanguageFn default_language_;
  std::mutex mu_;
  std::map<std::string, std::shared_ptr<std::mutex>> sandbox_locks_;  // context creation
  std::set<std::string> busy_;     // "sandbox/context" with an execution running
  std::set<std::string> deleted_;  // "sandbox/pid" of deleted contexts' exited drivers
};

/// The canonical language name for `name` (aliases above), or nullopt.
std::optional<std::string> CanonicalCodeLanguage(std::string_view name);

}  // namespace asb::core
