// A whole small file as a string (a prompt, a chat template, a schema, a grammar), for the
// commands and layers that take one by name.
#pragma once

#include <string>
#include <string_view>

namespace kite {

// Throws kite::Error "cannot read <what> '<path>': <reason>" when it cannot be read.
std::string read_text_file(const std::string& path, std::string_view what);

}  // namespace kite
