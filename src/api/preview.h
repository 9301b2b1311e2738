// Preview URLs of exposed ports (docs/adr/0015-preview-urls.md): the pieces of
// the host-based scheme that are plain functions of text, so they are tested without sockets.
//
//   http://8000-sb-3f9a0c1d2e4b5a69.preview.example.com/?_asb_preview_token=asbp_...
//          └port┘ └─ sandbox id ──┘ └─ --preview-domain ┘
//
// Every request whose Host is "<port>-sb-<16 hex>.<preview domain>" is a request for the app on
// that port (handlers_previews.cc), whatever its path, so the app's absolute paths (/app.js,
// /api/x) stay on its own origin. The first request carries the token in the query; the server
// answers it with a redirect to the same URL without the token and an HttpOnly SameSite=Lax
// cookie for that host only, which every later request (sub-resources included) carries. The
// token is removed from the query and the Cookie header before anything reaches the sandbox.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace asb::api {

/// The query parameter of a preview URL's first request.
inline constexpr std::string_view kPreviewTokenParam = "_asb_preview_token";
/// The one cookie name of every preview host before 2026-12-05; still read (PreviewCookieName).
inline constexpr std::string_view kLegacyPreviewCookie = "_asb_preview_token";
/// What the names of preview cookies start with ("__Host-" before it under https).
inline constexpr std::string_view kPreviewCookiePrefix = "_asb_pv_";

/// The longest a preview token's ttl_seconds may be by default (--preview-max-ttl-seconds), and
/// what a request without ttl_seconds gets (at most the maximum).
inline constexpr int64_t kDefaultPreviewMaxTtlSeconds = 24 * 3600;
inline constexpr int64_t kDefaultPreviewTtlSeconds = 3600;
/// Live preview tokens one sandbox may have at once.
inline constexpr int64_t kMaxPreviewTokensPerSandbox = 100;

/// How the server hands out preview URLs (ServeConfig: --preview-domain, --preview-scheme,
/// --preview-max-ttl-seconds).
struct PreviewOptions {
  /// The domain the preview hosts sit under, with the port clients use when it is not the
  /// scheme's default: "preview.example.com", "localhost:8080". Hosts are matched on the name
  /// only (a proxy in front may use another port).
  std::string domain = "localhost:8080";
  /// "http" or "https" (the cookie is then Secure). The server itself speaks HTTP; https is
  /// for a TLS proxy in front of it.
  std::string scheme = "http";
  int64_t max_ttl_seconds = kDefaultPreviewMaxTtlSeconds;
};

/// What a preview host names: a sandbox id ("sb_" + 16 hex) and the port's digits (1 to 5
/// digits; the range is checked by the handler).
struct PreviewHost {
  std::string sandbox_id;
  std::string port;
};

/// Whether the Host header `host` names a preview host under `domain` (PreviewOptions::domain):
/// one label "<digits>-sb-<16 lowercase hex>" then exactly the domain's name; case-insensitive,
/// any port. nullopt for every other host (those are the API's).
std::optional<PreviewHost> ParsePreviewHost(std::string_view host, std::string_view domain);

/// "8000-sb-3f9a0c1d2e4b5a69.<domain>" for sandbox "sb_3f9a0c1d2e4b5a69" (DNS labels have no
/// '_', so the id's underscore is written '-').
std::string PreviewHostName(std::string_view domain, std::string_view sandbox_id, int64_t port);

/// The URL a browser opens: "<scheme>://<host>/?_asb_preview_token=<token>".
std::string PreviewUrl(const PreviewOptions& options, std::string_view sandbox_id, int64_t port,
                       std::string_view token);

/// Checks a --preview-domain value: DNS labels of [a-z0-9-] separated by dots, optionally
/// ":<port>" (1..65535). Errors: kInvalidArgument naming what is wrong.
Status ValidatePreviewDomain(std::string_view domain);

/// The request target `target` ("/a?x=1&_asb_preview_token=t") without any query parameter
/// whose decoded name is `name`; the rest is kept byte for byte ("/a?x=1"). `*value` gets the
/// decoded value of the last one, or stays nullopt when there is none.
std::string RemoveQueryParam(std::string_view target, std::string_view name,
                             std::optional<std::string>* value);

/// The name of the cookie that carries a preview host's token: "_asb_pv_<port>_<sandbox id>",
/// and under https "__Host-" before it, a prefix browsers accept only on a host-only, Secure,
/// Path=/ cookie. The name carries the host, and a sibling preview host (another tenant's app
/// under the same --preview-domain) can set a cookie of that name for the whole domain only
/// over http; there the server tries each candidate (RemovePreviewCookies). ADR 0014, round 3:
/// one name for every host let any app shadow every other host's cookie.
std::string PreviewCookieName(std::string_view sandbox_id, int64_t port, bool secure);

/// A Cookie header's value without any preview cookie: every cookie whose name starts with
/// kPreviewCookiePrefix (with or without "__Host-") or is kLegacyPreviewCookie, so that no
/// preview token, this host's or one tossed in from another, reaches an app ("" when nothing is
/// left). `*candidates` gets, in header order, the values of the cookies this host may take a
/// token from: those named `own_name` and the legacy name.
std::string RemovePreviewCookies(std::string_view header, std::string_view own_name,
                                 std::vector<std::string>* candidates);

/// The Set-Cookie value that carries `token` on a preview host as cookie `name`
/// (PreviewCookieName): host-only (no Domain), Path=/, Max-Age `max_age_seconds`, HttpOnly,
/// SameSite=Lax, and Secure when `secure`.
std::string PreviewSetCookie(std::string_view name, std::string_view token, int64_t max_age_seconds,
                             bool secure);

}  // namespace asb::api
