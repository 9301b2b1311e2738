// The JSON objects of the REST API's resources (api/openapi.json: Sandbox, Snapshot,
// FileStat, Template, Process), shared by the REST handlers and the MCP tools over the manager
// (mcp/manager_backend.h), so both show the same shapes; and the request bodies both read.
#pragma once

#include <boost/json.hpp>
#include <string>
#include <vector>

#include "core/sandbox_manager.h"

namespace asb::api {

/// A sandbox (handlers_sandboxes.cc): env values are not echoed, only their names (env_keys).
boost::json::object SandboxJson(const core::SandboxInfo& s);
/// A snapshot (handlers_snapshots.cc).
boost::json::object SnapshotJson(const core::SnapshotInfo& s);
/// POST /v1/sandboxes/{id}/fork's answer (handlers_snapshots.cc): {"forks": [{"sandbox",
/// "memory"} or {"error": {code, message}, "status"}, ...]}, one per child asked for, in order.
/// A child's error is what ForClient lets a client see (ADR 0016; `request_id` names the request
/// in a hidden error's message, "" for none), with its HTTP status.
boost::json::object ForkJson(const std::vector<core::ForkedChild>& children,
                             const std::string& request_id);
/// A file's stat (handlers_files.cc): {name, path, type, size, mode ("0644"), uid, gid, mtime,
/// link_target?}.
boost::json::object StatJson(const core::FileStat& s);
/// A template (handlers_templates.cc): its manifest, with `resources` resolved against the
/// server's limits `lim`.
boost::json::object TemplateJson(const core::TemplateInfo& t, const core::Limits& lim);
/// A background process (handlers_procs.cc): {pid, tag, argv, command, state, exit_code (null
/// while running), signal, started_at, ended_at (null while running), pty, stdin_open,
/// output_bytes}.
boost::json::object ProcessJson(const core::ProcessInfo& p);

/// The body of POST /v1/sandboxes (handlers_sandboxes.cc; api/openapi.json CreateSandbox):
/// template (alias image), cpus, memory_mb, pids_limit, workspace_mb, timeout_seconds,
/// idle_timeout_seconds, env, network, network_policy, auto_pause, auto_pause_keep_memory,
/// auto_resume, allow_public_traffic, mask_request_host, backend, read_only_rootfs (true only).
/// Limits are checked by core, not here. Errors: kInvalidArgument naming the field (unknown
/// fields too).
Result<core::CreateRequest> ParseCreateRequest(std::string_view text);

/// An exec's body, parsed (ParseExecRequest).
struct ParsedExec {
  core::ExecOptions options;
  bool base64 = false;  // encoding "base64": the output is sent base64-encoded
};
/// The body of POST /v1/sandboxes/{id}/exec and /exec/stream (handlers_exec.cc): command |
/// argv, env, workdir, user, timeout (alias timeout_seconds; seconds > 0), stdin,
/// max_output_bytes (per stream), encoding ("utf8" | "base64"). Errors: kInvalidArgument
/// naming the field (unknown fields too).
Result<ParsedExec> ParseExecRequest(std::string_view text);

/// The body of POST /v1/sandboxes/{id}/processes (handlers_procs.cc): command | argv, env,
/// workdir, user, tag, stdin, pty, cols, rows, ring_bytes. Errors: kInvalidArgument naming the
/// field (unknown fields too).
Result<core::ProcessOptions> ParseProcessStart(std::string_view text);

}  // namespace asb::api
