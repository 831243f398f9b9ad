// A context-free grammar over bytes, flattened for the Earley matcher: every production is a
// run of elements in one array, ended by an End element naming its rule. An element matches
// one byte from a set, or a whole rule. Front ends build Expr trees of named rules and hand
// them to GrammarBuilder, which lowers classes to UTF-8 byte patterns and repetitions to
// helper rules.
#pragma once

#include <array>
#include <bitset>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/error.h"
#include "grammar/expr.h"

namespace kite::grammar {

// A grammar that cannot be built (an undefined rule, an empty language, too large); the
// message names the problem. Front ends throw it for input they cannot compile.
class GrammarError : public Error {
  public:
    using Error::Error;
};

struct Element {
    enum class Kind : uint8_t { Bytes, Rule, End };
    Kind kind = Kind::End;
    uint32_t id = 0;  // Bytes: index into byte_sets; Rule, End: the rule
};

struct Grammar {
    std::vector<Element> elements;                   // productions, each ended by End
    std::vector<std::vector<uint32_t>> productions;  // per rule: where its productions start
    std::vector<std::bitset<256>> byte_sets;
    std::vector<uint8_t> nullable;  // per rule: it matches the empty string
    std::vector<std::string> names;
    uint32_t root = 0;
    // Per element: the fewest bytes from it to the End of its production (what finishing the
    // production still takes), and the rule that production belongs to.
    std::vector<uint64_t> rest_length;
    std::vector<uint32_t> rule_of;
};

class GrammarBuilder {
  public:
    // Rules may be referenced before they are defined; every referenced rule must be defined
    // by build(). Defining a rule twice adds alternatives.
    void define(const std::string& name, Expr expr);
    bool defined(const std::string& name) const;

    // Throws GrammarError when a referenced rule is undefined, when `root` matches nothing,
    // or when the grammar grows past the size limit (huge counted repetitions).
    std::shared_ptr<const Grammar> build(const std::string& root);

  private:
    uint32_t rule_id(const std::string& name);
    uint32_t new_helper(const std::string& base);
    void add_production(uint32_t rule, const std::vector<Element>& seq);
    void lower(const Expr& e, std::vector<Element>& out);
    void lower_class(const Expr& e, std::vector<Element>& out);
    void lower_repeat(const Expr& e, std::vector<Element>& out);
    void lower_regular(const Expr& e, std::vector<Element>& out);
    Element as_element(const Expr& e);
    uint32_t byte_set(const std::bitset<256>& set);
    void finish();

    Grammar g_;
    std::map<std::string, uint32_t> ids_;
    std::vector<uint8_t> has_definition_;
    std::vector<std::vector<std::vector<Element>>> rules_;
    struct WordsHash {
        size_t operator()(const std::array<uint64_t, 4>& w) const {
            return w[0] * 0x9E3779B97F4A7C15ULL ^ w[1] * 0xC2B2AE3D27D4EB4FULL ^
                   w[2] * 0x165667B19E3779F9ULL ^ w[3];
        }
    };
    std::unordered_map<std::array<uint64_t, 4>, uint32_t, WordsHash> byte_set_ids_;
    size_t size_ = 0;
    size_t automaton_states_ = 0;  // built by lower_regular so far (grammar_builder.cpp)
};

}  // namespace kite::grammar
