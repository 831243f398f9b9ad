// The KV-cache type flags of every command that sizes or runs a KV cache: --kv-type for keys
// and values, --kv-type-k and --kv-type-v for either alone. A name that is not a KV type
// (kv/kv_type.h) is bad input: one line naming the flag and the types, exit code 1, before
// anything loads (kite serve does not start).
#pragma once

#include <string>

#include <CLI/CLI.hpp>

#include "kv/kv_type.h"

namespace kite::cli {

struct KvTypeOptions {
    std::string both = "f16";
    std::string keys, values;  // empty: `both`

    void add_to(CLI::App& cmd);
    KvTypes types() const;
};

}  // namespace kite::cli
