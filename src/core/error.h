// Errors Kite reports to its user: one line that names the problem (and the file).
#pragma once

#include <stdexcept>
#include <string>

#include <fmt/format.h>

namespace kite {

// Bad input from outside: a file, a flag, a request. The CLI prints what() and exits 1.
class Error : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
};

template <typename... Args>
[[noreturn]] void fail(fmt::format_string<Args...> format, Args&&... args) {
    throw Error(fmt::format(format, std::forward<Args>(args)...));
}

}  // namespace kite
