// `kite structured check`: the model-free conformance check of JSON Schema constraints with a
// model's tokenizer (see grammar/conformance.h): one JSON line per schema with -o json, then
// a summary over the whole set.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "core/error.h"
#include "gguf/gguf_file.h"
#include "grammar/conformance.h"
#include "grammar/tokenizer_vocab.h"
#include "tokenizer/tokenizer.h"

namespace kite::cli {

namespace {

struct StructuredOptions {
    std::string model;
    std::string cases;
    std::string output = "table";
    size_t limit = 0;
};

void print_summary(const grammar::Summary& s) {
    const auto pct = [](size_t a, size_t b) {
        return b ? 100.0 * static_cast<double>(a) / static_cast<double>(b) : 0.0;
    };
    fmt::print("schemas              {}\n", s.schemas);
    fmt::print("compiled             {} ({:.1f}%)\n", s.compiled, pct(s.compiled, s.schemas));
    fmt::print("passing              {} ({:.1f}%)\n", s.passing, pct(s.passing, s.schemas));
    fmt::print("instances            {}\n", s.instances);
    fmt::print("validation errors    {} ({:.2f}%)\n", s.validation_errors,
               pct(s.validation_errors, s.instances));
    fmt::print("invalidation errors  {}\n", s.invalidation_errors);
    fmt::print("mask p50 / p99 (us)  {:.1f} / {:.1f}\n", s.mask_p50, s.mask_p99);
    fmt::print("compile p50 (us)     {:.1f}\n", s.compile_p50);
}

void run_check(const StructuredOptions& o) {
    std::ifstream file;
    std::istream* in = &std::cin;
    if (o.cases != "-") {
        file.open(o.cases);
        if (!file) fail("cannot read '{}'", o.cases);
        in = &file;
    }
    const std::unique_ptr<GgufFile> gguf = GgufFile::open(resolve_model_path(o.model));
    const std::unique_ptr<Tokenizer> tok = Tokenizer::from_gguf(*gguf);
    const grammar::TokenizerVocab vocab = grammar::tokenizer_vocab(*tok);
    const grammar::Encode encode = [&](const std::string& text) {
        return tok->encode(text, false, false);
    };
    std::vector<grammar::CaseResult> results;
    std::string line;
    for (size_t n = 1; std::getline(*in, line); ++n) {
        if (line.empty()) continue;
        if (o.limit && results.size() >= o.limit) break;
        nlohmann::ordered_json c;
        try {
            c = nlohmann::ordered_json::parse(line);
        } catch (const nlohmann::json::exception& e) {
            fail("{} line {}: not JSON: {}", o.cases, n, e.what());
        }
        if (!c.is_object() || !c.contains("schema")) fail("{} line {}: no \"schema\"", o.cases, n);
        results.push_back(grammar::check_case(c, vocab.trie, vocab.bytes, encode));
        if (o.output == "json") std::cout << grammar::to_json(results.back()).dump() << "\n";
    }
    const grammar::Summary summary = grammar::summarize(results);
    if (o.output == "json")
        std::cout << nlohmann::ordered_json{{"summary", grammar::to_json(summary)}}.dump() << "\n";
    else
        print_summary(summary);
}

}  // namespace

void add_structured_command(CLI::App& app) {
    auto* cmd = app.add_subcommand("structured", "Structured output (constrained decoding) tools");
    cmd->require_subcommand(1);
    auto* check = cmd->add_subcommand(
        "check", "Check JSON Schema constraints against labelled instances (no model run)");
    auto o = std::make_shared<StructuredOptions>();
    check->add_option("-m,--model", o->model, "GGUF model whose tokenizer to use");
    check
        ->add_option(
            "--cases", o->cases,
            "JSON lines {\"id\",\"schema\",\"tests\":[{\"valid\",\"data\"}]} (- for stdin)")
        ->required();
    check
        ->add_option("-o,--output", o->output,
                     "Output: table (summary) or json (a line per schema)")
        ->check(CLI::IsMember({"table", "json"}))
        ->capture_default_str();
    check->add_option("--limit", o->limit, "Check only the first N schemas");
    check->callback([o] { run_check(*o); });
}

}  // namespace kite::cli
