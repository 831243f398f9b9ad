// Reading a builtin's arguments the way Python binds them: by position or by keyword.
#pragma once

#include <string_view>

#include "template/error.h"
#include "template/value.h"

namespace kite::tmpl {

// The argument at `position` or named `name`, else `fallback`.
inline Value arg(const CallArgs& args, size_t position, std::string_view name,
                 Value fallback = Value()) {
    if (position < args.positional.size()) return args.positional[position];
    for (const auto& [key, value] : args.keyword)
        if (key == name) return value;
    return fallback;
}

inline std::string string_arg(const CallArgs& args, size_t position, std::string_view name,
                              std::string_view what) {
    Value v = arg(args, position, name);
    if (!v.is_string()) template_fail("TypeError: {} expects a string for '{}'", what, name);
    return v.str();
}

inline int64_t int_arg(const CallArgs& args, size_t position, std::string_view name,
                       int64_t fallback, std::string_view what) {
    Value v = arg(args, position, name, Value(fallback));
    if (!v.is_int() && !v.is_bool())
        template_fail("TypeError: {} expects an integer for '{}'", what, name);
    return v.as_int();
}

}  // namespace kite::tmpl
