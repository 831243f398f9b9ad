// `kite plan` as a user runs it: the terms and the formula, the sequences that fit in a budget
// and the memory for B sequences, each equal to what `kite serve` allocates with the same flags;
// with a KV window (each sequence holds its window, not its context) and with a draft model;
// one clear error line for what serve would refuse.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <regex>
#include <string>

#include "run_command.h"
#include "test_paths.h"

namespace kite {
namespace {

using test::run_kite;

// The first capture of `pattern` in `text`, or "" when it does not match.
std::string find(const std::string& text, const std::string& pattern) {
    std::smatch m;
    return std::regex_search(text, m, std::regex(pattern)) ? m[1].str() : "";
}

// `kite serve ARGS` on a free port until it listens, then stopped: its stderr.
std::string serve_startup(const std::string& args) {
    const auto err = std::filesystem::temp_directory_path() /
                     ("kite_plan_serve_" + std::to_string(::getpid()) + ".txt");
    const std::string cmd = "sh -c '" + std::string(KITE_KITE_BIN) + " serve --port 0 " + args +
                            " 2>" + err.string() +
                            " & p=$!; for i in $(seq 300); do grep -q listening " + err.string() +
                            " && break; sleep 0.1; done; kill $p; wait $p' >/dev/null 2>&1";
    std::system(cmd.c_str());
    const std::string text = test::read_text(err);
    std::filesystem::remove(err);
    return text;
}

std::string serve_kv_bytes(const std::string& args) {
    const std::string startup = serve_startup(args);
    const std::string bytes = find(startup, R"(KV cache \d+ tokens \((\d+) bytes)");
    EXPECT_FALSE(bytes.empty()) << startup;
    return bytes;
}

std::string plan_kv_bytes(const std::string& plan) {
    return find(plan, R"(KV cache:   \d+ blocks, (\d+) bytes)");
}

// The draft model's KV cache: plan's line and serve's start-up line.
std::string plan_draft_kv_bytes(const std::string& plan) {
    return find(plan, R"(draft KV:   KV_d = \d+ blocks .*, (\d+) bytes)");
}
std::string serve_draft_kv_bytes(const std::string& startup) {
    return find(startup, R"(draft KV cache (\d+) bytes)");
}

TEST(CliPlan, SequencesThatFitEqualWhatServeAllocates) {
    for (const std::string kv : {"q8_0", "q4_0", "f16"}) {
        auto r = run_kite("plan --mem 300M -c 1000 --kv-type " + kv);
        ASSERT_EQ(r.exit_code, 0) << r.err;
        EXPECT_NE(r.out.find("M_kv:       2*b*B*L*H_kv*s*d_h = 2*"), std::string::npos) << r.out;
        EXPECT_NE(r.out.find("weights:    W = "), std::string::npos) << r.out;
        EXPECT_NE(r.out.find("run state:  R = "), std::string::npos) << r.out;
        const std::string fit = find(r.out, R"(= (\d+) sequences of 1000 tokens)");
        ASSERT_FALSE(fit.empty()) << r.out;
        EXPECT_GT(std::stoll(fit), 0);
        const std::string flags = find(r.out, R"(serve with: kite serve (.*)\n)");
        ASSERT_FALSE(flags.empty()) << r.out;
        EXPECT_EQ(serve_kv_bytes(flags), plan_kv_bytes(r.out)) << kv;
        const std::string total = find(r.out, R"(total:      W \+ R \+ KV = (\d+) bytes)");
        EXPECT_LE(std::stoll(total), 300ll << 20) << r.out;
    }
}

// With --kv-window W --kv-sinks S a sequence holds at most KvWindow::peak_blocks blocks (the
// most the scheduler holds for one: KvWindowScheduler.RunsFarPastTheWindowOnItsPeakBlocks),
// whatever the context: 19 blocks of 16 for 256 + 4 sinks, 21 for 256 + 32.
TEST(CliPlan, AWindowedSequenceHoldsItsWindowWhateverTheContext) {
    for (const auto& [window, blocks] : {std::pair<std::string, int64_t>{"--kv-window 256", 19},
                                         {"--kv-window 256 --kv-sinks 32", 21}}) {
        std::string fit;
        for (const std::string ctx : {"1000", "8192"}) {
            auto r = run_kite("plan --mem 300M --kv-type q4_0 -c " + ctx + " " + window);
            ASSERT_EQ(r.exit_code, 0) << r.err;
            // 6480 bytes per token of q4_0 (2 * 18/32 * 30 * 3 * 64).
            const std::string s =
                std::to_string(blocks * 16) + " tokens per sequence (" + std::to_string(blocks) +
                " blocks of 16: " + std::to_string(blocks * 16 * 6480) + " bytes of KV each)";
            EXPECT_NE(r.out.find("s:          " + s), std::string::npos) << r.out;
            const std::string n = find(r.out, R"(= (\d+) sequences with a KV window)");
            ASSERT_FALSE(n.empty()) << r.out;
            EXPECT_TRUE(fit.empty() || n == fit) << "-c " << ctx << " changed it";
            fit = n;
            const std::string flags = find(r.out, R"(serve with: kite serve (.*)\n)");
            EXPECT_NE(flags.find(window), std::string::npos) << flags;
            EXPECT_EQ(serve_kv_bytes(flags), plan_kv_bytes(r.out)) << window;
        }
        // Far more than whole contexts: 300M holds one sequence of 8192 tokens.
        EXPECT_GT(std::stoll(fit), 40) << window;
    }
    // The memory for B windowed sequences is what serve allocates for them without --kv-mem:
    // 4 sequences x 19 blocks x 16 tokens x 23040 bytes.
    auto r = run_kite("plan --max-seqs 4 -c 8192 --kv-window 256");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("B:          4 sequences: M_kv = 28016640 bytes"), std::string::npos)
        << r.out;
    EXPECT_EQ(plan_kv_bytes(r.out), "28016640") << r.out;
    EXPECT_EQ(serve_kv_bytes("--max-seqs 4 -c 8192 --kv-window 256"), "28016640");
}

// The draft model's file, cache and run state count too, as serve allocates them; the
// default model drafts for itself (the same vocabulary).
TEST(CliPlan, CountsTheDraftModelAsServeAllocatesIt) {
    const std::string draft = "--draft-model " + test::default_model_path();
    for (const std::string& flags :
         {"--max-seqs 3 -c 512 --draft-max 20 " + draft,
          "--max-seqs 2 -c 300 --kv-type q8_0 --kv-window 64 " + draft}) {
        auto r = run_kite("plan " + flags);
        ASSERT_EQ(r.exit_code, 0) << r.err;
        EXPECT_NE(r.out.find("draft W:    W_d = "), std::string::npos) << r.out;
        EXPECT_NE(r.out.find("draft run:  R_d = "), std::string::npos) << r.out;
        const std::string startup = serve_startup(flags);
        EXPECT_EQ(find(startup, R"(KV cache \d+ tokens \((\d+) bytes)"), plan_kv_bytes(r.out))
            << flags;
        EXPECT_EQ(serve_draft_kv_bytes(startup), plan_draft_kv_bytes(r.out)) << flags << "\n"
                                                                             << r.out << startup;
    }
    // 3 sequences of 32 blocks and, per sequence, 2 blocks for up to 19 guesses past them.
    auto r = run_kite("plan --max-seqs 3 -c 512 --draft-max 20 " + draft);
    EXPECT_NE(r.out.find("KV_d = 102 blocks (the KV cache's 96 and 6 for guesses"),
              std::string::npos)
        << r.out;
    // A budget: the sequences that fit with the draft model, and serve's flags for them.
    r = run_kite("plan --mem 600M -c 1000 " + draft);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const std::string fit = find(r.out, R"(fit: (\d+) sequences of 1000 tokens)");
    ASSERT_FALSE(fit.empty()) << r.out;
    EXPECT_GT(std::stoll(fit), 0);
    const std::string flags = find(r.out, R"(serve with: kite serve (.*)\n)");
    EXPECT_NE(flags.find(draft), std::string::npos) << flags;
    const std::string startup = serve_startup(flags);
    EXPECT_EQ(find(startup, R"(KV cache \d+ tokens \((\d+) bytes)"), plan_kv_bytes(r.out));
    EXPECT_EQ(serve_draft_kv_bytes(startup), plan_draft_kv_bytes(r.out)) << r.out << startup;
    const std::string total =
        find(r.out, R"(total:      W \+ R \+ KV \+ W_d \+ R_d \+ KV_d = (\d+) bytes)");
    EXPECT_LE(std::stoll(total), 600ll << 20) << r.out;
}

TEST(CliPlan, MemoryForBSequencesEqualsWhatServeAllocates) {
    for (const std::string flags : {"--max-seqs 4 -c 512 --kv-type q8_0",
                                    "--max-seqs 3 -c 1000 --kv-type-k q8_0 --kv-type-v q4_0",
                                    "--max-seqs 2 -c 300 --kv-type f32"}) {
        auto r = run_kite("plan " + flags);
        ASSERT_EQ(r.exit_code, 0) << r.err;
        EXPECT_EQ(serve_kv_bytes(flags), plan_kv_bytes(r.out)) << flags << "\n" << r.out;
    }
    // The formula's value: 4 sequences x 512 tokens x 2 x 34/32 x 30 x 3 x 64 bytes.
    auto r = run_kite("plan --max-seqs 4 -c 512 --kv-type q8_0");
    EXPECT_NE(r.out.find("B:          4 sequences: M_kv = 25067520 bytes"), std::string::npos)
        << r.out;
    EXPECT_NE(r.out.find("2*1.0625*B*30*3*s*64 = 12240 bytes per token"), std::string::npos)
        << r.out;
}

TEST(CliPlan, RefusesWhatServeRefuses) {
    test::expect_one_line_error(run_kite("plan --mem 10M"), 1, "holds no sequence");
    test::expect_one_line_error(run_kite("plan -c 128 --kv-window 200"), 1,
                                "--kv-window 200 --kv-sinks 4: a KV window of 200 tokens with 4 "
                                "sinks does not fit in the context of 128 tokens");
    test::expect_one_line_error(run_kite("plan --draft-model /nonexistent.gguf"), 1,
                                "cannot load the draft model");
    test::expect_one_line_error(run_kite("plan --spec draft"), 1,
                                "--spec draft needs a draft model");
}

}  // namespace
}  // namespace kite
