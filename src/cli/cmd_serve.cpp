// `kite serve`: the OpenAI-compatible HTTP server. One engine thread runs the step loop
// (server/engine_worker.h); HTTP handler threads parse requests and stream the tokens back
// (server/http_server.h). SIGINT/SIGTERM stop it cleanly; SIGHUP reloads --api-key-file.
#include <pthread.h>
#include <signal.h>
#include <sys/resource.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <thread>

#include <fmt/format.h>

#include "chat/chat_template.h"
#include "cli/chat_template_option.h"
#include "cli/commands.h"
#include "cli/engine_options.h"
#include "core/error.h"
#include "grammar/constraint.h"
#include "model/pooling.h"
#include "server/api_keys.h"
#include "server/cors.h"
#include "server/engine_worker.h"
#include "server/http_server.h"
#include "server/metrics.h"

namespace kite::cli {

namespace {

struct ServeOptions {
    EngineOptions engine;
    SpeculationOptions spec;
    std::string host = "127.0.0.1";
    int port = 8080;
    int64_t max_seqs = 16;
    std::string api_key;
    std::string api_key_file;
    std::vector<std::string> cors_origins;
    std::string model_name;
    bool no_prefix_caching = false;
    std::string pooling;  // --pooling: empty for none given
    std::string chat_template;
    int64_t max_connections = 4096;
    double read_timeout_s = 10;
};

// Reads the key file again: its new keys replace the old, or, when it cannot be read or
// holds none, the old keys stay and one line says why.
void reload_api_keys(const std::string& path, server::ApiKeys& keys) {
    try {
        keys.replace_file_keys(server::read_api_key_file(path));
        fmt::print(stderr, "kite serve: reloaded {} API keys from '{}'\n", keys.file_key_count(),
                   path);
    } catch (const Error& e) {
        fmt::print(stderr, "kite serve: {}; keeping the {} keys read before\n", e.what(),
                   keys.file_key_count());
    }
    std::fflush(stderr);
}

void serve(const ServeOptions& o) {
    // Signals go to one thread that stops the server (or reloads the keys); every other
    // thread (the engine's thread pool included, so before it starts) blocks them.
    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, SIGINT);
    sigaddset(&signals, SIGTERM);
    // Without a key file SIGHUP keeps its default (it ends the server, as before).
    if (!o.api_key_file.empty()) sigaddset(&signals, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &signals, nullptr);
    signal(SIGPIPE, SIG_IGN);
    // Each connection is a descriptor: allow as many as the hard limit does.
    rlimit files{};
    if (getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur < files.rlim_max) {
        files.rlim_cur = files.rlim_max;
        setrlimit(RLIMIT_NOFILE, &files);
    }

    const KvWindow window = o.engine.window();  // bad flags stop it before the model loads
    auto api_keys = std::make_shared<server::ApiKeys>(
        o.api_key, o.api_key_file.empty() ? std::vector<std::string>{}
                                          : server::read_api_key_file(o.api_key_file));
    // Every request needs a prompt token and a generated one: a smaller context would start
    // a server that refuses them all.
    if (o.engine.context > 0 && o.engine.context < 2)
        fail("-c {}: a context of {} token cannot hold a prompt and one generated token",
             o.engine.context, o.engine.context);
    LoadedModel m = load_model(o.engine.model, true);
    EngineConfig config = o.engine.serve_config(m.model->config(), o.max_seqs);
    config.prefix_caching = !o.no_prefix_caching;
    if (!o.pooling.empty()) {
        const std::optional<Pooling> pooling = pooling_from_name(o.pooling);
        if (!pooling) fail("--pooling '{}' is not a pooling (mean, cls or last)", o.pooling);
        config.embed_pooling = *pooling;
    }
    if (m.model->can_embed()) {
        // An encoder keeps no KV cache (each input is one pass); the engine gets one block.
        config.max_sequences = 1;
        config.context_length = config.block_size;
        config.kv_bytes = 0;
    }
    std::unique_ptr<Model> draft;  // a server-wide drafter; requests may opt out
    config.speculation = o.spec.config(*m.model, draft);
    Engine engine(*m.model, *m.tokenizer, config);
    o.engine.check_window(engine, window);

    std::unique_ptr<ChatTemplate> chat_template;
    try {
        chat_template = std::make_unique<ChatTemplate>(
            load_chat_template(o.chat_template, m.model->file(), *m.tokenizer));
    } catch (const Error& e) {
        fmt::print(stderr, "kite serve: no chat endpoint: {}\n", e.what());
    }
    server::ServedModel served;
    served.id = o.model_name.empty()
                    ? std::filesystem::path(resolve_model_path(o.engine.model)).stem().string()
                    : o.model_name;
    served.tokenizer = m.tokenizer.get();
    served.chat_template = chat_template.get();
    // The longest sequence that can run: the context, or the whole KV cache if smaller.
    served.context_length = std::min(engine.context_length(), engine.kv_capacity_tokens());
    served.kv_window = window;
    if (engine.can_embed()) served.embedding_size = engine.embedding_size();
    // An encoder's input is one pass of its own: its limit is the model's, not a KV cache's.
    if (m.model->can_embed()) served.context_length = m.model->config().n_ctx_train;
    // The vocabulary as bytes and its trie, built once for every constrained request.
    grammar::ConstraintCache constraints(
        std::make_shared<const grammar::TokenizerVocab>(grammar::tokenizer_vocab(*m.tokenizer)));
    if (!m.model->can_embed()) served.constraints = &constraints;

