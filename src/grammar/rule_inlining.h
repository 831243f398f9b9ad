// A GBNF rule whose references never lead back to it describes a regular language: with each
// reference written out in place it is one expression without Refs, which GrammarBuilder can
// build as one automaton. root ::= (word " "?)+ with word ::= [a-z]+ is as ambiguous as the
// regex ([a-z]+ " "?)+ (a letter may end a word or not), and lowered as written it leaves the
// matcher one item per letter of the current run; written out, it holds a fixed number.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "grammar/expr.h"

namespace kite::grammar {

// Whether `e` refers to a rule.
bool refers(const Expr& e);

class RuleInliner {
  public:
    // The rules by name; they must outlive the inliner.
    explicit RuleInliner(const std::map<std::string, Expr>& rules);

    // `name`'s body with every reference written out, or nullopt where a rule it reaches is
    // undefined or leads back to itself, where the result would pass kMaxNodes nodes or
    // kMaxDepth levels, or where the grammar's budget of written-out nodes is spent (each
    // call writes its result out anew).
    std::optional<Expr> inlined(const std::string& name);

    static constexpr uint64_t kMaxNodes = 2048;
    static constexpr uint32_t kMaxDepth = 200;
    static constexpr uint64_t kBudget = uint64_t{1} << 18;

  private:
    // A rule's body written out: its nodes (saturating past kMaxNodes) and nesting.
    struct Size {
        bool ok = false;
        uint64_t nodes = 0;
        uint32_t depth = 0;
    };
    void measure_all();
    Size measure(const Expr& e) const;
    Expr write_out(const Expr& e) const;

    const std::map<std::string, Expr>& rules_;
    std::map<std::string, Size> sizes_;
    uint64_t budget_ = kBudget;
};

}  // namespace kite::grammar
