// The file-watch tool: sandbox_watch_files watches a directory for a while and answers the
// changes it saw (GET /v1/sandboxes/{id}/files/watch underneath), so an agent can wait for a
// build's output, see what a command touched, or notice a file another process writes.
#include <string>
#include <utility>

#include "mcp/tools_util.h"

namespace asb::mcp::tools_internal {

namespace json = boost::json;

namespace {

/// The longest watch one call may hold, seconds.
constexpr double kMaxWatchSeconds = 60;
/// Changes one call returns at most, and by default.
constexpr int64_t kMaxWatchEvents = 10000;
constexpr int64_t kDefaultWatchEvents = 1000;

json::object Watch(Args& args, ToolBackend& b, const CallContext& ctx) {
  auto id = args.Need("sandbox_id");
  auto path = args.Opt("path");
  auto recursive = args.Bool("recursive", false);
  auto wait = args.Number("wait_seconds", kMaxWatchSeconds, true, 10);
  auto max = args.Int("max_events", 1, kMaxWatchEvents, kDefaultWatchEvents);
  if (args.failed()) return args.error();
  WatchRequest req;
  if (path) req.path = *path;
  req.recursive = *recursive;
  req.wait_ms = static_cast<int64_t>(*wait * 1000);
  req.max_events = static_cast<size_t>(*max);
  req.cancelled = ctx.cancelled;
  auto v = b.WatchFiles(*id, req);
  if (!v) return ErrorResult(v.error());
  const json::array& events = v->at("events").as_array();
  std::string text = std::to_string(events.size()) + " change" + (events.size() == 1 ? "" : "s") +
                     " under " + std::string(v->at("path").as_string()) + "\n";
  for (const json::value& e : events) {
    const json::object& o = e.as_object();
    const json::value* p = o.if_contains("path");
    text += std::string(o.at("type").as_string());
    if (p && p->is_string()) text += " " + std::string(p->as_string());
    if (const json::value* d = o.if_contains("dropped"))
      text += " (" + json::serialize(*d) + " lost)";
    text += "\n";
  }
  if (v->at("ended").as_bool()) text += "the directory went away; the watch ended\n";
  return OkResult(std::move(*v), std::move(text));
}

}  // namespace

void AddWatchTools(json::array& defs) {
  json::object p;
  p["sandbox_id"] = Prop("string", "");
  p["path"] = Prop("string", "Directory to watch (default /workspace).");
  p["recursive"] = Prop("boolean", "Also every directory below it (default false).");
  json::object w = Prop("number",
                        "Watch this many seconds (default 10); returns early once max_events "
                        "changes arrived or the directory went away.");
  w["minimum"] = 0;
  w["maximum"] = kMaxWatchSeconds;
  p["wait_seconds"] = std::move(w);
  p["max_events"] = IntProp(
      "Return as soon as this many changes arrived (default 1000; 1 waits for the next "
      "change).",
      1, kMaxWatchEvents);
  json::object e;
  e["type"] = Prop("string",
                   "create, write, remove, rename (moved away), chmod, or overflow "
                   "(changes were lost).");
  e["path"] = Prop("string", "");
  e["dir"] = Prop("boolean", "");
  e["dropped"] = Prop("integer", "overflow: changes lost.");
  json::object o;
  o["path"] = Prop("string", "The watched directory.");
  o["events"] = ArrayOf(ObjectSchema(std::move(e), {"type"}), "The changes, in order.");
  o["ended"] = Prop("boolean", "The directory was removed, which ended the watch.");
  o["reason"] = Prop("string", "");
  defs.emplace_back(Tool("sandbox_watch_files", "Watch files",
                         "Watch a directory for a while and return the files created, written, "
                         "removed, renamed or chmodded in it: wait for a build's output, see "
                         "what a background process writes.",
                         ObjectSchema(std::move(p), {"sandbox_id"}),
                         ObjectSchema(std::move(o), {"path", "events", "ended"})));
}

std::optional<json::object> CallWatchTool(std::string_view name, const json::object& args,
                                          ToolBackend& b, const CallContext& ctx) {
  if (name != "sandbox_watch_files") return std::nullopt;
  Args a(args);
  return Watch(a, b, ctx);
}

}  // namespace asb::mcp::tools_internal
