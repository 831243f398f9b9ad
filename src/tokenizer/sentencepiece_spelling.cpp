#include "tokenizer/sentencepiece_spelling.h"

#include <cctype>

#include <fmt/format.h>

namespace kite {

std::string escape_spaces(std::string_view text, bool add_prefix) {
    std::string out;
    out.reserve(text.size() + 8);
    if (add_prefix) out += kSentencePieceSpace;
    for (char c : text) {
        if (c == ' ')
            out += kSentencePieceSpace;
        else
            out += c;
    }
    return out;
}

std::array<int32_t, 256> byte_token_ids(const Vocab& vocab) {
    std::array<int32_t, 256> ids{};
    for (int b = 0; b < 256; ++b) ids[size_t(b)] = vocab.find(fmt::format("<0x{:02X}>", b));
    return ids;
}

void append_sentencepiece_bytes(const Vocab& vocab, int32_t id, std::string& out) {
    const std::string& text = vocab.tokens[size_t(id)];
    if (vocab.type(id) == TokenType::Byte && text.size() == 6 && text.starts_with("<0x") &&
        text.back() == '>' && std::isxdigit(uint8_t(text[3])) && std::isxdigit(uint8_t(text[4]))) {
        const auto hex = [](char h) { return h <= '9' ? h - '0' : (h | 0x20) - 'a' + 10; };
        out += char(hex(text[3]) * 16 + hex(text[4]));
        return;
    }
    for (size_t pos = 0; pos < text.size();) {
        if (text.compare(pos, kSentencePieceSpace.size(), kSentencePieceSpace) == 0) {
            out += ' ';
            pos += kSentencePieceSpace.size();
        } else {
            out += text[pos++];
        }
    }
}

}  // namespace kite
