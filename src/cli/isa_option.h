// The --isa flag of `kite bench` and `kite roofline`: caps the instruction-set level the
// kernels run at, as KITE_ISA does, so that one machine can measure every level it supports
// (e.g. the AVX2 kernels on an AVX-512 CPU, to compare with llama.cpp built for AVX2). And the
// line both commands print to say which kernels ran.
#pragma once

#include <string>

#include <CLI/CLI.hpp>

#include "gguf/tensor_type.h"

namespace kite::cli {

// Adds --isa LEVEL to `cmd`; a level that is not scalar, avx2, avxvnni or avx512 is a usage
// error (exit code 2).
void add_isa_option(CLI::App& cmd, std::string& level);

// Caps the kernels at `level` (nothing when empty); throws kite::Error if this CPU lacks it.
// Call before a model loads: packed weights are laid out for the level active then.
void apply_isa_option(const std::string& level);

// The chosen BF16 matmul kernel: "vdpbf16ps" or "fp32 FMA" (bf16 widened to fp32).
const char* bf16_kernel_name();

// The level the kernels run at, e.g. "avx2 (this CPU: up to avx512)".
std::string isa_line();

// Which kernels run a model with these weights: isa_line(), plus the BF16 kernel for BF16.
std::string kernels_line(TensorType weight_type);

}  // namespace kite::cli
