// `kite tokenize` as a user runs it: output formats, special tokens, input errors.
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "test_paths.h"

namespace kite {
namespace {

namespace fs = std::filesystem;

struct KiteRun {
    int exit_code = -1;
    std::string out, err;
};

std::string slurp(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

// `args` are shell words appended to the kite binary (quote them yourself).
KiteRun kite(const std::string& args) {
    static int counter = 0;
    const fs::path dir = fs::temp_directory_path();
    const std::string tag = std::to_string(::getpid()) + "_tok_" + std::to_string(counter++);
    const fs::path out = dir / ("kite_out_" + tag), err = dir / ("kite_err_" + tag);
    const std::string cmd = std::string(KITE_KITE_BIN) + " tokenize -m '" +
                            test::default_model_path() + "' " + args + " </dev/null >" +
                            out.string() + " 2>" + err.string();
    const int status = std::system(cmd.c_str());
    KiteRun r;
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    r.out = slurp(out);
    r.err = slurp(err);
    fs::remove(out);
    fs::remove(err);
    return r;
}

fs::path write_temp(const std::string& name, const std::string& text) {
    const fs::path p = fs::temp_directory_path() / (std::to_string(::getpid()) + "_" + name);
    std::ofstream(p, std::ios::binary) << text;
    return p;
}

TEST(CliTokenize, PrintsOneTokenPerLine) {
    const KiteRun r = kite("'Hello world'");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, "19556\t'Hello'\n905\t' world'\n");
}

TEST(CliTokenize, PrintsIdsAsJson) {
    const KiteRun r = kite("--ids 'Hello world'");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, "[19556, 905]\n");
}

TEST(CliTokenize, ParsesSpecialTokensUnlessTold) {
    const KiteRun special = kite("--ids '<|im_start|>'");
    ASSERT_EQ(special.exit_code, 0) << special.err;
    EXPECT_EQ(special.out, "[1]\n");
    const KiteRun plain = kite("--ids --no-special '<|im_start|>'");
    ASSERT_EQ(plain.exit_code, 0) << plain.err;
    EXPECT_NE(plain.out, "[1]\n");
    EXPECT_EQ(plain.out.find("[1,"), std::string::npos);
}

TEST(CliTokenize, ReadsAFileAndEscapesControlCharacters) {
    const fs::path p = write_temp("tokenize_input.txt", "a\n\tb");
    const KiteRun r = kite("--file '" + p.string() + "'");
    fs::remove(p);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("\t'\\n'\n"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("\t'\\t'\n"), std::string::npos) << r.out;
}

TEST(CliTokenize, EmptyTextHasNoTokens) {
    const KiteRun r = kite("--ids ''");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, "[]\n");
}

void expect_one_line_error(const KiteRun& r, int code, const std::string& needle) {
    EXPECT_EQ(r.exit_code, code) << r.err;
    EXPECT_TRUE(r.out.empty()) << r.out;
    EXPECT_NE(r.err.find(needle), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

TEST(CliTokenize, RejectsBadInput) {
    expect_one_line_error(kite("--file /nonexistent/input.txt"), 1, "cannot read");
    expect_one_line_error(kite(""), 2, "TEXT or --file is required");
    expect_one_line_error(kite("text --file /nonexistent/input.txt"), 2, "excludes");
}

}  // namespace
}  // namespace kite
