#include "templates/user_db.h"

#include <charconv>
#include <optional>
#include <vector>

namespace asb::templates {

namespace {

constexpr size_t kMaxDbBytes = 4 << 20;

std::optional<uint32_t> ParseId(std::string_view s) {
  uint32_t v = 0;
  if (s.empty()) return std::nullopt;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

std::vector<std::string_view> Fields(std::string_view line) {
  std::vector<std::string_view> f;
  size_t i = 0;
  while (i <= line.size()) {
    size_t j = line.find(':', i);
    if (j == std::string_view::npos) j = line.size();
    f.push_back(line.substr(i, j - i));
    i = j + 1;
  }
  return f;
}

// The entry of `file` whose field 0 (name) or field 2 (id) matches.
std::optional<std::vector<std::string>> Find(const std::string& db, std::string_view key,
                                             bool by_id) {
  size_t i = 0;
  while (i < db.size()) {
    size_t j = db.find('\n', i);
    if (j == std::string::npos) j = db.size();
    auto f = Fields(std::string_view(db).substr(i, j - i));
    if (f.size() >= 3 && (by_id ? f[2] == key : f[0] == key)) {
      return std::vector<std::string>(f.begin(), f.end());
    }
    i = j + 1;
  }
  return std::nullopt;
}

}  // namespace

Result<ResolvedUser> ResolveUser(const RootedDir& root, std::string_view spec) {
  size_t colon = spec.find(':');
  std::string_view user = spec.substr(0, colon);
  std::string_view group = colon == std::string_view::npos ? "" : spec.substr(colon + 1);
  std::string passwd = root.ReadFile("etc/passwd", kMaxDbBytes).value_or("");
  ResolvedUser out;
  std::optional<std::vector<std::string>> entry;
  if (auto id = ParseId(user)) {
    out.uid = *id;
    out.gid = *id == 0 ? 0 : *id;
    entry = Find(passwd, user, /*by_id=*/true);
  } else {
    entry = Find(passwd, user, /*by_id=*/false);
    if (!entry) return Fail(Error::InvalidArgument("unknown user '" + std::string(user) + "'"));
    auto uid = ParseId((*entry)[2]);
    if (!uid) {
      return Fail(Error::InvalidArgument("bad passwd entry for '" + std::string(user) + "'"));
    }
    out.uid = *uid;
  }
  if (entry && entry->size() >= 6) {
    if (auto g = ParseId((*entry)[3])) out.gid = *g;
    if (!(*entry)[5].empty()) out.home = (*entry)[5];
  }
  if (!group.empty()) {
    if (auto id = ParseId(group)) {
      out.gid = *id;
    } else {
      std::string groups = root.ReadFile("etc/group", kMaxDbBytes).value_or("");
      auto g = Find(groups, group, /*by_id=*/false);
      auto gid = g ? ParseId((*g)[2]) : std::nullopt;
      if (!gid) return Fail(Error::InvalidArgument("unknown group '" + std::string(group) + "'"));
      out.gid = *gid;
    }
  }
  if (out.uid > 65535 || out.gid > 65535) {
    return Fail(Error::InvalidArgument("user '" + std::string(spec) +
                                       "': ids above 65535 are outside the sandbox's id map"));
  }
  return out;
}

}  // namespace asb::templates
