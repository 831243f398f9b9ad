// Splits template source into text and tag tokens, with Jinja2's whitespace control as
// transformers configures it: `{%-`/`-%}` strip whitespace, trim_blocks drops the newline after
// a block or comment tag, lstrip_blocks drops the indentation before one, and a single
// trailing newline of the source is dropped (keep_trailing_newline is off).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace kite::tmpl {

struct Token {
    enum class Type {
        Text,        // template text, output as is
        VarBegin,    // {{
        VarEnd,      // }}
        BlockBegin,  // {%
        BlockEnd,    // %}
        Name,
        String,  // the literal's value, escapes decoded
        Int,
        Float,
        Operator,
        End,
    };
    Type type;
    std::string text;
    int line;
};

std::vector<Token> tokenize(std::string_view source);

}  // namespace kite::tmpl
