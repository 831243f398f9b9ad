#include "server/api_error.h"

namespace kite::server {

nlohmann::json ApiError::to_json() const {
    nlohmann::json e = {{"message", what()},
                        {"type", type},
                        {"param", param.empty() ? nlohmann::json() : nlohmann::json(param)},
                        {"code", code.empty() ? nlohmann::json() : nlohmann::json(code)}};
    return {{"error", e}};
}

nlohmann::json error_body(int status, const std::string& message) {
    const char* type = status == 401   ? "authentication_error"
                       : status == 404 ? "not_found_error"
                       : status >= 500 ? "server_error"
                                       : "invalid_request_error";
    return ApiError(status, message, "", type).to_json();
}

}  // namespace kite::server
