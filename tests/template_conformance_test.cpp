// Every real chat template in the shared test data, rendered with every conversation, must
// match what Python's jinja2 renders in transformers' environment byte for byte; where the
// reference raised, Kite must raise too.
#include <gtest/gtest.h>

#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

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

}  // namespace
}  // namespace kite::tmpl
