// Chat templates and multi-turn chat on the default model.
#include <gtest/gtest.h>

#include "core/error.h"
#include "engine/chat_session.h"
#include "test_paths.h"

namespace kite {
namespace {

// The default model's own template (its Jinja source is printed by `kite info --metadata`),
// rendered by the template engine: a default system message when none is given.
TEST(ChatTemplate, RendersTheDefaultModelsOwnTemplate) {
    auto file = GgufFile::open(test::default_model_path());
    auto tok = Tokenizer::from_gguf(*file);
    ChatTemplate t = ChatTemplate::from_gguf(*file, *tok);
    EXPECT_EQ(t.origin(), "model's");
    EXPECT_FALSE(t.fallback());
    std::vector<ChatMessage> m{{"user", "Hi"}};
    EXPECT_EQ(t.render(m, true),
              "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging "
              "Face<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
    m = {{"system", "Be brief."}, {"user", "Hi"}, {"assistant", "Hello!"}};
    EXPECT_EQ(t.render(m, false),
              "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
              "<|im_start|>assistant\nHello!<|im_end|>\n");
    // Special-token text in the rendering becomes the special tokens.
    const std::vector<int32_t> ids = t.tokenize(*tok, t.render(m, false));
    EXPECT_EQ(ids.front(), tok->find_piece("<|im_start|>"));
    EXPECT_EQ(tok->decode(ids), t.render(m, false));
}

TEST(ChatTemplate, BuiltInFormatsForFilesWithoutATemplate) {
    ChatTemplate l3 = ChatTemplate::from_source("llama3", "<|begin_of_text|>", "<|eot_id|>");
    EXPECT_EQ(l3.origin(), "built-in llama3");
    std::vector<ChatMessage> m{{"user", "Hi"}};
    EXPECT_EQ(l3.render(m, true),
              "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"
              "<|start_header_id|>assistant<|end_header_id|>\n\n");
    ChatTemplate l2 = ChatTemplate::from_source("llama2", "<s>", "</s>");
    m = {{"system", "S"}, {"user", "Hi"}, {"assistant", "Yo"}, {"user", "Again"}};
    EXPECT_EQ(l2.render(m, true),
              "<s>[INST] <<SYS>>\nS\n<</SYS>>\n\nHi [/INST] Yo </s><s>[INST] Again [/INST]");
    ChatTemplate chatml = ChatTemplate::from_source("chatml", "", "");
    EXPECT_TRUE(chatml.render(m, false).starts_with("<|im_start|>system\nS<|im_end|>\n"));
}

TEST(ChatTemplate, TemplateErrorsAreOneLineErrors) {
    EXPECT_THROW(ChatTemplate::from_source("{% if %}", "", ""), Error);
    ChatTemplate t = ChatTemplate::from_source(
        "{% if messages[0].role == 'system' %}{{ raise_exception('no\\nsystem') }}{% endif %}", "",
        "");
    std::vector<ChatMessage> m{{"system", "x"}};
    try {
        t.render(m, true);
        FAIL() << "no error";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("no system"), std::string::npos) << e.what();
    }
}

TEST(ChatTemplate, BosIsAddedOnlyWhenTheTemplateDidNotWriteIt) {
    auto file = GgufFile::open(test::default_model_path());
    auto tok = Tokenizer::from_gguf(*file);
    const std::string bos = special_token_text(*tok, tok->bos());
    ASSERT_FALSE(bos.empty());
    ChatTemplate with = ChatTemplate::from_source("{{ bos_token }}hi", bos, "");
    ChatTemplate without = ChatTemplate::from_source("hi", bos, "");
    const std::vector<int32_t> a =
        with.tokenize(*tok, with.render(std::vector<ChatMessage>{}, true));
    const std::vector<int32_t> b =
        without.tokenize(*tok, without.render(std::vector<ChatMessage>{}, true));
    EXPECT_EQ(a.front(), tok->bos());
    EXPECT_NE(a[1], tok->bos());
    EXPECT_EQ(b, tok->encode("hi", true, true));
}

TEST(ChatSession, LaterTurnsReuseTheCache) {
    auto model = Model::load(test::default_model_path());
    auto tok = Tokenizer::from_gguf(model->file());
    EngineConfig cfg;
    cfg.threads = 2;
    cfg.context_length = 1024;
    Engine engine(*model, *tok, cfg);
    ChatSession chat(engine, *tok, ChatTemplate::from_gguf(model->file(), *tok));
    GenerationParams p;
    p.sampling.temperature = 0;
    p.max_tokens = 24;
    std::string streamed;
    auto on_text = [&](const std::string& t) { streamed += t; };
    std::string first = chat.send("What is the capital of France?", p, on_text);
    EXPECT_FALSE(first.empty());
    EXPECT_EQ(streamed, first);
    const int64_t first_prompt = chat.last_prompt_tokens();
    const int64_t before = engine.stats().prompt_tokens;
    // What the cache holds after turn one, as text; turn two must run only what follows it,
    // plus the token sampled last (it was never run through the model).
    const std::string cached = tok->decode(engine.sequence(0).tokens);
    chat.send("And of Italy?", p, on_text);
    const std::string full =
        ChatTemplate::from_gguf(model->file(), *tok).render(chat.messages(), false);
    const std::string turn2_prompt = full.substr(0, full.rfind("<|im_start|>assistant\n") + 22);
    ASSERT_EQ(turn2_prompt.compare(0, cached.size(), cached), 0);
    const int64_t expected =
        static_cast<int64_t>(tok->encode(turn2_prompt.substr(cached.size()), false, true).size()) +
        1;
    EXPECT_EQ(chat.last_prompt_tokens(), expected);
    EXPECT_EQ(engine.stats().prompt_tokens - before, expected);
    EXPECT_LT(chat.last_prompt_tokens(), first_prompt);
    EXPECT_EQ(chat.messages().size(), 4u);
}

}  // namespace
}  // namespace kite
