// Internal to protocol/: the members that an exec request (messages.cc) and a proc.start
// request (proc_messages.cc) share on the wire, encoded and decoded alike
// (docs/design/sandbox-protocol.md, section 7): argv, command, env, cwd, user, and the
// optional pty {cols, rows}.
#pragma once

#include <optional>

#include "common/result.h"
#include "protocol/json_util.h"
#include "protocol/messages.h"

namespace asb::protocol::internal {

// Appends "argv", "command" (only when set), "env", "cwd", "user" to `o`, in that order, from
// the same-named members of `m` (ExecRequest or ProcStartRequest).
template <typename Request>
void PutCommandFields(const Request& m, json::object* o) {
  (*o)["argv"] = StringArray(m.argv);
  if (m.command) (*o)["command"] = Sv(*m.command);
  json::object env;
  for (const auto& [k, v] : m.env) env[Sv(k)] = Sv(v);
  (*o)["env"] = std::move(env);
  (*o)["cwd"] = Sv(m.cwd);
  (*o)["user"] = Sv(m.user);
}

// Reads the members PutCommandFields writes, in the same order; absent ones keep their
// defaults. Errors: kBackend "protocol: malformed ..." for a wrong type.
template <typename Request>
Status ReadCommandFields(const Reader& r, Request* m) {
  ASB_TRY(r.Get("argv", &m->argv));
  ASB_TRY(ReadOptionalString(r, "command", &m->command));
  ASB_TRY(r.Get("env", &m->env));
  ASB_TRY(r.Get("cwd", &m->cwd));
  ASB_TRY(r.Get("user", &m->user));
  return {};
}

// Appends "pty": {"cols", "rows"} to `o` when `pty` is set.
inline void PutPty(const std::optional<ExecRequest::Pty>& pty, json::object* o) {
  if (!pty) return;
  json::object p;
  p["cols"] = pty->cols;
  p["rows"] = pty->rows;
  (*o)["pty"] = std::move(p);
}

// Reads the optional "pty" object of `r` into *out (unchanged when absent or null).
// Errors: kBackend "protocol: malformed ..." for a wrong type or an out-of-range size.
inline Status ReadPty(const Reader& r, std::optional<ExecRequest::Pty>* out) {
  ASB_ASSIGN_OR_RETURN(const json::object* pty, r.Object("pty"));
  if (pty == nullptr) return {};
  Reader pr(*pty, "pty");
  ExecRequest::Pty p;
  ASB_TRY(pr.Get("cols", &p.cols));
  ASB_TRY(pr.Get("rows", &p.rows));
  *out = p;
  return {};
}

}  // namespace asb::protocol::internal
