#include "template/lexer.h"

#include <algorithm>
#include <cctype>

#include "core/utf8.h"
#include "template/error.h"

namespace kite::tmpl {

namespace {

bool is_space(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}
bool is_name_start(char c) {
    return std::isalpha(static_cast<unsigned char>(c)) || c == '_';
}
bool is_name_char(char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}
bool is_digit(char c) {
    return c >= '0' && c <= '9';
}

// Decodes Python's string escapes (Jinja2 runs string literals through "unicode-escape");
// an unknown escape keeps its backslash, as Python does.
std::string decode_escapes(std::string_view s, int line) {
    std::string out;
    for (size_t i = 0; i < s.size(); ++i) {
        if (s[i] != '\\' || i + 1 == s.size()) {
            out += s[i];
            continue;
        }
        const char c = s[++i];
        auto hex = [&](size_t digits) {
            uint32_t cp = 0;
            for (size_t k = 1; k <= digits; ++k) {
                if (i + k >= s.size() || !std::isxdigit(static_cast<unsigned char>(s[i + k])))
                    template_fail("line {}: bad \\x/\\u escape in a string", line);
                const char h =
                    static_cast<char>(std::tolower(static_cast<unsigned char>(s[i + k])));
                cp = cp * 16 + static_cast<uint32_t>(is_digit(h) ? h - '0' : h - 'a' + 10);
            }
            i += digits;
            if (cp > 0x10FFFF) template_fail("line {}: escape beyond U+10FFFF", line);
            append_utf8(cp, out);
        };
        switch (c) {
            case '\n':
                break;
            case '\\':
            case '\'':
            case '"':
                out += c;
                break;
            case 'n':
                out += '\n';
                break;
            case 't':
                out += '\t';
                break;
            case 'r':
                out += '\r';
                break;
            case 'b':
                out += '\b';
                break;
            case 'f':
                out += '\f';
                break;
            case 'v':
                out += '\v';
                break;
            case 'a':
                out += '\a';
                break;
            case 'x':
                hex(2);
                break;
            case 'u':
                hex(4);
                break;
            case 'U':
                hex(8);
                break;
            default:
                if (c >= '0' && c <= '7') {
                    uint32_t cp = 0;
                    size_t k = 0;
                    for (; k < 3 && i + k < s.size() && s[i + k] >= '0' && s[i + k] <= '7'; ++k)
                        cp = cp * 8 + static_cast<uint32_t>(s[i + k] - '0');
                    i += k - 1;
                    append_utf8(cp, out);
                } else {
                    out += '\\';
                    out += c;
                }
        }
    }
    return out;
}

class Lexer {
  public:
    explicit Lexer(std::string_view source) : src_(normalize(source)) {}

    std::vector<Token> run() {
        while (pos_ < src_.size()) {
            const size_t at = next_tag(pos_);
            std::string text = src_.substr(pos_, at - pos_);
            if (at == src_.size()) {
                add_text(std::move(text));
                break;
            }
            const char kind = src_[at + 1];
            const char sign = at + 2 < src_.size() ? src_[at + 2] : '\0';
            if (sign == '-') {
                text.erase(
                    std::find_if(text.rbegin(), text.rend(), [](char c) { return !is_space(c); })
                        .base(),
                    text.end());
            } else if (sign != '+' && kind != '{') {
                lstrip_line(text);
            }
            add_text(std::move(text));
            pos_ = at + 2 + (sign == '-' || sign == '+');
            if (kind == '#')
                skip_comment();
            else
                lex_tag(kind == '{');
        }
        tokens_.push_back({Token::Type::End, "", line_});
        return std::move(tokens_);
    }

  private:
    // Newlines become "\n" (as Jinja2 normalizes them) and one trailing newline goes.
    static std::string normalize(std::string_view source) {
        std::string s;
        s.reserve(source.size());
        for (size_t i = 0; i < source.size(); ++i) {
            if (source[i] == '\r') {
                s += '\n';
                if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
            } else {
                s += source[i];
            }
        }
        if (!s.empty() && s.back() == '\n') s.pop_back();
        return s;
    }

    size_t next_tag(size_t from) const {
        for (size_t i = src_.find('{', from); i != std::string::npos; i = src_.find('{', i + 1))
            if (i + 1 < src_.size() &&
                (src_[i + 1] == '{' || src_[i + 1] == '%' || src_[i + 1] == '#'))
                return i;
        return src_.size();
    }

    // lstrip_blocks: indentation alone on its line before a block or comment tag goes.
    void lstrip_line(std::string& text) const {
        const size_t line_start = text.rfind('\n') + 1;  // npos + 1 == 0
        if (line_start == 0 && !line_starting_) return;
        if (line_start == text.size()) return;
        for (size_t i = line_start; i < text.size(); ++i)
            if (!is_space(text[i])) return;
        text.resize(line_start);
    }

    void add_text(std::string text) {
        if (text.empty()) return;
        tokens_.push_back({Token::Type::Text, std::move(text), line_});
        for (char c : tokens_.back().text) line_ += c == '\n';
    }

    // After a tag: `-` strips all whitespace, a block tag under trim_blocks drops one newline.
    void after_tag_end(bool strip_all, bool trim_newline) {
        if (strip_all) {
            while (pos_ < src_.size() && is_space(src_[pos_])) line_ += src_[pos_++] == '\n';
        } else if (trim_newline && pos_ < src_.size() && src_[pos_] == '\n') {
            ++pos_;
            ++line_;
        }
        line_starting_ = pos_ > 0 && src_[pos_ - 1] == '\n';
    }

