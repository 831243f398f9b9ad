#include "server/http_server.h"

#include <random>

#include "core/error.h"
#include "server/api_error.h"
#include "server/embedding_request.h"
#include "server/response_format.h"
#include "server/token_routes.h"
#include "server/web_assets.h"

namespace kite::server {

using nlohmann::json;

namespace {

void send_json(HttpResponse& res, int status, const json& body) {
    res.status = status;
    res.set_content(ResponseFormatter::dump(body), "application/json");
}

void send_error(HttpResponse& res, const ApiError& e) {
    send_json(res, e.status, e.to_json());
}

// The chat page and its assets. They need no API key (only /v1 does): the page asks for one
// when the API answers 401.
void send_page_file(const HttpRequest& req, HttpResponse& res) {
    const WebAsset* asset = find_web_asset(req.path);
    if (!asset) {
        res.status = 404;
        return;
    }
    res.set_content(std::string(asset->body), std::string(web_content_type(asset->path)));
    res.headers = {{"Content-Security-Policy", kPageSecurityPolicy},
                   {"X-Content-Type-Options", "nosniff"},
                   {"Referrer-Policy", "no-referrer"},
                   {"Cache-Control", "no-cache"}};
}

const char* status_message(int status) {
    switch (status) {
        case 400:
            return "bad request";
        case 403:
            return "cross-origin requests from this origin are not allowed";
        case 404:
            return "not found";
        case 405:
            return "method not allowed";
        case 413:
            return "the request body is too large";
        case 414:
            return "the request URI is too long";
        default:
            return status >= 500 ? "internal server error" : "request failed";
    }
}

// What the streaming content provider keeps between its calls.
struct StreamState {
    std::shared_ptr<RequestStream> stream;
    ResponseFormatter format;
    std::vector<bool> started;
    bool include_usage;
    Usage usage;
    bool finished = false;
};

// What the whole-response (non-streaming) content provider keeps between its calls.
struct WholeState {
    std::shared_ptr<RequestStream> stream;
    ResponseFormatter format;
    std::vector<ChoiceResult> results;
    Usage usage;
    std::chrono::steady_clock::time_point last_write{};
    bool finished = false;

