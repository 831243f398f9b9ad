// `kite quantize`: the default model converted to F32 and from there to every type, checked
// for shapes, types, metadata, value tolerances and, byte for byte, against llama.cpp's
// llama-quantize (hashes in tests/fixtures/quantize_hashes.json); plus the CLI's errors.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "gguf/gguf_file.h"
#include "gguf/gguf_writer.h"
#include "quant/convert.h"
#include "quant/quantize_file.h"
#include "run_command.h"
#include "sha256.h"
#include "test_paths.h"

namespace kite {
namespace {

namespace fs = std::filesystem;

// A temporary folder for this test binary, removed at exit.
const fs::path& temp_dir() {
    struct Dir {
        fs::path path;
        Dir() {
            path = fs::temp_directory_path() / ("kite_quantize_test_" + std::to_string(::getpid()));
            fs::create_directories(path);
        }
        ~Dir() {
            std::error_code ec;
            fs::remove_all(path, ec);
        }
    };
    static Dir dir;
    return dir.path;
}

// The default model converted to F32, once per process (ctest runs each test in its own).
const std::string& model_f32() {
    static const std::string path = [] {
        std::string out = (temp_dir() / "model-F32.gguf").string();
        QuantizeOptions options;
        options.type = TensorType::F32;
        quantize_file(test::default_model_path(), out, options);
        return out;
    }();
    return path;
}

// The values of a tensor as f32.
std::vector<float> values(const GgufTensor& t) {
    std::vector<float> out(t.n_elements);
    const size_t n = t.dims[0], in_row = row_bytes(t.type(), n);
    for (size_t r = 0; r < t.n_elements / n; ++r)
        dequantize_row(t.type(), t.data + r * in_row, out.data() + r * n, n);
    return out;
}

bool same_value(const GgufValue& a, const GgufValue& b) {
    return a.type == b.type && a.elem_type == b.elem_type && a.count == b.count &&
           std::equal(a.raw.begin(), a.raw.end(), b.raw.begin(), b.raw.end());
}

// Same tensors in the same order with the same shapes; every metadata value as in the
// source except general.file_type, which is `file_type`.
void expect_same_layout(const GgufFile& src, const GgufFile& out, uint32_t file_type) {
    ASSERT_EQ(out.tensors().size(), src.tensors().size());
    for (size_t i = 0; i < src.tensors().size(); ++i) {
        const GgufTensor &a = src.tensors()[i], &b = out.tensors()[i];
        EXPECT_EQ(a.name, b.name);
        EXPECT_EQ(a.n_dims, b.n_dims) << a.name;
        EXPECT_EQ(a.dims, b.dims) << a.name;
    }
    ASSERT_EQ(out.metadata().size(),
              src.metadata().size() + (src.find("general.file_type") ? 0 : 1));
    for (size_t i = 0; i < src.metadata().size(); ++i) {
        const auto& [key, value] = src.metadata()[i];
        EXPECT_EQ(out.metadata()[i].first, key);
        if (key != "general.file_type") {
            EXPECT_TRUE(same_value(value, out.metadata()[i].second)) << key;
        }
    }
    const GgufValue* ft = out.find("general.file_type");
    ASSERT_TRUE(ft);
    EXPECT_EQ(ft->type, GgufValueType::U32);
    EXPECT_EQ(out.get_int("general.file_type"), file_type);
}

TEST(QuantizeTypes, ParsesNamesInAnyCase) {
    EXPECT_EQ(parse_quantize_type("q4_0"), TensorType::Q4_0);
    EXPECT_EQ(parse_quantize_type("Q4_1"), TensorType::Q4_1);
    EXPECT_EQ(parse_quantize_type("q8_0"), TensorType::Q8_0);
    EXPECT_EQ(parse_quantize_type("f16"), TensorType::F16);
    EXPECT_EQ(parse_quantize_type("Bf16"), TensorType::BF16);
    EXPECT_EQ(parse_quantize_type("F32"), TensorType::F32);
    EXPECT_EQ(parse_quantize_type("q5_0"), TensorType::Q5_0);
    EXPECT_EQ(parse_quantize_type("Q5_1"), TensorType::Q5_1);
    EXPECT_EQ(parse_quantize_type("q4_k"), TensorType::Q4_K);
    EXPECT_EQ(parse_quantize_type("Q5_K"), TensorType::Q5_K);
    EXPECT_EQ(parse_quantize_type("q6_K"), TensorType::Q6_K);
    // Types Kite reads but does not write, and types it does not know.
    EXPECT_THROW(parse_quantize_type("Q3_K"), Error);
    EXPECT_THROW(parse_quantize_type("iq4_nl"), Error);
    EXPECT_THROW(parse_quantize_type("Q4_K_M"), Error);
    EXPECT_THROW(parse_quantize_type(""), Error);
    // llama.cpp's LLAMA_FTYPE numbers
    EXPECT_EQ(llama_file_type(TensorType::F32), 0u);
    EXPECT_EQ(llama_file_type(TensorType::F16), 1u);
    EXPECT_EQ(llama_file_type(TensorType::Q4_0), 2u);
    EXPECT_EQ(llama_file_type(TensorType::Q4_1), 3u);
    EXPECT_EQ(llama_file_type(TensorType::Q8_0), 7u);
    EXPECT_EQ(llama_file_type(TensorType::BF16), 32u);
    EXPECT_EQ(llama_file_type(TensorType::Q5_0), 8u);
    EXPECT_EQ(llama_file_type(TensorType::Q5_1), 9u);
    EXPECT_EQ(llama_file_type(TensorType::Q4_K), 15u);  // what llama-quantize writes for "Q4_K"
    EXPECT_EQ(llama_file_type(TensorType::Q5_K), 17u);
    EXPECT_EQ(llama_file_type(TensorType::Q6_K), 18u);
}

TEST(QuantizeTypes, ReadOnlyTypesCannotBeWritten) {
    std::vector<float> x(256, 1.0f);
    std::vector<uint8_t> out(row_bytes(TensorType::Q3_K, 256));
    try {
        quantize_row(TensorType::Q3_K, x.data(), out.data(), 256);
        FAIL() << "quantize_row wrote Q3_K";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("cannot write Q3_K"), std::string::npos) << e.what();
    }
}

// Byte for byte against llama.cpp: the fixture holds the sha256 of each tensor's data in
// llama-quantize's output (tools/make-quantize-fixtures.sh): F32 straight from the default
// model, the other types from Kite's F32 file (which the F32 check shows is llama.cpp's too).
const nlohmann::json& llama_fixture() {
    static const nlohmann::json fixture = [] {
        std::ifstream in(std::string(KITE_SOURCE_DIR) + "/tests/fixtures/quantize_hashes.json");
        if (!in) throw std::runtime_error("tests/fixtures/quantize_hashes.json is missing");
        return nlohmann::json::parse(in);
    }();
    return fixture;
}

// The fixture's record of llama-quantize's output for `name` (a type with --pure, or a mix),
// nullptr if it has none.
const nlohmann::json* llama_variant(const std::string& name, bool mix) {
    for (const auto& v : llama_fixture().at("variants"))
        if (v.at("type") == name && v.value("mix", false) == mix) return &v;
    return nullptr;
}

// Whether the fixture pins llama-quantize's output for `type` (the types added with the
// K-quants are pinned once tools/make-quantize-fixtures.sh has been run with them).
bool has_llama_variant(TensorType type) {
    return llama_variant(tensor_type_name(type), false) != nullptr;
}

// Every tensor of `out` has the type, shape and bytes of llama-quantize's (`name` with
// --pure, or the mix `name`).
void expect_matches_llama_cpp(const GgufFile& out, const std::string& name, bool mix = false) {
    const nlohmann::json* variant = llama_variant(name, mix);
    ASSERT_TRUE(variant) << "no " << name << " in the fixture";
    const auto& expected = variant->at("tensors");
    ASSERT_EQ(out.tensors().size(), expected.size());
    size_t matched = 0;
    for (const GgufTensor& t : out.tensors()) {
        std::string name(t.name);
        ASSERT_TRUE(expected.contains(name)) << name;
        const auto& e = expected.at(name);
        EXPECT_EQ(e.at("type"), tensor_type_name(t.type_id)) << name;
        EXPECT_EQ(e.at("dims").get<std::vector<uint64_t>>(),
                  std::vector<uint64_t>(t.dims.begin(), t.dims.begin() + t.n_dims))
            << name;
        bool same = e.at("sha256") == test::sha256_hex({t.data, t.n_bytes});
        EXPECT_TRUE(same) << name << " differs from llama.cpp's ("
                          << llama_fixture().at("llama_cpp") << ", model sha256 "
                          << llama_fixture().at("model_sha256") << ")";
        matched += same;
    }
    EXPECT_EQ(matched, expected.size());
}

TEST(QuantizeModel, DefaultModelToF32) {
    auto src = GgufFile::open(test::default_model_path());
    auto out = GgufFile::open(model_f32());
    expect_same_layout(*src, *out, 0);
    for (size_t i = 0; i < src->tensors().size(); ++i) {
        const GgufTensor &a = src->tensors()[i], &b = out->tensors()[i];
        ASSERT_EQ(b.type(), TensorType::F32) << b.name;
        // f32 holds every value of the source types exactly.
        std::vector<float> x = values(a), y = values(b);
        ASSERT_EQ(std::memcmp(x.data(), y.data(), x.size() * sizeof(float)), 0) << a.name;
    }
    expect_matches_llama_cpp(*out, "F32");
}

// Worst error of each value of `type`, given the f32 source values `x` (a multiple of 32).
// The block formats round to the nearest of 2^k steps of a block's range (Q4_0 may clamp its
// largest value a whole step), then store scales in f16 (relative error 2^-11).
std::vector<double> error_bounds(TensorType type, const std::vector<float>& x) {
    const double f16_eps = std::ldexp(1.0, -11);
    std::vector<double> bound(x.size());
    for (size_t b = 0; b < x.size(); b += 32) {
        float amax = 0, lo = x[b], hi = x[b];
        for (size_t j = b; j < b + 32; ++j) {
            amax = std::max(amax, std::fabs(x[j]));
            lo = std::min(lo, x[j]);
            hi = std::max(hi, x[j]);
        }
        double block_bound = 0;
        switch (type) {
            case TensorType::Q8_0:
                block_bound = amax / 127.0 * (0.5 + 127 * f16_eps);
                break;
            case TensorType::Q4_0:
                block_bound = amax / 8.0 * (1 + 8 * f16_eps);
                break;
            case TensorType::Q4_1:
                block_bound =
                    (double(hi) - lo) / 15 * (0.5 + 15 * f16_eps) + std::fabs(lo) * f16_eps;
                break;
            case TensorType::Q5_0:
                block_bound = amax / 16.0 * (1 + 16 * f16_eps);
                break;
            case TensorType::Q5_1:
                block_bound =
                    (double(hi) - lo) / 31 * (0.5 + 31 * f16_eps) + std::fabs(lo) * f16_eps;
                break;
            default:
                break;
        }
        for (size_t j = b; j < b + 32; ++j) {
            switch (type) {
                case TensorType::F16:
                    bound[j] = std::fabs(x[j]) * f16_eps + std::ldexp(1.0, -25);
                    break;
                case TensorType::BF16:
                    bound[j] = std::fabs(x[j]) * std::ldexp(1.0, -8);
                    break;
                default:
                    bound[j] = block_bound + 1e-12;
            }
        }
    }
    return bound;
}

// Matrices are of `type` and within its error of the source; 1-D tensors stay exact F32.
void expect_within_tolerance(const GgufFile& src, const GgufFile& out, TensorType type) {
    size_t n_matrices = 0;
    for (size_t i = 0; i < src.tensors().size(); ++i) {
        const GgufTensor &a = src.tensors()[i], &b = out.tensors()[i];
        const bool matrix = a.n_dims == 2;
        ASSERT_EQ(b.type(), matrix ? type : TensorType::F32) << b.name;
        n_matrices += matrix;
        std::vector<float> x = values(a), y = values(b);
        if (!matrix) {
            ASSERT_EQ(x, y) << a.name;
            continue;
        }
        std::vector<double> bound = error_bounds(type, x);
        size_t bad = 0;
        for (size_t j = 0; j < x.size(); ++j) {
            if (!(std::fabs(double(x[j]) - y[j]) <= bound[j]) && bad++ < 3)
                ADD_FAILURE() << a.name << "[" << j << "]: " << x[j] << " became " << y[j]
                              << " (allowed error " << bound[j] << ")";
        }
        ASSERT_EQ(bad, 0u) << a.name;
    }
    EXPECT_EQ(n_matrices, 211u);
}

// One test for all seven types, so that the F32 file is made once even under ctest. Each is
// compared with llama.cpp where the fixture has it (see LlamaCppFixturePinsEveryWritableType).
TEST(QuantizeModel, F32ToEveryTypeSlow) {
    auto src = GgufFile::open(model_f32());
    for (TensorType type : {TensorType::Q8_0, TensorType::Q4_0, TensorType::Q4_1, TensorType::Q5_0,
                            TensorType::Q5_1, TensorType::F16, TensorType::BF16}) {
        const bool pinned = has_llama_variant(type);
        SCOPED_TRACE(tensor_type_name(type));
        std::string path = (temp_dir() / ("model-" + tensor_type_name(type) + ".gguf")).string();
        QuantizeOptions options;
        options.type = type;
        quantize_file(model_f32(), path, options);
        auto out = GgufFile::open(path);
        expect_same_layout(*src, *out, llama_file_type(type));
        expect_within_tolerance(*src, *out, type);
        if (pinned) expect_matches_llama_cpp(*out, tensor_type_name(type));
        out.reset();
        fs::remove(path);
    }
}

// The K-quants: only rows that are a multiple of 256 (the default model's ffn_down, 1536 wide)
// are K-quant; the 576-wide rows take llama-quantize's fallback. Each K-quant tensor is within
// a relative RMS error typical of its bits, and every tensor equals llama.cpp's byte for byte.
TEST(QuantizeModel, F32ToKQuantsSlow) {
    auto src = GgufFile::open(model_f32());
    const struct {
        TensorType type, narrow_rows;
        double max_relative_rms;
    } cases[] = {{TensorType::Q4_K, TensorType::Q5_0, 0.1},
                 {TensorType::Q5_K, TensorType::Q5_1, 0.05},
                 {TensorType::Q6_K, TensorType::Q8_0, 0.025}};
    for (const auto& c : cases) {
        SCOPED_TRACE(tensor_type_name(c.type));
        std::string path = (temp_dir() / ("model-" + tensor_type_name(c.type) + ".gguf")).string();
        QuantizeOptions options;
        options.type = c.type;
        QuantizeResult r = quantize_file(model_f32(), path, options);
        auto out = GgufFile::open(path);
        expect_same_layout(*src, *out, llama_file_type(c.type));
        size_t n_k = 0;
        for (size_t i = 0; i < src->tensors().size(); ++i) {
            const GgufTensor &a = src->tensors()[i], &b = out->tensors()[i];
            if (a.n_dims != 2) continue;
            ASSERT_EQ(b.type(), a.dims[0] % 256 == 0 ? c.type : c.narrow_rows) << a.name;
            if (b.type() != c.type) continue;
            ++n_k;
            std::vector<float> x = values(a), y = values(b);
            double err2 = 0, x2 = 0;
            for (size_t j = 0; j < x.size(); ++j)
                err2 += (double(x[j]) - y[j]) * (double(x[j]) - y[j]), x2 += double(x[j]) * x[j];
            EXPECT_LT(std::sqrt(err2 / x2), c.max_relative_rms) << a.name;
        }
        EXPECT_EQ(n_k, 30u);  // one ffn_down per layer
        EXPECT_EQ(r.n_fallback, 211u - 30u);
        if (has_llama_variant(c.type)) expect_matches_llama_cpp(*out, tensor_type_name(c.type));
        out.reset();
        fs::remove(path);
    }
}

// The _M mixes: the type llama-quantize picks for each tensor (checked by the fixture, and
// counted here by what quant_mix_test.cpp states: in SmolLM2-135M's 30 layers, 14 keep more
// bits), every tensor equal to llama-quantize's byte for byte, and the file type recorded.
TEST(QuantizeModel, F32ToMixesSlow) {
    auto src = GgufFile::open(model_f32());
    const struct {
        const char* mix;
        TensorType base, narrow_rows;
    } cases[] = {{"Q4_K_M", TensorType::Q4_K, TensorType::Q5_0},
                 {"Q5_K_M", TensorType::Q5_K, TensorType::Q5_1}};
    for (const auto& c : cases) {
        SCOPED_TRACE(c.mix);
        const QuantMix* mix = find_quant_mix(c.mix);
        ASSERT_TRUE(mix);
        std::string path = (temp_dir() / (std::string("model-") + c.mix + ".gguf")).string();
        QuantizeOptions options;
        options.mix = mix;
        QuantizeResult r = quantize_file(model_f32(), path, options);
        auto out = GgufFile::open(path);
        expect_same_layout(*src, *out, mix->llama_file_type);
        std::map<TensorType, int> count;
        for (const GgufTensor& t : out->tensors())
            if (t.n_dims == 2) count[t.type()]++;
        // token_embd doubles as the output (no output.weight) and is 576 wide: Q8_0, as are
        // the attn_v of the 14 more-bits layers (their Q6_K does not fit 576-wide rows).
        EXPECT_EQ(count[TensorType::Q8_0], 1 + 14);
        EXPECT_EQ(count[TensorType::Q6_K], 14);  // ffn_down (1536 wide) of those layers
        EXPECT_EQ(count[c.base], 30 - 14);       // the other ffn_down
        EXPECT_EQ(count[c.narrow_rows], 180 - 14);
        EXPECT_EQ(r.n_fallback, 180u);  // every 576-wide layer matrix
        expect_matches_llama_cpp(*out, c.mix, true);
        out.reset();
        fs::remove(path);
    }
}

// llama-quantize's Q6_K file type writes what --pure Q6_K does (its output rule picks Q8_0
// for 576-wide rows, as the fallback would): the same plan, and the fixture's two records of
// llama-quantize agree, so F32ToKQuants's byte comparison covers the mix too.
TEST(QuantizeModel, Q6_KMixIsPureQ6_K) {
    auto src = GgufFile::open(test::default_model_path());  // plans depend on names and shapes
    std::vector<TensorPlan> mix = plan_quantize(*src, *find_quant_mix("Q6_K"));
    std::vector<TensorPlan> pure = plan_quantize(*src, TensorType::Q6_K);
    ASSERT_EQ(mix.size(), pure.size());
    for (size_t i = 0; i < mix.size(); ++i) EXPECT_EQ(mix[i].to, pure[i].to) << mix[i].name;
    const nlohmann::json* llama_mix = llama_variant("Q6_K", true);
    const nlohmann::json* llama_pure = llama_variant("Q6_K", false);
    ASSERT_TRUE(llama_mix && llama_pure);
    EXPECT_EQ(llama_mix->at("tensors"), llama_pure->at("tensors"));
    EXPECT_EQ(find_quant_mix("Q6_K")->llama_file_type, llama_file_type(TensorType::Q6_K));
}

TEST(QuantizeModel, RejectsMixesForModelsWithOtherRules) {
    GgufWriter w;
    w.add_string("general.architecture", "llama");
    w.add_u32("llama.expert_count", 8);
    std::vector<float> v(256 * 2, 0.5f);
    w.add_tensor("blk.0.ffn_down_exps.weight", TensorType::F32, std::vector<uint64_t>{256, 2},
                 {reinterpret_cast<const uint8_t*>(v.data()), v.size() * 4});
    const std::vector<uint8_t> bytes = w.to_bytes();  // the file views these bytes
    auto file = GgufFile::parse(bytes, "moe.gguf");
    try {
        plan_quantize(*file, *find_quant_mix("Q4_K_M"));
        ADD_FAILURE() << "no error";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("'moe.gguf': kite quantize does not make Q4_K_M "
                                             "files of mixture-of-experts models"),
                  std::string::npos)
            << e.what();
    }
    EXPECT_EQ(plan_quantize(*file, TensorType::Q4_K)[0].to, TensorType::Q4_K);  // pure is fine
}

