#include "server/engine_worker.h"

#include <exception>

#include "core/error.h"

namespace kite::server {

RequestStream::Wait RequestStream::wait(std::vector<ChoiceEvent>& out,
                                        std::chrono::milliseconds timeout) {
    std::unique_lock lock(mutex_);
    cv_.wait_for(lock, timeout, [&] { return !events_.empty() || closed_; });
    if (events_.empty()) return closed_ ? Wait::Done : Wait::Timeout;
    for (ChoiceEvent& ev : events_) out.push_back(std::move(ev));
    events_.clear();
    return Wait::Events;
}

std::optional<ApiError> RequestStream::error() const {
    std::lock_guard lock(mutex_);
    return error_;
}

void RequestStream::push(ChoiceEvent ev) {
    {
        std::lock_guard lock(mutex_);
        events_.push_back(std::move(ev));
    }
    cv_.notify_all();
}

void RequestStream::close(std::optional<ApiError> error) {
    {
        std::lock_guard lock(mutex_);
        closed_ = true;
        if (error && !error_) error_ = std::move(error);
    }
    cv_.notify_all();
}

EngineWorker::EngineWorker(Engine& engine, Metrics& metrics) : engine_(engine), metrics_(metrics) {
    publish_gauges();
    thread_ = std::thread([this] { loop(); });
}

EngineWorker::~EngineWorker() {
    stop();
}

std::shared_ptr<RequestStream> EngineWorker::submit(std::vector<SequenceRequest> seqs,
                                                    int64_t prompt_tokens) {
    auto stream = std::make_shared<RequestStream>();
    {
        std::lock_guard lock(mutex_);
        if (stop_) {
            stream->close(ApiError(503, "the server is shutting down", "", "server_error"));
            return stream;
        }
        incoming_.push_back({stream, std::move(seqs), prompt_tokens, Clock::now()});
    }
    cv_.notify_one();
    return stream;
}

std::vector<float> EngineWorker::embed(std::vector<std::vector<int32_t>> inputs) {
    auto job = std::make_shared<EmbedJob>();
    job->inputs = std::move(inputs);
    std::future<std::vector<float>> vectors = job->vectors.get_future();
    {
        std::lock_guard lock(mutex_);
        if (stop_) throw ApiError(503, "the server is shutting down", "", "server_error");
        embed_jobs_.push_back(job);
    }
    cv_.notify_one();
    return vectors.get();
}

void EngineWorker::cancel(const std::shared_ptr<RequestStream>& stream) {
    {
        std::lock_guard lock(mutex_);
        cancelled_.push_back(stream);
    }
    cv_.notify_one();
}

void EngineWorker::stop() {
    {
        std::lock_guard lock(mutex_);
        stop_ = true;
    }
    cv_.notify_one();
    if (thread_.joinable()) thread_.join();
}

void EngineWorker::end_request(RequestStream* request, std::optional<ApiError> error) {
    auto it = live_.find(request);
    if (it == live_.end()) return;
    for (int64_t id : it->second.seq_ids) {
        if (seqs_.erase(id)) engine_.release(id);
    }
    it->second.stream->close(std::move(error));
    live_.erase(it);
}

void EngineWorker::start(Pending& p) {
    Live live{p.stream, {}, static_cast<int>(p.seqs.size()), p.arrival};
    RequestStream* key = p.stream.get();
    try {
        for (size_t i = 0; i < p.seqs.size(); ++i) {
            const int64_t id = engine_.submit(p.seqs[i].prompt, p.seqs[i].params);
            live.seq_ids.push_back(id);
            seqs_[id] = SeqInfo{key, static_cast<int>(i), p.seqs[i].params.logprobs >= 0, 0, {}};
        }
    } catch (const Error& e) {
        for (int64_t id : live.seq_ids) seqs_.erase(id), engine_.release(id);
        p.stream->close(ApiError(400, e.what()));
        return;
    }
    metrics_.add_tokens(p.prompt_tokens, 0);
    live_.emplace(key, std::move(live));
}

void EngineWorker::dispatch(const std::vector<TokenEvent>& events) {
    const auto now = Clock::now();
    for (const TokenEvent& ev : events) {
        auto sit = seqs_.find(ev.seq_id);
        if (sit == seqs_.end()) continue;
        SeqInfo& info = sit->second;
        if (ev.finish == FinishReason::NonFinite) {
            end_request(info.request,
                        ApiError(500,
                                 "the model produced non-finite logits (NaN or infinity); "
                                 "generation stopped",
                                 "", "server_error"));
            continue;
        }
        if (ev.finish == FinishReason::NoAllowedToken) {
            end_request(info.request,
                        ApiError(400,
                                 "the output constraint allows no next token here (a dead end "
                                 "of the grammar, or logit_bias bans every allowed token); "
                                 "generation stopped"));
            continue;
        }
        Live& live = live_.at(info.request);
        if (!live.first_token_seen) {
            live.first_token_seen = true;
            metrics_.observe_ttft(std::chrono::duration<double>(now - live.arrival).count());
        }
        if (info.tokens++ == 0) info.first_token = now;
        ChoiceEvent ce;
        ce.choice = info.choice;
        ce.text = ev.text;
        ce.finish = ev.finish;
        if (info.logprobs) {
            ce.has_logprob = true;
            ce.logprob = {ev.token, ev.logprob, ev.top_logprobs};
        }
        live.stream->push(std::move(ce));
        metrics_.add_tokens(0, 1);
        if (ev.finish == FinishReason::None) continue;
        if (info.tokens > 1)
            metrics_.observe_tpot(std::chrono::duration<double>(now - info.first_token).count() /
                                  static_cast<double>(info.tokens - 1));
        RequestStream* request = info.request;
        engine_.release(ev.seq_id);
        seqs_.erase(sit);
        if (--live.remaining == 0) {
            live.stream->close();
            live_.erase(request);
        }
    }
}

void EngineWorker::publish_gauges() {
    EngineGauges g;
    const Scheduler& s = engine_.scheduler();
    g.running = s.n_running();
    g.waiting = s.n_waiting();
    g.kv_blocks_used = engine_.block_pool().n_used();
    g.kv_blocks_cached = engine_.block_pool().n_cached_free();
    g.kv_blocks_total = engine_.block_pool().n_blocks();
    const KvCache& kv = engine_.kv_cache();
    g.kv_bytes_total = static_cast<int64_t>(kv.bytes());
    g.kv_bytes_per_token = static_cast<int64_t>(kv.bytes() / static_cast<size_t>(kv.n_slots()));
    g.prefix_cache_queries = s.stats().prefix_queries;
    g.prefix_cache_hits = s.stats().prefix_hits;
    g.preemptions = s.stats().preemptions;
    g.draft_tokens = engine_.stats().drafted_tokens;
    g.draft_accepted_tokens = engine_.stats().accepted_tokens;
    g.draft_kv_blocks_used = engine_.drafter() ? engine_.drafter()->blocks_used() : 0;
    metrics_.set_engine(g);
}

// Embedding jobs run whole, between two steps (an encoder pass has no state), and the jobs of
// different clients that wait together go through the encoder as one ragged batch. Should
// that batch fail, each job runs alone, so that one request's error is not another's.
void EngineWorker::run_embeds(std::vector<std::shared_ptr<EmbedJob>>& jobs) {
    if (jobs.size() > 1) {
        std::vector<std::vector<int32_t>> inputs;
        for (const auto& job : jobs)
            for (const auto& input : job->inputs) inputs.push_back(input);
        try {
            const std::vector<float> all = engine_.embed(inputs);
            const auto width = size_t(engine_.embedding_size());
            size_t at = 0;
            for (const auto& job : jobs) {
                const size_t n = job->inputs.size() * width;
                job->vectors.set_value(
                    std::vector<float>(all.begin() + long(at), all.begin() + long(at + n)));
                at += n;
            }
            return;
        } catch (const std::exception&) {
            // Each job alone below: its own result or its own error.
        }
    }
    for (const auto& job : jobs) {
        try {
            job->vectors.set_value(engine_.embed(job->inputs));
        } catch (...) {
            job->vectors.set_exception(std::current_exception());
        }
    }
}

void EngineWorker::loop() {
    std::vector<Pending> incoming;
    std::vector<std::shared_ptr<RequestStream>> cancelled;
    std::vector<std::shared_ptr<EmbedJob>> embeds;
    for (;;) {
        {
            std::unique_lock lock(mutex_);
            cv_.wait(lock, [&] {
                return stop_ || !incoming_.empty() || !cancelled_.empty() || !embed_jobs_.empty() ||
                       engine_.has_work();
            });
            if (stop_) break;
            incoming.swap(incoming_);
            cancelled.swap(cancelled_);
            embeds.swap(embed_jobs_);
        }
        run_embeds(embeds);
        embeds.clear();
        for (Pending& p : incoming) start(p);
        incoming.clear();
        for (const auto& stream : cancelled) end_request(stream.get(), std::nullopt);
        cancelled.clear();
        if (engine_.has_work()) {
            try {
                dispatch(engine_.step());
            } catch (const std::exception& e) {
                // Nothing a request can send should get here; fail what runs, keep serving.
                std::vector<RequestStream*> all;
                for (auto& [key, live] : live_) all.push_back(key);
                for (RequestStream* r : all)
                    end_request(r, ApiError(500, std::string("engine failure: ") + e.what(), "",
                                            "server_error"));
            }
        }
        publish_gauges();
    }
    // Shutting down: whatever still runs or waits fails.
    std::vector<RequestStream*> all;
    for (auto& [key, live] : live_) all.push_back(key);
    for (RequestStream* r : all)
        end_request(r, ApiError(503, "the server is shutting down", "", "server_error"));
    std::lock_guard lock(mutex_);
    for (Pending& p : incoming_)
        p.stream->close(ApiError(503, "the server is shutting down", "", "server_error"));
    incoming_.clear();
    for (const auto& job : embed_jobs_)
        job->vectors.set_exception(std::make_exception_ptr(
            ApiError(503, "the server is shutting down", "", "server_error")));
    embed_jobs_.clear();
}

}  // namespace kite::server
