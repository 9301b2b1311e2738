#include "sandboxd/sudo_wire.h"

#include <charconv>

namespace asb::sandboxd {

namespace {

constexpr std::string_view kVersion = "asb-sudo/1";

void Put(std::string* out, std::string_view field) {
  out->append(field);
  out->push_back('\0');
}

}  // namespace

std::string EncodeSudoRequest(const SudoRequest& r) {
  std::string out;
  Put(&out, kVersion);
  Put(&out, r.as_root ? "root" : "sandbox");
  Put(&out, r.cwd);
  Put(&out, std::to_string(r.argv.size()));
  for (const auto& a : r.argv) Put(&out, a);
  for (const auto& e : r.env) Put(&out, e);
  return out;
}

Result<SudoRequest> DecodeSudoRequest(std::string_view bytes) {
  if (bytes.size() > kSudoRequestMax) {
    return Fail(Error::InvalidArgument("the command line and environment are too long (at most " +
                                       std::to_string(kSudoRequestMax) + " bytes)"));
  }
  if (bytes.empty() || bytes.back() != '\0') {
    return Fail(Error::InvalidArgument("a malformed request (not NUL-terminated)"));
  }
  std::vector<std::string_view> fields;
  for (size_t at = 0; at < bytes.size();) {
    size_t nul = bytes.find('\0', at);
    fields.push_back(bytes.substr(at, nul - at));
    at = nul + 1;
  }
  if (fields[0] != kVersion) {
    return Fail(Error::InvalidArgument("this sudo speaks another version than sandboxd (" +
                                       std::string(fields[0].substr(0, 32)) + ")"));
  }
  if (fields.size() < 5) return Fail(Error::InvalidArgument("a malformed request (too short)"));
  SudoRequest r;
  if (fields[1] == "root") {
    r.as_root = true;
  } else if (fields[1] == "sandbox") {
    r.as_root = false;
  } else {
    return Fail(Error::InvalidArgument("unknown user (root or sandbox)"));
  }
  r.cwd = std::string(fields[2]);
  if (r.cwd.empty() || r.cwd[0] != '/') {
    return Fail(Error::InvalidArgument("the working directory must be absolute"));
  }
  size_t argc = 0;
  auto [end, ec] = std::from_chars(fields[3].data(), fields[3].data() + fields[3].size(), argc);
  if (ec != std::errc() || end != fields[3].data() + fields[3].size() || argc == 0 ||
      argc > fields.size() - 4) {
    return Fail(Error::InvalidArgument("a malformed request (argument count)"));
  }
  for (size_t i = 0; i < argc; ++i) r.argv.emplace_back(fields[4 + i]);
  for (size_t i = 4 + argc; i < fields.size(); ++i) {
    const std::string_view e = fields[i];
    if (e.empty() || e.find('=') == std::string_view::npos || e[0] == '=') {
      return Fail(Error::InvalidArgument("an environment entry is not NAME=value"));
    }
    r.env.emplace_back(e);
  }
  return r;
}

}  // namespace asb::sandboxd