    void skip_comment() {
        const size_t end = src_.find("#}", pos_);
        if (end == std::string::npos) template_fail("line {}: unclosed comment", line_);
        for (size_t i = pos_; i < end; ++i) line_ += src_[i] == '\n';
        const bool strip = end > pos_ && src_[end - 1] == '-';
        const bool keep = end > pos_ && src_[end - 1] == '+';
        pos_ = end + 2;
        after_tag_end(strip, !keep);
    }

    void lex_tag(bool variable) {
        tokens_.push_back({variable ? Token::Type::VarBegin : Token::Type::BlockBegin, "", line_});
        const char close = variable ? '}' : '%';
        int depth = 0;  // open brackets: a closing delimiter inside them is not the tag's end
        while (true) {
            while (pos_ < src_.size() && is_space(src_[pos_])) line_ += src_[pos_++] == '\n';
            if (pos_ >= src_.size()) template_fail("line {}: unclosed tag", line_);
            if (depth == 0 && ends_tag(close)) return;
            lex_expression_token(depth);
        }
    }

    bool ends_tag(char close) {
        auto at = [&](size_t i) { return i < src_.size() ? src_[i] : '\0'; };
        const Token::Type type = close == '}' ? Token::Type::VarEnd : Token::Type::BlockEnd;
        if ((at(pos_) == '-' || at(pos_) == '+') && at(pos_ + 1) == close && at(pos_ + 2) == '}') {
            const bool strip = at(pos_) == '-';
            if (!strip && close == '}') return false;  // `+}}` is not an end
            tokens_.push_back({type, "", line_});
            pos_ += 3;
            after_tag_end(strip, false);
            return true;
        }
        if (at(pos_) == close && at(pos_ + 1) == '}') {
            tokens_.push_back({type, "", line_});
            pos_ += 2;
            after_tag_end(false, close == '%');
            return true;
        }
        return false;
    }

    void lex_expression_token(int& depth) {
        const char c = src_[pos_];
        if (is_name_start(c)) {
            const size_t start = pos_;
            while (pos_ < src_.size() && is_name_char(src_[pos_])) ++pos_;
            tokens_.push_back({Token::Type::Name, src_.substr(start, pos_ - start), line_});
        } else if (is_digit(c)) {
            lex_number();
        } else if (c == '\'' || c == '"') {
            lex_string(c);
        } else {
            lex_operator(depth);
        }
    }

    void lex_number() {
        auto digits = [&] {
            std::string d;
            while (pos_ < src_.size() &&
                   (is_digit(src_[pos_]) || (src_[pos_] == '_' && !d.empty())))
                if (src_[pos_++] != '_') d += src_[pos_ - 1];
            return d;
        };
        std::string text = digits();
        bool is_float = false;
        if (pos_ + 1 < src_.size() && src_[pos_] == '.' && is_digit(src_[pos_ + 1])) {
            ++pos_;
            text += '.';
            text += digits();
            is_float = true;
        }
        if (pos_ < src_.size() && (src_[pos_] == 'e' || src_[pos_] == 'E')) {
            size_t p = pos_ + 1;
            if (p < src_.size() && (src_[p] == '+' || src_[p] == '-')) ++p;
            if (p < src_.size() && is_digit(src_[p])) {
                text += 'e';
                if (src_[pos_ + 1] == '-') text += '-';
                pos_ = p;
                text += digits();
                is_float = true;
            }
        }
        tokens_.push_back({is_float ? Token::Type::Float : Token::Type::Int, text, line_});
    }

    void lex_string(char quote) {
        const int line = line_;
        size_t i = pos_ + 1;
        while (i < src_.size() && src_[i] != quote) {
            if (src_[i] == '\\') ++i;
            if (i < src_.size()) line_ += src_[i] == '\n';
            ++i;
        }
        if (i >= src_.size()) template_fail("line {}: unclosed string", line);
        tokens_.push_back(
            {Token::Type::String,
             decode_escapes(std::string_view(src_).substr(pos_ + 1, i - pos_ - 1), line), line});
        pos_ = i + 1;
    }

    void lex_operator(int& depth) {
        static constexpr std::string_view kTwo[] = {"//", "**", "==", "!=", "<=", ">="};
        const std::string_view rest = std::string_view(src_).substr(pos_);
        for (std::string_view op : kTwo)
            if (rest.starts_with(op)) {
                tokens_.push_back({Token::Type::Operator, std::string(op), line_});
                pos_ += 2;
                return;
            }
        const char c = src_[pos_];
        if (std::string_view("+-*/%~<>=.,:|()[]{};").find(c) == std::string_view::npos)
            template_fail("line {}: unexpected character '{}'", line_, c);
        if (c == '(' || c == '[' || c == '{') ++depth;
        if ((c == ')' || c == ']' || c == '}') && depth > 0) --depth;
        tokens_.push_back({Token::Type::Operator, std::string(1, c), line_});
        ++pos_;
    }

    std::string src_;
    size_t pos_ = 0;
    int line_ = 1;
    bool line_starting_ = true;
    std::vector<Token> tokens_;
};

}  // namespace

std::vector<Token> tokenize(std::string_view source) {
    return Lexer(source).run();
}

}  // namespace kite::tmpl
