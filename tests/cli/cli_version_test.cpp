// kite --version: what a bug report starts with, on stdout, exit 0.
#include <gtest/gtest.h>

#include <regex>

#include "kernels/cpu/isa.h"
#include "run_command.h"

namespace kite {
namespace {

TEST(CliVersion, NamesVersionCommitCompilerAndKernelLevel) {
    const test::CommandResult r = test::run_kite("--version");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_TRUE(r.err.empty()) << r.err;
    EXPECT_EQ(test::count_lines(r.out), 4) << r.out;
    EXPECT_TRUE(std::regex_search(r.out, std::regex(R"(^kite \d+\.\d+\.\d+\n)"))) << r.out;
    EXPECT_TRUE(std::regex_search(r.out, std::regex(R"(\ncommit: ([0-9a-f]{7,40}|unknown)\n)")))
        << r.out;
    EXPECT_TRUE(std::regex_search(r.out, std::regex(R"(\ncompiler: (GNU|Clang) \d+\.\d+)")))
        << r.out;
    // The level the kernels run at here (this process sees the same CPU and KITE_ISA).
    EXPECT_NE(r.out.find(std::string("\nkernels: ") + isa_name(active_isa())), std::string::npos)
        << r.out;
}

}  // namespace
}  // namespace kite
