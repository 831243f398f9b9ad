// GGUF reader: round trips through the writer, the real default model, and crafted bad files
// that must each give one kite::Error (never a crash, a hang or a huge allocation).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <random>

#include "core/error.h"
#include "gguf/gguf_file.h"
#include "gguf/gguf_writer.h"
#include "model/model_config.h"
#include "test_paths.h"

namespace kite {
namespace {

std::vector<uint8_t> small_file() {
    GgufWriter w;
    w.add_string("general.architecture", "llama");
    w.add_u32("llama.block_count", 2);
    w.add_f32("llama.rope.freq_base", 10000.0f);
    w.add_bool("flag", true);
    std::vector<std::string> words{"a", "bb", "ccc"};
    w.add_string_array("tokenizer.ggml.tokens", words);
    std::vector<float> scores{0.5f, -1.0f, 2.0f};
    w.add_f32_array("tokenizer.ggml.scores", scores);
    std::vector<float> weights(64, 1.5f);
    std::vector<uint64_t> dims{32, 2};
    w.add_tensor("w", TensorType::F32, dims,
                 {reinterpret_cast<const uint8_t*>(weights.data()), weights.size() * 4});
    std::vector<uint8_t> q4(2 * 20, 7);
    w.add_tensor("q", TensorType::Q4_1, std::vector<uint64_t>{64}, q4);
    return w.to_bytes();
}

std::string error_of(const std::vector<uint8_t>& bytes) {
    try {
        GgufFile::parse(bytes, "test.gguf");
    } catch (const Error& e) {
        return e.what();
    }
    return "";
}

TEST(Gguf, RoundTripsMetadataAndTensors) {
    std::vector<uint8_t> bytes = small_file();
    auto f = GgufFile::parse(bytes, "test.gguf");
    EXPECT_EQ(f->version(), 3u);
    EXPECT_EQ(f->get_string("general.architecture"), "llama");
    EXPECT_EQ(f->get_int("llama.block_count"), 2);
    EXPECT_EQ(f->get_float("llama.rope.freq_base"), 10000.0);
    EXPECT_EQ(f->get_bool("flag"), true);
    auto words = f->get_string_array("tokenizer.ggml.tokens");
    ASSERT_TRUE(words);
    EXPECT_EQ(*words, (std::vector<std::string_view>{"a", "bb", "ccc"}));
    EXPECT_EQ(*f->get_float_array("tokenizer.ggml.scores"), (std::vector<float>{0.5f, -1, 2}));
    EXPECT_FALSE(f->get_int("missing"));
    EXPECT_THROW(f->get_int("general.architecture"), Error);

    ASSERT_EQ(f->tensors().size(), 2u);
    const GgufTensor* w = f->find_tensor("w");
    ASSERT_TRUE(w);
    EXPECT_EQ(w->n_elements, 64u);
    EXPECT_EQ(w->n_bytes, 256u);
    float first;
    std::memcpy(&first, w->data, 4);
    EXPECT_EQ(first, 1.5f);
    const GgufTensor* q = f->find_tensor("q");
    ASSERT_TRUE(q);
    EXPECT_EQ(q->n_bytes, 40u);
    EXPECT_EQ(q->data[0], 7);
    EXPECT_EQ((q->data - bytes.data()) % 32, 0);
}

TEST(Gguf, HonoursCustomAlignment) {
    GgufWriter w;
    w.set_alignment(64);
    std::vector<uint8_t> a(4 * 3), b(4 * 5);
    w.add_tensor("a", TensorType::F32, std::vector<uint64_t>{3}, a);
    w.add_tensor("b", TensorType::F32, std::vector<uint64_t>{5}, b);
    std::vector<uint8_t> bytes = w.to_bytes();
    auto f = GgufFile::parse(bytes, "aligned.gguf");
    EXPECT_EQ(f->alignment(), 64u);
    EXPECT_EQ(f->find_tensor("b")->offset, 64u);
}

TEST(Gguf, ReadsTheDefaultModel) {
    auto f = GgufFile::open(test::default_model_path());
    EXPECT_EQ(f->version(), 3u);
    EXPECT_EQ(f->get_string("general.architecture"), "llama");
    EXPECT_EQ(f->tensors().size(), 272u);
    EXPECT_EQ(f->get_string_array("tokenizer.ggml.tokens")->size(), 49152u);
    EXPECT_EQ(f->get_string_array("tokenizer.ggml.merges")->size(), 48900u);
    const GgufTensor* embd = f->find_tensor("token_embd.weight");
    ASSERT_TRUE(embd);
    EXPECT_EQ(embd->type(), TensorType::Q8_0);
    EXPECT_EQ(embd->dims[0], 576u);
    EXPECT_EQ(embd->dims[1], 49152u);
    EXPECT_EQ(f->find_tensor("blk.0.attn_q.weight")->type(), TensorType::Q4_1);
}

TEST(Gguf, RejectsMissingAndNonGgufFiles) {
    EXPECT_THROW(GgufFile::open("/nonexistent/model.gguf"), Error);
    EXPECT_THROW(GgufFile::open("/"), Error);
    std::vector<uint8_t> text{'h', 'e', 'l', 'l', 'o', '\n'};
    EXPECT_NE(error_of(text).find("not a GGUF file"), std::string::npos);
    EXPECT_NE(error_of({}).find("not a GGUF file"), std::string::npos);
}

TEST(Gguf, RejectsEveryTruncation) {
    std::vector<uint8_t> bytes = small_file();
    // Padding after the last tensor's data is optional; every cut before its end must fail.
    auto whole = GgufFile::parse(bytes, "t");
    const GgufTensor* last = &whole->tensors().back();
    size_t data_end = static_cast<size_t>(last->data + last->n_bytes - bytes.data());
    for (size_t n = 0; n < bytes.size(); ++n) {
        std::vector<uint8_t> cut(bytes.begin(), bytes.begin() + n);
        EXPECT_EQ(error_of(cut).empty(), n >= data_end) << "file cut at " << n;
    }
}

TEST(Gguf, RejectsBadVersions) {
    std::vector<uint8_t> bytes = small_file();
    bytes[4] = 1;
    EXPECT_NE(error_of(bytes).find("version 1 is not supported"), std::string::npos);
    bytes[4] = 0, bytes[7] = 3;
    EXPECT_NE(error_of(bytes).find("big-endian"), std::string::npos);
    bytes[4] = 9, bytes[7] = 0;
    EXPECT_NE(error_of(bytes).find("unsupported GGUF version 9"), std::string::npos);
}

// Patches the u64 at `offset`.
void patch_u64(std::vector<uint8_t>& b, size_t offset, uint64_t v) {
    std::memcpy(&b[offset], &v, 8);
}

TEST(Gguf, RejectsHugeCounts) {
    std::vector<uint8_t> bytes = small_file();
    patch_u64(bytes, 8, uint64_t{1} << 60);  // tensor count
    EXPECT_NE(error_of(bytes).find("tensor count"), std::string::npos);
    bytes = small_file();
    patch_u64(bytes, 16, ~uint64_t{0});  // metadata count
    EXPECT_NE(error_of(bytes).find("metadata count"), std::string::npos);
    bytes = small_file();
    patch_u64(bytes, 24, ~uint64_t{0});  // length of the first key
    EXPECT_NE(error_of(bytes).find("truncated or corrupt"), std::string::npos);
}

// A layer count near 2^31 once sized the per-layer table before any tensor was read (found
// by the fuzzer: gigabytes allocated from a 200-byte file).
TEST(Gguf, ModelConfigRejectsAHugeLayerCount) {
    GgufWriter w;
    w.add_string("general.architecture", "llama");
    w.add_u32("llama.block_count", 1u << 30);
    w.add_u32("llama.embedding_length", 64);
    w.add_u32("llama.feed_forward_length", 128);
    w.add_u32("llama.attention.head_count", 4);
    w.add_u32("llama.context_length", 256);
    const std::vector<uint8_t> bytes = w.to_bytes();
    auto f = GgufFile::parse(bytes, "test.gguf");
    try {
        read_model_config(*f);
        FAIL() << "a billion layers were accepted";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("block_count"), std::string::npos) << e.what();
    }
}

TEST(Gguf, RejectsHostileArrays) {
    GgufWriter w;
    std::vector<int32_t> ids{1, 2, 3};
    w.add_i32_array("ids", ids);
    std::vector<uint8_t> bytes = w.to_bytes();
    // layout: header 24, key len 8 + "ids" 3, type 4, elem type 4, count 8
    patch_u64(bytes, 24 + 8 + 3 + 4 + 4, uint64_t{1} << 62);
    EXPECT_NE(error_of(bytes).find("runs past the end"), std::string::npos);

    // An array of arrays nested 100 deep: must stop at the nesting limit, not overflow.
    std::vector<uint8_t> deep{'G', 'G', 'U', 'F', 3, 0, 0, 0};
    auto put64 = [&](uint64_t v) {
        for (int i = 0; i < 8; ++i) deep.push_back(uint8_t(v >> (8 * i)));
    };
    auto put32 = [&](uint32_t v) {
        for (int i = 0; i < 4; ++i) deep.push_back(uint8_t(v >> (8 * i)));
    };
    put64(0), put64(1), put64(1), deep.push_back('k'), put32(9);
    for (int i = 0; i < 100; ++i) put32(9), put64(1);
    EXPECT_NE(error_of(deep).find("nested deeper"), std::string::npos);
}

TEST(Gguf, RejectsBadTensors) {
    auto with_tensor = [](TensorType type, std::vector<uint64_t> dims, size_t n_bytes) {
        GgufWriter w;
        std::vector<uint8_t> data(n_bytes);
        w.add_tensor("t", type, dims, data);
        return w.to_bytes();
    };
    // Locate fields of the single tensor entry: header 24, name 8+1, n_dims 4, dims, type 4,
    // offset 8.
    std::vector<uint8_t> b = with_tensor(TensorType::F32, {8}, 32);
    size_t type_at = 24 + 9 + 4 + 8, offset_at = type_at + 4;
    b[type_at] = 77;
    EXPECT_NE(error_of(b).find("unknown type id 77"), std::string::npos);
    b = with_tensor(TensorType::F32, {8}, 32);
    b[offset_at] = 3;
    EXPECT_NE(error_of(b).find("not a multiple of the alignment"), std::string::npos);
    b = with_tensor(TensorType::F32, {8}, 32);
    b[offset_at] = 64;
    EXPECT_NE(error_of(b).find("runs past the end"), std::string::npos);
    b = with_tensor(TensorType::Q8_0, {32}, 34);
    b[24 + 9 + 4] = 16;  // a Q8_0 row of 16 elements is not whole blocks
    EXPECT_NE(error_of(b).find("not a multiple of the block size"), std::string::npos);
    b = with_tensor(TensorType::F32, {8}, 32);
    b[24 + 9] = 7;  // seven dimensions
    EXPECT_NE(error_of(b).find("dimensions"), std::string::npos);
    b = with_tensor(TensorType::F32, {8}, 32);
    patch_u64(b, 24 + 9 + 4, uint64_t{1} << 63);
    EXPECT_NE(error_of(b).find("invalid shape"), std::string::npos);
}

TEST(Gguf, RejectsDuplicatesAndBadAlignment) {
    GgufWriter w;
    w.add_u32("k", 1);
    w.add_u32("k", 2);
    EXPECT_NE(error_of(w.to_bytes()).find("duplicate metadata key 'k'"), std::string::npos);
    GgufWriter a;
    a.add_u32("general.alignment", 24);
    EXPECT_NE(error_of(a.to_bytes()).find("not a power of two"), std::string::npos);
    GgufWriter s;
    s.add_string("general.alignment", "32");
    EXPECT_NE(error_of(s.to_bytes()).find("must be a u32"), std::string::npos);
}

// Tensors filled while writing give the same bytes as copied ones, in memory and on disk;
// a general.alignment key given as metadata is the alignment, written once.
TEST(Gguf, WritesFilledTensorsAndAlignmentFromMetadata) {
    std::vector<uint8_t> a(4 * 5, 0xab), b(2 * 20, 0x5c);
    auto make = [&](bool fill) {
        GgufWriter w;
        w.add_u32("general.alignment", 64);
        std::vector<uint64_t> da{5}, db{64};
        if (fill) {
            w.add_tensor("a", TensorType::F32, da, [&](std::span<uint8_t> out) {
                ASSERT_EQ(out.size(), a.size());
                std::copy(a.begin(), a.end(), out.begin());
            });
            w.add_tensor("b", TensorType::Q4_1, db, [&](std::span<uint8_t> out) {
                ASSERT_EQ(out.size(), b.size());
                std::copy(b.begin(), b.end(), out.begin());
            });
        } else {
            w.add_tensor("a", TensorType::F32, da, a);
            w.add_tensor("b", TensorType::Q4_1, db, b);
        }
        return w;
    };
    std::vector<uint8_t> copied = make(false).to_bytes();
    EXPECT_EQ(make(true).to_bytes(), copied);
    auto path = std::filesystem::temp_directory_path() / "kite_gguf_fill_test.gguf";
    make(true).write_file(path.string());
    auto f = GgufFile::open(path.string());
    EXPECT_EQ(f->file_size(), copied.size());
    EXPECT_EQ(f->alignment(), 64u);
    EXPECT_EQ(f->metadata().size(), 1u);
    EXPECT_EQ(f->find_tensor("b")->offset, 64u);
    EXPECT_EQ(f->find_tensor("b")->data[0], 0x5c);
    f.reset();
    std::filesystem::remove(path);
}

// Random corruption: every outcome is either a parsed file or a kite::Error.
TEST(Gguf, SurvivesRandomCorruption) {
    std::vector<uint8_t> good = small_file();
    std::mt19937 rng(1234);
    int rejected = 0;
    for (int trial = 0; trial < 20000; ++trial) {
        std::vector<uint8_t> b = good;
        int flips = 1 + trial % 4;
        for (int i = 0; i < flips; ++i) b[rng() % b.size()] = static_cast<uint8_t>(rng());
        if (!error_of(b).empty()) rejected++;
    }
    EXPECT_GT(rejected, 1000);  // corruption of the header and index is noticed
}

}  // namespace
}  // namespace kite

