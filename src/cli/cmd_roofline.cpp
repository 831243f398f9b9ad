// `kite roofline`: this machine's peak read bandwidth and compute (measured by short
// microbenchmarks), the threshold intensity C/W of each, and, for a model, the arithmetic
// intensity of prefill, decode and attention, against this machine and named accelerators.
// The compute peaks are those of the active instruction-set level (--isa caps it).
#include <cstdlib>
#include <memory>
#include <string>

#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/engine_options.h"
#include "cli/flag_checks.h"
#include "cli/isa_option.h"
#include "core/error.h"
#include "kernels/cpu/isa.h"
#include "kernels/gemm/packed_gemm.h"
#include "kv/kv_cache.h"
#include "tools/model_cost.h"
#include "tools/roofline.h"

namespace kite::cli {

namespace {

struct RooflineOptions {
    std::string model;
    int threads = 0;
    int64_t context = 1024;
    KvTypeOptions kv_type;
    std::string bandwidth_size = "1G";
    std::string isa;  // --isa: empty for the default level
};

std::string cpu_flags(const CpuFeatures& f) {
    std::string s;
    for (auto [on, name] : {std::pair{f.avx2, "avx2"},
                            {f.avx512, "avx512"},
                            {f.avx512_vnni, "avx512-vnni"},
                            {f.avx512_bf16, "avx512-bf16"},
                            {f.avx_vnni, "avx-vnni"},
                            {f.amx_int8, "amx-int8"},
                            {f.amx_bf16, "amx-bf16"}})
        if (on) s += (s.empty() ? "" : " ") + std::string(name);
    return s.empty() ? "no SIMD kernels" : s;
}

// The model the user meant: -m, else $KITE_MODEL or the installed default; "" if none.
std::string find_model(const std::string& flag) {
    if (!flag.empty()) return resolve_model_path(flag);
    try {
        return resolve_model_path("");
    } catch (const Error&) {
        return "";
    }
}

std::string si(double v, const char* unit) {
    if (v >= 1e12) return fmt::format("{:.2f} T{}", v / 1e12, unit);
    if (v >= 1e9) return fmt::format("{:.2f} G{}", v / 1e9, unit);
    if (v >= 1e6) return fmt::format("{:.2f} M{}", v / 1e6, unit);
    if (v >= 1e3) return fmt::format("{:.2f} k{}", v / 1e3, unit);
    return fmt::format("{:.0f} {}", v, unit);
}

// The verdict follows the ratio as printed, so that 0.996 (shown as "1x") never reads
// "memory (1x)": at the threshold either verdict is right, but not one the number contradicts.
std::string side(double ai, double threshold) {
    const double x = ai / threshold;
    const std::string shown = x >= 10 ? fmt::format("{:.0f}", x) : fmt::format("{:.2g}", x);
    return fmt::format("{} ({}x)", std::stod(shown) < 1 ? "memory" : "compute", shown);
}

void print_case(const std::string& label, const PassCost& per_token, double here) {
    const double ai = per_token.intensity();
    std::string line =
        fmt::format("  {:<24} {:>13} {:>13} {:>9.2f}  {:<18}", label, si(per_token.flops, "FLOP"),
                    si(per_token.bytes, "B"), ai, side(ai, here));
    for (const Accelerator& a : kAccelerators)
        line += fmt::format(" {:<18}", side(ai, a.threshold()));
    fmt::print("{}\n", line);
}

void print_header(const char* first) {
    std::string line = fmt::format("  {:<24} {:>13} {:>13} {:>9}  {:<18}", first, "FLOPs/token",
                                   "bytes/token", "AI", "this machine");
    for (const Accelerator& a : kAccelerators) line += fmt::format(" {:<18}", a.name);
    fmt::print("{}\n", line);
}

// An encoder (embedding model): one pass per batch of inputs, no KV cache, no LM head. Its
// FLOPs grow with the input's length (attention is quadratic in it); the bytes are the
// weights, read once per batch of kEncoderBatch tokens, and an embedding row per token.
void print_encoder(const ModelConfig& c, const ModelCost& m, double peak_gflops, double threshold) {
    constexpr int64_t kEncoderBatch = 2048;  // Model::embed's batch
    fmt::print("\nencoder ({} layers, H = {}, d_h = {}; inputs in batches of {} tokens):\n",
               c.n_layers, c.n_heads, c.head_dim, kEncoderBatch);
    fmt::print(
        "  encoder FLOPs = 2*P_layers*n + 4*L*H*d_h*n^2 = {:.6g}*n + {:.6g}*n^2 per input "
        "of n tokens\n",
        2.0 * static_cast<double>(m.layer_params),
        4.0 * static_cast<double>(c.n_layers * c.n_heads * c.head_dim));
    fmt::print("  bytes = W / {} + E_row per token\n", kEncoderBatch);
    fmt::print("  this machine's weights' peak: {:.1f} GFLOP/s\n", peak_gflops);
    print_header("input");
    const double bytes = static_cast<double>(m.weight_bytes()) / kEncoderBatch +
                         static_cast<double>(m.embd_row_bytes);
    for (int64_t n : {16, 64, 128, 256, 512, 2048})
        print_case(fmt::format("n={}", n), {m.encoder_flops(n) / static_cast<double>(n), bytes},
                   threshold);
}

void print_model(const std::string& path, const MachinePeaks& peaks, const RooflineOptions& o) {
    std::unique_ptr<GgufFile> file = GgufFile::open(path);
    const ModelConfig c = read_model_config(*file);
    const ModelCost m = model_cost(*file, c);
    const TensorType wtype = main_weight_type(*file);
    const KvTypes kv = o.kv_type.types();
    const double b = kv_bytes_per_element(kv);
    const std::string kv_name = kv_types_name(kv);
    const ComputeUse use = compute_use_for(wtype, active_isa());
    const double matmul_gflops = peaks.gflops(use.kind) / use.products;
    const double matmul_threshold = matmul_gflops / peaks.read_gbs;
    const double attn_threshold = peaks.gflops(ComputeKind::Fp32Fma) / peaks.read_gbs;

    fmt::print("\nmodel: {} ({}{}, {} weights)\n", path, c.name.empty() ? "" : c.name + ", ",
               c.architecture, tensor_type_name(wtype));
    fmt::print("  P_layers = {} matrix parameters in {} layers, P_out = {} (LM head{})\n",
               m.layer_params, c.n_layers, m.output_params,
               m.tied_output ? ", tied to the embedding" : "");
    fmt::print("  W = {} bytes read whole per pass ({} layers + {} LM head and output norm)\n",
               m.weight_bytes(), m.layer_bytes, m.output_bytes);
    std::string by_type;
    for (const auto& [type, tb] : m.weight_types)
        by_type += fmt::format("{}{} {} bytes ({:.2f} bits/weight)", by_type.empty() ? "" : ", ",
                               tensor_type_name(type), tb.bytes, tb.bits_per_weight());
    fmt::print("  W by type: {}\n", by_type);
    fmt::print("  E_row = {} bytes (one embedding row per token)\n", m.embd_row_bytes);
    if (c.arch->encoder) return print_encoder(c, m, matmul_gflops, matmul_threshold);
    fmt::print(
        "  M_kv = 2*b*L*H_kv*d_h = 2*{:g}*{}*{}*{} = {:.0f} bytes per cached token ({} KV)\n", b,
        c.n_layers, c.n_kv_heads, c.head_dim, m.kv_bytes_per_token(b), kv_name);
    fmt::print("formulas, for B sequences of q new tokens after s cached (T = B*q tokens):\n");
    fmt::print("  FLOPs = 2*P_layers*T + 2*P_out*B + B*4*L*H*d_h*(q*s + q(q+1)/2)\n");
    fmt::print("  bytes = W + T*E_row + B*(s+q)*M_kv        AI = FLOPs / bytes\n");
    fmt::print(
        "this machine's threshold for {} weights: {} ({}) C/W = {:.1f} FLOPs/byte; "
        "accelerators: dense bf16 C/W (same bytes)\n",
        tensor_type_name(wtype), compute_kind_name(use.kind),
        use.products > 1
            ? fmt::format("{}, {} products per multiply-add", peaks.isa(use.kind), use.products)
            : std::string(peaks.isa(use.kind)),
        matmul_threshold);
    print_header("case");
    for (int64_t q : {1, 16, 128, 512})
        print_case(fmt::format("prefill q={}", q), m.pass(1, q, 0, b) / static_cast<double>(q),
                   matmul_threshold);
    for (int64_t batch : {1, 4, 16, 32})
        print_case(fmt::format("decode B={} (s={})", batch, o.context),
                   m.pass(batch, 1, o.context, b) / static_cast<double>(batch), matmul_threshold);

    const int64_t g = c.n_heads / c.n_kv_heads;
    fmt::print(
        "\nattention alone, q new tokens over s cached ({} KV, b = {:g}, g = H/H_kv = {}):\n",
        kv_name, b, g);
    fmt::print("  FLOPs = 4*L*H*d_h*(q*s + q(q+1)/2), bytes = (s+q)*M_kv\n");
    fmt::print("  AI = (2g/b) * (q*s + q(q+1)/2)/(s+q) ~ (2g/b) * s*q/(s+q) = {:g} * s*q/(s+q)\n",
               2.0 * static_cast<double>(g) / b);
    fmt::print("  this machine's threshold: fp32 FMA ({}) C/W = {:.1f} FLOPs/byte\n",
               peaks.isa(ComputeKind::Fp32Fma), attn_threshold);
    print_header("attention");
    for (auto [q, s] : {std::pair<int64_t, int64_t>{1, 1024},
                        {1, 8192},
                        {16, 1024},
                        {128, 1024},
                        {512, 0},
                        {512, 4096}}) {
        print_case(fmt::format("q={} s={}", q, s), m.attention(q, s, b) / static_cast<double>(q),
                   attn_threshold);
    }
}

void run(const RooflineOptions& o) {
    apply_isa_option(o.isa);
    // Find the model before a second of measuring, so a bad path fails at once.
    const std::string model = find_model(o.model);
    if (!model.empty()) GgufFile::open(model);
    ThreadPool pool(o.threads > 0 ? o.threads : ThreadPool::default_threads());
    PeakOptions po;
    po.bandwidth_bytes = parse_bytes(o.bandwidth_size);
    const MachinePeaks peaks = measure_machine_peaks(pool, po);

    fmt::print("machine: {}, {} threads ({})\n", cpu_model_name(), pool.size(),
               cpu_flags(cpu_features()));
    fmt::print("kernels: {}\n", isa_line());
    fmt::print("peak read bandwidth W = {:.2f} GB/s ({} MiB buffer, {} loads, best of {})\n",
               peaks.read_gbs, peaks.bandwidth.buffer_bytes >> 20, peaks.bandwidth.isa,
               peaks.bandwidth.runs);
    fmt::print("peak compute C (a multiply-add counts 2):\n");
    fmt::print("  {:<9} {:<13} {:<25} {:>12} {:>22}\n", "kind", "isa", "instruction", "GFLOP/s",
               "threshold C/W (FLOP/B)");
    for (const ComputeResult& r : peaks.compute)
        fmt::print("  {:<9} {:<13} {:<25} {:>12.1f} {:>22.1f}\n", compute_kind_name(r.kind), r.isa,
                   r.instruction, r.ops_per_second / 1e9, r.ops_per_second / 1e9 / peaks.read_gbs);
    if (active_isa() >= Isa::Amx && amx_float_tiles())
        fmt::print(
            "  float weights multiply on bf16 tiles in prompts (F32, F16: three products "
            "each), as on avx512 in decode\n");
    if (cpu_features().avx512_bf16)
        fmt::print("  BF16 weights multiply with {}{}\n",
                   bf16_kernel() == Bf16Kernel::Dot
                       ? "vdpbf16ps (faster than fp32 FMA on one core here)"
                       : "fp32 FMA (vdpbf16ps is slower on one core here, or capped below "
                         "avx512)",
                   active_isa() >= Isa::Amx && amx_float_tiles() ? " in decode" : "");
    fmt::print("accelerators (dense bf16):\n");
    for (const Accelerator& a : kAccelerators)
        fmt::print("  {:<9} C = {:.1f} TFLOP/s, W = {:.2f} TB/s, threshold C/W = {:.1f} FLOP/B\n",
                   a.name, a.tflops, a.tbs, a.threshold());
    if (model.empty())
        fmt::print("\n(no model: pass -m MODEL for the model's arithmetic intensities)\n");
    else
        print_model(model, peaks, o);
}

}  // namespace

void add_roofline_command(CLI::App& app) {
    auto* cmd = app.add_subcommand(
        "roofline", "Measure this machine's peak bandwidth and compute; a model's intensities");
    auto o = std::make_shared<RooflineOptions>();
    cmd->add_option("-m,--model", o->model,
                    "GGUF model file (default: the installed default model, if any)");
    cmd->add_option("-t,--threads", o->threads, "Threads (default: physical cores)")
        ->check(CLI::Range(0, 1024));
    cmd->add_option("-c,--ctx", o->context, "Cached tokens per sequence in the decode rows")
        ->check(CLI::Range(int64_t{0}, int64_t{1} << 24))
        ->capture_default_str();
    o->kv_type.add_to(*cmd);
    cmd->add_option("--bw-size", o->bandwidth_size, "Buffer the bandwidth test reads, e.g. 1G")
        ->check(size_value())
        ->capture_default_str();
    add_isa_option(*cmd, o->isa);
    cmd->callback([o] { run(*o); });
}

}  // namespace kite::cli
