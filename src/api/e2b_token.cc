#include "api/e2b_token.h"

#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <unistd.h>

#include <cerrno>

#include "common/ids.h"
#include "common/unique_fd.h"

namespace asb::api {

namespace {

constexpr size_t kSecretHexChars = 64;

bool IsHexSecret(std::string_view s) {
  if (s.size() != kSecretHexChars) return false;
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

Result<std::string> ReadSecret(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (!fd) return Fail(Error(ErrorCode::kNotFound, "open " + path, errno));
  char buf[kSecretHexChars + 2];
  ssize_t n = ::read(fd.get(), buf, sizeof(buf));
  if (n < 0) return Fail(Error(ErrorCode::kInternal, "read " + path, errno));
  std::string s(buf, static_cast<size_t>(n));
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
  if (!IsHexSecret(s)) {
    return Fail(Error::Internal(path + " does not hold a secret (64 hex digits); delete it to "
                                       "make a new one, which revokes every E2B access token"));
  }
  return s;
}

}  // namespace

Result<std::string> LoadOrCreateE2bSecret(const std::string& path) {
  auto existing = ReadSecret(path);
  if (existing || existing.error().code() != ErrorCode::kNotFound) return existing;
  const std::string secret = RandomHex(kSecretHexChars / 2);
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!fd) {
    if (errno == EEXIST) return ReadSecret(path);  // another start made it first
    return Fail(Error(ErrorCode::kInternal, "create " + path, errno));
  }
  const std::string line = secret + "\n";
  if (::write(fd.get(), line.data(), line.size()) != static_cast<ssize_t>(line.size()) ||
      ::fsync(fd.get()) != 0) {
    int err = errno;
    ::unlink(path.c_str());
    return Fail(Error(ErrorCode::kInternal, "write " + path, err));
  }
  return secret;
}

std::string E2bAccessToken(std::string_view secret, std::string_view sandbox_id) {
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()),
       reinterpret_cast<const unsigned char*>(sandbox_id.data()), sandbox_id.size(), mac, &len);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out(kE2bTokenPrefix);
  for (unsigned int i = 0; i < len; ++i) {
    out.push_back(kHex[mac[i] >> 4]);
    out.push_back(kHex[mac[i] & 0xf]);
  }
  return out;
}

bool CheckE2bAccessToken(std::string_view secret, std::string_view sandbox_id,
                         std::string_view token) {
  if (secret.empty()) return false;
  const std::string want = E2bAccessToken(secret, sandbox_id);
  return token.size() == want.size() && CRYPTO_memcmp(token.data(), want.data(), want.size()) == 0;
}

namespace {
// The traffic token is the MAC of another message than any sandbox id ("sb_<hex>" has no '/').
std::string TrafficMessage(std::string_view sandbox_id) {
  return std::string(sandbox_id) + "/traffic";
}
}  // namespace

std::string E2bTrafficToken(std::string_view secret, std::string_view sandbox_id) {
  return E2bAccessToken(secret, TrafficMessage(sandbox_id));
}

bool CheckE2bTrafficToken(std::string_view secret, std::string_view sandbox_id,
                          std::string_view token) {
  return CheckE2bAccessToken(secret, TrafficMessage(sandbox_id), token);
}

}  // namespace asb::api
