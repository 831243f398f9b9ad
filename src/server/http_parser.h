// An incremental HTTP/1.1 request parser with hard limits: bytes go in as they arrive, a
// request comes out once complete, and anything over a limit fails at the byte that passes
// it (a chunked body is counted as it is decoded, so a huge one is never held whole).
#pragma once

#include <cstddef>
#include <string>

#include "server/http_message.h"

namespace kite::server {

struct HttpLimits {
    size_t max_head_bytes = 16 * 1024;   // request line and headers (431; 414 for the line)
    size_t max_headers = 64;             // header fields (431)
    size_t max_body_bytes = 1 << 20;     // decoded body (413)
    size_t max_chunk_line_bytes = 1024;  // one chunk-size line with its extensions (400)
};

class HttpRequestParser {
  public:
    enum class State { Idle, Head, Body, Complete, Failed };

    explicit HttpRequestParser(HttpLimits limits) : limits_(limits) {}

    // Consumes what it can from the front of `in` (erasing it) and returns the new state.
    // Stops at Complete: bytes after the request (pipelining) stay in `in` for the next one.
    State parse(std::string& in);
    State state() const { return state_; }
    // The complete request; the parser is then ready for the next one.
    HttpRequest take();

    // On Failed: the status to answer (400, 411, 413, 414, 431, 501, 505) and why.
    int error_status() const { return error_status_; }
    const std::string& error_message() const { return error_message_; }
    // True once the head is in, the body is still to come and the client waits for a
    // "100 Continue" before sending it.
    bool expects_continue() const { return state_ == State::Body && expect_continue_; }

  private:
    enum class BodyPhase { Length, ChunkSize, ChunkData, ChunkEnd, Trailers };

    State fail(int status, std::string message);
    State parse_head(std::string& in);
    State parse_request_line(const std::string& line);
    State parse_header_line(const std::string& line);
    State finish_head();
    State parse_body(std::string& in);
    State parse_chunk_size(const std::string& line);

    HttpLimits limits_;
    State state_ = State::Idle;
    HttpRequest request_;
    std::string version_;
    size_t headers_seen_ = 0;
    BodyPhase phase_ = BodyPhase::Length;
    size_t remaining_ = 0;  // body bytes (Length) or chunk bytes (ChunkData) still to read
    size_t trailer_bytes_ = 0;
    bool expect_continue_ = false;
    int error_status_ = 0;
    std::string error_message_;
};

}  // namespace kite::server
