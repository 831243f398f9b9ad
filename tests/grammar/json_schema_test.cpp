// JSON Schema front end: instances checked against what the JSON Schema specification (and
// Python's jsonschema, which labels the conformance data) says, and unsupported keywords
// refused with their name.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include <nlohmann/json.hpp>

#include "grammar/json_schema.h"
#include "grammar/matcher.h"
#include "json_schema_checks.h"
#include "sanitized_build.h"

namespace kite::grammar {
namespace {

using nlohmann::ordered_json;

TEST(GrammarJsonSchema, ObjectsWithRequiredAndOptionalProperties) {
    const char* s = R"({"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"string"}},
                        "required":["b"],"additionalProperties":false})";
    EXPECT_TRUE(accepts(s, R"({"b":"x"})"));
    EXPECT_TRUE(accepts(s, R"({"a":-12,"b":""})"));
    EXPECT_FALSE(accepts(s, R"({"a":1})"));
    EXPECT_FALSE(accepts(s, R"({"b":"x","c":1})"));
    EXPECT_FALSE(accepts(s, R"({"a":1.5,"b":"x"})"));
    EXPECT_FALSE(accepts(s, R"({"b":"x",})"));
}

TEST(GrammarJsonSchema, AdditionalPropertiesNeverRedefineDeclaredOnes) {
    const char* s =
        R"({"properties":{"a":{"type":"integer"}},"additionalProperties":{"type":"string"}})";
    EXPECT_TRUE(accepts(s, R"({"a":1,"ab":"x"})"));
    EXPECT_TRUE(accepts(s, R"({"b":"y"})"));
    EXPECT_FALSE(accepts(s, R"({"a":"x"})"));  // "a" must be an integer
    EXPECT_FALSE(accepts(s, R"({"c":1})"));
}

TEST(GrammarJsonSchema, RecursiveRefs) {
    const char* s = R"({"$defs":{"node":{"type":"object","properties":{"v":{"type":"integer"},
                        "next":{"$ref":"#/$defs/node"}},"required":["v"],"additionalProperties":false}},
                        "$ref":"#/$defs/node"})";
    EXPECT_TRUE(accepts(s, R"({"v":1,"next":{"v":2,"next":{"v":3}}})"));
    EXPECT_FALSE(accepts(s, R"({"v":1,"next":{"next":{"v":3}}})"));
}

TEST(GrammarJsonSchema, ArraysPrefixItemsAndCounts) {
    const char* s = R"({"type":"array","prefixItems":[{"type":"string"}],"items":{"type":"boolean"},
                        "minItems":2,"maxItems":3})";
    EXPECT_TRUE(accepts(s, R"(["a",true])"));
    EXPECT_TRUE(accepts(s, R"(["a",true,false])"));
    EXPECT_FALSE(accepts(s, R"(["a"])"));
    EXPECT_FALSE(accepts(s, R"(["a",true,false,true])"));
    EXPECT_FALSE(accepts(s, R"([true,true])"));
}

