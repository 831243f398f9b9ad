// Reference outputs of llama.cpp (linked as a library) for token IDs given on the command line,
// as JSON on stdout, for tools/make-arch-fixtures.sh:
//   arch_reference MODEL WINDOW BOS N_GREEDY ALL_LOGITS ID...
// The IDs are cut into windows of WINDOW tokens (0: one window of all), each evaluated from an
// empty cache (an F32 one, so that the logits are exact to compare), with its first token
// replaced by BOS when BOS >= 0 (as llama-perplexity does). Per position: the argmax, the top
// two logits, the log-probability of the next ID and, when ALL_LOGITS is 1, every logit. After
// the first window, N_GREEDY tokens of greedy continuation.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "llama.h"

namespace {

void print_position(const float* logits, int n_vocab, int next, bool all) {
    int best = 0;
    for (int i = 1; i < n_vocab; ++i)
        if (logits[i] > logits[best]) best = i;
    float second = -INFINITY;
    for (int i = 0; i < n_vocab; ++i)
        if (i != best) second = std::max(second, logits[i]);
    double sum = 0;
    for (int i = 0; i < n_vocab; ++i) sum += std::exp(double(logits[i]) - logits[best]);
    const double logprob = next >= 0 ? logits[next] - logits[best] - std::log(sum) : 0.0;
    std::printf("{\"argmax\":%d,\"top2\":[%.9g,%.9g],\"logprob\":%.9g", best, logits[best], second,
                logprob);
    if (all) {
        std::printf(",\"logits\":[");
        for (int i = 0; i < n_vocab; ++i) std::printf(i ? ",%.9g" : "%.9g", logits[i]);
        std::printf("]");
    }
    std::printf("}");
}

int argmax(const float* logits, int n) {
    return static_cast<int>(std::max_element(logits, logits + n) - logits);
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 7) {
        std::fprintf(stderr, "usage: %s MODEL WINDOW BOS N_GREEDY ALL_LOGITS ID...\n", argv[0]);
        return 2;
    }
    const int bos = std::atoi(argv[3]), n_greedy = std::atoi(argv[4]);
    const bool all = std::atoi(argv[5]) != 0;
    std::vector<llama_token> ids;
    for (int i = 6; i < argc; ++i) ids.push_back(std::atoi(argv[i]));
    const int window = std::atoi(argv[2]) > 0 ? std::atoi(argv[2]) : static_cast<int>(ids.size());

    llama_backend_init();
    llama_log_set([](ggml_log_level, const char*, void*) {}, nullptr);
    llama_model_params mp = llama_model_default_params();
    llama_model* model = llama_model_load_from_file(argv[1], mp);
    if (!model) return 1;
    const int n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));
    llama_context_params cp = llama_context_default_params();
    cp.n_ctx = static_cast<uint32_t>(window + n_greedy + 16);
    cp.n_batch = cp.n_ubatch = cp.n_ctx;
    cp.n_threads = cp.n_threads_batch = 2;
    cp.type_k = cp.type_v = GGML_TYPE_F32;
    cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;

    std::printf("{\"n_vocab\":%d,\"windows\":[", n_vocab);
    const int n_windows = static_cast<int>(ids.size()) / window;
    for (int w = 0; w < n_windows; ++w) {
        llama_context* ctx = llama_init_from_model(model, cp);
        llama_batch batch = llama_batch_init(window, 0, 1);
        for (int i = 0; i < window; ++i) {
            batch.token[i] = i == 0 && bos >= 0 ? bos : ids[w * window + i];
            batch.pos[i] = i;
            batch.n_seq_id[i] = 1;
            batch.seq_id[i][0] = 0;
            batch.logits[i] = 1;
        }
        batch.n_tokens = window;
        if (llama_decode(ctx, batch) != 0) return 1;
        std::printf(w ? ",{\"positions\":[" : "{\"positions\":[");
        for (int i = 0; i < window; ++i) {
            if (i) std::printf(",");
            const int next = i + 1 < window ? ids[w * window + i + 1] : -1;
            print_position(llama_get_logits_ith(ctx, i), n_vocab, next, all);
        }
        std::printf("],\"greedy\":[");
        int pos = window;
        llama_token token = argmax(llama_get_logits_ith(ctx, window - 1), n_vocab);
        for (int g = 0; w == 0 && g < n_greedy; ++g) {
            std::printf(g ? ",%d" : "%d", token);
            llama_batch one = llama_batch_get_one(&token, 1);
            std::vector<llama_pos> p{pos++};
            one.pos = p.data();
            if (llama_decode(ctx, one) != 0) return 1;
            token = argmax(llama_get_logits_ith(ctx, -1), n_vocab);
        }
        std::printf("]}");
        llama_batch_free(batch);
        llama_free(ctx);
    }
    std::printf("]}\n");
    llama_model_free(model);
    return 0;
}
