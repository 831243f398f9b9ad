// An error answered to an HTTP client in OpenAI's shape:
//   {"error": {"message": ..., "type": ..., "param": ..., "code": ...}}
#pragma once

#include <stdexcept>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace kite::server {

class ApiError : public std::runtime_error {
  public:
    ApiError(int status, std::string message, std::string param = "",
             std::string type = "invalid_request_error", std::string code = "")
        : std::runtime_error(message),
          status(status),
          param(std::move(param)),
          type(std::move(type)),
          code(std::move(code)) {}

    int status;
    std::string param;  // the request field at fault; empty: none
    std::string type;
    std::string code;  // empty: null

    nlohmann::json to_json() const;
};

// A 400 for request field `param`.
template <typename... Args>
[[noreturn]] void bad_request(const std::string& param, fmt::format_string<Args...> format,
                              Args&&... args) {
    throw ApiError(400, fmt::format(format, std::forward<Args>(args)...), param);
}

// The OpenAI error body for a status without a more specific message.
nlohmann::json error_body(int status, const std::string& message);

}  // namespace kite::server
