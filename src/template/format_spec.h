// Python's format(value, spec): the format specification mini-language that str.format
// applies to each field ([[fill]align][sign][#][0][width][grouping][.precision][type]).
#pragma once

#include <string>
#include <string_view>

#include "template/value.h"

namespace kite::tmpl {

// format(v, spec) as Python writes it for str, int, bool, float and None; a spec Python would
// refuse (or one this engine does not support) raises a TemplateError saying why.
std::string format_value(const Value& v, std::string_view spec);

}  // namespace kite::tmpl
