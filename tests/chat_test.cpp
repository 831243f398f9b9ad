// Chat templates and multi-turn chat on the default model.
#include <gtest/gtest.h>

#include "core/error.h"
#include "engine/chat_session.h"
#include "test_paths.h"

namespace kite {
namespace {

// The expected strings follow the default model's template text (its Jinja source is
// printed by `kite info --metadata`): a default system message when none is given.
TEST(ChatTemplate, RendersTheDefaultModelsChatML) {
    auto file = GgufFile::open(test::default_model_path());
    ChatTemplate t = ChatTemplate::from_gguf(*file);
    EXPECT_STREQ(t.name(), "chatml");
    EXPECT_EQ(t.default_system(),
              "You are a helpful AI assistant named SmolLM, trained by Hugging Face");
    std::vector<ChatMessage> m{{"user", "Hi"}};
    EXPECT_EQ(t.render(m, true),
              "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging "
              "Face<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
    m = {{"system", "Be brief."}, {"user", "Hi"}, {"assistant", "Hello!"}};
    EXPECT_EQ(t.render(m, false),
              "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
              "<|im_start|>assistant\nHello!<|im_end|>\n");
    m = {{"robot", "x"}};
    EXPECT_THROW(t.render(m, true), Error);
}

TEST(ChatTemplate, RecognisesOtherFamiliesAndRejectsUnknown) {
    ChatTemplate l3 = ChatTemplate::from_source("{{ '<|start_header_id|>' + role }}");
    std::vector<ChatMessage> m{{"user", "Hi"}};
    EXPECT_EQ(l3.render(m, true),
              "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"
              "<|start_header_id|>assistant<|end_header_id|>\n\n");
    ChatTemplate l2 = ChatTemplate::from_source("{{ '[INST] ' + content + ' [/INST]' }}");
    m = {{"system", "S"}, {"user", "Hi"}, {"assistant", "Yo"}, {"user", "Again"}};
    EXPECT_EQ(l2.render(m, true),
              "<s>[INST] <<SYS>>\nS\n<</SYS>>\n\nHi [/INST] Yo </s><s>[INST] Again [/INST]");
    EXPECT_THROW(ChatTemplate::from_source("{{ messages }}"), Error);
}

TEST(ChatSession, LaterTurnsReuseTheCache) {
    auto model = Model::load(test::default_model_path());
    auto tok = Tokenizer::from_gguf(model->file());
    EngineConfig cfg;
    cfg.threads = 2;
    cfg.context_length = 1024;
    Engine engine(*model, *tok, cfg);
    ChatSession chat(engine, *tok, ChatTemplate::from_gguf(model->file()));
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
    const std::string full = ChatTemplate::from_gguf(model->file()).render(chat.messages(), false);
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
