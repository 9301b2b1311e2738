// NetworkService: a sandbox's egress policy and connections to its ports (docs/ARCHITECTURE.md,
// "core/"; ADR 0013).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "common/result.h"
#include "core/sandbox_types.h"

namespace asb::core {

class SandboxRegistry;

/// A TCP connection to a port of a sandbox: `fd` is owned by the caller; `keepalive` marks the
/// sandbox active until released.
struct PortConnection {
  int fd = -1;
  std::shared_ptr<void> keepalive;
  /// The Host header a request over it carries: the sandbox's mask_request_host for this port,
  /// else "127.0.0.1:<port>" (RequestHostFor).
  std::string host_header;
};

class NetworkService {
 public:
  /// `registry` must outlive the service.
  explicit NetworkService(SandboxRegistry& registry) : reg_(registry) {}

  /// The sandbox's egress policy. Errors: kNotFound, kInvalidArgument (created without
  /// network).
  Result<NetworkPolicy> GetNetwork(const std::string& owner, const std::string& id);
  /// Validates and replaces the policy at once (Backend::UpdateNetwork), then records it.
  /// Errors: kNotFound, kConflict (not running), kInvalidArgument (policy; no network),
  /// kBackend.
  Result<NetworkPolicy> SetNetwork(const std::string& owner, const std::string& id,
                                   const NetworkPolicy& policy);
  /// A TCP connection to 127.0.0.1:`port` inside the sandbox (exposed ports; works without
  /// network). Errors: kInvalidArgument (port not in 1..65535), kNotFound, kConflict (not
  /// running), kUnavailable (nothing listens), kTimeout (5 s).
  Result<PortConnection> ConnectPort(const std::string& owner, const std::string& id, int64_t port);

 private:
  SandboxRegistry& reg_;
};

}  // namespace asb::core
