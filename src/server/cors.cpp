#include "server/cors.h"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>

namespace kite::server {

namespace {

bool same_origin(std::string_view a, std::string_view b) {
    // Scheme and host are case-insensitive; browsers send them in lower case anyway.
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
               return std::tolower(static_cast<unsigned char>(x)) ==
                      std::tolower(static_cast<unsigned char>(y));
           });
}

}  // namespace

bool valid_cors_origin(std::string_view origin) {
    if (origin == "*") return true;
    const size_t sep = origin.find("://");
    if (sep == std::string_view::npos || sep == 0) return false;
    const std::string_view scheme = origin.substr(0, sep), host = origin.substr(sep + 3);
    const bool scheme_ok =
        std::isalpha(static_cast<unsigned char>(scheme[0])) &&
        std::all_of(scheme.begin(), scheme.end(), [](char c) {
            return std::isalnum(static_cast<unsigned char>(c)) || c == '+' || c == '-' || c == '.';
        });
    const bool host_ok = !host.empty() && std::none_of(host.begin(), host.end(), [](char c) {
        return c == '/' || c == '?' || c == '#' || static_cast<unsigned char>(c) <= ' ' ||
               c == 0x7f;
    });
    return scheme_ok && host_ok;
}

CorsPolicy::CorsPolicy(std::vector<std::string> origins) : origins_(std::move(origins)) {
    any_ = std::find(origins_.begin(), origins_.end(), "*") != origins_.end();
}

std::optional<std::string> CorsPolicy::allow_origin(const HttpRequest& req) const {
    if (!enabled()) return std::nullopt;
    const std::string origin = req.get_header_value("Origin");
    if (origin.empty()) return std::nullopt;  // not a cross-origin request from a browser
    if (any_) return "*";
    for (const std::string& allowed : origins_)
        if (same_origin(origin, allowed)) return origin;
    return std::nullopt;
}

void CorsPolicy::add_headers(const HttpRequest& req, HttpResponse& res) const {
    const std::optional<std::string> allowed = allow_origin(req);
    if (!allowed) return;
    res.headers.emplace_back("Access-Control-Allow-Origin", *allowed);
    // The answer depends on the Origin: caches must not hand it to another origin.
    if (!any_) res.headers.emplace_back("Vary", "Origin");
}

bool CorsPolicy::answer_preflight(const HttpRequest& req, HttpResponse& res) const {
    // Without Origin it is no browser's preflight: OPTIONS is then routed like any method.
    if (!enabled() || req.method != "OPTIONS" || req.get_header_value("Origin").empty())
        return false;
    if (!allow_origin(req)) {
        res.status = 403;
        return true;
    }
    res.status = 204;  // Access-Control-Allow-Origin is the caller's to add, as on any answer
    res.headers.emplace_back("Access-Control-Allow-Methods", "GET, POST, OPTIONS");
    // What the browser asks for, else what the API uses (the key, JSON bodies).
    const std::string asked = req.get_header_value("Access-Control-Request-Headers");
    res.headers.emplace_back("Access-Control-Allow-Headers",
                             asked.empty() ? "Authorization, Content-Type" : asked);
    res.headers.emplace_back("Access-Control-Max-Age", fmt::format("{}", kMaxAgeSeconds));
    return true;
}

}  // namespace kite::server
