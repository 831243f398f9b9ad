// The AMX tile configurations of this program. A thread keeps the one it loaded last; a kernel
// asks for its own at entry, which costs a compare unless another kernel ran in between on the
// thread (a tile configuration is loaded per thread, never per tile product). Kernels keep
// nothing in tiles between calls.
//
// The packed GEMM's (configure_amx_tiles):
//   tmm0, tmm1  int32 sums: 16 rows x 16 columns (64 bytes)
//   tmm2, tmm3  a 32-column block: 16 rows x 32 bytes of activations, 8 x 64 of weights
//   tmm4, tmm5  the same, for the next block while one runs
//   tmm6, tmm7  not configured
// The full one (configure_full_amx_tiles): all 8 tiles 16 rows x 64 bytes, for the bf16
// attention tiles (16 x 32 bf16 times 32 x 16), the float and K-quant weight tiles and the
// peak loop.
#pragma once

namespace kite {

// Each loads its configuration on the calling thread unless it is the one loaded. Only where
// active_isa() is Isa::Amx (the process has the tile state).
void configure_amx_tiles();
void configure_full_amx_tiles();

}  // namespace kite
