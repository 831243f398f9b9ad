// kite serve's request parsing and response formatting, without HTTP: valid requests become
// the right GenerationParams; bad ones become OpenAI-shaped errors naming the field.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "gguf/gguf_file.h"
#include "grammar/constraint.h"
#include "grammar/tokenizer_vocab.h"
#include "server/api_error.h"
#include "server/request_parser.h"
#include "server/response_format.h"
#include "test_paths.h"

namespace kite::server {
namespace {

class ServerRequestTest : public ::testing::Test {
  protected:
    static void SetUpTestSuite() {
        file_ = GgufFile::open(test::default_model_path()).release();
        tokenizer_ = Tokenizer::from_gguf(*file_).release();
        template_ = new ChatTemplate(ChatTemplate::from_gguf(*file_, *tokenizer_));
    }
    static void TearDownTestSuite() {
        delete template_;
        delete tokenizer_;
        delete file_;
    }
    static ServedModel model() { return {"default", tokenizer_, template_, 256, {}}; }

    static ApiError error_of(const std::string& body, bool chat = false) {
        try {
            parse_completion_request(body, chat, model());
        } catch (const ApiError& e) {
            return e;
        }
        ADD_FAILURE() << "accepted: " << body;
        return ApiError(0, "");
    }

    static GgufFile* file_;
    static Tokenizer* tokenizer_;
    static ChatTemplate* template_;
};
GgufFile* ServerRequestTest::file_ = nullptr;
Tokenizer* ServerRequestTest::tokenizer_ = nullptr;
ChatTemplate* ServerRequestTest::template_ = nullptr;

TEST_F(ServerRequestTest, ParsesACompletionRequest) {
    CompletionRequest r = parse_completion_request(
        R"({"model": "default", "prompt": "Hello world", "max_tokens": 5, "temperature": 0.5,
            "top_p": 0.9, "top_k": -1, "seed": 42, "stop": ["a", "b"], "n": 2,
            "logprobs": 3, "logit_bias": {"7": -100}, "stream": true,
            "stream_options": {"include_usage": true}, "user": "ignored"})",
        false, model());
    ASSERT_EQ(r.prompts.size(), 1u);
    EXPECT_EQ(r.prompts[0], tokenizer_->encode("Hello world", true, true));
    EXPECT_EQ(r.max_tokens_for(r.prompts[0].size(), 256), 5);
    EXPECT_FLOAT_EQ(r.params.sampling.temperature, 0.5f);
    EXPECT_FLOAT_EQ(r.params.sampling.top_p, 0.9f);
    EXPECT_EQ(r.params.sampling.top_k, 0);
    EXPECT_TRUE(r.seed_given);
    EXPECT_EQ(r.params.sampling.seed, 42u);
    EXPECT_EQ(r.params.stop, (std::vector<std::string>{"a", "b"}));
    EXPECT_EQ(r.n, 2);
    EXPECT_EQ(r.logprobs, 3);
    EXPECT_EQ(r.params.logprobs, 3);
    EXPECT_FLOAT_EQ(r.params.sampling.logit_bias.at(7), -100.0f);
    EXPECT_TRUE(r.stream);
    EXPECT_TRUE(r.include_usage);
    EXPECT_TRUE(r.params.speculative);  // speculates when the server does
}

TEST_F(ServerRequestTest, RequestsCanOptOutOfSpeculation) {
    EXPECT_FALSE(
        parse_completion_request(R"({"prompt": "x", "speculative": false})", false, model())
            .params.speculative);
    EXPECT_EQ(error_of(R"({"prompt": "x", "speculative": "no"})").param, "speculative");
}

TEST_F(ServerRequestTest, DefaultsFollowOpenAI) {
    CompletionRequest r = parse_completion_request(R"({"prompt": [1, 2, 3]})", false, model());
    EXPECT_EQ(r.prompts[0], (std::vector<int32_t>{1, 2, 3}));
    EXPECT_EQ(r.max_tokens_for(3, 256), 16);
    EXPECT_FLOAT_EQ(r.params.sampling.temperature, 1.0f);
    EXPECT_EQ(r.logprobs, -1);
    EXPECT_FALSE(r.seed_given);
    // Chat: the rest of the context by default; logprobs only with "logprobs": true.
    CompletionRequest c = parse_completion_request(
        R"({"messages": [{"role": "system", "content": "Be brief."},
                         {"role": "user", "content": "Hi"}], "logprobs": true})",
        true, model());
    const std::vector<ChatMessage> m{{"system", "Be brief."}, {"user", "Hi"}};
    EXPECT_EQ(c.prompts[0], tokenizer_->encode(template_->render(m, true), true, true));
    EXPECT_EQ(c.max_tokens_for(c.prompts[0].size(), 256),
              256 - static_cast<int64_t>(c.prompts[0].size()));
    EXPECT_EQ(c.logprobs, 0);
}

