// The regex stage of byte-level BPE: splits text into the pieces that BPE merges within.
// Each pre-tokenizer type (tokenizer.ggml.pre) is a list of regexes applied in sequence;
// each one splits every piece the previous ones produced, keeping both its matches and the
// text between them.
#pragma once

#include <memory>
#include <string_view>
#include <vector>

namespace kite {

class PreTokenizer {
  public:
    // Compiles the regexes of a type once; throws kite::Error for an unknown type.
    explicit PreTokenizer(std::string_view type);
    ~PreTokenizer();
    PreTokenizer(const PreTokenizer&) = delete;
    PreTokenizer& operator=(const PreTokenizer&) = delete;

    // Pieces of `text`, in order, covering it exactly. Bytes that are not valid UTF-8 become
    // pieces of their own (the regexes only see valid text). Safe to call from many threads.
    std::vector<std::string_view> split(std::string_view text) const;

    // Which pieces BPE takes whole, without merging, when the vocabulary has them as a token.
    enum class WholePieces {
        Never,
        Always,       // Llama 3 (its reference tokenizer's "ignore_merges")
        NewlineRuns,  // Gemma 4: pieces of only newlines
    };
    WholePieces whole_pieces() const { return whole_pieces_; }

    // The types this build knows, for error messages.
    static std::vector<std::string_view> known_types();

  private:
    class Regex;
    std::vector<std::unique_ptr<Regex>> regexes_;
    WholePieces whole_pieces_ = WholePieces::Never;
};

}  // namespace kite
