#include "templates/dockerfile.h"

#include <algorithm>
#include <boost/json.hpp>
#include <cctype>
#include <optional>

#include "common/utf8.h"

namespace asb::templates {

namespace {

using Vars = std::vector<std::pair<std::string, std::string>>;

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string Upper(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v'; }

std::string_view Trim(std::string_view s) {
  while (!s.empty() && IsSpace(s.front())) s.remove_prefix(1);
  while (!s.empty() && IsSpace(s.back())) s.remove_suffix(1);
  return s;
}

const std::string* Lookup(const Vars& vars, std::string_view name) {
  for (auto it = vars.rbegin(); it != vars.rend(); ++it) {
    if (it->first == name) return &it->second;
  }
  return nullptr;
}

// The shell-like word processor of the Dockerfile reference ("Environment replacement").
class WordLexer {
 public:
  WordLexer(std::string_view in, const Vars& vars, char escape)
      : in_(in), vars_(vars), escape_(escape) {}

  // Processes until end of input or (when `stop` != 0) an unquoted `stop`, which is consumed.
  Result<std::string> Process(char stop) {
    std::string out;
    while (pos_ < in_.size()) {
      char c = in_[pos_];
      if (stop != 0 && c == stop) {
        ++pos_;
        return out;
      }
      if (c == '\'') {
        ASB_TRY(SingleQuoted(&out));
      } else if (c == '"') {
        ASB_TRY(DoubleQuoted(&out));
      } else if (c == escape_) {
        ++pos_;
        if (pos_ < in_.size()) out += in_[pos_++];
      } else if (c == '$') {
        ASB_TRY(Variable(&out));
      } else {
        out += c;
        ++pos_;
      }
    }
    if (stop != 0) return Fail(Error::InvalidArgument("missing '}' in variable reference"));
    return out;
  }

 private:
  Status SingleQuoted(std::string* out) {
    size_t end = in_.find('\'', pos_ + 1);
    if (end == std::string_view::npos) return Fail(Error::InvalidArgument("unterminated '"));
    out->append(in_.substr(pos_ + 1, end - pos_ - 1));
    pos_ = end + 1;
    return {};
  }

  Status DoubleQuoted(std::string* out) {
    ++pos_;
    while (pos_ < in_.size()) {
      char c = in_[pos_];
      if (c == '"') {
        ++pos_;
        return {};
      }
      if (c == '$') {
        ASB_TRY(Variable(out));
        continue;
      }
      if (c == escape_ && pos_ + 1 < in_.size()) {
        char n = in_[pos_ + 1];
        // Only these may be escaped inside double quotes; other escapes are kept as written.
        if (n == '"' || n == '$' || n == escape_) {
          *out += n;
          pos_ += 2;
          continue;
        }
      }
      *out += c;
      ++pos_;
    }
    return Fail(Error::InvalidArgument("unterminated \""));
  }

  static bool NameStart(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
  static bool NameChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

  Status Variable(std::string* out) {
    ++pos_;  // '$'
    if (pos_ >= in_.size()) {
      *out += '$';
      return {};
    }
    if (in_[pos_] != '{') {
      if (!NameStart(in_[pos_])) {
        *out += '$';
        return {};
      }
      size_t start = pos_;
      while (pos_ < in_.size() && NameChar(in_[pos_])) ++pos_;
      if (const auto* v = Lookup(vars_, in_.substr(start, pos_ - start))) *out += *v;
      return {};
    }
    ++pos_;  // '{'
    size_t start = pos_;
    while (pos_ < in_.size() && NameChar(in_[pos_])) ++pos_;
    std::string name(in_.substr(start, pos_ - start));
    if (name.empty() || !NameStart(name[0])) {
      return Fail(Error::InvalidArgument("bad variable name in ${...}"));
    }
    if (pos_ >= in_.size()) return Fail(Error::InvalidArgument("missing '}' in ${" + name));
    const std::string* value = Lookup(vars_, name);
    if (in_[pos_] == '}') {
      ++pos_;
      if (value) *out += *value;
      return {};
    }
    bool colon = in_[pos_] == ':';
    if (colon) ++pos_;
    char op = pos_ < in_.size() ? in_[pos_] : '\0';
    if (op != '-' && op != '+' && op != '?') {
      return Fail(Error::InvalidArgument("unsupported modifier in ${" + name + "...}"));
    }
    ++pos_;
    ASB_ASSIGN_OR_RETURN(std::string word, Process('}'));
    const bool set = value != nullptr && (!colon || !value->empty());
    if (op == '-') {
      *out += set ? *value : word;
    } else if (op == '+') {
      if (set) *out += word;
    } else {
      if (!set) {
        return Fail(Error::InvalidArgument(name + ": " + (word.empty() ? "is not set" : word)));
      }
      *out += *value;
    }
    return {};
  }

  std::string_view in_;
  const Vars& vars_;
  char escape_;
  size_t pos_ = 0;
};

// Splits on unquoted whitespace, keeping quotes and escapes in the words (the Dockerfile
// reference's word splitting for ENV, LABEL, ARG, COPY and ADD).
Result<std::vector<std::string>> SplitWords(std::string_view s, char escape) {
  std::vector<std::string> words;
  std::string cur;
  bool have = false;
  char quote = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (quote == 0 && IsSpace(c)) {
      if (have) words.push_back(std::move(cur));
      cur.clear();
      have = false;
      continue;
    }
    have = true;
    cur += c;
    if (c == escape && quote != '\'' && i + 1 < s.size()) {
      cur += s[++i];
    } else if (quote == 0 && (c == '"' || c == '\'')) {
      quote = c;
    } else if (quote != 0 && c == quote) {
      quote = 0;
    }
  }
  if (quote != 0) return Fail(Error::InvalidArgument(std::string("unterminated ") + quote));
  if (have) words.push_back(std::move(cur));
  return words;
}

// A JSON array of strings (exec form), or nullopt when `s` is not one (then it is shell form,
// as the reference says).
std::optional<std::vector<std::string>> ParseExecForm(std::string_view s) {
  if (s.empty() || s.front() != '[') return std::nullopt;
  boost::system::error_code ec;
  boost::json::value v = boost::json::parse(s, ec);
  if (ec || !v.is_array()) return std::nullopt;
  std::vector<std::string> out;
  for (const auto& e : v.get_array()) {
    if (!e.is_string()) return std::nullopt;
    out.emplace_back(e.get_string());
  }
  return out;
}

// Lexically normalizes an absolute path: no ".", "..", or repeated '/'.
std::string CleanAbsolute(std::string_view path) {
  std::vector<std::string_view> parts;
  size_t i = 0;
  while (i <= path.size()) {
    size_t j = path.find('/', i);
    if (j == std::string_view::npos) j = path.size();
    std::string_view part = path.substr(i, j - i);
    if (part == "..") {
      if (!parts.empty()) parts.pop_back();
    } else if (!part.empty() && part != ".") {
      parts.push_back(part);
    }
    i = j + 1;
  }
  std::string out;
  for (auto p : parts) {
    out += '/';
    out += p;
  }
  return out.empty() ? "/" : out;
}

bool IsTemplateName(std::string_view s) {
  if (s.empty() || s.size() > 63) return false;
  if (!std::islower(static_cast<unsigned char>(s[0])) &&
      !std::isdigit(static_cast<unsigned char>(s[0]))) {
    return false;
  }
  return std::all_of(s.begin(), s.end(), [](char c) {
    return std::islower(static_cast<unsigned char>(c)) ||
           std::isdigit(static_cast<unsigned char>(c)) || c == '-' || c == '_';
  });
}

// Why an instruction we do not run is refused (the reference's instruction list).
std::optional<std::string> UnsupportedReason(const std::string& upper) {
  if (upper == "CMD" || upper == "ENTRYPOINT") {
    return "a template has no entrypoint: sandboxd is PID 1 and commands are started with exec";
  }
  if (upper == "EXPOSE") return "sandbox networking is configured per sandbox, not per template";
  if (upper == "VOLUME") return "a sandbox's only writable volume is /workspace";
  if (upper == "HEALTHCHECK") return "sandboxes have no health checks";
  if (upper == "STOPSIGNAL") return "sandboxes are stopped by killing their cgroup";
  if (upper == "SHELL") return "RUN's shell form always uses /bin/sh -c";
  if (upper == "ONBUILD") return "templates cannot be used as a Dockerfile's parent image";
  if (upper == "MAINTAINER") return "use LABEL instead";
  return std::nullopt;
}

class Parser {
 public:
  explicit Parser(char escape) : escape_(escape) {}

  Status Instruction(int line, std::string_view text) {
    size_t sp = 0;
    while (sp < text.size() && !IsSpace(text[sp])) ++sp;
    const std::string upper = Upper(text.substr(0, sp));
    std::string_view rest = Trim(text.substr(sp));
    line_ = line;
    if (auto why = UnsupportedReason(upper)) {
      return Fail(Error::InvalidArgument(upper + " is not supported: " + *why));
    }
    if (upper == "ARG") return Arg(rest);
    if (upper == "FROM") return From(rest);
    const bool known = upper == "RUN" || upper == "COPY" || upper == "ADD" || upper == "ENV" ||
                       upper == "WORKDIR" || upper == "USER" || upper == "LABEL";
    if (!known) return Fail(Error::InvalidArgument("unknown instruction '" + upper + "'"));
    if (out_.from.empty()) return Fail(Error::InvalidArgument(upper + " before FROM"));
    if (upper == "RUN") return Run(rest);
    if (upper == "COPY") return Copy(rest, DockerStep::Kind::kCopy);
    if (upper == "ADD") return Copy(rest, DockerStep::Kind::kAdd);
    if (upper == "ENV") return KeyValues(rest, DockerStep::Kind::kEnv);
    if (upper == "LABEL") return KeyValues(rest, DockerStep::Kind::kLabel);
    if (upper == "WORKDIR") return Workdir(rest);
    return User(rest);
  }

  Result<Dockerfile> Finish() && {
    if (out_.from.empty()) return Fail(Error::InvalidArgument("Dockerfile has no FROM"));
    return std::move(out_);
  }

 private:
  // Variables visible to replacement: ARGs, then ENVs (an ENV wins over an ARG of the same
  // name, whatever their order, as the reference says).
  Vars Visible() const {
    Vars v = args_;
    v.insert(v.end(), env_.begin(), env_.end());
    return v;
  }

  Result<std::string> Expand(std::string_view word) const {
    return ExpandWord(word, out_.from.empty() ? meta_args_ : Visible(), escape_);
  }

  DockerStep NewStep(DockerStep::Kind kind) const {
    DockerStep s;
    s.kind = kind;
    s.line = line_;
    return s;
  }

  // Leading --flag=value words; `allowed` names the ones this instruction takes.
  Result<std::vector<std::pair<std::string, std::string>>> Flags(
      std::vector<std::string>* words, const std::string& instr,
      std::initializer_list<std::string_view> allowed) {
    std::vector<std::pair<std::string, std::string>> flags;
    while (!words->empty() && words->front().rfind("--", 0) == 0) {
      std::string w = words->front();
      words->erase(words->begin());
      size_t eq = w.find('=');
      std::string name = w.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
      if (std::find(allowed.begin(), allowed.end(), name) == allowed.end()) {
        std::string why = name == "from" ? " (multi-stage builds are not supported)" : "";
        return Fail(Error::InvalidArgument(instr + " --" + name + " is not supported" + why));
      }
      if (eq == std::string::npos) {
        return Fail(Error::InvalidArgument(instr + " --" + name + " needs a value"));
      }
      ASB_ASSIGN_OR_RETURN(std::string value, Expand(w.substr(eq + 1)));
      flags.emplace_back(name, value);
    }
    return flags;
  }

  Status Arg(std::string_view rest) {
    ASB_ASSIGN_OR_RETURN(auto words, SplitWords(rest, escape_));
    if (words.empty()) return Fail(Error::InvalidArgument("ARG needs a name"));
    DockerStep step = NewStep(DockerStep::Kind::kArg);
    for (const auto& w : words) {
      size_t eq = w.find('=');
      std::string name = w.substr(0, eq);
      if (name.empty()) return Fail(Error::InvalidArgument("ARG needs a name"));
      std::optional<std::string> value;
      if (eq != std::string::npos) {
        ASB_ASSIGN_OR_RETURN(value, Expand(w.substr(eq + 1)));
      } else if (!out_.from.empty()) {
        // Redeclared after FROM: takes the default given before FROM, if any.
        if (const auto* meta = Lookup(meta_args_, name)) value = *meta;
      }
      if (!value) continue;  // declared without a value and no build arguments: unset
      (out_.from.empty() ? meta_args_ : args_).emplace_back(name, *value);
      if (!out_.from.empty()) step.pairs.emplace_back(name, *value);
    }
    if (!step.pairs.empty()) out_.steps.push_back(std::move(step));
    return {};
  }

  Status From(std::string_view rest) {
    if (!out_.from.empty()) {
      return Fail(Error::InvalidArgument(
          "a second FROM is not supported (multi-stage builds are not supported)"));
    }
    ASB_ASSIGN_OR_RETURN(auto words, SplitWords(rest, escape_));
    ASB_TRY(Flags(&words, "FROM", {}));
    if (words.empty()) return Fail(Error::InvalidArgument("FROM needs a template name"));
    if (words.size() >= 2 && Lower(words[1]) == "as") {
      return Fail(Error::InvalidArgument("FROM ... AS is not supported (multi-stage builds)"));
    }
    if (words.size() != 1) return Fail(Error::InvalidArgument("FROM takes one template name"));
    ASB_ASSIGN_OR_RETURN(std::string name, Expand(words[0]));
    if (name != "scratch" && !IsTemplateName(name)) {
      return Fail(Error::InvalidArgument(
          "FROM '" + name +
          "': name one of our templates (lower-case letters, digits, '-', '_'; no registry, "
          "tag or digest) or scratch"));
    }
    out_.from = name;
    out_.from_line = line_;
    return {};
  }

  Status Run(std::string_view rest) {
    DockerStep step = NewStep(DockerStep::Kind::kRun);
    if (rest.rfind("--", 0) == 0) {
      size_t sp = 0;
      while (sp < rest.size() && !IsSpace(rest[sp]) && rest[sp] != '=') ++sp;
      return Fail(
          Error::InvalidArgument("RUN " + std::string(rest.substr(0, sp)) + " is not supported"));
    }
    if (auto argv = ParseExecForm(rest)) {
      if (argv->empty() || (*argv)[0].empty()) {
        return Fail(Error::InvalidArgument("RUN [] needs a program"));
      }
      step.args = std::move(*argv);
    } else {
      if (rest.empty()) return Fail(Error::InvalidArgument("RUN needs a command"));
      for (size_t p = rest.find("<<"); p != std::string_view::npos; p = rest.find("<<", p + 2)) {
        std::string_view after = rest.substr(p + 2);
        if (!after.empty() && after[0] == '<') {  // here-string <<<
          p += 1;
          continue;
        }
        if (!after.empty() && after[0] == '-') after.remove_prefix(1);
        if (!after.empty() && (after[0] == '"' || after[0] == '\'')) after.remove_prefix(1);
        if (!after.empty() &&
            (std::isalpha(static_cast<unsigned char>(after[0])) || after[0] == '_')) {
          return Fail(Error::InvalidArgument(
              "heredocs (<<WORD) are not supported: a Dockerfile line cannot carry them here; "
              "put the text in a file and COPY it"));
        }
      }
      step.args = {"/bin/sh", "-c", std::string(rest)};
    }
    out_.steps.push_back(std::move(step));
    return {};
  }

  Status Copy(std::string_view rest, DockerStep::Kind kind) {
    const std::string instr = kind == DockerStep::Kind::kAdd ? "ADD" : "COPY";
    DockerStep step = NewStep(kind);
    ASB_ASSIGN_OR_RETURN(auto words, SplitWords(rest, escape_));
    ASB_ASSIGN_OR_RETURN(auto flags, Flags(&words, instr, {"chown"}));
    for (const auto& [k, v] : flags) step.chown = v;
    std::vector<std::string> paths;
    std::string joined;
    for (const auto& w : words) joined += (joined.empty() ? "" : " ") + w;
    if (auto exec = ParseExecForm(joined)) {
      paths = std::move(*exec);
    } else {
      for (const auto& w : words) {
        if (w.rfind("<<", 0) == 0) {
          return Fail(Error::InvalidArgument(instr + " with a heredoc is not supported"));
        }
        ASB_ASSIGN_OR_RETURN(std::string p, Expand(w));
        paths.push_back(std::move(p));
      }
    }
    if (paths.size() < 2) {
      return Fail(Error::InvalidArgument(instr + " needs at least one source and a destination"));
    }
    step.dest = paths.back();
    paths.pop_back();
    if (step.dest.empty()) return Fail(Error::InvalidArgument(instr + ": empty destination"));
    for (const auto& src : paths) {
      if (src.find("://") != std::string::npos || src.rfind("git@", 0) == 0) {
        return Fail(Error::InvalidArgument(instr + " '" + src +
                                           "': remote sources are not supported (local files "
                                           "in the build context only)"));
      }
      if (src.find_first_of("*?[") != std::string::npos) {
        return Fail(Error::InvalidArgument(instr + " '" + src +
                                           "': wildcards are not supported; name the files"));
      }
      if (src.empty()) return Fail(Error::InvalidArgument(instr + ": empty source"));
    }
    if (paths.size() > 1 && step.dest.back() != '/') {
      return Fail(Error::InvalidArgument(instr + " with several sources needs a destination ending "
                                                 "in '/'"));
    }
    step.args = std::move(paths);
    out_.steps.push_back(std::move(step));
    return {};
  }

  Status KeyValues(std::string_view rest, DockerStep::Kind kind) {
    const std::string instr = kind == DockerStep::Kind::kEnv ? "ENV" : "LABEL";
    DockerStep step = NewStep(kind);
    ASB_ASSIGN_OR_RETURN(auto words, SplitWords(rest, escape_));
    if (words.empty()) return Fail(Error::InvalidArgument(instr + " needs key=value"));
    if (words[0].find('=') == std::string::npos) {
      // The legacy form "ENV key value with spaces": one pair, the rest of the line.
      if (words.size() < 2)
        return Fail(Error::InvalidArgument(instr + " " + words[0] + " needs a value"));
      size_t key_end = rest.find_first_of(" \t");
      ASB_ASSIGN_OR_RETURN(std::string key, Expand(words[0]));
      ASB_ASSIGN_OR_RETURN(std::string value, Expand(Trim(rest.substr(key_end))));
      step.pairs.emplace_back(std::move(key), std::move(value));
    } else {
      for (const auto& w : words) {
        size_t eq = w.find('=');
        if (eq == std::string::npos) {
          return Fail(Error::InvalidArgument(instr + " '" + w + "': expected key=value"));
        }
        ASB_ASSIGN_OR_RETURN(std::string key, Expand(w.substr(0, eq)));
        ASB_ASSIGN_OR_RETURN(std::string value, Expand(w.substr(eq + 1)));
        step.pairs.emplace_back(std::move(key), std::move(value));
      }
    }
    for (const auto& [k, v] : step.pairs) {
      if (k.empty()) return Fail(Error::InvalidArgument(instr + ": empty key"));
      if (kind == DockerStep::Kind::kEnv) {
        if (k.find('=') != std::string::npos || k.find('\0') != std::string::npos) {
          return Fail(Error::InvalidArgument("ENV: bad name '" + k + "'"));
        }
        env_.emplace_back(k, v);
      }
    }
    out_.steps.push_back(std::move(step));
    return {};
  }

  Status Workdir(std::string_view rest) {
    if (rest.empty()) return Fail(Error::InvalidArgument("WORKDIR needs a path"));
    ASB_ASSIGN_OR_RETURN(std::string path, Expand(rest));
    if (path.empty()) return Fail(Error::InvalidArgument("WORKDIR needs a path"));
    workdir_ = CleanAbsolute(path[0] == '/' ? path : workdir_ + "/" + path);
    DockerStep step = NewStep(DockerStep::Kind::kWorkdir);
    step.value = workdir_;
    out_.steps.push_back(std::move(step));
    return {};
  }

  Status User(std::string_view rest) {
    ASB_ASSIGN_OR_RETURN(std::string user, Expand(rest));
    if (user.empty() || std::any_of(user.begin(), user.end(), IsSpace) || user[0] == ':' ||
        user.back() == ':') {
      return Fail(Error::InvalidArgument("USER needs user[:group]"));
    }
    DockerStep step = NewStep(DockerStep::Kind::kUser);
    step.value = user;
    out_.steps.push_back(std::move(step));
    return {};
  }

  char escape_;
  int line_ = 0;
  Dockerfile out_;
  Vars meta_args_;  // ARGs before FROM
  Vars args_;       // ARGs after FROM
  Vars env_;
  std::string workdir_ = "/";
};

bool IsLineBlank(std::string_view s) { return Trim(s).empty(); }

bool IsComment(std::string_view s) {
  s = Trim(s);
  return !s.empty() && s[0] == '#';
}

// A parser directive line: "# name=value" (reference, "Parser directives").
std::optional<std::pair<std::string, std::string>> Directive(std::string_view s) {
  s = Trim(s);
  if (s.empty() || s[0] != '#') return std::nullopt;
  s = Trim(s.substr(1));
  size_t eq = s.find('=');
  if (eq == std::string_view::npos) return std::nullopt;
  std::string_view name = Trim(s.substr(0, eq));
  if (name.empty() || !std::all_of(name.begin(), name.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) != 0;
      })) {
    return std::nullopt;
  }
  return std::make_pair(Lower(name), std::string(Trim(s.substr(eq + 1))));
}

std::vector<std::string_view> SplitLines(std::string_view text) {
  std::vector<std::string_view> lines;
  size_t i = 0;
  while (i < text.size()) {
    size_t j = text.find('\n', i);
    if (j == std::string_view::npos) j = text.size();
    std::string_view l = text.substr(i, j - i);
    if (!l.empty() && l.back() == '\r') l.remove_suffix(1);
    lines.push_back(l);
    i = j + 1;
  }
  return lines;
}

// (WithContext keeps a host call's mark: its host text never reaches a client, ADR 0016.)
Error AtLine(int line, const Error& e) {
  return e.WithContext("Dockerfile line " + std::to_string(line));
}

}  // namespace

