#!/usr/bin/env python3
"""Writes tests/fixtures/dequant/TYPE.bin: random blocks of a ggml type and the f32 values
PyPI's `gguf` package (gguf.quants.dequantize) gives for them, which Kite's row dequantizers
must equal bit for bit.

    make-dequant-fixtures.py OUT_DIR      (run through make-dequant-fixtures.sh, which pins gguf)

File layout (little-endian): u32 block count, then the blocks' bytes, then one f32 per weight.
The block bytes are uniformly random except the f16 scale fields, which are random finite
halves (any sign and exponent, subnormals included; never NaN or infinity).
"""

import os
import sys

import numpy as np
from gguf import GGMLQuantizationType as T
from gguf.constants import GGML_QUANT_SIZES
from gguf.quants import dequantize

# type -> (byte offsets of the f16 fields in a block, blocks in the fixture)
TYPES = {
    T.Q4_0: ([0], 16),
    T.Q4_1: ([0, 2], 16),
    T.Q5_0: ([0], 16),
    T.Q5_1: ([0, 2], 16),
    T.Q8_0: ([0], 16),
    T.Q2_K: ([80, 82], 4),
    T.Q3_K: ([108], 4),
    T.Q4_K: ([0, 2], 4),
    T.Q5_K: ([0, 2], 4),
    T.Q6_K: ([208], 4),
    T.IQ4_NL: ([0], 16),
    T.IQ4_XS: ([0], 4),
}


def random_finite_halves(rng, n):
    h = rng.integers(0, 1 << 16, size=n, dtype=np.uint32)
    # An all-ones exponent (infinity, NaN) becomes the largest finite exponent.
    h = np.where((h & 0x7C00) == 0x7C00, h & ~np.uint32(0x0400), h)
    return h.astype(np.uint16)


def main():
    out_dir = sys.argv[1]
    os.makedirs(out_dir, exist_ok=True)
    rng = np.random.default_rng(20250610)
    for qtype, (half_offsets, n_blocks) in TYPES.items():
        block_size, block_bytes = GGML_QUANT_SIZES[qtype]
        blocks = rng.integers(0, 256, size=(n_blocks, block_bytes), dtype=np.uint8)
        for off in half_offsets:
            blocks[:, off:off + 2] = random_finite_halves(rng, n_blocks).view(np.uint8).reshape(-1, 2)
        values = dequantize(blocks.reshape(-1), qtype).astype(np.float32).reshape(-1)
        assert values.size == n_blocks * block_size and np.all(np.isfinite(values))
        path = os.path.join(out_dir, f"{qtype.name}.bin")
        with open(path, "wb") as f:
            f.write(np.uint32(n_blocks).tobytes())
            f.write(blocks.tobytes())
            f.write(values.astype("<f4").tobytes())
        print(f"wrote {path}: {n_blocks} blocks", file=sys.stderr)


if __name__ == "__main__":
    main()
