// --kv-window and --kv-sinks as a user runs them: `kite run` goes on past the context,
// `kite chat` turns the window on by itself when a conversation outgrows the context and
// says so once, `kite perplexity` reads a text as one stream; a window smaller than its
// sinks, sinks without a window, a window larger than the context or the KV budget: one
// error line and exit 1 (kite serve does not start).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "run_command.h"

namespace kite {
namespace {

using test::expect_one_line_error;
using test::run_kite;

TEST(CliKvWindow, RefusesWindowsThatCannotBe) {
    expect_one_line_error(run_kite("run -p hi --kv-window 2 --kv-sinks 4"), 1,
                          "--kv-window 2 is smaller than --kv-sinks 4");
    expect_one_line_error(run_kite("run -p hi --kv-sinks 4"), 1, "--kv-sinks 4 needs --kv-window");
    expect_one_line_error(run_kite("run -p hi --kv-window -3"), 2, "kv-window");
    expect_one_line_error(run_kite("run -p hi -c 128 --kv-window 200"), 1,
                          "--kv-window 200 --kv-sinks 4: a KV window of 200 tokens with 4 sinks "
                          "does not fit in the context of 128 tokens");
    expect_one_line_error(run_kite("chat -c 128 --kv-window 1 --kv-sinks 2", "/dev/null"), 1,
                          "--kv-window 1 is smaller than --kv-sinks 2");
    expect_one_line_error(
        run_kite("perplexity -f /usr/share/common-licenses/GPL-3 --kv-window 8 --kv-sinks 9"), 1,
        "--kv-window 8 is smaller than --kv-sinks 9");
    // The server refuses to start: a budget of 2 blocks cannot hold one such sequence.
    expect_one_line_error(run_kite("serve --port 0 -c 128 --kv-mem 1M --kv-window 100"), 1,
                          "--kv-window 100 --kv-sinks 4: a KV window of 100 tokens with 4 sinks "
                          "needs up to");
    expect_one_line_error(run_kite("serve --port 0 --kv-window 3 --kv-sinks 4"), 1,
                          "--kv-window 3 is smaller than --kv-sinks 4");
}

TEST(CliKvWindow, RunGoesOnPastTheContextSlow) {
    const auto full = run_kite("run -c 64 -p 'Once upon a time' -n 100 --temp 0 --ignore-eos");
    ASSERT_EQ(full.exit_code, 0) << full.err;
    EXPECT_NE(full.err.find("[stopped: context full]"), std::string::npos) << full.err;
    const auto r =
        run_kite("run -c 64 --kv-window 16 -p 'Once upon a time' -n 100 --temp 0 --ignore-eos");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find("[stopped: max tokens]"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("generated 100 tokens"), std::string::npos) << r.err;
}

TEST(CliKvWindow, ChatTurnsTheWindowOnWhenTheContextIsFullAndSaysSoOnceSlow) {
    const auto input = std::filesystem::temp_directory_path() / "kite_chat_window.txt";
    std::ofstream(input) << "Tell me a long story about a dragon.\nAnd then?\nAnd then?\n";
    const auto r = run_kite("chat -c 128 --temp 0 -n 60 --ignore-eos", input.string());
    std::filesystem::remove(input);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const std::string notice = "the conversation is longer than the context of 128 tokens";
    const size_t at = r.err.find(notice);
    ASSERT_NE(at, std::string::npos) << r.err;
    EXPECT_EQ(r.err.find(notice, at + 1), std::string::npos) << "said twice:\n" << r.err;
    EXPECT_EQ(r.err.find("context full"), std::string::npos) << r.err;
    // --kv-window 0: the conversation stops at the context instead.
    std::ofstream(input) << "Tell me a long story about a dragon.\n";
    const auto off =
        run_kite("chat -c 48 --temp 0 -n 60 --ignore-eos --kv-window 0", input.string());
    std::filesystem::remove(input);
    ASSERT_EQ(off.exit_code, 0) << off.err;
    EXPECT_NE(off.err.find("context full"), std::string::npos) << off.err;
    EXPECT_EQ(off.err.find(notice), std::string::npos) << off.err;
}

TEST(CliKvWindow, PerplexityReadsTheTextAsOneStreamSlow) {
    const auto r = run_kite(
        "perplexity -f /usr/share/common-licenses/GPL-3 --stream-tokens 200 --kv-window 64 -t 2");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("Final estimate: PPL = "), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("(199 tokens scored, "), std::string::npos) << r.out;
    EXPECT_NE(r.err.find("window 64 + 4 sinks"), std::string::npos) << r.err;
    expect_one_line_error(
        run_kite("perplexity -f /usr/share/common-licenses/GPL-3 --stream -c 128"), 1,
        "more than the context of 128: give a KV window");
}

}  // namespace
}  // namespace kite
