#include "grammar/json_key_guard.h"

namespace kite::grammar {

JsonKeyGuard::JsonKeyGuard(const TokenizerVocab& vocab, size_t skip) : vocab_(vocab), skip_(skip) {}

int JsonKeyGuard::step(Position& p, uint8_t byte, bool top_is_object) {
    if (p.in_string) {
        if (p.escaped)
            p.escaped = false;
        else if (byte == '\\')
            p.escaped = true;
        else if (byte == '"')
            p.in_string = p.name = false;
        return 0;
    }
    switch (byte) {
        case '"':
            p.in_string = true;
            p.name = p.expect_name;
            p.expect_name = false;
            return 0;
        case '{':
            p.expect_name = true;
            return 1;
        case '[':
            p.expect_name = false;
            return 2;
        case '}':
        case ']':
            p.expect_name = false;
            return -1;
        case ',':
            p.expect_name = top_is_object;
            return 0;
        default:  // ':', whitespace, numbers, literals
            return 0;
    }
}

void JsonKeyGuard::feed(std::string_view bytes) {
    for (const char c : bytes) {
        if (skip_ > 0) {
            --skip_;
            continue;
        }
        if (done_) return;
        const auto b = static_cast<uint8_t>(c);
        if (pos_.in_string && pos_.name) {
            if (!pos_.escaped && b == '"') {
                if (!frames_.empty() && frames_.back().names.insert(name_).second) ++named_;
                name_.clear();
            } else {
                name_ += c;
            }
        }
        const int effect = step(pos_, b, !frames_.empty() && frames_.back().object);
        if (effect > 0) {
            frames_.push_back({effect == 1, {}});
        } else if (effect < 0 && !frames_.empty()) {
            named_ -= frames_.back().names.size();
            frames_.pop_back();
            done_ = frames_.empty();
        }
    }
}

// Whether `token`, read from where the lexer stands, closes a name that the object it belongs
// to holds already. Containers the token opens itself start empty (tracked by a bit each).
bool JsonKeyGuard::repeats_name(std::string_view token) const {
    Position p = pos_;
    size_t level = frames_.size();  // real frames still open
    uint64_t opened_objects = 0;    // bit i: the i-th container opened by the token is an object
    size_t opened = 0;
    scratch_.assign(p.in_string && p.name ? name_ : std::string_view{});
    for (const char c : token) {
        const auto b = static_cast<uint8_t>(c);
        if (p.in_string && p.name) {
            if (!p.escaped && b == '"') {
                if (opened == 0 && level > 0 && frames_[level - 1].names.contains(scratch_))
                    return true;
            } else {
                scratch_ += c;
            }
        }
        const bool top_is_object = opened > 0 ? (opened_objects >> (opened - 1)) & 1
                                              : level > 0 && frames_[level - 1].object;
        const bool was_name = p.name;
        const int effect = step(p, b, top_is_object);
        if (p.name && !was_name) scratch_.clear();
        if (effect > 0) {
            if (opened == 64) return false;  // nothing this deep is checked
            if (effect == 1)
                opened_objects |= 1ULL << opened;
            else
                opened_objects &= ~(1ULL << opened);
            ++opened;
        } else if (effect < 0) {
            if (opened > 0) {
                --opened;
            } else if (--level == 0) {
                return false;  // the value is complete
            }
        }
    }
    return false;
}

void JsonKeyGuard::filter(std::vector<uint64_t>& mask) {
    if (named_ == 0 || done_) return;
    cleared_.clear();
    for (const int32_t t : vocab_.quote_tokens) {
        const size_t w = static_cast<size_t>(t) >> 6;
        const uint64_t bit = 1ULL << (t & 63);
        if (w >= mask.size() || !(mask[w] & bit)) continue;
        if (repeats_name(vocab_.bytes[static_cast<size_t>(t)])) {
            mask[w] &= ~bit;
            cleared_.push_back(t);
        }
    }
    if (cleared_.empty()) return;
    for (const uint64_t word : mask)
        if (word != 0) return;
    for (const int32_t t : cleared_) mask[static_cast<size_t>(t) >> 6] |= 1ULL << (t & 63);
}

}  // namespace kite::grammar
