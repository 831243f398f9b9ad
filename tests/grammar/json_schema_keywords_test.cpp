// JSON Schema keywords compiled exactly or narrower (patternProperties, minProperties and
// maxProperties, oneOf told apart by a required property or by listed values, lengths beside
// a pattern, negative number bounds, annotations in allOf): every expected outcome below was
// checked with Python's jsonschema 4.23 (the validator that labels the conformance data),
// and what cannot be enforced exactly is refused with the keyword's name.
#include <gtest/gtest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "grammar/json_schema.h"
#include "grammar/matcher.h"
#include "json_schema_checks.h"

namespace kite::grammar {
namespace {

TEST(GrammarJsonSchemaKeywords, PatternPropertiesNamesBesideAdditionalFalse) {
    const char* s =
        R"({"type":"object","properties":{"name":{"type":"integer"}},"patternProperties":{"^x-":{"type":"string"}},"additionalProperties":false})";
    EXPECT_TRUE(accepts(s, R"({"name":1,"x-a":"s"})"));
    EXPECT_TRUE(accepts(s, R"({"x-":"a"})"));
    EXPECT_TRUE(accepts(s, R"({})"));
    EXPECT_FALSE(accepts(s, R"({"x-a":1})"));
    EXPECT_FALSE(accepts(s, R"({"y":1})"));
    EXPECT_FALSE(accepts(s, R"({"name":"s"})"));
}

TEST(GrammarJsonSchemaKeywords, PatternPropertiesOpen) {
    const char* s = R"({"type":"object","patternProperties":{"\\w":{"type":"integer"}}})";
    EXPECT_TRUE(accepts(s, R"({"a":1,"b2":3})"));
    EXPECT_TRUE(accepts(s, R"({})"));
    EXPECT_FALSE(accepts(s, R"({"a":"x"})"));
    EXPECT_FALSE(accepts(s, R"({"a":1,"b":null})"));
}

TEST(GrammarJsonSchemaKeywords, PatternPropertiesMatchingEveryName) {
    const char* s =
        R"({"type":"object","properties":{"a":{"type":"integer"}},"patternProperties":{".*":{"minimum":0}},"additionalProperties":false})";
    EXPECT_TRUE(accepts(s, R"({"a":1,"b":2})"));
    EXPECT_TRUE(accepts(s, R"({"b":"x"})"));
    EXPECT_FALSE(accepts(s, R"({"a":-1})"));
    EXPECT_FALSE(accepts(s, R"({"b":-2})"));
    EXPECT_FALSE(accepts(s, R"({"a":"x"})"));
}

TEST(GrammarJsonSchemaKeywords, PatternPropertiesRequiredNameMatchingAPattern) {
    const char* s =
        R"({"type":"object","required":["x-id"],"patternProperties":{"^x-":{"type":"string"}},"additionalProperties":false})";
    EXPECT_TRUE(accepts(s, R"({"x-id":"a"})"));
    EXPECT_TRUE(accepts(s, R"({"x-id":"a","x-b":"c"})"));
    EXPECT_FALSE(accepts(s, R"({})"));
    EXPECT_FALSE(accepts(s, R"({"x-id":1})"));
    EXPECT_FALSE(accepts(s, R"({"x-id":"a","y":"c"})"));
}

TEST(GrammarJsonSchemaKeywords, PatternPropertiesTriviallyTrue) {
    const char* s =
        R"({"type":"object","properties":{"a":{"type":"string"}},"patternProperties":{"^b":{}}})";
    EXPECT_TRUE(accepts(s, R"({"a":"x","b":[1]})"));
    EXPECT_TRUE(accepts(s, R"({"c":null})"));
    EXPECT_FALSE(accepts(s, R"({"a":1})"));
}

TEST(GrammarJsonSchemaKeywords, FewPropertiesInAnyOrder) {
    const char* s =
        R"({"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"string"},"c":{}},"required":["a"],"additionalProperties":false})";
    EXPECT_TRUE(accepts(s, R"({"a":1})"));
    EXPECT_TRUE(accepts(s, R"({"b":"x","a":1})"));
    EXPECT_TRUE(accepts(s, R"({"c":0,"b":"x","a":1})"));
    EXPECT_FALSE(accepts(s, R"({"b":"x"})"));
    EXPECT_FALSE(accepts(s, R"({"b":"x","a":"y"})"));
    EXPECT_FALSE(accepts(s, R"({"a":1,"d":2})"));
}

