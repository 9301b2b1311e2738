// `agent-sandbox template build|ls|rm` (ADR 0012): local commands on the data directory, run as
// root on the host that serves the sandboxes.
//
//   template build [--force] [--from DIR] NAME|PATH...   build (or confirm up to date), in order
//   template build --dockerfile PATH [--name N]          from a Dockerfile (template_image.h)
//   template import ARCHIVE --name N                     an OCI / docker save archive
//   template ls [--json]                                 installed and bundled templates
//   template rm NAME                                     remove; refused while a sandbox uses it
//
// Exit codes: 0 success; 1 the operation was refused or failed (build error, smoke test failed,
// template in use); 125 bad usage.
#include "cli/template_cmd.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <boost/json.hpp>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>

#include "cli/command.h"
#include "cli/run_support.h"
#include "cli/template_build.h"
#include "cli/template_image.h"
#include "common/clock.h"
#include "core/template_install.h"
#include "core/template_spec.h"
#include "core/templates.h"
#include "store/store.h"

namespace asb::cli {

namespace fs = std::filesystem;

std::string DefaultTemplatesSrcDir() {
  if (const char* env = std::getenv("AGENT_SANDBOX_TEMPLATES_SRC"); env && *env) return env;
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    // build/bin/agent-sandbox in a source tree; <prefix>/bin/agent-sandbox when installed.
    for (const fs::path& p : {exe.parent_path() / "../../templates",
                              exe.parent_path() / "../share/agent-sandbox/templates"}) {
      if (fs::is_directory(p, ec)) return fs::weakly_canonical(p, ec).string();
    }
  }
  return "templates";
}

namespace {

int Fails(const Error& e) {
  std::fprintf(stderr, "agent-sandbox: %s\n", e.detail().c_str());
  return 1;
}

struct BuildArgs {
  std::vector<std::string> targets;
  std::string from = DefaultTemplatesSrcDir();
  std::string data_dir = DefaultDataDir();
  bool force = false;
  std::string mirror = "http://deb.debian.org/debian";
  std::string security_mirror = "http://deb.debian.org/debian-security";
};

int Build(const BuildArgs& a) {
  TemplateBuildOptions o;
  o.data_dir = a.data_dir;
  o.force = a.force;
  o.mirror = a.mirror;
  o.security_mirror = a.security_mirror;
  auto sandboxd = FindSandboxd();
  if (!sandboxd) return ReportError(sandboxd.error());
  o.sandboxd = *sandboxd;
  for (const auto& t : a.targets) {
    auto spec = core::LoadTemplateSpec(t, a.from);
    if (!spec) return ReportError(spec.error());
    const std::string name = spec->name;
    auto r = BuildTemplate(*spec, o, [&name](const std::string& line) {
      std::printf("[template %s] %s\n", name.c_str(), line.c_str());
      std::fflush(stdout);
    });
    if (!r) return Fails(r.error());
  }
  return 0;
}

struct Row {
  std::string name, display, version, status, size, created;
};

int List(const std::string& data_dir, const std::string& from, bool as_json) {
  core::DirTemplateCatalog catalog(data_dir + "/templates");
  core::TemplateLayout layout(data_dir + "/templates");
  std::vector<Row> rows;
  boost::json::array out;
  std::vector<std::string> seen;
  for (const auto& t : catalog.List()) {
    const auto& m = t.manifest;
    std::string status = "built";
    if (auto spec = core::LoadTemplateSpec(t.name, from); spec) {
      if (core::InstalledStamp(layout, t.name) !=
          core::TemplateRecipeHash(*spec, kTemplateBuilderId)) {
        status = "stale";
      }
    }
    rows.push_back({t.name, t.display_name, m.version, status,
                    std::to_string(m.size_bytes >> 20) + " MiB", m.created_at});
    seen.push_back(t.name);
  }
  for (const auto& n : core::ListTemplateSpecs(from)) {
    if (std::find(seen.begin(), seen.end(), n) != seen.end()) continue;
    auto spec = core::LoadTemplateSpec(n, from);
    rows.push_back(
        {n, spec ? spec->display_name : "?", spec ? spec->version : "", "not built", "-", "-"});
  }
  std::sort(rows.begin(), rows.end(), [](const Row& x, const Row& y) { return x.name < y.name; });
  if (as_json) {
    for (const auto& r : rows) {
      boost::json::object o;
      o["name"] = r.name;
      o["display_name"] = r.display;
      o["version"] = r.version;
      o["status"] = r.status;
      o["created_at"] = r.created;
      out.push_back(std::move(o));
    }
    std::printf("%s\n", boost::json::serialize(out).c_str());
    return 0;
  }
  std::printf("%-12s %-42s %-8s %-10s %-10s %s\n", "NAME", "DISPLAY NAME", "VERSION", "STATUS",
              "SIZE", "CREATED");
  for (const auto& r : rows) {
    std::printf("%-12s %-42s %-8s %-10s %-10s %s\n", r.name.c_str(), r.display.c_str(),
                r.version.c_str(), r.status.c_str(), r.size.c_str(), r.created.c_str());
  }
  return 0;
}

// Sandboxes recorded in the server's database that still use `name` (not destroyed). A missing
// database means no server ever ran here.
Result<std::vector<std::string>> SandboxesUsing(const std::string& data_dir,
                                                const std::string& name) {
  const std::string db = data_dir + "/agent-sandbox.db";
  std::vector<std::string> ids;
  struct stat st;
  if (stat(db.c_str(), &st) != 0) return ids;
  ASB_ASSIGN_OR_RETURN(auto store, store::Store::Open(db, SystemClock::Instance().NowUnixMs()));
  store::SandboxFilter f;
  f.live_only = true;
  ASB_ASSIGN_OR_RETURN(auto records, store->ListSandboxes(f));
  for (const auto& r : records) {
    if (r.template_name == name) ids.push_back(r.id);
  }
  return ids;
}

int Remove(const std::string& data_dir, const std::string& name) {
  if (auto st = core::ValidateTemplateName(name); !st) return ReportError(st.error());
  auto users = SandboxesUsing(data_dir, name);
  if (!users) return Fails(users.error());
  if (!users->empty()) {
    std::string list;
    for (const auto& id : *users) list += (list.empty() ? "" : ", ") + id;
    return Fails(Error::Conflict("template '" + name + "' is in use by sandbox(es) " + list +
                                 "; destroy them first"));
  }
  auto st = core::RemoveTemplate(core::TemplateLayout(data_dir + "/templates"), name);
  if (!st) return Fails(st.error());
  std::printf("removed template %s\n", name.c_str());
  return 0;
}

}  // namespace

