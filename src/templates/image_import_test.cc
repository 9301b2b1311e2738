// ImportImage over archives this test makes itself (OCI layout and docker save), with a layer
// of dash + its libraries taken from the base template (root; skips without it).
#include "templates/image_import.h"

#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "templates/test_tar.h"

namespace asb::templates {
namespace {

namespace fs = std::filesystem;
using testing::TarEntry;

std::string BaseRootfs() {
  const char* d = std::getenv("AGENT_SANDBOX_DATA_DIR");
  return std::string(d ? d : "/var/lib/agent-sandbox") + "/templates/base/rootfs";
}

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string Sha256(const std::string& data) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(data.data(), data.size(), md, &len, EVP_sha256(), nullptr);
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < len; ++i) {
    out += hex[md[i] >> 4];
    out += hex[md[i] & 15];
  }
  return out;
}

class ImageImportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root";
    if (!fs::exists(BaseRootfs() + "/bin/sh")) GTEST_SKIP() << "no base template";
    char tmpl[] = "/var/tmp/asb-import-test.XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    templates_ = dir_ + "/templates";
    fs::create_directories(templates_);
    // Layer 0: files the later layer whites out. Layer 1: a shell. Layer 2: whiteouts + a file.
    testing::WriteTar(dir_ + "/l0",
                      {{"junk/", TarEntry::kDir, "", 0755},
                       {"junk/a", TarEntry::kFile, "a"},
                       {"junk/b", TarEntry::kFile, "b"},
                       {"opq/old", TarEntry::kFile, "old"}},
                      testing::TarFilter::kGzip);
    const std::string cmd =
        "set -e; R=$(realpath " + BaseRootfs() +
        "); cd $R; "
        "libs=$(ldd usr/bin/dash | grep -o '/[^ ]*' | sed 's|^/||'); "
        "real=$(for l in $libs; do chroot $R realpath /$l | sed 's|^/||'; done); "
        "dirs=$(dirname $real | sort -u); "
        "tar --no-recursion -cf " +
        dir_ +
        "/l1 usr usr/bin usr/lib usr/lib64 "
        "$dirs bin lib lib64 usr/bin/dash usr/bin/sh $real $libs";
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
    testing::WriteTar(dir_ + "/l2",
                      {{"junk/.wh.a", TarEntry::kFile},
                       {"opq/.wh..wh..opq", TarEntry::kFile},
                       {"opq/new", TarEntry::kFile, "new"},
                       {"etc/added", TarEntry::kFile, "from layer 2\n"}},
                      testing::TarFilter::kZstd);
    for (const char* l : {"l0", "l1", "l2"}) layers_.push_back(Slurp(dir_ + "/" + l));
    config_ =
        R"({"architecture":"amd64","os":"linux","config":{"Env":["PATH=/usr/bin:/bin","FOO=bar=baz"],)"
        R"("WorkingDir":"/srv","User":"1000","Labels":{"template.displayName":"OCI test",)"
        R"("template.tools":"sh, dash"}},"rootfs":{"type":"layers","diff_ids":[]}})";
  }
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }

  // An OCI image layout, as a tar; `corrupt` changes a layer after its digest was taken.
  std::string OciArchive(bool corrupt = false) {
    std::vector<TarEntry> e = {
        {"oci-layout", TarEntry::kFile, R"({"imageLayoutVersion":"1.0.0"})"}};
    std::string layers_json;
    for (const auto& l : layers_) {
      layers_json += std::string(layers_json.empty() ? "" : ",") +
                     R"({"mediaType":"application/vnd.oci.image.layer.v1.tar","digest":"sha256:)" +
                     Sha256(l) + R"(","size":)" + std::to_string(l.size()) + "}";
      e.emplace_back("blobs/sha256/" + Sha256(l), TarEntry::kFile, l);
    }
    if (corrupt) e.back().data[e.back().data.size() / 2] ^= 1;
    e.emplace_back("blobs/sha256/" + Sha256(config_), TarEntry::kFile, config_);
    const std::string manifest =
        R"({"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json",)"
        R"("config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:)" +
        Sha256(config_) + R"(","size":)" + std::to_string(config_.size()) + R"(},"layers":[)" +
        layers_json + "]}";
    e.emplace_back("blobs/sha256/" + Sha256(manifest), TarEntry::kFile, manifest);
    e.emplace_back(
        "index.json", TarEntry::kFile,
        R"({"schemaVersion":2,"manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:)" +
            Sha256(manifest) + R"(","size":)" + std::to_string(manifest.size()) +
            R"(,"annotations":{"org.opencontainers.image.ref.name":"mini:1"}}]})");
    const std::string path = dir_ + "/oci.tar";
    testing::WriteTar(path, e);
    return path;
  }

  Result<core::TemplateManifest> Import(const std::string& archive, const std::string& name) {
    ImportOptions o;
    o.archive = archive;
    o.name = name;
    o.templates_dir = templates_;
    return ImportImage(o);
  }

  std::string dir_, templates_, config_;
  std::vector<std::string> layers_;
};