    void collect(std::vector<ChoiceEvent>& events) {
        for (ChoiceEvent& ev : events) {
            ChoiceResult& c = results[static_cast<size_t>(ev.choice)];
            c.text += ev.text;
            c.finish = ev.finish;
            if (ev.has_logprob) c.logprobs.push_back(std::move(ev.logprob));
            usage.completion_tokens++;
        }
        events.clear();
    }
    json body() const {
        if (auto error = stream->error()) return error->to_json();
        return format.response(results, usage);
    }
};

// Sends a chunked response whose pieces come from next(state), which sets state.finished
// with the last one. A failed write (the client has gone) or a response cut short cancels
// the request, so its KV blocks are freed at once.
template <typename State, typename Next>
void send_chunked(HttpResponse& res, const char* content_type, std::shared_ptr<State> state,
                  EngineWorker* worker, Next next) {
    res.set_chunked_content_provider(
        content_type,
        [state, next](size_t, DataSink& sink) {
            if (state->finished) return false;
            const std::string out = next(*state);
            if (!out.empty() && !sink.write(out.data(), out.size())) return false;
            if (state->finished) sink.done();
            return true;
        },
        [state, worker](bool success) {
            if (!success || !state->finished) worker->cancel(state->stream);
        });
}

}  // namespace

HttpServer::HttpServer(const Engine& engine, EngineWorker& worker, Metrics& metrics,
                       ServedModel model, ServerOptions options)
    : engine_(engine),
      worker_(worker),
      metrics_(metrics),
      model_(std::move(model)),
      options_(std::move(options)),
      cors_(options_.cors_origins) {
    ConnectionLimits limits;
    limits.http.max_body_bytes = options_.max_body_bytes;
    limits.handler_threads = options_.http_threads;
    limits.max_connections = options_.max_connections;
    limits.read_timeout = options_.read_timeout;
    connections_ = std::make_unique<ConnectionServer>(
        limits, [this](HttpRequest& req, HttpResponse& res) { dispatch(req, res); },
        [](int status, const std::string& message) {
            HttpResponse res;
            send_json(res, status, error_body(status, message));
            return res;
        },
        [this](int status) { metrics_.count_request(status); });
    routes();
}

HttpServer::~HttpServer() = default;

int HttpServer::bind(const std::string& host, int port) {
    return connections_->bind(host, port);
}

void HttpServer::serve() {
    connections_->serve();
}

void HttpServer::stop() {
    connections_->stop();
}

void HttpServer::get(const std::string& pattern, Handler handler) {
    routes_.push_back(Route{"GET", std::regex(pattern), std::move(handler)});
}

void HttpServer::post(const std::string& pattern, Handler handler) {
    routes_.push_back(Route{"POST", std::regex(pattern), std::move(handler)});
}

void HttpServer::dispatch(HttpRequest& req, HttpResponse& res) const {
    // Browsers send a preflight without the key: it is answered before the key is checked.
    if (!cors_.answer_preflight(req, res)) route(req, res);
    if (res.status >= 400 && res.body.empty() && !res.provider) {
        const std::string message = res.status == 404
                                        ? "no route for " + req.method + " " + req.path
                                        : status_message(res.status);
        send_json(res, res.status, error_body(res.status, message));
    }
    // Errors too: a page's script can then read why its request failed.
    cors_.add_headers(req, res);
}

void HttpServer::route(HttpRequest& req, HttpResponse& res) const {
    // Requests with a body check the key in their handler, after the body is parsed.
    if (req.method != "POST" && !authorized(req, res)) return;
    const Route* route = nullptr;
    std::smatch match;
    for (const Route& r : routes_)
        if (r.method == req.method && std::regex_match(req.path, match, r.pattern)) {
            route = &r;
            break;
        }
    try {
        if (route) {
            req.matches.assign(match.begin(), match.end());
            route->handler(req, res);
        } else {
            res.status = 404;
        }
    } catch (const std::exception& e) {
        send_json(res, 500, error_body(500, std::string("internal error: ") + e.what()));
    }
}

void HttpServer::routes() {
    get("/", send_page_file);
    get("/assets/.+", send_page_file);
    get("/health", [](const HttpRequest&, HttpResponse& res) {
        send_json(res, 200, {{"status", "ok"}});
    });
    get("/metrics", [this](const HttpRequest&, HttpResponse& res) {
        res.set_content(metrics_.render(), "text/plain; version=0.0.4");
    });
    auto model_json = [this] {
        return json{{"id", model_.id},
                    {"object", "model"},
                    {"created", 0},
                    {"owned_by", "kite"},
                    {"max_model_len", model_.context_length}};
    };
    get("/v1/models", [model_json](const HttpRequest&, HttpResponse& res) {
        send_json(res, 200, {{"object", "list"}, {"data", json::array({model_json()})}});
    });
    get(R"(/v1/models/(.+))", [this, model_json](const HttpRequest& req, HttpResponse& res) {
        if (req.matches[1] == model_.id)
            send_json(res, 200, model_json());
        else
            send_error(
                res, ApiError(404, "The model '" + std::string(req.matches[1]) + "' does not exist",
                              "model", "invalid_request_error", "model_not_found"));
    });
    auto token_route = [this](auto respond) {
        return [this, respond](const HttpRequest& req, HttpResponse& res) {
            if (!authorized(req, res)) return;
            try {
                send_json(res, 200, respond(req.body, model_));
            } catch (const ApiError& e) {
                send_error(res, e);
            } catch (const Error& e) {
                send_error(res, ApiError(400, e.what()));
            }
        };
    };
    post("/tokenize", token_route(tokenize_response));
    post("/detokenize", token_route(detokenize_response));
    post("/v1/completions",
         [this](const HttpRequest& req, HttpResponse& res) { generate(req, res, false); });
    post("/v1/chat/completions",
         [this](const HttpRequest& req, HttpResponse& res) { generate(req, res, true); });
    post("/v1/embeddings",
         [this](const HttpRequest& req, HttpResponse& res) { embeddings(req, res); });
}

bool HttpServer::authorized(const HttpRequest& req, HttpResponse& res) const {
    // The token routes run the tokenizer on any text sent: keyed, as in llama-server.
    const bool keyed =
        req.path.rfind("/v1/", 0) == 0 || req.path == "/tokenize" || req.path == "/detokenize";
    if (!options_.api_keys || !options_.api_keys->enabled() || !keyed) return true;
    const std::string authorization = req.get_header_value("Authorization");
    constexpr std::string_view kBearer = "Bearer ";
    if (authorization.starts_with(kBearer) &&
        options_.api_keys->accepts(std::string_view(authorization).substr(kBearer.size())))
        return true;
    send_error(res, ApiError(401, "invalid or missing API key (Authorization: Bearer KEY)", "",
                             "authentication_error", "invalid_api_key"));
    return false;
}

// The encoder pass runs on the engine thread (EngineWorker::embed); this handler thread waits.
void HttpServer::embeddings(const HttpRequest& req, HttpResponse& res) {
    if (!authorized(req, res)) return;
    if (model_.embedding_size == 0)
        return send_error(
            res,
            ApiError(400, "the model '" + model_.id + "' cannot embed: it is a generative model",
                     "model"));
    try {
        EmbeddingRequest r = parse_embedding_request(req.body, model_, model_.embedding_size);
        std::vector<float> vectors = worker_.embed(r.inputs);
        send_json(res, 200, embedding_response(vectors, model_.embedding_size, r, model_.id));
    } catch (const ApiError& e) {
        send_error(res, e);
    } catch (const Error& e) {
        send_error(res, ApiError(400, e.what(), "input"));
    }
}

void HttpServer::generate(const HttpRequest& req, HttpResponse& res, bool chat) {
    if (!authorized(req, res)) return;
    if (model_.embedding_size > 0)
        return send_error(res, ApiError(400,
                                        "the model '" + model_.id +
                                            "' is an embedding model: it answers /v1/embeddings "
                                            "only",
                                        "model"));
    CompletionRequest r;
    std::vector<SequenceRequest> seqs;
    int64_t prompt_tokens = 0;
    try {
        r = parse_completion_request(req.body, chat, model_);
        uint64_t seed = r.params.sampling.seed;
        if (!r.seed_given)
            seed = std::random_device{}() * 0x9e3779b97f4a7c15ull ^ std::random_device{}();
        for (const auto& prompt : r.prompts) {
            prompt_tokens += static_cast<int64_t>(prompt.size());
            for (int j = 0; j < r.n; ++j) {
                SequenceRequest s{prompt, r.params};
                s.params.max_tokens = r.max_tokens_for(prompt.size(), model_.context_length);
                s.params.sampling.seed = seed + static_cast<uint64_t>(seqs.size());
                engine_.validate(s.prompt, s.params);
                seqs.push_back(std::move(s));
            }
        }
    } catch (const ApiError& e) {
        return send_error(res, e);
    } catch (const Error& e) {
        return send_error(res, ApiError(400, e.what()));
    }

    auto stream = worker_.submit(std::move(seqs), prompt_tokens);
    const size_t n_choices = r.prompts.size() * static_cast<size_t>(r.n);
    ResponseFormatter format(chat, r.logprobs >= 0, model_.id, *model_.tokenizer);
    if (r.tool_calls) format.enable_tool_calls(n_choices);

    if (!r.stream) return respond_whole(res, stream, format, n_choices, prompt_tokens);

    auto state = std::make_shared<StreamState>(
        StreamState{stream, format, std::vector<bool>(n_choices, false), r.include_usage,
                    Usage{prompt_tokens, 0}});
    send_chunked(res, "text/event-stream", state, &worker_, [](StreamState& st) {
        std::vector<ChoiceEvent> events;
        const RequestStream::Wait w = st.stream->wait(events, std::chrono::milliseconds(1000));
        std::string out;
        if (w == RequestStream::Wait::Timeout) out = ": waiting\n\n";  // detects a gone client
        for (ChoiceEvent& ev : events) {
            st.usage.completion_tokens++;
            std::vector<TokenLogprob> lps;
            if (ev.has_logprob) lps.push_back(std::move(ev.logprob));
            const bool first = !st.started[static_cast<size_t>(ev.choice)];
            st.started[static_cast<size_t>(ev.choice)] = true;
            const json chunk = st.format.chunk(ev.choice, ev.text, lps, ev.finish, first);
            if (!ResponseFormatter::carries_nothing(chunk)) out += ResponseFormatter::sse(chunk);
        }
        if (w == RequestStream::Wait::Done) {
            if (auto error = st.stream->error())
                out += ResponseFormatter::sse(error->to_json());
            else if (st.include_usage)
                out += ResponseFormatter::sse(st.format.usage_chunk(st.usage));
            out += ResponseFormatter::kDone;
            st.finished = true;
        }
        return out;
    });
}

void HttpServer::respond_whole(HttpResponse& res, std::shared_ptr<RequestStream> stream,
                               const ResponseFormatter& format, size_t n_choices,
                               int64_t prompt_tokens) {
    using namespace std::chrono_literals;
    auto state = std::make_shared<WholeState>(
        WholeState{stream, format, std::vector<ChoiceResult>(n_choices), Usage{prompt_tokens, 0}});
    // A request done within a second is answered in one piece, with its own status.
    std::vector<ChoiceEvent> events;
    const auto deadline = std::chrono::steady_clock::now() + 1s;
    RequestStream::Wait w;
    while ((w = stream->wait(events, 100ms)) != RequestStream::Wait::Done &&
           std::chrono::steady_clock::now() < deadline)
        state->collect(events);
    state->collect(events);
    if (w == RequestStream::Wait::Done) {
        if (auto error = stream->error()) return send_error(res, *error);
        return send_json(res, 200, state->body());
    }
    // A longer one goes out chunked, a space every second until the JSON (which may start
    // with whitespace): a client that has gone away is noticed when a write fails, and its
    // request is cancelled. The status is 200 by then; a later failure sends the error body.
    send_chunked(res, "application/json", state, &worker_, [](WholeState& st) {
        std::vector<ChoiceEvent> events;
        const RequestStream::Wait w = st.stream->wait(events, 1000ms);
        st.collect(events);
        const auto now = std::chrono::steady_clock::now();
        if (w == RequestStream::Wait::Done) {
            st.finished = true;
            return ResponseFormatter::dump(st.body());
        }
        if (now - st.last_write < 1s) return std::string();
        st.last_write = now;
        return std::string(" ");
    });
}

}  // namespace kite::server
