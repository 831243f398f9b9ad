// libFuzzer target: any bytes, in any split into reads, given to the HTTP request parser must
// end in a complete request, a 4xx/5xx refusal or a wait for more; a crash, sanitizer report,
// hang, or a request past the limits is a bug. The first byte chooses the read size, so the
// same input is also parsed split at every point the fuzzer cares to try.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "server/http_parser.h"

namespace {

void check(bool ok) {
    if (!ok) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size == 0) return 0;
    const size_t step = 1 + data[0] % 64;
    const std::string_view input(reinterpret_cast<const char*>(data) + 1, size - 1);
    kite::server::HttpLimits limits;
    limits.max_head_bytes = 512;  // small limits, so inputs of fuzzing size reach them
    limits.max_headers = 8;
    limits.max_body_bytes = 256;
    limits.max_chunk_line_bytes = 32;
    kite::server::HttpRequestParser parser(limits);
    using State = kite::server::HttpRequestParser::State;
    std::string buffer;
    for (size_t pos = 0; pos < input.size(); pos += step) {
        buffer.append(input.substr(pos, step));
        State s;
        while ((s = parser.parse(buffer)) == State::Complete) {
            const kite::server::HttpRequest r = parser.take();
            check(r.body.size() <= limits.max_body_bytes);
            check(r.headers.size() <= limits.max_headers);
            check(!r.path.empty() && r.path[0] == '/');
        }
        if (s == State::Failed) {
            check(parser.error_status() >= 400 && parser.error_status() < 600);
            check(!parser.error_message().empty());
            return 0;
        }
        // Waiting for more never holds more than a head, a chunk line and a read.
        check(buffer.size() <= limits.max_head_bytes + limits.max_chunk_line_bytes + step + 4);
    }
    return 0;
}
