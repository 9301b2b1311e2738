#include "api/exec_result_json.h"

namespace asb::api {

namespace {

namespace json = boost::json;

constexpr ExecResultField kFields[] = {
    {"exit_code", "integer", "The exit status; 128 + the signal when a signal ended it.",
     [](const core::ExecResult& r) -> json::value { return r.exit_code; }},
    {"signal", "integer", "The signal that ended the command; 0 when it exited.",
     [](const core::ExecResult& r) -> json::value { return r.signal; }},
    {"timed_out", "boolean", "The command passed its timeout and was killed.",
     [](const core::ExecResult& r) -> json::value { return r.timed_out; }},
    {"truncated", "boolean", "Either stream was cut (stdout_truncated || stderr_truncated).",
     [](const core::ExecResult& r) -> json::value {
       return r.stdout_truncated || r.stderr_truncated;
     }},
    {"stdout_truncated", "boolean", "stdout went past its output cap; its first bytes are kept.",
     [](const core::ExecResult& r) -> json::value { return r.stdout_truncated; }},
    {"stderr_truncated", "boolean", "stderr went past its own output cap.",
     [](const core::ExecResult& r) -> json::value { return r.stderr_truncated; }},
    {"oom_killed", "boolean",
     "The sandbox's memory limit killed a process of the sandbox while the command ran.",
     [](const core::ExecResult& r) -> json::value { return r.oom_killed; }},
    {"pids_limited", "boolean", "The sandbox's pids limit refused a fork while the command ran.",
     [](const core::ExecResult& r) -> json::value { return r.pids_limited; }},
    {"duration_ms", "integer", "How long the command ran, in milliseconds.",
     [](const core::ExecResult& r) -> json::value { return r.duration_ms; }},
};

}  // namespace

std::span<const ExecResultField> ExecResultFields() { return kFields; }

void PutExecResult(const core::ExecResult& r, json::object* o) {
  for (const ExecResultField& f : kFields) (*o)[f.name] = f.get(r);
}

}  // namespace asb::api
