// The sandbox record's spec JSON and env rules (sandbox_record.h).
#include <boost/json.hpp>
#include <cctype>

#include "core/sandbox_record.h"

namespace asb::core {

namespace json = boost::json;

std::string EncodeSpecJson(const SandboxInfo& info) {
  json::object o;
  o["cpus"] = info.cpus;
  o["memory_mb"] = info.memory_mb;
  o["pids_limit"] = info.pids_limit;
  o["workspace_mb"] = info.workspace_mb;
  o["tmp_size_mb"] = info.tmp_size_mb;
  o["network"] = info.network;
  if (info.network) {
    o["network_policy"] = json::parse(isolation::net::PolicyToJson(info.network_policy));
  }
  o["read_only_rootfs"] = info.read_only_rootfs;
  o["timeout_seconds"] = info.timeout_seconds;
  json::object env;
  for (const auto& [k, v] : info.env) env[k] = v;
  o["env"] = std::move(env);
  o["default_workdir"] = info.default_workdir;
  o["default_user"] = info.default_user;
  if (info.auto_pause) o["auto_pause"] = true;
  if (info.auto_resume) o["auto_resume"] = true;
  if (!info.auto_pause_keep_memory) o["auto_pause_keep_memory"] = false;
  if (info.paused_workspace_snapshot_id) {
    o["paused_workspace_snapshot_id"] = *info.paused_workspace_snapshot_id;
  }
  // The sandbox record has a column of its own; a snapshot's spec carries it for forks.
  if (!info.backend.empty()) o["backend"] = info.backend;
  if (info.paused_at_ms != 0) o["paused_at_ms"] = info.paused_at_ms;
  if (info.forked_from_snapshot_id) o["forked_from_snapshot_id"] = *info.forked_from_snapshot_id;
  if (info.rolled_back_to_snapshot_id) {
    o["rolled_back_to_snapshot_id"] = *info.rolled_back_to_snapshot_id;
    o["rolled_back_at_ms"] = info.rolled_back_at_ms;
  }
  if (info.allow_public_traffic) o["allow_public_traffic"] = true;
  if (!info.mask_request_host.empty()) o["mask_request_host"] = info.mask_request_host;
  if (!info.metadata.empty()) {
    json::object md;
    for (const auto& [k, v] : info.metadata) md[k] = v;
    o["metadata"] = std::move(md);
  }
  return json::serialize(o);
}

void DecodeSpecJson(std::string_view text, SandboxInfo* info) {
  boost::system::error_code ec;
  json::value v = json::parse(text, ec);
  if (ec || !v.is_object()) return;
  const json::object& o = v.get_object();
  auto num = [&](const char* key, auto* out) {
    if (const json::value* x = o.if_contains(key)) {
      using T = std::remove_pointer_t<decltype(out)>;
      if (x->is_int64())
        *out = static_cast<T>(x->get_int64());
      else if (x->is_uint64())
        *out = static_cast<T>(x->get_uint64());
      else if (x->is_double())
        *out = static_cast<T>(x->get_double());
    }
  };
  num("cpus", &info->cpus);
  num("memory_mb", &info->memory_mb);
  num("pids_limit", &info->pids_limit);
  num("workspace_mb", &info->workspace_mb);
  num("tmp_size_mb", &info->tmp_size_mb);
  num("timeout_seconds", &info->timeout_seconds);
  num("paused_at_ms", &info->paused_at_ms);
  num("rolled_back_at_ms", &info->rolled_back_at_ms);
  if (const json::value* x = o.if_contains("forked_from_snapshot_id"); x && x->is_string()) {
    info->forked_from_snapshot_id = std::string(x->get_string());
  }
  if (const json::value* x = o.if_contains("rolled_back_to_snapshot_id"); x && x->is_string()) {
    info->rolled_back_to_snapshot_id = std::string(x->get_string());
  }
  if (const json::value* x = o.if_contains("backend"); x && x->is_string()) {
    info->backend = std::string(x->get_string());
  }
  if (const json::value* x = o.if_contains("auto_resume"); x && x->is_bool()) {
    info->auto_resume = x->get_bool();
  }
  if (const json::value* x = o.if_contains("allow_public_traffic"); x && x->is_bool()) {
    info->allow_public_traffic = x->get_bool();
  }
  if (const json::value* x = o.if_contains("mask_request_host"); x && x->is_string()) {
    info->mask_request_host = std::string(x->get_string());
  }
  if (const json::value* x = o.if_contains("auto_pause_keep_memory"); x && x->is_bool()) {
    info->auto_pause_keep_memory = x->get_bool();
  }
  if (const json::value* x = o.if_contains("paused_workspace_snapshot_id"); x && x->is_string()) {
    info->paused_workspace_snapshot_id = std::string(x->get_string());
  }
  if (const json::value* x = o.if_contains("auto_pause"); x && x->is_bool()) {
    info->auto_pause = x->get_bool();
  }
  if (const json::value* x = o.if_contains("network"); x && x->is_bool()) {
    info->network = x->get_bool();
  }
  if (const json::value* x = o.if_contains("network_policy"); x && x->is_object()) {
    if (auto p = isolation::net::PolicyFromJson(json::serialize(*x))) info->network_policy = *p;
  }
  if (const json::value* x = o.if_contains("read_only_rootfs"); x && x->is_bool()) {
    info->read_only_rootfs = x->get_bool();
  }
  // Records written before templates' WORKDIR/USER applied have neither: the defaults stay
  // /workspace and sandbox, as those sandboxes always had.
  if (const json::value* x = o.if_contains("default_workdir"); x && x->is_string()) {
    info->default_workdir = std::string(x->get_string());
  }
  if (const json::value* x = o.if_contains("default_user"); x && x->is_string()) {
    info->default_user = std::string(x->get_string());
  }
  if (const json::value* x = o.if_contains("env"); x && x->is_object()) {
    for (const auto& [k, val] : x->get_object()) {
      if (val.is_string()) info->env[std::string(k)] = std::string(val.get_string());
    }
  }
  if (const json::value* x = o.if_contains("metadata"); x && x->is_object()) {
    for (const auto& [k, val] : x->get_object()) {
      if (val.is_string()) info->metadata[std::string(k)] = std::string(val.get_string());
    }
  }
}

store::SandboxRecord ToRecord(const SandboxInfo& info) {
  store::SandboxRecord r;
  r.id = info.id;
  r.owner = info.owner;
  r.template_name = info.template_name;
  r.spec_json = EncodeSpecJson(info);
  r.state = std::string(SandboxStateName(info.state));
  r.error_message = info.error_message;
  r.created_at_ms = info.created_at_ms;
  r.updated_at_ms = info.updated_at_ms;
  r.expires_at_ms = info.expires_at_ms;
  r.idle_timeout_seconds = info.idle_timeout_seconds;
  r.last_activity_at_ms = info.last_activity_at_ms;
  r.source_snapshot_id = info.source_snapshot_id;
  r.backend = info.backend;
  return r;
}

SandboxInfo FromRecord(const store::SandboxRecord& r) {
  SandboxInfo info;
  info.id = r.id;
  info.owner = r.owner;
  info.template_name = r.template_name;
  DecodeSpecJson(r.spec_json, &info);
  info.state = ParseSandboxState(r.state).value_or(SandboxState::kError);
  info.error_message = r.error_message;
  info.created_at_ms = r.created_at_ms;
  info.updated_at_ms = r.updated_at_ms;
  info.expires_at_ms = r.expires_at_ms;
  info.idle_timeout_seconds = r.idle_timeout_seconds;
  info.last_activity_at_ms = r.last_activity_at_ms;
  info.source_snapshot_id = r.source_snapshot_id;
  info.backend = r.backend;
  return info;
}

Status ValidateEnv(const std::map<std::string, std::string>& env, std::string_view field) {
  for (const auto& [k, v] : env) {
    if (k.empty()) {
      return Fail(Error::InvalidArgument(std::string(field) + ": keys must not be empty"));
    }
    if (k.find('=') != std::string::npos || k.find('\0') != std::string::npos) {
      std::string shown = k.substr(0, 64);
      for (char& c : shown) {
        if (c == '\0') c = '?';
      }
      return Fail(Error::InvalidArgument(std::string(field) + ": key '" + shown +
                                         "' must not contain '=' or NUL"));
    }
    if (v.find('\0') != std::string::npos) {
      // The value itself is never echoed (it may be a secret).
      return Fail(Error::InvalidArgument(std::string(field) + ": value of '" + k +
                                         "' must not contain NUL"));
    }
  }
  return {};
}

Status ValidateMetadata(const std::map<std::string, std::string>& metadata) {
  if (metadata.size() > kMaxMetadataEntries) {
    return Fail(Error::InvalidArgument("metadata: at most " + std::to_string(kMaxMetadataEntries) +
                                       " entries, got " + std::to_string(metadata.size())));
  }
  for (const auto& [k, v] : metadata) {
    if (k.empty() || k.size() > kMaxMetadataKeyBytes || k.find('\0') != std::string::npos) {
      return Fail(Error::InvalidArgument("metadata: keys must be 1.." +
                                         std::to_string(kMaxMetadataKeyBytes) +
                                         " bytes without NUL"));
    }
    if (v.size() > kMaxMetadataValueBytes || v.find('\0') != std::string::npos) {
      return Fail(Error::InvalidArgument(
          "metadata: the value of '" + k.substr(0, 64) + "' must be at most " +
          std::to_string(kMaxMetadataValueBytes) + " bytes without NUL"));
    }
  }
  return {};
}

Status ValidRequestHostMask(std::string_view mask) {
  constexpr std::string_view kPortVar = "${PORT}";
  if (mask.size() > 253) {
    return Fail(Error::InvalidArgument("mask_request_host: at most 253 bytes"));
  }
  for (size_t i = 0; i < mask.size(); ++i) {
    if (mask.substr(i, kPortVar.size()) == kPortVar) {
      i += kPortVar.size() - 1;
      continue;
    }
    const unsigned char c = static_cast<unsigned char>(mask[i]);
    if (!std::isalnum(c) &&
        std::string_view(".-_:[]").find(static_cast<char>(c)) == std::string_view::npos) {
      return Fail(Error::InvalidArgument(
          "mask_request_host: a host name (letters, digits, '.', '-', '_', ':' and ${PORT}), "
          "not \"" +
          std::string(mask) + "\""));
    }
  }
  return {};
}

std::string RequestHostFor(std::string_view mask, int64_t port) {
  if (mask.empty()) return "127.0.0.1:" + std::to_string(port);
  constexpr std::string_view kPortVar = "${PORT}";
  std::string out;
  for (size_t i = 0; i < mask.size();) {
    if (mask.substr(i, kPortVar.size()) == kPortVar) {
      out += std::to_string(port);
      i += kPortVar.size();
    } else {
      out += mask[i++];
    }
  }
  return out;
}

}  // namespace asb::core
