// `kite quantize IN OUT TYPE`: converts a model's weights to another type, like
// llama-quantize --pure, or to one of its mixes (Q4_K_M, Q5_K_M, Q6_K); progress and a summary
// go to stderr.
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>

#include <fmt/format.h>

#include "cli/commands.h"
#include "quant/convert.h"
#include "quant/quantize_file.h"

namespace kite::cli {

namespace {

struct QuantizeArgs {
    std::string in, out, type;
    unsigned threads = 0;
};

std::string mib(uint64_t bytes) {
    return fmt::format("{:.1f} MiB", bytes / double(1 << 20));
}

std::string shape(const std::vector<uint64_t>& dims) {
    std::string s;
    for (uint64_t d : dims) s += (s.empty() ? "" : " x ") + std::to_string(d);
    return "[" + s + "]";
}

void run_quantize(const QuantizeArgs& args) {
    QuantizeOptions options;
    options.mix = find_quant_mix(args.type);
    if (!options.mix) options.type = parse_quantize_type(args.type);
    options.n_threads = args.threads;
    const std::string wanted = options.mix ? "their chosen types'" : tensor_type_name(options.type);
    options.on_tensor = [&](size_t i, size_t count, const TensorPlan& p) {
        std::string note;
        if (p.fallback)
            note = fmt::format("  (rows of {} do not fill {} blocks: {} instead)", p.dims[0],
                               tensor_type_name(p.wanted), tensor_type_name(p.to));
        fmt::print(stderr, "[{:>{}}/{}] {:<32} {:>4} -> {:<4} {}{}\n", i + 1,
                   std::to_string(count).size(), count, p.name, tensor_type_name(p.from),
                   tensor_type_name(p.to), shape(p.dims), note);
    };
    auto start = std::chrono::steady_clock::now();
    QuantizeResult r = quantize_file(args.in, args.out, options);
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    fmt::print(stderr, "{}: {} tensors ({} converted), {} -> {} in {:.2f} s\n", args.out,
               r.n_tensors, r.n_converted, mib(r.bytes_before), mib(r.bytes_after), seconds);
    if (r.n_fallback)
        fmt::print(stderr,
                   "note: {} tensors written in another type: their rows do not fill {} blocks\n",
                   r.n_fallback, wanted);
}

}  // namespace

void add_quantize_command(CLI::App& app) {
    const std::string types = writable_type_names() + "; mixes " + quant_mix_names();
    auto* cmd = app.add_subcommand("quantize", "Convert a model's weights to " + types);
    auto args = std::make_shared<QuantizeArgs>();
    cmd->add_option("IN", args->in, "GGUF model to read")->required();
    cmd->add_option("OUT", args->out, "GGUF file to write (replaced if it exists)")->required();
    cmd->add_option("TYPE", args->type, types + " (any case)")->required();
    cmd->add_option("-t,--threads", args->threads, "Threads (default: one per CPU)")
        ->check(CLI::Range(1u, 1024u));
    cmd->callback([args] { run_quantize(*args); });
}

}  // namespace kite::cli
