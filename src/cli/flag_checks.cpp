#include "cli/flag_checks.h"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <string>

#include "cli/engine_options.h"
#include "core/error.h"

namespace kite::cli {

CLI::Validator size_value() {
    return CLI::Validator(
        [](std::string& text) -> std::string {
            try {
                (void)parse_bytes(text);
            } catch (const Error& e) {
                return e.what();
            }
            return "";
        },
        "SIZE");
}

CLI::Validator seed_value() {
    return CLI::Validator(
        [](std::string& text) -> std::string {
            uint64_t value = 0;
            const char* end = text.data() + text.size();
            const auto [ptr, ec] = std::from_chars(text.data(), end, value);
            if (text.empty() || ec != std::errc() || ptr != end)
                return "'" + text + "' is not a seed (an integer from 0 to 2^64-1)";
            return "";
        },
        "UINT64");
}

CLI::Validator finite_number() {
    return CLI::Validator(
        [](std::string& text) -> std::string {
            double value = NAN;
            try {
                size_t end = 0;
                value = std::stod(text, &end);
                if (end != text.size()) value = NAN;
            } catch (const std::exception&) {
            }
            if (!std::isfinite(value)) return "'" + text + "' is not a finite number";
            return "";
        },
        "NUMBER");
}

}  // namespace kite::cli
