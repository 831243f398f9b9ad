// The tables behind methods.h: each type's methods by name. One file holds each type's.
#pragma once

#include <string_view>
#include <unordered_map>

#include "template/call_args.h"
#include "template/value.h"

namespace kite::tmpl {

using Method = Value (*)(const Value& self, CallArgs& args, Renderer& r);
using MethodTable = std::unordered_map<std::string_view, Method>;

const MethodTable& str_methods();
const MethodTable& list_methods();  // tuples have index and count only
const MethodTable& dict_methods();

// Python's arity check for a builtin method: `name` takes from `min` to `max` arguments.
inline void expect_args(const CallArgs& args, size_t min, size_t max, std::string_view name) {
    const size_t given = args.positional.size() + args.keyword.size();
    if (given < min || given > max)
        template_fail("TypeError: {}() takes from {} to {} arguments ({} given)", name, min, max,
                      given);
}

}  // namespace kite::tmpl
