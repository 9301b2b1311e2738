// Server-issued identifiers: a prefix and 16 lowercase hex digits from the kernel's CSPRNG,
// e.g. "sb_3f9a0c1d2e4b5a69" (api/openapi.json).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace asb {

/// Returns `prefix` + 16 random hex digits (64 bits from getrandom(2)). Never fails: aborts if
/// the kernel cannot supply randomness, which only happens on a broken host.
std::string NewId(std::string_view prefix);

/// Returns `n_bytes` random bytes as 2*n_bytes lowercase hex digits (for API keys, tokens).
std::string RandomHex(size_t n_bytes);

/// `v` as lowercase hex, zero-padded to at least `width` digits (cache file names, cpio
/// headers).
std::string HexU64(uint64_t v, int width = 16);

/// FNV-1a, 64 bits, of `s`: a stable short name for a path in a cache file's name. Not a
/// security boundary (anyone can make a collision).
uint64_t Fnv1a64(std::string_view s);

/// True if `id` is `prefix` followed by exactly 16 lowercase hex digits. Use this before an id
/// reaches a path or a query: it rejects "/", "..", and everything else.
bool IsValidId(std::string_view id, std::string_view prefix);

}  // namespace asb
