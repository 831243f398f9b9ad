#include "engine/sequence.h"

namespace kite {

const char* finish_reason_name(FinishReason reason) {
    switch (reason) {
        case FinishReason::None:
            return "running";
        case FinishReason::EndOfText:
            return "end of text";
        case FinishReason::StopString:
            return "stop string";
        case FinishReason::MaxTokens:
            return "max tokens";
        case FinishReason::ContextFull:
            return "context full";
        case FinishReason::NonFinite:
            return "the model produced non-finite logits";
        case FinishReason::NoAllowedToken:
            return "the output constraint allows no next token";
    }
    return "?";
}

}  // namespace kite
