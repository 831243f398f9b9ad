// Calibrated keys (kv/key_calibration.h): the statistics give each channel its mean and the
// scale (E[q^2] / Var[k])^(1/4), and the first-position key; a cache stores keys centred and
// scaled (position 0 apart), reads them back as they were, and attention over them gives the
// scores of the keys themselves, far closer than the same block type without the calibration
// when one channel carries a large offset and position 0 is an outlier.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "core/error.h"
#include "core/thread_pool.h"
#include "kernels/attention/attention.h"
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
        stats.add(0, t + 1, q, k);
    }
    const KeyCalibration c = stats.calibration();
    ASSERT_EQ(c.width, 4);
    for (float f : c.first) EXPECT_EQ(f, 0.0f);  // no token at position 0
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

TEST(KeyStatistics, FirstPositionKeyIsItsMeanLessTheMean) {
    KeyStatistics stats(1, 1, 1, 2);
    const float q[2] = {1, 1}, k[2] = {1, 2}, first_a[2] = {10, 0}, first_b[2] = {-4, 6};
    for (int t = 1; t <= 6; ++t) stats.add(0, t, q, k);
    // Position 0 counts towards the mean too: (6 * 1 + 10 - 4) / 8 and (6 * 2 + 0 + 6) / 8.
    stats.add(0, 0, q, first_a);
    stats.add(0, 0, q, first_b);
    const KeyCalibration c = stats.calibration();
    EXPECT_NEAR(c.mean[0], 1.5, 1e-6);
    EXPECT_NEAR(c.mean[1], 2.25, 1e-6);
    EXPECT_NEAR(c.first[0], 3 - 1.5, 1e-6);
    EXPECT_NEAR(c.first[1], 3 - 2.25, 1e-6);
}

TEST(KeyStatistics, NoTokensIsAnError) {
    KeyStatistics stats(2, 1, 1, 4);
    const float q[4] = {}, k[4] = {};
    stats.add(0, 0, q, k);
    EXPECT_THROW(stats.calibration(), Error);  // layer 1 saw nothing
}

double dot(const float* a, const float* b) {
    double s = 0;
    for (int64_t j = 0; j < 64; ++j) s += double(a[j]) * b[j];
    return s;
}

// x minus its projections on the span of `basis` (64 values each), by Gram-Schmidt.
void remove_projections(std::vector<float>& x, std::initializer_list<const float*> basis) {
    std::vector<std::vector<float>> done;
    for (const float* b : basis) {
        std::vector<float> e(b, b + 64);
        for (const auto& o : done) {
            const double c = dot(e.data(), o.data());
            for (int64_t j = 0; j < 64; ++j) e[j] -= static_cast<float>(c * o[j]);
        }
        const double n = std::sqrt(dot(e.data(), e.data()));
        for (float& v : e) v = static_cast<float>(v / n);
        const double c = dot(x.data(), e.data());
        for (int64_t j = 0; j < 64; ++j) x[j] -= static_cast<float>(c * e[j]);
        done.push_back(e);
    }
}

// Keys like a Qwen2 model's: most channels ~N(0, 1), one with a large offset and spread, and
// position 0 an attention sink: near head 0's query, and far from the other keys in a
// direction neither query reads (so its rounding alone moves the scores).
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
        std::vector<float> far(kDim);
        for (float& x : far) x = normal(rng);
        remove_projections(far, {&q[0], &q[kDim]});
        const double norm = std::sqrt(dot(far.data(), far.data()));
        for (int64_t j = 0; j < kDim; ++j)
            k[j] =
                (j == 5 ? 200.0f : 0.0f) + 0.1f * q[j] + static_cast<float>(100.0 * far[j] / norm);
    }

    KeyCalibration calibration() const {
        KeyStatistics stats(1, 2, 1, kDim);
        // The sink once among many tokens, as in a calibration text of some 450 tokens.
        stats.add(0, 0, q.data(), &k[0]);
        for (int rep = 0; rep < 10; ++rep)
            for (int64_t t = 1; t < kTokens; ++t) stats.add(0, t, q.data(), &k[t * kDim]);
        return stats.calibration();
    }

    // Attention of both query heads over all tokens, through a cache of `types`.
    std::vector<float> attend(KvTypes types, KeyCalibration calibration) const {
        const KvCacheShape shape{1, 1, kDim};
        KvCache kv(shape, types, 3, 16, std::move(calibration));
        for (int64_t t = 0; t < kTokens; ++t) kv.write(0, t, t, &k[t * kDim], &v[t * kDim]);
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
        EXPECT_NE(kv.layer(0).k.first_key, nullptr);
        // The sink at position 0 (stored apart) and a token at position 5.
        kv.write(0, 3, 0, &keys.k[0], &keys.v[0]);
        kv.write(0, 4, 5, &keys.k[5 * Keys::kDim], &keys.v[0]);
        std::vector<float> back(Keys::kDim);
        for (auto [slot, position] : {std::pair{3, 0}, {4, 5}}) {
            kv.read_keys(0, slot, position, back.data());
            for (int64_t j = 0; j < Keys::kDim; ++j)
                EXPECT_NEAR(back[j], keys.k[position * Keys::kDim + j],
                            type == TensorType::Q8_0 ? 0.1 : 1.0)
                    << tensor_type_name(type) << " position " << position << " channel " << j;
        }
    }
    // f16 and f32 keys are stored as they are, calibration or not.
    KvCache f16({1, 1, Keys::kDim}, TensorType::F16, 1, 16, keys.calibration());
    EXPECT_EQ(f16.layer(0).k.query_scale, nullptr);
}

TEST(KeyCalibration, AttentionOverCalibratedKeysKeepsTheScores) {
    double calibrated_sum = 0, sink_rounded_sum = 0;  // q4_0's, over the seeds
    for (uint32_t seed : {1u, 2u, 3u}) {
        const Keys keys(seed);
        const std::vector<float> exact = keys.attend(TensorType::F32, {});
        for (TensorType type : {TensorType::Q8_0, TensorType::Q4_0}) {
            // Values in f32: only the keys' rounding differs.
            const KvTypes types{type, TensorType::F32};
            const double plain = max_difference(keys.attend(types, {}), exact);
            const double calibrated = max_difference(keys.attend(types, keys.calibration()), exact);
            KeyCalibration no_first = keys.calibration();
            std::fill(no_first.first.begin(), no_first.first.end(), 0.0f);
            const double sink_rounded = max_difference(keys.attend(types, no_first), exact);
            std::printf(
                "%s seed %u: max |error| %.4f plain, %.4f calibrated, %.4f calibrated "
                "but for position 0\n",
                tensor_type_name(type).c_str(), seed, plain, calibrated, sink_rounded);
            EXPECT_LT(calibrated, plain / 4) << tensor_type_name(type) << " seed " << seed;
            // Where the sink's weight is near 0 or 1 its rounding moves little.
            EXPECT_LE(calibrated, sink_rounded * 1.01) << tensor_type_name(type) << " " << seed;
            EXPECT_LT(calibrated, type == TensorType::Q8_0 ? 0.05 : 0.5);
            if (type == TensorType::Q4_0)
                calibrated_sum += calibrated, sink_rounded_sum += sink_rounded;
        }
    }
    EXPECT_LT(calibrated_sum, sink_rounded_sum / 2);
}

TEST(KeyCalibration, AWrongSizeIsRefused) {
    const Keys keys(1);
    EXPECT_THROW(KvCache({2, 1, Keys::kDim}, TensorType::Q8_0, 1, 16, keys.calibration()), Error);
}

}  // namespace
}  // namespace kite
