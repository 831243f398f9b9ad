// `kite info` and the CLI's handling of bad input: one error line, exit 1 (2 for bad usage).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "gguf/gguf_writer.h"
#include "run_command.h"
#include "test_paths.h"

namespace kite {
namespace {

using test::run_kite;

std::string model_arg() {
    return "-m " + test::default_model_path();
}

TEST(CliInfo, DescribesTheDefaultModel) {
    auto r = run_kite("info " + model_arg());
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("architecture:    llama"), std::string::npos);
    EXPECT_NE(r.out.find("layers:          30"), std::string::npos);
    EXPECT_NE(r.out.find("heads:           9 query, 3 key/value"), std::string::npos);
    EXPECT_NE(r.out.find("head dim:        64"), std::string::npos);
    EXPECT_NE(r.out.find("context length:  8192"), std::string::npos);
    EXPECT_NE(r.out.find("Q4_1      210 tensors"), std::string::npos);
    // Q4_1: 20 bytes per 32 weights = 5 bits; the token embedding is Q8_0 (34 bytes per 32);
    // the norms are F32. The whole file: 96576768 bytes of tensor data over 134515008
    // weights (as llama.cpp's BPW).
    EXPECT_NE(r.out.find("tensor types:    92.10 MiB in 272 tensors, 5.74 bits per weight"),
              std::string::npos)
        << r.out;
    EXPECT_NE(r.out.find("(63.28 MiB, 78.9% of the weights)  5.00 bits/weight"), std::string::npos)
        << r.out;
    EXPECT_NE(r.out.find("(28.69 MiB, 21.0% of the weights)  8.50 bits/weight"), std::string::npos)
        << r.out;
    EXPECT_NE(r.out.find("(137.2 KiB, 0.0% of the weights)  32.00 bits/weight"), std::string::npos)
        << r.out;
    EXPECT_NE(r.out.find("tokenizer:       gpt2 (pre-tokenizer smollm)"), std::string::npos);
    EXPECT_NE(r.out.find("chat template:   present"), std::string::npos);
    // 2 * 2 bytes * 30 layers * 3 kv heads * 64 dims
    EXPECT_NE(r.out.find("f16      23040 bytes/token"), std::string::npos);
}

// The Q4_K_M variant (scripts/make-variants.sh) mixes five types; llama-quantize reports the
// same file as "quant size = 98.87 MiB (6.17 BPW)".
TEST(CliInfo, ReportsEachTypeOfAMixedFile) {
    const std::string path = std::string(KITE_SOURCE_DIR) + "/models/variants/default-q4_k_m.gguf";
    if (!std::filesystem::exists(path))
        GTEST_SKIP() << path << " is missing: scripts/make-variants.sh";
    auto r = run_kite("info -m " + path);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("tensor types:    98.87 MiB in 272 tensors, 6.17 bits per weight"),
              std::string::npos)
        << r.out;
    // Bits per weight of each block layout: Q4_K 144 bytes per 256 weights, Q5_0 22 per 32,
    // Q6_K 210 per 256, Q8_0 34 per 32.
    for (const char* line :
         {"Q4_K       16 tensors", "4.50 bits/weight", "Q5_0      166 tensors", "5.50 bits/weight",
          "Q6_K       14 tensors", "6.56 bits/weight", "Q8_0       15 tensors", "8.50 bits/weight"})
        EXPECT_NE(r.out.find(line), std::string::npos) << line << "\n" << r.out;
}

TEST(CliInfo, UsesTheDefaultModelWithoutFlag) {
    auto r = run_kite("info");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("parameters:      134515008"), std::string::npos);
}

TEST(CliInfo, RejectsBadInputWithOneLine) {
    expect_one_line_error(run_kite("info -m /nonexistent.gguf"), 1, "cannot open");
    expect_one_line_error(run_kite("info -m " KITE_SOURCE_DIR "/CMakeLists.txt"), 1,
                          "not a GGUF file");
    expect_one_line_error(run_kite("info --bogus"), 2, "bogus");
    expect_one_line_error(run_kite("frobnicate"), 2, "frobnicate");
    expect_one_line_error(run_kite("info -m"), 2, "model");
}

TEST(CliInfo, RejectsTruncatedModelAndUnknownArchitecture) {
    auto dir = std::filesystem::temp_directory_path();
    auto cut = dir / "kite_truncated.gguf";
    {
        std::ifstream in(test::default_model_path(), std::ios::binary);
        std::vector<char> head(4 << 20);
        in.read(head.data(), static_cast<std::streamsize>(head.size()));
        std::ofstream(cut, std::ios::binary).write(head.data(), in.gcount());
    }
    expect_one_line_error(run_kite("info -m " + cut.string()), 1, "runs past the end");

    auto odd = dir / "kite_odd_arch.gguf";
    GgufWriter w;
    w.add_string("general.architecture", "mamba");
    w.write_file(odd.string());
    expect_one_line_error(run_kite("info -m " + odd.string()), 1, "unknown architecture 'mamba'");
    std::filesystem::remove(cut);
    std::filesystem::remove(odd);
}

}  // namespace
}  // namespace kite
