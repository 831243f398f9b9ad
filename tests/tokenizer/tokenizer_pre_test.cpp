// The pre-tokenizers added for Llama 3, Qwen2, DeepSeek LLM and Gemma 4, on texts whose
// pieces follow by hand from the published regexes (contractions in either case, digit runs
// of up to three or of one, whitespace before a word kept apart, newline runs).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tokenizer/pre_tokenizer.h"

namespace kite {
namespace {

std::vector<std::string> pieces(std::string_view type, std::string_view text) {
    const PreTokenizer pre(type);
    std::vector<std::string> out;
    for (std::string_view p : pre.split(text)) out.emplace_back(p);
    return out;
}

using Pieces = std::vector<std::string>;

constexpr std::string_view kText = "I'm 12345 HELLO'S\n\n  x";

TEST(PreTokenizer, Llama3GroupsDigitsByThree) {
    EXPECT_EQ(pieces("llama-bpe", kText),
              (Pieces{"I", "'m", " ", "123", "45", " HELLO", "'S", "\n\n", " ", " x"}));
    EXPECT_EQ(PreTokenizer("llama-bpe").whole_pieces(), PreTokenizer::WholePieces::Always);
}

TEST(PreTokenizer, Qwen2SplitsEveryDigit) {
    EXPECT_EQ(pieces("qwen2", kText),
              (Pieces{"I", "'m", " ", "1", "2", "3", "4", "5", " HELLO", "'S", "\n\n", " ", " x"}));
    EXPECT_EQ(PreTokenizer("qwen2").whole_pieces(), PreTokenizer::WholePieces::Never);
}

TEST(PreTokenizer, DeepseekLlmSplitsLettersPunctuationAndNumbers) {
    EXPECT_EQ(pieces("deepseek-llm", "Hello, world 123\n"),
              (Pieces{"Hello", ",", " world", " ", "123", "\n"}));
}

TEST(PreTokenizer, CommandRSplitsDigitsThenFollowsGpt2) {
    EXPECT_EQ(pieces("command-r", "ab 12 cd"), (Pieces{"ab", " ", "1", "2", " cd"}));
}

TEST(PreTokenizer, Gemma4KeepsNewlineRunsApart) {
    EXPECT_EQ(pieces("gemma4", "a b\n\nc\n"), (Pieces{"a b", "\n\n", "c", "\n"}));
    EXPECT_EQ(PreTokenizer("gemma4").whole_pieces(), PreTokenizer::WholePieces::NewlineRuns);
}

TEST(PreTokenizer, InvalidBytesStayPiecesOfTheirOwn) {
    EXPECT_EQ(pieces("qwen2",
                     "ab\xff"
                     "cd"),
              (Pieces{"ab", "\xff", "cd"}));
}

}  // namespace
}  // namespace kite