TEST_F(ServerRequestTest, RepeatLastNSetsThePenaltiesWindow) {
    auto last_n = [](const std::string& body) {
        return parse_completion_request(body, false, model()).params.sampling.penalty_last_n;
    };
    EXPECT_EQ(last_n(R"({"prompt": "x"})"), 64);
    EXPECT_EQ(last_n(R"({"prompt": "x", "repeat_last_n": 0})"), 0);
    EXPECT_EQ(last_n(R"({"prompt": "x", "repeat_last_n": -1})"), -1);
    EXPECT_EQ(last_n(R"({"prompt": "x", "repeat_last_n": 200})"), 200);
    EXPECT_EQ(error_of(R"({"prompt": "x", "repeat_last_n": -2})").param, "repeat_last_n");
    EXPECT_EQ(error_of(R"({"prompt": "x", "repeat_last_n": 1.5})").param, "repeat_last_n");
    EXPECT_EQ(error_of(R"({"prompt": "x", "repeat_last_n": 4294967296})").param, "repeat_last_n");
}

TEST_F(ServerRequestTest, StreamOptionsNeedAStream) {
    EXPECT_EQ(error_of(R"({"prompt": "x", "stream_options": {"include_usage": true}})").param,
              "stream_options");
    EXPECT_EQ(error_of(R"({"prompt": "x", "stream": false, "stream_options": {}})").param,
              "stream_options");
    // Null is as absent.
    EXPECT_FALSE(
        parse_completion_request(R"({"prompt": "x", "stream_options": null})", false, model())
            .include_usage);
}

TEST_F(ServerRequestTest, RejectsBadRequestsNamingTheField) {
    EXPECT_EQ(error_of("{oops").status, 400);
    EXPECT_EQ(error_of("[]").status, 400);
    EXPECT_EQ(error_of(R"({"prompt": "x", "model": "other"})").status, 404);
    EXPECT_EQ(error_of(R"({"prompt": "x", "model": "other"})").code, "model_not_found");
    EXPECT_EQ(error_of(R"({"prompt": "x", "temperature": 3})").param, "temperature");
    EXPECT_EQ(error_of(R"({"prompt": "x", "temperature": "1"})").param, "temperature");
    EXPECT_EQ(error_of(R"({"prompt": "x", "max_tokens": 1.5})").param, "max_tokens");
    EXPECT_EQ(error_of(R"({"prompt": "x", "max_tokens": 300})").param, "max_tokens");
    EXPECT_EQ(error_of(R"({"prompt": "x", "n": 17})").param, "n");
    EXPECT_EQ(error_of(R"({"prompt": ["a", "b"], "n": 9})").param, "n");
    EXPECT_EQ(error_of(R"({"prompt": "x", "stop": [""]})").param, "stop");
    EXPECT_EQ(error_of(R"({"prompt": "x", "logit_bias": {"-1": 5}})").param, "logit_bias");
    EXPECT_EQ(error_of(R"({"prompt": "x", "seed": 18446744073709551615})").param, "seed");
    EXPECT_EQ(error_of(R"({"prompt": [[1, 2], "x", 3]})").param, "prompt");
    EXPECT_EQ(error_of(R"({"prompt": [70000]})").param, "prompt");
    EXPECT_EQ(error_of(R"({"prompt": "x"})", true).param, "messages");
    EXPECT_EQ(
        error_of(R"({"messages": [{"role": "user", "content": "x"}], "top_logprobs": 2})", true)
            .param,
        "top_logprobs");
    EXPECT_EQ(error_of(R"({"messages": [{"role": "wizard", "content": "x"}]})", true).param,
              "messages[0].role");
    const nlohmann::json j = error_of(R"({"prompt": "x", "top_p": 0})").to_json();
    EXPECT_EQ(j["error"]["param"], "top_p");
    EXPECT_EQ(j["error"]["type"], "invalid_request_error");
    EXPECT_TRUE(j["error"]["code"].is_null());
}

