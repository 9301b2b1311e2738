// The web console (ADR 0022): the single-page app built from web/ (scripts/build-console.sh),
// served by the server itself at GET /, /console and /console/{path}. The files are read once,
// when the routes are built, into an in-memory manifest: a request only ever looks a name up in
// that map, so no request path reaches the file system (no traversal, no symlink games, no
// files added after start). The routes need no API key (the app asks for one and then calls the
// API with it); every answer carries the console's security headers (a strict
// Content-Security-Policy, frame denial, nosniff, no referrer).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "api/router.h"

namespace asb::api {

/// One file of the console: its bytes and Content-Type.
struct ConsoleAsset {
  std::string content_type;
  std::string body;
};

/// The console as loaded at start.
struct ConsoleAssets {
  /// Relative path ("index.html", "assets/index-3f2a.js") -> file. Empty when not loaded.
  std::map<std::string, ConsoleAsset> files;
  /// Why the console is not served ("" when index.html was loaded). For the log only: it may
  /// name host paths, so it never goes to a client.
  std::string problem;
};

/// Limits of what LoadConsoleAssets() takes: at most `max_files` files and `max_bytes` bytes in
/// all; a directory with more is refused whole (problem set, nothing served).
struct ConsoleLimits {
  int64_t max_files = 1000;
  int64_t max_bytes = 64LL << 20;
};

/// Reads every regular file beneath `dir` (symbolic links and other non-regular files are
/// skipped, directories are not followed through links) whose relative path is made of
/// [A-Za-z0-9._-] segments not starting with '.'. `dir` "" or a directory without index.html:
/// no files, `problem` says why.
ConsoleAssets LoadConsoleAssets(const std::string& dir, const ConsoleLimits& limits = {});

/// The Content-Type of a file name by its extension ("application/octet-stream" when unknown).
std::string ConsoleContentType(const std::string& name);

/// The headers every console answer carries: Content-Security-Policy, X-Frame-Options,
/// X-Content-Type-Options, Referrer-Policy, Cross-Origin-Opener-Policy.
std::vector<std::pair<std::string, std::string>> ConsoleSecurityHeaders();

/// The console directory to serve: `flag` when not empty; else the first of
/// <dir of `exe`>/console, <dir of `exe`>/../share/agent-sandbox/console and
/// /usr/share/agent-sandbox/console that holds an index.html; else "" (not installed).
std::string FindConsoleDir(const std::string& flag, const std::string& exe);

/// GET /, GET /console and GET /console/{path} (path may be empty: index.html). A name not in
/// `assets` is 404 not_found; a console that was not built (no index.html) answers 503
/// unavailable on every route, saying so — both in the one error shape, with the headers above.
void AddConsoleRoutes(Router& router, std::shared_ptr<const ConsoleAssets> assets);

}  // namespace asb::api
