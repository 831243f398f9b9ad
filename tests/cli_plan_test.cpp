// `kite plan` as a user runs it: the terms and the formula, the sequences that fit in a budget
// and the memory for B sequences, each equal to what `kite serve` allocates with the same flags;
// one clear error line for a budget too small for one sequence or an unknown KV type.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <regex>
#include <string>

#include "run_command.h"

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
        EXPECT_EQ(serve_kv_bytes(flags), find(r.out, R"(KV cache:   \d+ blocks, (\d+) bytes)"))
            << kv;
        const std::string total = find(r.out, R"(total:      W \+ R \+ KV = (\d+) bytes)");
        EXPECT_LE(std::stoll(total), 300ll << 20) << r.out;
    }
}

TEST(CliPlan, MemoryForBSequencesEqualsWhatServeAllocates) {
    for (const std::string flags : {"--max-seqs 4 -c 512 --kv-type q8_0",
                                    "--max-seqs 3 -c 1000 --kv-type-k q8_0 --kv-type-v q4_0",
                                    "--max-seqs 2 -c 300 --kv-type f32"}) {
        auto r = run_kite("plan " + flags);
        ASSERT_EQ(r.exit_code, 0) << r.err;
        EXPECT_EQ(serve_kv_bytes(flags), find(r.out, R"(KV cache:   \d+ blocks, (\d+) bytes)"))
            << flags << "\n"
            << r.out;
    }
    // The formula's value: 4 sequences x 512 tokens x 2 x 34/32 x 30 x 3 x 64 bytes.
    auto r = run_kite("plan --max-seqs 4 -c 512 --kv-type q8_0");
    EXPECT_NE(r.out.find("B:          4 sequences: M_kv = 25067520 bytes"), std::string::npos)
        << r.out;
    EXPECT_NE(r.out.find("2*1.0625*B*30*3*s*64 = 12240 bytes per token"), std::string::npos)
        << r.out;
}

TEST(CliPlan, RefusesABudgetTooSmallAndUnknownTypes) {
    auto r = run_kite("plan --mem 10M");
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_EQ(test::count_lines(r.err), 1) << r.err;
    EXPECT_NE(r.err.find("holds no sequence"), std::string::npos) << r.err;
    EXPECT_EQ(r.out, "");
    for (const std::string flag : {"--kv-type q3", "--kv-type-k int8", "--kv-type-v q4_1"}) {
        r = run_kite("plan " + flag);
        EXPECT_EQ(r.exit_code, 2) << flag << r.err;
        EXPECT_EQ(test::count_lines(r.err), 1) << r.err;
        EXPECT_NE(r.err.find("kv-type"), std::string::npos) << r.err;
    }
}

}  // namespace
}  // namespace kite
