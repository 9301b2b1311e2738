#include "isolation/backend_set.h"

#include <algorithm>

namespace asb::isolation {

std::string BackendSet::Listed::ClientReason() const {
  return why_not ? ScrubHostPaths(why_not->ClientSafeMessage()) : std::string();
}

bool BackendSet::AddRunning(Backend* backend) {
  for (const Listed& k : known_) {
    if (k.name == backend->name()) return false;
  }
  const bool first_runnable =
      std::none_of(known_.begin(), known_.end(), [](const Listed& k) { return k.backend; });
  known_.push_back(Listed{std::string(backend->name()), backend, std::nullopt, false});
  if (first_runnable) default_ = known_.size() - 1;
  return true;
}

bool BackendSet::Add(std::unique_ptr<Backend> backend) {
  if (!backend || !AddRunning(backend.get())) return false;
  owned_.push_back(std::move(backend));
  return true;
}

bool BackendSet::AddUnowned(Backend& backend) { return AddRunning(&backend); }

void BackendSet::AddUnavailable(std::string name, Error why) {
  for (const Listed& k : known_) {
    if (k.name == name) return;
  }
  known_.push_back(Listed{std::move(name), nullptr, std::move(why), false});
}

Status BackendSet::SetDefault(std::string_view name) {
  ASB_ASSIGN_OR_RETURN(Backend * b, Find(name));
  for (size_t i = 0; i < known_.size(); ++i) {
    if (known_[i].backend == b) default_ = i;
  }
  return {};
}

Result<Backend*> BackendSet::Find(std::string_view name) const {
  if (name.empty()) {
    if (Backend* b = default_backend()) return b;
    return Fail(Error::Unavailable("no isolation backend runs on this server"));
  }
  std::string names;
  for (const Listed& k : known_) {
    if (k.name == name) {
      if (k.backend) return k.backend;
      return Fail(Error::Unavailable(
          "the " + k.name + " backend is not available on this server: " + k.ClientReason()));
    }
    names += (names.empty() ? "" : ", ") + k.name;
  }
  return Fail(Error::InvalidArgument("backend: unknown backend \"" + std::string(name) +
                                     "\"; this server knows " + names));
}

Backend* BackendSet::default_backend() const {
  return default_ < known_.size() ? known_[default_].backend : nullptr;
}

std::vector<Backend*> BackendSet::Running() const {
  std::vector<Backend*> out;
  for (const Listed& k : All()) {
    if (k.backend) out.push_back(k.backend);
  }
  return out;
}

Backend* BackendSet::ImageBackend() const {
  for (Backend* b : Running()) {
    if (b->Capabilities().workspace_images) return b;
  }
  return nullptr;
}

std::vector<BackendSet::Listed> BackendSet::All() const {
  std::vector<Listed> out;
  Backend* def = default_backend();
  for (const Listed& k : known_) {
    if (def && k.backend == def) {
      out.insert(out.begin(), k);
      out.front().is_default = true;
    } else {
      out.push_back(k);
    }
  }
  return out;
}

}  // namespace asb::isolation
