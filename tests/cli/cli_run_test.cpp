// `kite run`, `kite chat` and `kite perplexity` as a user runs them: output, timings line,
// and one clear error line for bad input.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <memory>

#include "run_command.h"
#include "test_paths.h"
#include "tokenizer/tokenizer.h"
#include "tools/perplexity.h"

namespace kite {
namespace {

using test::expect_one_line_error;
using test::run_kite;

TEST(CliRun, GeneratesGreedilyAndReportsTimings) {
    auto r = run_kite("run -p 'The capital of France is' -n 8 --temp 0 -t 2");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out.rfind("The capital of France is", 0), 0u) << r.out;
    EXPECT_GT(r.out.size(), std::string("The capital of France is").size());
    EXPECT_NE(r.err.find("[stopped: max tokens]"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("generated 8 tokens"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("time to first token"), std::string::npos) << r.err;
    // Greedy is deterministic, and a fixed seed makes sampling reproducible.
    EXPECT_EQ(run_kite("run -p 'The capital of France is' -n 8 --temp 0 -t 2").out, r.out);
    auto s1 = run_kite("run -p 'Once upon a time' -n 16 --seed 7 -t 2");
    auto s2 = run_kite("run -p 'Once upon a time' -n 16 --seed 7 -t 2");
    EXPECT_EQ(s1.out, s2.out);
}

TEST(CliRun, StopsAtStopStringAndEndOfText) {
    auto r = run_kite("run -p '1, 2, 3, 4,' -n 32 --temp 0 --stop ' 7'");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, "1, 2, 3, 4, 5, 6,");
    EXPECT_NE(r.err.find("[stopped: stop string]"), std::string::npos) << r.err;
    auto c = run_kite("run --chat -p 'What is 2 + 2? Answer with one number.' -n 64 --temp 0");
    ASSERT_EQ(c.exit_code, 0) << c.err;
    EXPECT_NE(c.err.find("[stopped: end of text]"), std::string::npos) << c.err;
}

TEST(CliRun, RejectsBadInput) {
    expect_one_line_error(run_kite("run -p ''"), 1, "prompt is empty");
    expect_one_line_error(run_kite("run"), 1, "give a prompt");
    expect_one_line_error(run_kite("run -p hi -n 0"), 1, "must be positive");
    expect_one_line_error(run_kite("run -p hi --temp -1"), 1, "temperature");
    expect_one_line_error(run_kite("run -p hi --top-p 1.5"), 1, "top_p");
    expect_one_line_error(run_kite("run -p hi --bogus"), 2, "bogus");
    expect_one_line_error(run_kite("run -p hi --kv-type q3"), 1, "--kv-type 'q3'");
    // A bad size is a usage error now (exit 2), caught while parsing the flags.
    expect_one_line_error(run_kite("run -p hi --kv-mem lots"), 2, "not a size");
    expect_one_line_error(run_kite("run -p 'a b c d e f g h i j' -c 4"), 1, "does not leave room");
    expect_one_line_error(run_kite("run -f /nonexistent/prompt.txt"), 1, "cannot read");
}

TEST(CliChat, AnswersEachLineFromStdin) {
    auto dir = std::filesystem::temp_directory_path() / "kite_chat_input.txt";
    std::ofstream(dir) << "Hello!\nWhat is the capital of France?\n";
    auto r = run_kite("chat --temp 0 -n 24", dir.string());
    std::filesystem::remove(dir);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    // One status line per turn; the second turn ran only its own new tokens.
    EXPECT_EQ(test::count_lines(r.err), 2) << r.err;
    EXPECT_NE(r.err.find("new prompt tokens"), std::string::npos);
}

TEST(CliPerplexity, PrintsTheEstimateAndRejectsShortText) {
    auto r = run_kite(
        "perplexity -f /usr/share/common-licenses/GPL-3 -c 128 --chunks 3 "
        "--max-batch-tokens 128");
    if (r.exit_code == 0) {
        EXPECT_NE(r.out.find("Final estimate: PPL = "), std::string::npos) << r.out;
        EXPECT_NE(r.out.find("[3]"), std::string::npos) << r.out;
        EXPECT_EQ(r.out.find("[4]"), std::string::npos) << "--chunks 3 ran more windows";
    } else {
        ADD_FAILURE() << r.err;
    }
    auto tiny = std::filesystem::temp_directory_path() / "kite_tiny.txt";
    std::ofstream(tiny) << "too short";
    expect_one_line_error(run_kite("perplexity -f " + tiny.string() + " -c 128"), 1,
                          "fewer than one window");
    std::filesystem::remove(tiny);
}

// A model that adds BOS (the tiny gemma3 fixture's vocabulary does): the windows are cut from
// the text tokenized with BOS first, as llama-perplexity cuts them, so the command's estimate
// is perplexity() on [BOS] + the text's tokens, and not on the text's tokens alone.
TEST(CliPerplexity, CutsWindowsFromTheTextWithBosFirst) {
    const std::string model_file =
        std::string(KITE_SOURCE_DIR) + "/tests/fixtures/arch/gemma3.gguf";
    std::string text;
    for (int i = 0; i < 8; ++i) text += "the quick brown fox jumps over the lazy dog ";
    const auto file = std::filesystem::temp_directory_path() / "kite_bos_text.txt";
    std::ofstream(file) << text << "\n";  // dropped, as llama-perplexity -f drops it
    auto r = run_kite("perplexity -m " + model_file + " -f " + file.string() + " -c 32 -t 1");
    std::filesystem::remove(file);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const std::string key = "Final estimate: PPL = ";
    ASSERT_NE(r.out.find(key), std::string::npos) << r.out;
    const double printed = std::stod(r.out.substr(r.out.find(key) + key.size()));

    std::unique_ptr<Model> model = Model::load(model_file);
    std::unique_ptr<Tokenizer> tokenizer = Tokenizer::from_gguf(model->file());
    ASSERT_TRUE(tokenizer->adds_bos());
    ThreadPool pool(1);
    PerplexityOptions o;
    o.n_ctx = o.n_batch = 32;
    o.bos = tokenizer->bos();
    std::vector<int32_t> ids = tokenizer->encode(text, false, false);
    const double without_bos = perplexity(*model, ids, o, pool).ppl;
    ids.insert(ids.begin(), tokenizer->bos());
    const double with_bos = perplexity(*model, ids, o, pool).ppl;
    EXPECT_NEAR(printed, with_bos, 1e-4 * with_bos);  // printed with 4 decimals
    EXPECT_GT(std::fabs(printed - without_bos), 1e-3 * with_bos)
        << "the windows start one token late";
}

}  // namespace
}  // namespace kite
