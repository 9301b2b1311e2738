// `agent-sandbox keys`: API key management on the data directory's database directly
// (api/AUTH.md), for the first admin key before any server runs, and for recovery. SQLite's WAL
// journal and busy timeout make this safe while a server is running on the same directory;
// the server sees a new, revoked or rotated key on its next request (it reads keys from the
// database on every request).
//
//   keys create NAME [--scopes exec,metrics] [--rate-limit N] [--max-sandboxes N]
//                    [--expires 30d|2027-01-31T00:00:00Z]   prints the key once
//   keys list | revoke ID | enable ID | rotate ID | delete ID
// --data-dir (env AGENT_SANDBOX_DATA_DIR, default /var/lib/agent-sandbox); --json for
// machine-readable output. Exit 0, or 125 with "agent-sandbox: <message>".
#include "store/keys.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>

#include "api/auth.h"
#include "api/text.h"
#include "cli/command.h"
#include "cli/server_commands.h"
#include "common/clock.h"
#include "core/config.h"
#include "store/store.h"

namespace asb::cli {
namespace {

struct KeysFlags {
  std::string data_dir;
  bool json = false;
  std::string name;
  std::string id;
  std::string scopes = "exec";
  int64_t rate_limit = 0;
  int64_t max_sandboxes = 0;
  std::string expires;
  bool e2b = false;
};

Result<std::unique_ptr<store::Store>> OpenStore(const KeysFlags& f, bool create) {
  core::ManagerConfig mc;
  if (!f.data_dir.empty()) {
    mc.data_dir = f.data_dir;
  } else if (const char* env = std::getenv("AGENT_SANDBOX_DATA_DIR"); env && *env) {
    mc.data_dir = env;
  }
  if (mc.data_dir.empty() || mc.data_dir[0] != '/') {
    return Fail(Error::InvalidArgument("--data-dir: must be an absolute path"));
  }
  std::string db = mc.DatabasePath();
  if (!create && !std::filesystem::exists(db)) {
    return Fail(Error::NotFound("no database at " + db + " (wrong --data-dir?)"));
  }
  auto s = store::Store::Open(db, SystemClock::Instance().NowUnixMs());
  if (!s) return Fail(s.error().WithContext("open " + db));
  return std::move(*s);
}

void PrintKey(const store::KeyRecord& k, int64_t now, bool json, const std::string& raw = {}) {
  if (json) {
    std::printf("%s\n", api::KeyJson(k, now, raw).c_str());
    return;
  }
  std::printf("%-21s %-20s %-13s %-20s rate=%lld/min max_sandboxes=%lld expires=%s %s\n",
              k.id.c_str(), k.name.c_str(), k.key_prefix.c_str(),
              store::JoinScopes(k.scopes).c_str(), static_cast<long long>(k.rate_limit_per_minute),
              static_cast<long long>(k.max_sandboxes),
              k.expires_at_ms ? api::FormatRfc3339(k.expires_at_ms).c_str() : "never",
              k.Status(now).c_str());
}

void PrintCreated(const store::CreatedKey& c, int64_t now, bool json) {
  if (json) {
    PrintKey(c.record, now, true, c.raw_key);
    return;
  }
  PrintKey(c.record, now, false);
  std::printf("key: %s\n", c.raw_key.c_str());
  std::fprintf(stderr, "Store this key now: it is shown only once (only its hash is kept).\n");
}

int Create(const KeysFlags& f) {
  int64_t now = SystemClock::Instance().NowUnixMs();
  store::NewKey nk;
  nk.name = f.name;
  auto scopes = store::ParseScopes(f.scopes);
  if (!scopes) return ReportError(scopes.error().WithContext("--scopes"));
  nk.scopes = *scopes;
  nk.rate_limit_per_minute = f.rate_limit;
  nk.max_sandboxes = f.max_sandboxes;
  auto exp = api::ParseExpiry(f.expires, now);
  if (!exp) return ReportError(exp.error());
  nk.expires_at_ms = *exp;
  nk.e2b_shape = f.e2b;
  auto st = OpenStore(f, /*create=*/true);
  if (!st) return ReportError(st.error());
  store::KeyStore keys(**st);
  auto c = keys.Create(nk, now);
  if (!c) return ReportError(c.error());
  PrintCreated(*c, now, f.json);
  return 0;
}

int List(const KeysFlags& f) {
  auto st = OpenStore(f, false);
  if (!st) return ReportError(st.error());
  store::KeyStore keys(**st);
  auto all = keys.List();
  if (!all) return ReportError(all.error());
  int64_t now = SystemClock::Instance().NowUnixMs();
  for (const auto& k : *all) PrintKey(k, now, f.json);
  return 0;
}

int OnKey(const KeysFlags& f, const std::string& verb) {
  auto st = OpenStore(f, false);
  if (!st) return ReportError(st.error());
  store::KeyStore keys(**st);
  int64_t now = SystemClock::Instance().NowUnixMs();
  if (verb == "rotate") {
    auto c = keys.Rotate(f.id, now);
    if (!c) return ReportError(c.error());
    PrintCreated(*c, now, f.json);
    return 0;
  }
  Status s = verb == "delete" ? keys.Delete(f.id) : keys.SetEnabled(f.id, verb == "enable", now);
  if (!s) return ReportError(s.error());
  if (verb == "delete") {
    std::printf("deleted %s\n", f.id.c_str());
    return 0;
  }
  auto k = keys.Get(f.id);
  if (!k) return ReportError(k.error());
  PrintKey(*k, now, f.json);
  return 0;
}

}  // namespace

void RegisterKeysCommand(CLI::App& app) {
  auto f = std::make_shared<KeysFlags>();
  CLI::App* keys = app.add_subcommand(
      "keys",
      "Manage API keys in the data directory's database (works with or without a "
      "running server)");
  keys->require_subcommand(1);
  keys->fallthrough();  // --data-dir and --json also after the verb
  keys->add_option("--data-dir", f->data_dir,
                   "data directory (env AGENT_SANDBOX_DATA_DIR, default /var/lib/agent-sandbox)");
  keys->add_flag("--json", f->json, "print JSON objects, one per line");

  CLI::App* create = keys->add_subcommand("create", "Create a key and print it (shown once)");
  create->add_option("NAME", f->name, "a name for the key")->required();
  create->add_option("--scopes", f->scopes, "comma-separated: exec, admin, metrics (default exec)");
  create->add_option("--rate-limit", f->rate_limit, "requests per minute, 0 = unlimited")
      ->check(CLI::NonNegativeNumber);
  create->add_option("--max-sandboxes", f->max_sandboxes, "sandboxes at once, 0 = unlimited")
      ->check(CLI::NonNegativeNumber);
  create->add_option("--expires", f->expires,
                     "'never' (default), a duration (30d, 12h, 45m) or an RFC 3339 UTC time");
  create->add_flag("--e2b", f->e2b,
                   "issue the key in E2B's shape, e2b_ + 40 hex digits, for the e2b SDKs "
                   "(docs/e2b.md)");
  SetAction(create, [f] { return Create(*f); });

  CLI::App* list = keys->add_subcommand("list", "List keys (never the keys themselves)");
  SetAction(list, [f] { return List(*f); });

  for (const char* verb : {"revoke", "enable", "rotate", "delete"}) {
    const char* help = std::string(verb) == "revoke"   ? "Disable a key (answers 401 from now on)"
                       : std::string(verb) == "enable" ? "Enable a revoked key again"
                       : std::string(verb) == "rotate"
                           ? "Replace a key by a new one of the same lineage (printed once)"
                           : "Delete a key's record";
    CLI::App* sub = keys->add_subcommand(verb, help);
    sub->add_option("ID", f->id, "key id (key_...)")->required();
    std::string v = verb;
    SetAction(sub, [f, v] { return OnKey(*f, v); });
  }
}

}  // namespace asb::cli
