// `kite embed` as a user runs it: one vector per input, --dimensions, and one error line for
// what it cannot do (nomic-embed-v1.5 when installed; the generative default model otherwise).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "run_command.h"
#include "test_paths.h"

namespace kite {
namespace {

std::string nomic() {
    return test::find_real_model("nomic-embed-v1.5");
}

std::vector<std::vector<double>> tsv_rows(const std::string& out) {
    std::vector<std::vector<double>> rows;
    std::istringstream lines(out);
    for (std::string line; std::getline(lines, line);) {
        std::istringstream values(line);
        rows.emplace_back();
        for (double v; values >> v;) rows.back().push_back(v);
    }
    return rows;
}

TEST(CliEmbed, OneNormalisedVectorPerInput) {
    if (nomic().empty()) GTEST_SKIP() << "nomic-embed-v1.5 is not installed";
    const auto r = test::run_kite("embed -m '" + nomic() + "' -t 2 -o tsv hello 'good morning'");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto rows = tsv_rows(r.out);
    ASSERT_EQ(rows.size(), 2u);
    for (const auto& row : rows) {
        ASSERT_EQ(row.size(), 768u);
        double sum = 0;
        for (double v : row) sum += v * v;
        EXPECT_NEAR(sum, 1.0, 1e-4);
    }
    const auto cut = test::run_kite("embed -m '" + nomic() + "' -o tsv --dimensions 64 hello");
    ASSERT_EQ(cut.exit_code, 0) << cut.err;
    EXPECT_EQ(tsv_rows(cut.out).at(0).size(), 64u);
}

TEST(CliEmbed, RejectsWhatItCannotEmbed) {
    const std::string generative = "embed -m '" + test::default_model_path() + "' ";
    test::expect_one_line_error(test::run_kite(generative + "hi"), 1, "give --pooling");
    test::expect_one_line_error(test::run_kite(generative + "--pooling max hi"), 1,
                                "not a pooling");
    if (nomic().empty()) GTEST_SKIP() << "nomic-embed-v1.5 is not installed";
    const std::string m = "embed -m '" + nomic() + "' ";
    test::expect_one_line_error(test::run_kite(m + "--dimensions 0 hi"), 1, "out of range");
    test::expect_one_line_error(test::run_kite(m + "--dimensions 769 hi"), 1, "out of range");
    test::expect_one_line_error(test::run_kite(m + "''"), 1, "empty");
    const auto path = std::filesystem::temp_directory_path() / "kite_embed_long.txt";
    std::string words;
    for (int i = 0; i < 3000; ++i) words += "word ";
    std::ofstream(path) << words << "\n";
    test::expect_one_line_error(test::run_kite(m + "-f " + path.string()), 1, "context of 2048");
    std::filesystem::remove(path);
}

TEST(CliEmbed, AnEmbeddingModelDoesNotGenerate) {
    if (nomic().empty()) GTEST_SKIP() << "nomic-embed-v1.5 is not installed";
    test::expect_one_line_error(test::run_kite("run -m '" + nomic() + "' -p hi -n 2"), 1,
                                "is an embedding model");
}

}  // namespace
}  // namespace kite
