// Tool calls through the chat API: requests carry tools and tool messages to the template, and
// replies recorded from real models (Qwen 2.5 / Hermes, Llama 3.1, Mistral) parse back into
// OpenAI tool_calls, whole and streamed.
#include <gtest/gtest.h>

#include "chat/tool_calls.h"
#include "server/api_error.h"
#include "server/request_parser.h"
#include "server/response_format.h"
#include "test_paths.h"

namespace kite::server {
namespace {

using nlohmann::json;

TEST(ToolCallParser, HermesQwenForm) {
    // Qwen2.5-Coder's reply to "What's the weather in Paris?" with a get_weather tool.
    const ParsedReply r = parse_tool_calls(
        "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"unit\": "
        "\"celsius\"}}\n</tool_call>");
    ASSERT_EQ(r.calls.size(), 1u);
    EXPECT_EQ(r.calls[0].name, "get_weather");
    EXPECT_EQ(json::parse(r.calls[0].arguments), json({{"city", "Paris"}, {"unit", "celsius"}}));
    EXPECT_TRUE(r.calls[0].id.starts_with("call_"));
    EXPECT_EQ(r.content, "");
    // Two calls with text around them.
    const ParsedReply two = parse_tool_calls(
        "Checking both.\n<tool_call>\n{\"name\": \"a\", \"arguments\": {}}\n</tool_call>\n"
        "<tool_call>\n{\"name\": \"b\", \"arguments\": {\"x\": [1, 2]}}\n</tool_call>");
    ASSERT_EQ(two.calls.size(), 2u);
    EXPECT_EQ(two.calls[1].name, "b");
    EXPECT_EQ(two.calls[1].arguments, "{\"x\":[1,2]}");
    EXPECT_EQ(two.content, "Checking both.");
    EXPECT_NE(two.calls[0].id, two.calls[1].id);
}

TEST(ToolCallParser, Llama3JsonForm) {
    const ParsedReply r =
        parse_tool_calls("{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Oslo\"}}");
    ASSERT_EQ(r.calls.size(), 1u);
    EXPECT_EQ(r.calls[0].name, "get_weather");
    EXPECT_EQ(r.calls[0].arguments, "{\"city\":\"Oslo\"}");
    const ParsedReply tagged = parse_tool_calls(
        "<|python_tag|>{\"name\": \"f\", \"parameters\": {}}; {\"name\": \"g\", \"parameters\": "
        "{\"n\": 1}}");
    ASSERT_EQ(tagged.calls.size(), 2u);
    EXPECT_EQ(tagged.calls[1].name, "g");
}

TEST(ToolCallParser, MistralForms) {
    const ParsedReply r = parse_tool_calls(
        "[TOOL_CALLS][{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}, \"id\": "
        "\"a1b2c3d4e\"}]");
    ASSERT_EQ(r.calls.size(), 1u);
    EXPECT_EQ(r.calls[0].id, "a1b2c3d4e");
    EXPECT_EQ(r.calls[0].arguments, "{\"city\":\"Paris\"}");
    const ParsedReply v11 = parse_tool_calls("[TOOL_CALLS]get_weather[ARGS]{\"city\": \"Rome\"}");
    ASSERT_EQ(v11.calls.size(), 1u);
    EXPECT_EQ(v11.calls[0].name, "get_weather");
    EXPECT_EQ(v11.calls[0].arguments, "{\"city\":\"Rome\"}");
}

TEST(ToolCallParser, FencedJsonForm) {
    // Qwen2.5-Coder-0.5B's other reply to the Paris question (its first token is a near-tie
    // between '{"' and '```').
    const ParsedReply r = parse_tool_calls(
        "```json\n{\n  \"name\": \"get_weather\",\n  \"arguments\": {\n    \"city\": "
        "\"Paris\"\n  }\n}\n```");
    ASSERT_EQ(r.calls.size(), 1u);
    EXPECT_EQ(r.calls[0].name, "get_weather");
    EXPECT_EQ(r.calls[0].arguments, "{\"city\":\"Paris\"}");
    EXPECT_EQ(r.content, "");
    const ParsedReply bare = parse_tool_calls("```\n[{\"name\": \"a\", \"arguments\": {}}]\n```");
    ASSERT_EQ(bare.calls.size(), 1u);
    EXPECT_EQ(bare.calls[0].name, "a");
}

TEST(ToolCallParser, PlainTextAndBrokenCallsStayContent) {
    for (const char* text :
         {"The weather in Paris is sunny.", "<tool_call>\n{\"name\": \"f\", \"argu", "{not json}",
          "{\"no_name\": 1}", "[TOOL_CALLS] oops", "```python\nprint(1)\n```",
          "```json\n{\"no_name\": 1}\n```", "```json\n{\"name\": \"f\"}\n``` and more"}) {
        const ParsedReply r = parse_tool_calls(text);
        EXPECT_TRUE(r.calls.empty()) << text;
        EXPECT_EQ(r.content, text);
    }
}

// What a client sees streamed: content deltas, then one tool_calls delta at the finish.
struct Streamed {
    std::string content;
    json tool_calls;
    std::string finish;
    int sent = 0;  // chunks worth sending (ResponseFormatter::carries_nothing is false)
};

Streamed stream_reply(const std::vector<std::string>& pieces) {
    auto tok = Tokenizer::from_gguf(*GgufFile::open(test::default_model_path()));
    ResponseFormatter f(true, false, "m", *tok);
    f.enable_tool_calls(1);
    Streamed s;
    for (size_t i = 0; i < pieces.size(); ++i) {
        const bool last = i + 1 == pieces.size();
        const json c =
            f.chunk(0, pieces[i], {}, last ? FinishReason::EndOfText : FinishReason::None, i == 0);
        s.sent += !ResponseFormatter::carries_nothing(c);
        const json& delta = c["choices"][0]["delta"];
        if (delta.contains("content")) s.content += delta["content"].get<std::string>();
        if (delta.contains("tool_calls")) s.tool_calls = delta["tool_calls"];
        if (!c["choices"][0]["finish_reason"].is_null())
            s.finish = c["choices"][0]["finish_reason"];
    }
    return s;
}

TEST(ToolCallStream, CallsAreHeldBackAndSentAsDeltas) {
    const Streamed s =
        stream_reply({"Let me check.", " <tool", "_call>\n{\"name\": \"get_weather\", ",
                      "\"arguments\": {\"city\": \"Paris\"}}\n</tool_call>", ""});
    EXPECT_EQ(s.content, "Let me check. ");
    ASSERT_EQ(s.tool_calls.size(), 1u);
    EXPECT_EQ(s.tool_calls[0]["index"], 0);
    EXPECT_EQ(s.tool_calls[0]["type"], "function");
    EXPECT_EQ(s.tool_calls[0]["function"]["name"], "get_weather");
    EXPECT_EQ(s.tool_calls[0]["function"]["arguments"], "{\"city\":\"Paris\"}");
    EXPECT_EQ(s.finish, "tool_calls");
    // The held-back pieces send nothing: the content chunk, " " (sent once the next piece
    // shows it is not a call) and the tool_calls delta with the finish.
    EXPECT_EQ(s.sent, 3);
    // A Llama-style JSON reply is held from its first character.
    const Streamed l = stream_reply({"{\"name\"", ": \"f\", \"parameters\": {}}", ""});
    EXPECT_EQ(l.content, "");
    EXPECT_EQ(l.tool_calls.size(), 1u);
    // So is a fenced call, from its opening backticks.
    const Streamed f =
        stream_reply({"``", "`json\n", "{\"name\": \"f\", \"arguments\": {}}", "\n```"});
    EXPECT_EQ(f.content, "");
    ASSERT_EQ(f.tool_calls.size(), 1u);
    EXPECT_EQ(f.finish, "tool_calls");
    // A fence holding code is content, streamed once its body's first character shows that:
    // the role, then "```python\nprint(1)", "\n```" and the finish.
    const Streamed code = stream_reply({"```", "python\n", "print(1)", "\n```", ""});
    EXPECT_EQ(code.content, "```python\nprint(1)\n```");
    EXPECT_TRUE(code.tool_calls.is_null());
    EXPECT_EQ(code.sent, 4);
    // Text that only looked like a call's start comes out whole, as content.
    const Streamed t = stream_reply({"a <tool", "box> b", " {x}", ""});
    EXPECT_EQ(t.content, "a <toolbox> b {x}");
    EXPECT_TRUE(t.tool_calls.is_null());
    EXPECT_EQ(t.finish, "stop");
}

TEST(ToolCallResponse, WholeResponseCarriesToolCalls) {
    auto tok = Tokenizer::from_gguf(*GgufFile::open(test::default_model_path()));
    ResponseFormatter f(true, false, "m", *tok);
    f.enable_tool_calls(2);
    std::vector<ChoiceResult> choices(2);
    choices[0].text = "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": 1}}\n</tool_call>";
    choices[0].finish = FinishReason::EndOfText;
    choices[1].text = "No tools needed.";
    choices[1].finish = FinishReason::EndOfText;
    const json r = f.response(choices, {});
    const json& m0 = r["choices"][0]["message"];
    EXPECT_TRUE(m0["content"].is_null());
    EXPECT_EQ(m0["tool_calls"][0]["function"]["name"], "f");
    EXPECT_EQ(m0["tool_calls"][0]["function"]["arguments"], "{\"a\":1}");
    EXPECT_EQ(r["choices"][0]["finish_reason"], "tool_calls");
    EXPECT_EQ(r["choices"][1]["message"]["content"], "No tools needed.");
    EXPECT_FALSE(r["choices"][1]["message"].contains("tool_calls"));
    EXPECT_EQ(r["choices"][1]["finish_reason"], "stop");
}

