#include "templates/image_import.h"

#include <fcntl.h>
#include <openssl/evp.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <memory>

#include "core/template_defaults.h"
#include "core/template_install.h"
#include "templates/layer.h"
#include "templates/rooted_dir.h"
#include "templates/run_time_view.h"
#include "templates/stage.h"

namespace asb::templates {

namespace {

namespace json = boost::json;

constexpr size_t kMaxJsonBytes = 4 << 20;

struct Image {
  std::string config_path;               // inside the unpacked archive
  std::string config_digest;             // "sha256:..." or "" (docker save without digests)
  std::vector<std::string> layer_paths;  // in order
  std::vector<std::string> layer_digests;
  std::string ref;  // a name for the manifest's base field
};

Result<json::value> ParseJson(const RootedDir& dir, const std::string& rel) {
  ASB_ASSIGN_OR_RETURN(std::string text, dir.ReadFile(rel, kMaxJsonBytes));
  boost::system::error_code ec;
  json::value v = json::parse(text, ec);
  if (ec) return Fail(Error::InvalidArgument(rel + ": not JSON: " + ec.message()));
  return v;
}

std::string Str(const json::object& o, const char* key) {
  auto* v = o.if_contains(key);
  return v && v->is_string() ? std::string(v->get_string()) : "";
}

// "sha256:<64 hex>" -> "blobs/sha256/<hex>"; refuses anything else (no path tricks).
Result<std::string> BlobPath(const std::string& digest) {
  size_t colon = digest.find(':');
  std::string alg = digest.substr(0, colon == std::string::npos ? 0 : colon);
  std::string hex = colon == std::string::npos ? "" : digest.substr(colon + 1);
  const bool ok_alg = alg == "sha256" || alg == "sha512";
  const bool ok_hex = !hex.empty() && hex.size() <= 128 &&
                      hex.find_first_not_of("0123456789abcdef") == std::string::npos;
  if (!ok_alg || !ok_hex) return Fail(Error::InvalidArgument("bad digest '" + digest + "'"));
  return "blobs/" + alg + "/" + hex;
}

Status VerifyDigest(const RootedDir& dir, const std::string& rel, const std::string& digest) {
  if (digest.rfind("sha256:", 0) != 0) return {};  // sha512 and docker save: not verified
  ASB_ASSIGN_OR_RETURN(UniqueFd fd, dir.OpenRead(rel));
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr);
  char buf[1 << 16];
  for (;;) {
    ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return FailErrno("read " + rel);
    if (n == 0) break;
    EVP_DigestUpdate(ctx.get(), buf, static_cast<size_t>(n));
  }
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_DigestFinal_ex(ctx.get(), md, &len);
  static const char* hex = "0123456789abcdef";
  std::string got = "sha256:";
  for (unsigned int i = 0; i < len; ++i) {
    got += hex[md[i] >> 4];
    got += hex[md[i] & 15];
  }
  if (got != digest) {
    return Fail(Error::InvalidArgument(rel + ": digest mismatch (expected " + digest + ", got " +
                                       got + ")"));
  }
  return {};
}

std::string HostArch() {
  struct utsname u;
  if (::uname(&u) != 0) return "";
  std::string m = u.machine;
  if (m == "x86_64") return "amd64";
  if (m == "aarch64") return "arm64";
  return m;
}

// Picks the descriptor for this host from an index's manifests.
Result<json::object> ChooseManifest(const json::value& index, const std::string& where) {
  if (!index.is_object() || !index.get_object().contains("manifests") ||
      !index.at("manifests").is_array() || index.at("manifests").get_array().empty()) {
    return Fail(Error::InvalidArgument(where + ": no manifests"));
  }
  const auto& list = index.at("manifests").get_array();
  if (list.size() == 1 && list[0].is_object()) return list[0].get_object();
  const std::string arch = HostArch();
  for (const auto& d : list) {
    if (!d.is_object()) continue;
    auto* p = d.get_object().if_contains("platform");
    if (p && p->is_object() && Str(p->get_object(), "os") == "linux" &&
        Str(p->get_object(), "architecture") == arch) {
      return d.get_object();
    }
  }
  return Fail(Error::InvalidArgument(where + ": " + std::to_string(list.size()) +
                                     " manifests and none for linux/" + arch));
}

Result<Image> ReadOci(const RootedDir& dir) {
  ASB_ASSIGN_OR_RETURN(json::value index, ParseJson(dir, "index.json"));
  Image img;
  for (int depth = 0;; ++depth) {
    if (depth > 4) return Fail(Error::InvalidArgument("index.json: nested indexes too deep"));
    ASB_ASSIGN_OR_RETURN(json::object desc, ChooseManifest(index, "index.json"));
    if (img.ref.empty()) {
      if (auto* a = desc.if_contains("annotations"); a && a->is_object()) {
        img.ref = Str(a->get_object(), "org.opencontainers.image.ref.name");
      }
    }
    const std::string digest = Str(desc, "digest");
    ASB_ASSIGN_OR_RETURN(std::string path, BlobPath(digest));
    ASB_TRY(VerifyDigest(dir, path, digest));
    ASB_ASSIGN_OR_RETURN(json::value m, ParseJson(dir, path));
    if (!m.is_object()) return Fail(Error::InvalidArgument(path + ": not an object"));
    if (m.get_object().contains("manifests")) {  // an index inside the index
      index = std::move(m);
      continue;
    }
    auto* config = m.get_object().if_contains("config");
    auto* layers = m.get_object().if_contains("layers");
    if (!config || !config->is_object() || !layers || !layers->is_array()) {
      return Fail(Error::InvalidArgument(path + ": not an image manifest"));
    }
    img.config_digest = Str(config->get_object(), "digest");
    ASB_ASSIGN_OR_RETURN(img.config_path, BlobPath(img.config_digest));
    for (const auto& l : layers->get_array()) {
      if (!l.is_object()) return Fail(Error::InvalidArgument(path + ": bad layer"));
      const std::string d = Str(l.get_object(), "digest");
      ASB_ASSIGN_OR_RETURN(std::string lp, BlobPath(d));
      img.layer_paths.push_back(lp);
      img.layer_digests.push_back(d);
    }
    return img;
  }
}

Result<Image> ReadDockerSave(const RootedDir& dir) {
  ASB_ASSIGN_OR_RETURN(json::value v, ParseJson(dir, "manifest.json"));
  if (!v.is_array() || v.get_array().empty() || !v.get_array()[0].is_object()) {
    return Fail(Error::InvalidArgument("manifest.json: no image"));
  }
  if (v.get_array().size() > 1) {
    return Fail(
        Error::InvalidArgument("manifest.json holds " + std::to_string(v.get_array().size()) +
                               " images; import one image per archive (docker save IMAGE)"));
  }
  const auto& o = v.get_array()[0].get_object();
  Image img;
  img.config_path = Str(o, "Config");
  auto* layers = o.if_contains("Layers");
  if (img.config_path.empty() || !layers || !layers->is_array()) {
    return Fail(Error::InvalidArgument("manifest.json: needs Config and Layers"));
  }
  auto digest_of = [](const std::string& p) {
    return p.rfind("blobs/sha256/", 0) == 0 ? "sha256:" + p.substr(13) : std::string();
  };
  img.config_digest = digest_of(img.config_path);
  for (const auto& l : layers->get_array()) {
    if (!l.is_string()) return Fail(Error::InvalidArgument("manifest.json: bad Layers"));
    img.layer_paths.emplace_back(l.get_string());
    img.layer_digests.push_back(digest_of(img.layer_paths.back()));
  }
  if (auto* tags = o.if_contains("RepoTags");
      tags && tags->is_array() && !tags->get_array().empty() && tags->get_array()[0].is_string()) {
    img.ref = std::string(tags->get_array()[0].get_string());
  }
  for (const auto& p : img.layer_paths) {
    if (IsUnsafeRelative(p)) return Fail(Error::InvalidArgument("manifest.json: bad path " + p));
  }
  if (IsUnsafeRelative(img.config_path)) {
    return Fail(Error::InvalidArgument("manifest.json: bad path " + img.config_path));
  }
  return img;
}

bool Exists(const RootedDir& dir, const std::string& rel) { return dir.OpenRead(rel).has_value(); }

// Env, WorkingDir, User, Labels of the image config (image-spec config.md) into `m`.
Status ReadConfig(const RootedDir& dir, const Image& img, core::TemplateManifest* m) {
  ASB_TRY(VerifyDigest(dir, img.config_path, img.config_digest));
  ASB_ASSIGN_OR_RETURN(json::value v, ParseJson(dir, img.config_path));
  if (!v.is_object()) return Fail(Error::InvalidArgument("image config is not an object"));
  auto* c = v.get_object().if_contains("config");
  if (!c || !c->is_object()) return {};
  const auto& cfg = c->get_object();
  if (auto* env = cfg.if_contains("Env"); env && env->is_array()) {
    for (const auto& e : env->get_array()) {
      if (!e.is_string()) continue;
      std::string s(e.get_string());
      size_t eq = s.find('=');
      if (eq == std::string::npos || eq == 0) continue;
      m->env[s.substr(0, eq)] = s.substr(eq + 1);
    }
  }
  m->workdir = Str(cfg, "WorkingDir");
  m->user = Str(cfg, "User");
  if (auto* labels = cfg.if_contains("Labels"); labels && labels->is_object()) {
    for (const auto& [k, val] : labels->get_object()) {
      if (val.is_string()) m->labels[std::string(k)] = std::string(val.get_string());
    }
  }
  return {};
}

std::vector<std::string> SplitTools(const std::string& s) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i <= s.size()) {
    size_t j = s.find(',', i);
    if (j == std::string::npos) j = s.size();
    std::string t = s.substr(i, j - i);
    t.erase(0, t.find_first_not_of(" \t"));
    t.erase(t.find_last_not_of(" \t") + 1);
    if (!t.empty()) out.push_back(t);
    i = j + 1;
  }
  return out;
}

}  // namespace

