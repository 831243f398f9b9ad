// The functions a template can call by name: range, namespace, dict, and transformers'
// raise_exception and strftime_now.
#pragma once

#include "template/renderer.h"

namespace kite::tmpl {

void add_globals(Dict& root);

}  // namespace kite::tmpl
