// libFuzzer target: any bytes as the JSON body of /v1/completions and /v1/chat/completions
// (constraint fields included, compiled through a ConstraintCache) must give a request within
// the limits or an ApiError, and as the body of /tokenize or
// /detokenize an answer (token ids in the vocabulary) or an ApiError; a crash, sanitizer
// report, hang or huge allocation is a bug. Prompts are tokenized with the default model's
// tokenizer and chat template (models/default.gguf, or the file in KITE_FUZZ_MODEL).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "chat/chat_template.h"
#include "core/error.h"
#include "gguf/gguf_file.h"
#include "grammar/constraint.h"
#include "grammar/tokenizer_vocab.h"
#include "server/api_error.h"
#include "server/request_parser.h"
#include "server/token_routes.h"
#include "tokenizer/tokenizer.h"

namespace {

constexpr int64_t kContext = 2048;

struct Served {
    std::unique_ptr<kite::GgufFile> file;
    std::unique_ptr<kite::Tokenizer> tokenizer;
    std::unique_ptr<kite::ChatTemplate> chat_template;
    std::unique_ptr<kite::grammar::ConstraintCache> constraints;
    kite::server::ServedModel model;
};

Served* served = nullptr;

void check(bool ok) {
    if (!ok) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    const char* env = std::getenv("KITE_FUZZ_MODEL");
    const std::string path = env ? env : "models/default.gguf";
    try {
        served = new Served;
        served->file = kite::GgufFile::open(path);
        served->tokenizer = kite::Tokenizer::from_gguf(*served->file);
        served->chat_template = std::make_unique<kite::ChatTemplate>(
            kite::ChatTemplate::from_gguf(*served->file, *served->tokenizer));
    } catch (const kite::Error& e) {
        std::fprintf(stderr, "completion_request_fuzz: cannot load '%s': %s\n", path.c_str(),
                     e.what());
        std::exit(1);
    }
    served->constraints = std::make_unique<kite::grammar::ConstraintCache>(
        std::make_shared<const kite::grammar::TokenizerVocab>(
            kite::grammar::tokenizer_vocab(*served->tokenizer)));
    served->model = {"default", served->tokenizer.get(), served->chat_template.get(), kContext, {}};
    served->model.constraints = served->constraints.get();
    return 0;
}

namespace {

// /tokenize: ids within the vocabulary, as many as counted; /detokenize: a text.
void token_route(std::string_view body, bool detokenize) {
    if (detokenize) {
        check(kite::server::detokenize_response(body, served->model)["content"].is_string());
        return;
    }
    const nlohmann::json t = kite::server::tokenize_response(body, served->model);
    check(t["count"].get<size_t>() == t["tokens"].size());
    const auto n_vocab = static_cast<int64_t>(served->tokenizer->n_vocab());
    for (const auto& token : t["tokens"]) {
        const int64_t id = token.is_object() ? token["id"].get<int64_t>() : token.get<int64_t>();
        check(id >= 0 && id < n_vocab);
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size == 0) return 0;
    const bool chat = data[0] & 1;
    const std::string_view body(reinterpret_cast<const char*>(data) + 1, size - 1);
    try {
        if (data[0] & 2) {
            token_route(body, data[0] & 4);
            return 0;
        }
        const kite::server::CompletionRequest r =
            kite::server::parse_completion_request(body, chat, served->model);
        check(!r.prompts.empty());
        check(r.n >= 1 && r.prompts.size() * static_cast<size_t>(r.n) <=
                              static_cast<size_t>(kite::server::kMaxChoices));
        check(r.logprobs <= kite::server::kMaxTopLogprobs);
        for (const auto& prompt : r.prompts) {
            for (int32_t id : prompt) check(id >= 0);
            (void)r.max_tokens_for(prompt.size(), kContext);
        }
    } catch (const kite::server::ApiError& e) {
        check(e.status >= 400 && e.status < 500);
    } catch (const kite::Error&) {
    }
    return 0;
}
