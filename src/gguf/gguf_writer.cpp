#include "gguf/gguf_writer.h"

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "core/error.h"

namespace kite {

namespace {

template <typename T>
void put(std::vector<uint8_t>& out, T v) {
    size_t at = out.size();
    out.resize(at + sizeof v);
    std::memcpy(out.data() + at, &v, sizeof v);
}

void put_string(std::vector<uint8_t>& out, std::string_view s) {
    put<uint64_t>(out, s.size());
    out.insert(out.end(), s.begin(), s.end());
}

void pad_to(std::vector<uint8_t>& out, uint64_t alignment) {
    while (out.size() % alignment != 0) out.push_back(0);
}

}  // namespace

void GgufWriter::key(std::string_view k, GgufValueType type) {
    put_string(metadata_, k);
    put<uint32_t>(metadata_, static_cast<uint32_t>(type));
    n_kv_++;
}

void GgufWriter::add_string(std::string_view k, std::string_view v) {
    key(k, GgufValueType::STRING);
    put_string(metadata_, v);
}
void GgufWriter::add_u32(std::string_view k, uint32_t v) {
    key(k, GgufValueType::U32);
    put(metadata_, v);
}
void GgufWriter::add_i32(std::string_view k, int32_t v) {
    key(k, GgufValueType::I32);
    put(metadata_, v);
}
void GgufWriter::add_u64(std::string_view k, uint64_t v) {
    key(k, GgufValueType::U64);
    put(metadata_, v);
}
void GgufWriter::add_f32(std::string_view k, float v) {
    key(k, GgufValueType::F32);
    put(metadata_, v);
}
void GgufWriter::add_bool(std::string_view k, bool v) {
    key(k, GgufValueType::BOOL);
    put<uint8_t>(metadata_, v ? 1 : 0);
}

template <typename S>
static void put_string_array(std::vector<uint8_t>& out, std::span<const S> values) {
    put<uint32_t>(out, static_cast<uint32_t>(GgufValueType::STRING));
    put<uint64_t>(out, values.size());
    for (const auto& s : values) put_string(out, s);
}

void GgufWriter::add_string_array(std::string_view k, std::span<const std::string> values) {
    key(k, GgufValueType::ARRAY);
    put_string_array(metadata_, values);
}
void GgufWriter::add_string_array(std::string_view k, std::span<const std::string_view> values) {
    key(k, GgufValueType::ARRAY);
    put_string_array(metadata_, values);
}
void GgufWriter::add_f32_array(std::string_view k, std::span<const float> values) {
    key(k, GgufValueType::ARRAY);
    put<uint32_t>(metadata_, static_cast<uint32_t>(GgufValueType::F32));
    put<uint64_t>(metadata_, values.size());
    for (float v : values) put(metadata_, v);
}
void GgufWriter::add_i32_array(std::string_view k, std::span<const int32_t> values) {
    key(k, GgufValueType::ARRAY);
    put<uint32_t>(metadata_, static_cast<uint32_t>(GgufValueType::I32));
    put<uint64_t>(metadata_, values.size());
    for (int32_t v : values) put(metadata_, v);
}

void GgufWriter::add_raw(std::string_view k, const GgufValue& v) {
    key(k, v.type);
    if (v.type == GgufValueType::ARRAY) {
        put<uint32_t>(metadata_, static_cast<uint32_t>(v.elem_type));
        put<uint64_t>(metadata_, v.count);
    }
    metadata_.insert(metadata_.end(), v.raw.begin(), v.raw.end());
}

void GgufWriter::add_tensor(std::string_view name, TensorType type, std::span<const uint64_t> dims,
                            std::span<const uint8_t> data) {
    const TensorTypeInfo* info = tensor_type_info(static_cast<uint32_t>(type));
    if (!info) fail("cannot write tensor '{}': unknown type", name);
    uint64_t n = 1;
    for (uint64_t d : dims) n *= d;
    if (dims.empty() || dims[0] % info->block_size != 0 ||
        n / info->block_size * info->block_bytes != data.size())
        fail("cannot write tensor '{}': {} bytes do not fit its {} shape", name, data.size(),
             info->name);
    tensors_.push_back(
        {std::string(name), type, {dims.begin(), dims.end()}, {data.begin(), data.end()}});
}

std::vector<uint8_t> GgufWriter::to_bytes() const {
    std::vector<uint8_t> out;
    for (char c : {'G', 'G', 'U', 'F'}) out.push_back(static_cast<uint8_t>(c));
    put<uint32_t>(out, 3);
    put<uint64_t>(out, tensors_.size());
    bool custom_alignment = alignment_ != 32;
    put<uint64_t>(out, n_kv_ + (custom_alignment ? 1 : 0));
    out.insert(out.end(), metadata_.begin(), metadata_.end());
    if (custom_alignment) {
        put_string(out, "general.alignment");
        put<uint32_t>(out, static_cast<uint32_t>(GgufValueType::U32));
        put<uint32_t>(out, alignment_);
    }
    uint64_t offset = 0;
    for (const Tensor& t : tensors_) {
        put_string(out, t.name);
        put<uint32_t>(out, static_cast<uint32_t>(t.dims.size()));
        for (uint64_t d : t.dims) put(out, d);
        put<uint32_t>(out, static_cast<uint32_t>(t.type));
        put(out, offset);
        offset += (t.data.size() + alignment_ - 1) / alignment_ * alignment_;
    }
    pad_to(out, alignment_);
    for (const Tensor& t : tensors_) {
        out.insert(out.end(), t.data.begin(), t.data.end());
        pad_to(out, alignment_);
    }
    return out;
}

void GgufWriter::write_file(const std::string& path) const {
    std::vector<uint8_t> bytes = to_bytes();
    FILE* f = std::fopen(path.c_str(), "wb");
    if (!f) fail("cannot create '{}': {}", path, std::strerror(errno));
    bool ok = std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
    ok &= std::fclose(f) == 0;
    if (!ok) fail("cannot write '{}': {}", path, std::strerror(errno));
}

}  // namespace kite
