#include "cli/isa_option.h"

#include <fmt/format.h>

#include "kernels/cpu/isa.h"
#include "kernels/gemm/packed_gemm.h"

namespace kite::cli {

void add_isa_option(CLI::App& cmd, std::string& level) {
    cmd.add_option("--isa", level,
                   "Cap the kernels' instruction set: scalar, avx2, avxvnni, avx512 or amx "
                   "(default: the best this CPU has, or KITE_ISA)")
        ->check(CLI::IsMember({"scalar", "avx2", "avxvnni", "avx512", "amx"}));
}

void apply_isa_option(const std::string& level) {
    if (level.empty()) return;
    set_isa_cap(*parse_isa(level));  // the flag's check admits only names parse_isa knows
}

const char* bf16_kernel_name() {
    return bf16_kernel() == Bf16Kernel::Dot ? "vdpbf16ps" : "fp32 FMA";
}

std::string isa_line() {
    return fmt::format("{} (this CPU: up to {})", isa_name(active_isa()), isa_name(detected_isa()));
}

std::string kernels_line(TensorType weight_type) {
    std::string line = isa_line();
    if (weight_type == TensorType::BF16)
        line += fmt::format("; BF16 weights multiply with {}", bf16_kernel_name());
    return line;
}

}  // namespace kite::cli
