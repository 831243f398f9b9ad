// Jinja2's builtin filters that chat templates use (`x | name(args)`), plus transformers'
// tojson. An unknown filter is an error when it is reached, as in Jinja2.
#pragma once

#include <string>

#include "template/value.h"

namespace kite::tmpl {

Value apply_filter(const std::string& name, const Value& subject, CallArgs& args, Renderer& r);

}  // namespace kite::tmpl
