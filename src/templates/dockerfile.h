// A Dockerfile parser for custom templates (ADR 0012).
//
// Grammar and semantics follow the Dockerfile reference
// (https://docs.docker.com/reference/dockerfile/): parser directives (`escape`), comments, line
// continuations with the escape character, case-insensitive instruction names, exec form (a
// JSON array of strings) and shell form, and environment replacement ($VAR, ${VAR},
// ${VAR:-word}, ${VAR:+word}) in ENV, LABEL, WORKDIR, USER, COPY, ADD and ARG.
//
// Supported: FROM (a template name or `scratch`), RUN, COPY, ADD, ENV, WORKDIR, USER, LABEL,
// ARG (its default only: there are no build arguments). Everything else (CMD, ENTRYPOINT,
// EXPOSE, VOLUME, ONBUILD, HEALTHCHECK, SHELL, STOPSIGNAL, MAINTAINER, multi-stage `FROM ... AS`,
// a second FROM, `--from`, heredocs...) is an error naming the instruction and its line: a
// template has no entrypoint of its own (sandboxd is PID 1) and nothing may be silently ignored.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/result.h"

namespace asb::templates {

/// The largest Dockerfile accepted, in bytes (a larger one is kInvalidArgument).
inline constexpr size_t kMaxDockerfileBytes = 1 << 20;

/// One build step, in file order. `line` is the 1-based line the instruction starts on.
struct DockerStep {
  enum class Kind { kRun, kCopy, kAdd, kEnv, kWorkdir, kUser, kLabel, kArg };
  Kind kind;
  int line = 0;
  // RUN: exec form -> argv; shell form -> {"/bin/sh", "-c", text}.
  // COPY/ADD: sources (relative to the context, variables expanded), then `dest`.
  std::vector<std::string> args;
  std::string dest;   // COPY/ADD destination as written (relative to WORKDIR when relative)
  std::string chown;  // COPY/ADD --chown=user[:group], empty when absent
  // ENV/LABEL/ARG: key=value pairs, variables expanded (ARG: seen by later RUNs only, never
  // kept in the template); WORKDIR: absolute path; USER: user[:group].
  std::vector<std::pair<std::string, std::string>> pairs;
  std::string value;
};

struct Dockerfile {
  std::string from;  // a template name, or "scratch"
  int from_line = 0;
  std::vector<DockerStep> steps;
};

/// Parses Dockerfile text. Errors: kInvalidArgument "Dockerfile line N: <why>" for syntax
/// errors, unsupported instructions ("Dockerfile line 4: CMD is not supported: ..."), a missing
/// FROM, a file over kMaxDockerfileBytes.
Result<Dockerfile> ParseDockerfile(std::string_view text);

/// Expands $VAR, ${VAR}, ${VAR:-word}, ${VAR:+word} in `word` and removes quotes and escapes
/// as the Dockerfile's shell-like lexer does (single quotes literal; `escape` before any char
/// makes it literal). `vars` are NAME=value in definition order (the last one wins).
Result<std::string> ExpandWord(std::string_view word,
                               const std::vector<std::pair<std::string, std::string>>& vars,
                               char escape = '\\');

}  // namespace asb::templates
