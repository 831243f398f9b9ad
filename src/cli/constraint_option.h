// The structured-output flags of kite run and kite chat: --json-schema FILE, --json,
// --grammar FILE (llama.cpp's GBNF) and --regex RE, at most one. What cannot be read or
// compiled is one line naming the flag and exit code 1, before the model generates.
#pragma once

#include <memory>
#include <string>

#include <CLI/CLI.hpp>

#include "grammar/constraint.h"
#include "tokenizer/tokenizer.h"

namespace kite::cli {

struct ConstraintOptions {
    std::string json_schema_file;
    bool json = false;
    std::string grammar_file;
    std::string regex;

    void add_to(CLI::App& cmd);
    // Null when no flag was given. Throws kite::Error naming the flag.
    std::shared_ptr<const grammar::Constraint> compile(const Tokenizer& tokenizer) const;
};

}  // namespace kite::cli
