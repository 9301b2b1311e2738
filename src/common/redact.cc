// The redaction rules of redact.h as one pass per rule over the text, each collecting the
// [begin, end) spans it finds secret; the spans are merged and replaced at the end. No regular
// expressions: every rule is a linear scan, so a megabyte command costs milliseconds.
#include "common/redact.h"

#include <algorithm>
#include <cctype>
#include <initializer_list>
#include <utility>
#include <vector>

namespace asb {
namespace {

constexpr size_t npos = std::string_view::npos;

bool IsAlnum(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; }
bool IsSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}
bool IsQuote(char c) { return c == '\'' || c == '"'; }
// Characters of a name (NAME=, --name, "name":) and of the words the rules look at.
bool IsNameChar(char c) { return IsAlnum(c) || c == '_' || c == '-' || c == '.'; }
bool IsBase64Url(char c) { return IsAlnum(c) || c == '-' || c == '_'; }
bool IsDigits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}
bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}
bool OneOf(std::string_view w, std::initializer_list<std::string_view> list) {
  return std::find(list.begin(), list.end(), w) != list.end();
}

// How a name marks its value secret.
enum class NameKind {
  kNone,
  kAssigned,  // only as NAME=value or "name": value (API_KEY, auth, ...)
  kStrong,    // also as "--name value" (password, token, secret, ...)
};

