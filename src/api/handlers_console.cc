// GET /, /console, /console/{path}: the web console's files (api/console.h, ADR 0022).
#include <filesystem>
#include <fstream>
#include <sstream>

#include "api/console.h"
#include "api/errors.h"

namespace asb::api {

namespace {

namespace fs = std::filesystem;

// A relative path the manifest may hold: segments of [A-Za-z0-9._-], none empty or starting
// with '.' (so no "..", no hidden files).
bool IsServableName(const std::string& rel) {
  if (rel.empty() || rel.size() > 200) return false;
  size_t start = 0;
  while (start <= rel.size()) {
    size_t end = rel.find('/', start);
    if (end == std::string::npos) end = rel.size();
    if (end == start || rel[start] == '.') return false;
    for (size_t i = start; i < end; ++i) {
      char c = rel[i];
      bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                c == '.' || c == '_' || c == '-';
      if (!ok) return false;
    }
    start = end + 1;
  }
  return true;
}

bool EndsWith(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix.data(), suffix.size()) == 0;
}

bool HasIndex(const fs::path& dir) {
  std::error_code ec;
  return fs::is_regular_file(fs::symlink_status(dir / "index.html", ec));
}

HttpResponse WithHeaders(HttpResponse r, const std::string& cache) {
  for (auto& h : ConsoleSecurityHeaders()) r.headers.push_back(std::move(h));
  r.headers.emplace_back("Cache-Control", cache);
  return r;
}

HttpResponse Serve(const ConsoleAssets& assets, const std::string& name) {
  if (assets.files.find("index.html") == assets.files.end()) {
    return WithHeaders(ErrorResponse(503, "unavailable",
                                     "the web console was not built: run "
                                     "scripts/build-console.sh (README, Web console)"),
                       "no-store");
  }
  auto it = assets.files.find(name.empty() ? std::string("index.html") : name);
  if (it == assets.files.end()) {
    return WithHeaders(ErrorResponse(404, "not_found", "no such console file"), "no-store");
  }
  HttpResponse r;
  r.status = 200;
  r.content_type = it->second.content_type;
  r.body = it->second.body;
  // Vite names what is under assets/ by a hash of its content: cacheable for ever.
  bool hashed = it->first.rfind("assets/", 0) == 0;
  return WithHeaders(std::move(r), hashed ? "public, max-age=31536000, immutable" : "no-cache");
}

}  // namespace

std::string ConsoleContentType(const std::string& name) {
  static const std::pair<std::string_view, std::string_view> kTypes[] = {
      {".html", "text/html; charset=utf-8"},
      {".js", "text/javascript; charset=utf-8"},
      {".mjs", "text/javascript; charset=utf-8"},
      {".css", "text/css; charset=utf-8"},
      {".json", "application/json"},
      {".map", "application/json"},
      {".svg", "image/svg+xml"},
      {".png", "image/png"},
      {".ico", "image/x-icon"},
      {".woff2", "font/woff2"},
      {".txt", "text/plain; charset=utf-8"},
      {".wasm", "application/wasm"},
  };
  for (const auto& [ext, type] : kTypes) {
    if (EndsWith(name, ext)) return std::string(type);
  }
  return "application/octet-stream";
}

std::vector<std::pair<std::string, std::string>> ConsoleSecurityHeaders() {
  // style-src allows inline styles for xterm.js only: its DOM renderer writes the cell size,
  // the theme and 24-bit colours into <style> elements and style attributes it computes at run
  // time (ADR 0022). Scripts, connections, frames and objects stay 'self' / 'none'.
  return {
      {"Content-Security-Policy",
       "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
       "connect-src 'self'; img-src 'self' data: blob:; font-src 'self'; worker-src 'self'; "
       "frame-src 'none'; frame-ancestors 'none'; object-src 'none'; base-uri 'none'; "
       "form-action 'none'"},
      {"X-Frame-Options", "DENY"},
      {"X-Content-Type-Options", "nosniff"},
      {"Referrer-Policy", "no-referrer"},
      {"Cross-Origin-Opener-Policy", "same-origin"},
  };
}

ConsoleAssets LoadConsoleAssets(const std::string& dir, const ConsoleLimits& limits) {
  ConsoleAssets out;
  if (dir.empty()) {
    out.problem = "no console directory (not built or not installed)";
    return out;
  }
  const fs::path root(dir);
  if (!HasIndex(root)) {
    out.problem = "no index.html in " + dir;
    return out;
  }
  std::map<std::string, ConsoleAsset> files;
  int64_t bytes = 0;
  std::error_code ec;
  fs::recursive_directory_iterator it(root, fs::directory_options::none, ec);
  for (; !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    fs::file_status st = it->symlink_status(ec);
    if (ec) break;
    if (!fs::is_regular_file(st)) continue;  // directories are walked; links never followed
    std::string rel = it->path().lexically_relative(root).generic_string();
    if (!IsServableName(rel)) continue;
    if (static_cast<int64_t>(files.size()) >= limits.max_files) {
      out.problem = "more than " + std::to_string(limits.max_files) + " files in " + dir;
      return out;
    }
    std::ifstream in(it->path(), std::ios::binary);
    std::ostringstream buf;
    buf << in.rdbuf();
    if (!in.good() && !in.eof()) {
      out.problem = "cannot read " + it->path().string();
      return out;
    }
    std::string body = std::move(buf).str();
    bytes += static_cast<int64_t>(body.size());
    if (bytes > limits.max_bytes) {
      out.problem = "more than " + std::to_string(limits.max_bytes) + " bytes in " + dir;
      return out;
    }
    files[rel] = ConsoleAsset{ConsoleContentType(rel), std::move(body)};
  }
  if (ec) {
    out.problem = "cannot list " + dir + ": " + ec.message();
    return out;
  }
  if (files.find("index.html") == files.end()) {
    out.problem = "no index.html in " + dir;
    return out;
  }
  out.files = std::move(files);
  return out;
}

std::string FindConsoleDir(const std::string& flag, const std::string& exe) {
  if (!flag.empty()) return flag;
  std::vector<fs::path> candidates;
  if (!exe.empty()) {
    fs::path bin = fs::path(exe).parent_path();
    candidates.push_back(bin / "console");
    candidates.push_back(bin / ".." / "share" / "agent-sandbox" / "console");
  }
  candidates.emplace_back("/usr/share/agent-sandbox/console");
  for (const fs::path& c : candidates) {
    if (HasIndex(c)) return c.lexically_normal().string();
  }
  return "";
}

void AddConsoleRoutes(Router& router, std::shared_ptr<const ConsoleAssets> assets) {
  RouteOptions fast;
  fast.blocking = false;
  auto index = [assets](HttpRequest&) { return Serve(*assets, ""); };
  router.Add("GET", "/", index, fast);
  router.Add("GET", "/console", index, fast);
  RouteOptions tail = fast;
  tail.tail = true;
  router.Add(
      "GET", "/console/{path}",
      [assets](HttpRequest& req) { return Serve(*assets, req.Param("path")); }, tail);
}

}  // namespace asb::api
