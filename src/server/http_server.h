// The HTTP routes of `kite serve` (OpenAI-compatible):
//   POST /v1/completions, POST /v1/chat/completions   (stream true: server-sent events)
//   GET  /v1/models, /v1/models/{id}, /health, /metrics (Prometheus text)
// Handlers parse and validate on their own thread, hand the sequences to the EngineWorker
// and relay its events; a client that goes away cancels its request. Errors are
// OpenAI-shaped JSON; bodies are size-limited; /v1 routes check the optional API key.
#pragma once

#include <memory>
#include <string>

#include "engine/engine.h"
#include "server/engine_worker.h"
#include "server/metrics.h"
#include "server/request_parser.h"
#include "server/response_format.h"

namespace httplib {
class Server;
class Request;
class Response;
}  // namespace httplib

namespace kite::server {

struct ServerOptions {
    std::string api_key;              // empty: no authentication
    size_t max_body_bytes = 1 << 20;  // larger bodies get 413
    size_t http_threads = 64;         // concurrent connections served
};

class HttpServer {
  public:
    HttpServer(const Engine& engine, EngineWorker& worker, Metrics& metrics, ServedModel model,
               ServerOptions options);
    ~HttpServer();

    // Binds to host:port (port 0: any free port); returns the port, or -1 on failure.
    int bind(const std::string& host, int port);
    // Serves until stop() (from another thread).
    void serve();
    void stop();

  private:
    void routes();
    // False (and a 401 written) when an API key is set and the request lacks it.
    bool authorized(const httplib::Request& req, httplib::Response& res) const;
    void generate(const httplib::Request& req, httplib::Response& res, bool chat);
    // Answers a non-streaming request once its stream is done.
    void respond_whole(httplib::Response& res, std::shared_ptr<RequestStream> stream,
                       const ResponseFormatter& format, size_t n_choices, int64_t prompt_tokens);

    const Engine& engine_;
    EngineWorker& worker_;
    Metrics& metrics_;
    ServedModel model_;
    ServerOptions options_;
    std::unique_ptr<httplib::Server> http_;
};

}  // namespace kite::server