// A server without a constraint compiler refuses every field that constrains output: none is
// ever silently ignored.
TEST_F(ServerRequestTest, RefusesOutputConstraintsWithoutACompiler) {
    EXPECT_EQ(error_of(R"({"prompt": "x", "grammar": "root ::= \"a\""})").param, "grammar");
    EXPECT_EQ(error_of(R"({"prompt": "x", "json_schema": {"type": "object"}})").param,
              "json_schema");
    for (const char* name : {"guided_regex", "guided_grammar"})
        EXPECT_EQ(error_of(fmt::format(R"({{"prompt": "x", "{}": "a"}})", name)).param, name);
    EXPECT_EQ(error_of(R"({"prompt": "x", "guided_choice": ["a"]})").param, "guided_choice");
    EXPECT_EQ(error_of(R"({"prompt": "x", "response_format": {"type": "json_object"}})").param,
              "response_format");
    // Null, a "text" format and llama.cpp's empty grammar ask for nothing.
    for (const char* body :
         {R"({"prompt": "x", "grammar": null})", R"({"prompt": "x", "grammar": ""})",
          R"({"prompt": "x", "response_format": {"type": "text"}})"})
        EXPECT_EQ(parse_completion_request(body, false, model()).params.constraint, nullptr)
            << body;
}

TEST_F(ServerRequestTest, CompilesEveryConstraintFieldOnceThroughTheCache) {
    grammar::ConstraintCache cache(
        std::make_shared<const grammar::TokenizerVocab>(grammar::tokenizer_vocab(*tokenizer_)));
    ServedModel m = model();
    m.constraints = &cache;
    for (const char* body : {
             R"({"prompt": "x", "response_format": {"type": "json_object"}})",
             R"({"prompt": "x", "response_format": {"type": "json_schema", "json_schema":
                 {"name": "n", "schema": {"type": "object"}, "strict": true}}})",
             R"({"prompt": "x", "grammar": "root ::= \"a\" [0-9]+"})",
             R"({"prompt": "x", "json_schema": {"type": "integer"}})",
             R"({"prompt": "x", "guided_json": "{\"type\": \"string\"}"})",
             R"({"prompt": "x", "guided_regex": "[a-z]+"})",
             R"({"prompt": "x", "guided_grammar": "root ::= \"b\""})",
             R"({"prompt": "x", "guided_choice": ["yes", "no"]})",
         }) {
        EXPECT_NE(parse_completion_request(body, false, m).params.constraint, nullptr) << body;
    }
    EXPECT_EQ(cache.size(), 8u);
    // The same schema again is the same compiled constraint.
    const char* again = R"({"prompt": "y", "json_schema": {"type": "integer"}})";
    EXPECT_EQ(parse_completion_request(again, false, m).params.constraint,
              parse_completion_request(again, false, m).params.constraint);
    EXPECT_EQ(cache.size(), 8u);
}

