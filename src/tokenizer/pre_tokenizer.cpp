#define PCRE2_CODE_UNIT_WIDTH 8
#include "tokenizer/pre_tokenizer.h"

#include <pcre2.h>

#include <span>
#include <string>

#include "core/error.h"
#include "core/utf8.h"

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

// Llama 3's regex (the GPT-4 one): contractions in either case, letters with one leading
// non-letter, numbers in runs of up to three digits, punctuation with the newlines after it.
// The original spells the contractions (?i:'s|'t|...); the explicit classes are the same.
constexpr std::string_view kLlama3[] = {
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|)"
    R"(\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)"};
// Qwen2: Llama 3's regex with every digit a piece of its own.
constexpr std::string_view kQwen2[] = {
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|)"
    R"(\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)"};
// DeepSeek LLM: newlines, runs of cased letters (Latin, Greek, Cyrillic, Armenian, Georgian,
// Cherokee, Glagolitic, Coptic ... as explicit ranges), ASCII and full-width punctuation,
// trailing whitespace, CJK/Hangul runs, digit runs. \z, not $: only the end of the piece.
constexpr std::string_view kDeepseekLlm[] = {
    R"([\r\n])",
    R"(\s?[A-Za-z\x{B5}\x{C0}-\x{D6}\x{D8}-\x{F6}\x{F8}-\x{1BA}\x{1BC}-\x{1BF}\x{1C4}-\x{293})"
    R"(\x{295}-\x{2AF}\x{370}-\x{373}\x{376}\x{377}\x{37B}-\x{37D}\x{37F}\x{386}\x{388}-\x{38A})"
    R"(\x{38C}\x{38E}-\x{3A1}\x{3A3}-\x{3F5}\x{3F7}-\x{481}\x{48A}-\x{52F}\x{531}-\x{556})"
    R"(\x{10A0}-\x{10C5}\x{13A0}-\x{13F5}\x{13F8}-\x{13FD}\x{1C90}-\x{1CBA}\x{1CBD}-\x{1CBF})"
    R"(\x{1D00}-\x{1D2B}\x{1D6B}-\x{1D77}\x{1D79}-\x{1D9A}\x{1E00}-\x{1F15}\x{1F18}-\x{1F1D})"
    R"(\x{1F20}-\x{1F45}\x{1F48}-\x{1F4D}\x{1F50}-\x{1F57}\x{1F59}\x{1F5B}\x{1F5D})"
    R"(\x{1F5F}-\x{1F7D}\x{1F80}-\x{1FB4}\x{1FB6}-\x{1FBC}\x{1FBE}\x{1FC2}-\x{1FC4})"
    R"(\x{1FC6}-\x{1FCC}\x{1FD0}-\x{1FD3}\x{1FD6}-\x{1FDB}\x{1FE0}-\x{1FEC}\x{1FF2}-\x{1FF4})"
    R"(\x{1FF6}-\x{1FFC}\x{2102}\x{2107}\x{210A}-\x{2113}\x{2115}\x{2119}-\x{211D}\x{2124})"
    R"(\x{2126}\x{2128}\x{212A}-\x{212D}\x{212F}-\x{2134}\x{2139}\x{213C}-\x{213F})"
    R"(\x{2145}-\x{2149}\x{214E}\x{2183}\x{2184}\x{2C00}-\x{2C7B}\x{2C7E}-\x{2CE4})"
    R"(\x{2CEB}-\x{2CEE}\x{2CF2}\x{2CF3}\x{A640}-\x{A66D}\x{A680}-\x{A69B}\x{A722}-\x{A76F})"
    R"(\x{A771}-\x{A787}\x{A78B}-\x{A78E}\x{AB70}-\x{ABBF}\x{FB00}-\x{FB06}\x{FB13}-\x{FB17})"
    R"(\x{FF21}-\x{FF3A}\x{FF41}-\x{FF5A}\x{10400}-\x{1044F}\x{104B0}-\x{104D3})"
    R"(\x{104D8}-\x{104FB}\x{10C80}-\x{10CB2}\x{10CC0}-\x{10CF2}\x{118A0}-\x{118DF})"
    R"(\x{1E900}-\x{1E943}]+)",
    R"(\s?[!-/:-~\x{FF01}-\x{FF0F}\x{FF1A}-\x{FF5E}\x{2018}-\x{201F}\x{3000}-\x{3002}]+)",
    R"(\s+\z)",
    R"([\x{4E00}-\x{9FA5}\x{0800}-\x{4E00}\x{AC00}-\x{D7FF}]+)",
    R"(\p{N}+)",
};
// Gemma 4 merges over whole lines: runs of newlines apart from the rest.
constexpr std::string_view kNewlineRuns[] = {R"([^\n]+|[\n]+)"};

using WholePieces = PreTokenizer::WholePieces;

struct TypeRegexes {
    std::string_view type;
    std::span<const std::string_view> regexes;
    WholePieces whole_pieces = WholePieces::Never;
};

constexpr TypeRegexes kTypes[] = {
    {"default", kDefault},
    {"gpt-2", kGpt2List},
    {"mpt", kGpt2List},
    {"phi-2", kGpt2List},
    {"olmo", kGpt2List},
    {"starcoder", kDigitsThenGpt2},
    {"refact", kDigitsThenGpt2},
    {"smollm", kDigitsThenGpt2},
    {"command-r", kDigitsThenGpt2},
    {"falcon", kFalcon},
    {"deepseek-coder", kDeepseekCoder},
    {"deepseek-llm", kDeepseekLlm},
    {"llama-bpe", kLlama3, WholePieces::Always},
    {"llama3", kLlama3, WholePieces::Always},
    {"dbrx", kLlama3},
    {"smaug-bpe", kLlama3},
    {"qwen2", kQwen2},
    {"stablelm2", kQwen2},
    {"gemma4", kNewlineRuns, WholePieces::NewlineRuns},
};

const TypeRegexes& regexes_for(std::string_view type) {
    for (const TypeRegexes& t : kTypes)
        if (t.type == type) return t;
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
    const TypeRegexes& t = regexes_for(type);
    for (std::string_view pattern : t.regexes) regexes_.push_back(std::make_unique<Regex>(pattern));
    whole_pieces_ = t.whole_pieces;
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
