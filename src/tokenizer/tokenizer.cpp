#include "tokenizer/tokenizer.h"

#include <algorithm>

#include "core/error.h"
#include "gguf/gguf_file.h"
#include "tokenizer/bpe_model.h"
#include "tokenizer/special_tokens.h"
#include "tokenizer/spm_model.h"
#include "tokenizer/token_model.h"
#include "tokenizer/wordpiece_model.h"

namespace kite {

namespace {

std::unique_ptr<TokenModel> make_model(const Vocab& vocab) {
    switch (vocab.kind) {
        case VocabKind::BytePairBpe:
        case VocabKind::SentencePieceMerges:
            return std::make_unique<BpeModel>(vocab);
        case VocabKind::SentencePiece:
            return std::make_unique<SpmModel>(vocab);
        case VocabKind::WordPiece:
            return std::make_unique<WordPieceModel>(vocab);
    }
    fail("unsupported vocabulary kind");
}

}  // namespace

std::unique_ptr<Tokenizer> Tokenizer::from_gguf(const GgufFile& file) {
    Vocab vocab = load_vocab(file);
    try {
        return std::make_unique<Tokenizer>(std::move(vocab));
    } catch (const Error& e) {
        fail("'{}': {}", file.name(), e.what());
    }
}

Tokenizer::Tokenizer(Vocab vocab)
    : vocab_(std::move(vocab)),
      model_(make_model(vocab_)),
      specials_(std::make_unique<SpecialTokenSplitter>(vocab_)) {}

Tokenizer::~Tokenizer() = default;

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool add_special,
                                       bool parse_special) const {
    std::vector<int32_t> out;
    out.reserve(text.size() / 3 + 2);
    if (add_special && vocab_.add_bos) out.push_back(vocab_.bos);
    bool starts_text = true;
    for (const Fragment& f : specials_->split(text, parse_special)) {
        if (f.token != kNoToken) {
            out.push_back(f.token);
            starts_text = true;
        } else {
            model_->encode(f.text, starts_text, out);
            starts_text = false;
        }
    }
    if (add_special && vocab_.add_separator) out.push_back(vocab_.separator);
    if (add_special && vocab_.add_eos) out.push_back(vocab_.eos);
    return out;
}

std::string Tokenizer::decode(std::span<const int32_t> ids, bool render_special) const {
    std::string out;
    DecodeState state;
    for (int32_t id : ids) decode_token(id, state, out, render_special);
    return out;
}

void Tokenizer::decode_token(int32_t id, DecodeState& state, std::string& out,
                             bool render_special) const {
    check_id(id);
    if (is_special(id)) {
        // User-defined tokens are ordinary text that the vocabulary keeps whole.
        if (render_special || vocab_.type(id) == TokenType::UserDefined) out += piece(id);
        state.starts_text = true;
        return;
    }
    const size_t start = out.size();
    model_->append_bytes(id, out);
    if (state.starts_text && model_->adds_space_prefix() && out.size() > start && out[start] == ' ')
        out.erase(start, 1);
    state.starts_text = false;
}

std::string Tokenizer::token_text(int32_t id) const {
    check_id(id);
    if (is_special(id)) return std::string(piece(id));
    std::string out;
    model_->append_bytes(id, out);
    return out;
}

std::string_view Tokenizer::piece(int32_t id) const {
    check_id(id);
    return vocab_.tokens[size_t(id)];
}

bool Tokenizer::is_end_of_generation(int32_t id) const {
    return std::binary_search(vocab_.end_of_generation.begin(), vocab_.end_of_generation.end(), id);
}

bool Tokenizer::is_special(int32_t id) const {
    check_id(id);
    return vocab_.is_special(id);
}

void Tokenizer::check_id(int32_t id) const {
    if (id < 0 || size_t(id) >= vocab_.size())
        fail("token id {} is out of range (the vocabulary has {} tokens)", id, vocab_.size());
}

}  // namespace kite
