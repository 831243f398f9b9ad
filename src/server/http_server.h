// The HTTP routes of `kite serve` (OpenAI-compatible):
//   POST /v1/completions, POST /v1/chat/completions   (stream true: server-sent events)
//   POST /v1/embeddings                                (an embedding model's only route)
//   GET  /v1/models, /v1/models/{id}, /health, /metrics (Prometheus text)
//   POST /tokenize, /detokenize                        (llama-server's and vLLM's shapes)
//   GET  / and /assets/... (the chat page, embedded; see web_assets.h)
// Handlers parse and validate on their own thread, hand the sequences to the EngineWorker
// and relay its events; a client that goes away cancels its request. Errors are
// OpenAI-shaped JSON; bodies are size-limited; /v1 and the token routes check the optional
// API keys; allowed browser origins get CORS headers and their preflights answered.
// Connections, limits and timeouts are the ConnectionServer's (server/connection_server.h);
// this class routes each complete request to its handler.
#pragma once

#include <functional>
#include <memory>
#include <regex>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "server/api_keys.h"
#include "server/connection_server.h"
#include "server/cors.h"
#include "server/engine_worker.h"
#include "server/metrics.h"
#include "server/request_parser.h"
#include "server/response_format.h"

namespace kite::server {

struct ServerOptions {
    std::shared_ptr<const ApiKeys> api_keys;  // null or none set: no authentication
    std::vector<std::string> cors_origins;    // empty: no CORS (see server/cors.h)
    size_t max_body_bytes = 1 << 20;          // larger bodies get 413
    size_t http_threads = 64;                 // requests answered at once (more wait their turn)
    size_t max_connections = 4096;            // open connections (more get 503)
    std::chrono::milliseconds read_timeout{10000};  // see ConnectionLimits
};

class HttpServer {
  public:
    HttpServer(const Engine& engine, EngineWorker& worker, Metrics& metrics, ServedModel model,
               ServerOptions options);
    ~HttpServer();

    // Binds to host:port (port 0: any free port) exclusively; returns the port. Throws Error
    // (the port is taken, or not a local address).
    int bind(const std::string& host, int port);
    // Serves until stop() (from another thread), then ends every open request and returns.
    void serve();
    void stop();

  private:
    using Handler = std::function<void(const HttpRequest&, HttpResponse&)>;
    struct Route {
        std::string method;
        std::regex pattern;
        Handler handler;
    };

    void routes();
    void get(const std::string& pattern, Handler handler);
    void post(const std::string& pattern, Handler handler);
    // Answers one request: a CORS preflight or its route, error bodies, CORS headers.
    void dispatch(HttpRequest& req, HttpResponse& res) const;
    // Authorization and the matching handler.
    void route(HttpRequest& req, HttpResponse& res) const;
    // False (and a 401 written) when API keys are set and the request has none of them.
    bool authorized(const HttpRequest& req, HttpResponse& res) const;
    void generate(const HttpRequest& req, HttpResponse& res, bool chat);
    void embeddings(const HttpRequest& req, HttpResponse& res);
    // Answers a non-streaming request once its stream is done.
    void respond_whole(HttpResponse& res, std::shared_ptr<RequestStream> stream,
                       const ResponseFormatter& format, size_t n_choices, int64_t prompt_tokens);

    const Engine& engine_;
    EngineWorker& worker_;
    Metrics& metrics_;
    ServedModel model_;
    ServerOptions options_;
    CorsPolicy cors_;
    std::vector<Route> routes_;
    std::unique_ptr<ConnectionServer> connections_;
};

}  // namespace kite::server
