// SandboxManager: assembles the registry and the services, and runs the reaper thread
// (sandbox_manager.h).
#include "core/sandbox_manager.h"

#include <algorithm>
#include <chrono>

#include "core/sandbox_registry.h"
#include "isolation/backend_set.h"

namespace asb::core {

namespace {

std::unique_ptr<isolation::BackendSet> SetOf(isolation::Backend& only) {
  auto set = std::make_unique<isolation::BackendSet>();
  set->AddUnowned(only);
  return set;
}

}  // namespace

SandboxManager::SandboxManager(ManagerConfig config, store::Store& store,
                               isolation::Backend& backend, Clock& clock,
                               const TemplateCatalog& templates)
    : SandboxManager(std::move(config), store, SetOf(backend), nullptr, clock, templates) {}

SandboxManager::SandboxManager(ManagerConfig config, store::Store& store,
                               const isolation::BackendSet& backends, Clock& clock,
                               const TemplateCatalog& templates)
    : SandboxManager(std::move(config), store, nullptr, &backends, clock, templates) {}

SandboxManager::SandboxManager(ManagerConfig config, store::Store& store,
                               std::unique_ptr<isolation::BackendSet> own,
                               const isolation::BackendSet* shared, Clock& clock,
                               const TemplateCatalog& templates)
    : config_(std::move(config)),
      templates_(templates),
      own_backends_(std::move(own)),
      registry_(std::make_unique<SandboxRegistry>(config_, store, shared ? *shared : *own_backends_,
                                                  clock, templates)),
      lifecycle_(std::make_unique<SandboxLifecycle>(*registry_)),
      exec_(std::make_unique<ExecService>(*registry_)),
      files_(std::make_unique<FileService>(*registry_)),
      processes_(std::make_unique<ProcessService>(*registry_)),
      snapshots_(std::make_unique<SnapshotService>(*registry_, *lifecycle_)),
      network_(std::make_unique<NetworkService>(*registry_)),
      code_(std::make_unique<CodeService>(
          *processes_, config_.limits,
          [this](const std::string& owner, const std::string& id) -> std::string {
            Result<SandboxInfo> s = lifecycle_->Get(owner, id);
            if (!s) return "python";
            Result<TemplateInfo> t = templates_.Find(s->template_name);
            if (!t) return "python";
            auto has = [&](std::string_view tool) {
              return std::find(t->tools.begin(), t->tools.end(), tool) != t->tools.end();
            };
            return has("node") && !has("pip") ? "javascript" : "python";
          })) {
  lifecycle_->SetWorkspaceKeeper(snapshots_.get());  // files-only pauses keep workspaces there
  metrics_ =
      std::make_unique<MetricsHistory>(*lifecycle_, clock, config_.metrics_interval_seconds * 1000,
                                       static_cast<size_t>(config_.metrics_samples_kept));
  pools_ = std::make_unique<WarmPool>(*lifecycle_, config_.warm_pool_refill_per_second);
  lifecycle_->SetWarmPool(pools_.get());
}

SandboxManager::~SandboxManager() { Stop(); }

Status SandboxManager::Start() {
  ASB_TRY_CTX(lifecycle_->Recover(), "recover sandboxes");
  ASB_TRY_CTX(snapshots_->RecoverSnapshots(), "recover snapshots");
  // Pools fill once recovery has finished what a previous run left (its pooled sandboxes too).
  for (const ManagerConfig::WarmPoolTarget& w : config_.warm_pools) {
    ASB_TRY(pools_->Resize(w.template_name, w.network, w.size));
  }
  pools_->Start();
  std::lock_guard l(reaper_mu_);
  if (!reaper_.joinable()) {
    reaper_stop_ = false;
    reaper_ = std::thread([this] { ReaperLoop(); });
  }
  return {};
}

void SandboxManager::Stop() {
  pools_->Stop();  // its ready sandboxes end with the server; nobody can claim them now
  {
    std::lock_guard l(reaper_mu_);
    reaper_stop_ = true;
  }
  reaper_cv_.notify_all();
  if (reaper_.joinable()) reaper_.join();
}

void SandboxManager::ReaperLoop() {
  const auto interval = std::chrono::seconds(config_.reap_interval_seconds);
  std::unique_lock l(reaper_mu_);
  while (!reaper_stop_) {
    reaper_cv_.wait_for(l, interval, [this] { return reaper_stop_; });
    if (reaper_stop_) break;
    l.unlock();
    lifecycle_->ReapOnce();
    metrics_->MaybeSample();
    l.lock();
  }
}

}  // namespace asb::core
