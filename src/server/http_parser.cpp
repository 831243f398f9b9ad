#include "server/http_parser.h"

#include <algorithm>
#include <cctype>
#include <string_view>

namespace kite::server {

namespace {

constexpr std::string_view kCrlf = "\r\n";

std::string lower(std::string_view s) {
    std::string out(s);
    for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
}

bool is_token_char(char c) {
    const auto u = static_cast<unsigned char>(c);
    return std::isalnum(u) || std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

std::string_view trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
    return s;
}

int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

// Decodes %XX escapes; false on a malformed one or a decoded NUL.
bool percent_decode(std::string_view in, std::string& out) {
    out.clear();
    for (size_t i = 0; i < in.size(); ++i) {
        if (in[i] != '%') {
            out += in[i];
            continue;
        }
        if (i + 2 >= in.size()) return false;
        const int hi = hex_value(in[i + 1]), lo = hex_value(in[i + 2]);
        if (hi < 0 || lo < 0 || (hi == 0 && lo == 0)) return false;
        out += static_cast<char>(hi * 16 + lo);
        i += 2;
    }
    return true;
}

// A Content-Length value: digits only, small enough not to overflow.
bool parse_length(std::string_view s, size_t& value) {
    if (s.empty() || s.size() > 18) return false;
    value = 0;
    for (char c : s) {
        if (c < '0' || c > '9') return false;
        value = value * 10 + static_cast<size_t>(c - '0');
    }
    return true;
}

}  // namespace

std::string HttpRequest::get_header_value(const std::string& name) const {
    const std::string key = lower(name);
    for (const auto& [k, v] : headers)
        if (k == key) return v;
    return "";
}

HttpRequestParser::State HttpRequestParser::fail(int status, std::string message) {
    error_status_ = status;
    error_message_ = std::move(message);
    return state_ = State::Failed;
}

HttpRequestParser::State HttpRequestParser::parse(std::string& in) {
    if (state_ == State::Idle) {
        // Empty lines before a request are allowed (RFC 9112 2.2).
        size_t skip = 0;
        while (skip < in.size() && (in[skip] == '\r' || in[skip] == '\n')) ++skip;
        in.erase(0, skip);
        if (in.empty()) return state_;
        state_ = State::Head;
    }
    if (state_ == State::Head) parse_head(in);
    if (state_ == State::Body) parse_body(in);
    return state_;
}

HttpRequestParser::State HttpRequestParser::parse_head(std::string& in) {
    const size_t end = in.find("\r\n\r\n");
    if (end == std::string::npos) {
        if (in.size() <= limits_.max_head_bytes) return state_;
        if (in.find(kCrlf) == std::string::npos) return fail(414, "the request line is too long");
        return fail(431, "the request headers are too large");
    }
    if (end + 4 > limits_.max_head_bytes) {
        if (in.find(kCrlf) == end && end > limits_.max_head_bytes)
            return fail(414, "the request line is too long");
        return fail(431, "the request headers are too large");
    }
    const std::string head = in.substr(0, end + 2);
    in.erase(0, end + 4);
    size_t pos = head.find(kCrlf);
    if (parse_request_line(head.substr(0, pos)) == State::Failed) return state_;
    for (pos += 2; pos < head.size();) {
        const size_t next = head.find(kCrlf, pos);
        if (parse_header_line(head.substr(pos, next - pos)) == State::Failed) return state_;
        pos = next + 2;
    }
    return finish_head();
}

HttpRequestParser::State HttpRequestParser::parse_request_line(const std::string& line) {
    const size_t sp1 = line.find(' ');
    const size_t sp2 = sp1 == std::string::npos ? sp1 : line.find(' ', sp1 + 1);
    if (sp2 == std::string::npos || line.find(' ', sp2 + 1) != std::string::npos)
        return fail(400, "malformed request line");
    request_.method = line.substr(0, sp1);
    const std::string target = line.substr(sp1 + 1, sp2 - sp1 - 1);
    version_ = line.substr(sp2 + 1);
    if (request_.method.empty() ||
        !std::all_of(request_.method.begin(), request_.method.end(), is_token_char))
        return fail(400, "malformed request method");
    if (version_ != "HTTP/1.1" && version_ != "HTTP/1.0") {
        if (version_.rfind("HTTP/", 0) == 0) return fail(505, "only HTTP/1.0 and 1.1 are served");
        return fail(400, "malformed request line");
    }
    if (target.empty() || target[0] != '/') return fail(400, "the request target must be a path");
    for (char c : target)
        if (static_cast<unsigned char>(c) <= ' ' || c == 0x7f)
            return fail(400, "control character in the request target");
    const size_t q = target.find('?');
    if (q != std::string::npos) request_.query = target.substr(q + 1);
    if (!percent_decode(std::string_view(target).substr(0, q), request_.path))
        return fail(400, "malformed percent-escape in the request path");
    request_.keep_alive = version_ == "HTTP/1.1";
    return state_;
}

HttpRequestParser::State HttpRequestParser::parse_header_line(const std::string& line) {
    if (++headers_seen_ > limits_.max_headers) return fail(431, "too many request headers");
    const size_t colon = line.find(':');
    if (colon == 0 || colon == std::string::npos)
        return fail(400, "malformed header line (obsolete line folding is not accepted)");
    const std::string_view name = std::string_view(line).substr(0, colon);
    if (!std::all_of(name.begin(), name.end(), is_token_char))
        return fail(400, "malformed header name");
    const std::string_view value = trim(std::string_view(line).substr(colon + 1));
    for (char c : value)
        if ((static_cast<unsigned char>(c) < ' ' && c != '\t') || c == 0x7f)
            return fail(400, "control character in a header value");
    request_.headers.emplace_back(lower(name), std::string(value));
    return state_;
}

HttpRequestParser::State HttpRequestParser::finish_head() {
    const std::string connection = lower(request_.get_header_value("connection"));
    if (connection.find("close") != std::string::npos) request_.keep_alive = false;
    if (connection.find("keep-alive") != std::string::npos && version_ == "HTTP/1.0")
        request_.keep_alive = true;
    expect_continue_ = lower(request_.get_header_value("expect")) == "100-continue";

    bool has_length = false, chunked = false;
    size_t length = 0;
    for (const auto& [name, value] : request_.headers) {
        if (name == "transfer-encoding") {
            if (chunked || lower(value) != "chunked")
                return fail(501, "only 'Transfer-Encoding: chunked' is supported");
            chunked = true;
        } else if (name == "content-length") {
            size_t v = 0;
            if (!parse_length(value, v) || (has_length && v != length))
                return fail(400, "malformed Content-Length");
            has_length = true;
            length = v;
        }
    }
    // Both framings at once is the classic request-smuggling shape: refuse it.
    if (chunked && has_length) return fail(400, "both Content-Length and Transfer-Encoding");
    if (chunked) {
        // Reserved, not touched: pages become resident only as the body arrives, and the body
        // never moves while it grows (no reallocation copies on top of the limit).
        request_.body.reserve(limits_.max_body_bytes);
        phase_ = BodyPhase::ChunkSize;
        return state_ = State::Body;
    }
    if (!has_length) {
        if (request_.method == "POST" || request_.method == "PUT")
            return fail(411, "a request body needs Content-Length or chunked encoding");
        return state_ = State::Complete;
    }
    if (length > limits_.max_body_bytes) return fail(413, "the request body is too large");
    phase_ = BodyPhase::Length;
    remaining_ = length;
    request_.body.reserve(length);
    return state_ = length == 0 ? State::Complete : State::Body;
}

HttpRequestParser::State HttpRequestParser::parse_body(std::string& in) {
    size_t used = 0;
    auto line = [&](std::string& out) {
        const size_t end = in.find(kCrlf, used);
        if (end == std::string::npos) {
            if (in.size() - used > limits_.max_chunk_line_bytes)
                return fail(400, "chunk line too long");
            return State::Body;
        }
        if (end - used > limits_.max_chunk_line_bytes) return fail(400, "chunk line too long");
        out = in.substr(used, end - used);
        used = end + 2;
        return State::Complete;
    };
    while (state_ == State::Body) {
        if (phase_ == BodyPhase::Length || phase_ == BodyPhase::ChunkData) {
            const size_t n = std::min(remaining_, in.size() - used);
            request_.body.append(in, used, n);
            used += n;
            remaining_ -= n;
            if (remaining_ > 0) break;
            if (phase_ == BodyPhase::Length) {
                state_ = State::Complete;
            } else {
                phase_ = BodyPhase::ChunkEnd;
            }
            continue;
        }
        std::string text;
        const State got = line(text);
        if (got != State::Complete) break;
        if (phase_ == BodyPhase::ChunkSize) {
            parse_chunk_size(text);
        } else if (phase_ == BodyPhase::ChunkEnd) {
            if (!text.empty()) fail(400, "malformed chunk (no CRLF after its data)");
            phase_ = BodyPhase::ChunkSize;
        } else {  // Trailers: ignored, but counted against the head limit
            trailer_bytes_ += text.size() + 2;
            if (trailer_bytes_ > limits_.max_head_bytes)
                fail(431, "the trailers are too large");
            else if (text.empty())
                state_ = State::Complete;
        }
    }
    in.erase(0, used);
    return state_;
}

HttpRequestParser::State HttpRequestParser::parse_chunk_size(const std::string& line) {
    const std::string_view size = trim(std::string_view(line).substr(0, line.find(';')));
    if (size.empty() || size.size() > 15) return fail(400, "malformed chunk size");
    size_t n = 0;
    for (char c : size) {
        const int v = hex_value(c);
        if (v < 0) return fail(400, "malformed chunk size");
        n = n * 16 + static_cast<size_t>(v);
    }
    if (n > limits_.max_body_bytes - request_.body.size())
        return fail(413, "the request body is too large");
    remaining_ = n;
    phase_ = n == 0 ? BodyPhase::Trailers : BodyPhase::ChunkData;
    return state_;
}

HttpRequest HttpRequestParser::take() {
    HttpRequest out = std::move(request_);
    *this = HttpRequestParser(limits_);
    return out;
}

const char* reason_phrase(int status) {
    switch (status) {
        case 100:
            return "Continue";
        case 200:
            return "OK";
        case 204:
            return "No Content";
        case 400:
            return "Bad Request";
        case 401:
            return "Unauthorized";
        case 403:
            return "Forbidden";
        case 404:
            return "Not Found";
        case 405:
            return "Method Not Allowed";
        case 408:
            return "Request Timeout";
        case 411:
            return "Length Required";
        case 413:
            return "Content Too Large";
        case 414:
            return "URI Too Long";
        case 429:
            return "Too Many Requests";
        case 431:
            return "Request Header Fields Too Large";
        case 500:
            return "Internal Server Error";
        case 501:
            return "Not Implemented";
        case 503:
            return "Service Unavailable";
        case 505:
            return "HTTP Version Not Supported";
        default:
            return "Unknown";
    }
}

}  // namespace kite::server