// Reports, as a failure, a writable type the llama.cpp fixture does not pin yet.
TEST(QuantizeModel, LlamaCppFixturePinsEveryWritableType) {
    for (const RowConversion& c : row_conversions()) {
        if (!c.quantize) continue;
        EXPECT_TRUE(has_llama_variant(c.type)) << tensor_type_name(c.type)
                                               << " is not in tests/fixtures/quantize_hashes.json: "
                                                  "run tools/make-quantize-fixtures.sh";
    }
}

TEST(QuantizeHash, Sha256KnownAnswers) {
    auto hex = [](const std::string& s) {
        return test::sha256_hex({reinterpret_cast<const uint8_t*>(s.data()), s.size()});
    };
    EXPECT_EQ(hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    EXPECT_EQ(hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    EXPECT_EQ(hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
              "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    test::Sha256 pieces;  // fed in uneven pieces, across block boundaries
    std::string a(1000, 'a');
    for (size_t at = 0; at < a.size(); at += 37)
        pieces.update(
            {reinterpret_cast<const uint8_t*>(a.data()) + at, std::min<size_t>(37, a.size() - at)});
    EXPECT_EQ(pieces.hex(), hex(a));
}

// A small file that exercises each rule: a matrix, a matrix whose rows (48) do not fill
// 32-value blocks, a 1-D F16 norm, a quantized tensor not named *.weight, and a 3-D
// weight with a trailing dimension of 1 (a matrix, as ggml counts).
std::string small_model(const std::string& name, TensorType odd_type = TensorType::F32) {
    GgufWriter w;
    w.add_string("general.architecture", "llama");
    w.add_u32("general.file_type", 1);
    w.add_string("general.name", "small");
    auto f32_tensor = [&](const char* tname, std::vector<uint64_t> dims) {
        uint64_t n = 1;
        for (uint64_t d : dims) n *= d;
        std::vector<float> v(n);
        for (size_t i = 0; i < n; ++i) v[i] = std::sin(0.37f * float(i)) * 0.1f;
        w.add_tensor(tname, TensorType::F32, dims,
                     {reinterpret_cast<const uint8_t*>(v.data()), v.size() * 4});
    };
    f32_tensor("blk.0.ffn_up.weight", {64, 4});
    f32_tensor("blk.0.odd.weight", {48, 4});
    std::vector<uint16_t> half(64, 0x3c00);  // 1.0
    w.add_tensor("blk.0.attn_norm.weight", TensorType::F16, std::vector<uint64_t>{64},
                 {reinterpret_cast<const uint8_t*>(half.data()), half.size() * 2});
    std::vector<uint8_t> q(2 * 20, 0x11);
    w.add_tensor("rope_freqs", TensorType::Q4_1, std::vector<uint64_t>{32, 2}, q);
    f32_tensor("blk.0.cube.weight", {32, 3, 1});
    if (odd_type != TensorType::F32) {
        const TensorTypeInfo& info = *tensor_type_info(static_cast<uint32_t>(odd_type));
        std::vector<uint8_t> odd(2 * info.block_bytes, 0);
        w.add_tensor("blk.0.odd_type.weight", odd_type, std::vector<uint64_t>{info.block_size, 2},
                     odd);
    }
    std::string path = (temp_dir() / name).string();
    w.write_file(path);
    return path;
}

TEST(QuantizeModel, AppliesTheRuleToEachKindOfTensor) {
    std::string in = small_model("rules.gguf");
    std::string out = (temp_dir() / "rules-q4_0.gguf").string();
    std::vector<std::string> seen;
    QuantizeOptions options;
    options.type = TensorType::Q4_0;
    options.n_threads = 3;
    options.on_tensor = [&](size_t i, size_t count, const TensorPlan& p) {
        EXPECT_EQ(i, seen.size());
        EXPECT_EQ(count, 5u);
        seen.emplace_back(p.name);
    };
    QuantizeResult r = quantize_file(in, out, options);
    EXPECT_EQ(seen.size(), 5u);
    EXPECT_EQ(r.n_tensors, 5u);
    EXPECT_EQ(r.n_converted, 4u);
    EXPECT_EQ(r.n_fallback, 1u);
    EXPECT_EQ(r.bytes_after, fs::file_size(out));
    EXPECT_FALSE(fs::exists(out + ".tmp"));

    auto src = GgufFile::open(in);
    auto f = GgufFile::open(out);
    expect_same_layout(*src, *f, 2);
    EXPECT_EQ(f->find_tensor("blk.0.ffn_up.weight")->type(), TensorType::Q4_0);
    EXPECT_EQ(f->find_tensor("blk.0.odd.weight")->type(), TensorType::F16);
    EXPECT_EQ(f->find_tensor("blk.0.attn_norm.weight")->type(), TensorType::F32);
    EXPECT_EQ(f->find_tensor("rope_freqs")->type(), TensorType::Q4_1);
    EXPECT_EQ(f->find_tensor("blk.0.cube.weight")->type(), TensorType::Q4_0);
    EXPECT_EQ(values(*f->find_tensor("blk.0.attn_norm.weight")), std::vector<float>(64, 1.0f));
    const GgufTensor& kept = *f->find_tensor("rope_freqs");
    EXPECT_EQ(std::vector<uint8_t>(kept.data, kept.data + kept.n_bytes),
              std::vector<uint8_t>(40, 0x11));
}

TEST(QuantizeModel, KeepsTheSourceAlignment) {
    GgufWriter w;
    w.add_u32("general.alignment", 64);
    std::vector<float> v(32 * 3, 0.5f);
    w.add_tensor("a.weight", TensorType::F32, std::vector<uint64_t>{32, 3},
                 {reinterpret_cast<const uint8_t*>(v.data()), v.size() * 4});
    w.add_tensor("b.weight", TensorType::F32, std::vector<uint64_t>{32, 3},
                 {reinterpret_cast<const uint8_t*>(v.data()), v.size() * 4});
    std::string in = (temp_dir() / "aligned.gguf").string(), out = in + ".q8";
    w.write_file(in);
    QuantizeOptions options;
    options.type = TensorType::Q8_0;
    quantize_file(in, out, options);
    auto f = GgufFile::open(out);
    EXPECT_EQ(f->alignment(), 64u);
    EXPECT_EQ(f->metadata().size(), 2u);  // general.alignment once, general.file_type
    EXPECT_EQ(f->tensors()[1].offset % 64, 0u);
}

// --- the command line ---

TEST(QuantizeCli, ConvertsAndReportsEachTensor) {
    std::string in = small_model("cli.gguf");
    std::string out = (temp_dir() / "cli-q8.gguf").string();
    auto r = test::run_kite("quantize " + in + " " + out + " q8_0 --threads 2");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_TRUE(r.out.empty()) << r.out;
    EXPECT_NE(r.err.find("blk.0.ffn_up.weight"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("F32 -> Q8_0"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("F16 -> F32"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("rows of 48 do not fill Q8_0 blocks: F16 instead"), std::string::npos)
        << r.err;
    EXPECT_NE(r.err.find("5 tensors (4 converted)"), std::string::npos) << r.err;
    EXPECT_EQ(test::count_lines(r.err), 5 + 2);  // a line per tensor, summary, F16 note
    EXPECT_EQ(GgufFile::open(out)->find_tensor("blk.0.ffn_up.weight")->type(), TensorType::Q8_0);
    EXPECT_FALSE(fs::exists(out + ".tmp"));
}

// A mix by name, in any case: each tensor's own wanted type in its fallback note, the mix's
// file type recorded.
TEST(QuantizeCli, WritesAMix) {
    std::string in = small_model("cli-mix.gguf");
    std::string out = (temp_dir() / "cli-q4_k_m.gguf").string();
    auto r = test::run_kite("quantize " + in + " " + out + " q4_k_m");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find("rows of 64 do not fill Q4_K blocks: Q5_0 instead"), std::string::npos)
        << r.err;
    EXPECT_NE(r.err.find("rows of 48 do not fill Q4_K blocks: F16 instead"), std::string::npos)
        << r.err;
    auto file = GgufFile::open(out);
    EXPECT_EQ(file->find_tensor("blk.0.ffn_up.weight")->type(), TensorType::Q5_0);
    EXPECT_EQ(file->get_int("general.file_type"), 15);  // LLAMA_FTYPE_MOSTLY_Q4_K_M
}

TEST(QuantizeCli, RejectsBadInputWithOneLine) {
    std::string in = small_model("bad-in.gguf");
    std::string iq2 = small_model("bad-iq2.gguf", TensorType::IQ2_XXS);
    std::string out = (temp_dir() / "bad-out.gguf").string();
    {
        std::ofstream old(out);
        old << "old contents";
    }
    expect_one_line_error(test::run_kite("quantize " + in + " " + out + " q3_k"), 1,
                          "unknown type 'q3_k'");
    expect_one_line_error(test::run_kite("quantize /nonexistent.gguf " + out + " q8_0"), 1,
                          "cannot open");
    expect_one_line_error(test::run_kite("quantize " + iq2 + " " + out + " q8_0"), 1,
                          "tensor 'blk.0.odd_type.weight' has type IQ2_XXS");
    expect_one_line_error(test::run_kite("quantize " + in + " " + in + " q8_0"), 1,
                          "would overwrite the input");
    expect_one_line_error(test::run_kite("quantize " + in + " /nonexistent/dir/x.gguf q8_0"), 1,
                          "cannot create");
    expect_one_line_error(test::run_kite("quantize " + in + " " + out), 2, "TYPE");
    expect_one_line_error(test::run_kite("quantize " + in + " " + out + " q8_0 --threads 0"), 2,
                          "threads");
    EXPECT_EQ(test::read_text(out), "old contents");  // untouched by every failure
    EXPECT_FALSE(fs::exists(out + ".tmp"));
}

// A K-quant tensor whose rows are not a multiple of 256 is a corrupt file: one line naming the
// file, the tensor and its type.
TEST(QuantizeCli, RejectsKQuantRowsNotFillingSuperBlocks) {
    // The writer refuses such a shape, so write [256 x 3] and patch its dimensions to
    // [384 x 2]: the same three blocks' bytes.
    GgufWriter w;
    const std::string name = "blk.0.narrow.weight";
    w.add_tensor(name, TensorType::Q4_K, std::vector<uint64_t>{256, 3},
                 std::vector<uint8_t>(144 * 3, 0));
    std::vector<uint8_t> bytes = w.to_bytes();
    auto at = std::search(bytes.begin(), bytes.end(), name.begin(), name.end());
    ASSERT_NE(at, bytes.end());
    const size_t dims = size_t(at - bytes.begin()) + name.size() + sizeof(uint32_t);
    const uint64_t narrow[2] = {384, 2};
    std::memcpy(&bytes[dims], narrow, sizeof narrow);
    std::string in = (temp_dir() / "narrow-q4_k.gguf").string();
    std::ofstream(in, std::ios::binary)
        .write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
    auto r = test::run_kite("quantize " + in + " " + in + ".out q8_0");
    expect_one_line_error(r, 1, "tensor 'blk.0.narrow.weight' of type Q4_K has a row of 384");
    EXPECT_NE(r.err.find(in), std::string::npos) << r.err;
}

// A write that fails half way (here: at the file size limit) leaves neither OUT nor OUT.tmp.
TEST(QuantizeCli, FailedWriteLeavesNoFile) {
    GgufWriter w;
    std::vector<float> v(64 * 64, 0.25f);  // 16 KiB of F32 data
    w.add_tensor("big.weight", TensorType::F32, std::vector<uint64_t>{64, 64},
                 {reinterpret_cast<const uint8_t*>(v.data()), v.size() * 4});
    std::string in = (temp_dir() / "limit.gguf").string();
    w.write_file(in);
    std::string out = (temp_dir() / "limit-out.gguf").string();
    std::string err = (temp_dir() / "limit.err").string();
    // At most 8 blocks of 512 bytes per file; SIGXFSZ ignored, so a write past the limit
    // fails with EFBIG instead of killing kite.
    std::string cmd = "trap '' XFSZ; ulimit -f 8; " + std::string(KITE_KITE_BIN) + " quantize " +
                      in + " " + out + " f16 </dev/null >/dev/null 2>" + err;
    int status = std::system(("sh -c \"" + cmd + "\"").c_str());
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 1);
    std::string message = test::read_text(err);
    EXPECT_NE(message.find("kite: error: cannot write"), std::string::npos) << message;
    EXPECT_FALSE(fs::exists(out));
    EXPECT_FALSE(fs::exists(out + ".tmp"));
}

}  // namespace
}  // namespace kite
