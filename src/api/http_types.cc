#include "api/http_types.h"

#include <unistd.h>

namespace asb::api {

ProxyExchange::~ProxyExchange() {
  if (fd >= 0) ::close(fd);
}

std::string_view HttpRequest::Header(std::string_view name) const {
  auto it = headers.find(std::string(name));
  return it == headers.end() ? std::string_view{} : std::string_view(it->second);
}

const std::string* HttpRequest::Query(std::string_view name) const {
  auto it = query.find(std::string(name));
  return it == query.end() ? nullptr : &it->second;
}

const std::string& HttpRequest::Param(const std::string& name) const {
  static const std::string kEmpty;
  auto it = params.find(name);
  return it == params.end() ? kEmpty : it->second;
}

HttpResponse JsonResponse(int status, std::string json_body) {
  HttpResponse r;
  r.status = status;
  r.body = std::move(json_body);
  return r;
}

HttpResponse NoContent() {
  HttpResponse r;
  r.status = 204;
  r.content_type.clear();
  return r;
}

}  // namespace asb::api
