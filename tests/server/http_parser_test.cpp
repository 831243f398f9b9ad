// The HTTP/1.1 request parser of kite serve: requests split at every byte give the same
// result as whole ones, pipelined requests come out one by one, and every limit fails with
// its status at the byte that passes it (chunked bodies included).
#include <gtest/gtest.h>

#include <random>
#include <string>

#include "server/http_parser.h"

namespace kite::server {
namespace {

using State = HttpRequestParser::State;

struct Parsed {
    State state;
    std::vector<HttpRequest> requests;
    int status = 0;
    std::string left;
};

// Feeds `input` in pieces of `step` bytes, taking every complete request.
Parsed feed(const std::string& input, size_t step, HttpLimits limits = {}) {
    HttpRequestParser p(limits);
    Parsed out{State::Idle, {}, 0, ""};
    std::string buf;
    for (size_t pos = 0; pos < input.size(); pos += step) {
        buf += input.substr(pos, step);
        while ((out.state = p.parse(buf)) == State::Complete) out.requests.push_back(p.take());
        if (out.state == State::Failed) break;
    }
    out.status = p.error_status();
    out.left = buf;
    return out;
}

TEST(HttpParser, ParsesTheSameInAnySplit) {
    const std::string input =
        "POST /v1/completions?x=1 HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n"
        "X-Key:   spaced value  \r\n\r\nhello"
        "GET /v1/models/a%2Fb HTTP/1.1\r\nConnection: close\r\n\r\n"
        "POST /c HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
        "3;ext=1\r\nabc\r\n10\r\n0123456789abcdef\r\n0\r\nTrailer: t\r\n\r\n";
    for (size_t step = 1; step <= input.size(); ++step) {
        const Parsed r = feed(input, step);
        ASSERT_EQ(r.requests.size(), 3u) << "step " << step;
        EXPECT_EQ(r.state, State::Idle);
        const HttpRequest& a = r.requests[0];
        EXPECT_EQ(a.method, "POST");
        EXPECT_EQ(a.path, "/v1/completions");
        EXPECT_EQ(a.query, "x=1");
        EXPECT_EQ(a.body, "hello");
        EXPECT_EQ(a.get_header_value("x-KEY"), "spaced value");
        EXPECT_EQ(a.get_header_value("absent"), "");
        EXPECT_TRUE(a.keep_alive);
        EXPECT_EQ(r.requests[1].path, "/v1/models/a/b");
        EXPECT_FALSE(r.requests[1].keep_alive);
        EXPECT_EQ(r.requests[2].body, "abc0123456789abcdef");
    }
}

TEST(HttpParser, LimitsFailWithTheirStatus) {
    HttpLimits small;
    small.max_head_bytes = 256;
    small.max_headers = 4;
    small.max_body_bytes = 64;
    struct Case {
        std::string input;
        int status;
    };
    const std::string many_headers =
        "GET / HTTP/1.1\r\nA: 1\r\nB: 2\r\nC: 3\r\nD: 4\r\nE: 5\r\n\r\n";
    const Case cases[] = {
        {"GET /" + std::string(300, 'a'), 414},
        {"GET / HTTP/1.1\r\nX: " + std::string(300, 'a'), 431},
        {"GET / HTTP/1.1\r\nX: " + std::string(200, 'a') + "\r\nY: " + std::string(60, 'b') +
             "\r\n\r\n",
         431},
        {many_headers, 431},
        {"POST / HTTP/1.1\r\nContent-Length: 65\r\n\r\n", 413},
        {"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n40\r\n" + std::string(64, 'x') +
             "\r\n1\r\n",
         413},
        {"POST / HTTP/1.1\r\n\r\n", 411},
        {"POST / HTTP/1.1\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n", 400},
        {"POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", 400},
        {"POST / HTTP/1.1\r\nContent-Length: -1\r\n\r\n", 400},
        {"POST / HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n", 501},
        {"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", 400},
        {"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nab\r\n", 400},
        {"GET / HTTP/1.1\r\n folded\r\n\r\n", 400},
        {"GET / HTTP/1.1\r\nBad Name: 1\r\n\r\n", 400},
        {"GET /%zz HTTP/1.1\r\n\r\n", 400},
        {"GET /%00 HTTP/1.1\r\n\r\n", 400},
        {"GET http://x/ HTTP/1.1\r\n\r\n", 400},
        {"GET / HTTP/2.0\r\n\r\n", 505},
        {"GET /  HTTP/1.1\r\n\r\n", 400},
    };
    for (const Case& c : cases) {
        for (size_t step : {size_t{1}, size_t{7}, c.input.size()}) {
            const Parsed r = feed(c.input, step, small);
            EXPECT_EQ(r.state, State::Failed) << c.input.substr(0, 60) << " step " << step;
            EXPECT_EQ(r.status, c.status) << c.input.substr(0, 60) << " step " << step;
        }
    }
    // At the limits exactly, everything passes.
    const std::string at_limit = "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n40\r\n" +
                                 std::string(64, 'x') + "\r\n0\r\n\r\n";
    const Parsed ok = feed(at_limit, 3, small);
    ASSERT_EQ(ok.requests.size(), 1u);
    EXPECT_EQ(ok.requests[0].body.size(), 64u);
}

// A huge chunked upload is refused once the decoded body passes the limit, while the parser
// holds no more than the limit and one read.
TEST(HttpParser, ChunkedBodyIsRefusedAsItArrives) {
    HttpLimits limits;
    limits.max_body_bytes = 1 << 20;
    HttpRequestParser p(limits);
    std::string buf = "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n";
    const std::string chunk = "1000\r\n" + std::string(4096, 'a') + "\r\n";
    size_t sent = 0;
    State s = State::Idle;
    while (sent < (size_t{64} << 20) && (s = p.parse(buf)) != State::Failed) {
        EXPECT_LE(buf.size(), chunk.size());
        buf += chunk;
        sent += chunk.size();
    }
    EXPECT_EQ(s, State::Failed);
    EXPECT_EQ(p.error_status(), 413);
    EXPECT_LT(sent, (size_t{1} << 20) + 2 * chunk.size());
}

TEST(HttpParser, HeadRequestsAndVersions) {
    Parsed r = feed(
        "\r\n\r\nGET /health HTTP/1.0\r\n\r\nGET /h HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", 5);
    ASSERT_EQ(r.requests.size(), 2u);
    EXPECT_FALSE(r.requests[0].keep_alive);
    EXPECT_TRUE(r.requests[1].keep_alive);
    // Expect: 100-continue is reported while the body is awaited.
    HttpRequestParser p({});
    std::string buf = "POST / HTTP/1.1\r\nContent-Length: 3\r\nExpect: 100-continue\r\n\r\n";
    EXPECT_EQ(p.parse(buf), State::Body);
    EXPECT_TRUE(p.expects_continue());
    buf = "abc";
    EXPECT_EQ(p.parse(buf), State::Complete);
    EXPECT_EQ(p.take().body, "abc");
}

// Random bytes, and random corruptions of a valid request, never crash and never yield a
// request beyond the limits (a quick in-tree cousin of fuzz/http_request_fuzz.cpp).
TEST(HttpParser, RandomInputStaysWithinLimits) {
    std::mt19937 rng(7);
    HttpLimits limits;
    limits.max_head_bytes = 200;
    limits.max_body_bytes = 50;
    const std::string valid =
        "POST /x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n";
    for (int i = 0; i < 3000; ++i) {
        std::string input = valid;
        for (int k = 0; k < 1 + i % 5; ++k)
            input[rng() % input.size()] = static_cast<char>(rng() % 256);
        if (i % 3 == 0) {
            input.resize(rng() % 300);
            for (char& c : input) c = static_cast<char>(rng() % 256);
        }
        const Parsed r = feed(input, 1 + rng() % 16, limits);
        for (const HttpRequest& req : r.requests) {
            EXPECT_LE(req.body.size(), limits.max_body_bytes);
            EXPECT_EQ(req.path.front(), '/');
        }
        if (r.state == State::Failed) {
            EXPECT_GE(r.status, 400);
            EXPECT_LT(r.status, 600);
        }
    }
}

}  // namespace
}  // namespace kite::server
