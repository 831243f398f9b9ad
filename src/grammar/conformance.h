// The model-free conformance check of JSON Schema constraints (JSONSchemaBench's method):
// compile a schema, then feed each test instance's tokens, checking each against the token
// mask, and require the matcher may stop at the end. Valid instances must be accepted,
// invalid ones refused.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "grammar/token_trie.h"

namespace kite::grammar {

struct CaseResult {
    std::string id;
    bool compiled = false;
    std::string error;
    std::vector<bool> accepted;  // per test instance
    std::vector<bool> valid;     // per test instance: its label
    double compile_us = 0;
    std::vector<double> mask_us;  // one per token fed
};

using Encode = std::function<std::vector<int32_t>(const std::string&)>;

// `schema_case`: {"id", "schema", "tests": [{"valid", "data"}...]}. token_bytes: each token's
// bytes, as the trie was built from.
CaseResult check_case(const nlohmann::ordered_json& schema_case, const TokenTrie& trie,
                      const std::vector<std::string>& token_bytes, const Encode& encode);

// The compact serialisation the check feeds (json.dumps with separators (",", ":"),
// ensure_ascii=False, keys in the instance's order).
std::string compact_json(const nlohmann::ordered_json& value);

struct Summary {
    size_t schemas = 0, compiled = 0, passing = 0;
    size_t instances = 0, validation_errors = 0, invalidation_errors = 0;
    double mask_p50 = 0, mask_p99 = 0, compile_p50 = 0;
};

Summary summarize(const std::vector<CaseResult>& results);

nlohmann::ordered_json to_json(const CaseResult& r);
nlohmann::ordered_json to_json(const Summary& s);

}  // namespace kite::grammar