TEST_F(ServerRequestTest, ConstraintsThatCannotBeEnforcedNameTheirField) {
    grammar::ConstraintCache cache(
        std::make_shared<const grammar::TokenizerVocab>(grammar::tokenizer_vocab(*tokenizer_)));
    ServedModel m = model();
    m.constraints = &cache;
    const auto param_of = [&](const std::string& body, bool chat = false) {
        try {
            parse_completion_request(body, chat, m);
        } catch (const ApiError& e) {
            EXPECT_EQ(e.status, 400) << body;
            return e.param;
        }
        ADD_FAILURE() << "accepted: " << body;
        return std::string();
    };
    EXPECT_EQ(param_of(R"({"prompt": "x", "json_schema": "not a schema"})"), "json_schema");
    EXPECT_EQ(param_of(R"({"prompt": "x", "guided_json": "{oops"})"), "guided_json");
    EXPECT_EQ(param_of(R"({"prompt": "x", "guided_regex": "(a"})"), "guided_regex");
    EXPECT_EQ(param_of(R"({"prompt": "x", "grammar": "root ::= undefined"})"), "grammar");
    EXPECT_EQ(param_of(R"({"prompt": "x", "guided_choice": []})"), "guided_choice");
    EXPECT_EQ(param_of(R"({"prompt": "x", "guided_choice": [1]})"), "guided_choice");
    EXPECT_EQ(param_of(R"({"prompt": "x", "response_format": {"type": "yaml"}})"),
              "response_format");
    EXPECT_EQ(param_of(R"({"prompt": "x", "response_format": {"type": "json_schema"}})"),
              "response_format");
    EXPECT_EQ(
        param_of(R"j({"prompt": "x", "json_schema": {"type": "string", "pattern": "(?=a)"}})j"),
        "json_schema");
    // Two constraints at once are ambiguous.
    EXPECT_EQ(param_of(R"({"prompt": "x", "guided_regex": "a", "guided_choice": ["a"]})"),
              "guided_choice");
    EXPECT_EQ(param_of(R"({"prompt": "x", "guided_whitespace_pattern": " "})"),
              "guided_whitespace_pattern");
    // A named tool that is not offered.
    EXPECT_EQ(param_of(R"({"messages": [{"role": "user", "content": "x"}],
                  "tools": [{"type": "function", "function": {"name": "f"}}],
                  "tool_choice": {"type": "function", "function": {"name": "g"}}})",
                       true),
              "tool_choice");
}

TEST_F(ServerRequestTest, ForcedToolCallsAreConstrained) {
    grammar::ConstraintCache cache(
        std::make_shared<const grammar::TokenizerVocab>(grammar::tokenizer_vocab(*tokenizer_)));
    ServedModel m = model();
    m.constraints = &cache;
    const std::string tools = R"("tools": [{"type": "function", "function": {"name": "f",
        "parameters": {"type": "object", "properties": {"x": {"type": "integer"}}}}}])";
    const auto constraint_for = [&](const std::string& choice) {
        return parse_completion_request(
                   R"({"messages": [{"role": "user", "content": "x"}], )" + tools + choice + "}",
                   true, m)
            .params.constraint;
    };
    EXPECT_EQ(constraint_for(""), nullptr);
    EXPECT_EQ(constraint_for(R"(, "tool_choice": "auto")"), nullptr);
    EXPECT_NE(constraint_for(R"(, "tool_choice": "required")"), nullptr);
    EXPECT_NE(constraint_for(R"(, "tool_choice": {"type": "function", "function": {"name": "f"}})"),
              nullptr);
}

TEST_F(ServerRequestTest, FormatsChunksAndResponses) {
    ResponseFormatter chat(true, false, "default", *tokenizer_);
    nlohmann::json first = chat.chunk(0, "Hi", {}, FinishReason::None, true);
    EXPECT_EQ(first["object"], "chat.completion.chunk");
    EXPECT_EQ(first["choices"][0]["delta"]["role"], "assistant");
    EXPECT_EQ(first["choices"][0]["delta"]["content"], "Hi");
    EXPECT_TRUE(first["choices"][0]["finish_reason"].is_null());
    nlohmann::json last = chat.chunk(0, "", {}, FinishReason::EndOfText, false);
    EXPECT_EQ(last["choices"][0]["finish_reason"], "stop");
    EXPECT_EQ(ResponseFormatter::sse({{"a", 1}}), "data: {\"a\":1}\n\n");
    // Text that is not valid UTF-8 (a token holding part of a character) is still JSON.
    EXPECT_NO_THROW(ResponseFormatter::dump({{"t", std::string("\xe2\x82")}}));

    ResponseFormatter text(false, true, "default", *tokenizer_);
    std::vector<ChoiceResult> choices(1);
    choices[0].text = " Paris";
    choices[0].finish = FinishReason::MaxTokens;
    choices[0].logprobs.push_back({7, -0.5f, {{7, -0.5f}, {9, -INFINITY}}});
    nlohmann::json r = text.response(choices, {5, 1});
    EXPECT_EQ(r["choices"][0]["finish_reason"], "length");
    EXPECT_EQ(r["usage"]["total_tokens"], 6);
    EXPECT_EQ(r["choices"][0]["logprobs"]["token_logprobs"][0], -0.5);
    EXPECT_EQ(r["choices"][0]["logprobs"]["top_logprobs"][0].size(), 2u);
}

}  // namespace
}  // namespace kite::server