Result<std::string> ExpandWord(std::string_view word, const Vars& vars, char escape) {
  return WordLexer(word, vars, escape).Process(0);
}

Result<Dockerfile> ParseDockerfile(std::string_view text) {
  if (text.size() > kMaxDockerfileBytes) {
    return Fail(Error::InvalidArgument("Dockerfile is larger than " +
                                       std::to_string(kMaxDockerfileBytes) + " bytes"));
  }
  if (text.find('\0') != std::string_view::npos) {
    return Fail(Error::InvalidArgument("Dockerfile contains a NUL byte"));
  }
  if (text.substr(0, 3) == "\xEF\xBB\xBF") text.remove_prefix(3);  // UTF-8 BOM
  const auto lines = SplitLines(text);
  // Values (LABEL, ENV) go into the template's JSON manifest: bytes that are not UTF-8 made
  // an installed template whose manifest no longer parsed.
  for (size_t k = 0; k < lines.size(); ++k) {
    if (!IsUtf8(lines[k])) {
      return Fail(AtLine(static_cast<int>(k) + 1, Error::InvalidArgument("not valid UTF-8")));
    }
  }
  char escape = '\\';
  size_t i = 0;
  // Parser directives: only at the very top, before any comment, blank line or instruction.
  std::vector<std::string> seen;
  for (; i < lines.size(); ++i) {
    auto d = Directive(lines[i]);
    if (!d) break;
    const int line = static_cast<int>(i) + 1;
    if (std::find(seen.begin(), seen.end(), d->first) != seen.end()) {
      return Fail(
          AtLine(line, Error::InvalidArgument("parser directive '" + d->first + "' given twice")));
    }
    seen.push_back(d->first);
    if (d->first == "escape") {
      if (d->second != "\\" && d->second != "`") {
        return Fail(AtLine(line, Error::InvalidArgument("escape must be \\ or `")));
      }
      escape = d->second[0];
    } else if (d->first != "syntax" && d->first != "check") {
      break;  // an unknown directive is a comment, and ends the directives
    }
    // syntax= and check= select BuildKit front ends and checks; this parser is the front end.
  }

  Parser parser(escape);
  while (i < lines.size()) {
    if (IsLineBlank(lines[i]) || IsComment(lines[i])) {
      ++i;
      continue;
    }
    const int start = static_cast<int>(i) + 1;
    std::string logical;
    for (; i < lines.size(); ++i) {
      std::string_view l = lines[i];
      if (!logical.empty() && (IsComment(l) || IsLineBlank(l))) continue;  // inside a continuation
      std::string_view t = l;
      while (!t.empty() && IsSpace(t.back())) t.remove_suffix(1);
      if (!t.empty() && t.back() == escape) {
        logical.append(t.substr(0, t.size() - 1));
        if (logical.empty()) logical = " ";
        continue;
      }
      logical.append(l);
      ++i;
      break;
    }
    if (auto st = parser.Instruction(start, Trim(logical)); !st) {
      return Fail(AtLine(start, st.error()));
    }
  }
  return std::move(parser).Finish();
}

}  // namespace asb::templates
