// The methods of str, list and dict that templates call (`s.strip()`, `d.items()`, ...). As in
// Jinja2's immutable sandbox, methods that modify a list or dict are refused.
#pragma once

#include <optional>
#include <string>

#include "template/value.h"

namespace kite::tmpl {

// `object.name` as a bound method; an Undefined that raises when called for a refused one;
// nothing when the type has no such method.
std::optional<Value> method(const Value& object, const std::string& name);

}  // namespace kite::tmpl