    server::Metrics metrics;
    server::EngineWorker worker(engine, metrics);
    server::ServerOptions options;
    options.api_keys = api_keys;
    options.cors_origins = o.cors_origins;
    options.http_threads = static_cast<size_t>(std::max<int64_t>(64, 2 * o.max_seqs + 16));
    // Past the descriptor limit, accept() would fail in a loop instead of answering 503:
    // keep the cap below it, with room for the model file and the server's own descriptors.
    getrlimit(RLIMIT_NOFILE, &files);
    const auto fd_room = static_cast<int64_t>(std::min<rlim_t>(files.rlim_cur, 1 << 24)) - 64;
    options.max_connections =
        static_cast<size_t>(std::max<int64_t>(1, std::min(o.max_connections, fd_room)));
    options.read_timeout = std::chrono::milliseconds(static_cast<int64_t>(o.read_timeout_s * 1000));
    server::HttpServer http(engine, worker, metrics, served, options);
    const int port = http.bind(o.host, o.port);

    std::thread waiter([&] {
        int sig = 0;
        while (sigwait(&signals, &sig) == 0 && sig == SIGHUP)
            reload_api_keys(o.api_key_file, *api_keys);
        http.stop();    // no new requests; those being read get 503
        worker.stop();  // running requests end at once: an error event and [DONE], or 503
    });
    const size_t draft_kv = engine.drafter() ? engine.drafter()->cache_bytes() : 0;
    fmt::print(
        stderr,
        "kite serve: model '{}', {} threads, context {}, KV cache {} tokens ({} bytes, "
        "{:.0f} MiB, {}), max {} sequences, prefix caching {}, speculative decoding {}{}, "
        "KV window {}\n",
        served.id, engine.threads(), engine.context_length(), engine.kv_capacity_tokens(),
        engine.kv_cache().bytes(), engine.kv_cache().bytes() / 1048576.0,
        kv_types_name(config.kv_type), o.max_seqs, config.prefix_caching ? "on" : "off",
        speculation_summary(o.spec),
        draft_kv > 0 ? fmt::format(" (draft KV cache {} bytes)", draft_kv) : "",
        window.enabled() ? fmt::format("{} + {} sinks", window.window, window.sinks) : "off");
    fmt::print(stderr, "kite serve: listening on http://{}:{}\n", o.host, port);
    std::fflush(stderr);
    http.serve();
    // serve() returns after stop(): from the signal thread, or on a listen failure.
    pthread_kill(waiter.native_handle(), SIGTERM);
    waiter.join();
    worker.stop();
    fmt::print(stderr, "kite serve: stopped\n");
}

}  // namespace

void add_serve_command(CLI::App& app) {
    auto* cmd = app.add_subcommand("serve", "Serve the model over an OpenAI-compatible HTTP API");
    auto o = std::make_shared<ServeOptions>();
    o->engine.add_to(*cmd);
    o->spec.add_to(*cmd);
    add_chat_template_option(*cmd, o->chat_template);
    cmd->add_option("--host", o->host, "Address to listen on")->capture_default_str();
    cmd->add_option("--port", o->port, "Port (0: any free port)")
        ->check(CLI::Range(0, 65535))
        ->capture_default_str();
    cmd->add_option("--max-seqs", o->max_seqs, "Sequences running at once (more wait)")
        ->check(CLI::Range(int64_t{1}, int64_t{1024}))
        ->capture_default_str();
    cmd->add_option("--api-key", o->api_key,
                    "Require 'Authorization: Bearer KEY' on /v1 and the token routes");
    cmd->add_option("--api-key-file", o->api_key_file,
                    "Also accept the keys of FILE (one per line; blank lines and # comments "
                    "skipped); SIGHUP reloads it");
    cmd->add_option("--cors-origin", o->cors_origins,
                    "Let browser pages from ORIGIN (scheme://host[:port], or * for any) call "
                    "the API (repeatable; default: no CORS)")
        ->check(CLI::Validator(
            [](std::string& origin) {
                return server::valid_cors_origin(origin)
                           ? std::string()
                           : "'" + origin + "' is not an origin (scheme://host[:port] or *)";
            },
            "ORIGIN"));
    cmd->add_option("--model-name", o->model_name,
                    "Model id clients use (default: the file name without .gguf)");
    cmd->add_option("--max-connections", o->max_connections,
                    "Open connections at once (more are answered 503)")
        ->check(CLI::Range(int64_t{1}, int64_t{1} << 20))
        ->capture_default_str();
    cmd->add_option("--read-timeout", o->read_timeout_s,
                    "Seconds a connection may wait for its next request, or take to send a "
                    "request head (the body: three times this)")
        ->check(CLI::Range(0.1, 3600.0))
        ->capture_default_str();
    cmd->add_flag("--no-prefix-caching", o->no_prefix_caching,
                  "Do not reuse the KV blocks of equal prompt prefixes");
    cmd->add_option("--pooling", o->pooling,
                    "/v1/embeddings pools this way: mean, cls or last (an embedding model: "
                    "default its own; a generative model embeds only with one)");
    cmd->callback([o] { serve(*o); });
}

}  // namespace kite::cli
