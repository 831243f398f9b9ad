#include "gguf/gguf_writer.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

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

constexpr std::string_view kAlignmentKey = "general.alignment";

bool is_power_of_two(uint32_t x) {
    return x != 0 && (x & (x - 1)) == 0;
}

}  // namespace

void GgufWriter::key(std::string_view k, GgufValueType type) {
    if (k == kAlignmentKey) alignment_key_ = true;
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
    // A bad value is still written as given (tests craft such files), but not obeyed.
    if (k == kAlignmentKey && is_power_of_two(v)) alignment_ = v;
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
    if (k == kAlignmentKey && v.type == GgufValueType::U32 && v.raw.size() == 4) {
        uint32_t a;
        std::memcpy(&a, v.raw.data(), 4);
        if (is_power_of_two(a)) alignment_ = a;
    }
}

uint64_t GgufWriter::checked_bytes(std::string_view name, TensorType type,
                                   std::span<const uint64_t> dims) const {
    const TensorTypeInfo* info = tensor_type_info(static_cast<uint32_t>(type));
    if (!info) fail("cannot write tensor '{}': unknown type", name);
    if (dims.empty() || dims[0] % info->block_size != 0)
        fail("cannot write tensor '{}': row length does not fit its {} blocks", name, info->name);
    uint64_t n = 1;
    for (uint64_t d : dims) n *= d;
    return n / info->block_size * info->block_bytes;
}

void GgufWriter::add_tensor(std::string_view name, TensorType type, std::span<const uint64_t> dims,
                            std::span<const uint8_t> data) {
    uint64_t n_bytes = checked_bytes(name, type, dims);
    if (n_bytes != data.size())
        fail("cannot write tensor '{}': {} bytes do not fit its {} shape", name, data.size(),
             tensor_type_name(type));
    tensors_.push_back({std::string(name),
                        type,
                        {dims.begin(), dims.end()},
                        n_bytes,
                        {data.begin(), data.end()},
                        nullptr});
}

void GgufWriter::add_tensor(std::string_view name, TensorType type, std::span<const uint64_t> dims,
                            TensorFill fill) {
    uint64_t n_bytes = checked_bytes(name, type, dims);
    tensors_.push_back(
        {std::string(name), type, {dims.begin(), dims.end()}, n_bytes, {}, std::move(fill)});
}

std::vector<uint8_t> GgufWriter::header() const {
    std::vector<uint8_t> out;
    for (char c : {'G', 'G', 'U', 'F'}) out.push_back(static_cast<uint8_t>(c));
    put<uint32_t>(out, 3);
    put<uint64_t>(out, tensors_.size());
    bool add_alignment = alignment_ != 32 && !alignment_key_;
    put<uint64_t>(out, n_kv_ + (add_alignment ? 1 : 0));
    out.insert(out.end(), metadata_.begin(), metadata_.end());
    if (add_alignment) {
        put_string(out, kAlignmentKey);
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
        offset += (t.n_bytes + alignment_ - 1) / alignment_ * alignment_;
    }
    pad_to(out, alignment_);
    return out;
}

std::vector<uint8_t> GgufWriter::to_bytes() const {
    std::vector<uint8_t> out = header();
    for (const Tensor& t : tensors_) {
        size_t at = out.size();
        if (t.fill) {
            out.resize(at + t.n_bytes);
            t.fill(std::span<uint8_t>(out.data() + at, t.n_bytes));
        } else {
            out.insert(out.end(), t.data.begin(), t.data.end());
        }
        pad_to(out, alignment_);
    }
    return out;
}

void GgufWriter::write_file(const std::string& path) const {
    struct Closer {
        void operator()(FILE* f) const { std::fclose(f); }
    };
    std::unique_ptr<FILE, Closer> f(std::fopen(path.c_str(), "wb"));
    if (!f) fail("cannot create '{}': {}", path, std::strerror(errno));
    auto write = [&](const uint8_t* data, size_t n) {
        if (n != 0 && std::fwrite(data, 1, n, f.get()) != n)
            fail("cannot write '{}': {}", path, std::strerror(errno));
    };
    std::vector<uint8_t> head = header();
    write(head.data(), head.size());
    std::vector<uint8_t> buffer;  // reused by every tensor that is filled on the fly
    const std::vector<uint8_t> padding(alignment_, 0);
    for (const Tensor& t : tensors_) {
        if (t.fill) {
            buffer.assign(t.n_bytes, 0);
            t.fill(buffer);
            write(buffer.data(), buffer.size());
        } else {
            write(t.data.data(), t.data.size());
        }
        write(padding.data(), (alignment_ - t.n_bytes % alignment_) % alignment_);
    }
    if (std::fclose(f.release()) != 0) fail("cannot write '{}': {}", path, std::strerror(errno));
}

}  // namespace kite
