#include "grammar/constraint.h"

#include <iterator>

#include <nlohmann/json.hpp>

#include "grammar/gbnf.h"
#include "grammar/json_schema.h"
#include "grammar/json_values.h"
#include "grammar/regex.h"

namespace kite::grammar {

namespace {

using ojson = nlohmann::ordered_json;

// A grammar whose root is `body` between the spec's literal frame.
std::shared_ptr<const Grammar> framed(GrammarBuilder& b, const ConstraintSpec& spec, Expr body) {
    b.define("root", seq({lit(spec.before), std::move(body), lit(spec.after)}));
    return b.build("root");
}

std::shared_ptr<const Grammar> json_schema(const ConstraintSpec& spec) {
    const ojson schema = ojson::parse(spec.text, nullptr, false);
    if (schema.is_discarded()) throw GrammarError("the schema is not valid JSON");
    if (!schema.is_object() && !schema.is_boolean())
        throw GrammarError("a schema must be a JSON object (or true/false)");
    return compile_json_schema(schema, spec.before, spec.after);
}

std::shared_ptr<const Grammar> json_object(const ConstraintSpec& spec) {
    GrammarBuilder b;
    define_json_rules(b);
    return framed(b, spec, ref("json_object"));
}

std::shared_ptr<const Grammar> regex(const ConstraintSpec& spec) {
    GrammarBuilder b;
    return framed(b, spec, regular(regex_to_expr(spec.text, RegexMatch::Full)));
}

std::shared_ptr<const Grammar> gbnf(const ConstraintSpec& spec) {
    if (!spec.before.empty() || !spec.after.empty())
        throw GrammarError("a GBNF grammar cannot be framed; write the frame in the grammar");
    return compile_gbnf(spec.text);
}

std::shared_ptr<const Grammar> choice(const ConstraintSpec& spec) {
    const ojson list = ojson::parse(spec.text, nullptr, false);
    if (!list.is_array() || list.empty())
        throw GrammarError("the choices must be a non-empty JSON array of strings");
    std::vector<Expr> options;
    for (const ojson& c : list) {
        if (!c.is_string()) throw GrammarError("every choice must be a string");
        options.push_back(lit(c.get<std::string>()));
    }
    GrammarBuilder b;
    return framed(b, spec, alt(std::move(options)));
}

using Compile = std::shared_ptr<const Grammar> (*)(const ConstraintSpec&);

// Indexed by ConstraintKind.
constexpr Compile kCompilers[] = {json_schema, json_object, regex, gbnf, choice};
static_assert(std::size(kCompilers) == static_cast<size_t>(ConstraintKind::Choice) + 1);

std::string cache_key(const ConstraintSpec& spec) {
    std::string key;
    key.reserve(spec.text.size() + spec.before.size() + spec.after.size() + 24);
    for (const std::string* part : {&spec.before, &spec.after}) {
        key += std::to_string(part->size());
        key += ':';
        key += *part;
    }
    key += static_cast<char>('0' + static_cast<int>(spec.kind));
    key += spec.text;
    return key;
}

}  // namespace

std::shared_ptr<const Grammar> compile_constraint(const ConstraintSpec& spec) {
    return kCompilers[static_cast<size_t>(spec.kind)](spec);
}

std::shared_ptr<Constraint> make_constraint(const ConstraintSpec& spec,
                                            std::shared_ptr<const TokenizerVocab> vocab) {
    auto constraint = std::make_shared<Constraint>();
    constraint->grammar = compile_constraint(spec);
    constraint->vocab = std::move(vocab);
    constraint->json =
        spec.kind == ConstraintKind::JsonSchema || spec.kind == ConstraintKind::JsonObject;
    constraint->json_after = spec.before.size();
    return constraint;
}

ConstraintCache::ConstraintCache(std::shared_ptr<const TokenizerVocab> vocab, size_t max_entries)
    : vocab_(std::move(vocab)), max_entries_(max_entries) {}

std::shared_ptr<const Constraint> ConstraintCache::get(const ConstraintSpec& spec) {
    const std::string key = cache_key(spec);
    {
        std::lock_guard lock(mutex_);
        if (auto it = by_key_.find(key); it != by_key_.end()) {
            recent_.splice(recent_.begin(), recent_, it->second);
            return it->second->second;
        }
    }
    // Compiled outside the lock: one slow schema does not hold up requests with cached ones.
    std::shared_ptr<const Constraint> compiled = make_constraint(spec, vocab_);
    std::lock_guard lock(mutex_);
    if (auto it = by_key_.find(key); it != by_key_.end()) return it->second->second;
    recent_.emplace_front(key, compiled);
    by_key_[key] = recent_.begin();
    if (recent_.size() > max_entries_) {
        by_key_.erase(recent_.back().first);
        recent_.pop_back();
    }
    return compiled;
}

size_t ConstraintCache::size() const {
    std::lock_guard lock(mutex_);
    return recent_.size();
}

}  // namespace kite::grammar
