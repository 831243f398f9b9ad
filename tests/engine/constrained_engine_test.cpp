// Structured output in the engine on the default model: what comes out matches the
// constraint (checked by std::regex and a JSON parser, not by the grammar code), sampling
// never leaves it, speculation stays lossless under it, constrained and free sequences share
// a batch without changing each other, and a dead end stops the sequence with an error.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <regex>
#include <set>

#include <nlohmann/json.hpp>

#include "default_model_test.h"
#include "engine/engine.h"
#include "grammar/constraint.h"
#include "grammar/tokenizer_vocab.h"

namespace kite {
namespace {

using grammar::ConstraintKind;

class ConstrainedEngineTest : public test::DefaultModelTest {
  protected:
    static void SetUpTestSuite() {
        DefaultModelTest::SetUpTestSuite();
        cache_ = new grammar::ConstraintCache(
            std::make_shared<const grammar::TokenizerVocab>(grammar::tokenizer_vocab(*tokenizer_)));
    }
    static void TearDownTestSuite() {
        delete cache_;
        DefaultModelTest::TearDownTestSuite();
    }

    static std::shared_ptr<const grammar::Constraint> constraint(ConstraintKind kind,
                                                                 std::string text) {
        grammar::ConstraintSpec spec;
        spec.kind = kind;
        spec.text = std::move(text);
        return cache_->get(spec);
    }

    static EngineConfig config(int64_t draft_max = 0) {
        EngineConfig c;
        c.threads = 2;
        c.context_length = 256;
        c.max_sequences = 4;
        if (draft_max > 0) {
            c.speculation.drafter = DrafterKind::Ngram;
            c.speculation.draft_max = draft_max;
            c.speculation.adaptive_length = false;
        }
        return c;
    }

    static GenerationParams params(std::shared_ptr<const grammar::Constraint> c, float temperature,
                                   uint64_t seed = 1, int64_t max_tokens = 48) {
        GenerationParams p;
        p.sampling.temperature = temperature;
        p.sampling.seed = seed;
        p.max_tokens = max_tokens;
        p.constraint = std::move(c);
        return p;
    }

    struct Output {
        std::string text;
        std::vector<int32_t> tokens;
        FinishReason finish = FinishReason::None;
    };

    // Runs the prompts together, each with its own params.
    static std::vector<Output> generate(Engine& engine, const std::vector<std::string>& prompts,
                                        const std::vector<GenerationParams>& ps) {
        std::map<int64_t, size_t> index;
        for (size_t i = 0; i < prompts.size(); ++i)
            index[engine.submit(tokenizer_->encode(prompts[i], true, true), ps[i])] = i;
        std::vector<Output> out(prompts.size());
        while (engine.has_work())
            for (const TokenEvent& ev : engine.step()) {
                Output& o = out[index.at(ev.seq_id)];
                o.text += ev.text;
                if (ev.token >= 0) o.tokens.push_back(ev.token);
                o.finish = ev.finish;
            }
        return out;
    }

    static Output generate_one(const std::string& prompt, const GenerationParams& p,
                               int64_t draft_max = 0) {
        Engine engine(*model_, *tokenizer_, config(draft_max));
        return generate(engine, {prompt}, {p})[0];
    }

    static inline grammar::ConstraintCache* cache_ = nullptr;
};

TEST_F(ConstrainedEngineTest, GreedyOutputMatchesTheRegexAndEndsWhenComplete) {
    const std::string re = "(yes|no), because [a-z ]{5,40}\\.";
    const Output o =
        generate_one("Is the sky blue? Answer:", params(constraint(ConstraintKind::Regex, re), 0));
    EXPECT_TRUE(std::regex_match(o.text, std::regex(re))) << o.text;
    EXPECT_EQ(o.finish, FinishReason::EndOfText) << o.text;
}

TEST_F(ConstrainedEngineTest, SampledOutputNeverLeavesTheConstraint) {
    const std::string re = "[0-9]{3}-[a-c]{2,6}";
    for (uint64_t seed = 1; seed <= 6; ++seed) {
        const Output o = generate_one("Write anything you like:",
                                      params(constraint(ConstraintKind::Regex, re), 1.5f, seed));
        EXPECT_TRUE(std::regex_match(o.text, std::regex(re))) << "seed " << seed << ": " << o.text;
    }
}

TEST_F(ConstrainedEngineTest, JsonSchemaOutputParsesAndHoldsTheSchema) {
    const std::string schema = R"({"type": "object", "properties": {
        "name": {"type": "string", "maxLength": 12},
        "age": {"type": "integer", "minimum": 0, "maximum": 120},
        "color": {"enum": ["red", "green", "blue"]}},
        "required": ["name", "age", "color"], "additionalProperties": false})";
    for (uint64_t seed = 1; seed <= 3; ++seed) {
        const Output o =
            generate_one("A person described as JSON:",
                         params(constraint(ConstraintKind::JsonSchema, schema), 1.0f, seed, 64));
        ASSERT_EQ(o.finish, FinishReason::EndOfText) << o.text;
        const nlohmann::json j = nlohmann::json::parse(o.text);  // throws if it does not parse
        ASSERT_EQ(j.size(), 3u) << o.text;
        EXPECT_TRUE(j.at("name").is_string());
        EXPECT_LE(j.at("name").get<std::string>().size(), 12u);
        ASSERT_TRUE(j.at("age").is_number_integer()) << o.text;
        EXPECT_GE(j.at("age").get<int>(), 0);
        EXPECT_LE(j.at("age").get<int>(), 120);
        const std::string color = j.at("color");
        EXPECT_TRUE(color == "red" || color == "green" || color == "blue") << color;
    }
}

