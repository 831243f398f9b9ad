// GGUF reader: header, metadata and tensor index of a model file, validated against its
// size, with tensor data used in place from a read-only memory map.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/mapped_file.h"
#include "gguf/tensor_type.h"

namespace kite {

enum class GgufValueType : uint32_t {
    U8 = 0,
    I8 = 1,
    U16 = 2,
    I16 = 3,
    U32 = 4,
    I32 = 5,
    F32 = 6,
    BOOL = 7,
    STRING = 8,
    ARRAY = 9,
    U64 = 10,
    I64 = 11,
    F64 = 12,
};

const char* gguf_value_type_name(GgufValueType type);

// One metadata value, still encoded: `raw` points into the file. Arrays keep their element
// type and count, and are decoded only when asked for (a vocabulary has ~10^5 strings).
struct GgufValue {
    GgufValueType type = GgufValueType::U8;
    std::span<const uint8_t> raw;  // for arrays: the elements, after the array header
    GgufValueType elem_type = GgufValueType::U8;  // arrays only
    uint64_t count = 0;                           // arrays only
};

struct GgufTensor {
    std::string_view name;  // points into the file, like every name and string here
    uint32_t type_id = 0;
    TensorType type() const { return static_cast<TensorType>(type_id); }
    uint32_t n_dims = 0;
    std::array<uint64_t, 4> dims{1, 1, 1, 1};  // dims[0] is the contiguous (row) dimension
    uint64_t n_elements = 0;
    uint64_t offset = 0;  // from the start of the data section
    uint64_t n_bytes = 0;
    const uint8_t* data = nullptr;
};

class GgufFile {
  public:
    // Maps and parses the file; throws kite::Error naming the file and the problem.
    static std::unique_ptr<GgufFile> open(const std::string& path);
    // Parses bytes that the caller keeps alive (tests and the fuzzer).
    static std::unique_ptr<GgufFile> parse(std::span<const uint8_t> bytes, std::string name);

    const std::string& name() const { return name_; }
    uint32_t version() const { return version_; }
    uint64_t alignment() const { return alignment_; }
    uint64_t file_size() const { return bytes_.size(); }

    // Metadata in file order.
    const std::vector<std::pair<std::string_view, GgufValue>>& metadata() const {
        return metadata_;
    }
    const GgufValue* find(std::string_view key) const;

    // Typed getters: nullopt when the key is absent; kite::Error when it has another type.
    // Integers of any width and sign convert to int64 (u64 above INT64_MAX is an error).
    std::optional<std::string_view> get_string(std::string_view key) const;
    std::optional<int64_t> get_int(std::string_view key) const;
    std::optional<double> get_float(std::string_view key) const;  // f32, f64
    std::optional<bool> get_bool(std::string_view key) const;
    std::optional<std::vector<std::string_view>> get_string_array(std::string_view key) const;
    std::optional<std::vector<int64_t>> get_int_array(std::string_view key) const;
    std::optional<std::vector<float>> get_float_array(std::string_view key) const;

    // Renders a value for display (arrays as "[type x count]").
    std::string describe(const GgufValue& value) const;

    const std::vector<GgufTensor>& tensors() const { return tensors_; }
    const GgufTensor* find_tensor(std::string_view name) const;

    // Drops the resident pages of bytes [p, p + n) of a mapped file (see MappedFile).
    void drop_pages(const uint8_t* p, size_t n) const {
        if (mapping_) mapping_->drop_pages(p, n);
    }

  private:
    GgufFile() = default;
    void parse_all();
    [[noreturn]] void type_error(std::string_view key, const GgufValue& v,
                                 const char* wanted) const;

    std::unique_ptr<MappedFile> mapping_;  // null when parsing caller-owned bytes
    std::span<const uint8_t> bytes_;
    std::string name_;
    uint32_t version_ = 0;
    uint64_t alignment_ = 32;
    std::vector<std::pair<std::string_view, GgufValue>> metadata_;
    std::unordered_map<std::string_view, size_t> metadata_index_;
    std::vector<GgufTensor> tensors_;
    std::unordered_map<std::string_view, size_t> tensor_index_;
};

}  // namespace kite
