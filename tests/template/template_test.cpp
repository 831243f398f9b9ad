// The template engine on its own: Python semantics, Jinja2 statements and whitespace
// control, filters, tests, methods, and the sandbox limits. Expected strings are what
// Python's jinja2 3.1 renders for the same source in transformers' environment.
#include <gtest/gtest.h>

#include <chrono>

#include <nlohmann/json.hpp>

#include "template/template.h"

namespace kite::tmpl {
namespace {

std::string render(std::string_view source, const nlohmann::ordered_json& context = {},
                   const RenderOptions& options = {}) {
    return Template(source).render_json(
        context.is_null() ? nlohmann::ordered_json::object() : context, options);
}

TEST(Template, PythonValuesPrintAsPythonDoes) {
    EXPECT_EQ(render("{{ 7 / 2 }} {{ 4 / 2 }} {{ 7 // 2 }} {{ -7 // 2 }} {{ -7 % 3 }}"),
              "3.5 2.0 3 -4 2");
    EXPECT_EQ(render("{{ none }} {{ true }} {{ 1e-5 }} {{ 1e16 }} {{ 0.1 + 0.2 }}"),
              "None True 1e-05 1e+16 0.30000000000000004");
    EXPECT_EQ(render("{{ [1, 'a', none, {'k': \"it's\"}] }}"), "[1, 'a', None, {'k': \"it's\"}]");
    EXPECT_EQ(render("{{ 'a\\n\\tb\\u00e9' }}"), "a\n\tb\xc3\xa9");
    EXPECT_EQ(render("{{ x }}|{{ x is defined }}|{{ x | default('d') }}"), "|False|d");
    EXPECT_EQ(render("{{ 'ab' * 3 }} {{ [1] + [2] }} {{ 'x' ~ 1 ~ none }}"),
              "ababab [1, 2] x1None");
}

TEST(Template, TruthinessComparisonAndMembership) {
    EXPECT_EQ(render("{{ not [] }} {{ not {} }} {{ not '' }} {{ not 0.0 }} {{ not 'a' }}"),
              "True True True True False");
    EXPECT_EQ(render("{{ 1 < 2 < 3 }} {{ 1 == 1.0 }} {{ 'b' > 'a' }} {{ [1, 2] < [1, 3] }}"),
              "True True True True");
    EXPECT_EQ(render("{{ 'ell' in 'hello' }} {{ 2 in [1, 2] }} {{ 'k' in {'k': 1} }} "
                     "{{ 'z' not in 'abc' }}"),
              "True True True True");
    EXPECT_EQ(render("{{ 0 or 'x' }} {{ 1 and 'y' }} {{ '' and 'z' }}|"), "x y |");
    EXPECT_THROW(render("{{ 1 < 'a' }}"), TemplateError);
    EXPECT_THROW(render("{{ 'a' + 1 }}"), TemplateError);
    EXPECT_THROW(render("{{ 1 / 0 }}"), TemplateError);
}

TEST(Template, UndefinedRaisesWhereJinjaRaises) {
    EXPECT_EQ(render("[{{ m.content }}]", {{"m", {{"role", "user"}}}}), "[]");
    EXPECT_THROW(render("{{ missing.attr }}"), TemplateError);
    EXPECT_THROW(render("{{ missing + 1 }}"), TemplateError);
    EXPECT_THROW(render("{{ missing() }}"), TemplateError);
    EXPECT_EQ(render("{% for x in missing %}x{% else %}empty{% endfor %}"), "empty");
}

TEST(Template, LoopsWithLoopVariablesFilterElseAndControls) {
    EXPECT_EQ(render("{% for x in [5, 6, 7] %}{{ loop.index }}{{ loop.index0 }}{{ loop.first }}"
                     "{{ loop.last }}{{ loop.length }}{{ loop.revindex }};{% endfor %}"),
              "10TrueFalse33;21FalseFalse32;32FalseTrue31;");
    EXPECT_EQ(render("{% for x in range(10) if x is odd %}{{ x }}{{ loop.length }} {% endfor %}"),
              "15 35 55 75 95 ");
    EXPECT_EQ(render("{% for x in range(10) %}{% if x == 2 %}{% continue %}{% endif %}"
                     "{% if x == 4 %}{% break %}{% endif %}{{ x }}{% endfor %}"),
              "013");
    EXPECT_EQ(render("{% for k, v in {'a': 1, 'b': 2}.items() %}{{ k }}={{ v }},{% endfor %}"),
              "a=1,b=2,");
    EXPECT_EQ(render("{% for x in [1, 2] %}{{ loop.previtem is defined }}{{ loop.nextitem }}"
                     "{% endfor %}"),
              "False2True");
}

TEST(Template, ScopesAndNamespace) {
    EXPECT_EQ(render("{% set x = 1 %}{% for i in [1] %}{% set x = 2 %}{% endfor %}{{ x }}"), "1");
    EXPECT_EQ(render("{% set ns = namespace(n=0) %}{% for i in [1, 2, 3] %}"
                     "{% set ns.n = ns.n + i %}{% endfor %}{{ ns.n }}"),
              "6");
    EXPECT_EQ(render("{% if true %}{% set y = 'kept' %}{% endif %}{{ y }}"), "kept");
    EXPECT_EQ(render("{% set a, b = [1, 2] %}{{ b }}{{ a }}"), "21");
    EXPECT_EQ(render("{% set block %}  inner  {% endset %}[{{ block }}]"), "[  inner  ]");
    EXPECT_THROW(render("{% set d = {} %}{% set d.x = 1 %}"), TemplateError);
}

TEST(Template, MacrosDefaultsAndCaller) {
    EXPECT_EQ(render("{% macro greet(name, punct='!') %}Hi {{ name }}{{ punct }}{% endmacro %}"
                     "{{ greet('Ann') }} {{ greet('Bo', punct='?') }}"),
              "Hi Ann! Hi Bo?");
    EXPECT_EQ(render("{% macro wrap() %}<{{ caller() }}>{% endmacro %}"
                     "{% call wrap() %}body{% endcall %}"),
              "<body>");
}

TEST(Template, WhitespaceControlTrimAndLstripBlocks) {
    // trim_blocks drops the newline after a block tag, lstrip_blocks its indentation.
    EXPECT_EQ(render("a\n  {% if true %}\n  b\n  {% endif %}\nc\n"), "a\n  b\nc");
    EXPECT_EQ(render("a  {%- if true -%}  b  {%- endif -%}  c"), "abc");
    EXPECT_EQ(render("x {{- ' y ' -}} z"), "x y z");
    EXPECT_EQ(render("  {%+ if true %}k{% endif %}"), "  k");
    EXPECT_EQ(render("{# comment #}\nafter"), "after");
    EXPECT_EQ(render("{{ 'v' }}\nnext"), "v\nnext");  // variable tags keep their newline
}

TEST(Template, FiltersTemplatesUse) {
    EXPECT_EQ(render("{{ '  pad  ' | trim }}|{{ 'a,b' | replace(',', ';') }}|{{ 'Ab' | upper }}"),
              "pad|a;b|AB");
    EXPECT_EQ(render("{{ [3, 1, 2] | sort | join('-') }} {{ [1, 2, 3] | length }} "
                     "{% for k, v in {'b': 1, 'A': 2} | dictsort %}{{ k }}{{ v }}{% endfor %}"),
              "1-2-3 3 A2b1");
    nlohmann::ordered_json ctx = {
        {"ms", {{{"role", "user"}, {"c", 1}}, {{"role", "tool"}, {"c", 2}}}}};
    EXPECT_EQ(
        render("{{ ms | selectattr('role', 'equalto', 'tool') | map(attribute='c') | list }}", ctx),
        "[2]");
    EXPECT_EQ(render("{{ ms | rejectattr('role', 'eq', 'tool') | list | length }}", ctx), "1");
    EXPECT_EQ(render("{{ 'a\\nb\\n\\nc' | indent(2) }}|{{ 'x' | indent(2, true) }}"),
              "a\n  b\n\n  c|  x");
    EXPECT_EQ(render("{{ {'k': 'é\"', 'n': [1, 2.5, none, true]} | tojson }}"),
              "{\"k\": \"é\\\"\", \"n\": [1, 2.5, null, true]}");
    EXPECT_EQ(render("{{ {'k': [1]} | tojson(indent=2) }}"), "{\n  \"k\": [\n    1\n  ]\n}");
    EXPECT_THROW(render("{{ [1] | map('string') | tojson }}"), TemplateError);  // a generator
    EXPECT_THROW(render("{{ 1 | no_such_filter }}"), TemplateError);
    // Arguments of the wrong type are template errors, not crashes (found by the fuzzer).
    EXPECT_THROW(render("{{ 'x' | indent(missing) }}"), TemplateError);
    EXPECT_THROW(render("{{ 'x' | indent([2]) }}"), TemplateError);
    EXPECT_THROW(render("{{ 'x' | tojson(indent='2') }}"), TemplateError);
    EXPECT_THROW(render("{{ range('a') }}"), TemplateError);
    EXPECT_THROW(render("{{ 'x' | center('a') }}"), TemplateError);
    EXPECT_THROW(render("{{ 'x' | replace('x', 'y', 'z') }}"), TemplateError);
    EXPECT_THROW(render("{{ 1.5 | round('a') }}"), TemplateError);
}

TEST(Template, NumbersAtTheEdgesOfInt64AreErrorsOrPythonsResults) {
    // Expected strings are Python jinja2 3.1's renderings.
    EXPECT_EQ(render("{{ 1e999 }} {{ 1e-999 }}"), "inf 0.0");
    EXPECT_EQ(render("{{ -7 // 2 }} {{ -7 % 2 }} {{ 7 % -2 }}"), "-4 1 -1");
    EXPECT_EQ(render("{{ 1 ** 99999999999 }} {{ (-1) ** 99999999999 }}"), "1 -1");
    EXPECT_EQ(render("{{ 2 ** 62 }}"), "4611686018427387904");
    EXPECT_EQ(render("{{ [[1]] | map(attribute='0') | list }}"), "[1]");
    EXPECT_EQ(render("{{ [missing, 1] }}{{ missing }}"), "[Undefined, 1]");
    // Python's integers are unbounded; where an int64 overflows Kite raises instead.
    EXPECT_THROW(render("{{ 2 ** 63 }}"), TemplateError);
    EXPECT_THROW(render("{{ (-9223372036854775807 - 1) // -1 }}"), TemplateError);
    EXPECT_EQ(render("{{ (-9223372036854775807 - 1) % -1 }}"), "0");
    EXPECT_THROW(render("{{ (-9223372036854775807 - 1) | abs }}"), TemplateError);
    EXPECT_THROW(render("{{ [9223372036854775807, 1] | sum }}"), TemplateError);
    EXPECT_THROW(render("{{ 1e300 | int }}"), TemplateError);
    EXPECT_THROW(render("{{ '1e300' | int }}"), TemplateError);
    EXPECT_EQ(render("{{ [[1]] | map(attribute='99999999999999999999') | list }}"), "[Undefined]");
}

TEST(Template, StringDictListMethods) {
    EXPECT_EQ(render("{{ ' a b '.strip() }}|{{ 'a b  c'.split() }}|{{ 'a,b'.split(',') }}|"
                     "{{ 'xxhixx'.lstrip('x') }}|{{ 'Hello'.startswith(('He', 'x')) }}|"
                     "{{ 'hello world'.title() }}"),
              "a b|['a', 'b', 'c']|['a', 'b']|hixx|True|Hello World");
    EXPECT_EQ(render("{{ {'a': 1}.get('a') }} {{ {'a': 1}.get('b', 'none') }} "
                     "{{ {'a': 1}.keys() | list }} {{ [1, 2, 1].count(1) }}"),
              "1 none ['a'] 2");
    EXPECT_EQ(
        render("{{ 'héllo'[1:3] }} {{ [1, 2, 3][::-1] }} {{ 'abc'[-1] }} {{ 'héllo' | length }}"),
        "él [3, 2, 1] c 5");
    // The immutable sandbox refuses to change lists and dicts.
    EXPECT_THROW(render("{% set l = [] %}{% set _ = l.append(1) %}"), TemplateError);
}

TEST(Template, GlobalsRaiseExceptionAndStrftime) {
    try {
        render("{{ raise_exception('Only user and assistant roles') }}");
        FAIL() << "no exception";
    } catch (const TemplateError& e) {
        EXPECT_NE(std::string(e.what()).find("Only user and assistant roles"), std::string::npos);
    }
    RenderOptions o;
    o.now = 1796040000;  // 2026-11-30 12:00:00 UTC
    EXPECT_EQ(render("{{ strftime_now('%d %b %Y %H:%M') }}", {}, o), "30 Nov 2026 12:00");
}

TEST(Template, SyntaxErrorsAreTemplateErrors) {
    for (const char* bad : {"{% if x %}", "{{ 1 + }}", "{% for %}", "{{ 'unclosed }}",
                            "{% endfor %}", "{% include 'x' %}", "{{ a[ }}", "{# open"})
        EXPECT_THROW(Template{bad}, TemplateError) << bad;
}

TEST(Template, SandboxBoundsHostileTemplates) {
    // Unbounded recursion, iteration and output fail cleanly instead of crashing or hanging.
    EXPECT_THROW(render("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}"), TemplateError);
    RenderOptions small;
    small.limits.max_iterations = 10000;
    EXPECT_THROW(render("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}"
                        "{% endfor %}",
                        {}, small),
                 TemplateError);
    small.limits.max_output_bytes = 1000;
    EXPECT_THROW(render("{% for i in range(100) %}{{ 'ten bytes.' * 2 }}{% endfor %}", {}, small),
                 TemplateError);
    EXPECT_THROW(render("{{ 'x' * 100000000000 }}"), TemplateError);
    EXPECT_THROW(render("{% set ns = namespace(s='xx') %}{% for i in range(64) %}"
                        "{% set ns.s = ns.s ~ ns.s %}{% endfor %}"),
                 TemplateError);
    EXPECT_THROW(Template("{{ " + std::string(100000, '(') + " }}"), TemplateError);
    EXPECT_THROW(Template("{{ " + std::string(5000, '[') + "1" + std::string(5000, ']') + " }}"),
                 TemplateError);
    EXPECT_THROW(Template(std::string(5000, '{') + "% if x %}"), TemplateError);
}

}  // namespace
}  // namespace kite::tmpl
