// Parses tokens into statements and expressions, with Jinja2's grammar and operator
// precedence. Nesting is bounded so that hostile input cannot exhaust the stack.
#pragma once

#include <string_view>

#include "template/ast.h"

namespace kite::tmpl {

inline constexpr int kMaxNesting = 200;

Body parse_template(std::string_view source);

}  // namespace kite::tmpl