TEST(GrammarJsonSchemaKeywords, MinAndMaxProperties) {
    const char* s =
        R"({"type":"object","properties":{"a":{},"b":{}},"minProperties":1,"maxProperties":2})";
    EXPECT_TRUE(accepts(s, R"({"a":1})"));
    EXPECT_TRUE(accepts(s, R"({"a":1,"b":2})"));
    EXPECT_TRUE(accepts(s, R"({"c":3})"));
    EXPECT_TRUE(accepts(s, R"({"a":1,"c":3})"));
    EXPECT_TRUE(accepts(s, R"({"c":1,"d":2})"));
    EXPECT_FALSE(accepts(s, R"({})"));
    EXPECT_FALSE(accepts(s, R"({"a":1,"b":2,"c":3})"));
    EXPECT_FALSE(accepts(s, R"({"c":1,"d":2,"e":3})"));
}

TEST(GrammarJsonSchemaKeywords, MinPropertiesOnly) {
    const char* s =
        R"({"type":"object","additionalProperties":{"type":"string"},"minProperties":2})";
    EXPECT_TRUE(accepts(s, R"({"a":"x","b":"y"})"));
    EXPECT_TRUE(accepts(s, R"({"a":"x","b":"y","c":"z"})"));
    EXPECT_FALSE(accepts(s, R"({"a":"x"})"));
    EXPECT_FALSE(accepts(s, R"({})"));
}

TEST(GrammarJsonSchemaKeywords, MaxPropertiesBelowRequired) {
    const char* s = R"({"maxProperties":1,"required":["a","b"]})";
    EXPECT_TRUE(accepts(s, R"(1)"));
    EXPECT_TRUE(accepts(s, R"("x")"));
    EXPECT_FALSE(accepts(s, R"({"a":1,"b":2})"));
    EXPECT_FALSE(accepts(s, R"({"a":1})"));
    EXPECT_FALSE(accepts(s, R"({})"));
}

TEST(GrammarJsonSchemaKeywords, OneOfToldApartByARequiredProperty) {
    const char* s =
        R"({"type":"object","properties":{"a":{"type":"string"},"b":{"type":"string"}},"oneOf":[{"required":["a"]},{"required":["b"]}]})";
    EXPECT_TRUE(accepts(s, R"({"a":"x"})"));
    EXPECT_TRUE(accepts(s, R"({"b":"y"})"));
    EXPECT_TRUE(accepts(s, R"({"a":"x","c":1})"));
    EXPECT_FALSE(accepts(s, R"({"a":"x","b":"y"})"));
    EXPECT_FALSE(accepts(s, R"({})"));
    EXPECT_FALSE(accepts(s, R"({"c":1})"));
}

TEST(GrammarJsonSchemaKeywords, OneOfToldApartWithoutDeclaredProperties) {
    const char* s = R"({"type":"object","oneOf":[{"required":["a"]},{"required":["b"]}]})";
    EXPECT_TRUE(accepts(s, R"({"a":1})"));
    EXPECT_TRUE(accepts(s, R"({"b":1,"c":2})"));
    EXPECT_FALSE(accepts(s, R"({"a":1,"b":2})"));
    EXPECT_FALSE(accepts(s, R"({"b":1,"a":2})"));
    EXPECT_FALSE(accepts(s, R"({"c":1})"));
}

TEST(GrammarJsonSchemaKeywords, OneOfToldApartByOneOfSeveralProperties) {
    const char* s = R"({"type":"object","oneOf":[{"required":["a"]},{"required":["b","c"]}]})";
    EXPECT_TRUE(accepts(s, R"({"a":1})"));
    EXPECT_TRUE(accepts(s, R"({"b":1,"c":2})"));
    EXPECT_FALSE(accepts(s, R"({"a":1,"b":1,"c":1})"));
    EXPECT_FALSE(accepts(s, R"({"b":1})"));
}

TEST(GrammarJsonSchemaKeywords, OneOfRequiredBesideForbidden) {
    const char* s =
        R"({"type":"object","oneOf":[{"properties":{"g":{}},"required":["g"],"additionalProperties":false},{"properties":{"h":{}},"additionalProperties":false}]})";
    EXPECT_TRUE(accepts(s, R"({"g":1})"));
    EXPECT_TRUE(accepts(s, R"({"h":1})"));
    EXPECT_TRUE(accepts(s, R"({})"));
    EXPECT_FALSE(accepts(s, R"({"g":1,"h":1})"));
    EXPECT_FALSE(accepts(s, R"({"x":1})"));
}

