// Internal to protocol/: the field-table rows that an exec request (messages.cc) and a
// proc.start request (proc_messages.cc) share on the wire (docs/design/sandbox-protocol.md,
// section 7): argv, command, env, cwd, user, and the table of the optional pty {cols, rows}.
#pragma once

#include <tuple>

#include "protocol/field_table.h"
#include "protocol/messages.h"

namespace asb::protocol::internal {

/// The rows "argv", "command" (written only when set), "env", "cwd", "user", in that order, of
/// the same-named members of `Request` (ExecRequest or ProcStartRequest).
template <typename Request>
constexpr auto CommandFields() {
  return std::tuple(Field("argv", &Request::argv), Field("command", &Request::command),
                    Field("env", &Request::env), Field("cwd", &Request::cwd),
                    Field("user", &Request::user));
}

/// "pty": {"cols", "rows"} (u16 each).
template <>
struct MessageSchema<ExecRequest::Pty> {
  static constexpr std::string_view kWhat = "pty";
  static constexpr auto kFields =
      std::tuple(Field("cols", &ExecRequest::Pty::cols), Field("rows", &ExecRequest::Pty::rows));
};

}  // namespace asb::protocol::internal
