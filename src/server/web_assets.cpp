#include "server/web_assets.h"

#include <algorithm>
#include <array>
#include <utility>

namespace kite::server {

const char* const kPageSecurityPolicy =
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'";

namespace {

constexpr std::array<std::pair<std::string_view, std::string_view>, 5> kContentTypes{{
    {".html", "text/html; charset=utf-8"},
    {".js", "text/javascript; charset=utf-8"},
    {".css", "text/css; charset=utf-8"},
    {".svg", "image/svg+xml"},
    {".json", "application/json"},
}};

}  // namespace

const WebAsset* find_web_asset(std::string_view path) {
    const auto assets = web_assets();
    const auto it = std::find_if(assets.begin(), assets.end(),
                                 [&](const WebAsset& a) { return a.path == path; });
    return it == assets.end() ? nullptr : &*it;
}

std::string_view web_content_type(std::string_view path) {
    if (path == "/") return kContentTypes[0].second;
    for (const auto& [ext, type] : kContentTypes)
        if (path.ends_with(ext)) return type;
    return "application/octet-stream";
}

}  // namespace kite::server
