#include "tokenizer/streaming_decoder.h"

#include "core/utf8.h"

namespace kite {

namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

}  // namespace

StreamingDecoder::StreamingDecoder(const Tokenizer& tokenizer, bool render_special)
    : tokenizer_(tokenizer), render_special_(render_special) {}

std::string StreamingDecoder::push(int32_t id) {
    tokenizer_.decode_token(id, state_, pending_, render_special_);
    return take_valid(false);
}

std::string StreamingDecoder::finish() {
    std::string out = take_valid(true);
    reset();
    return out;
}

void StreamingDecoder::reset() {
    state_ = Tokenizer::DecodeState{};
    pending_.clear();
}

// Moves the complete characters of pending_ to the result; an incomplete one at the end
// stays unless the stream is over.
std::string StreamingDecoder::take_valid(bool at_end) {
    std::string out;
    std::string_view rest = pending_;
    while (!rest.empty()) {
        const Utf8Sequence seq = next_utf8_sequence(rest);
        if (seq.status == Utf8Status::Incomplete && !at_end) break;
        if (seq.status == Utf8Status::Complete)
            out += rest.substr(0, seq.length);
        else
            out += kReplacement;
        rest.remove_prefix(seq.length);
    }
    pending_.erase(0, pending_.size() - rest.size());
    return out;
}

}  // namespace kite