// Property names repeated within one object, counted by nlohmann's parser (which itself keeps
// the last value of a repeated name).
size_t repeated_names(const std::string& json_text) {
    std::vector<std::set<std::string>> open;
    size_t repeats = 0;
    const nlohmann::json parsed = nlohmann::json::parse(
        json_text, [&](int, nlohmann::json::parse_event_t event, nlohmann::json& value) {
            using Event = nlohmann::json::parse_event_t;
            if (event == Event::object_start) open.emplace_back();
            if (event == Event::object_end) open.pop_back();
            if (event == Event::key && !open.back().insert(value.get<std::string>()).second)
                ++repeats;
            return true;
        });
    EXPECT_TRUE(parsed.is_object()) << json_text;
    return repeats;
}

TEST_F(ConstrainedEngineTest, AnObjectNeverRepeatsAPropertyName) {
    // Unguarded, greedy decoding copies the prompt's repeated name until max_tokens.
    const auto open = constraint(ConstraintKind::JsonSchema,
                                 R"({"type":"object","additionalProperties":{"type":"string"}})");
    const std::string prompt =
        R"(Repeat after me: {"a":"x","a":"x","a":"x","a":"x","a":"x"} Again: )";
    for (const auto& c : {open, constraint(ConstraintKind::JsonObject, "")}) {
        const Output o = generate_one(prompt, params(c, 0, 1, 64));
        ASSERT_EQ(o.finish, FinishReason::EndOfText) << o.text;
        EXPECT_EQ(repeated_names(o.text), 0u) << o.text;
    }
}

TEST_F(ConstrainedEngineTest, LogprobsSeeTheConstrainedDistribution) {
    GenerationParams p = params(constraint(ConstraintKind::Choice, R"(["yes", "no"])"), 0);
    p.logprobs = 5;
    Engine engine(*model_, *tokenizer_, config());
    engine.submit(tokenizer_->encode("Is water wet?", true, true), p);
    const std::vector<TokenEvent> events = engine.step();
    ASSERT_EQ(events.size(), 1u);
    double mass = 0;
    for (const TokenProb& t : events[0].top_logprobs) {
        const std::string text = tokenizer_->token_text(t.id);
        if (std::isinf(t.logprob)) continue;
        // Only the starts of "yes" and "no" may carry probability.
        EXPECT_TRUE(std::string("yes").starts_with(text) || std::string("no").starts_with(text))
            << text;
        mass += std::exp(t.logprob);
    }
    EXPECT_NEAR(mass, 1.0, 1e-3);  // the allowed tokens hold all of it
}

TEST_F(ConstrainedEngineTest, SpeculationStaysLosslessUnderAConstraint) {
    const std::string prompt = "one two three one two three one two three one two";
    const auto c = constraint(ConstraintKind::Regex, "( (one|two|three|four))+");
    for (float temperature : {0.0f, 0.9f}) {
        const GenerationParams p = params(c, temperature, 7, 40);
        const Output plain = generate_one(prompt, p);
        const Output speculative = generate_one(prompt, p, 4);
        EXPECT_EQ(plain.tokens, speculative.tokens) << "temperature " << temperature;
        EXPECT_EQ(plain.text, speculative.text);
    }
}

TEST_F(ConstrainedEngineTest, ConstrainedAndFreeSequencesShareABatch) {
    const std::vector<std::string> prompts = {"The capital of France is",
                                              "Pick a number:", "A color as JSON:"};
    const std::vector<GenerationParams> ps = {
        params(nullptr, 0, 1, 24),
        params(constraint(ConstraintKind::Regex, "[1-9][0-9]{0,3}"), 0, 1, 24),
        params(constraint(ConstraintKind::JsonSchema,
                          R"({"type":"object","properties":{"color":{"type":"string"}},)"
                          R"("required":["color"]})"),
               0, 1, 24)};
    Engine batched(*model_, *tokenizer_, config());
    const std::vector<Output> together = generate(batched, prompts, ps);
    for (size_t i = 0; i < prompts.size(); ++i) {
        const Output alone = generate_one(prompts[i], ps[i]);
        EXPECT_EQ(together[i].tokens, alone.tokens) << prompts[i];
    }
}

