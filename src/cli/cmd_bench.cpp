// `kite bench`: prompt processing, generation and batched generation speed (as llama-bench
// and llama-batched-bench measure them), each with its roofline view: FLOPs and bytes per
// token from the cost model, achieved GFLOP/s and GB/s, and the fraction of this machine's
// peaks, and which kernels ran (--isa caps their instruction set). `-o json` prints the same
// rows as JSON for scripts. `--spec ngram` or `--draft-model M` makes the generation tests
// speculate (with
// `--tg-file`, tg starts from a given text, e.g. one the model will repeat).
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/engine_options.h"
#include "cli/flag_checks.h"
#include "cli/isa_option.h"
#include "core/error.h"
#include "kernels/cpu/isa.h"
#include "kv/kv_cache.h"
#include "tools/benchmark.h"
#include "tools/roofline.h"

namespace kite::cli {

namespace {

struct BenchCliOptions {
    std::string model;
    BenchOptions bench;
    KvTypeOptions kv_type;
    std::string output = "table";
    double peak_gbs = 0;
    double peak_gflops = 0;
    std::string bandwidth_size = "1G";
    std::string isa;  // --isa: empty for the default level
    SpeculationOptions spec;
    std::string tg_file;  // --tg-file: tg's prompt text
};

std::string read_text(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) fail("cannot read '{}'", path);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// The machine's peaks: measured unless given on the command line.
struct Peaks {
    double gbs = 0, gflops = 0;
    std::string compute;  // which peak C is, e.g. "int8 dot (avx512-vnni)"
    bool gbs_measured = false, gflops_measured = false;
};

Peaks find_peaks(const BenchCliOptions& o, TensorType weight_type, int threads) {
    Peaks p;
    p.gbs = o.peak_gbs;
    p.gflops = o.peak_gflops;
    p.compute = "given";
    if (p.gbs > 0 && p.gflops > 0) return p;
    ThreadPool pool(threads);
    if (p.gbs <= 0) {
        p.gbs =
            measure_read_bandwidth(pool, parse_bytes(o.bandwidth_size), 5).bytes_per_second / 1e9;
        p.gbs_measured = true;
    }
    if (p.gflops <= 0) {
        const ComputeUse use = compute_use_for(weight_type, active_isa());
        const ComputeResult best = best_of_kind(measure_compute_peaks(pool), use.kind);
        p.gflops = best.ops_per_second / 1e9 / use.products;
        p.compute = fmt::format("{} ({}{})", compute_kind_name(use.kind), best.isa,
                                use.products > 1 ? fmt::format(" / {}", use.products) : "");
        p.gflops_measured = true;
    }
    return p;
}

struct RowView {
    double gflops, gbs, intensity, frac_bw, frac_compute, frac_roofline;
    const char* bound;
};

RowView view(const BenchRow& r, const Peaks& p) {
    RowView v;
    v.gflops = r.per_token.flops * r.avg_ts / 1e9;
    v.gbs = r.per_token.bytes * r.avg_ts / 1e9;
    v.intensity = r.per_token.intensity();
    v.frac_bw = v.gbs / p.gbs;
    v.frac_compute = v.gflops / p.gflops;
    v.frac_roofline = roofline_fraction(v.gflops, v.intensity, p.gflops, p.gbs);
    v.bound = bound_name(v.intensity, p.gflops / p.gbs);
    return v;
}

std::string model_type(const ModelConfig& c, uint64_t n_params, TensorType t) {
    return fmt::format("{} {:.0f}M {}", c.architecture, static_cast<double>(n_params) / 1e6,
                       tensor_type_name(t));
}

void run(BenchCliOptions o) {
    apply_isa_option(o.isa);
    LoadedModel m = load_model(o.model);
    // Every test's context must fit the model's, checked before minutes of measuring.
    const BenchOptions& b = o.bench;
    const int64_t longest = std::max({b.n_prompt + 8, b.tg_prompt + b.n_gen + 8,
                                      b.batches.empty() ? 0 : b.batch_prompt + b.n_gen + 8});
    if (longest > m.model->config().n_ctx_train)
        fail("the tests need a context of {} tokens, more than the model's {} (lower -p or -n)",
             longest, m.model->config().n_ctx_train);
    const std::string path = resolve_model_path(o.model);
    const GgufFile& file = m.model->file();
    uint64_t n_params = 0, size = 0;
    for (const GgufTensor& t : file.tensors()) n_params += t.n_elements, size += t.n_bytes;
    const TensorType wtype = main_weight_type(file);
    o.bench.kv_type = o.kv_type.types();
    const int threads = o.bench.threads > 0 ? o.bench.threads : ThreadPool::default_threads();
    o.bench.threads = threads;
    std::unique_ptr<Model> draft;
    o.bench.speculation = o.spec.config(*m.model, draft);
    if (!o.tg_file.empty()) {
        o.bench.tg_tokens = m.tokenizer->encode(read_text(o.tg_file), true, true);
        if (o.bench.tg_tokens.empty()) fail("the --tg-file prompt is empty");
    }
    const bool json = o.output == "json";

    const std::string kernels = kernels_line(wtype);
    fmt::print(stderr, "kite bench: kernels: {}\n", kernels);
    fmt::print(stderr, "kite bench: measuring this machine's peaks\n");
    const Peaks peaks = find_peaks(o, wtype, threads);
    const std::vector<BenchRow> rows = run_benchmark(
        *m.model, *m.tokenizer, o.bench,
        [](const std::string& test) { fmt::print(stderr, "kite bench: {}\n", test); });

    const std::string type = model_type(m.model->config(), n_params, wtype);
    if (json) {
        nlohmann::ordered_json out = nlohmann::ordered_json::array();
        for (const BenchRow& r : rows) {
            const RowView v = view(r, peaks);
            out.push_back({
                {"cpu_info", cpu_model_name()},
                {"model_filename", path},
                {"model_type", type},
                {"model_size", size},
                {"model_n_params", n_params},
                {"n_threads", threads},
                {"type_kv", kv_types_name(o.bench.kv_type)},
                {"isa", isa_name(active_isa())},
                {"bf16_kernel", wtype == TensorType::BF16
                                    ? nlohmann::ordered_json(bf16_kernel_name())
                                    : nlohmann::ordered_json()},
                {"test", r.test},
                {"n_prompt", r.n_prompt},
                {"n_gen", r.n_gen},
                {"n_seqs", r.n_seqs},
                {"reps", r.samples_ts.size()},
                {"avg_ts", r.avg_ts},
                {"stddev_ts", r.stddev_ts},
                {"samples_ts", r.samples_ts},
                {"flops_per_token", r.per_token.flops},
                {"bytes_per_token", r.per_token.bytes},
                {"arithmetic_intensity", v.intensity},
                {"achieved_gflops", v.gflops},
                {"achieved_gbs", v.gbs},
                {"peak_gbs", peaks.gbs},
                {"peak_gflops", peaks.gflops},
                {"peak_compute", peaks.compute},
                {"frac_peak_bw", v.frac_bw},
                {"frac_peak_compute", v.frac_compute},
                {"bound", v.bound},
                {"frac_roofline", v.frac_roofline},
                {"drafted_tokens", r.drafted},
                {"accepted_tokens", r.accepted},
            });
        }
        fmt::print("{}\n", out.dump(2));
        return;
    }
    fmt::print("kernels: {}\n", kernels);
    fmt::print("peaks: W = {:.2f} GB/s ({}), C = {:.1f} GFLOP/s {} ({}); C/W = {:.1f} FLOP/B\n",
               peaks.gbs, peaks.gbs_measured ? "measured" : "given", peaks.gflops, peaks.compute,
               peaks.gflops_measured ? "measured" : "given", peaks.gflops / peaks.gbs);
    fmt::print(
        "per token: FLOPs and bytes from the cost model (kite roofline prints the formulas); "
        "%W = GB/s over W, %C = GFLOP/s over C, %roof = over min(C, AI*W)\n\n");
    fmt::print(
        "| model | size | threads | test | t/s | FLOP/tok | B/tok | AI | GFLOP/s | GB/s | %W | %C "
        "| bound | %roof |\n");
    fmt::print(
        "| ----- | ---: | ------: | ---: | --: | -------: | ----: | -: | ------: | ---: | -: | -: "
        "| ----- | ----: |\n");
    for (const BenchRow& r : rows) {
        const RowView v = view(r, peaks);
        fmt::print(
            "| {} | {:.2f} MiB | {} | {} | {:.2f} ± {:.2f} | {:.1f} M | {:.2f} MB | {:.2f} | "
            "{:.1f} | {:.2f} | {:.1f} | {:.1f} | {} | {:.1f} |\n",
            type, static_cast<double>(size) / (1 << 20), threads, r.test, r.avg_ts, r.stddev_ts,
            r.per_token.flops / 1e6, r.per_token.bytes / 1e6, v.intensity, v.gflops, v.gbs,
            100 * v.frac_bw, 100 * v.frac_compute,
            v.bound == std::string("memory-bound") ? "mem" : "compute", 100 * v.frac_roofline);
    }
    for (const BenchRow& r : rows)
        if (r.drafted > 0)
            fmt::print("{}: drafted {}, accepted {} ({:.1f}%)\n", r.test, r.drafted, r.accepted,
                       100.0 * static_cast<double>(r.accepted) / static_cast<double>(r.drafted));
}

}  // namespace

void add_bench_command(CLI::App& app) {
    auto* cmd = app.add_subcommand("bench", "Benchmark prompt processing and generation speed");
    auto o = std::make_shared<BenchCliOptions>();
    BenchOptions& b = o->bench;
    cmd->add_option("-m,--model", o->model,
                    "GGUF model file (default: the installed default model)");
    cmd->add_option("-p,--n-prompt", b.n_prompt, "Prompt tokens of the pp test (0: skip)")
        ->check(CLI::Range(int64_t{0}, int64_t{1} << 20))
        ->capture_default_str();
    cmd->add_option("-n,--n-gen", b.n_gen, "Tokens generated per sequence (0: skip)")
        ->check(CLI::Range(int64_t{0}, int64_t{1} << 20))
        ->capture_default_str();
    cmd->add_option("-b,--batch", b.batches,
                    "Batched generation with these numbers of sequences, e.g. 1,4,16,32")
        ->delimiter(',')
        ->check(CLI::Range(int64_t{1}, int64_t{1024}));
    cmd->add_option("-t,--threads", b.threads, "Threads (default: physical cores)")
        ->check(CLI::Range(0, 1024));
    cmd->add_option("-r,--repetitions", b.reps, "Timed runs of each test")
        ->check(CLI::Range(1, 1000))
        ->capture_default_str();
    cmd->add_option("-o,--output", o->output, "Output: table (markdown) or json")
        ->check(CLI::IsMember({"table", "json"}))
        ->capture_default_str();
    cmd->add_option("--tg-prompt", b.tg_prompt, "Prompt tokens before the tg test")
        ->check(CLI::Range(int64_t{1}, int64_t{1} << 20))
        ->capture_default_str();
    cmd->add_option("--batch-prompt", b.batch_prompt,
                    "Prompt tokens per sequence before batched generation")
        ->check(CLI::Range(int64_t{1}, int64_t{1} << 20))
        ->capture_default_str();
    o->kv_type.add_to(*cmd);
    cmd->add_option("--peak-gbs", o->peak_gbs,
                    "This machine's read bandwidth in GB/s (skips measuring it)")
        ->check(finite_number() & CLI::PositiveNumber);
    cmd->add_option("--peak-gflops", o->peak_gflops,
                    "This machine's peak GFLOP/s for the model's weights (skips measuring it)")
        ->check(finite_number() & CLI::PositiveNumber);
    cmd->add_option("--bw-size", o->bandwidth_size, "Buffer the bandwidth test reads, e.g. 1G")
        ->check(size_value())
        ->capture_default_str();
    add_isa_option(*cmd, o->isa);
    o->spec.add_to(*cmd);
    cmd->add_option("--tg-file", o->tg_file,
                    "Start the tg test from this text (special tokens parsed) instead of "
                    "synthetic tokens");
    cmd->callback([o] { run(*o); });
}

}  // namespace kite::cli
