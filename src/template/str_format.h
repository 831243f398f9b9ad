// Python's str.format and str.format_map as jinja2's sandbox runs them: replacement fields
// {}, {0}, {name}, with .attribute and [index] lookups (through the template's own getattr and
// getitem), !r/!s/!a conversions and format specs, nested {} fields in specs included.
#pragma once

#include <string>
#include <string_view>

#include "template/value.h"

namespace kite::tmpl {

// format_string.format(*args.positional, **args.keyword); with `mapping`, format_map(mapping)
// (fields by name look up the mapping, and there are no positional arguments).
std::string str_format(std::string_view format_string, const CallArgs& args, const Value* mapping,
                       Renderer& r);

}  // namespace kite::tmpl
