// Calibrated keys (kv/key_calibration.h): the statistics give each channel its mean and the
// scale (E[q^2] / Var[k])^(1/4); a cache stores keys centred and scaled, reads them back as
// they were, and attention over them gives the scores of the keys themselves, far closer than
// the same block type without the calibration when one channel carries a large offset.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "core/error.h"
#include "core/thread_pool.h"
#include "kernels/attention.h"
#include "kv/key_calibration.h"
#include "kv/kv_cache.h"

namespace kite {
namespace {

TEST(KeyStatistics, MeanAndScalePerChannel) {
    // One layer, 2 query heads on 1 KV head of 4 channels. Channel j's key is
    // offset[j] +- spread[j] and its queries +- reach[j] (head 1: twice head 0's, so the mean
    // square over the group is 2.5 reach^2).
    const float offset[] = {3, -1, 0, 10}, spread[] = {1, 2, 0.5f, 4}, reach[] = {1, 1, 2, 8};
    KeyStatistics stats(1, 2, 1, 4);
    for (int t = 0; t < 6; ++t) {
        const float sign = t % 2 ? 1.0f : -1.0f;
        float k[4], q[8];
        for (int j = 0; j < 4; ++j) {
            k[j] = offset[j] + sign * spread[j];
            q[j] = sign * reach[j];
            q[4 + j] = -2 * sign * reach[j];
        }
        stats.add(0, q, k);
    }
    const KeyCalibration c = stats.calibration();
    ASSERT_EQ(c.width, 4);
    double log_sum = 0;
    for (int j = 0; j < 4; ++j) {
        EXPECT_NEAR(c.mean[j], offset[j], 1e-5);
        EXPECT_FLOAT_EQ(c.query_scale[j] * c.scale[j], 1.0f);
        log_sum += std::log(c.scale[j]);
        // Ratios to channel 0: (reach^2 / spread^2)^(1/4) = sqrt(reach / spread), but for the
        // floors (a millionth of the layer's mean) under both.
        const double ratio = std::sqrt((reach[j] / spread[j]) / (reach[0] / spread[0]));
        EXPECT_NEAR(c.scale[j] / c.scale[0], ratio, 1e-4 * ratio) << j;
    }
    EXPECT_NEAR(log_sum, 0.0, 1e-5);  // geometric mean 1
}

TEST(KeyStatistics, NoTokensIsAnError) {
    KeyStatistics stats(2, 1, 1, 4);
    const float q[4] = {}, k[4] = {};
    stats.add(0, q, k);
    EXPECT_THROW(stats.calibration(), Error);  // layer 1 saw nothing
}

// Keys like a Qwen2 model's: most channels ~N(0, 1), one with a large offset and spread.
struct Keys {
    static constexpr int64_t kDim = 64, kTokens = 40;
    std::vector<float> k, v, q;

    explicit Keys(uint32_t seed) : k(kTokens * kDim), v(kTokens * kDim), q(2 * kDim) {
        std::mt19937 rng(seed);
        std::normal_distribution<float> normal(0.0f, 1.0f);
        for (int64_t t = 0; t < kTokens; ++t)
            for (int64_t j = 0; j < kDim; ++j) {
                k[t * kDim + j] = j == 5 ? 200.0f + 20.0f * normal(rng) : normal(rng);
                v[t * kDim + j] = normal(rng);
            }
        for (float& x : q) x = 2.0f * normal(rng);
    }

    KeyCalibration calibration() const {
        KeyStatistics stats(1, 2, 1, kDim);
        for (int64_t t = 0; t < kTokens; ++t) stats.add(0, q.data(), &k[t * kDim]);
        return stats.calibration();
    }

    // Attention of both query heads over all tokens, through a cache of `types`.
    std::vector<float> attend(KvTypes types, KeyCalibration calibration) const {
        const KvCacheShape shape{1, 1, kDim};
        KvCache kv(shape, types, 3, 16, std::move(calibration));
        for (int64_t t = 0; t < kTokens; ++t) kv.write(0, t, &k[t * kDim], &v[t * kDim]);
        const int32_t table[] = {0, 1, 2};
        const int32_t* tables[] = {table};
        const int64_t position = kTokens - 1;
        std::vector<float> out(2 * kDim);
        ThreadPool pool(1);
        paged_attention(kv.layer(0), {2, 1, kDim, 0}, q.data(), out.data(), 1, &position, nullptr,
                        tables, 1.0f / std::sqrt(float(kDim)), pool);
        return out;
    }
};

double max_difference(const std::vector<float>& a, const std::vector<float>& b) {
    double d = 0;
    for (size_t i = 0; i < a.size(); ++i) d = std::max(d, double(std::fabs(a[i] - b[i])));
    return d;
}

TEST(KeyCalibration, CacheReadsKeysBackAsWritten) {
    const Keys keys(1);
    for (TensorType type : {TensorType::Q8_0, TensorType::Q4_0}) {
        KvCache kv({1, 1, Keys::kDim}, type, 1, 16, keys.calibration());
        EXPECT_NE(kv.layer(0).k.query_scale, nullptr);
        kv.write(0, 3, &keys.k[0], &keys.v[0]);
        std::vector<float> back(Keys::kDim);
        kv.read_keys(0, 3, back.data());
        for (int64_t j = 0; j < Keys::kDim; ++j)
            EXPECT_NEAR(back[j], keys.k[j], type == TensorType::Q8_0 ? 0.1 : 1.0)
                << tensor_type_name(type) << " channel " << j;
    }
    // f16 and f32 keys are stored as they are, calibration or not.
    KvCache f16({1, 1, Keys::kDim}, TensorType::F16, 1, 16, keys.calibration());
    EXPECT_EQ(f16.layer(0).k.query_scale, nullptr);
}

TEST(KeyCalibration, AttentionOverCalibratedKeysKeepsTheScores) {
    for (uint32_t seed : {1u, 2u, 3u}) {
        const Keys keys(seed);
        const std::vector<float> exact = keys.attend(TensorType::F32, {});
        for (TensorType type : {TensorType::Q8_0, TensorType::Q4_0}) {
            // Values in f32: only the keys' rounding differs.
            const KvTypes types{type, TensorType::F32};
            const double plain = max_difference(keys.attend(types, {}), exact);
            const double calibrated = max_difference(keys.attend(types, keys.calibration()), exact);
            std::printf("%s seed %u: max |error| %.4f plain, %.4f calibrated\n",
                        tensor_type_name(type).c_str(), seed, plain, calibrated);
            EXPECT_LT(calibrated, plain / 4) << tensor_type_name(type) << " seed " << seed;
            EXPECT_LT(calibrated, type == TensorType::Q8_0 ? 0.05 : 0.5);
        }
    }
}

TEST(KeyCalibration, AWrongSizeIsRefused) {
    const Keys keys(1);
    EXPECT_THROW(KvCache({2, 1, Keys::kDim}, TensorType::Q8_0, 1, 16, keys.calibration()), Error);
}

}  // namespace
}  // namespace kite