// The name's words: lower case, split at '_', '-' and '.', empty ones dropped.
std::vector<std::string> Words(std::string_view name) {
  std::vector<std::string> words;
  std::string w;
  for (char c : name) {
    if (c == '_' || c == '-' || c == '.') {
      if (!w.empty()) words.push_back(std::move(w));
      w.clear();
    } else {
      w += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
  }
  if (!w.empty()) words.push_back(std::move(w));
  return words;
}

NameKind KindOfName(std::string_view name) {
  std::vector<std::string> words = Words(name);
  if (words.empty() || words.front() == "no") return NameKind::kNone;  // --no-password
  const std::string& last = words.back();
  // Names of something beside the secret: where it is, what it is called, how long it is.
  if (OneOf(last, {"file",   "files",  "path",     "dir",    "url",  "uri",  "env",
                   "name",   "id",     "type",     "length", "len",  "size", "mode",
                   "method", "prompt", "endpoint", "host",   "port", "user", "username",
                   "count",  "expiry", "expires",  "ttl"})) {
    return NameKind::kNone;
  }
  for (const std::string& w : words) {
    if (OneOf(w,
              {"password", "passwd", "secret", "token", "apikey", "credential", "credentials"}) ||
        EndsWith(w, "password") || EndsWith(w, "passwd") || EndsWith(w, "token") ||
        EndsWith(w, "secret")) {
      return NameKind::kStrong;
    }
  }
  if (last == "pass") return NameKind::kStrong;                        // DB_PASS, --pass
  if (last == "key" && words.size() >= 2) return NameKind::kAssigned;  // OPENAI_API_KEY
  if (last == "auth") return NameKind::kAssigned;                      // NPM_CONFIG__AUTH
  return NameKind::kNone;
}

// A token shape: `prefix` then a run of `chars` of length [min, max].
enum class Chars { kAlnum, kAlnumUnderscore, kBase64Url, kUpperDigit, kLowerHex, kAlnumDash };

bool InSet(char c, Chars set) {
  switch (set) {
    case Chars::kAlnum:
      return IsAlnum(c);
    case Chars::kAlnumUnderscore:
      return IsAlnum(c) || c == '_';
    case Chars::kBase64Url:
      return IsBase64Url(c);
    case Chars::kUpperDigit:
      return (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    case Chars::kLowerHex:
      return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
    case Chars::kAlnumDash:
      return IsAlnum(c) || c == '-';
  }
  return false;
}

struct Shape {
  std::string_view prefix;
  Chars chars;
  size_t min;
  size_t max;
  bool letter_and_digit;  // the run must hold both (tells "sk-" keys from package names)
};

constexpr size_t kAny = npos;
constexpr Shape kShapes[] = {
    {"ghp_", Chars::kAlnum, 30, kAny, false},
    {"gho_", Chars::kAlnum, 30, kAny, false},
    {"ghu_", Chars::kAlnum, 30, kAny, false},
    {"ghs_", Chars::kAlnum, 30, kAny, false},
    {"ghr_", Chars::kAlnum, 30, kAny, false},
    {"github_pat_", Chars::kAlnumUnderscore, 22, kAny, false},
    {"glpat-", Chars::kBase64Url, 20, kAny, false},
    {"AKIA", Chars::kUpperDigit, 16, 16, false},
    {"ASIA", Chars::kUpperDigit, 16, 16, false},
    {"sk-", Chars::kBase64Url, 20, kAny, true},
    {"sk_live_", Chars::kAlnum, 16, kAny, false},
    {"sk_test_", Chars::kAlnum, 16, kAny, false},
    {"rk_live_", Chars::kAlnum, 16, kAny, false},
    {"rk_test_", Chars::kAlnum, 16, kAny, false},
    {"xoxa-", Chars::kAlnumDash, 10, kAny, false},
    {"xoxb-", Chars::kAlnumDash, 10, kAny, false},
    {"xoxe-", Chars::kAlnumDash, 10, kAny, false},
    {"xoxp-", Chars::kAlnumDash, 10, kAny, false},
    {"xoxr-", Chars::kAlnumDash, 10, kAny, false},
    {"xoxs-", Chars::kAlnumDash, 10, kAny, false},
    {"npm_", Chars::kAlnum, 36, kAny, false},
    {"hf_", Chars::kAlnum, 30, kAny, false},
    {"AIza", Chars::kBase64Url, 35, kAny, false},
    {"asb_", Chars::kLowerHex, 48, 48, false},
    {"asbp_", Chars::kLowerHex, 64, 64, false},
};

// Request headers whose value is a credential. Authorization-like ones keep their scheme word.
constexpr std::string_view kHeaders[] = {
    "proxy-authorization", "authorization", "x-api-key",  "api-key",
    "x-auth-token",        "private-token", "set-cookie", "cookie"};

using Span = std::pair<size_t, size_t>;

class Redactor {
 public:
  explicit Redactor(std::string_view text) : t_(text), lower_(text) {
    for (char& c : lower_) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }

  std::string Run() {
    PrivateKeys();
    UrlCredentials();
    TokenShapes();
    Jwts();
    Headers();
    Bearer();
    Names();
    return Apply();
  }

 private:
  void Add(size_t b, size_t e) {
    if (b < e) spans_.emplace_back(b, e);
  }
  // A value, unless it is a variable reference ($TOKEN, ${TOKEN}, "$TOKEN"); returns its end.
  size_t AddValue(Span v) {
    if (v.first < v.second && t_[v.first] != '$') Add(v.first, v.second);
    return v.second;
  }
  bool BoundaryBefore(size_t pos) const {
    return pos == 0 || !(IsAlnum(t_[pos - 1]) || t_[pos - 1] == '_');
  }
  bool NameBoundaryBefore(size_t pos) const { return pos == 0 || !IsNameChar(t_[pos - 1]); }
  size_t SkipBlanks(size_t i) const {
    while (i < t_.size() && (t_[i] == ' ' || t_[i] == '\t')) ++i;
    return i;
  }

  // The value at `pos`: inside its quotes when quoted ('\' escapes in "..."), else up to a
  // space, a quote or a shell operator (with `json`, also ',' and '}').
  Span ValueAt(size_t pos, bool json) const {
    if (pos >= t_.size()) return {pos, pos};
    char q = t_[pos];
    if (IsQuote(q)) {
      size_t i = pos + 1;
      while (i < t_.size() && t_[i] != q) {
        if (q == '"' && t_[i] == '\\' && i + 1 < t_.size()) ++i;
        ++i;
      }
      return {pos + 1, std::min(i, t_.size())};
    }
    size_t i = pos;
    while (i < t_.size()) {
      char c = t_[i];
      if (IsSpace(c) || IsQuote(c) || c == ';' || c == '&' || c == '|' || c == '<' || c == '>' ||
          c == ')' || c == '`' || (json && (c == ',' || c == '}'))) {
        break;
      }
      ++i;
    }
    return {pos, i};
  }

  // "-----BEGIN <label> PRIVATE KEY-----" ... "-----END": the body, or all that follows.
  void PrivateKeys() {
    constexpr std::string_view kBegin = "-----BEGIN ";
    size_t pos = 0;
    while ((pos = t_.find(kBegin, pos)) != npos) {
      size_t label = pos + kBegin.size();
      size_t close = t_.find("-----", label);
      if (close == npos) return;
      std::string_view l = t_.substr(label, close - label);
      if (l.size() > 64 || l.find('\n') != npos || !EndsWith(l, "PRIVATE KEY")) {
        pos = close;
        continue;
      }
      size_t body = close + 5;
      size_t end = t_.find("-----END ", body);
      if (end == npos) end = t_.size();
      Add(body, end);
      pos = end;
    }
  }

  // scheme://user:password@host: the password.
  void UrlCredentials() {
    size_t pos = 0;
    while ((pos = t_.find("://", pos)) != npos) {
      size_t a = pos + 3;
      size_t i = a;
      while (i < t_.size() && !IsSpace(t_[i]) &&
             std::string_view("/?#'\"<>`").find(t_[i]) == npos) {
        ++i;
      }
      std::string_view authority = t_.substr(a, i - a);
      size_t at = authority.rfind('@');
      size_t colon = authority.find(':');
      if (at != npos && colon != npos && colon < at) Add(a + colon + 1, a + at);
      // On after this authority (each byte is looked at once), but not past a "://" that
      // starts at its last byte.
      pos = i > a && t_[i - 1] == ':' ? i - 1 : i;
    }
  }

  void TokenShapes() {
    for (const Shape& s : kShapes) {
      size_t pos = 0;
      while ((pos = t_.find(s.prefix, pos)) != npos) {
        size_t b = pos + s.prefix.size();
        size_t e = b;
        bool letter = false, digit = false;
        while (e < t_.size() && InSet(t_[e], s.chars)) {
          letter |= std::isalpha(static_cast<unsigned char>(t_[e])) != 0;
          digit |= t_[e] >= '0' && t_[e] <= '9';
          ++e;
        }
        size_t n = e - b;
        bool word_ends = e == t_.size() || !(IsAlnum(t_[e]) || t_[e] == '_');
        if (BoundaryBefore(pos) && n >= s.min && (s.max == kAny || n <= s.max) && word_ends &&
            (!s.letter_and_digit || (letter && digit))) {
          Add(b, e);  // the prefix stays: it says what kind of secret it was
        }
        pos = std::max(e, pos + 1);
      }
    }
  }

  // header.payload.signature, each base64url, the first two starting "eyJ" ('{"' encoded).
  void Jwts() {
    size_t pos = 0;
    while ((pos = t_.find("eyJ", pos)) != npos) {
      size_t i = pos;
      int dots = 0;
      size_t seg_start = i;
      bool ok = BoundaryBefore(pos);
      for (; ok && i <= t_.size(); ++i) {
        if (i < t_.size() && IsBase64Url(t_[i])) continue;
        size_t seg = i - seg_start;
        if (dots < 2) {
          if (i >= t_.size() || t_[i] != '.' || seg < 10) {
            ok = false;
            break;
          }
          ++dots;
          seg_start = i + 1;
        } else {
          break;  // the signature ended
        }
      }
      if (ok && dots == 2) {
        Add(pos, i);
        pos = i;
      } else {
        // A later start inside the same first segment fails the same way; one in a later
        // segment may not.
        pos = std::max(pos + 3, dots == 0 ? i : seg_start);
      }
    }
  }

  // Authorization: Bearer <secret>; X-API-Key: <secret>; "cookie": "<secret>".
  void Headers() {
    for (std::string_view h : kHeaders) {
      size_t pos = 0;
      while ((pos = lower_.find(h, pos)) != npos) {
        size_t i = pos + h.size();
        bool bounded = NameBoundaryBefore(pos) && (i == t_.size() || !IsNameChar(t_[i]));
        pos = i;
        if (!bounded) continue;
        if (i < t_.size() && IsQuote(t_[i])) ++i;  // "authorization": ...
        i = SkipBlanks(i);
        if (i >= t_.size() || t_[i] != ':') continue;
        i = SkipBlanks(i + 1);
        Span v;
        if (i < t_.size() && IsQuote(t_[i])) {
          v = ValueAt(i, true);
        } else {
          size_t e = i;
          while (e < t_.size() && t_[e] != '\n' && t_[e] != '\r' && !IsQuote(t_[e])) ++e;
          v = {i, e};
        }
        if (h.find("authorization") != npos) {
          // Keep the scheme word ("Bearer", "Basic", "token") when a credential follows it.
          size_t sp = v.first;
          while (sp < v.second && !IsSpace(t_[sp])) ++sp;
          size_t cred = sp;
          while (cred < v.second && IsSpace(t_[cred])) ++cred;
          if (cred < v.second) v.first = cred;
        }
        AddValue(v);
        pos = std::max(pos, v.second);
      }
    }
  }

  // "Bearer <token>" anywhere, the token at least 12 characters.
  void Bearer() {
    constexpr std::string_view kWord = "bearer";
    size_t pos = 0;
    while ((pos = lower_.find(kWord, pos)) != npos) {
      size_t i = pos + kWord.size();
      pos = i;
      if (!NameBoundaryBefore(i - kWord.size()) || i >= t_.size() || !IsSpace(t_[i])) continue;
      while (i < t_.size() && IsSpace(t_[i])) ++i;
      size_t e = i;
      while (e < t_.size() && (IsAlnum(t_[e]) || std::string_view("._~+/=-").find(t_[e]) != npos)) {
        ++e;
      }
      if (e - i >= 12) Add(i, e);
    }
  }

  // Calls on_name(begin, end) for each run of name characters, in order; it returns where the
  // scan goes on (at least `end`).
  template <typename F>
  void ForEachName(F on_name) const {
    for (size_t i = 0; i < t_.size();) {
      if (!IsNameChar(t_[i]) || !NameBoundaryBefore(i)) {
        ++i;
        continue;
      }
      size_t j = i;
      while (j < t_.size() && IsNameChar(t_[j])) ++j;
      i = std::max(j, on_name(i, j));
    }
  }

  // NAME=value, --name=value, --name value, "name": value, pass:value, -u user:value, -pvalue.
  void Names() {
    // First the programs whose short -p takes the password itself (mysql -pSECRET, sshpass -p
    // SECRET), wherever they stand.
    ForEachName([&](size_t b, size_t e) {
      std::string_view w = std::string_view(lower_).substr(b, e - b);
      if (w.substr(0, 5) == "mysql" || w.substr(0, 7) == "mariadb") mysql_ = true;
      if (w == "sshpass") sshpass_ = true;
      return e;
    });
    // On after a value too: names inside a secret need no look.
    ForEachName([&](size_t b, size_t e) { return Name(b, e); });
  }

  // Adds the secret value of the name at [b, e), if any; returns where that value ends (0
  // when there is none).
  size_t Name(size_t b, size_t e) {
    std::string_view name = t_.substr(b, e - b);
    size_t dashes = 0;
    while (dashes < name.size() && name[dashes] == '-') ++dashes;
    std::string_view core = name.substr(dashes);
    const bool after_space = b == 0 || IsSpace(t_[b - 1]);
    // -pSECRET / -p'SECRET' (mysql, mariadb, sshpass); sshpass -p SECRET.
    if (dashes == 1 && !core.empty() && core[0] == 'p' && (mysql_ || sshpass_)) {
      if (core.size() > 1 || (e < t_.size() && IsQuote(t_[e]))) {
        return AddValue(ValueAt(b + 2, false));
      }
      if (sshpass_ && e < t_.size() && IsSpace(t_[e])) {
        size_t v = SkipBlanks(e);
        return v < t_.size() && t_[v] != '-' ? AddValue(ValueAt(v, false)) : 0;
      }
    }
    // openssl's pass:SECRET.
    if (dashes == 0 && after_space && core == "pass" && e < t_.size() && t_[e] == ':') {
      return AddValue(ValueAt(e + 1, false));
    }
    // curl -u user:SECRET / --user=user:SECRET (not a docker-style uid:gid).
    if ((dashes == 1 && core == "u") || (dashes == 2 && core == "user")) {
      size_t v = e < t_.size() && t_[e] == '=' ? e + 1 : SkipBlanks(e);
      Span s = ValueAt(v, false);
      std::string_view value = t_.substr(s.first, s.second - s.first);
      size_t colon = value.find(':');
      if (colon == npos || IsDigits(value.substr(colon + 1))) return 0;
      return AddValue({s.first + colon + 1, s.second});
    }
    NameKind kind = KindOfName(core);
    if (kind == NameKind::kNone) return 0;
    // NAME=value (not a == comparison).
    if (e < t_.size() && t_[e] == '=' && (e + 1 >= t_.size() || t_[e + 1] != '=')) {
      return AddValue(ValueAt(e + 1, false));
    }
    // "name": value / name: value (JSON, YAML, headers): the colon needs a blank or a quote
    // after it, so that "token:abc" inside a word is left alone.
    size_t k = e;
    if (k < t_.size() && IsQuote(t_[k]) && b > 0 && t_[b - 1] == t_[k]) ++k;
    k = SkipBlanks(k);
    if (k < t_.size() && t_[k] == ':' && k + 1 < t_.size() &&
        (t_[k + 1] == ' ' || t_[k + 1] == '\t' || IsQuote(t_[k + 1]))) {
      return AddValue(ValueAt(SkipBlanks(k + 1), true));
    }
    // --password SECRET: the next word, unless it is another flag.
    if (dashes > 0 && kind == NameKind::kStrong && e < t_.size() && IsSpace(t_[e])) {
      size_t v = e;
      while (v < t_.size() && IsSpace(t_[v])) ++v;
      if (v < t_.size() && t_[v] != '-') return AddValue(ValueAt(v, false));
    }
    return 0;
  }

  std::string Apply() {
    if (spans_.empty()) return std::string(t_);
    std::sort(spans_.begin(), spans_.end());
    std::string out;
    out.reserve(t_.size());
    size_t done = 0;
    size_t i = 0;
    while (i < spans_.size()) {
      size_t b = spans_[i].first;
      size_t e = spans_[i].second;
      for (++i; i < spans_.size() && spans_[i].first <= e; ++i) e = std::max(e, spans_[i].second);
      if (b < done) b = done;
      out.append(t_.substr(done, b - done));
      out.append(kRedacted);
      done = e;
    }
    out.append(t_.substr(done));
    return out;
  }

  std::string_view t_;
  std::string lower_;
  std::vector<Span> spans_;
  bool mysql_ = false;
  bool sshpass_ = false;
};

}  // namespace

std::string RedactSecrets(std::string_view text) { return Redactor(text).Run(); }

}  // namespace asb
