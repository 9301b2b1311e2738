#include "store/secret_box.h"

#include <fcntl.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <memory>
#include <optional>

#include "common/unique_fd.h"

namespace asb::store {

namespace {

constexpr size_t kKeyBytes = 32;
constexpr size_t kNonceBytes = 12;
constexpr size_t kTagBytes = 16;

using CipherCtx = std::unique_ptr<EVP_CIPHER_CTX, decltype(&EVP_CIPHER_CTX_free)>;

CipherCtx NewCtx() { return CipherCtx(EVP_CIPHER_CTX_new(), &EVP_CIPHER_CTX_free); }

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

Result<std::string> ReadKeyFile(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (!fd) return Fail(Error(ErrorCode::kNotFound, "open " + path, errno));
  char buf[kKeyBytes * 2 + 2];
  ssize_t n = ::read(fd.get(), buf, sizeof(buf));
  if (n < 0) return Fail(Error(ErrorCode::kInternal, "read " + path, errno));
  std::string hex(buf, static_cast<size_t>(n));
  while (!hex.empty() && (hex.back() == '\n' || hex.back() == '\r')) hex.pop_back();
  std::string key;
  bool ok = hex.size() == kKeyBytes * 2;
  for (size_t i = 0; ok && i < hex.size(); i += 2) {
    const int hi = HexValue(hex[i]), lo = HexValue(hex[i + 1]);
    ok = hi >= 0 && lo >= 0;
    key.push_back(static_cast<char>(hi << 4 | lo));
  }
  if (!ok) {
    return Fail(Error::Internal(path + " does not hold a key (64 hex digits); deleting it makes "
                                       "a new one and loses every sealed env value"));
  }
  return key;
}

std::string Base64(std::string_view bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3), '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(bytes.data()),
                                static_cast<int>(bytes.size()));
  out.resize(static_cast<size_t>(n));
  return out;
}

std::optional<std::string> Unbase64(std::string_view text) {
  if (text.empty() || text.size() % 4 != 0) return std::nullopt;
  std::string out(text.size() / 4 * 3, '\0');
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(text.data()),
                                static_cast<int>(text.size()));
  if (n < 0) return std::nullopt;
  size_t len = static_cast<size_t>(n);
  // EVP_DecodeBlock counts the padding as zero bytes.
  for (size_t i = text.size(); i > 0 && text[i - 1] == '='; --i) --len;
  out.resize(len);
  return out;
}

}  // namespace

Result<SecretBox> SecretBox::LoadOrCreate(const std::string& key_path) {
  auto existing = ReadKeyFile(key_path);
  if (existing) return SecretBox(std::move(*existing));
  if (existing.error().code() != ErrorCode::kNotFound) return Fail(existing.error());
  unsigned char raw[kKeyBytes];
  if (RAND_bytes(raw, sizeof(raw)) != 1) return Fail(Error::Internal("no random bytes for a key"));
  static constexpr char kHex[] = "0123456789abcdef";
  std::string line;
  for (unsigned char b : raw) {
    line.push_back(kHex[b >> 4]);
    line.push_back(kHex[b & 0xf]);
  }
  line.push_back('\n');
  UniqueFd fd(::open(key_path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!fd) {
    if (errno == EEXIST) {  // another start made it first
      ASB_ASSIGN_OR_RETURN(std::string key, ReadKeyFile(key_path));
      return SecretBox(std::move(key));
    }
    return Fail(Error(ErrorCode::kInternal, "create " + key_path, errno));
  }
  if (::write(fd.get(), line.data(), line.size()) != static_cast<ssize_t>(line.size()) ||
      ::fsync(fd.get()) != 0) {
    const int err = errno;
    ::unlink(key_path.c_str());
    return Fail(Error(ErrorCode::kInternal, "write " + key_path, err));
  }
  return SecretBox(std::string(reinterpret_cast<const char*>(raw), sizeof(raw)));
}

SecretBox SecretBox::FromKey(std::string key) {
  key.resize(kKeyBytes, '\0');
  return SecretBox(std::move(key));
}

std::string SecretBox::Seal(std::string_view plaintext) const {
  std::string blob(kNonceBytes + plaintext.size() + kTagBytes, '\0');
  auto* nonce = reinterpret_cast<unsigned char*>(blob.data());
  auto* ct = nonce + kNonceBytes;
  auto* tag = ct + plaintext.size();
  // RAND_bytes and the GCM calls fail only when libcrypto itself is broken (no entropy, no
  // memory); then nothing can be sealed, and an empty value would silently lose the secret.
  if (RAND_bytes(nonce, kNonceBytes) != 1) std::abort();
  CipherCtx ctx = NewCtx();
  int len = 0;
  if (!ctx ||
      EVP_EncryptInit_ex(ctx.get(), EVP_aes_256_gcm(), nullptr,
                         reinterpret_cast<const unsigned char*>(key_.data()), nonce) != 1 ||
      EVP_EncryptUpdate(ctx.get(), ct, &len,
                        reinterpret_cast<const unsigned char*>(plaintext.data()),
                        static_cast<int>(plaintext.size())) != 1 ||
      EVP_EncryptFinal_ex(ctx.get(), ct + len, &len) != 1 ||
      EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_GCM_GET_TAG, kTagBytes, tag) != 1) {
    std::abort();
  }
  return std::string(kSealedPrefix) + Base64(blob);
}

Result<std::string> SecretBox::Open(std::string_view sealed) const {
  auto bad = [] {
    return Fail(Error::InvalidArgument(
        "a sealed value does not open with this server's key (secrets.key was replaced?)"));
  };
  if (sealed.substr(0, kSealedPrefix.size()) != kSealedPrefix) return bad();
  std::optional<std::string> blob = Unbase64(sealed.substr(kSealedPrefix.size()));
  if (!blob || blob->size() < kNonceBytes + kTagBytes) return bad();
  const auto* nonce = reinterpret_cast<const unsigned char*>(blob->data());
  const auto* ct = nonce + kNonceBytes;
  const size_t ct_len = blob->size() - kNonceBytes - kTagBytes;
  std::string tag(blob->data() + kNonceBytes + ct_len, kTagBytes);
  std::string out(ct_len, '\0');
  CipherCtx ctx = NewCtx();
  int len = 0;
  if (!ctx ||
      EVP_DecryptInit_ex(ctx.get(), EVP_aes_256_gcm(), nullptr,
                         reinterpret_cast<const unsigned char*>(key_.data()), nonce) != 1 ||
      EVP_DecryptUpdate(ctx.get(), reinterpret_cast<unsigned char*>(out.data()), &len, ct,
                        static_cast<int>(ct_len)) != 1 ||
      EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_GCM_SET_TAG, kTagBytes, tag.data()) != 1 ||
      EVP_DecryptFinal_ex(ctx.get(), reinterpret_cast<unsigned char*>(out.data()) + len, &len) !=
          1) {
    return bad();
  }
  return out;
}

}  // namespace asb::store
