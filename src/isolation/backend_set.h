// BackendSet: the isolation backends one server runs, by name (docs/ARCHITECTURE.md,
// "isolation/"). A create names one (`backend` in the request) or gets the default; every later
// operation on a sandbox goes to the backend its record names. A backend this host cannot run
// (no guest kernel built, no QEMU) stays listed with the reason, so that GET /v1/backends can
// say why and a create that asks for it gets that reason instead of "unknown backend".
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "isolation/backend.h"

namespace asb::isolation {

class BackendSet {
 public:
  BackendSet() = default;
  BackendSet(const BackendSet&) = delete;
  BackendSet& operator=(const BackendSet&) = delete;

  /// Adds a backend the server runs, owned by the set. The first runnable one added is the
  /// default until SetDefault. A second backend of the same name replaces nothing: it is
  /// ignored and false is returned.
  bool Add(std::unique_ptr<Backend> backend);
  /// Adds a backend the caller owns; it must outlive the set.
  bool AddUnowned(Backend& backend);
  /// Lists `name` as known but not runnable on this host; `why` is kept whole for the log and
  /// shown to clients as ClientReason (no host text, no host paths).
  void AddUnavailable(std::string name, Error why);
  /// Makes `name`, an added runnable backend, the default. Errors: as Find.
  Status SetDefault(std::string_view name);

  /// The backend called `name`, "" meaning the default. Errors: kInvalidArgument for a name
  /// this server does not know (the message lists the ones it does), kUnavailable with the
  /// reason for one it knows but cannot run.
  Result<Backend*> Find(std::string_view name) const;
  /// The default backend, or nullptr when no backend was added.
  Backend* default_backend() const;
  /// The runnable backends, default first.
  std::vector<Backend*> Running() const;
  /// The first runnable backend that keeps workspace images (snapshot images live in its
  /// directory; BackendCapabilities::workspace_images), or nullptr.
  Backend* ImageBackend() const;

  /// One known backend as GET /v1/backends lists it.
  struct Listed {
    std::string name;
    Backend* backend = nullptr;  // nullptr when not runnable
    std::optional<Error> why_not;
    bool is_default = false;
    /// Why it cannot run, as a client may read it: why_not's ClientSafeMessage with host paths
    /// scrubbed ("no guest kernel: (host path) is missing"); "" when it runs.
    std::string ClientReason() const;
  };
  /// Every known backend, default first, then in the order added.
  std::vector<Listed> All() const;

 private:
  bool AddRunning(Backend* backend);

  std::vector<std::unique_ptr<Backend>> owned_;
  std::vector<Listed> known_;
  size_t default_ = 0;  // index into known_ of a runnable one; meaningless while none is
};

}  // namespace asb::isolation
