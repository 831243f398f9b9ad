#include "core/text_file.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

#include "core/error.h"

namespace kite {

std::string read_text_file(const std::string& path, std::string_view what) {
    std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(path.c_str(), "rb"), std::fclose);
    if (!f) fail("cannot read {} '{}': {}", what, path, std::strerror(errno));
    std::string text;
    char buffer[1 << 16];
    size_t n;
    while ((n = std::fread(buffer, 1, sizeof buffer, f.get())) > 0) text.append(buffer, n);
    if (std::ferror(f.get())) fail("cannot read {} '{}': {}", what, path, std::strerror(errno));
    return text;
}

}  // namespace kite
