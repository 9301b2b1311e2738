#include "cli/template_image.h"

#include <unistd.h>

#include <cstdio>

#include "cli/command.h"
#include "cli/run_support.h"
#include "templates/dockerfile_build.h"
#include "templates/image_import.h"

namespace asb::cli {

namespace {

int Failed(const Error& e) {
  std::fprintf(stderr, "agent-sandbox: %s\n", e.detail().c_str());
  return 1;
}

std::function<void(const std::string&)> Printer(const std::string& name) {
  return [name](const std::string& line) {
    std::printf("[template %s] %s\n", name.c_str(), line.c_str());
    std::fflush(stdout);
  };
}

// Builds and imports need root (namespaces, id maps, chroot, ownership of every file).
bool NeedRoot(const char* what) {
  if (::geteuid() == 0) return false;
  std::fprintf(stderr, "agent-sandbox: %s must run as root\n", what);
  return true;
}

struct ImportArgs {
  std::string archive;
  std::string name;
  std::string data_dir = DefaultDataDir();
};

}  // namespace

std::shared_ptr<DockerfileArgs> AddDockerfileOptions(CLI::App* build) {
  auto a = std::make_shared<DockerfileArgs>();
  build->add_option("--dockerfile", a->dockerfile,
                    "Build a custom template from this Dockerfile (FROM one of our templates or "
                    "scratch; RUN COPY ADD ENV ARG WORKDIR USER LABEL)");
  build->add_option("--name", a->name,
                    "Name of the template built from --dockerfile (default: LABEL "
                    "template.name)");
  build->add_option("--context", a->context,
                    "Build context of --dockerfile: COPY/ADD sources are read here (default: "
                    "the Dockerfile's directory)");
  // RUN steps run in a sandbox's cgroups, with a sandbox's limits (templates/build_sandbox.h).
  AddResourceFlags(build, &a->resources, /*with_workspace=*/false);
  return a;
}

int RunDockerfileBuild(const DockerfileArgs& args, const std::string& data_dir) {
  if (NeedRoot("template build --dockerfile")) return 1;
  auto resources = LocalResources({}, args.resources);
  if (!resources) return ReportError(resources.error());
  std::fflush(stdout);
  templates::DockerfileBuildOptions o;
  o.resources = *resources;
  o.dockerfile = args.dockerfile;
  o.name = args.name;
  o.context = args.context;
  o.templates_dir = data_dir + "/templates";
  o.progress = Printer(args.name.empty() ? "(dockerfile)" : args.name);
  o.output_fd = 1;
  auto m = templates::BuildFromDockerfile(o);
  if (!m) return Failed(m.error());
  return 0;
}

void RegisterTemplateImportCommand(CLI::App* template_cmd) {
  auto a = std::make_shared<ImportArgs>();
  CLI::App* imp = template_cmd->add_subcommand(
      "import", "Install an OCI image archive or a `docker save` tarball as a template (root)");
  imp->add_option("archive", a->archive, "The archive (tar, optionally gzip/zstd/xz)")->required();
  imp->add_option("--name", a->name, "Template name ([a-z0-9][a-z0-9_-]*)")->required();
  imp->add_option("--data-dir", a->data_dir, "Data directory (env AGENT_SANDBOX_DATA_DIR)")
      ->capture_default_str();
  SetAction(imp, [a] {
    if (NeedRoot("template import")) return 1;
    templates::ImportOptions o;
    o.archive = a->archive;
    o.name = a->name;
    o.templates_dir = a->data_dir + "/templates";
    o.progress = Printer(a->name);
    auto m = templates::ImportImage(o);
    if (!m) return Failed(m.error());
    return 0;
  });
}

}  // namespace asb::cli
