// NetworkService: egress policy and port connections (network_service.h).
#include "core/network_service.h"

#include "core/sandbox_record.h"
#include "core/sandbox_registry.h"
#include "store/store.h"

namespace asb::core {

Result<NetworkPolicy> NetworkService::GetNetwork(const std::string& owner, const std::string& id) {
  ASB_ASSIGN_OR_RETURN(auto e, reg_.Find(owner, id));
  SandboxInfo info = e->Snapshot();
  if (!info.network) {
    return Fail(Error::InvalidArgument("sandbox " + id + " was created without network"));
  }
  return info.network_policy;
}

Result<NetworkPolicy> NetworkService::SetNetwork(const std::string& owner, const std::string& id,
                                                 const NetworkPolicy& policy) {
  ASB_ASSIGN_OR_RETURN(auto canonical, isolation::net::Canonicalize(policy));
  ASB_ASSIGN_OR_RETURN(auto e, reg_.Find(owner, id));
  std::lock_guard op(e->op_mu);
  SandboxInfo info = e->Snapshot();
  if (!info.network) {
    return Fail(Error::InvalidArgument("sandbox " + id + " was created without network"));
  }
  ASB_TRY(SandboxRegistry::RequireRunning(info));
  ASB_ASSIGN_OR_RETURN(isolation::Backend * backend, reg_.BackendOf(info));
  if (!backend->Capabilities().network) {
    return Fail(isolation::NotCapable(backend->name(), "networking"));
  }
  // The side effect first: a policy that could not be applied is not recorded.
  ASB_TRY_CTX(backend->UpdateNetwork(id, canonical), "set network policy of " + id);
  info.network_policy = canonical;
  info.updated_at_ms = reg_.clock.NowUnixMs();
  ASB_TRY_CTX(reg_.store.UpdateSandbox(ToRecord(info)), "set network policy of " + id);
  {
    std::lock_guard l(e->info_mu);
    e->info.network_policy = canonical;
    e->info.updated_at_ms = info.updated_at_ms;
  }
  return canonical;
}

Result<PortConnection> NetworkService::ConnectPort(const std::string& owner, const std::string& id,
                                                   int64_t port) {
  if (port < 1 || port > 65535) {
    return Fail(Error::InvalidArgument("port must be 1..65535, got " + std::to_string(port)));
  }
  ASB_ASSIGN_OR_RETURN(auto e, reg_.Find(owner, id));
  ASB_ASSIGN_OR_RETURN(isolation::Backend * backend, reg_.BackendOf(*e));
  if (!backend->Capabilities().tcp_connect) {
    return Fail(isolation::NotCapable(backend->name(), "ports"));
  }
  ASB_ASSIGN_OR_RETURN(SandboxRegistry::Active a,
                       reg_.BeginActivity(e, SandboxRegistry::Activity::kStream));
  ASB_ASSIGN_OR_RETURN(int fd, a.sandbox->ConnectTcp(static_cast<uint16_t>(port), 5000));
  return PortConnection{fd, a.mark, RequestHostFor(e->Snapshot().mask_request_host, port)};
}

}  // namespace asb::core
