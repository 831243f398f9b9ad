// The CLI refuses what would hurt, with one line: flag values that would wrap or poison
// (empty sizes, signed or overflowing seeds, NaN), contexts past the model or memory or too
// small for one token, and a quantize output that is not a regular file or a new path (which
// stays untouched).
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "run_command.h"
#include "test_paths.h"

namespace kite {
namespace {

using test::expect_one_line_error;
using test::run_kite;

TEST(CliHardening, BadFlagValuesAreUsageErrors) {
    expect_one_line_error(run_kite("run -p hi --kv-mem ''"), 2, "not a size");
    expect_one_line_error(run_kite("run -p hi --kv-mem 12Q"), 2, "not a size");
    expect_one_line_error(run_kite("run -p hi --seed -1"), 2, "not a seed");
    expect_one_line_error(run_kite("run -p hi --seed 18446744073709551616"), 2, "not a seed");
    expect_one_line_error(run_kite("run -p hi --temp nan"), 2, "not a finite number");
    expect_one_line_error(run_kite("run -p hi --top-p inf"), 2, "not a finite number");
    expect_one_line_error(run_kite("bench --peak-gbs nan"), 2, "not a finite number");
    expect_one_line_error(run_kite("bench --bw-size ''"), 2, "not a size");
    expect_one_line_error(run_kite("run -p hi --draft-vocab -1"), 2, "--draft-vocab");
    // The largest seed is a seed.
    auto r = run_kite("run -p hi -n 1 --seed 18446744073709551615 -t 1");
    EXPECT_EQ(r.exit_code, 0) << r.err;
}

TEST(CliHardening, SizesPastTheModelOrMemoryAreRefusedBeforeAllocating) {
    expect_one_line_error(run_kite("run -p hi -c 1000000"), 1, "exceeds the model's 8192");
    expect_one_line_error(run_kite("run -p hi -c 16777216"), 1, "exceeds the model's 8192");
    expect_one_line_error(run_kite("bench -p 1048576 -n 0 -r 1"), 1, "more than the model's 8192");
    // Within the model but not within memory: 8192 tokens x 1024 sequences of KV.
    expect_one_line_error(run_kite("serve --max-seqs 1024 --kv-mem 4000G --port 0"), 1,
                          "not enough memory");
}

TEST(CliHardening, AContextTooSmallForAPromptAndOneTokenIsOneErrorLine) {
    // A server that would refuse every request is refused at start instead (bounded: before
    // the check it listened until killed).
    expect_one_line_error(run_kite("serve -c 1 --port 0", "/dev/null", 60), 1,
                          "cannot hold a prompt and one generated token");
    expect_one_line_error(run_kite("run -p hi -c 1"), 1, "does not leave room");
    // No progress line before the error.
    expect_one_line_error(run_kite("perplexity -f /usr/share/common-licenses/GPL-3 -c 1"), 1,
                          "at least 4 tokens");
}

TEST(CliHardening, QuantizeWritesOnlyRegularFilesOrNewPaths) {
    namespace fs = std::filesystem;
    const fs::path dir =
        fs::temp_directory_path() / ("kite_quantize_out_" + std::to_string(getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir / "a_directory");
    const std::string model = test::default_model_path();
    expect_one_line_error(
        run_kite("quantize " + model + " " + (dir / "a_directory").string() + " Q8_0"), 1,
        "not a regular file");
    EXPECT_TRUE(fs::is_directory(dir / "a_directory"));
    fs::create_symlink("/dev/null", dir / "to_device");
    expect_one_line_error(
        run_kite("quantize " + model + " " + (dir / "to_device").string() + " Q8_0"), 1,
        "symlink to something that is not a regular file");
    EXPECT_TRUE(fs::is_character_file("/dev/null"));
    ASSERT_EQ(mkfifo((dir / "fifo").c_str(), 0600), 0);
    expect_one_line_error(run_kite("quantize " + model + " " + (dir / "fifo").string() + " Q8_0"),
                          1, "not a regular file");
    EXPECT_TRUE(fs::is_fifo(dir / "fifo"));
    // A directory where OUT.tmp would go is refused too.
    fs::create_directories(dir / "out.gguf.tmp");
    expect_one_line_error(
        run_kite("quantize " + model + " " + (dir / "out.gguf").string() + " Q8_0"), 1,
        "is not a regular file");
    EXPECT_FALSE(fs::exists(dir / "out.gguf"));
    fs::remove_all(dir);
}

}  // namespace
}  // namespace kite
