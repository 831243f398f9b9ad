#include "tokenizer/bert_pre_tokenizer.h"

#include <unicode/uchar.h>
#include <unicode/unorm2.h>

#include "core/utf8.h"

namespace kite {

namespace {

constexpr uint32_t kReplacement = 0xFFFD;

// The ideograph blocks BERT treats as words of one character (its _is_chinese_char). The
// reference tokenizers start the fifth supplementary block at U+2B920, not U+2B820.
bool is_cjk(uint32_t c) {
    static constexpr uint32_t kRanges[][2] = {
        {0x4E00, 0x9FFF},   {0x3400, 0x4DBF},   {0x20000, 0x2A6DF}, {0x2A700, 0x2B73F},
        {0x2B740, 0x2B81F}, {0x2B920, 0x2CEAF}, {0xF900, 0xFAFF},   {0x2F800, 0x2FA1F}};
    for (const auto& r : kRanges)
        if (c >= r[0] && c <= r[1]) return true;
    return false;
}

bool is_control(int8_t type) {
    return type == U_CONTROL_CHAR || type == U_FORMAT_CHAR || type == U_PRIVATE_USE_CHAR ||
           type == U_SURROGATE;
}

bool is_mark(int8_t type) {
    return type == U_NON_SPACING_MARK || type == U_ENCLOSING_MARK ||
           type == U_COMBINING_SPACING_MARK;
}

bool is_punctuation(int8_t type) {
    return type == U_DASH_PUNCTUATION || type == U_START_PUNCTUATION || type == U_END_PUNCTUATION ||
           type == U_CONNECTOR_PUNCTUATION || type == U_OTHER_PUNCTUATION ||
           type == U_INITIAL_PUNCTUATION || type == U_FINAL_PUNCTUATION;
}

bool is_symbol(int8_t type) {
    return type == U_MATH_SYMBOL || type == U_CURRENCY_SYMBOL || type == U_MODIFIER_SYMBOL ||
           type == U_OTHER_SYMBOL;
}

// Accent stripping keeps the first character of the canonical decomposition: the base letter
// of a precomposed one, the leading consonant of a Hangul syllable (as the reference tokenizer
// does: it maps each character to one).
uint32_t base_character(uint32_t c) {
    UErrorCode status = U_ZERO_ERROR;
    const UNormalizer2* nfd = unorm2_getNFDInstance(&status);
    UChar buffer[32];
    const int32_t n =
        U_SUCCESS(status) ? unorm2_getDecomposition(nfd, UChar32(c), buffer, 32, &status) : -1;
    if (n <= 0 || U_FAILURE(status)) return c;
    UChar32 first = buffer[0];
    if (U16_IS_LEAD(buffer[0]) && n > 1) first = U16_GET_SUPPLEMENTARY(buffer[0], buffer[1]);
    return uint32_t(first);
}

std::vector<uint32_t> code_points(std::string_view text) {
    std::vector<uint32_t> out;
    out.reserve(text.size());
    while (!text.empty()) {
        const Utf8Sequence s = next_utf8_sequence(text);
        const bool ok = s.status == Utf8Status::Complete;
        out.push_back(ok ? decode_utf8(text.substr(0, s.length)) : kReplacement);
        text.remove_prefix(ok ? s.length : 1);
    }
    return out;
}

}  // namespace

std::vector<std::string> bert_words(std::string_view text, BertNormalization options) {
    std::vector<std::string> words(1);
    auto finish_word = [&] {
        if (!words.back().empty()) words.emplace_back();
    };
    for (uint32_t c : code_points(text)) {
        if (options.strip_accents) c = base_character(c);
        if (u_isUWhiteSpace(UChar32(c))) {
            finish_word();
            continue;
        }
        const int8_t type = u_charType(UChar32(c));
        if (c == 0 || c == kReplacement || is_control(type)) continue;
        if (options.strip_accents && is_mark(type)) continue;
        const uint32_t shown = options.lowercase ? uint32_t(u_tolower(UChar32(c))) : c;
        if (is_punctuation(type) || (c < 0x7F && is_symbol(type)) || is_cjk(c)) {
            finish_word();
            append_utf8(shown, words.back());
            words.emplace_back();
        } else {
            append_utf8(shown, words.back());
        }
    }
    if (words.back().empty()) words.pop_back();
    return words;
}

}  // namespace kite
