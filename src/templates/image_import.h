// `agent-sandbox template import ARCHIVE --name N`: an OCI image archive (a tar of an OCI
// image layout: oci-layout, index.json, blobs/<alg>/<hex>; image-spec image-layout.md) or a
// `docker save` tarball (manifest.json with Config and Layers), installed as a template
// (ADR 0012, "Image import").
//
// The archive is unpacked into the staging directory with the same refusals as a layer
// (layer.h), the manifest is chosen (the only one, or the one for linux/<host arch>), blobs
// named by a sha256 digest are verified, layers are applied in order with whiteouts, and the
// image config's Env, WorkingDir, User and Labels are recorded in the template's manifest.
// WorkingDir and User become the defaults of its sandboxes' commands (core/template_defaults.h):
// a missing WorkingDir is made (root, 0755), and a User other than sandbox/1000/root/0 is
// refused before any layer is unpacked.
// The rootfs is then finished for sandboxes and swapped in atomically, as for a Dockerfile.
#pragma once

#include <functional>
#include <string>

#include "common/result.h"
#include "core/template_manifest.h"

namespace asb::templates {

struct ImportOptions {
  std::string archive;        // path of the archive (tar; gzip/zstd/xz compression detected)
  std::string name;           // template name
  std::string templates_dir;  // <data_dir>/templates
  std::function<void(const std::string&)> progress = [](const std::string&) {};
};

/// Imports and installs; returns the installed manifest. Errors: kInvalidArgument for an
/// archive that is neither layout, a digest mismatch, a refused entry, several images in a
/// docker save archive, no /bin/sh, a User or WorkingDir sandboxes cannot have; kNotFound for
/// a missing archive or blob; errno errors.
Result<core::TemplateManifest> ImportImage(const ImportOptions& opts);

}  // namespace asb::templates
