// SandboxManager: the façade that assembles core/ (docs/ARCHITECTURE.md, "core/"). It owns the
// SandboxRegistry and one service per concern, starts recovery and the reaper, and hands each
// caller the service it uses:
//
//   lifecycle()   create, get, list, destroy, timeout, recovery, reaper   (lifecycle.h)
//   exec()        commands, to completion or streamed                      (exec_service.h)
//   files()       files, directories, directory tars                       (file_service.h)
//   processes()   background processes and PTYs                            (process_service.h)
//   snapshots()   snapshots, rollback, fork, archives                      (snapshot_service.h)
//   network()     egress policy, connections to ports                      (network_service.h)
//   code()        code contexts (kernels) and their executions             (code_service.h)
//   pools()       warm pools of ready sandboxes                            (warm_pool.h)
//
// None of them knows HTTP. Every error carries an ErrorCode that api/ maps to the wire codes
// (api/errors.h; ADR 0007, ADR 0016); messages are safe to show to the caller
// (they never contain env values). Values crossing this boundary are core's own
// (sandbox_types.h, event_stream.h), never sandboxd's wire types (ADR 0018).
#pragma once

#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>

#include "common/clock.h"
#include "common/result.h"
#include "core/code_service.h"
#include "core/config.h"
#include "core/exec_service.h"
#include "core/file_service.h"
#include "core/lifecycle.h"
#include "core/metrics_history.h"
#include "core/network_service.h"
#include "core/process_service.h"
#include "core/sandbox_types.h"
#include "core/snapshot_service.h"
#include "core/templates.h"
#include "core/warm_pool.h"

namespace asb::store {
class Store;
}
namespace asb::isolation {
class Backend;
class BackendSet;
}  // namespace asb::isolation

namespace asb::core {

class SandboxRegistry;

class SandboxManager {
 public:
  /// `store`, `backend`, `clock` and `templates` must outlive the manager. Call Start() before
  /// serving requests. `config` should have passed Validate().
  SandboxManager(ManagerConfig config, store::Store& store, isolation::Backend& backend,
                 Clock& clock, const TemplateCatalog& templates);
  /// The same over several backends (a create's `backend` chooses one; the set's default
  /// serves creates that name none). `backends` must be complete and outlive the manager.
  SandboxManager(ManagerConfig config, store::Store& store, const isolation::BackendSet& backends,
                 Clock& clock, const TemplateCatalog& templates);
  /// Stops the reaper. Running sandboxes are left running (a later Start() adopts them).
  ~SandboxManager();
  SandboxManager(const SandboxManager&) = delete;
  SandboxManager& operator=(const SandboxManager&) = delete;

  /// lifecycle().Recover(), snapshots().RecoverSnapshots(), then starts the reaper thread
  /// (lifecycle().ReapOnce() every reap_interval_seconds). Errors: store failures.
  Status Start();
  /// Stops the reaper thread and waits for it. Idempotent. Running sandboxes keep running.
  void Stop();

  SandboxLifecycle& lifecycle() { return *lifecycle_; }
  ExecService& exec() { return *exec_; }
  FileService& files() { return *files_; }
  ProcessService& processes() { return *processes_; }
  SnapshotService& snapshots() { return *snapshots_; }
  NetworkService& network() { return *network_; }
  CodeService& code() { return *code_; }
  MetricsHistory& metrics() { return *metrics_; }
  WarmPool& pools() { return *pools_; }

  const ManagerConfig& config() const { return config_; }
  const TemplateCatalog& templates() const { return templates_; }

 private:
  SandboxManager(ManagerConfig config, store::Store& store,
                 std::unique_ptr<isolation::BackendSet> own, const isolation::BackendSet* shared,
                 Clock& clock, const TemplateCatalog& templates);
  void ReaperLoop();

  ManagerConfig config_;
  const TemplateCatalog& templates_;
  /// The one-backend constructor's set; null with the other one.
  std::unique_ptr<isolation::BackendSet> own_backends_;
  std::unique_ptr<SandboxRegistry> registry_;
  std::unique_ptr<SandboxLifecycle> lifecycle_;
  std::unique_ptr<ExecService> exec_;
  std::unique_ptr<FileService> files_;
  std::unique_ptr<ProcessService> processes_;
  std::unique_ptr<SnapshotService> snapshots_;
  std::unique_ptr<NetworkService> network_;
  std::unique_ptr<CodeService> code_;
  std::unique_ptr<MetricsHistory> metrics_;
  std::unique_ptr<WarmPool> pools_;

  std::mutex reaper_mu_;
  std::condition_variable reaper_cv_;
  bool reaper_stop_ = false;
  std::thread reaper_;
};

}  // namespace asb::core
