// The OpenAPI 3.1 document of the REST API (api/openapi.json in the source tree, the source of
// truth; api/openapi.yaml is its generated YAML twin). The JSON is embedded at build time by
// src/api/CMakeLists.txt (configure_file of openapi_doc.cc.in), so the served document is always
// the one the binary was built with and no YAML parser is needed at run time.
#pragma once

#include <string_view>

#include "api/router.h"

namespace asb::api {

/// The document as JSON text (UTF-8, about 90 KiB); static storage, never empty.
std::string_view OpenApiJson();

/// GET /openapi.json: 200 application/json, the document. It needs a key like every non-health
/// route (any scope; api/auth.cc).
void AddOpenApiRoutes(Router& router);

}  // namespace asb::api
