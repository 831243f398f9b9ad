// What the compiler can tell about two oneOf branches: oneOf is taken as anyOf only when no
// instance can match two branches, and two branches that may overlap can sometimes be told
// apart by a property only one of them requires.
#pragma once

#include <functional>
#include <optional>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

namespace kite::grammar {

// "object", "array", "string", "number", "boolean" or "null".
std::string json_type_name(const nlohmann::ordered_json& v);

class BranchOverlap {
  public:
    using json = nlohmann::ordered_json;
    using Resolve = std::function<const json&(const std::string&)>;

    explicit BranchOverlap(Resolve resolve) : resolve_(std::move(resolve)) {}

    // No instance matches both: their listed values (enum/const) or their types differ, or
    // both are objects requiring a property whose listed values differ (a discriminator).
    bool disjoint(const json& a, const json& b) const;

    // When `a` and `b` overlap at most in objects: a property `b` requires and `a` does not,
    // which `a` is then compiled without ("" when one of them forbids a property the other
    // requires: they are apart already); else nullopt. Exact when it is the only such
    // property, narrower otherwise.
    std::optional<std::string> told_apart_by(const json& a, const json& b) const;

  private:
    // The JSON types a branch may produce, when it says (else all; integer counts as number).
    std::set<std::string> types_of(const json& s, int depth = 0) const;
    const json& deref(const json& s) const;
    // The values a schema lists (enum or const), else null.
    json listed_values(const json& s) const;
    // The object may not have property `name`: declared false, or undeclared where no
    // other property may be.
    static bool forbids(const json& s, const std::string& name);

    Resolve resolve_;
};

}  // namespace kite::grammar
