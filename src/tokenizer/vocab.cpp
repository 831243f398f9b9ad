#include "tokenizer/vocab.h"

#include <algorithm>
#include <limits>

#include "core/error.h"
#include "gguf/gguf_file.h"

namespace kite {

namespace {

constexpr std::string_view kPrefix = "tokenizer.ggml.";

std::string key(std::string_view name) {
    return std::string(kPrefix) + std::string(name);
}

VocabKind kind_of(const GgufFile& file, std::string_view model) {
    if (model == "gpt2") return VocabKind::BytePairBpe;
    if (model == "llama") return VocabKind::SentencePiece;
    if (model == "gemma4") return VocabKind::SentencePieceMerges;
    if (model == "bert") return VocabKind::WordPiece;
    fail("'{}': unknown tokenizer model '{}' (supported: gpt2, llama, gemma4, bert)", file.name(),
         model);
}

std::vector<std::string> read_strings(const GgufFile& file, std::string_view name) {
    std::vector<std::string> out;
    if (auto views = file.get_string_array(key(name))) out.assign(views->begin(), views->end());
    return out;
}

// An optional per-token array must have exactly one entry per token.
void check_length(const GgufFile& file, std::string_view name, size_t got, size_t n_tokens) {
    if (got != n_tokens)
        fail("'{}': {} has {} entries but the vocabulary has {} tokens", file.name(), key(name),
             got, n_tokens);
}

void read_tokens(const GgufFile& file, Vocab& v) {
    v.tokens = read_strings(file, "tokens");
    if (v.tokens.empty()) fail("'{}': {} is missing or empty", file.name(), key("tokens"));
    if (v.tokens.size() > size_t(std::numeric_limits<int32_t>::max()))
        fail("'{}': {} has {} tokens, more than token ids can hold", file.name(), key("tokens"),
             v.tokens.size());
    const size_t n = v.tokens.size();

    v.scores.assign(n, 0.0f);
    if (auto scores = file.get_float_array(key("scores"))) {
        check_length(file, "scores", scores->size(), n);
        v.scores = std::move(*scores);
    }
    v.types.assign(n, TokenType::Normal);
    if (auto types = file.get_int_array(key("token_type"))) {
        check_length(file, "token_type", types->size(), n);
        for (size_t i = 0; i < n; ++i) {
            const int64_t t = (*types)[i];
            // Values outside the known range are kept out of the special-token logic.
            v.types[i] = t >= 0 && t <= 6 ? static_cast<TokenType>(t) : TokenType::Undefined;
        }
    }
}

void read_merges(const GgufFile& file, Vocab& v) {
    if (v.kind == VocabKind::SentencePiece || v.kind == VocabKind::WordPiece) return;
    if (!file.find(key("merges")))
        fail("'{}': {} is missing (a {} tokenizer needs its merge list)", file.name(),
             key("merges"), v.model);
    v.merges = read_strings(file, "merges");
    for (size_t i = 0; i < v.merges.size(); ++i) {
        // Searching from 1 lets the left part itself be a space, as llama.cpp reads merges.
        const std::string& m = v.merges[i];
        const size_t space = m.size() > 1 ? m.find(' ', 1) : std::string::npos;
        if (space == std::string::npos || space + 1 == m.size())
            fail("'{}': {}[{}] = '{}' is not two tokens separated by a space", file.name(),
                 key("merges"), i, m);
    }
}

// A special id from the metadata; the default applies only when the key is absent.
int32_t read_id(const GgufFile& file, std::string_view name, int32_t fallback, size_t n) {
    const std::optional<int64_t> id = file.get_int(key(name));
    if (!id) return fallback < int64_t(n) ? fallback : kNoToken;
    if (*id < 0 || *id >= int64_t(n))
        fail("'{}': {} = {} is out of range (the vocabulary has {} tokens)", file.name(), key(name),
             *id, n);
    return static_cast<int32_t>(*id);
}

void read_special_ids(const GgufFile& file, Vocab& v) {
    const size_t n = v.tokens.size();
    // SentencePiece files from before these keys existed used LLaMA's ids.
    const bool spm = v.kind == VocabKind::SentencePiece;
    v.bos = read_id(file, "bos_token_id", spm ? 1 : kNoToken, n);
    v.eos = read_id(file, "eos_token_id", spm ? 2 : kNoToken, n);
    v.unknown = read_id(file, "unknown_token_id", spm ? 0 : kNoToken, n);
    v.eot = read_id(file, "eot_token_id", kNoToken, n);
    v.eom = read_id(file, "eom_token_id", kNoToken, n);
    v.padding = read_id(file, "padding_token_id", kNoToken, n);
    if (v.kind != VocabKind::WordPiece) return;
    // BERT files name [CLS] as BOS or as the CLS token, or only have it in the vocabulary.
    if (v.bos == kNoToken) v.bos = read_id(file, "cls_token_id", v.find("[CLS]"), n);
    v.separator = read_id(file, "seperator_token_id", v.find("[SEP]"), n);  // GGUF's spelling
    if (v.unknown == kNoToken) v.unknown = v.find("[UNK]");
}

void read_flags(const GgufFile& file, Vocab& v) {
    const bool spm = v.kind == VocabKind::SentencePiece;
    v.add_bos = file.get_bool(key("add_bos_token")).value_or(spm);
    // Gemma 4 needs BOS; the reference tokenizer adds it even where the file says not to.
    if (v.kind == VocabKind::SentencePieceMerges) v.add_bos = true;
    v.add_eos = file.get_bool(key("add_eos_token")).value_or(false);
    v.add_space_prefix = file.get_bool(key("add_space_prefix")).value_or(spm);
    if (v.kind == VocabKind::WordPiece) {
        // BERT encodes a text as [CLS] ... [SEP].
        v.add_bos = file.get_bool(key("add_bos_token")).value_or(true);
        v.add_eos = false;  // [SEP] ends the text, whatever EOS is
        v.add_separator = file.get_bool(key("add_sep_token")).value_or(true);
        v.lowercase = file.get_bool(key("normalizer.lowercase")).value_or(true);
        v.strip_accents = file.get_bool(key("normalizer.strip_accents")).value_or(v.lowercase);
        if (v.add_separator && v.separator == kNoToken)
            fail("'{}': {} is set but there is no {}", file.name(), key("add_sep_token"),
                 key("seperator_token_id"));
    }
    if (v.add_bos && v.bos == kNoToken)
        fail("'{}': {} is set but there is no {}", file.name(), key("add_bos_token"),
             key("bos_token_id"));
    if (v.add_eos && v.eos == kNoToken)
        fail("'{}': {} is set but there is no {}", file.name(), key("add_eos_token"),
             key("eos_token_id"));
}

void index_tokens(Vocab& v) {
    v.ids.reserve(v.tokens.size());
    for (size_t i = 0; i < v.tokens.size(); ++i) v.ids.emplace(v.tokens[i], int32_t(i));
}

// Files often name only EOS, while chat models end a turn with their own marker; these are
// the end-of-turn texts of the common chat formats.
void collect_end_of_generation(Vocab& v) {
    static constexpr std::string_view kEndOfTurn[] = {
        "<|eot_id|>",    "<|im_end|>", "<|end|>", "<end_of_turn>",
        "<|endoftext|>", "<|eom_id|>", "<EOT>"};
    std::vector<int32_t>& eog = v.end_of_generation;
    for (int32_t id : {v.eos, v.eot, v.eom})
        if (id != kNoToken) eog.push_back(id);
    for (std::string_view text : kEndOfTurn)
        if (int32_t id = v.find(text); id != kNoToken) eog.push_back(id);
    std::sort(eog.begin(), eog.end());
    eog.erase(std::unique(eog.begin(), eog.end()), eog.end());
}

}  // namespace

int32_t Vocab::find(std::string_view text) const {
    auto it = ids.find(text);
    return it == ids.end() ? kNoToken : it->second;
}

bool Vocab::is_special(int32_t id) const {
    const TokenType t = type(id);
    return t != TokenType::Normal && t != TokenType::Byte;
}

Vocab load_vocab(const GgufFile& file) {
    Vocab v;
    v.source = file.name();
    const std::optional<std::string_view> model = file.get_string(key("model"));
    if (!model) fail("'{}': has no tokenizer ({} is missing)", file.name(), key("model"));
    v.model = std::string(*model);
    v.kind = kind_of(file, v.model);
    v.pre = std::string(file.get_string(key("pre")).value_or("default"));
    // The merge-based SentencePiece model has one fixed pre-tokenizer, whatever the file says.
    if (v.kind == VocabKind::SentencePieceMerges) v.pre = "gemma4";
    read_tokens(file, v);
    read_merges(file, v);
    index_tokens(v);
    read_special_ids(file, v);
    read_flags(file, v);
    collect_end_of_generation(v);
    return v;
}

}  // namespace kite
