// GGUF writer (version 3): metadata and tensors into bytes or a file.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "gguf/gguf_file.h"

namespace kite {

class GgufWriter {
  public:
    void add_string(std::string_view key, std::string_view value);
    void add_u32(std::string_view key, uint32_t value);
    void add_i32(std::string_view key, int32_t value);
    void add_u64(std::string_view key, uint64_t value);
    void add_f32(std::string_view key, float value);
    void add_bool(std::string_view key, bool value);
    void add_string_array(std::string_view key, std::span<const std::string> values);
    void add_string_array(std::string_view key, std::span<const std::string_view> values);
    void add_f32_array(std::string_view key, std::span<const float> values);
    void add_i32_array(std::string_view key, std::span<const int32_t> values);
    // Copies a value (any type) from another file, as it was encoded there.
    void add_raw(std::string_view key, const GgufValue& value);

    // `data` must hold exactly the bytes the type and shape need; it is copied.
    void add_tensor(std::string_view name, TensorType type, std::span<const uint64_t> dims,
                    std::span<const uint8_t> data);

    // A tensor whose bytes are produced while the file is written, so that a whole model
    // never has to be in memory: `fill` gets a buffer of exactly the tensor's size. Fill
    // functions run one at a time, in tensor order; an exception from one aborts the write.
    using TensorFill = std::function<void(std::span<uint8_t> out)>;
    void add_tensor(std::string_view name, TensorType type, std::span<const uint64_t> dims,
                    TensorFill fill);

    // The data alignment. A u32 "general.alignment" key added as metadata (add_u32 or
    // add_raw) sets it too; otherwise the key is written only when it is not the default 32.
    void set_alignment(uint32_t alignment) { alignment_ = alignment; }

    std::vector<uint8_t> to_bytes() const;
    // Streams the file: header, then each tensor's data in turn. Throws kite::Error.
    void write_file(const std::string& path) const;

  private:
    void key(std::string_view k, GgufValueType type);
    uint64_t checked_bytes(std::string_view name, TensorType type,
                           std::span<const uint64_t> dims) const;
    std::vector<uint8_t> header() const;  // up to the (aligned) start of the tensor data

    struct Tensor {
        std::string name;
        TensorType type;
        std::vector<uint64_t> dims;
        uint64_t n_bytes = 0;
        std::vector<uint8_t> data;  // empty when `fill` produces the bytes
        TensorFill fill;
    };
    std::vector<uint8_t> metadata_;  // encoded key/value pairs
    uint64_t n_kv_ = 0;
    bool alignment_key_ = false;  // metadata_ already holds general.alignment
    std::vector<Tensor> tensors_;
    uint32_t alignment_ = 32;
};

}  // namespace kite
