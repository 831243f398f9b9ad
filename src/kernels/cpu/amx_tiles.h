// The one AMX tile configuration of this program, loaded once per thread: every tile kernel
// (the packed GEMM, the peak loop) uses these shapes, so no kernel reconfigures the tiles
// under another's feet.
//   tmm0, tmm1  int32 sums: 16 rows x 16 columns (64 bytes)
//   tmm2, tmm3  a 32-column block: 16 rows x 32 bytes of activations, 8 x 64 of weights
//   tmm4, tmm5  the same, for the next block while one runs
//   tmm6, tmm7  a 16-column block (Q6_K): 16 x 16 bytes and 4 x 64
#pragma once

namespace kite {

// Loads the configuration on the calling thread unless it already did. Only where
// active_isa() is Isa::Amx (the process has the tile state).
void configure_amx_tiles();

// For the peak loop alone: all 8 tiles 16 x 64 bytes, until restore_amx_tiles() loads the
// configuration above again (kernels keep nothing in tiles between calls).
void load_full_amx_tiles();
void restore_amx_tiles();

}  // namespace kite
