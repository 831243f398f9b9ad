// Jinja2's builtin tests (`x is name(args)`): defined, none, string, mapping, iterable, ...
#pragma once

#include <string>

#include "template/value.h"

namespace kite::tmpl {

bool apply_test(const std::string& name, const Value& subject, CallArgs& args, Renderer& r);

}  // namespace kite::tmpl