// A budget too small for what the model wants to write: the output is closed in time, so it
// still parses and holds the schema, and the finish reason says it was cut short.
TEST_F(ConstrainedEngineTest, AnOutputCutByTheBudgetStillParses) {
    const auto story = constraint(ConstraintKind::JsonSchema, R"({"type":"object",
        "properties":{"title":{"type":"string"},"story":{"type":"string"},
        "pages":{"type":"integer"}},"required":["title","story","pages"],
        "additionalProperties":false})");
    for (uint64_t seed = 1; seed <= 4; ++seed)
        for (int64_t max_tokens : {24, 40}) {
            const Output o = generate_one("A very long story about the sea, as JSON:",
                                          params(story, seed == 1 ? 0.0f : 1.0f, seed, max_tokens));
            EXPECT_LE(o.tokens.size(), static_cast<size_t>(max_tokens));
            const nlohmann::json j = nlohmann::json::parse(o.text);  // throws if it does not parse
            EXPECT_EQ(j.size(), 3u) << o.text;
            EXPECT_TRUE(j.at("story").is_string()) << o.text;
            EXPECT_TRUE(j.at("pages").is_number_integer()) << o.text;
            if (o.finish != FinishReason::EndOfText) {
                EXPECT_EQ(o.finish, FinishReason::MaxTokens) << o.text;
            }
        }
    // A regular expression whose sentence the model would not end in 10 tokens.
    const std::string re = "[a-z ]+\\.";
    const Output o = generate_one("Describe the sea in a hundred words:",
                                  params(constraint(ConstraintKind::Regex, re), 0, 1, 10));
    EXPECT_TRUE(std::regex_match(o.text, std::regex(re))) << o.text;
    EXPECT_EQ(o.finish, FinishReason::MaxTokens) << o.text;
}

// Closing never cuts a reply that fits: with max_tokens exactly the length of a reply that
// ended on its own, the reply is the same (closing counts its tokens, not only its bytes,
// which here are more than the budget from the start).
TEST_F(ConstrainedEngineTest, ABudgetTheReplyFitsChangesNothing) {
    const auto person = constraint(ConstraintKind::JsonSchema, R"({"type":"object",
        "properties":{"first_name":{"type":"string"},"family_name":{"type":"string"},
        "home_town":{"type":"string"},"favourite_colour":{"type":"string"}},
        "required":["first_name","family_name","home_town","favourite_colour"],
        "additionalProperties":false})");
    const std::string prompt = "A person described as JSON:";
    const Output free = generate_one(prompt, params(person, 0, 1, 128));
    ASSERT_EQ(free.finish, FinishReason::EndOfText) << free.text;
    const auto fitted_budget = static_cast<int64_t>(free.tokens.size());
    // Fewer tokens than the shortest reply's 71 bytes: counting bytes alone would close at once.
    EXPECT_LT(fitted_budget, 71);
    const Output fitted = generate_one(prompt, params(person, 0, 1, fitted_budget));
    EXPECT_EQ(fitted.text, free.text);
}

// The model repeats the prompt's words until the budget closes the sentence; drafts (which
// guess the repeats) change nothing.
TEST_F(ConstrainedEngineTest, SpeculationStaysLosslessWhileClosing) {
    const std::string prompt = "one two three one two three one two three one two";
    const std::string re = "( (one|two|three|four))+!";
    const auto c = constraint(ConstraintKind::Regex, re);
    for (float temperature : {0.0f, 0.9f}) {
        const GenerationParams p = params(c, temperature, 7, 20);
        const Output plain = generate_one(prompt, p);
        const Output speculative = generate_one(prompt, p, 4);
        EXPECT_EQ(plain.tokens, speculative.tokens) << "temperature " << temperature;
        EXPECT_TRUE(std::regex_match(plain.text, std::regex(re))) << plain.text;
        EXPECT_EQ(plain.finish, FinishReason::MaxTokens) << plain.text;
    }
}

TEST_F(ConstrainedEngineTest, ADeadEndStopsTheSequenceWithAnError) {
    // Ban (-inf bias) every token that could start "yes": nothing is left to sample.
    GenerationParams p = params(constraint(ConstraintKind::Choice, R"(["yes"])"), 0);
    for (int32_t t = 0; t < static_cast<int32_t>(tokenizer_->n_vocab()); ++t) {
        const std::string text = tokenizer_->is_special(t) ? "" : tokenizer_->token_text(t);
        if (!text.empty() && std::string("yes").starts_with(text))
            p.sampling.logit_bias[t] = -INFINITY;
    }
    const Output o = generate_one("Say yes:", p);
    EXPECT_EQ(o.finish, FinishReason::NoAllowedToken);
    EXPECT_TRUE(o.tokens.empty());
}

TEST_F(ConstrainedEngineTest, AConstraintForAnotherVocabularyIsRefused) {
    auto other = std::make_shared<grammar::Constraint>();
    other->grammar = grammar::compile_constraint({ConstraintKind::JsonObject, {}, {}, {}});
    other->vocab =
        std::make_shared<const grammar::TokenizerVocab>(grammar::tokenizer_vocab({"a", "b"}, {}));
    Engine engine(*model_, *tokenizer_, config());
    GenerationParams p = params(other, 0);
    EXPECT_THROW(engine.submit(tokenizer_->encode("x", true, true), p), Error);
}

}  // namespace
}  // namespace kite
