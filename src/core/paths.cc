#include "core/paths.h"

#include <cstdio>
#include <vector>

namespace asb::core {

namespace {

/// Splits `rel` on '/' and applies "." and ".." to `parts`, never popping below `floor`
/// components. Returns false when a ".." would climb below the floor.
bool ApplyComponents(std::string_view rel, std::vector<std::string_view>* parts, size_t floor) {
  size_t pos = 0;
  while (pos <= rel.size()) {
    size_t slash = rel.find('/', pos);
    if (slash == std::string_view::npos) slash = rel.size();
    std::string_view c = rel.substr(pos, slash - pos);
    pos = slash + 1;
    if (c.empty() || c == ".") continue;
    if (c == "..") {
      if (parts->size() <= floor) return false;
      parts->pop_back();
      continue;
    }
    parts->push_back(c);
  }
  return true;
}

std::string Join(const std::vector<std::string_view>& parts) {
  if (parts.empty()) return "/";
  std::string out;
  for (auto p : parts) {
    out += '/';
    out += p;
  }
  return out;
}

Error PathError(std::string_view path, std::string_view why) {
  std::string shown(path.substr(0, 200));
  for (char& c : shown) {
    if (c == '\0') c = '?';
  }
  return Error::InvalidArgument("path '" + shown + "' " + std::string(why));
}

}  // namespace

Result<std::string> NormalizeWorkspacePath(std::string_view path) {
  if (path.find('\0') != std::string_view::npos) {
    return Fail(PathError(path, "contains a NUL byte"));
  }
  if (path.size() > 4096) return Fail(PathError(path, "is longer than 4096 bytes"));
  std::vector<std::string_view> parts = {"workspace"};
  std::string_view rest = path;
  if (!path.empty() && path[0] == '/') {
    // Absolute: the first component must be exactly "workspace" ("/workspacex" is not below
    // it); "." components before it are tolerated, ".." is not.
    size_t i = path.find_first_not_of('/');
    std::string_view after = i == std::string_view::npos ? "" : path.substr(i);
    size_t end = after.find('/');
    std::string_view first = after.substr(0, end);
    if (first != "workspace") return Fail(PathError(path, "must be under /workspace"));
    rest = end == std::string_view::npos ? "" : after.substr(end);
  }
  if (!ApplyComponents(rest, &parts, 1)) return Fail(PathError(path, "leaves /workspace"));
  return Join(parts);
}

Result<std::string> NormalizeWorkdir(std::string_view path) {
  if (path.empty() || path[0] != '/') return NormalizeWorkspacePath(path);
  if (path.find('\0') != std::string_view::npos) {
    return Fail(PathError(path, "contains a NUL byte"));
  }
  if (path.size() > 4096) return Fail(PathError(path, "is longer than 4096 bytes"));
  std::vector<std::string_view> parts;
  if (!ApplyComponents(path, &parts, 0)) return Fail(PathError(path, "climbs above /"));
  return Join(parts);
}

Result<FilePath> NormalizeFilePath(std::string_view path) {
  FilePath out;
  ASB_ASSIGN_OR_RETURN(out.path, NormalizeWorkdir(path));
  out.in_workspace =
      out.path == kWorkspaceDir || (out.path.size() > kWorkspaceDir.size() &&
                                    out.path.compare(0, kWorkspaceDir.size(), kWorkspaceDir) == 0 &&
                                    out.path[kWorkspaceDir.size()] == '/');
  return out;
}

Result<uint32_t> ParseFileMode(std::string_view text) {
  const Error bad =
      Error::InvalidArgument("mode must be an octal number between 0 and 0777, got '" +
                             std::string(text.substr(0, 20)) + "'");
  std::string_view digits = text;
  if (digits.size() > 2 && digits[0] == '0' && (digits[1] == 'o' || digits[1] == 'O')) {
    digits.remove_prefix(2);
  }
  if (digits.empty() || digits.size() > 12) return Fail(bad);
  uint32_t mode = 0;
  for (char c : digits) {
    if (c < '0' || c > '7') return Fail(bad);
    mode = mode * 8 + static_cast<uint32_t>(c - '0');
    if (mode > 0777) return Fail(bad);  // checked per digit: no overflow
  }
  return mode;
}

Status CheckFileMode(uint32_t mode) {
  if (mode > 0777) {
    return Fail(
        Error::InvalidArgument("mode must be an octal number between 0 and 0777, got 0" + [&] {
          char buf[16];
          snprintf(buf, sizeof buf, "%o", mode);
          return std::string(buf);
        }()));
  }
  return {};
}

}  // namespace asb::core
