// The JSON objects of the REST API's resources (api/openapi.json: Sandbox, Snapshot,
// FileStat, Template), shared by the REST handlers and the MCP tools over the manager (mcp/
// manager_backend.h), so both show the same shapes.
#pragma once

#include <boost/json.hpp>

#include "core/sandbox_manager.h"

namespace asb::api {

/// A sandbox (handlers_sandboxes.cc): env values are not echoed, only their names (env_keys).
boost::json::object SandboxJson(const core::SandboxInfo& s);
/// A snapshot (handlers_snapshots.cc).
boost::json::object SnapshotJson(const core::SnapshotInfo& s);
/// A file's stat (handlers_files.cc): {name, path, type, size, mode ("0644"), uid, gid, mtime,
/// link_target?}.
boost::json::object StatJson(const protocol::FileStat& s);
/// A template (handlers_templates.cc): its manifest, with `resources` resolved against the
/// server's limits `lim`.
boost::json::object TemplateJson(const core::TemplateInfo& t, const core::Limits& lim);

}  // namespace asb::api
