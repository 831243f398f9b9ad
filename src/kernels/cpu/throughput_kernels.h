// The instruction loops that measure this CPU's peaks: per instruction set, a read loop over a
// buffer and compute loops of independent accumulator chains (fp32 FMA, bf16 dot, int8 dot).
// tools/peaks times them over the thread pool for the roofline; the packed GEMM asks one
// question of them at load (whether bf16 dots outrun f32 FMAs on this CPU).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/isa.h"

namespace kite {

enum class ComputeKind { Fp32Fma, Bf16Dot, Int8Dot };
const char* compute_kind_name(ComputeKind kind);  // "fp32 FMA", "bf16 dot", "int8 dot"

// `iters` iterations of a fixed number of independent instructions; the result goes to *out.
using ThroughputFn = void (*)(int64_t iters, float seed, float* out);

struct ThroughputKernel {
    ComputeKind kind;
    Isa level;     // the lowest instruction-set level whose kernels use this instruction
    bool cpu_has;  // beyond the level: its own CPU feature, where it needs one
    const char* isa;
    const char* instruction;
    double ops_per_iter;  // multiply + add = 2 operations
    ThroughputFn fn;
};

// The kernels of the active instruction-set level and the levels below it that this CPU
// runs: with KITE_ISA=avx2 the peaks are those an AVX2-only CPU's kernels could reach.
std::vector<ThroughputKernel> available_throughput_kernels();

// Xors every 64-byte line of p[0, n) (n a multiple of 256, p 64-byte aligned) into a word.
using ReadFn = uint64_t (*)(const uint8_t* p, size_t n);
struct ReadKernel {
    ReadFn fn;
    const char* isa;
};
// The widest loads of the active level.
ReadKernel widest_read_kernel();

// Keeps a loop's result alive so the compiler cannot drop the loop; a float by its bits.
void keep_result(uint64_t v);
void keep_result(float v);

// Whether vdpbf16ps multiplies faster than f32 FMA on one core of this CPU, in products
// per second (it does twice the products per instruction, but some CPUs issue it at a
// fraction of FMA's rate). About 2 ms, timed on the calling thread; false without AVX-512 BF16
// or below the avx512 level.
bool bf16_dot_outruns_fp32_fma();

}  // namespace kite