TEST(GrammarJsonSchema, StringsLengthPatternFormat) {
    EXPECT_TRUE(accepts(R"({"type":"string","minLength":2,"maxLength":3})", R"("é\"")"));
    EXPECT_FALSE(accepts(R"({"type":"string","minLength":2,"maxLength":3})", R"("abcd")"));
    EXPECT_TRUE(accepts(R"({"type":"string","pattern":"^[a-z]+-\\d+$"})", R"("abc-12")"));
    EXPECT_FALSE(accepts(R"({"type":"string","pattern":"^[a-z]+-\\d+$"})", R"("abc-")"));
    EXPECT_TRUE(accepts(R"({"type":"string","pattern":"b"})", R"("abc")"));
    EXPECT_TRUE(accepts(R"({"type":"string","format":"date"})", R"("2024-02-28")"));
    EXPECT_FALSE(accepts(R"({"type":"string","format":"date"})", R"("2024-13-01")"));
    EXPECT_TRUE(accepts(R"({"type":"string","format":"uuid"})",
                        R"("123e4567-e89b-12d3-a456-426614174000")"));
    EXPECT_FALSE(accepts(R"({"type":"string","format":"ipv4"})", R"("256.1.1.1")"));
}

TEST(GrammarJsonSchema, IntegerAndNumberBounds) {
    const char* s = R"({"type":"integer","minimum":-15,"exclusiveMaximum":120})";
    for (const char* ok : {"-15", "-9", "0", "7", "99", "119"}) EXPECT_TRUE(accepts(s, ok)) << ok;
    for (const char* bad : {"-16", "120", "1000", "-0", "05", "1.0e1"})
        EXPECT_FALSE(accepts(s, bad)) << bad;
    EXPECT_FALSE(accepts(R"({"type":"integer","maximum":1e20})", "100000000000000000000000"));
    EXPECT_FALSE(accepts(R"({"type":"integer","minimum":-1e20})", "-100000000000000000000000"));
    const char* n = R"({"type":"number","exclusiveMinimum":0,"maximum":1})";
    for (const char* ok : {"0.5", "1", "1.0", "0.001"}) EXPECT_TRUE(accepts(n, ok)) << ok;
    for (const char* bad : {"0", "0.0", "1.01", "-0.5", "2"}) EXPECT_FALSE(accepts(n, bad)) << bad;
}

// A greedy model can repeat a digit forever; numbers end after 20 digits on either side of the
// point and 3 in the exponent (more than any int64, uint64 or double needs).
TEST(GrammarJsonSchema, NumbersHaveBoundedDigits) {
    const std::string twenty(20, '7'), fraction = "0." + std::string(19, '0') + "1";
    for (const char* schema : {R"({"type":"number"})", R"({"type":"integer"})", R"({})"}) {
        EXPECT_TRUE(accepts(schema, twenty.c_str())) << schema;
        EXPECT_TRUE(accepts(schema, ("-" + twenty).c_str())) << schema;
        EXPECT_FALSE(accepts(schema, (twenty + "7").c_str())) << schema;
    }
    for (const char* schema : {R"({"type":"number"})", R"({"type":"number","minimum":0})",
                               R"({"type":"number","exclusiveMinimum":0})"}) {
        EXPECT_TRUE(accepts(schema, fraction.c_str())) << schema;
        EXPECT_FALSE(accepts(schema, ("0." + std::string(21, '1')).c_str())) << schema;
    }
    EXPECT_TRUE(accepts(R"({"type":"number"})", "1.5e-308"));
    EXPECT_FALSE(accepts(R"({"type":"number"})", "1e1000"));
    EXPECT_TRUE(accepts(R"({"type":"integer","minimum":5})", "23456789012345678901"));
    EXPECT_FALSE(accepts(R"({"type":"integer","minimum":5})", "123456789012345678901"));
}

TEST(GrammarJsonSchema, EnumConstAnyOfAllOf) {
    EXPECT_TRUE(accepts(R"({"enum":["a",1,null,{"k":[1]}]})", R"({"k":[1]})"));
    EXPECT_FALSE(accepts(R"({"type":"string","enum":["a",1]})", "1"));
    EXPECT_TRUE(accepts(R"({"const":2,"enum":[1,2]})", "2"));
    EXPECT_FALSE(accepts(R"({"const":2,"enum":[1,2]})", "1"));
    EXPECT_NE(compile_error(R"({"const":2,"enum":[]})").find("empty"), std::string::npos);
    EXPECT_TRUE(accepts(R"({"anyOf":[{"type":"string"},{"type":"integer"}]})", "3"));
    EXPECT_FALSE(accepts(R"({"anyOf":[{"type":"string"},{"type":"integer"}]})", "true"));
    const char* all = R"({"allOf":[{"properties":{"a":{"type":"integer"}}},{"required":["a"]}]})";
    EXPECT_TRUE(accepts(all, R"({"a":1})"));
    EXPECT_FALSE(accepts(all, R"({})"));
    EXPECT_TRUE(accepts(R"({"oneOf":[{"type":"string"},{"type":"null"}]})", "null"));
}

TEST(GrammarJsonSchema, UnsupportedKeywordsAreNamed) {
    EXPECT_NE(compile_error(R"({"type":"array","uniqueItems":true})").find("uniqueItems"),
              std::string::npos);
    EXPECT_NE(compile_error(R"({"propertyNames":{"maxLength":3}})").find("propertyNames"),
              std::string::npos);
    EXPECT_NE(compile_error(R"({"oneOf":[{"type":"string"},{"maxLength":3}]})").find("oneOf"),
              std::string::npos);
    EXPECT_NE(compile_error(R"({"$ref":"#/nowhere"})").find("$ref"), std::string::npos);
    EXPECT_NE(compile_error(R"j({"type":"string","pattern":"(?=x)"})j").find("lookaround"),
              std::string::npos);
    EXPECT_NE(compile_error(R"({"type":"string","format":"hostname"})").find("hostname"),
              std::string::npos);
    EXPECT_NE(compile_error(R"({"type":"integer","minimum":5,"maximum":2})").find("empty"),
              std::string::npos);
    EXPECT_NE(compile_error(R"(3)").find("schema"), std::string::npos);
}

TEST(GrammarJsonSchema, JsonModeAcceptsAnyObject) {
    Matcher m(json_object_grammar());
    EXPECT_TRUE(m.advance(R"({"a":[1,{"b":null}],"c":"é\n"})") && m.can_stop());
    Matcher n(json_object_grammar());
    EXPECT_FALSE(n.advance("[1]"));
}

}  // namespace
}  // namespace kite::grammar

namespace kite::grammar {
namespace {

// Schemas built to make compilation blow up are refused with an error naming why, quickly.
class GrammarCompileBound : public ::testing::Test {
  protected:
    static std::string refused(const ordered_json& schema) {
        const auto start = std::chrono::steady_clock::now();
        std::string error;
        try {
            compile_json_schema(schema);
        } catch (const GrammarError& e) {
            error = e.what();
        }
        const double seconds =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        // Measured: well under 0.5 s each in release builds. AddressSanitizer's builds run
        // several times slower, more on a busy host (3.6 s for one seen there).
        EXPECT_LT(seconds, test::kSanitizedBuild ? 10.0 : 2.0) << error;
        return error;
    }
};

TEST_F(GrammarCompileBound, RefsWithSiblingsThatDoubleAtEveryLevel) {
    // Each level copies the next one twice (a $ref beside another keyword is inlined): 2^40.
    ordered_json defs = ordered_json::object();
    for (int i = 0; i < 40; ++i) {
        const std::string next = fmt::format("#/$defs/d{}", i + 1);
        defs[fmt::format("d{}", i)] = {
            {"anyOf", {{{"$ref", next}, {"minLength", 1}}, {{"$ref", next}, {"maxLength", 9}}}}};
    }
    defs["d40"] = {{"type", "string"}};
    const ordered_json schema = {{"$defs", defs}, {"$ref", "#/$defs/d0"}, {"title", "x"}};
    EXPECT_NE(refused(schema).find("subschemas"), std::string::npos);
}

TEST_F(GrammarCompileBound, DeepNesting) {
    ordered_json schema = {{"type", "string"}};
    for (int i = 0; i < 300; ++i) schema = {{"type", "object"}, {"properties", {{"a", schema}}}};
    EXPECT_NE(refused(schema).find("nests too deeply"), std::string::npos);
}

TEST_F(GrammarCompileBound, HugeCountedRepetition) {
    EXPECT_NE(refused({{"type", "string"}, {"minLength", 50'000'000}}).find("too large"),
              std::string::npos);
    EXPECT_NE(refused({{"type", "array"},
                       {"items", {{"type", "string"}, {"maxLength", 900'000}}},
                       {"minItems", 100'000}})
                  .find("too large"),
              std::string::npos);
}

TEST_F(GrammarCompileBound, WideAnyOfOfPatternsStaysBounded) {
    // 30 anyOf of 30 branches each, every branch a pattern: compiles or is refused, but fast.
    ordered_json props = ordered_json::object();
    for (int i = 0; i < 30; ++i) {
        ordered_json branches = ordered_json::array();
        for (int j = 0; j < 30; ++j)
            branches.push_back(
                {{"type", "string"}, {"pattern", fmt::format("^[a-z]{{1,20}}{}$", j)}});
        props[fmt::format("p{}", i)] = {{"anyOf", branches}};
    }
    refused({{"type", "object"}, {"properties", props}});
}

TEST_F(GrammarCompileBound, ManyLargeAutomataStayBounded) {
    // Each pattern's automaton has 300-500 states (up to 20 ms to build): without a limit per
    // grammar these took 2.7 s. A grammar builds a few and lowers the rest as written.
    ordered_json props = ordered_json::object();
    for (int i = 0; i < 200; ++i)
        props[fmt::format("p{}", i)] = {{"type", "string"},
                                        {"pattern", fmt::format("^(a|b)+c{{{}}}$", 300 + i)}};
    refused({{"type", "object"}, {"properties", props}});
}

}  // namespace
}  // namespace kite::grammar
