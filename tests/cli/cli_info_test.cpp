// `kite info` and the CLI's handling of bad input: one error line, exit 1 (2 for bad usage).
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <vector>

#include "gguf/gguf_writer.h"
#include "run_command.h"
#include "sanitized_build.h"
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

// Peak resident set of the kite binary run with `args` (wait4's ru_maxrss), in bytes; -1 when
// it does not exit 0.
int64_t peak_resident_bytes(std::vector<std::string> args) {
    args.insert(args.begin(), KITE_KITE_BIN);
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    const pid_t pid = ::fork();
    if (pid == 0) {
        const int null = ::open("/dev/null", O_RDWR);
        ::dup2(null, 0);
        ::dup2(null, 1);
        ::dup2(null, 2);
        ::execv(argv[0], argv.data());
        ::_exit(127);
    }
    int status = 0;
    rusage usage{};
    if (pid < 0 || ::wait4(pid, &status, 0, &usage) != pid || !WIFEXITED(status) ||
        WEXITSTATUS(status) != 0)
        return -1;
    return static_cast<int64_t>(usage.ru_maxrss) * 1024;
}

// "1.22 GiB" and the like, as kite info prints sizes.
double parse_size(const std::string& number, const std::string& unit) {
    const double scale = unit == "GiB"   ? 1 << 30
                         : unit == "MiB" ? 1 << 20
                         : unit == "KiB" ? 1024
                                         : 1;
    return std::stod(number) * scale;
}

// The peak kite info expects holds for a real run: the weights once (packing drops the file's
// copy as it goes), the activations a step writes, the KV pages written. Loading once held
// the file and the packed copy both, and every logits row of a 512-token step: about twice
// this. (Transparent huge pages off, the KV cache holds less than expected: a bound above.)
TEST(CliInfo, ExpectedPeakResidentHoldsForARun) {
    if (test::kSanitizedBuild) GTEST_SKIP() << "shadow memory inflates the resident set";
    auto info = run_kite("info " + model_arg());
    ASSERT_EQ(info.exit_code, 0) << info.err;
    std::smatch m;
    const std::regex line(
        R"(peak resident: +([0-9.]+) (GiB|MiB) for a short run, .* weights ([0-9.]+) (GiB|MiB))");
    ASSERT_TRUE(std::regex_search(info.out, m, line)) << info.out;
    const double expected = parse_size(m[1], m[2]), weights = parse_size(m[3], m[4]);
    const int64_t peak = peak_resident_bytes(
        {"run", "-m", test::default_model_path(), "-n", "4", "-p", "Hello", "--seed", "1"});
    ASSERT_GT(peak, 0);
    EXPECT_GT(static_cast<double>(peak), weights);
    EXPECT_LT(static_cast<double>(peak), 1.15 * expected) << info.out;
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
