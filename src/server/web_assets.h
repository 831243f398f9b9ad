// The chat page that `kite serve` answers at / : its own files (src/server/web) and the
// Markdown libraries it uses, compiled into the program. cmake/web_assets.cmake writes their
// bytes into web_assets_data.cpp in the build folder, so the page needs no files at run time.
#pragma once

#include <span>
#include <string_view>

namespace kite::server {

struct WebAsset {
    std::string_view path;  // as requested: "/", "/assets/app.js"
    std::string_view body;
};

// Every embedded file (defined in the generated web_assets_data.cpp).
std::span<const WebAsset> web_assets();

// The file served at path, or nullptr.
const WebAsset* find_web_asset(std::string_view path);

// The Content-Type for a file, from its extension ("text/html; charset=utf-8" for "/").
std::string_view web_content_type(std::string_view path);

// The headers every page response carries: a Content-Security-Policy that allows only the
// page's own scripts, styles and requests (no inline code, no other origin), so model output
// that slipped past the Markdown sanitizer still could not run or load anything.
extern const char* const kPageSecurityPolicy;

}  // namespace kite::server
