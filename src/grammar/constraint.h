// An output constraint as requests name it (a JSON Schema, JSON mode, a regular expression, a
// GBNF grammar, a list of choices), compiled once into what the engine runs: the grammar,
// the vocabulary it is matched against, and the masks already computed for it.
//
// ConstraintCache compiles by content: a server that sees the same schema on every request
// compiles it once. Each entry keeps its masks (tens of MB for a large vocabulary), so few
// entries are kept, least recently used dropped first. It is safe to call from several threads (the
// HTTP workers compile before a request reaches the engine, so a slow compile never stalls the
// batch).
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "grammar/grammar.h"
#include "grammar/matcher.h"
#include "grammar/tokenizer_vocab.h"

namespace kite::grammar {

enum class ConstraintKind : uint8_t {
    JsonSchema,  // text: the schema, JSON
    JsonObject,  // any JSON object; text unused
    Regex,       // text: the pattern, matched against the whole output
    Gbnf,        // text: the grammar, llama.cpp's GBNF
    Choice,      // text: a JSON array of strings; the output is exactly one of them
};

struct ConstraintSpec {
    ConstraintKind kind = ConstraintKind::JsonObject;
    std::string text;
    // Literal text around the constrained part (a tool call's tags); empty for most.
    std::string before;
    std::string after;
};

// What one compiled constraint holds. The mask cache is written by the engine's thread only.
struct Constraint {
    std::shared_ptr<const Grammar> grammar;
    std::shared_ptr<const TokenizerVocab> vocab;
    // The output is a JSON value (a schema's, JSON mode's) after this many bytes of frame:
    // the engine keeps its objects from repeating a property name (see JsonKeyGuard).
    bool json = false;
    size_t json_after = 0;
    mutable MaskCache masks;
    mutable ClosingCache closing;  // also the engine thread's only
};

// Compiles a spec; throws GrammarError naming what cannot be compiled.
std::shared_ptr<const Grammar> compile_constraint(const ConstraintSpec& spec);
// The constraint the engine runs: the spec compiled, for `vocab`. Throws GrammarError.
std::shared_ptr<Constraint> make_constraint(const ConstraintSpec& spec,
                                            std::shared_ptr<const TokenizerVocab> vocab);

class ConstraintCache {
  public:
    explicit ConstraintCache(std::shared_ptr<const TokenizerVocab> vocab, size_t max_entries = 8);

    // The compiled constraint for `spec`, compiled now unless an equal spec was compiled
    // before. Throws GrammarError (never caches a failure's absence: a bad spec fails again).
    std::shared_ptr<const Constraint> get(const ConstraintSpec& spec);

    const TokenizerVocab& vocab() const { return *vocab_; }
    size_t size() const;

  private:
    using Entry = std::pair<std::string, std::shared_ptr<const Constraint>>;
    std::shared_ptr<const TokenizerVocab> vocab_;
    size_t max_entries_;
    mutable std::mutex mutex_;
    std::list<Entry> recent_;  // most recently used first
    std::unordered_map<std::string, std::list<Entry>::iterator> by_key_;
};

}  // namespace kite::grammar
