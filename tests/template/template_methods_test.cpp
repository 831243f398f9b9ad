// Python's str, list and dict methods, str.format and dict keys of every hashable kind, checked
// against Python's jinja2: tests/fixtures/template_methods.json holds each case's template,
// context, and the output jinja2 rendered or the error it raised
// (tools/make-template-method-fixtures.py writes it). The engine must render the same bytes,
// or raise where jinja2 raised.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "template/template.h"

namespace kite::tmpl {
namespace {

nlohmann::ordered_json load_cases() {
    const std::string path = std::string(KITE_SOURCE_DIR) + "/tests/fixtures/template_methods.json";
    std::ifstream in(path);
    if (!in) return nullptr;
    std::stringstream text;
    text << in.rdbuf();
    return nlohmann::ordered_json::parse(text.str())["cases"];
}

// What the engine makes of one case: {"output": ...} or {"error": ...}.
nlohmann::ordered_json render_case(const nlohmann::ordered_json& c) {
    try {
        return {{"output", Template(c["template"].get<std::string>()).render_json(c["context"])}};
    } catch (const TemplateError& e) {
        return {{"error", e.what()}};
    }
}

TEST(TemplateMethods, EveryCaseRendersAsJinja2Renders) {
    const nlohmann::ordered_json cases = load_cases();
    ASSERT_TRUE(cases.is_array()) << "tests/fixtures/template_methods.json is missing";
    ASSERT_GE(cases.size(), 150u);
    size_t passed = 0;
    for (const auto& c : cases) {
        const nlohmann::ordered_json got = render_case(c);
        const bool ok = c.contains("error")
                            ? got.contains("error")
                            : got.contains("output") && got["output"] == c["output"];
        passed += ok;
        EXPECT_TRUE(ok) << "template: " << c["template"].get<std::string>()
                        << "\n  jinja2: " << (c.contains("error") ? c["error"] : c["output"]).dump()
                        << "\n  kite:   " << got.begin().value().dump();
    }
    std::printf("[template methods] %zu of %zu cases render as jinja2 does\n", passed,
                cases.size());
}

}  // namespace
}  // namespace kite::tmpl
