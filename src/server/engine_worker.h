// The engine thread: the only thread that touches the Engine. HTTP handler threads hand it
// requests through a locked queue (submit) and take their tokens from a per-request
// RequestStream (a channel with its own condition variable). A cancelled request (client
// gone) is released at the next step, freeing its KV blocks.
//
//   handler threads --submit/cancel--> [queue] --> engine thread: step() loop
//   handler thread  <--ChoiceEvents--  RequestStream <--------------'
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>
#include <vector>

#include "engine/engine.h"
#include "server/api_error.h"
#include "server/metrics.h"
#include "server/response_format.h"

namespace kite::server {

// One generated token of one choice.
struct ChoiceEvent {
    int choice = 0;
    std::string text;
    FinishReason finish = FinishReason::None;
    bool has_logprob = false;
    TokenLogprob logprob;
};

// The channel from the engine thread to the handler of one request.
class RequestStream {
  public:
    enum class Wait { Events, Timeout, Done };
    // Waits up to `timeout` for events and moves them into `out`. Done: the request is over
    // (all choices finished, failed or cancelled) and every event has been taken.
    Wait wait(std::vector<ChoiceEvent>& out, std::chrono::milliseconds timeout);
    // Set when the request failed (after Done).
    std::optional<ApiError> error() const;

  private:
    friend class EngineWorker;
    void push(ChoiceEvent ev);
    void close(std::optional<ApiError> error = std::nullopt);

    mutable std::mutex mutex_;
    std::condition_variable cv_;
    std::deque<ChoiceEvent> events_;
    bool closed_ = false;
    std::optional<ApiError> error_;
};

// One sequence to run for a request (a request with n choices has n of them).
struct SequenceRequest {
    std::vector<int32_t> prompt;
    GenerationParams params;
};

class EngineWorker {
  public:
    EngineWorker(Engine& engine, Metrics& metrics);
    ~EngineWorker();

    // Queues a request's sequences (choice i is seqs[i]); validate them first
    // (Engine::validate) so that only engine-side failures remain.
    std::shared_ptr<RequestStream> submit(std::vector<SequenceRequest> seqs, int64_t prompt_tokens);
    // Embeds the inputs on the engine thread, between steps, and waits for the vectors
    // (Engine::embed). Throws kite::Error for inputs the model rejects, ApiError 503 when the
    // server stops first.
    std::vector<float> embed(std::vector<std::vector<int32_t>> inputs);
    // Stops a request's generation and frees its blocks; harmless once it is over.
    void cancel(const std::shared_ptr<RequestStream>& stream);
    // Ends the loop: requests still running fail with 503.
    void stop();

  private:
    using Clock = std::chrono::steady_clock;
    struct Pending {
        std::shared_ptr<RequestStream> stream;
        std::vector<SequenceRequest> seqs;
        int64_t prompt_tokens;
        Clock::time_point arrival;
    };
    struct Live {
        std::shared_ptr<RequestStream> stream;
        std::vector<int64_t> seq_ids;
        int remaining;
        Clock::time_point arrival;
        bool first_token_seen = false;
    };
    struct SeqInfo {
        RequestStream* request;
        int choice;
        bool logprobs;  // the request asked for them
        int64_t tokens = 0;
        Clock::time_point first_token;
    };

    struct EmbedJob {
        std::vector<std::vector<int32_t>> inputs;
        std::promise<std::vector<float>> vectors;
    };

    void loop();
    void run_embeds(std::vector<std::shared_ptr<EmbedJob>>& jobs);
    void start(Pending& p);
    void dispatch(const std::vector<TokenEvent>& events);
    void end_request(RequestStream* request, std::optional<ApiError> error);
    void publish_gauges();

    Engine& engine_;
    Metrics& metrics_;

    std::mutex mutex_;  // guards the four fields below
    std::condition_variable cv_;
    std::vector<Pending> incoming_;
    std::vector<std::shared_ptr<RequestStream>> cancelled_;
    std::vector<std::shared_ptr<EmbedJob>> embed_jobs_;
    bool stop_ = false;

    // Engine-thread state.
    std::unordered_map<RequestStream*, Live> live_;
    std::unordered_map<int64_t, SeqInfo> seqs_;
    std::thread thread_;
};

}  // namespace kite::server
