// Redaction of what looks like a secret in text the server keeps or prints about a call: the
// audit trail's targets (command lines, paths, names; api/audit.h, mcp/audited_backend.h) and
// every log line (common/log.h, api/json_log.h). One function, so that the rule is the same
// everywhere; the rule and its limits are written down in src/api/AUTH.md ("Redaction").
//
// Best-effort by design: it recognises the shapes below and nothing else, so a secret that
// looks like ordinary text (`echo hunter2`) is kept. The secret part is replaced by
// kRedacted and the rest stays readable ("TOKEN=[REDACTED] make deploy").
//  - private key blocks: "-----BEGIN ... PRIVATE KEY-----" up to its END line (or the end);
//  - URL credentials: "scheme://user:[REDACTED]@host";
//  - credential headers: "Authorization: Bearer [REDACTED]" (the scheme word is kept),
//    Proxy-Authorization, X-API-Key, Api-Key, X-Auth-Token, Private-Token, Cookie,
//    Set-Cookie; and "Bearer <12+ token characters>" anywhere;
//  - well-known token shapes: GitHub (ghp_/gho_/ghu_/ghs_/ghr_, github_pat_), GitLab
//    (glpat-), AWS access key ids (AKIA/ASIA + 16), OpenAI-style "sk-" (20+ characters with a
//    letter and a digit), Stripe (sk_live_/sk_test_/rk_live_/rk_test_), Slack (xox?-), npm
//    (npm_), Hugging Face (hf_), Google (AIza), JWTs (eyJ....eyJ....sig), and this server's
//    API keys ("asb_" + 48 hex; the 8-hex key prefixes that lists show are kept) and preview
//    tokens ("asbp_" + 64 hex);
//  - secret-named values: NAME=value, --name=value, --name value and "name": "value" where
//    a word of the name (split at _ - .) is password/passwd/pass/secret/token/apikey/
//    credential(s)/auth, or ends in password/passwd/token/secret, or the name ends in a "key"
//    word after another word (API_KEY, AWS_SECRET_ACCESS_KEY), and the name does not end in
//    a word that names something other than the secret (FILE, PATH, DIR, URL, ID, NAME, ...);
//    values that are a variable reference ($TOKEN, ${TOKEN}) are kept;
//  - "pass:VALUE" (openssl); "-u user:VALUE" / "--user user:VALUE" (curl) unless VALUE is
//    digits (user:group); "-pVALUE" when the text runs a MySQL/MariaDB client, and
//    "-p VALUE" after sshpass.
#pragma once

#include <string>
#include <string_view>

namespace asb {

/// What replaces a secret.
inline constexpr std::string_view kRedacted = "[REDACTED]";

/// `text` with every secret-looking part (see above) replaced by kRedacted. Bytes are kept
/// as they are otherwise (no UTF-8 or control-character handling: callers sanitize). Linear
/// in the length of `text`; idempotent.
std::string RedactSecrets(std::string_view text);

}  // namespace asb