void RegisterTemplateCommand(CLI::App& app) {
  CLI::App* tmpl = app.add_subcommand("template", "Build, list and remove sandbox templates");
  tmpl->require_subcommand(1);

  auto b = std::make_shared<BuildArgs>();
  CLI::App* build = tmpl->add_subcommand(
      "build", "Build templates from their template.toml with mmdebstrap (root; incremental)");
  build->add_option("template", b->targets,
                    "Bundled template name (base, python, node, go) or a path to a directory "
                    "holding template.toml, or to the file");
  build->add_flag("--force,-f", b->force, "Rebuild even when the recipe is unchanged");
  build
      ->add_option("--from", b->from,
                   "Directory of the bundled templates (env "
                   "AGENT_SANDBOX_TEMPLATES_SRC)")
      ->capture_default_str();
  build->add_option("--data-dir", b->data_dir, "Data directory (env AGENT_SANDBOX_DATA_DIR)")
      ->capture_default_str();
  build->add_option("--mirror", b->mirror, "Debian mirror (env AGENT_SANDBOX_DEBIAN_MIRROR)")
      ->envname("AGENT_SANDBOX_DEBIAN_MIRROR")
      ->capture_default_str();
  build
      ->add_option("--security-mirror", b->security_mirror,
                   "Debian security mirror (env AGENT_SANDBOX_DEBIAN_SECURITY_MIRROR)")
      ->envname("AGENT_SANDBOX_DEBIAN_SECURITY_MIRROR")
      ->capture_default_str();
  auto df = AddDockerfileOptions(build);  // ADR 0012 (template_image.h)
  SetAction(build, [b, df] {
    if (!df->dockerfile.empty()) {
      if (!b->targets.empty()) {
        return ReportError(Error::InvalidArgument(
            "template build: give either --dockerfile or template names/paths, not both"));
      }
      return RunDockerfileBuild(*df, b->data_dir);
    }
    if (b->targets.empty()) {
      return ReportError(Error::InvalidArgument(
          "template build: give a template name or path (or --dockerfile PATH)"));
    }
    return Build(*b);
  });

  auto l = std::make_shared<std::pair<BuildArgs, bool>>();
  CLI::App* ls = tmpl->add_subcommand("ls", "List installed and bundled templates");
  ls->add_flag("--json", l->second, "One JSON array");
  ls->add_option("--from", l->first.from, "Directory of the bundled templates")
      ->capture_default_str();
  ls->add_option("--data-dir", l->first.data_dir, "Data directory (env AGENT_SANDBOX_DATA_DIR)")
      ->capture_default_str();
  SetAction(ls, [l] { return List(l->first.data_dir, l->first.from, l->second); });

  auto r = std::make_shared<std::pair<std::vector<std::string>, std::string>>(
      std::vector<std::string>{}, DefaultDataDir());
  CLI::App* rm = tmpl->add_subcommand("rm", "Remove templates no sandbox uses");
  rm->add_option("template", r->first, "Template names")->required();
  rm->add_option("--data-dir", r->second, "Data directory (env AGENT_SANDBOX_DATA_DIR)")
      ->capture_default_str();
  // Each name is tried (as docker rmi does); the exit code is the last failure's, else 0.
  SetAction(rm, [r] {
    int rc = 0;
    for (const std::string& name : r->first) {
      if (int one = Remove(r->second, name); one != 0) rc = one;
    }
    return rc;
  });

  RegisterTemplateImportCommand(tmpl);  // `template import` (template_image.h)
}

}  // namespace asb::cli
