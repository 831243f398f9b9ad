// The KV-cache flags' bad input on every command that takes them: an unknown type, a window
// smaller than its sinks, a budget too small for one sequence. Each is one error line naming
// the flag and exit code 1, before anything runs (kite serve does not start).
#include <gtest/gtest.h>

#include <string>

#include "run_command.h"

namespace kite {
namespace {

using test::expect_one_line_error;
using test::run_kite;

// Each command with what it needs besides the flags under test.
const std::string kKvTypeCommands[] = {"run -p hi",
                                       "chat",
                                       "serve --port 0",
                                       "bench",
                                       "plan",
                                       "roofline",
                                       "perplexity -f /usr/share/common-licenses/GPL-3"};
const std::string kBudgetCommands[] = {"run -p hi", "chat", "serve --port 0", "plan",
                                       "perplexity -f /usr/share/common-licenses/GPL-3"};

TEST(CliKvFlags, UnknownTypesNameTheFlagAndTheTypes) {
    for (const std::string& command : kKvTypeCommands)
        for (const std::string flag : {"--kv-type", "--kv-type-k", "--kv-type-v"}) {
            SCOPED_TRACE(command + " " + flag);
            expect_one_line_error(
                run_kite(command + " " + flag + " q3"), 1,
                flag + " 'q3' is not a KV-cache type (supported: f32, f16, q8_0, q4_0)");
        }
    // No command runs a model with a type it does not know, whatever else it was given.
    expect_one_line_error(run_kite("serve --port 0 --kv-type-k q8_0 --kv-type-v int4"), 1,
                          "--kv-type-v 'int4' is not a KV-cache type");
}

TEST(CliKvFlags, AWindowSmallerThanItsSinksNamesBothFlags) {
    for (const std::string& command : kBudgetCommands) {
        SCOPED_TRACE(command);
        expect_one_line_error(run_kite(command + " --kv-window 3 --kv-sinks 4"), 1,
                              "--kv-window 3 is smaller than --kv-sinks 4");
    }
    expect_one_line_error(run_kite("plan --mem 1G --kv-window 3 --kv-sinks 4"), 1,
                          "--kv-window 3 is smaller than --kv-sinks 4");
}

// One block of the default model's f16 cache is 16 tokens x 23,040 bytes = 368,640 bytes.
TEST(CliKvFlags, ABudgetTooSmallForOneSequenceNamesTheFlag) {
    for (const std::string& command : kBudgetCommands) {
        SCOPED_TRACE(command);
        expect_one_line_error(run_kite(command + " --kv-mem 100K"), 1,
                              "--kv-mem 100K holds no sequence: one KV block (16 tokens) takes "
                              "368640 bytes in f16");
    }
    // 1M holds two blocks: 32 tokens, fewer than a prompt of 1 token and 128 to generate.
    expect_one_line_error(run_kite("run -p hi --kv-mem 1M"), 1,
                          "--kv-mem 1M holds 32 tokens of KV cache, fewer than the 129 this "
                          "sequence needs");
    expect_one_line_error(
        run_kite("perplexity -f /usr/share/common-licenses/GPL-3 -c 128 --kv-mem 1M"), 1,
        "--kv-mem 1M holds 32 tokens of KV cache, fewer than the 128 one window of -c needs");
    // A window's peak (KvWindow::peak_blocks: 10 blocks for 100 + 4 sinks) past the budget.
    expect_one_line_error(run_kite("plan --kv-mem 1M --kv-window 100"), 1,
                          "needs up to 160 tokens of KV cache, more than the whole cache holds "
                          "(32 tokens) (--kv-mem 1M)");
    // The budget kite plan is given holds no sequence of the context beside the weights.
    expect_one_line_error(run_kite("plan --mem 10M"), 1,
                          "--mem 10M: a budget of 10485760 bytes holds no sequence of 8192 tokens");
}

}  // namespace
}  // namespace kite