// The request side: tools, tool_choice, assistant tool_calls and tool results reach the
// template (arguments sent as a JSON string arrive as an object).
TEST(ToolCallRequest, ToolsAndToolMessagesReachTheTemplate) {
    auto file = GgufFile::open(test::default_model_path());
    auto tok = Tokenizer::from_gguf(*file);
    const ChatTemplate t = ChatTemplate::from_source(
        "{% for tool in tools %}[{{ tool.function.name }}:{{ tool.function.parameters | tojson }}]"
        "{% endfor %}{{ tool_choice }}{% for m in messages %}<{{ m.role }}>"
        "{% if m.tool_calls %}{{ m.tool_calls[0].function.arguments.city }}{% endif %}"
        "{{ m.content }}{{ m.tool_call_id }}{% endfor %}",
        "", "");
    const ServedModel model{"m", tok.get(), &t, 4096, {}, 0};
    const std::string body = R"({"messages": [
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function",
         "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "21 C"}],
        "tools": [{"type": "function", "function": {"name": "get_weather",
                   "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}],
        "tool_choice": "auto"})";
    const CompletionRequest r = parse_completion_request(body, true, model);
    EXPECT_TRUE(r.tool_calls);
    EXPECT_EQ(tok->decode(r.prompts[0]),
              "[get_weather:{\"type\": \"object\", \"properties\": {\"city\": {\"type\": "
              "\"string\"}}}]auto<user>Weather in Paris?<assistant>Paris<tool>21 Ccall_1");
    // tool_choice "none": no tools for the template, no parsing of the reply.
    const std::string none = R"({"messages": [{"role": "user", "content": "x"}],
        "tools": [{"type": "function", "function": {"name": "f"}}], "tool_choice": "none"})";
    const CompletionRequest n = parse_completion_request(none, true, model);
    EXPECT_FALSE(n.tool_calls);
    EXPECT_EQ(tok->decode(n.prompts[0]), "none<user>x");
    // Malformed tools and tool_calls are 400s naming the field.
    for (const char* bad :
         {R"({"messages": [{"role": "user", "content": "x"}], "tools": [{"type": "function"}]})",
          R"({"messages": [{"role": "user", "content": "x"}], "tools": {}})",
          R"({"messages": [{"role": "user", "content": "x"}], "tool_choice": "always"})",
          R"({"messages": [{"role": "assistant", "tool_calls": [{"function": {}}]}]})"}) {
        try {
            parse_completion_request(bad, true, model);
            ADD_FAILURE() << "accepted " << bad;
        } catch (const ApiError& e) {
            EXPECT_EQ(e.status, 400) << bad;
        }
    }
}

TEST(ToolCallRequest, ATemplateThatRaisesIsA400) {
    auto file = GgufFile::open(test::default_model_path());
    auto tok = Tokenizer::from_gguf(*file);
    const ChatTemplate t = ChatTemplate::from_source(
        "{% if messages[0].role == 'system' %}{{ raise_exception('System role not supported') }}"
        "{% endif %}ok",
        "", "");
    const ServedModel model{"m", tok.get(), &t, 4096, {}, 0};
    try {
        parse_completion_request(R"({"messages": [{"role": "system", "content": "x"}]})", true,
                                 model);
        FAIL() << "accepted";
    } catch (const ApiError& e) {
        EXPECT_EQ(e.status, 400);
        EXPECT_NE(std::string(e.what()).find("System role not supported"), std::string::npos);
    }
}

}  // namespace
}  // namespace kite::server
