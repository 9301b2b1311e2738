// SecretBox: authenticated encryption of the secrets the server keeps at rest (a sandbox's env
// in its record and its snapshots' records, ADR 0014, round 3), so that a copy of agent-sandbox.db
// (a backup, a leaked file, a reader of a loose file mode) does not hand over the API keys agents
// pass on create. AES-256-GCM (OpenSSL libcrypto) under a key of the server's own, kept in
// <data_dir>/secrets.key (mode 0600, beside e2b-token.key); deleting that file makes every sealed
// value unreadable.
//
// A sealed value is text: "asbx1:" then base64 of a 12-byte random nonce, the ciphertext and the
// 16-byte tag. Thread-safe (const after construction).
#pragma once

#include <string>
#include <string_view>

#include "common/result.h"

namespace asb::store {

class SecretBox {
 public:
  /// The prefix of every sealed value.
  static constexpr std::string_view kSealedPrefix = "asbx1:";

  /// The box whose key is in `key_path` (64 hex digits and a newline), which is created (0600,
  /// O_EXCL, never through a symlink) with a random key when missing. Errors: kInternal (the
  /// file cannot be read or written, or does not hold a key: the message says to delete it,
  /// which loses every sealed value).
  static Result<SecretBox> LoadOrCreate(const std::string& key_path);
  /// A box with `key` (32 bytes), for tests.
  static SecretBox FromKey(std::string key);

  /// `plaintext` sealed: kSealedPrefix + base64(nonce | ciphertext | tag).
  std::string Seal(std::string_view plaintext) const;
  /// The plaintext of a value Seal() made with this key. Errors: kInvalidArgument (not a sealed
  /// value, or sealed under another key or altered: the tag does not verify).
  Result<std::string> Open(std::string_view sealed) const;

 private:
  explicit SecretBox(std::string key) : key_(std::move(key)) {}
  std::string key_;  // 32 bytes
};

}  // namespace asb::store
