// `kite bench` and `kite roofline` as a user runs them: exit codes, the JSON fields scripts
// read, the lines of the roofline report, and --isa, which caps the kernels' instruction set.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "kernels/cpu/isa.h"
#include "run_command.h"
#include "test_paths.h"

namespace kite {
namespace {

using test::run_kite;

std::string model_arg() {
    return "-m " + test::default_model_path();
}

bool has(const std::string& text, const std::string& needle) {
    return text.find(needle) != std::string::npos;
}

TEST(CliBench, JsonHasOneRowPerTest) {
    auto r = run_kite("bench " + model_arg() +
                      " -p 16 -n 4 -r 1 -b 1,2 --batch-prompt 8 -t 2 --bw-size 64M -o json");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const nlohmann::json rows = nlohmann::json::parse(r.out);  // stdout is only the JSON
    ASSERT_TRUE(rows.is_array());
    ASSERT_EQ(rows.size(), 4u) << r.out;
    const char* tests[] = {"pp16", "tg4", "1x(8+4)", "2x(8+4)"};
    const int n_seqs[] = {1, 1, 1, 2};
    for (size_t i = 0; i < rows.size(); ++i) {
        const nlohmann::json& row = rows[i];
        EXPECT_EQ(row.at("test"), tests[i]);
        EXPECT_EQ(row.at("n_seqs"), n_seqs[i]);
        EXPECT_EQ(row.at("n_threads"), 2);
        EXPECT_EQ(row.at("model_type"), "llama 135M Q4_1");
        EXPECT_EQ(row.at("model_n_params"), 134515008);
        EXPECT_EQ(row.at("samples_ts").size(), 1u);
        EXPECT_GT(row.at("avg_ts").get<double>(), 0);
        EXPECT_EQ(row.at("stddev_ts"), 0.0);
        for (const char* key : {"flops_per_token", "bytes_per_token", "arithmetic_intensity",
                                "achieved_gflops", "achieved_gbs", "peak_gbs", "peak_gflops",
                                "frac_peak_bw", "frac_peak_compute", "frac_roofline"})
            EXPECT_GT(row.at(key).get<double>(), 0) << key;
        EXPECT_TRUE(row.at("bound") == "memory-bound" || row.at("bound") == "compute-bound");
        EXPECT_TRUE(has(row.at("peak_compute").get<std::string>(), "int8 dot"));
        // The child inherits KITE_ISA, so its level is this process's.
        EXPECT_EQ(row.at("isa"), isa_name(active_isa()));
        EXPECT_TRUE(row.at("bf16_kernel").is_null());  // Q4_1 weights
    }
    EXPECT_EQ(rows[0].at("n_prompt"), 16);
    EXPECT_EQ(rows[0].at("n_gen"), 0);
    EXPECT_EQ(rows[3].at("n_prompt"), 8);
    EXPECT_EQ(rows[3].at("n_gen"), 4);
    // Two sequences share each weight read: fewer bytes per token than one.
    EXPECT_LT(rows[3].at("bytes_per_token").get<double>(),
              0.6 * rows[2].at("bytes_per_token").get<double>());
}

TEST(CliBench, TableWithGivenPeaks) {
    auto r =
        run_kite("bench " + model_arg() + " -p 8 -n 2 -r 2 -t 2 --peak-gbs 10 --peak-gflops 100");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_TRUE(has(r.out, "W = 10.00 GB/s (given)")) << r.out;
    EXPECT_TRUE(has(r.out, "| model | size | threads | test | t/s |")) << r.out;
    EXPECT_TRUE(has(r.out, "| llama 135M Q4_1 | 92.10 MiB | 2 | pp8 | ")) << r.out;
    EXPECT_TRUE(has(r.out, "| 2 | tg2 | ")) << r.out;
}

TEST(CliBench, RejectsBadFlags) {
    for (const char* args : {"bench -r 0", "bench -b 0", "bench -o xml", "bench -p -1"}) {
        auto r = run_kite(args);
        EXPECT_EQ(r.exit_code, 2) << args << ": " << r.err;
        EXPECT_EQ(test::count_lines(r.err), 1) << r.err;
    }
    auto r = run_kite("bench -m /nonexistent.gguf");
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_TRUE(has(r.err, "cannot open")) << r.err;
}

TEST(CliBench, IsaFlagCapsTheKernels) {
    if (detected_isa() < Isa::Avx2) GTEST_SKIP() << "this CPU has no AVX2";
    const std::string args =
        "bench " + model_arg() + " -p 8 -n 2 -r 1 -t 2 --peak-gbs 10 --peak-gflops 100 --isa avx2";
    auto r = run_kite(args);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_TRUE(has(
        r.out, "kernels: avx2 (this CPU: up to " + std::string(isa_name(detected_isa())) + ")\n"))
        << r.out;
    EXPECT_TRUE(has(r.err, "kite bench: kernels: avx2")) << r.err;
    r = run_kite(args + " -o json");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const nlohmann::json rows = nlohmann::json::parse(r.out);
    ASSERT_EQ(rows.size(), 2u) << r.out;
    for (const nlohmann::json& row : rows) EXPECT_EQ(row.at("isa"), "avx2") << row.dump();
    // The lowest level: the scalar references.
    r = run_kite(args.substr(0, args.size() - 4) + "scalar -o json");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(nlohmann::json::parse(r.out).at(0).at("isa"), "scalar") << r.out;
}

TEST(CliBench, IsaFlagRejectsUnknownLevels) {
    for (const char* level : {"avx3", "AVX2", "sse", "''"}) {
        auto r = run_kite("bench -p 8 -n 2 --isa " + std::string(level));
        EXPECT_EQ(r.exit_code, 2) << level << ": " << r.err;
        EXPECT_EQ(test::count_lines(r.err), 1) << r.err;
        EXPECT_TRUE(has(r.err, "--isa")) << r.err;
    }
    auto r = run_kite("roofline --isa avx1024");
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_EQ(test::count_lines(r.err), 1) << r.err;
}

TEST(CliBench, IsaFlagBeyondThisCpuFails) {
    if (detected_isa() == Isa::Amx) GTEST_SKIP() << "this CPU runs every level";
    // Past AVX-512 the level above is amx, refused with its reason (no tiles, or the kernel
    // would not grant them).
    const bool amx = detected_isa() == Isa::Avx512;
    auto r = run_kite("bench " + model_arg() + " -p 8 -n 2 -r 1 --isa " +
                      std::string(amx ? "amx" : "avx512"));
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_EQ(test::count_lines(r.err), 1) << r.err;
    EXPECT_TRUE(has(
        r.err, amx ? "does not offer the amx level: " : "this CPU supports instruction sets up to"))
        << r.err;
}

TEST(CliRoofline, ReportsPeaksAndIntensities) {
    auto r = run_kite("roofline " + model_arg() + " -t 2 --bw-size 64M");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    for (const char* line :
         {"peak read bandwidth W = ", "fp32 FMA", "threshold C/W", "H100 SXM  C = 989.5 TFLOP/s",
          "threshold C/W = 295.4", "H200      C = 989.5 TFLOP/s, W = 4.80 TB/s",
          "M_kv = 2*b*L*H_kv*d_h = 2*2*30*3*64 = 23040", "FLOPs = 2*P_layers*T", "prefill q=1 ",
          "prefill q=512", "decode B=1 (s=1024)", "decode B=32 (s=1024)",
          "AI = (2g/b) * (q*s + q(q+1)/2)/(s+q)", "q=1 s=1024", "q=512 s=4096"})
        EXPECT_TRUE(has(r.out, line)) << line << "\n" << r.out;
    // Each verdict must agree with its ratio AI/threshold. This machine's column depends on
    // the peaks just measured (an instrumented build measures a low C), so only the
    // accelerators' fixed peaks pin a verdict: decode at batch 1 is memory-bound on both.
    const size_t decode = r.out.find("decode B=1 ");
    ASSERT_NE(decode, std::string::npos);
    std::istringstream row(r.out.substr(decode, r.out.find('\n', decode) - decode));
    std::string word, verdict, ratio;
    for (int i = 0; i < 7; ++i) row >> word;  // decode B=1 (s=1024) FLOPs unit bytes unit
    row >> word;                              // AI
    for (int column = 0; column < 3; ++column) {
        ASSERT_TRUE(row >> verdict >> ratio) << r.out;
        const double times = std::stod(ratio.substr(1));  // "(0.095x)"
        EXPECT_EQ(verdict, times < 1 ? "memory" : "compute") << verdict << " " << ratio;
        if (column > 0) {
            EXPECT_EQ(verdict, "memory") << ratio;
        }
    }
}

// Capped at a level, the compute peaks are those of that level's instructions: no zmm
// register at avx2 or avxvnni; at avx2 the int8 peak (which sets the Q4_1 threshold) is the
// AVX2 multiply-add pair, at avxvnni the 256-bit vpdpbusd joins it.
TEST(CliRoofline, IsaFlagPicksThePeaksOfThatLevel) {
    if (detected_isa() < Isa::Avx2) GTEST_SKIP() << "this CPU has no AVX2";
    auto r = run_kite("roofline " + model_arg() + " -t 2 --bw-size 64M --isa avx2");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    for (const char* line :
         {"kernels: avx2 (this CPU: up to ", "avx2 loads", "vfmadd ymm", "vpmaddubsw+vpmaddwd ymm",
          "weights: int8 dot (avx2) C/W", "threshold: fp32 FMA (avx2) C/W"})
        EXPECT_TRUE(has(r.out, line)) << line << "\n" << r.out;
    EXPECT_FALSE(has(r.out, "zmm")) << r.out;
    EXPECT_FALSE(has(r.out, "vpdpbusd")) << r.out;

    if (detected_isa() < Isa::AvxVnni) return;
    r = run_kite("roofline " + model_arg() + " -t 2 --bw-size 64M --isa avxvnni");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_TRUE(has(r.out, "kernels: avxvnni (this CPU: up to ")) << r.out;
    EXPECT_TRUE(has(r.out, "vpdpbusd ymm")) << r.out;  // which int8 dot is fastest is timing
    EXPECT_FALSE(has(r.out, "zmm")) << r.out;
}

TEST(CliRoofline, MissingModelFailsBeforeMeasuring) {
    auto r = run_kite("roofline -t 1 --bw-size 32M -m /nonexistent.gguf");
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_TRUE(has(r.err, "cannot open")) << r.err;
}

}  // namespace
}  // namespace kite
