// Snapshot and network verbs over the existing routes (ADR 0008):
//   snapshot [--name N] ID          POST /v1/sandboxes/{id}/snapshots; prints the snapshot id
//   snapshots                       GET /v1/snapshots; one line per snapshot
//   rollback ID SNAPSHOT            POST /v1/sandboxes/{id}/rollback
//   fork [--cpus X] [--memory-mb N] [--network] [--timeout S] SNAPSHOT
//                                   POST /v1/snapshots/{id}/fork; prints the new sandbox's id
//   fork [--count N] [--timeout S] SANDBOX
//                                   POST /v1/sandboxes/{id}/fork; prints each child's id
//   net ID                          GET /v1/sandboxes/{id}/network (the egress policy, JSON)
//   net ID --allow R... --deny R... [--bandwidth-kbit N] [--burst-kbit N]
//                                   PUT: replaces the whole policy
// Pause and resume (a whole running sandbox, not its workspace) are client_verbs.cc's. --json
// prints the server's answer.
#include <boost/json.hpp>
#include <cstdio>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "api/url.h"
#include "cli/client_support.h"
#include "cli/command.h"
#include "cli/server_commands.h"

namespace asb::cli {
namespace {

namespace json = boost::json;

// Prints the answer as JSON with --json, else its `field`.
int PrintAnswer(const Result<json::value>& v, std::string_view field) {
  if (!v) return ReportError(v.error());
  if (Globals().json || field.empty()) {
    Pretty(std::cout, *v);
    std::cout << "\n";
  } else {
    std::cout << Str(v->as_object(), field) << "\n";
  }
  return 0;
}

int Snapshot(const std::string& id, const std::string& name) {
  json::object body;
  if (!name.empty()) body["name"] = name;
  return PrintAnswer(CallJson("POST", SandboxPath(id) + "/snapshots", json::serialize(body)), "id");
}

int ListSnapshots() {
  auto v = CallJson("GET", "/v1/snapshots");
  if (!v) return ReportError(v.error());
  if (Globals().json) return PrintAnswer(v, "");
  std::printf("%-20s %-20s %-16s %-10s %-12s %s\n", "ID", "SANDBOX", "NAME", "TEMPLATE", "SIZE",
              "CREATED");
  for (const auto& s : v->as_object().at("snapshots").as_array()) {
    const auto& o = s.as_object();
    auto text = [&](std::string_view k) {
      std::string t = Str(o, k);
      return t == "null" ? std::string("-") : t;
    };
    std::printf("%-20s %-20s %-16s %-10s %-12s %s\n", text("id").c_str(),
                text("sandbox_id").c_str(), text("name").c_str(), text("template").c_str(),
                text("size_bytes").c_str(), text("created_at").c_str());
  }
  return 0;
}

int Rollback(const std::string& id, const std::string& snapshot) {
  json::object body;
  body["snapshot_id"] = snapshot;
  return PrintAnswer(CallJson("POST", SandboxPath(id) + "/rollback", json::serialize(body)), "id");
}

struct ForkFlags {
  std::string snapshot;  // a snapshot id, or a sandbox id to fork as it runs
  std::optional<double> cpus;
  std::optional<int64_t> memory_mb, timeout, count;
  bool network = false;
};

// A running sandbox's fork: one line per child, its id; a child that could not be made is a
// line on stderr with its error, and the exit status 1.
int ForkRunning(const ForkFlags& f) {
  if (f.cpus || f.memory_mb || f.network) {
    return ReportError(Error::InvalidArgument(
        "--cpus, --memory-mb and --network apply to a snapshot's fork; a sandbox's children "
        "keep its limits"));
  }
  json::object body;
  body["count"] = f.count.value_or(1);
  if (f.timeout) body["timeout_seconds"] = *f.timeout;
  auto v = CallJson("POST", SandboxPath(f.snapshot) + "/fork", json::serialize(body));
  if (!v) return ReportError(v.error());
  if (Globals().json) {
    Pretty(std::cout, *v);
    std::cout << "\n";
  }
  int rc = 0;
  const json::value* forks = v->as_object().if_contains("forks");
  if (forks == nullptr || !forks->is_array()) return 0;
  for (const json::value& c : forks->as_array()) {
    const json::object& o = c.as_object();
    if (const json::value* sb = o.if_contains("sandbox"); sb && sb->is_object()) {
      if (!Globals().json) std::cout << Str(sb->as_object(), "id") << "\n";
    } else if (const json::value* e = o.if_contains("error"); e && e->is_object()) {
      std::cerr << "agent-sandbox: a child was not made: " << Str(e->as_object(), "code") << ": "
                << Str(e->as_object(), "message") << "\n";
      rc = 1;
    }
  }
  return rc;
}

int Fork(const ForkFlags& f) {
  if (f.snapshot.rfind("sb_", 0) == 0) return ForkRunning(f);
  if (f.count) {
    return ReportError(Error::InvalidArgument(
        "--count forks a running sandbox (an sb_ id); a snapshot's fork makes one"));
  }
  json::object body;
  if (f.cpus) body["cpus"] = *f.cpus;
  if (f.memory_mb) body["memory_mb"] = *f.memory_mb;
  if (f.timeout) body["timeout_seconds"] = *f.timeout;
  if (f.network) body["network"] = true;
  return PrintAnswer(CallJson("POST", "/v1/snapshots/" + api::PercentEncode(f.snapshot) + "/fork",
                              json::serialize(body)),
                     "id");
}

struct NetFlags {
  std::string id;
  std::vector<std::string> allow, deny;
  std::optional<int64_t> bandwidth_kbit, burst_kbit;
  bool clear = false;
};

int Net(const NetFlags& f) {
  const std::string path = SandboxPath(f.id) + "/network";
  const bool change =
      f.clear || !f.allow.empty() || !f.deny.empty() || f.bandwidth_kbit || f.burst_kbit;
  if (!change) return PrintAnswer(CallJson("GET", path), "");
  json::object body;
  json::array allow(f.allow.begin(), f.allow.end());
  json::array deny(f.deny.begin(), f.deny.end());
  body["allow_out"] = std::move(allow);
  body["deny_out"] = std::move(deny);
  if (f.bandwidth_kbit) body["bandwidth_kbit"] = *f.bandwidth_kbit;
  if (f.burst_kbit) body["burst_kbit"] = *f.burst_kbit;
  return PrintAnswer(CallJson("PUT", path, json::serialize(body)), "");
}

}  // namespace

void RegisterSnapshotCommands(CLI::App& app) {
  {
    auto id = std::make_shared<std::string>();
    auto name = std::make_shared<std::string>();
    CLI::App* sub =
        app.add_subcommand("snapshot", "Snapshot a sandbox's workspace and print the snapshot id");
    sub->add_option("--name", *name, "A name for the snapshot");
    sub->add_option("id", *id, "Sandbox id")->required();
    SetAction(sub, [id, name] { return Snapshot(*id, *name); });
  }
  {
    CLI::App* sub = app.add_subcommand("snapshots", "List snapshots");
    SetAction(sub, [] { return ListSnapshots(); });
  }
  {
    auto id = std::make_shared<std::string>();
    auto snapshot = std::make_shared<std::string>();
    CLI::App* sub = app.add_subcommand(
        "rollback", "Roll a sandbox's workspace back to a snapshot (its processes restart)");
    sub->add_option("id", *id, "Sandbox id")->required();
    sub->add_option("snapshot", *snapshot, "Snapshot id")->required();
    SetAction(sub, [id, snapshot] { return Rollback(*id, *snapshot); });
  }
  {
    auto f = std::make_shared<ForkFlags>();
    CLI::App* sub =
        app.add_subcommand("fork",
                           "Start a new sandbox from a snapshot, or --count children of a running "
                           "sandbox (its workspace now; it runs on), and print their ids");
    sub->add_option("--cpus", f->cpus, "CPU cores (default: the snapshot's sandbox's)");
    sub->add_option("--memory-mb", f->memory_mb, "Memory limit, MiB");
    sub->add_option("--timeout", f->timeout, "TTL in seconds");
    sub->add_option("--count", f->count, "Children of a running sandbox (default 1)");
    sub->add_flag("--network", f->network, "Outbound network (ADR 0013)");
    sub->add_option("source", f->snapshot, "Snapshot id, or sandbox id to fork as it runs")
        ->required();
    SetAction(sub, [f] { return Fork(*f); });
  }
  {
    auto f = std::make_shared<NetFlags>();
    CLI::App* sub = app.add_subcommand(
        "net",
        "Show a sandbox's egress policy, or replace it with --allow/--deny/--bandwidth-kbit");
    sub->add_option("--allow", f->allow, "Allowed destination: domain or address rule (repeat)");
    sub->add_option("--deny", f->deny, "Denied destination (repeatable; wins over --allow)");
    sub->add_option("--bandwidth-kbit", f->bandwidth_kbit, "Limit each way, kbit/s; 0 = none");
    sub->add_option("--burst-kbit", f->burst_kbit, "Token bucket size, kbit");
    sub->add_flag("--clear", f->clear, "Replace the policy with an empty one (allow all)");
    sub->add_option("id", f->id, "Sandbox id")->required();
    SetAction(sub, [f] { return Net(*f); });
  }
}

}  // namespace asb::cli
