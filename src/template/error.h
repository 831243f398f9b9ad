// Errors raised while parsing or rendering a template. They derive from kite::Error so a bad
// template in a model file reaches the user as one line, like any other bad input.
#pragma once

#include <fmt/format.h>

#include "core/error.h"

namespace kite::tmpl {

class TemplateError : public Error {
  public:
    using Error::Error;
};

template <typename... Args>
[[noreturn]] void template_fail(fmt::format_string<Args...> format, Args&&... args) {
    throw TemplateError(fmt::format(format, std::forward<Args>(args)...));
}

}  // namespace kite::tmpl
