// CLI11 validators for flag values the built-in ones let through: sizes ("512M", never
// empty), seeds (unsigned 64-bit, no sign, no wrap-around) and finite numbers (no NaN or
// infinity). A value they refuse is a usage error: one line, exit 2.
#pragma once

#include <CLI/CLI.hpp>

namespace kite::cli {

// A byte size as parse_bytes reads it: "256M", "2G", "1000000".
CLI::Validator size_value();
// A decimal integer from 0 to 2^64 - 1.
CLI::Validator seed_value();
// A finite number (CLI::Range and CLI::PositiveNumber let NaN through).
CLI::Validator finite_number();

}  // namespace kite::cli
