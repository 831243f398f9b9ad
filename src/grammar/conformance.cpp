#include "grammar/conformance.h"

#include <algorithm>
#include <chrono>

#include "grammar/json_schema.h"
#include "grammar/matcher.h"

namespace kite::grammar {

namespace {

using Clock = std::chrono::steady_clock;

double micros_since(Clock::time_point start) {
    return std::chrono::duration<double, std::micro>(Clock::now() - start).count();
}

bool allowed(const std::vector<uint64_t>& mask, int32_t t) {
    return t >= 0 && static_cast<size_t>(t >> 6) < mask.size() && ((mask[t >> 6] >> (t & 63)) & 1);
}

double percentile(std::vector<double> v, double p) {
    if (v.empty()) return 0;
    const size_t k = std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())));
    std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
    return v[k];
}

}  // namespace

std::string compact_json(const nlohmann::ordered_json& value) {
    return value.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

CaseResult check_case(const nlohmann::ordered_json& schema_case, const TokenTrie& trie,
                      const std::vector<std::string>& token_bytes, const Encode& encode) {
    CaseResult r;
    r.id = schema_case.value("id", "");
    const nlohmann::ordered_json tests =
        schema_case.value("tests", nlohmann::ordered_json::array());
    for (const auto& t : tests) r.valid.push_back(t.value("valid", false));
    std::shared_ptr<const Grammar> grammar;
    const auto start = Clock::now();
    try {
        grammar = compile_json_schema(schema_case.at("schema"));
        r.compiled = true;
    } catch (const std::exception& e) {
        r.error = e.what();
    }
    r.compile_us = micros_since(start);
    if (!r.compiled) return r;
    std::vector<uint64_t> mask;
    MaskCache cache;
    for (const auto& t : tests) {
        Matcher m(grammar);
        bool ok = true;
        for (int32_t token : encode(compact_json(t.at("data")))) {
            const auto mask_start = Clock::now();
            m.allowed_tokens(trie, mask, &cache);
            r.mask_us.push_back(micros_since(mask_start));
            if (!allowed(mask, token) || !m.advance(token_bytes[token])) {
                ok = false;
                break;
            }
        }
        r.accepted.push_back(ok && m.can_stop());
    }
    return r;
}

Summary summarize(const std::vector<CaseResult>& results) {
    Summary s;
    std::vector<double> masks, compiles;
    for (const CaseResult& r : results) {
        ++s.schemas;
        compiles.push_back(r.compile_us);
        if (!r.compiled) continue;
        ++s.compiled;
        bool pass = true;
        for (size_t i = 0; i < r.accepted.size(); ++i) {
            ++s.instances;
            if (r.valid[i] && !r.accepted[i]) ++s.validation_errors;
            if (!r.valid[i] && r.accepted[i]) ++s.invalidation_errors;
            pass = pass && r.valid[i] == r.accepted[i];
        }
        s.passing += pass;
        masks.insert(masks.end(), r.mask_us.begin(), r.mask_us.end());
    }
    s.mask_p50 = percentile(masks, 0.5);
    s.mask_p99 = percentile(masks, 0.99);
    s.compile_p50 = percentile(compiles, 0.5);
    return s;
}

nlohmann::ordered_json to_json(const CaseResult& r) {
    nlohmann::ordered_json j;
    j["id"] = r.id;
    j["compiled"] = r.compiled;
    if (!r.compiled) j["error"] = r.error;
    j["accepted"] = r.accepted;
    j["compile_us"] = static_cast<int64_t>(r.compile_us);
    j["mask_us_p50"] = static_cast<int64_t>(percentile(r.mask_us, 0.5));
    j["mask_us_p99"] = static_cast<int64_t>(percentile(r.mask_us, 0.99));
    return j;
}

nlohmann::ordered_json to_json(const Summary& s) {
    nlohmann::ordered_json j;
    j["schemas"] = s.schemas;
    j["compiled"] = s.compiled;
    j["passing"] = s.passing;
    j["instances"] = s.instances;
    j["validation_errors"] = s.validation_errors;
    j["invalidation_errors"] = s.invalidation_errors;
    j["mask_us_p50"] = s.mask_p50;
    j["mask_us_p99"] = s.mask_p99;
    j["compile_us_p50"] = s.compile_p50;
    return j;
}

}  // namespace kite::grammar
