// One HTTP/1.1 request as the connection layer hands it to the routes, and the response the
// routes fill in: a whole body, or a chunked body that a provider produces piece by piece
// (server-sent events, long JSON answers).
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace kite::server {

struct HttpRequest {
    std::string method;
    std::string path;                                          // percent-decoded, without the query
    std::string query;                                         // after '?', as sent
    std::vector<std::pair<std::string, std::string>> headers;  // names in lower case
    std::string body;
    bool keep_alive = true;
    std::vector<std::string> matches;  // the route pattern's groups; [0] is the whole path

    // The first value of a header (any case), or "" when it is absent.
    std::string get_header_value(const std::string& name) const;
};

// Where a chunked provider writes its pieces; write() is false once the client has gone.
class DataSink {
  public:
    std::function<bool(const char* data, size_t size)> write;
    std::function<void()> done;
};

struct HttpResponse {
    // Called until it returns false or calls sink.done(); offset is the bytes sent so far.
    using ChunkProvider = std::function<bool(size_t offset, DataSink& sink)>;
    // Called once when the provider is finished with: success is false if it was cut short.
    using ChunkReleaser = std::function<void(bool success)>;

    int status = 200;
    std::string content_type;
    std::vector<std::pair<std::string, std::string>> headers;  // sent after Content-Type
    std::string body;
    ChunkProvider provider;
    ChunkReleaser releaser;

    void set_content(std::string content, std::string type) {
        body = std::move(content);
        content_type = std::move(type);
    }
    void set_chunked_content_provider(std::string type, ChunkProvider next, ChunkReleaser release) {
        content_type = std::move(type);
        provider = std::move(next);
        releaser = std::move(release);
    }
};

// The standard reason phrase for a status line ("Not Found"), "Unknown" for others.
const char* reason_phrase(int status);

}  // namespace kite::server
