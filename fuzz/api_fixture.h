// The REST API as the fuzz targets drive it: the real routing table (BuildRouter + the auth
// layer's routes, wrapped by AuthLayer::Wrap and WithSeedAErrorShape exactly as `agent-sandbox
// serve` does) over the real SandboxManager and an in-memory SQLite store, with core's
// FakeBackend in place of the namespaces backend. The fake backend is given no sandboxd, so
// routes that need a running daemon (exec, files, snapshots) answer their "not running"/backend
// errors and nothing the fuzzer sends is ever executed on this host. Built once per process, in
// a temporary data directory removed at exit.
#pragma once

#include <string>

#include "api/http_types.h"
#include "api/router.h"

namespace asb::fuzz {

/// The admin API key the fixture accepts ("Authorization: Bearer <kFuzzKey>").
inline constexpr char kFuzzKey[] = "fuzz-admin-key";

/// The wrapped router, built on first use.
const api::Router& ApiRouter();

/// Runs `req` the way the server's session does after parsing (route match, params, request
/// id, handler with exceptions turned into 500s), consumes a streamed body a little and
/// cancels it, and checks the server's promises about the answer: a status in [200, 599],
/// never 500 (bad input is a 4xx, never an internal error), a JSON body in the one error shape
/// for every 4xx/5xx (under /exec: seed A's, api/seed_a_wire.h). A violation aborts.
api::HttpResponse RunAndCheck(api::HttpRequest& req);

}  // namespace asb::fuzz
