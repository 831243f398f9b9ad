// Software prefetch for the tiles that read weights from memory: the first token tile over a
// range of groups (the later ones find the same bytes in cache). Decode and the few tokens of
// a speculative verify step read every weight byte once, from several streams at a time (a
// tile's groups, each with its quants and scales); the hardware prefetchers alone leave a
// core well short of its streaming bandwidth there, so those tiles also ask for the bytes they
// will read a fixed distance ahead.
// A prefetch never faults, so addresses past the end of a buffer are harmless.
#pragma once

#include <cstdint>

namespace kite::packed {

constexpr int64_t kCacheLine = 64;

// Each prefetch of the block read next (into L1) may also ask for the bytes kFar past it
// into L2 (0: not). With one block ahead alone a core waits on memory for part of every
// block: on Zen 1 a Q4_K decode tile streamed 7.5 GB/s from memory and 10.5 from L2; with
// bytes 12 KiB ahead already in L2 it streamed 10.7 (bench/RESULTS.md).
template <int64_t kFar>
inline void prefetch_line(const uint8_t* p) {
    __builtin_prefetch(p);
    if constexpr (kFar > 0) __builtin_prefetch(p + kFar, 0, 1);
}

// The `bytes` at p.
template <int64_t kFar>
inline void prefetch_bytes(const uint8_t* p, int64_t bytes) {
    for (int64_t off = 0; off < bytes; off += kCacheLine) prefetch_line<kFar>(p + off);
}

// Part `step` of kSteps equal parts of the kBytes at p: a loop of kSteps iterations calls it
// once in each to spread a whole block's prefetches over its work. The sizes are constants so
// that the tiles' loops around it still unroll (a loop of runtime length here kept GCC from
// unrolling them and put their registers on the stack).
template <int64_t kBytes, int64_t kSteps, int64_t kFar>
inline void prefetch_part(const uint8_t* p, int64_t step) {
    constexpr int64_t kLines = (kBytes + kCacheLine - 1) / kCacheLine;
    constexpr int64_t kLinesPerStep = (kLines + kSteps - 1) / kSteps;
    for (int64_t i = 0; i < kLinesPerStep; ++i)
        prefetch_line<kFar>(p + (step * kLinesPerStep + i) * kCacheLine);
}

}  // namespace kite::packed
