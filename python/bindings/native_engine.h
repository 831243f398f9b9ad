// The engine as the Python module sees it: a loaded model, its tokenizer and chat template,
// and one Engine with continuous batching. Plain C++ (module.cpp binds it): it takes its
// own lock around every engine call, so Python threads (kite.LLM.astream's workers) may
// share one, and it holds no Python object, so the GIL can be released around it.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "chat/chat_template.h"
#include "engine/engine.h"
#include "engine/generation_params.h"
#include "grammar/constraint.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"

namespace kite::python {

struct NativeOptions {
    std::string model;  // a path or an installed name, as the CLI's -m
    int threads = 0;    // 0: one per physical core
    int64_t context = 0;
    std::string kv_type = "f16";
    int64_t max_seqs = 16;
    std::string draft_model;  // empty: no speculative decoding
    std::string pooling;      // empty: an encoder's own; mean, cls or last embed with a decoder
};

// One TokenEvent, copied out of the engine (its events live only until the next step).
struct NativeEvent {
    int64_t seq_id = 0;
    int32_t token = -1;
    std::string text;
    std::string finish;  // "" while running, else "stop", "length" or "error"
    float logprob = 0;
    std::vector<std::pair<int32_t, float>> top_logprobs;
};

class NativeEngine {
  public:
    // Throws kite::Error for a model that cannot be found or loaded, or a bad option.
    explicit NativeEngine(const NativeOptions& options);

    std::vector<int32_t> tokenize(const std::string& text, bool add_special,
                                  bool parse_special) const;
    std::string detokenize(const std::vector<int32_t>& ids) const;
    // The prompt tokens of OpenAI-shaped messages (JSON text) through the model's chat
    // template, with tools (JSON text, "" for none) and the assistant's turn opened.
    std::vector<int32_t> chat_prompt(const std::string& messages_json,
                                     const std::string& tools_json) const;

    // Compiles a structured-output constraint (kind: grammar::ConstraintKind as an int) into
    // `params`; equal constraints are compiled once. Throws kite::Error naming the problem.
    void constrain(GenerationParams& params, int kind, const std::string& text);

    // Engine::validate: throws kite::Error naming what is wrong, submits nothing.
    void validate(const std::vector<int32_t>& prompt, const GenerationParams& params) const;
    int64_t submit(const std::vector<int32_t>& prompt, const GenerationParams& params);
    // Cancels a running or waiting sequence, or forgets a finished one.
    void release(int64_t seq_id);
    bool has_work() const;
    std::vector<NativeEvent> step();

    // L2-normalised embeddings, one row of `dimensions` values (0: all of them; fewer keep the
    // first ones, Matryoshka, normalised again) per input, row after row. Throws kite::Error
    // for a model that cannot embed, no input, an empty or too long one, or bad dimensions.
    std::vector<float> embed(const std::vector<std::vector<int32_t>>& inputs, int64_t dimensions);

    // Frees the engine, the cache and the model; every call after it throws kite::Error.
    void close();
    bool closed() const;

    int64_t n_vocab() const;
    int64_t context_length() const;
    int threads() const;
    const std::string& model_path() const { return path_; }

  private:
    void check_open() const;

    std::string path_;
    std::unique_ptr<Model> model_;
    std::unique_ptr<Model> draft_;  // the draft model, when there is one
    std::unique_ptr<Tokenizer> tokenizer_;
    mutable std::optional<ChatTemplate> template_;           // loaded on first use
    std::unique_ptr<grammar::ConstraintCache> constraints_;  // made on first use
    std::unique_ptr<Engine> engine_;
    mutable std::mutex mutex_;
};

}  // namespace kite::python
