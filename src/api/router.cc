#include "api/router.h"

#include "api/errors.h"

namespace asb::api {

namespace {
std::vector<std::string> Split(std::string_view path) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i <= path.size()) {
    size_t j = path.find('/', i);
    if (j == std::string_view::npos) j = path.size();
    out.emplace_back(path.substr(i, j - i));
    i = j + 1;
  }
  return out;
}

bool IsParam(const std::string& seg) {
  return seg.size() >= 2 && seg.front() == '{' && seg.back() == '}';
}
}  // namespace

void Router::Add(std::string method, std::string pattern, Handler handler, RouteOptions options) {
  Route r;
  r.method = std::move(method);
  r.segments = Split(pattern);
  r.pattern = std::move(pattern);
  r.handler = std::move(handler);
  r.options = std::move(options);
  routes_.push_back(std::move(r));
}

void Router::AddHost(std::string name, HostMatcher match, Handler handler, RouteOptions options) {
  Route r;
  r.method = "*";
  r.pattern = std::move(name);
  r.handler = std::move(handler);
  r.options = std::move(options);
  r.host = std::move(match);
  routes_.push_back(std::move(r));
}

Router::Match Router::Find(std::string_view method, std::string_view path, std::string_view host,
                           const std::map<std::string, std::string>& headers) const {
  Match m;
  m.status = 404;
  for (const Route& r : routes_) {
    if (r.host && r.host(host, headers, &m.params)) {
      m.route = &r;
      m.status = 0;
      return m;
    }
  }
  m.params.clear();
  std::vector<std::string> segs = Split(path);
  for (const Route& r : routes_) {
    if (r.host) continue;
    const bool tail = r.options.tail && IsParam(r.segments.back());
    if (tail ? segs.size() < r.segments.size() : r.segments.size() != segs.size()) continue;
    std::map<std::string, std::string> params;
    bool ok = true;
    const size_t fixed = tail ? r.segments.size() - 1 : segs.size();
    for (size_t i = 0; i < fixed && ok; ++i) {
      if (IsParam(r.segments[i])) {
        if (segs[i].empty())
          ok = false;
        else
          params[r.segments[i].substr(1, r.segments[i].size() - 2)] = segs[i];
      } else if (r.segments[i] != segs[i]) {
        ok = false;
      }
    }
    if (!ok) continue;
    if (tail) {
      std::string rest;
      for (size_t i = fixed; i < segs.size(); ++i) rest += (i > fixed ? "/" : "") + segs[i];
      params[r.segments.back().substr(1, r.segments.back().size() - 2)] = rest;
    }
    if (r.method == method) {
      m.route = &r;
      m.params = std::move(params);
      m.status = 0;
      m.allow.clear();
      return m;
    }
    m.status = 405;
    if (m.allow.find(r.method) == std::string::npos) {
      if (!m.allow.empty()) m.allow += ", ";
      m.allow += r.method;
    }
  }
  return m;
}

HttpResponse Router::NotFoundResponse(const Match& m, std::string_view method,
                                      std::string_view path) {
  if (m.status == 405) {
    HttpResponse r = ErrorResponse(405, "method_not_allowed",
                                   "method " + std::string(method) + " is not allowed on " +
                                       std::string(path) + " (allowed: " + m.allow + ")");
    r.headers.emplace_back("Allow", m.allow);
    return r;
  }
  return ErrorResponse(404, "not_found", "no route for " + std::string(path));
}

HttpResponse Router::Dispatch(HttpRequest& req) const {
  Match m = Find(req.method, req.path, req.Header("host"), req.headers);
  if (m.route == nullptr) return NotFoundResponse(m, req.method, req.path);
  req.route = m.route->pattern;
  req.params = std::move(m.params);
  return m.route->handler(req);
}

}  // namespace asb::api
