#include "server/metrics.h"

#include <fmt/format.h>

namespace kite::server {

Histogram::Histogram(std::vector<double> bounds)
    : bounds_(std::move(bounds)), counts_(bounds_.size() + 1, 0) {}

void Histogram::observe(double value) {
    size_t i = 0;
    while (i < bounds_.size() && value > bounds_[i]) ++i;
    counts_[i]++;
    sum_ += value;
    count_++;
}

void Histogram::render(const std::string& name, std::string& out) const {
    uint64_t cumulative = 0;
    for (size_t i = 0; i < bounds_.size(); ++i) {
        cumulative += counts_[i];
        out += fmt::format("{}_bucket{{le=\"{}\"}} {}\n", name, bounds_[i], cumulative);
    }
    out += fmt::format("{}_bucket{{le=\"+Inf\"}} {}\n", name, count_);
    out += fmt::format("{}_sum {}\n{}_count {}\n", name, sum_, name, count_);
}

Metrics::Metrics()
    : ttft_({0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 25, 60}),
      tpot_({0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.5, 1, 2.5}) {}

void Metrics::count_request(int status) {
    std::lock_guard lock(mutex_);
    requests_[status]++;
}

void Metrics::add_tokens(int64_t prompt, int64_t generated) {
    std::lock_guard lock(mutex_);
    prompt_tokens_ += prompt;
    generated_tokens_ += generated;
}

void Metrics::observe_ttft(double seconds) {
    std::lock_guard lock(mutex_);
    ttft_.observe(seconds);
}

void Metrics::observe_tpot(double seconds) {
    std::lock_guard lock(mutex_);
    tpot_.observe(seconds);
}

void Metrics::set_engine(const EngineGauges& g) {
    std::lock_guard lock(mutex_);
    engine_ = g;
}

EngineGauges Metrics::engine() const {
    std::lock_guard lock(mutex_);
    return engine_;
}

namespace {

void header(std::string& out, const char* name, const char* type, const char* help) {
    out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
}

void single(std::string& out, const char* name, const char* type, const char* help, int64_t value) {
    header(out, name, type, help);
    out += fmt::format("{} {}\n", name, value);
}

}  // namespace

std::string Metrics::render() const {
    std::lock_guard lock(mutex_);
    std::string out;
    header(out, "kite_requests_total", "counter", "HTTP requests answered, by status code.");
    for (const auto& [status, n] : requests_)
        out += fmt::format("kite_requests_total{{status=\"{}\"}} {}\n", status, n);
    single(out, "kite_prompt_tokens_total", "counter", "Prompt tokens of accepted requests.",
           prompt_tokens_);
    single(out, "kite_generation_tokens_total", "counter", "Tokens generated.", generated_tokens_);
    header(out, "kite_time_to_first_token_seconds", "histogram",
           "Time from a request's arrival to its first generated token.");
    ttft_.render("kite_time_to_first_token_seconds", out);
    header(out, "kite_time_per_output_token_seconds", "histogram",
           "Mean time between a request's generated tokens after the first.");
    tpot_.render("kite_time_per_output_token_seconds", out);
    const EngineGauges& g = engine_;
    single(out, "kite_num_requests_running", "gauge", "Sequences the engine is running.",
           g.running);
    single(out, "kite_num_requests_waiting", "gauge", "Sequences waiting to be admitted.",
           g.waiting);
    single(out, "kite_kv_blocks_used", "gauge", "KV-cache blocks held by sequences.",
           g.kv_blocks_used);
    single(out, "kite_kv_blocks_cached", "gauge",
           "Unused KV-cache blocks kept for the prefix cache (evictable).", g.kv_blocks_cached);
    single(out, "kite_kv_blocks_total", "gauge", "KV-cache blocks in all.", g.kv_blocks_total);
    single(out, "kite_kv_bytes_per_token", "gauge",
           "KV-cache bytes one token takes in all layers, in the cache's element types.",
           g.kv_bytes_per_token);
    single(out, "kite_kv_bytes_total", "gauge", "KV-cache memory in bytes.", g.kv_bytes_total);
    single(out, "kite_prefix_cache_queries_total", "counter",
           "Prompt tokens looked up in the prefix cache.", g.prefix_cache_queries);
    single(out, "kite_prefix_cache_hits_total", "counter",
           "Prompt tokens found in the prefix cache (prefill skipped).", g.prefix_cache_hits);
    single(out, "kite_preemptions_total", "counter",
           "Sequences preempted (blocks freed, recomputed later) for lack of KV blocks.",
           g.preemptions);
    single(out, "kite_spec_draft_tokens_total", "counter",
           "Speculative decoding: draft tokens verified.", g.draft_tokens);
    single(out, "kite_spec_accepted_tokens_total", "counter",
           "Speculative decoding: draft tokens the model kept.", g.draft_accepted_tokens);
    single(out, "kite_draft_kv_blocks_used", "gauge",
           "Blocks of the draft model's KV cache held by sequences.", g.draft_kv_blocks_used);
    return out;
}

}  // namespace kite::server
