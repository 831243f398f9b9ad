#include "cli/constraint_option.h"

#include "core/error.h"
#include "core/text_file.h"

namespace kite::cli {

void ConstraintOptions::add_to(CLI::App& cmd) {
    auto* schema = cmd.add_option("--json-schema", json_schema_file,
                                  "Output only JSON that this JSON Schema file accepts");
    auto* json_flag = cmd.add_flag("--json", json, "Output only a JSON object");
    auto* grammar = cmd.add_option("--grammar", grammar_file,
                                   "Output only text this GBNF grammar file (llama.cpp's) accepts");
    auto* re = cmd.add_option("--regex", regex, "Output only text this regular expression matches");
    schema->excludes(json_flag)->excludes(grammar)->excludes(re);
    json_flag->excludes(grammar)->excludes(re);
    grammar->excludes(re);
}

std::shared_ptr<const grammar::Constraint> ConstraintOptions::compile(
    const Tokenizer& tokenizer) const {
    using grammar::ConstraintKind;
    grammar::ConstraintSpec spec;
    const char* flag = nullptr;
    if (!json_schema_file.empty()) {
        spec.kind = ConstraintKind::JsonSchema;
        spec.text = read_text_file(json_schema_file, "--json-schema file");
        flag = "--json-schema";
    } else if (json) {
        spec.kind = ConstraintKind::JsonObject;
        flag = "--json";
    } else if (!grammar_file.empty()) {
        spec.kind = ConstraintKind::Gbnf;
        spec.text = read_text_file(grammar_file, "--grammar file");
        flag = "--grammar";
    } else if (!regex.empty()) {
        spec.kind = ConstraintKind::Regex;
        spec.text = regex;
        flag = "--regex";
    } else {
        return nullptr;
    }
    try {
        return grammar::make_constraint(spec, std::make_shared<const grammar::TokenizerVocab>(
                                                  grammar::tokenizer_vocab(tokenizer)));
    } catch (const Error& e) {
        fail("{}: {}", flag, e.what());
    }
}

}  // namespace kite::cli
