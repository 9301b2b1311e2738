#include "api/e2b_token.h"

#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <unistd.h>

#include <cerrno>

#include "api/text.h"
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

bool CheckE2bFileSignature(std::string_view secret, std::string_view sandbox_id,
                           const E2bFileSignature& sig, int64_t now_s) {
  if (secret.empty() || sig.signature.size() > 128) return false;
  std::string raw = std::string(sig.path) + ":" + std::string(sig.operation) + ":" +
                    std::string(sig.user) + ":" + E2bAccessToken(secret, sandbox_id);
  if (!sig.expiration.empty()) {
    int64_t at = 0;
    for (char c : sig.expiration) {
      if (c < '0' || c > '9' || at > (int64_t{1} << 40)) return false;
      at = at * 10 + (c - '0');
    }
    if (at < now_s) return false;
    raw += ":" + std::string(sig.expiration);
  }
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (EVP_Digest(raw.data(), raw.size(), digest, &len, EVP_sha256(), nullptr) != 1) return false;
  std::string want = "v1_" + Base64Encode(std::string_view(reinterpret_cast<char*>(digest), len));
  while (!want.empty() && want.back() == '=') want.pop_back();
  return sig.signature.size() == want.size() &&
         CRYPTO_memcmp(sig.signature.data(), want.data(), want.size()) == 0;
}

}  // namespace asb::api
