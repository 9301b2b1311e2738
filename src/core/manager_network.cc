// SandboxManager's network policy operations: GET/PUT /v1/sandboxes/{id}/network, and ports.
#include "core/manager_impl.h"

namespace asb::core {

Result<isolation::net::NetworkPolicy> SandboxManager::GetNetwork(const std::string& owner,
                                                                 const std::string& id) {
  ASB_ASSIGN_OR_RETURN(auto e, impl_->Find(owner, id));
  SandboxInfo info = e->Snapshot();
  if (!info.network) {
    return Fail(Error::InvalidArgument("sandbox " + id + " was created without network"));
  }
  return info.network_policy;
}

Result<isolation::net::NetworkPolicy> SandboxManager::SetNetwork(
    const std::string& owner, const std::string& id, const isolation::net::NetworkPolicy& policy) {
  ASB_ASSIGN_OR_RETURN(auto canonical, isolation::net::Canonicalize(policy));
  ASB_ASSIGN_OR_RETURN(auto e, impl_->Find(owner, id));
  std::lock_guard op(e->op_mu);
  SandboxInfo info = e->Snapshot();
  if (!info.network) {
    return Fail(Error::InvalidArgument("sandbox " + id + " was created without network"));
  }
  if (info.state != SandboxState::kRunning) {
    return Fail(Error::Conflict("sandbox " + id + " is " +
                                std::string(SandboxStateName(info.state)) + ", not running"));
  }
  if (!impl_->backend.Capabilities().network) {
    return Fail(isolation::NotCapable(impl_->backend.name(), "networking"));
  }
  // The side effect first: a policy that could not be applied is not recorded.
  ASB_TRY_CTX(impl_->backend.UpdateNetwork(id, canonical), "set network policy of " + id);
  info.network_policy = canonical;
  info.updated_at_ms = impl_->clock.NowUnixMs();
  ASB_TRY_CTX(impl_->store.UpdateSandbox(ToRecord(info)), "set network policy of " + id);
  {
    std::lock_guard l(e->info_mu);
    e->info.network_policy = canonical;
    e->info.updated_at_ms = info.updated_at_ms;
  }
  return canonical;
}

Result<SandboxManager::PortConnection> SandboxManager::ConnectPort(const std::string& owner,
                                                                   const std::string& id,
                                                                   int64_t port) {
  if (port < 1 || port > 65535) {
    return Fail(Error::InvalidArgument("port must be 1..65535, got " + std::to_string(port)));
  }
  ASB_ASSIGN_OR_RETURN(auto e, impl_->Find(owner, id));
  if (!impl_->backend.Capabilities().tcp_connect) {
    return Fail(isolation::NotCapable(impl_->backend.name(), "ports"));
  }
  ASB_ASSIGN_OR_RETURN(Impl::Active a, impl_->BeginActivity(e));
  ASB_ASSIGN_OR_RETURN(int fd, a.sandbox->ConnectTcp(static_cast<uint16_t>(port), 5000));
  return PortConnection{fd, a.mark};
}

}  // namespace asb::core
