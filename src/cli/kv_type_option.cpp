#include "cli/kv_type_option.h"

#include <vector>

namespace kite::cli {

namespace {

CLI::Validator kv_type_name() {
    std::vector<std::string> names;
    for (const KvTypeInfo& t : kv_types()) names.emplace_back(t.name);
    return CLI::IsMember(names);
}

TensorType parse(const std::string& name) {
    return *parse_kv_type(name);  // the flags' check admits only the table's names
}

}  // namespace

void KvTypeOptions::add_to(CLI::App& cmd) {
    const std::string names = kv_type_names();
    cmd.add_option("--kv-type", both, "KV-cache element type of keys and values: " + names)
        ->check(kv_type_name())
        ->capture_default_str();
    cmd.add_option("--kv-type-k", keys, "KV-cache type of the keys (default: --kv-type)")
        ->check(kv_type_name());
    cmd.add_option("--kv-type-v", values, "KV-cache type of the values (default: --kv-type)")
        ->check(kv_type_name());
}

KvTypes KvTypeOptions::types() const {
    return {parse(keys.empty() ? both : keys), parse(values.empty() ? both : values)};
}

}  // namespace kite::cli