namespace kite {
namespace {

// A small general.alignment is accepted, but a tensor whose data would start at an address
// its type's fields cannot be read from (f32 values off 4 bytes, f16 block scales off 2) is
// refused with one clear error instead of undefined behaviour in the kernels. Metadata of
// each length mod 4 puts the data start at every offset.
TEST(Gguf, SmallAlignmentLoadsOnlyAlignedTensorData) {
    int loaded = 0, refused = 0;
    for (uint32_t alignment : {1u, 2u}) {
        for (size_t pad = 0; pad < 4; ++pad) {
            GgufWriter w;
            w.set_alignment(alignment);
            w.add_string("pad", std::string(pad, 'x'));
            std::vector<uint8_t> q8(34, 1), f32(4, 0);
            w.add_tensor("q", TensorType::Q8_0, std::vector<uint64_t>{32}, q8);
            w.add_tensor("f", TensorType::F32, std::vector<uint64_t>{1}, f32);
            const std::vector<uint8_t> bytes = w.to_bytes();
            try {
                auto f = GgufFile::parse(bytes, "test.gguf");
                EXPECT_EQ(reinterpret_cast<uintptr_t>(f->find_tensor("q")->data) % 2, 0u);
                EXPECT_EQ(reinterpret_cast<uintptr_t>(f->find_tensor("f")->data) % 4, 0u);
                ++loaded;
            } catch (const Error& e) {
                const std::string what = e.what();
                EXPECT_NE(what.find("rewrite the file with the default alignment"),
                          std::string::npos)
                    << what;
                EXPECT_TRUE(what.find("not a multiple of 4 as its type F32") != std::string::npos ||
                            what.find("not a multiple of 2 as its type Q8_0") != std::string::npos)
                    << what;
                ++refused;
            }
        }
    }
    EXPECT_GT(loaded, 0);
    EXPECT_GT(refused, 0);
}

}  // namespace
}  // namespace kite