TEST(GrammarJsonSchemaKeywords, OneOfTypesThroughRefsAndEnums) {
    const char* s =
        R"({"oneOf":[{"$ref":"#/$defs/s"},{"type":"array","items":{"$ref":"#/$defs/s"}}],"$defs":{"s":{"enum":["x","y"]}}})";
    EXPECT_TRUE(accepts(s, R"("x")"));
    EXPECT_TRUE(accepts(s, R"(["x","y"])"));
    EXPECT_FALSE(accepts(s, R"("z")"));
    EXPECT_FALSE(accepts(s, R"([1])"));
    EXPECT_FALSE(accepts(s, R"(null)"));
}

TEST(GrammarJsonSchemaKeywords, OneOfOfDisjointEnums) {
    const char* s = R"({"oneOf":[{"enum":["a","b"]},{"enum":["c",1]}]})";
    EXPECT_TRUE(accepts(s, R"("a")"));
    EXPECT_TRUE(accepts(s, R"("c")"));
    EXPECT_TRUE(accepts(s, R"(1)"));
    EXPECT_FALSE(accepts(s, R"("d")"));
    EXPECT_FALSE(accepts(s, R"(2)"));
}

TEST(GrammarJsonSchemaKeywords, LengthCutsAPatternsOneVaryingPart) {
    const char* s = R"({"type":"string","pattern":"^[a-z]+$","minLength":2,"maxLength":3})";
    EXPECT_TRUE(accepts(s, R"("ab")"));
    EXPECT_TRUE(accepts(s, R"("abc")"));
    EXPECT_FALSE(accepts(s, R"("a")"));
    EXPECT_FALSE(accepts(s, R"("abcd")"));
    EXPECT_FALSE(accepts(s, R"("A1")"));
}

TEST(GrammarJsonSchemaKeywords, LengthCutsEachAlternative) {
    const char* s =
        R"({"type":"string","pattern":"^([\\w/-]|[\\w-][\\w/-]*[\\w-])$","maxLength":4})";
    EXPECT_TRUE(accepts(s, R"("a")"));
    EXPECT_TRUE(accepts(s, R"("ab/c")"));
    EXPECT_FALSE(accepts(s, R"("abcde")"));
    EXPECT_FALSE(accepts(s, R"("/a")"));
    EXPECT_FALSE(accepts(s, R"("a/b/c")"));
}

TEST(GrammarJsonSchemaKeywords, LengthBesideAPrefixPattern) {
    const char* s = R"({"type":"string","pattern":"^ab","maxLength":4})";
    EXPECT_TRUE(accepts(s, R"("ab")"));
    EXPECT_TRUE(accepts(s, R"("abcd")"));
    EXPECT_TRUE(accepts(s, R"("abé")"));
    EXPECT_FALSE(accepts(s, R"("abcde")"));
    EXPECT_FALSE(accepts(s, R"("a")"));
    EXPECT_FALSE(accepts(s, R"("xab")"));
}

TEST(GrammarJsonSchemaKeywords, LengthCutsARepeatedGroup) {
    const char* s = R"({"type":"string","pattern":"^(ab)*$","minLength":1,"maxLength":5})";
    EXPECT_TRUE(accepts(s, R"("ab")"));
    EXPECT_TRUE(accepts(s, R"("abab")"));
    EXPECT_FALSE(accepts(s, R"("")"));
    EXPECT_FALSE(accepts(s, R"("ababab")"));
    EXPECT_FALSE(accepts(s, R"("aba")"));
}

TEST(GrammarJsonSchemaKeywords, LengthImpliedByAFixedPattern) {
    const char* s = R"({"type":"string","pattern":"^[0-9]{5}$","maxLength":5,"minLength":5})";
    EXPECT_TRUE(accepts(s, R"("12345")"));
    EXPECT_FALSE(accepts(s, R"("1234")"));
    EXPECT_FALSE(accepts(s, R"("123456")"));
}

