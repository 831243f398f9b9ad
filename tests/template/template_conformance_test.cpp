// Every real chat template in the shared test data, rendered with every conversation, must
// match what Python's jinja2 renders in transformers' environment byte for byte; where the
// reference raised, Kite must raise too.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "sanitized_build.h"
#include "template/template.h"
#include "test_paths.h"

namespace kite::tmpl {
namespace {

using nlohmann::ordered_json;
namespace fs = std::filesystem;

std::string slurp(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

// The fixed time render.py gives strftime_now: 2026-11-30 12:00:00.
std::time_t reference_now() {
    std::tm tm{};
    tm.tm_year = 2026 - 1900;
    tm.tm_mon = 10;
    tm.tm_mday = 30;
    tm.tm_hour = 12;
    return timegm(&tm);
}

// The variables render.py passes for one case.
ordered_json case_context(const ordered_json& c) {
    ordered_json ctx = {{"bos_token", "<s>"},
                        {"eos_token", "</s>"},
                        {"add_generation_prompt", c.value("add_generation_prompt", false)},
                        {"messages", c["messages"]}};
    for (const char* key : {"tools", "documents"})
        if (c.contains(key)) ctx[key] = c[key];
    if (c.contains("kwargs"))
        for (const auto& [key, value] : c["kwargs"].items()) ctx[key] = value;
    return ctx;
}

TEST(TemplateConformance, AllTemplatesAllCases) {
    const fs::path dir = fs::path(test::testdata_dir()) / "templates";
    ASSERT_TRUE(fs::exists(dir / "cases.json")) << dir;
    const ordered_json cases = ordered_json::parse(slurp(dir / "cases.json"));
    RenderOptions options;
    options.now = reference_now();

    int total = 0, passed = 0, templates = 0;
    std::vector<std::string> failures;
    for (const auto& entry : fs::directory_iterator(dir / "jinja")) {
        const std::string name = entry.path().stem().string();
        const fs::path expected_path = dir / "expected" / (name + ".jsonl");
        if (!fs::exists(expected_path)) continue;  // the reference could not parse it
        ++templates;
        std::unique_ptr<Template> tmpl;
        std::string parse_error;
        try {
            tmpl = std::make_unique<Template>(slurp(entry.path()));
        } catch (const TemplateError& e) {
            parse_error = e.what();
        }
        std::istringstream lines(slurp(expected_path));
        std::string line;
        size_t i = 0;
        while (std::getline(lines, line)) {
            const ordered_json expected = ordered_json::parse(line);
            const ordered_json& c = cases.at(i++);
            ASSERT_EQ(expected["case"], c["id"]);
            ++total;
            const std::string id = name + "/" + c["id"].get<std::string>();
            if (!tmpl) {
                failures.push_back(id + ": does not parse: " + parse_error);
                continue;
            }
            std::string output, error;
            try {
                output = tmpl->render_json(case_context(c), options);
            } catch (const TemplateError& e) {
                error = e.what();
            }
            if (expected.contains("error")) {
                if (error.empty())
                    failures.push_back(id + ": rendered, but the reference raised " +
                                       expected["error"].get<std::string>());
                else
                    ++passed;
            } else if (!error.empty()) {
                failures.push_back(id + ": raised " + error);
            } else if (output != expected["output"].get<std::string>()) {
                const std::string& want = expected["output"].get_ref<const std::string&>();
                size_t at = 0;
                while (at < output.size() && at < want.size() && output[at] == want[at]) ++at;
                failures.push_back(id + ": differs at byte " + std::to_string(at) + ": got '" +
                                   output.substr(at > 20 ? at - 20 : 0, 80) + "' want '" +
                                   want.substr(at > 20 ? at - 20 : 0, 80) + "'");
            } else {
                ++passed;
            }
        }
    }
    std::printf("[conformance] %d templates, %d of %d cases match the reference\n", templates,
                passed, total);
    for (const std::string& f : failures) ADD_FAILURE() << f;
    EXPECT_EQ(templates, 47);
    EXPECT_EQ(passed, total);
}

// The micro-benchmark: a 20-turn conversation with tools and tool calls through Qwen 2.5's
// template (parsed once, as the server does), median of 51 renderings. Target: under 1 ms.
TEST(TemplateConformance, TwentyTurnConversationWithToolsRendersQuickly) {
    const fs::path dir = fs::path(test::testdata_dir()) / "templates";
    const Template tmpl(slurp(dir / "jinja" / "Qwen-Qwen2.5-7B-Instruct.jinja"));
    const ordered_json cases = ordered_json::parse(slurp(dir / "cases.json"));
    ordered_json ctx = case_context(cases.at(4));  // tools_call_and_result
    const ordered_json turn = ctx["messages"];
    ctx["messages"] = ordered_json::array({{{"role", "system"}, {"content", "Be helpful."}}});
    for (int i = 0; i < 20; ++i)
        for (const auto& m : turn) ctx["messages"].push_back(m);
    for (int i = 0; i < 20; ++i)
        ctx["messages"].push_back({{"role", i % 2 ? "assistant" : "user"},
                                   {"content", "Turn " + std::to_string(i) + " of the talk."}});
    std::vector<double> ms;
    size_t bytes = 0;
    for (int i = 0; i < 51; ++i) {
        const auto start = std::chrono::steady_clock::now();
        bytes = tmpl.render_json(ctx).size();
        ms.push_back(
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                .count());
    }
    std::sort(ms.begin(), ms.end());
    std::printf("[bench] %zu messages with tools -> %zu bytes: median %.3f ms per rendering\n",
                ctx["messages"].size(), bytes, ms[ms.size() / 2]);
    EXPECT_GT(bytes, 5000u);
    if (!test::kSanitizedBuild) {
        EXPECT_LT(ms[ms.size() / 2], 50.0);  // a loose bound: catches pathologies, not noise
    }
}

}  // namespace
}  // namespace kite::tmpl
