#define PCRE2_CODE_UNIT_WIDTH 8
#include "tokenizer/pre_tokenizer.h"

#include <pcre2.h>

#include <span>
#include <string>

#include "core/error.h"
#include "tokenizer/utf8.h"

namespace kite {

namespace {

// The regex lists are those of llama.cpp's llama-vocab.cpp, which reproduce the Hugging Face
// pre-tokenizers; the conformance vectors in testdata/vocab come from that reference.

// GPT-2's regex. The original ends in "|\s+"; leaving it out changes nothing here because
// text between matches is kept as a piece anyway.
constexpr std::string_view kGpt2 =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S))";

constexpr std::string_view kGpt2List[] = {kGpt2};
// Every digit a piece of its own, then GPT-2.
constexpr std::string_view kDigitsThenGpt2[] = {R"(\p{N})", kGpt2};
constexpr std::string_view kFalcon[] = {R"([\p{P}\$\+<=>\^~\|`]+)", kGpt2, R"([0-9][0-9][0-9])"};
// Newlines, letter runs, punctuation runs, CJK/Hangul runs, single digits.
constexpr std::string_view kDeepseekCoder[] = {
    "[\r\n]", R"(\s?\p{L}+)", R"(\s?\p{P}+)",
    R"([\x{4E00}-\x{9FA5}\x{0800}-\x{4E00}\x{AC00}-\x{D7FF}]+)", R"(\p{N})"};
constexpr std::string_view kDefault[] = {R"([\p{P}\$\+<=>\^~\|]+)", kGpt2, R"(\p{N}+)",
                                         R"([0-9][0-9][0-9])"};

struct TypeRegexes {
    std::string_view type;
    std::span<const std::string_view> regexes;
};

constexpr TypeRegexes kTypes[] = {
    {"default", kDefault},       {"gpt-2", kGpt2List},
    {"mpt", kGpt2List},          {"phi-2", kGpt2List},
    {"olmo", kGpt2List},         {"starcoder", kDigitsThenGpt2},
    {"refact", kDigitsThenGpt2}, {"smollm", kDigitsThenGpt2},
    {"falcon", kFalcon},         {"deepseek-coder", kDeepseekCoder},
};

std::span<const std::string_view> regexes_for(std::string_view type) {
    for (const TypeRegexes& t : kTypes)
        if (t.type == type) return t.regexes;
    std::string known;
    for (const TypeRegexes& t : kTypes) known += (known.empty() ? "" : ", ") + std::string(t.type);
    fail("unknown pre-tokenizer '{}' (supported: {})", type, known);
}

std::string pcre2_message(int code) {
    PCRE2_UCHAR buffer[256];
    pcre2_get_error_message(code, buffer, sizeof buffer);
    return reinterpret_cast<const char*>(buffer);
}

void push_if_nonempty(std::vector<std::string_view>& out, std::string_view piece) {
    if (!piece.empty()) out.push_back(piece);
}

}  // namespace

// One compiled regex (UTF + Unicode properties, JIT when the library has it).
class PreTokenizer::Regex {
  public:
    explicit Regex(std::string_view pattern) {
        int error = 0;
        PCRE2_SIZE offset = 0;
        code_ = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                              PCRE2_UTF | PCRE2_UCP, &error, &offset, nullptr);
        if (!code_)
            throw Error("pre-tokenizer regex does not compile at offset " + std::to_string(offset) +
                        ": " + pcre2_message(error));
        pcre2_jit_compile(code_, PCRE2_JIT_COMPLETE);  // the interpreter is the fallback
    }
    ~Regex() { pcre2_code_free(code_); }
    Regex(const Regex&) = delete;
    Regex& operator=(const Regex&) = delete;

    // Splits one valid-UTF-8 piece into matches and the text between them. The piece is the
    // whole subject, so lookaheads do not see past it.
    void split(std::string_view piece, std::vector<std::string_view>& out,
               pcre2_match_data* md) const {
        const auto* subject = reinterpret_cast<PCRE2_SPTR>(piece.data());
        const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
        size_t kept = 0, start = 0;
        while (start < piece.size()) {
            const int rc =
                pcre2_match(code_, subject, piece.size(), start, PCRE2_NO_UTF_CHECK, md, nullptr);
            if (rc == PCRE2_ERROR_NOMATCH) break;
            if (rc < 0) throw Error("pre-tokenizer regex failed: " + pcre2_message(rc));
            const size_t begin = ov[0], end = ov[1];
            if (end == begin) {  // an empty match: step over one character, keep nothing
                start = begin + next_utf8_sequence(piece.substr(begin)).length;
                continue;
            }
            push_if_nonempty(out, piece.substr(kept, begin - kept));
            out.push_back(piece.substr(begin, end - begin));
            kept = start = end;
        }
        push_if_nonempty(out, piece.substr(kept));
    }

    pcre2_match_data* new_match_data() const {
        return pcre2_match_data_create_from_pattern(code_, nullptr);
    }

  private:
    pcre2_code* code_ = nullptr;
};

PreTokenizer::PreTokenizer(std::string_view type) {
    for (std::string_view pattern : regexes_for(type))
        regexes_.push_back(std::make_unique<Regex>(pattern));
}

PreTokenizer::~PreTokenizer() = default;

std::vector<std::string_view> PreTokenizer::known_types() {
    std::vector<std::string_view> out;
    for (const TypeRegexes& t : kTypes) out.push_back(t.type);
    return out;
}

namespace {

// Valid runs of text, with each invalid byte as a run of its own.
std::vector<std::string_view> split_invalid_utf8(std::string_view text) {
    std::vector<std::string_view> out;
    while (!text.empty()) {
        size_t valid = valid_utf8_prefix(text);
        if (valid == 0) valid = 1;  // one bad byte
        out.push_back(text.substr(0, valid));
        text.remove_prefix(valid);
    }
    return out;
}

// split_invalid_utf8() leaves a bad byte alone in its piece; valid one-byte pieces are ASCII.
bool is_invalid_byte(std::string_view piece) {
    return piece.size() == 1 && static_cast<uint8_t>(piece[0]) >= 0x80;
}

struct MatchData {
    pcre2_match_data* md;
    ~MatchData() { pcre2_match_data_free(md); }
};

}  // namespace

std::vector<std::string_view> PreTokenizer::split(std::string_view text) const {
    std::vector<std::string_view> pieces = split_invalid_utf8(text);
    std::vector<std::string_view> next;
    for (const auto& regex : regexes_) {
        MatchData data{regex->new_match_data()};
        if (!data.md) throw std::bad_alloc();
        next.clear();
        for (std::string_view piece : pieces) {
            if (is_invalid_byte(piece))
                next.push_back(piece);
            else
                regex->split(piece, next, data.md);
        }
        pieces.swap(next);
    }
    return pieces;
}

}  // namespace kite
