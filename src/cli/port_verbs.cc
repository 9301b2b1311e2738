// Preview URLs of exposed ports (docs/adr/0015-preview-urls.md):
//   port preview [--ttl S] ID PORT   POST /v1/sandboxes/{id}/previews; prints the URL (it holds
//                                    the token, shown this once)
//   port previews ID [PORT]          GET /v1/sandboxes/{id}/previews; one line per live token
//   port revoke ID PREVIEW_ID        DELETE /v1/sandboxes/{id}/previews/{preview_id}
// --json prints the server's answer.
#include <boost/json.hpp>
#include <cstdio>
#include <iostream>
#include <memory>
#include <optional>
#include <string>

#include "api/url.h"
#include "cli/client_support.h"
#include "cli/command.h"
#include "cli/server_commands.h"

namespace asb::cli {
namespace {

namespace json = boost::json;

int Preview(const std::string& id, int64_t port, std::optional<int64_t> ttl) {
  json::object body;
  body["port"] = port;
  if (ttl) body["ttl_seconds"] = *ttl;
  auto v = CallJson("POST", SandboxPath(id) + "/previews", json::serialize(body));
  if (!v) return ReportError(v.error());
  if (Globals().json) {
    Pretty(std::cout, *v);
  } else {
    std::cout << Str(v->as_object(), "url");
  }
  std::cout << "\n";
  return 0;
}

int ListPreviews(const std::string& id, std::optional<int64_t> port) {
  std::string target = SandboxPath(id) + "/previews";
  if (port) target += "?port=" + std::to_string(*port);
  auto v = CallJson("GET", target);
  if (!v) return ReportError(v.error());
  if (Globals().json) {
    Pretty(std::cout, *v);
    std::cout << "\n";
    return 0;
  }
  std::printf("%-20s %-6s %-26s %s\n", "ID", "PORT", "EXPIRES", "HOST");
  for (const auto& p : v->as_object().at("previews").as_array()) {
    const auto& o = p.as_object();
    std::printf("%-20s %-6s %-26s %s\n", Str(o, "id").c_str(), Str(o, "port").c_str(),
                Str(o, "expires_at").c_str(), Str(o, "host").c_str());
  }
  return 0;
}

int Revoke(const std::string& id, const std::string& preview_id) {
  auto r = Call("DELETE", SandboxPath(id) + "/previews/" + api::PercentEncode(preview_id));
  if (!r) return ReportError(r.error());
  return 0;
}

}  // namespace

void RegisterPortCommands(CLI::App& app) {
  CLI::App* port = app.add_subcommand("port", "Preview URLs of a sandbox's ports (for browsers)");
  port->require_subcommand(1);
  {
    auto id = std::make_shared<std::string>();
    auto number = std::make_shared<int64_t>(0);
    auto ttl = std::make_shared<std::optional<int64_t>>();
    CLI::App* sub = port->add_subcommand(
        "preview", "Print a URL that opens the port in a browser, without an API key");
    sub->add_option("--ttl", *ttl, "Seconds the URL works (default 3600)");
    sub->add_option("id", *id, "Sandbox id")->required();
    sub->add_option("port", *number, "Port inside the sandbox, 1..65535")->required();
    SetAction(sub, [id, number, ttl] { return Preview(*id, *number, *ttl); });
  }
  {
    auto id = std::make_shared<std::string>();
    auto number = std::make_shared<std::optional<int64_t>>();
    CLI::App* sub =
        port->add_subcommand("previews", "List a sandbox's live preview URLs (never the tokens)");
    sub->add_option("id", *id, "Sandbox id")->required();
    sub->add_option("port", *number, "Only this port");
    SetAction(sub, [id, number] { return ListPreviews(*id, *number); });
  }
  {
    auto id = std::make_shared<std::string>();
    auto preview_id = std::make_shared<std::string>();
    CLI::App* sub =
        port->add_subcommand("revoke", "Revoke a preview URL: it stops working at once");
    sub->add_option("id", *id, "Sandbox id")->required();
    sub->add_option("preview_id", *preview_id, "Preview id (pv_...)")->required();
    SetAction(sub, [id, preview_id] { return Revoke(*id, *preview_id); });
  }
}

}  // namespace asb::cli
