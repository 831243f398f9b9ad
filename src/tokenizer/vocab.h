// A tokenizer vocabulary as a GGUF file describes it (the tokenizer.ggml.* metadata),
// validated so that the tokenizers can index it without further checks.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace kite {

class GgufFile;

inline constexpr int32_t kNoToken = -1;

// tokenizer.ggml.token_type values (the numbering is the GGUF convention).
enum class TokenType : int32_t {
    Undefined = 0,
    Normal = 1,
    Unknown = 2,
    Control = 3,
    UserDefined = 4,
    Unused = 5,
    Byte = 6,
};

enum class VocabKind {
    BytePairBpe,    // "gpt2": byte-level BPE with merge ranks and a pre-tokenizer regex
    SentencePiece,  // "llama": SentencePiece BPE with scores and byte fallback
    // "gemma4": merge ranks as in byte-level BPE, over text spelled as SentencePiece spells it
    // (U+2581 for spaces, raw UTF-8, <0xXX> byte fallback); no pre-tokenizer regex of its own.
    SentencePieceMerges,
    // "bert": WordPiece after BERT's basic tokenizer (lower-casing, accents, punctuation).
    WordPiece,
};

struct Vocab {
    VocabKind kind = VocabKind::BytePairBpe;
    std::string model;   // tokenizer.ggml.model
    std::string pre;     // tokenizer.ggml.pre, "default" when absent
    std::string source;  // the file it came from, for error messages
    std::vector<std::string> tokens;
    std::vector<float> scores;        // one per token (0 when the file has none)
    std::vector<TokenType> types;     // one per token (Normal when the file has none)
    std::vector<std::string> merges;  // "left right", most preferred first (BPE only)

    int32_t bos = kNoToken;
    int32_t eos = kNoToken;
    int32_t eot = kNoToken;
    int32_t eom = kNoToken;
    int32_t unknown = kNoToken;
    int32_t padding = kNoToken;
    int32_t separator = kNoToken;  // BERT's [SEP], which ends an encoded text
    bool add_bos = false;
    bool add_eos = false;
    bool add_separator = false;
    bool add_space_prefix = false;
    // BERT's normalizer (WordPiece only): tokenizer.ggml.normalizer.*, on by default as the
    // uncased models that predate those keys need.
    bool lowercase = false;
    bool strip_accents = false;

    // Tokens after which generation stops (EOS, EOT and the end-of-turn markers).
    std::vector<int32_t> end_of_generation;

    size_t size() const { return tokens.size(); }
    // The id whose text is exactly `text`; kNoToken when there is none (first id wins).
    int32_t find(std::string_view text) const;
    TokenType type(int32_t id) const { return types[static_cast<size_t>(id)]; }
    bool is_special(int32_t id) const;  // control, user-defined, unknown or unused

    struct Hash {
        using is_transparent = void;
        size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
    };
    std::unordered_map<std::string, int32_t, Hash, std::equal_to<>> ids;
};

// Reads and validates the vocabulary; throws kite::Error naming the file and the problem
// (unknown tokenizer model, mismatched array lengths, special ids out of range ...).
Vocab load_vocab(const GgufFile& file);

}  // namespace kite
