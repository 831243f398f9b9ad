// Keeps a generated JSON value from naming one property twice in an object.
//
// Duplicate names are legal JSON (RFC 8259 only says they SHOULD be unique) and no context-free
// grammar can forbid them, so a schema's grammar lets a small model write `"a":1,"a":1,...`
// until max_tokens cuts the reply. The guard follows the emitted text with a small JSON lexer,
// keeps each open object's names, and takes out of a mask the tokens that would close a name
// the object already holds. It only narrows the grammar's mask, and never to nothing: where
// every allowed token would repeat a name, the mask is left as the grammar gave it.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "grammar/tokenizer_vocab.h"

namespace kite::grammar {

class JsonKeyGuard {
  public:
    // `skip` bytes of literal frame (a tool call's opening tag) come before the JSON value.
    JsonKeyGuard(const TokenizerVocab& vocab, size_t skip);

    // Follows bytes the sequence emitted.
    void feed(std::string_view bytes);
    // Clears the bits of `mask` (as Matcher::allowed_tokens sets them) whose tokens would close
    // a property name the object being written holds already.
    void filter(std::vector<uint64_t>& mask);

  private:
    // Where the lexer stands between bytes; the open containers live in frames_.
    struct Position {
        bool in_string = false;
        bool escaped = false;      // the byte before was a backslash inside a string
        bool name = false;         // the string being read is a property name
        bool expect_name = false;  // the next string is a property name ('{' or ',' in an object)
    };
    struct Frame {
        bool object = false;
        std::set<std::string, std::less<>> names;
    };
    // Moves `p` past one byte. Returns the byte's effect on the open containers: 1 opened an
    // object, 2 an array, -1 closed one, 0 neither.
    static int step(Position& p, uint8_t byte, bool top_is_object);
    bool repeats_name(std::string_view token) const;

    const TokenizerVocab& vocab_;
    size_t skip_;
    bool done_ = false;  // the top-level value closed: what follows is frame text
    Position pos_;
    std::vector<Frame> frames_;
    std::string name_;  // the bytes of the property name being read (as written, escapes kept)
    size_t named_ = 0;  // names held by all open objects together
    std::vector<int32_t> cleared_;  // the tokens filter took out, put back if it took all
    mutable std::string scratch_;   // repeats_name's name, kept to avoid an allocation per call
};

}  // namespace kite::grammar