TEST_F(ImageImportTest, OciLayoutWithWhiteoutsAndConfig) {
  auto m = Import(OciArchive(), "ocitest");
  ASSERT_TRUE(m) << m.error().message();
  const std::string r = templates_ + "/ocitest/rootfs";
  EXPECT_TRUE(fs::exists(r + "/bin/sh"));
  EXPECT_EQ(Slurp(r + "/etc/added"), "from layer 2\n");
  EXPECT_FALSE(fs::exists(r + "/junk/a"));
  EXPECT_EQ(Slurp(r + "/junk/b"), "b");
  EXPECT_FALSE(fs::exists(r + "/opq/old"));
  EXPECT_EQ(Slurp(r + "/opq/new"), "new");
  EXPECT_FALSE(fs::exists(templates_ + "/ocitest/image"));  // the unpacked archive is gone
  EXPECT_EQ(m->source, "oci");
  EXPECT_EQ(m->base, "mini:1");
  EXPECT_EQ(m->display_name, "OCI test");
  EXPECT_EQ(m->tools, (std::vector<std::string>{"sh", "dash"}));
  EXPECT_EQ(m->env.at("FOO"), "bar=baz");
  EXPECT_EQ(m->env.at("PATH"), "/usr/bin:/bin");
  EXPECT_EQ(m->workdir, "/srv");
  EXPECT_EQ(m->user, "1000");
  // No layer has /srv: the import makes it, as Docker does at container start (its sandboxes'
  // commands start there and the rootfs is read-only then).
  struct stat st;
  ASSERT_EQ(::stat((r + "/srv").c_str(), &st), 0);
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  EXPECT_EQ(st.st_mode & 07777, 0755u);
  EXPECT_EQ(st.st_uid, 0u);
  EXPECT_EQ(m->recipe_hash, "sha256:" + Sha256(config_));
}

// FinishRootfs runs chroot'ed: symlinks in the image aimed at host files change nothing there.
TEST_F(ImageImportTest, SymlinksInTheImageNeverReachHostFiles) {
  std::ofstream(dir_ + "/victim") << "host file";
  fs::create_directories(dir_ + "/victimdir");
  std::ofstream(dir_ + "/victimdir/keep") << "keep";
  testing::WriteTar(dir_ + "/l2", {{"etc/", TarEntry::kDir, "", 0755},
                                   {"etc/hostname", TarEntry::kSymlink, dir_ + "/victim"},
                                   {"etc/resolv.conf", TarEntry::kSymlink, dir_ + "/victim"},
                                   {"var/", TarEntry::kDir, "", 0755},
                                   {"var/log", TarEntry::kSymlink, dir_ + "/victimdir"}});
  layers_[2] = Slurp(dir_ + "/l2");
  auto m = Import(OciArchive(), "hostile");
  ASSERT_TRUE(m) << m.error().message();
  EXPECT_EQ(Slurp(dir_ + "/victim"), "host file");
  EXPECT_TRUE(fs::exists(dir_ + "/victimdir/keep"));
  EXPECT_EQ(Slurp(templates_ + "/hostile/rootfs/etc/hostname"), "sandbox\n");
}

TEST_F(ImageImportTest, DockerSaveArchive) {
  std::vector<TarEntry> e = {{"cfg.json", TarEntry::kFile, config_}};
  std::string layers;
  for (size_t i = 0; i < layers_.size(); ++i) {
    const std::string p = "layer" + std::to_string(i) + "/layer.tar";
    e.emplace_back(p, TarEntry::kFile, layers_[i]);
    layers += std::string(layers.empty() ? "" : ",") + "\"" + p + "\"";
  }
  e.emplace_back("manifest.json", TarEntry::kFile,
                 R"([{"Config":"cfg.json","RepoTags":["mini:latest"],"Layers":[)" + layers + "]}]");
  testing::WriteTar(dir_ + "/save.tar.gz", e, testing::TarFilter::kGzip);
  auto m = Import(dir_ + "/save.tar.gz", "savetest");
  ASSERT_TRUE(m) << m.error().message();
  EXPECT_EQ(m->base, "mini:latest");
  EXPECT_EQ(Slurp(templates_ + "/savetest/rootfs/opq/new"), "new");
  EXPECT_FALSE(fs::exists(templates_ + "/savetest/rootfs/junk/a"));
}

TEST_F(ImageImportTest, BadArchivesAreRefusedAndInstallNothing) {
  auto corrupt = Import(OciArchive(/*corrupt=*/true), "bad");
  ASSERT_FALSE(corrupt);
  EXPECT_NE(corrupt.error().message().find("digest mismatch"), std::string::npos)
      << corrupt.error().message();
  testing::WriteTar(dir_ + "/neither.tar", {{"hello", TarEntry::kFile, "x"}});
  auto neither = Import(dir_ + "/neither.tar", "bad");
  ASSERT_FALSE(neither);
  EXPECT_NE(neither.error().message().find("neither an OCI image layout"), std::string::npos);
  testing::WriteTar(dir_ + "/evil.tar", {{"../../evil", TarEntry::kFile, "x"}});
  auto evil = Import(dir_ + "/evil.tar", "bad");
  ASSERT_FALSE(evil);
  EXPECT_NE(evil.error().message().find("'..' are not allowed"), std::string::npos);
  // A User sandboxes do not have is refused (they run commands as sandbox or root only).
  config_ = R"({"architecture":"amd64","os":"linux","config":{"User":"nobody"},)"
            R"("rootfs":{"type":"layers","diff_ids":[]}})";
  auto nobody = Import(OciArchive(), "bad");
  ASSERT_FALSE(nobody);
  EXPECT_EQ(nobody.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(nobody.error().message().find("User: user 'nobody' is not supported"),
            std::string::npos)
      << nobody.error().message();
  auto missing = Import(dir_ + "/nope.tar", "bad");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code(), ErrorCode::kNotFound);
  EXPECT_FALSE(fs::exists(templates_ + "/bad"));
  for (const auto& d : fs::directory_iterator(templates_)) {
    EXPECT_EQ(d.path().filename().string().rfind(".build-", 0), std::string::npos) << d.path();
  }
}

}  // namespace
}  // namespace asb::templates
