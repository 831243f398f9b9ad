// Runs the kite binary the way a user would, capturing exit code, stdout and stderr.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace kite::test {

struct CommandResult {
    int exit_code = -1;
    std::string out;
    std::string err;
};

inline std::string read_text(const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

// `args` is appended to the kite binary's path as shell words (quote them yourself); stdin
// comes from `input_path`. A command that may not end (a server) gets `timeout_s`: then it
// is killed (exit 137).
inline CommandResult run_kite(const std::string& args, const std::string& input_path = "/dev/null",
                              int timeout_s = 0) {
    static int counter = 0;
    auto dir = std::filesystem::temp_directory_path();
    std::string tag = std::to_string(::getpid()) + "_" + std::to_string(counter++);
    auto out = dir / ("kite_out_" + tag), err = dir / ("kite_err_" + tag);
    const std::string limit =
        timeout_s > 0 ? "timeout -s KILL " + std::to_string(timeout_s) + " " : "";
    std::string cmd = limit + KITE_KITE_BIN + " " + args + " <" + input_path + " >" + out.string() +
                      " 2>" + err.string();
    int status = std::system(cmd.c_str());
    CommandResult r;
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    r.out = read_text(out);
    r.err = read_text(err);
    std::filesystem::remove(out);
    std::filesystem::remove(err);
    return r;
}

inline int count_lines(const std::string& s) {
    int n = 0;
    for (char c : s) n += c == '\n';
    return n;
}

// Bad input's contract: exit `code`, one line on stderr that says `needle`, nothing on stdout.
inline void expect_one_line_error(const CommandResult& r, int code, const std::string& needle) {
    EXPECT_EQ(r.exit_code, code) << r.err;
    EXPECT_EQ(count_lines(r.err), 1) << r.err;
    EXPECT_NE(r.err.find(needle), std::string::npos) << r.err;
    EXPECT_TRUE(r.out.empty()) << r.out;
}

}  // namespace kite::test
