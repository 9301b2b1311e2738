// ToolBackend over the SandboxManager; see manager_backend.h. Arguments are decoded with the
// REST API's JsonBody rules, so a bad argument gets the same invalid_request message as the
// REST route would give.
#include "mcp/manager_backend.h"

#include <algorithm>
#include <chrono>
#include <limits>

#include "api/command_fields.h"
#include "api/errors.h"
#include "api/exec_result_json.h"
#include "api/file_watch_body.h"
#include "api/json_body.h"
#include "api/resource_json.h"
#include "api/text.h"
#include "common/ids.h"
#include "core/paths.h"
#include "mcp/manager_support.h"

namespace asb::mcp {

namespace json = boost::json;

tl::unexpected<ToolError> FromError(const Error& e) {
  // What a client may see of an error is api::ForClient's one rule, as for REST answers.
  api::ClientError c = api::ForClient(e);
  return ToolFail(std::string(api::WireCodeOf(c.code)), c.message);
}

ToolResult<void> CheckId(std::string_view id, std::string_view prefix, std::string_view what) {
  if (!IsValidId(id, prefix)) return ToolFail("not_found", std::string(what) + " not found");
  return {};
}

namespace {

constexpr int64_t kMinInt = std::numeric_limits<int64_t>::min() / 2;
constexpr int64_t kMaxInt = std::numeric_limits<int64_t>::max() / 2;
// How often a running exec looks at its cancel flag.
constexpr int64_t kCancelPollMs = 200;

Result<api::JsonBody> Body(const json::object& o) {
  return api::JsonBody::Parse(json::serialize(o));
}

}  // namespace

std::unique_lock<std::mutex> ManagerBackend::QuotaGuard() {
  if (caller_.max_sandboxes <= 0 || caller_.quota_lock == nullptr) return {};
  return std::unique_lock<std::mutex>(*caller_.quota_lock);
}

ToolResult<void> ManagerBackend::CheckQuota() {
  if (caller_.max_sandboxes <= 0) return {};
  auto live = m_.lifecycle().List(caller_.create_owner);
  if (!live) return FromError(live.error());
  if (static_cast<int64_t>(live->size()) >= caller_.max_sandboxes) {
    return ToolFail("limit_exceeded", "this API key may have at most " +
                                          std::to_string(caller_.max_sandboxes) +
                                          " sandboxes at once");
  }
  return {};
}

ToolResult<json::object> ManagerBackend::CreateSandbox(const json::object& body) {
  // The REST API's own parser: one definition of the create body (api/resource_json.h).
  auto req = api::ParseCreateRequest(json::serialize(body));
  if (!req) return FromError(req.error());
  std::unique_lock<std::mutex> quota = QuotaGuard();
  if (auto q = CheckQuota(); !q) return tl::unexpected<ToolError>(q.error());
  auto s = m_.lifecycle().Create(caller_.create_owner, *req);
  if (!s) return FromError(s.error());
  return api::SandboxJson(*s);
}

ToolResult<json::object> ManagerBackend::ListSandboxes() {
  return ListJson(m_.lifecycle().List(caller_.owner), "sandboxes",
                  [](const core::SandboxInfo& s) { return api::SandboxJson(s); });
}

ToolResult<json::object> ManagerBackend::ListTemplates() {
  json::array list;
  for (const core::TemplateInfo& t : m_.templates().List()) {
    list.emplace_back(api::TemplateJson(t, m_.config().limits));
  }
  json::object o;
  o["templates"] = std::move(list);
  return o;
}

ToolResult<json::object> ManagerBackend::Exec(const std::string& id, const json::object& body,
                                              const ExecHooks& hooks) {
  if (auto c = CheckId(id, "sb_", "sandbox " + id); !c) return tl::unexpected<ToolError>(c.error());
  auto parsed = api::ParseExecRequest(json::serialize(body));  // as REST parses it
  if (!parsed) return FromError(parsed.error());
  auto exec = m_.exec().StartExec(caller_.owner, id, parsed->options);
  if (!exec) return FromError(exec.error());
  api::Utf8Stream out_utf8, err_utf8;
  auto emit = [&](core::OutputStream stream, std::string_view bytes, bool eof) {
    bool is_err = stream == core::OutputStream::kStderr;
    api::Utf8Stream& u = is_err ? err_utf8 : out_utf8;
    std::string text = u.Feed(bytes);
    if (eof) text += u.Flush();
    if (!text.empty() && hooks.output) hooks.output(is_err ? "stderr" : "stdout", text);
  };
  for (;;) {
    if (hooks.cancelled && hooks.cancelled->load()) {
      (void)exec->events->Cancel();  // sandboxd kills the command's process group
      return ToolFail("cancelled", "the request was cancelled; command killed");
    }
    auto ev = exec->events->Next(kCancelPollMs);
    if (!ev) {
      if (ev.error().code() == ErrorCode::kTimeout) continue;
      return FromError(ev.error());
    }
    using Kind = core::StreamEvent::Kind;
    switch (ev->kind) {
      case Kind::kOutput:
        emit(ev->stream, ev->data, false);
        break;
      case Kind::kEnd:
        emit(ev->stream, {}, true);
        break;
      case Kind::kInfo:
        break;
      case Kind::kDone: {
        emit(core::OutputStream::kStdout, {}, true);
        emit(core::OutputStream::kStderr, {}, true);
        const std::optional<core::ExecResult>& r = ev->exec_result;
        if (!r) return FromError(Error::Backend("exec ended without a result"));
        json::object o;
        api::PutExecResult(*r, &o);
        return o;
      }
      case Kind::kError:
        return FromError(ev->error ? *ev->error : Error::Backend("exec failed"));
    }
  }
}

ToolResult<std::string> ManagerBackend::ReadFile(const std::string& id, const std::string& path) {
  if (auto c = CheckId(id, "sb_", "sandbox " + id); !c) return tl::unexpected<ToolError>(c.error());
  auto r = m_.files().ReadFile(caller_.owner, id, path);
  if (!r) return FromError(r.error());
  return std::move(*r);
}

ToolResult<json::object> ManagerBackend::WriteFile(const std::string& id, const std::string& path,
                                                   std::string_view data,
                                                   const std::optional<std::string>& mode_text) {
  if (auto c = CheckId(id, "sb_", "sandbox " + id); !c) return tl::unexpected<ToolError>(c.error());
  std::optional<uint32_t> mode;
  if (mode_text) {
    auto m = core::ParseFileMode(*mode_text);
    if (!m) return FromError(m.error());
    mode = *m;
  }
  auto st = m_.files().WriteFile(caller_.owner, id, path, data, mode);
  if (!st) return FromError(st.error());
  json::object o;  // the answer of PUT /v1/sandboxes/{id}/files
  o["path"] = st->path;
  o["size"] = st->size;
  o["mode"] = api::FormatMode(st->mode);
  return o;
}

ToolResult<json::object> ManagerBackend::ListFiles(const std::string& id, const std::string& path,
                                                   bool recursive) {
  if (auto c = CheckId(id, "sb_", "sandbox " + id); !c) return tl::unexpected<ToolError>(c.error());
  auto all = m_.files().ListFiles(caller_.owner, id, path, recursive);
  if (!all) return FromError(all.error());
  json::array entries;
  for (const auto& s : *all) entries.emplace_back(api::StatJson(s));
  json::object o;  // the answer of GET /v1/sandboxes/{id}/files/list
  auto norm = core::NormalizeFilePath(path);
  o["path"] = norm ? norm->path : path;
  o["entries"] = std::move(entries);
  return o;
}

ToolResult<json::object> ManagerBackend::WatchFiles(const std::string& id,
                                                    const WatchRequest& req) {
  if (auto c = CheckId(id, "sb_", "sandbox " + id); !c) return tl::unexpected<ToolError>(c.error());
  auto watch = m_.files().WatchDirectory(caller_.owner, id, req.path, req.recursive);
  if (!watch) return FromError(watch.error());
  auto now = [] {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
  };
  // Waits in slices, so that a cancelled request is noticed within kCancelSliceMs.
  constexpr int64_t kCancelSliceMs = 200;
  const int64_t deadline = now() + req.wait_ms;
  json::array events;
  json::object o;
  for (int64_t t = now(); events.size() < req.max_events; t = now()) {
    if (req.cancelled && req.cancelled->load()) {
      return tl::unexpected<ToolError>(ToolError{"cancelled", "the request was cancelled"});
    }
    int64_t wait = std::min(deadline - t, kCancelSliceMs);
    core::FileWatch::Batch b =
        (*watch)->Take(req.max_events - events.size(), std::max<int64_t>(wait, 0));
    for (const core::FileEvent& e : b.events) events.emplace_back(api::FileEventJson(e));
    if (b.ended) {
      if (b.error) return FromError(*b.error);
      o["ended"] = true;
      o["reason"] = b.end_reason;
      break;
    }
    if (wait <= 0) break;
  }
  if (!o.contains("ended")) o["ended"] = false;
  o["path"] = (*watch)->path();
  o["events"] = std::move(events);
  return o;
}

ToolResult<json::object> ManagerBackend::Snapshot(const std::string& id,
                                                  const std::optional<std::string>& name) {
  if (auto c = CheckId(id, "sb_", "sandbox " + id); !c) return tl::unexpected<ToolError>(c.error());
  auto s = m_.snapshots().CreateSnapshot(caller_.owner, id, name.value_or(""));
  if (!s) return FromError(s.error());
  return api::SnapshotJson(*s);
}

ToolResult<json::object> ManagerBackend::Rollback(const std::string& id,
                                                  const std::string& snapshot_id) {
  if (auto c = CheckId(id, "sb_", "sandbox " + id); !c) return tl::unexpected<ToolError>(c.error());
  auto s = m_.snapshots().Rollback(caller_.owner, id, snapshot_id);
  if (!s) return FromError(s.error());
  return api::SandboxJson(*s);
}

ToolResult<json::object> ManagerBackend::Fork(const std::string& snapshot_id,
                                              const json::object& body) {
  if (auto c = CheckId(snapshot_id, "snap_", "snapshot"); !c) {
    return tl::unexpected<ToolError>(c.error());
  }
  core::ForkRequest fr;
  {
    auto b = Body(body);
    if (!b) return FromError(b.error());
    auto t = b->Integer("timeout_seconds", kMinInt, kMaxInt);
    if (!t) return FromError(t.error());
    fr.timeout_seconds = *t;
    if (auto f = b->Finish(); !f) return FromError(f.error());
  }
  std::unique_lock<std::mutex> quota = QuotaGuard();
  if (auto q = CheckQuota(); !q) return tl::unexpected<ToolError>(q.error());
  auto s = m_.snapshots().Fork(caller_.owner, snapshot_id, fr);
  if (!s) return FromError(s.error());
  return api::SandboxJson(*s);
}

ToolResult<json::object> ManagerBackend::ForkSandbox(const std::string& id,
                                                     const json::object& body) {
  if (auto c = CheckId(id, "sb_", "sandbox " + id); !c) return tl::unexpected<ToolError>(c.error());
  core::SandboxForkRequest fr;
  {
    auto b = Body(body);
    if (!b) return FromError(b.error());
    auto count = b->Integer("count", kMinInt, kMaxInt);
    if (!count) return FromError(count.error());
    if (*count) fr.count = **count;
    auto t = b->Integer("timeout_seconds", kMinInt, kMaxInt);
    if (!t) return FromError(t.error());
    fr.timeout_seconds = *t;
    if (auto f = b->Finish(); !f) return FromError(f.error());
  }
  // The key's own quota bounds the children, as it bounds creates (held across the fork).
  std::unique_lock<std::mutex> quota = QuotaGuard();
  if (caller_.max_sandboxes > 0) {
    if (auto q = CheckQuota(); !q) return tl::unexpected<ToolError>(q.error());
    auto live = m_.lifecycle().List(caller_.create_owner);
    if (!live) return FromError(live.error());
    fr.quota_left = caller_.max_sandboxes - static_cast<int64_t>(live->size());
  }
  auto children = m_.snapshots().ForkSandbox(caller_.owner, id, fr);
  if (!children) return FromError(children.error());
  const bool any = std::any_of(children->begin(), children->end(),
                               [](const core::ForkedChild& c) { return c.sandbox.has_value(); });
  if (!any && !children->empty() && children->front().error) {
    return FromError(*children->front().error);
  }
  return api::ForkJson(*children, "");
}

ToolResult<json::object> ManagerBackend::Pause(const std::string& id, bool keep_memory) {
  if (auto c = CheckId(id, "sb_", "sandbox " + id); !c) return tl::unexpected<ToolError>(c.error());
  auto s = m_.lifecycle().Pause(caller_.owner, id, keep_memory);
  if (!s) return FromError(s.error());
  return api::SandboxJson(*s);
}

ToolResult<json::object> ManagerBackend::Resume(const std::string& id,
                                                std::optional<int64_t> timeout_seconds) {
  if (auto c = CheckId(id, "sb_", "sandbox " + id); !c) return tl::unexpected<ToolError>(c.error());
  auto s = m_.lifecycle().Resume(caller_.owner, id, timeout_seconds);
  if (!s) return FromError(s.error());
  return api::SandboxJson(*s);
}

ToolResult<void> ManagerBackend::Destroy(const std::string& id) {
  if (auto c = CheckId(id, "sb_", "sandbox " + id); !c) return tl::unexpected<ToolError>(c.error());
  if (auto st = m_.lifecycle().Destroy(caller_.owner, id); !st) return FromError(st.error());
  return {};
}

}  // namespace asb::mcp
