// `kite template` as a user runs it: the rendering exactly on stdout, one-line errors.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "run_command.h"
#include "test_paths.h"

namespace kite {
namespace {

namespace fs = std::filesystem;

fs::path write_temp(const std::string& name, const std::string& text) {
    const fs::path p = fs::temp_directory_path() / ("kite_template_test_" + name);
    std::ofstream(p, std::ios::binary) << text;
    return p;
}

TEST(TemplateCli, PrintsTheModelsRenderingExactly) {
    const fs::path ctx = write_temp(
        "ctx.json",
        R"({"messages": [{"role": "user", "content": "Hi"}], "add_generation_prompt": true})");
    auto r = test::run_kite("template --context " + ctx.string());
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out,
              "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging "
              "Face<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
    EXPECT_EQ(r.err, "");
}

TEST(TemplateCli, TemplateFileToolsAndTheModelsSpecialTokens) {
    const fs::path tmpl = write_temp(
        "t.jinja", "{{ bos_token }}|{{ tools[0].function.name }}|{{ eos_token }}|{{ x }}");
    const fs::path ctx = write_temp(
        "ctx2.json",
        R"({"messages": [], "tools": [{"type": "function", "function": {"name": "get_weather"}}],)"
        R"( "x": 3})");
    auto r = test::run_kite("template -m " + test::default_model_path() + " --template " +
                            tmpl.string() + " --context " + ctx.string());
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, "<|im_start|>|get_weather|<|im_end|>|3");
    // A context that names bos_token itself wins over the model's.
    const fs::path ctx3 = write_temp(
        "ctx3.json",
        R"({"messages": [], "bos_token": "<B>", "tools": [{"function": {"name": "f"}}]})");
    r = test::run_kite("template --template " + tmpl.string() + " --context " + ctx3.string());
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, "<B>|f||");
}

TEST(TemplateCli, BadInputIsOneLineAndExitOne) {
    const fs::path good = write_temp("good.json", R"({"messages": []})");
    const std::vector<std::pair<std::string, std::string>> cases = {
        {"{% if %}", R"({"messages": []})"},                               // does not parse
        {"{{ raise_exception('multi\\nline') }}", R"({"messages": []})"},  // raises
        {"{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}", R"({"messages": []})"},  // recursion
        {"x", "not json"},                                   // context not JSON
        {"x", R"({"messages": [{"content": "no role"}]})"},  // message without role
    };
    int i = 0;
    for (const auto& [source, context] : cases) {
        const fs::path t = write_temp("bad" + std::to_string(i) + ".jinja", source);
        const fs::path c = write_temp("bad" + std::to_string(i++) + ".json", context);
        auto r = test::run_kite("template --template " + t.string() + " --context " + c.string());
        EXPECT_EQ(r.exit_code, 1) << source;
        EXPECT_EQ(r.out, "") << source;
        EXPECT_EQ(test::count_lines(r.err), 1) << r.err;
    }
}

}  // namespace
}  // namespace kite
