// llama.cpp's teacher-forced view of a text, for Kite's reference fixtures: reads windows of
// token ids (whitespace-separated, N_CTX per window, each already as llama-perplexity feeds
// it) from stdin, evaluates each window over an empty cache with logits for every position,
// and prints one JSON line per window: the argmax at each position (lowest id among equal
// maxima), the gap between the two best logits, and -log p(next token) for every position
// but the last. Built against the static libraries of tools/llamacpp/build.sh.
//
//   teacher_forced MODEL N_CTX THREADS < ids
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <vector>

#include "llama.h"

static void quiet(enum ggml_log_level, const char*, void*) {}

int main(int argc, char** argv) {
    if (argc != 4) {
        std::fprintf(stderr, "usage: teacher_forced MODEL N_CTX THREADS < ids\n");
        return 2;
    }
    const int n_ctx = std::atoi(argv[2]), n_threads = std::atoi(argv[3]);
    std::vector<llama_token> ids;
    for (long id; std::cin >> id;) ids.push_back(static_cast<llama_token>(id));
    if (n_ctx < 2 || ids.empty() || ids.size() % n_ctx != 0) {
        std::fprintf(stderr, "teacher_forced: need a whole number of %d-token windows\n", n_ctx);
        return 1;
    }
    llama_log_set(quiet, nullptr);
    llama_backend_init();
    llama_model_params mp = llama_model_default_params();
    mp.n_gpu_layers = 0;
    llama_model* model = llama_model_load_from_file(argv[1], mp);
    if (!model) {
        std::fprintf(stderr, "teacher_forced: cannot load %s\n", argv[1]);
        return 1;
    }
    llama_context_params cp = llama_context_default_params();
    cp.n_ctx = cp.n_batch = cp.n_ubatch = n_ctx;
    cp.n_threads = cp.n_threads_batch = n_threads;
    cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;  // as llama-perplexity -fa off
    cp.type_k = cp.type_v = GGML_TYPE_F16;
    llama_context* ctx = llama_init_from_model(model, cp);
    const int n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));

    llama_batch batch = llama_batch_init(n_ctx, 0, 1);
    for (size_t start = 0; start < ids.size(); start += n_ctx) {
        llama_memory_clear(llama_get_memory(ctx), true);
        batch.n_tokens = n_ctx;
        for (int j = 0; j < n_ctx; ++j) {
            batch.token[j] = ids[start + j];
            batch.pos[j] = j;
            batch.n_seq_id[j] = 1;
            batch.seq_id[j][0] = 0;
            batch.logits[j] = 1;
        }
        if (llama_decode(ctx, batch) != 0) {
            std::fprintf(stderr, "teacher_forced: llama_decode failed\n");
            return 1;
        }
        std::string argmax, gap, nll;
        for (int j = 0; j < n_ctx; ++j) {
            const float* row = llama_get_logits_ith(ctx, j);
            int best = 0;
            for (int k = 1; k < n_vocab; ++k)
                if (row[k] > row[best]) best = k;
            float second = -INFINITY;
            for (int k = 0; k < n_vocab; ++k)
                if (k != best) second = std::max(second, row[k]);
            double sum = 0;
            for (int k = 0; k < n_vocab; ++k) sum += std::exp(double(row[k]) - row[best]);
            char buf[64];
            argmax += (j ? "," : "") + std::to_string(best);
            std::snprintf(buf, sizeof buf, "%s%.9g", j ? "," : "", double(row[best] - second));
            gap += buf;
            if (j + 1 < n_ctx) {
                const double lse = row[best] + std::log(sum);
                std::snprintf(buf, sizeof buf, "%s%.17g", j ? "," : "",
                              lse - row[ids[start + j + 1]]);
                nll += buf;
            }
        }
        std::printf("{\"argmax\": [%s], \"top2_gap\": [%s], \"nll\": [%s]}\n", argmax.c_str(),
                    gap.c_str(), nll.c_str());
    }
    llama_batch_free(batch);
    llama_free(ctx);
    llama_model_free(model);
    return 0;
}
