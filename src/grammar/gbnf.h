// llama.cpp's GBNF grammar syntax, so grammars written for it work unchanged: `name ::= ...`
// rules (root is the start), "literals" and [classes] with escapes (\n \t \r \\ \" \xHH
// \uHHHH \UHHHHHHHH), . for any character, rule references, ( ), |, * + ? {m} {m,} {m,n}
// {,n}, and # comments. Throws GrammarError with the line of a syntax error.
#pragma once

#include <memory>
#include <string_view>

#include "grammar/grammar.h"

namespace kite::grammar {

std::shared_ptr<const Grammar> compile_gbnf(std::string_view text);

}  // namespace kite::grammar
