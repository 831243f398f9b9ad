#include "cli/kv_type_option.h"

#include "core/error.h"

namespace kite::cli {

namespace {

// An unknown type is bad input, not a malformed flag (exit 1, not CLI11's usage error 2): the
// check throws kite::Error, which CLI11 lets through its parse, so the command stops there.
CLI::Validator kv_type_name(const std::string& flag) {
    return CLI::Validator(
        [flag](std::string& name) -> std::string {
            if (!parse_kv_type(name))
                fail("{} '{}' is not a KV-cache type (supported: {})", flag, name, kv_type_names());
            return "";
        },
        "TYPE");
}

TensorType parse(const std::string& name) {
    return *parse_kv_type(name);  // the flags' check admits only the table's names
}

}  // namespace

void KvTypeOptions::add_to(CLI::App& cmd) {
    const std::string names = kv_type_names();
    cmd.add_option("--kv-type", both, "KV-cache element type of keys and values: " + names)
        ->check(kv_type_name("--kv-type"))
        ->capture_default_str();
    cmd.add_option("--kv-type-k", keys, "KV-cache type of the keys (default: --kv-type)")
        ->check(kv_type_name("--kv-type-k"));
    cmd.add_option("--kv-type-v", values, "KV-cache type of the values (default: --kv-type)")
        ->check(kv_type_name("--kv-type-v"));
}

KvTypes KvTypeOptions::types() const {
    return {parse(keys.empty() ? both : keys), parse(values.empty() ? both : values)};
}

}  // namespace kite::cli