Result<core::TemplateManifest> ImportImage(const ImportOptions& o) {
  ASB_TRY(core::ValidateTemplateName(o.name));
  UniqueFd archive(::open(o.archive.c_str(), O_RDONLY | O_CLOEXEC));
  if (!archive) {
    if (errno == ENOENT) return Fail(Error::NotFound("archive " + o.archive + " not found"));
    return FailErrno("open " + o.archive);
  }
  core::TemplateLayout layout(o.templates_dir);
  ASB_ASSIGN_OR_RETURN(core::TemplateLock lock, core::LockTemplate(layout, o.name));
  core::CleanupTemplateLeftovers(layout, o.name);
  ASB_ASSIGN_OR_RETURN(core::StagingDir stage, core::MakeStagingDir(layout, o.name));
  const std::string unpacked = stage.path() + "/image";
  if (::mkdir(unpacked.c_str(), 0700) != 0) return FailErrno("mkdir " + unpacked);
  if (::mkdir(stage.rootfs().c_str(), 0755) != 0) return FailErrno("mkdir " + stage.rootfs());
  ASB_ASSIGN_OR_RETURN(RootedDir image, RootedDir::Open(unpacked));
  ASB_ASSIGN_OR_RETURN(RootedDir root, RootedDir::Open(stage.rootfs()));

  o.progress("reading " + o.archive);
  ASB_TRY_CTX(ApplyArchive(archive.get(), image, {}), "image archive");
  Image img;
  std::string format;
  if (Exists(image, "index.json")) {
    format = "oci";
    ASB_ASSIGN_OR_RETURN(img, ReadOci(image));
  } else if (Exists(image, "manifest.json")) {
    format = "docker-save";
    ASB_ASSIGN_OR_RETURN(img, ReadDockerSave(image));
  } else {
    return Fail(Error::InvalidArgument(
        o.archive +
        " is neither an OCI image layout (index.json) nor a docker save archive "
        "(manifest.json)"));
  }
  core::TemplateManifest m;
  ASB_TRY_CTX(ReadConfig(image, img, &m), "image config");
  // WorkingDir and User become the defaults of its sandboxes' commands, which have only the
  // users sandbox and root: refuse any other before the layers are unpacked.
  auto user = core::ResolveTemplateUser(m.user);
  if (!user) return Fail(std::move(user).error().WithContext("image config User"));
  auto workdir = core::ResolveTemplateWorkdir(m.workdir);
  if (!workdir) return Fail(std::move(workdir).error().WithContext("image config WorkingDir"));
  for (size_t i = 0; i < img.layer_paths.size(); ++i) {
    const auto& path = img.layer_paths[i];
    o.progress("layer " + std::to_string(i + 1) + "/" + std::to_string(img.layer_paths.size()) +
               ": " + path);
    ASB_TRY_CTX(VerifyDigest(image, path, img.layer_digests[i]), "layer " + path);
    auto fd = image.OpenRead(path);
    if (!fd) return Fail(fd.error().WithContext("layer " + path));
    LayerOptions lo;
    lo.whiteouts = true;
    auto st = ApplyArchive(fd->get(), root, lo);
    if (!st) return Fail(st.error().WithContext("layer " + path));
  }
  ASB_TRY(core::RemoveTree(unpacked));  // before the swap: it must not end up in the template
  if (!m.workdir.empty()) {
    // Docker makes a missing WorkingDir when a container starts; our rootfs is read-only then.
    auto dir = root.OpenDir(*workdir, /*create=*/true, 0755, 0, 0);
    if (!dir) return Fail(std::move(dir).error().WithContext("image config WorkingDir"));
  }
  o.progress("finishing the rootfs (sandbox user, mount points)");
  ASB_TRY_CTX(FinishUntrustedRootfs(stage.rootfs()), "finish rootfs");
  for (const std::string& note : RunTimeNotes(stage.rootfs())) o.progress(note);
  {
    auto sh = root.OpenRead("bin/sh");
    struct stat st;
    if (!sh || ::fstat(sh->get(), &st) != 0 || !S_ISREG(st.st_mode) || !(st.st_mode & 0111)) {
      return Fail(
          Error::InvalidArgument("the image has no executable /bin/sh; sandboxes need one"));
    }
  }
  auto label = [&](const char* k) {
    auto it = m.labels.find(k);
    return it == m.labels.end() ? std::string() : it->second;
  };
  m.name = o.name;
  m.source = "oci";
  m.base = img.ref.empty() ? format + ":" + o.archive.substr(o.archive.rfind('/') + 1) : img.ref;
  m.display_name = label("template.displayName");
  if (m.display_name.empty()) m.display_name = label("org.opencontainers.image.title");
  m.description = label("template.description");
  if (m.description.empty()) m.description = label("org.opencontainers.image.description");
  m.version = label("template.version");
  if (m.version.empty()) m.version = label("org.opencontainers.image.version");
  m.tools = SplitTools(label("template.tools"));
  m.recipe_hash = img.config_digest;
  ASB_TRY(core::InstallTemplate(layout, o.name, stage, m));
  auto installed = core::ReadManifest(layout.Manifest(o.name));
  if (!installed) return Fail(installed.error());
  o.progress("installed template " + o.name);
  return *installed;
}

}  // namespace asb::templates
