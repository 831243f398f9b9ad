// Cross-origin access for browser clients (kite serve --cors-origin): the origins allowed
// ("*": any) get Access-Control-Allow-Origin on their responses, and their OPTIONS
// preflight requests are answered 204 with the methods and headers they may use. With no
// origin configured, no CORS header is ever sent and OPTIONS is not a route.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "server/http_message.h"

namespace kite::server {

// Whether `origin` is what --cors-origin takes: "*" or scheme://host[:port] (no path, no
// trailing slash: what browsers send in Origin, so that it can ever match).
bool valid_cors_origin(std::string_view origin);

class CorsPolicy {
  public:
    CorsPolicy() = default;
    explicit CorsPolicy(std::vector<std::string> origins);

    bool enabled() const { return !origins_.empty(); }
    // Adds Access-Control-Allow-Origin (and Vary: Origin unless any origin is allowed) when
    // the request comes from an allowed origin.
    void add_headers(const HttpRequest& req, HttpResponse& res) const;
    // For an OPTIONS request with CORS on: answers the preflight (204 for an allowed origin,
    // 403 for another) and returns true; add_headers() then adds the origin as on any
    // response. False: not a preflight, route it as usual.
    bool answer_preflight(const HttpRequest& req, HttpResponse& res) const;

    static constexpr int kMaxAgeSeconds = 86400;  // browsers cap it lower; one day is plenty

  private:
    // The Access-Control-Allow-Origin value for a request's Origin; none: not allowed.
    std::optional<std::string> allow_origin(const HttpRequest& req) const;

    std::vector<std::string> origins_;
    bool any_ = false;
};

}  // namespace kite::server
