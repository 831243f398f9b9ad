// Model files whose weights Kite cannot use: every command that loads the model stops with one
// error line naming the file, the tensor and its type, and exit code 1.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "run_command.h"
#include "tiny_llama.h"

namespace kite {
namespace {

// IQ2_XXS: a type Kite reads the layout of but has no dot product for.
TEST(CliBadWeights, TypeKiteCannotComputeWith) {
    test::TinyLlama tiny;
    tiny.type_of = [](const std::string& leaf) {
        return leaf == "attn_q" ? TensorType::IQ2_XXS : TensorType::Q8_0;
    };
    const std::string path = (std::filesystem::temp_directory_path() /
                              ("kite_iq2_" + std::to_string(::getpid()) + ".gguf"))
                                 .string();
    const std::vector<uint8_t> bytes = tiny.to_bytes();
    std::ofstream(path, std::ios::binary)
        .write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
    for (const std::string& cmd :
         {"run -m " + path + " -p hi -n 1", "bench -m " + path + " -p 8 -n 0 -r 1",
          "perplexity -m " + path + " -f " + path}) {
        auto r = test::run_kite(cmd);
        EXPECT_EQ(r.exit_code, 1) << cmd << "\n" << r.err;
        EXPECT_EQ(test::count_lines(r.err), 1) << cmd << "\n" << r.err;
        EXPECT_NE(r.err.find("'" + path +
                             "': tensor 'blk.0.attn_q.weight' has type IQ2_XXS, "
                             "which Kite cannot compute with"),
                  std::string::npos)
            << cmd << "\n"
            << r.err;
    }
    std::filesystem::remove(path);
}

}  // namespace
}  // namespace kite
