// Number formats: f16/bf16 conversions and the block quantizers' round trips.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "quant/blocks.h"
#include "quant/convert.h"
#include "quant/fp16.h"

namespace kite {
namespace {

TEST(Fp16, EveryHalfRoundTripsThroughFloat) {
    for (uint32_t h = 0; h < 0x10000; ++h) {
        float f = f16_to_f32(static_cast<uint16_t>(h));
        if (std::isnan(f)) continue;
        EXPECT_EQ(f32_to_f16(f), h) << "half " << h;
    }
}

TEST(Fp16, KnownValuesAndRounding) {
    EXPECT_EQ(f16_to_f32(0x3c00), 1.0f);
    EXPECT_EQ(f16_to_f32(0xc000), -2.0f);
    EXPECT_EQ(f16_to_f32(0x7bff), 65504.0f);
    EXPECT_EQ(f16_to_f32(0x0001), std::ldexp(1.0f, -24));
    EXPECT_EQ(f32_to_f16(65520.0f), 0x7c00);                          // rounds up to infinity
    EXPECT_EQ(f32_to_f16(1.0f + std::ldexp(1.0f, -11)), 0x3c00);      // tie to even (down)
    EXPECT_EQ(f32_to_f16(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);  // tie to even (up)
    EXPECT_EQ(f32_to_f16(std::ldexp(1.0f, -25)), 0x0000);             // tie to even: zero
    EXPECT_EQ(f32_to_f16(std::ldexp(3.0f, -25)), 0x0002);
    EXPECT_TRUE(std::isnan(f16_to_f32(f32_to_f16(NAN))));
}

TEST(Bf16, RoundsToNearestEven) {
    EXPECT_EQ(f32_to_bf16(1.0f), 0x3f80);
    EXPECT_EQ(bf16_to_f32(0x3f80), 1.0f);
    EXPECT_EQ(f32_to_bf16(1.0f + std::ldexp(1.0f, -8)), 0x3f80);      // tie, even stays
    EXPECT_EQ(f32_to_bf16(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3f82);  // tie, rounds up
}

std::vector<float> random_row(size_t n, unsigned seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> dist(0.0f, 1.0f);
    std::vector<float> x(n);
    for (float& v : x) v = dist(rng);
    return x;
}

// Worst error of a block format is half a quantization step of the block's range.
void expect_round_trip(TensorType type, float max_step_fraction) {
    const size_t n = 32 * 64;
    std::vector<float> x = random_row(n, 7), y(n);
    std::vector<uint8_t> q(row_bytes(type, n));
    quantize_row(type, x.data(), q.data(), n);
    dequantize_row(type, q.data(), y.data(), n);
    for (size_t b = 0; b < n / 32; ++b) {
        float lo = x[b * 32], hi = x[b * 32];
        for (size_t j = 0; j < 32; ++j)
            lo = std::min(lo, x[b * 32 + j]), hi = std::max(hi, x[b * 32 + j]);
        float range = hi - lo;
        for (size_t j = 0; j < 32; ++j)
            ASSERT_NEAR(y[b * 32 + j], x[b * 32 + j], range * max_step_fraction)
                << tensor_type_name(type) << " block " << b;
    }
}

TEST(Blocks, RoundTripsWithinHalfAStep) {
    expect_round_trip(TensorType::Q8_0, 0.5f / 127 + 1e-3f);
    expect_round_trip(TensorType::Q4_1, 0.5f / 15 + 2e-3f);
    expect_round_trip(TensorType::Q4_0, 1.0f / 8 + 2e-3f);
    expect_round_trip(TensorType::F16, 1e-3f);
    expect_round_trip(TensorType::BF16, 1e-2f);
}

TEST(Blocks, KnownEncoding) {
    // One Q8_0 block of 0..31: amax 31 -> d = 31/127, q_j = round(j * 127 / 31).
    std::vector<float> x(32);
    for (int j = 0; j < 32; ++j) x[j] = float(j);
    BlockQ8_0 b8;
    quantize_row_q8_0(x.data(), &b8, 32);
    EXPECT_EQ(b8.d, f32_to_f16(31.0f / 127.0f));
    EXPECT_EQ(b8.qs[31], 127);
    EXPECT_EQ(b8.qs[1], 4);  // 127/31 = 4.097
    // Q4_1 of the same: min 0, d = 31/15; the first byte holds q0 (=0) and q16 (=
    // round(16*15/31)=8).
    BlockQ4_1 b41;
    quantize_row_q4_1(x.data(), &b41, 32);
    EXPECT_EQ(b41.m, 0);
    EXPECT_EQ(b41.qs[0], 8 << 4);
    // Q4_0: largest magnitude 31 maps to -8, so d = -31/8 and x=0 stores 8.
    BlockQ4_0 b40;
    quantize_row_q4_0(x.data(), &b40, 32);
    EXPECT_EQ(f16_to_f32(b40.d), f16_to_f32(f32_to_f16(-31.0f / 8)));
    EXPECT_EQ(b40.qs[0] & 0x0f, 8);
}

}  // namespace
}  // namespace kite
