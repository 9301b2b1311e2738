#include "core/template_defaults.h"

#include <array>

#include "core/paths.h"
#include "protocol/messages.h"

namespace asb::core {

namespace {

// Spellings of the two users sandboxes have, as a Dockerfile USER or an image config's User
// may give them (user[:group]; the group, when given, must be the user's own).
constexpr std::array<std::string_view, 4> kSandboxSpellings = {"sandbox", "1000", "sandbox:sandbox",
                                                               "1000:1000"};
constexpr std::array<std::string_view, 4> kRootSpellings = {"root", "0", "root:root", "0:0"};

template <size_t N>
bool OneOf(std::string_view v, const std::array<std::string_view, N>& set) {
  for (auto s : set) {
    if (v == s) return true;
  }
  return false;
}

std::string Shown(std::string_view v) {
  std::string s(v.substr(0, 100));
  for (char& c : s) {
    if (static_cast<unsigned char>(c) < 0x20) c = '?';
  }
  return s;
}

}  // namespace

Result<std::string> ResolveTemplateUser(std::string_view user) {
  if (user.empty() || OneOf(user, kSandboxSpellings)) return std::string(protocol::kUserSandbox);
  if (OneOf(user, kRootSpellings)) return std::string(protocol::kUserRoot);
  return Fail(Error::InvalidArgument(
      "user '" + Shown(user) +
      "' is not supported: sandboxes run commands as \"sandbox\" (uid 1000) or \"root\" "
      "(uid 0); use USER sandbox, USER root, USER 1000 or USER 0"));
}

Result<std::string> ResolveTemplateWorkdir(std::string_view workdir) {
  if (workdir.empty()) return std::string(kWorkspaceDir);
  if (workdir[0] != '/') {
    return Fail(Error::InvalidArgument("workdir '" + Shown(workdir) + "' must be absolute"));
  }
  auto clean = NormalizeWorkdir(workdir);
  if (!clean) return Fail(std::move(clean).error().WithContext("workdir"));
  return clean;
}

Result<CommandDefaults> ResolveTemplateDefaults(const TemplateManifest& m) {
  const std::string ctx = "template '" + m.name + "'";
  CommandDefaults d;
  auto user = ResolveTemplateUser(m.user);
  if (!user) return Fail(std::move(user).error().WithContext(ctx));
  d.user = std::move(*user);
  auto workdir = ResolveTemplateWorkdir(m.workdir);
  if (!workdir) return Fail(std::move(workdir).error().WithContext(ctx));
  d.workdir = std::move(*workdir);
  return d;
}

}  // namespace asb::core