TEST(GrammarJsonSchemaKeywords, NegativeWholeNumberBounds) {
    const char* s = R"({"type":"number","minimum":-90,"maximum":90})";
    EXPECT_TRUE(accepts(s, R"(-90)"));
    EXPECT_TRUE(accepts(s, R"(-45.5)"));
    EXPECT_TRUE(accepts(s, R"(0)"));
    EXPECT_TRUE(accepts(s, R"(90)"));
    EXPECT_TRUE(accepts(s, R"(12.25)"));
    EXPECT_FALSE(accepts(s, R"(-90.5)"));
    EXPECT_FALSE(accepts(s, R"(90.01)"));
    EXPECT_FALSE(accepts(s, R"(-91)"));
    EXPECT_FALSE(accepts(s, R"(100)"));
}

TEST(GrammarJsonSchemaKeywords, ExclusiveBoundsAroundZero) {
    const char* s = R"({"type":"number","exclusiveMinimum":-1,"exclusiveMaximum":0})";
    EXPECT_TRUE(accepts(s, R"(-0.5)"));
    EXPECT_TRUE(accepts(s, R"(-0.999)"));
    EXPECT_FALSE(accepts(s, R"(-1)"));
    EXPECT_FALSE(accepts(s, R"(0)"));
    EXPECT_FALSE(accepts(s, R"(0.5)"));
    EXPECT_FALSE(accepts(s, R"(-1.0)"));
}

TEST(GrammarJsonSchemaKeywords, OnlyANegativeMaximum) {
    const char* s = R"({"type":"number","maximum":-2})";
    EXPECT_TRUE(accepts(s, R"(-2)"));
    EXPECT_TRUE(accepts(s, R"(-100.5)"));
    EXPECT_TRUE(accepts(s, R"(-2.0)"));
    EXPECT_FALSE(accepts(s, R"(-1.5)"));
    EXPECT_FALSE(accepts(s, R"(0)"));
    EXPECT_FALSE(accepts(s, R"(3)"));
}

TEST(GrammarJsonSchemaKeywords, UriWithPortQueryAndFragment) {
    const char* s = R"({"type":"string","format":"uri"})";
    EXPECT_TRUE(accepts(s, R"("http://localhost:8086")"));
    EXPECT_TRUE(accepts(s, R"("https://a.b/c?x=1&y=2#top")"));
    EXPECT_TRUE(accepts(s, R"("ftp://h:21/p/q")"));
    EXPECT_FALSE(accepts(s, R"(5)"));
}

TEST(GrammarJsonSchemaKeywords, AllOfKeepsEitherSidesAnnotations) {
    const char* s = R"({"allOf":[{"type":"string","x-doc":"a"},{"maxLength":2,"x-doc":"b"}]})";
    EXPECT_TRUE(accepts(s, R"("ab")"));
    EXPECT_FALSE(accepts(s, R"("abc")"));
    EXPECT_FALSE(accepts(s, R"(1)"));
}

TEST(GrammarJsonSchemaKeywords, WhatCannotBeEnforcedExactlyIsRefused) {
    // A declared name the pattern also matches would be accepted with the pattern's schema.
    EXPECT_NE(compile_error(R"({"properties":{"x-a":{"type":"integer"}},
        "patternProperties":{"^x-":{"type":"string"}},"additionalProperties":false})")
                  .find("'patternProperties'"),
              std::string::npos);
    EXPECT_NE(
        compile_error(R"({"patternProperties":{"^a":{"type":"string"},"^b":{"type":"integer"}},
        "additionalProperties":false})")
            .find("'patternProperties'"),
        std::string::npos);
    // An unanchored pattern varies in length before and after its match.
    EXPECT_NE(
        compile_error(R"({"type":"string","pattern":"[0-9]","maxLength":5})").find("maxLength"),
        std::string::npos);
    EXPECT_NE(
        compile_error(R"({"type":"string","format":"email","maxLength":5})").find("maxLength"),
        std::string::npos);
    EXPECT_NE(compile_error(R"({"type":"number","minimum":0.5})").find("'minimum'"),
              std::string::npos);
    EXPECT_NE(compile_error(R"({"type":"object","minProperties":100})").find("'minProperties'"),
              std::string::npos);
    // Every property one branch requires the other does too: nothing tells them apart.
    EXPECT_NE(compile_error(R"({"type":"object","oneOf":[{"required":["a"]},
        {"required":["a"],"properties":{"a":{"type":"string"}}}]})")
                  .find("'oneOf'"),
              std::string::npos);
}

}  // namespace
}  // namespace kite::grammar
