#include "gguf/gguf_file.h"

#include <cstdint>
#include <cstring>
#include <limits>

#include <fmt/format.h>

#include "core/error.h"

namespace kite {

namespace {

constexpr uint64_t kMaxKeyLength = 65535;  // the format's limit on metadata keys
constexpr uint32_t kMaxDims = 4;
constexpr int kMaxArrayNesting = 8;  // deeper nesting is hostile, not a model

uint64_t value_size(GgufValueType t) {
    switch (t) {
        case GgufValueType::U8:
        case GgufValueType::I8:
        case GgufValueType::BOOL:
            return 1;
        case GgufValueType::U16:
        case GgufValueType::I16:
            return 2;
        case GgufValueType::U32:
        case GgufValueType::I32:
        case GgufValueType::F32:
            return 4;
        case GgufValueType::U64:
        case GgufValueType::I64:
        case GgufValueType::F64:
            return 8;
        case GgufValueType::STRING:
        case GgufValueType::ARRAY:
            return 0;  // variable
    }
    return 0;
}

bool is_known_value_type(uint32_t t) {
    return t <= static_cast<uint32_t>(GgufValueType::F64);
}

template <typename T>
T load(const uint8_t* p) {
    T v;
    std::memcpy(&v, p, sizeof v);
    return v;
}

// Reads the file front to back; every read is checked against the bytes that remain.
class Cursor {
  public:
    Cursor(std::span<const uint8_t> bytes, const std::string& name) : bytes_(bytes), name_(name) {}

    uint64_t pos() const { return pos_; }
    uint64_t remaining() const { return bytes_.size() - pos_; }

    template <typename T>
    T read(const char* what) {
        need(sizeof(T), what);
        T v = load<T>(bytes_.data() + pos_);
        pos_ += sizeof(T);
        return v;
    }

    std::span<const uint8_t> take(uint64_t n, const char* what) {
        need(n, what);
        auto s = bytes_.subspan(pos_, n);
        pos_ += n;
        return s;
    }

    std::string_view read_string(const char* what) {
        uint64_t len = read<uint64_t>(what);
        auto s = take(len, what);
        return {reinterpret_cast<const char*>(s.data()), s.size()};
    }

    void need(uint64_t n, const char* what) const {
        if (n > remaining())
            fail("'{}': file is truncated or corrupt: {} needs {} bytes at offset {}, only {} left",
                 name_, what, n, pos_, remaining());
    }

  private:
    std::span<const uint8_t> bytes_;
    const std::string& name_;
    uint64_t pos_ = 0;
};

// Skips one encoded value of type `t`, checking it fits; returns nothing, moves the cursor.
void skip_value(Cursor& c, GgufValueType t, const std::string& file, int depth);

void skip_array_elements(Cursor& c, GgufValueType elem, uint64_t count, const std::string& file,
                         int depth) {
    uint64_t fixed = value_size(elem);
    if (fixed > 0) {
        if (count > c.remaining() / fixed)
            fail("'{}': array of {} {} values at offset {} runs past the end of the file", file,
                 count, gguf_value_type_name(elem), c.pos());
        c.take(count * fixed, "array");
        return;
    }
    // Each string takes at least 8 bytes (its length), each array at least 12.
    uint64_t min_size = elem == GgufValueType::STRING ? 8 : 12;
    if (count > c.remaining() / min_size)
        fail("'{}': array of {} {} values at offset {} runs past the end of the file", file, count,
             gguf_value_type_name(elem), c.pos());
    for (uint64_t i = 0; i < count; ++i) skip_value(c, elem, file, depth);
}

GgufValueType read_value_type(Cursor& c, const std::string& file, const char* what) {
    uint64_t at = c.pos();
    uint32_t t = c.read<uint32_t>(what);
    if (!is_known_value_type(t))
        fail("'{}': unknown metadata value type {} at offset {}", file, t, at);
    return static_cast<GgufValueType>(t);
}

void skip_value(Cursor& c, GgufValueType t, const std::string& file, int depth) {
    if (t == GgufValueType::STRING) {
        c.read_string("string");
    } else if (t == GgufValueType::ARRAY) {
        if (depth >= kMaxArrayNesting)
            fail("'{}': arrays nested deeper than {} at offset {}", file, kMaxArrayNesting,
                 c.pos());
        GgufValueType elem = read_value_type(c, file, "array element type");
        uint64_t count = c.read<uint64_t>("array length");
        skip_array_elements(c, elem, count, file, depth + 1);
    } else {
        c.take(value_size(t), gguf_value_type_name(t));
    }
}

// The alignment every block of a tensor of this type keeps when the tensor's start has it:
// the largest power of two dividing the block's bytes, up to 8 (f64 and i64 elements).
uint32_t data_alignment(const TensorTypeInfo& info) {
    uint32_t a = 1;
    while (a < 8 && info.block_bytes % (2 * a) == 0) a *= 2;
    return a;
}

uint64_t align_up(uint64_t x, uint64_t alignment) {
    return x + (alignment - x % alignment) % alignment;
}

}  // namespace

const char* gguf_value_type_name(GgufValueType type) {
    switch (type) {
        case GgufValueType::U8:
            return "u8";
        case GgufValueType::I8:
            return "i8";
        case GgufValueType::U16:
            return "u16";
        case GgufValueType::I16:
            return "i16";
        case GgufValueType::U32:
            return "u32";
        case GgufValueType::I32:
            return "i32";
        case GgufValueType::F32:
            return "f32";
        case GgufValueType::BOOL:
            return "bool";
        case GgufValueType::STRING:
            return "string";
        case GgufValueType::ARRAY:
            return "array";
        case GgufValueType::U64:
            return "u64";
        case GgufValueType::I64:
            return "i64";
        case GgufValueType::F64:
            return "f64";
    }
    return "?";
}

std::unique_ptr<GgufFile> GgufFile::open(const std::string& path) {
    auto mapping = std::make_unique<MappedFile>(path);
    std::unique_ptr<GgufFile> f(new GgufFile());
    f->bytes_ = mapping->bytes();
    f->mapping_ = std::move(mapping);
    f->name_ = path;
    f->parse_all();
    return f;
}

std::unique_ptr<GgufFile> GgufFile::parse(std::span<const uint8_t> bytes, std::string name) {
    std::unique_ptr<GgufFile> f(new GgufFile());
    f->bytes_ = bytes;
    f->name_ = std::move(name);
    f->parse_all();
    return f;
}

void GgufFile::parse_all() {
    Cursor c(bytes_, name_);
    if (bytes_.size() < 4 || std::memcmp(bytes_.data(), "GGUF", 4) != 0)
        fail("'{}' is not a GGUF file (it does not start with the bytes 'GGUF')", name_);
    c.take(4, "magic");
    version_ = c.read<uint32_t>("version");
    if (version_ == 1) fail("'{}': GGUF version 1 is not supported (only versions 2 and 3)", name_);
    if (version_ != 2 && version_ != 3) {
        bool big_endian = version_ == 0x02000000 || version_ == 0x03000000;
        fail("'{}': unsupported GGUF version {}{}", name_, version_,
             big_endian ? " (a big-endian file; only little-endian is supported)"
                        : " (only versions 2 and 3)");
    }
    uint64_t n_tensors = c.read<uint64_t>("tensor count");
    uint64_t n_kv = c.read<uint64_t>("metadata count");

    // Counts are checked against the smallest possible entry so that a hostile count cannot
    // make us reserve gigabytes: a key/value takes >= 13 bytes, a tensor entry >= 32.
    if (n_kv > c.remaining() / 13)
        fail("'{}': metadata count {} is larger than the file can hold", name_, n_kv);
    metadata_.reserve(n_kv);
    for (uint64_t i = 0; i < n_kv; ++i) {
        uint64_t key_at = c.pos();
        std::string_view key = c.read_string("metadata key");
        if (key.empty() || key.size() > kMaxKeyLength)
            fail("'{}': metadata key at offset {} has invalid length {}", name_, key_at,
                 key.size());
        if (metadata_index_.count(key)) fail("'{}': duplicate metadata key '{}'", name_, key);
        GgufValue v;
        v.type = read_value_type(c, name_, "metadata value type");
        uint64_t start = c.pos();
        if (v.type == GgufValueType::ARRAY) {
            v.elem_type = read_value_type(c, name_, "array element type");
            v.count = c.read<uint64_t>("array length");
            start = c.pos();
            skip_array_elements(c, v.elem_type, v.count, name_, 1);
        } else {
            skip_value(c, v.type, name_, 0);
        }
        v.raw = bytes_.subspan(start, c.pos() - start);
        metadata_index_.emplace(key, metadata_.size());
        metadata_.emplace_back(key, v);
    }

    if (const GgufValue* a = find("general.alignment")) {
        if (a->type != GgufValueType::U32)
            fail("'{}': general.alignment must be a u32, found {}", name_,
                 gguf_value_type_name(a->type));
        alignment_ = load<uint32_t>(a->raw.data());
        if (alignment_ == 0 || (alignment_ & (alignment_ - 1)) != 0)
            fail("'{}': general.alignment {} is not a power of two", name_, alignment_);
    }

    if (n_tensors > c.remaining() / 32)
        fail("'{}': tensor count {} is larger than the file can hold", name_, n_tensors);
    tensors_.reserve(n_tensors);
    for (uint64_t i = 0; i < n_tensors; ++i) {
        GgufTensor t;
        t.name = c.read_string("tensor name");
        if (t.name.empty()) fail("'{}': tensor #{} has an empty name", name_, i);
        if (tensor_index_.count(t.name)) fail("'{}': duplicate tensor '{}'", name_, t.name);
        t.n_dims = c.read<uint32_t>("tensor dimension count");
        if (t.n_dims == 0 || t.n_dims > kMaxDims)
            fail("'{}': tensor '{}' has {} dimensions (1 to {} allowed)", name_, t.name, t.n_dims,
                 kMaxDims);
        t.n_elements = 1;
        for (uint32_t d = 0; d < t.n_dims; ++d) {
            t.dims[d] = c.read<uint64_t>("tensor dimension");
            if (t.dims[d] == 0 || t.dims[d] > (uint64_t{1} << 62) / t.n_elements)
                fail("'{}': tensor '{}' has an invalid shape (dimension {} is {})", name_, t.name,
                     d, t.dims[d]);
            t.n_elements *= t.dims[d];
        }
        t.type_id = c.read<uint32_t>("tensor type");
        const TensorTypeInfo* info = tensor_type_info(t.type_id);
        if (!info) fail("'{}': tensor '{}' has unknown type id {}", name_, t.name, t.type_id);
        if (t.dims[0] % info->block_size != 0)
            fail(
                "'{}': tensor '{}' of type {} has a row of {} elements, not a multiple of the "
                "block size {}",
                name_, t.name, info->name, t.dims[0], info->block_size);
        t.n_bytes = t.n_elements / info->block_size * info->block_bytes;
        t.offset = c.read<uint64_t>("tensor offset");
        if (t.offset % alignment_ != 0)
            fail("'{}': tensor '{}' offset {} is not a multiple of the alignment {}", name_, t.name,
                 t.offset, alignment_);
        tensor_index_.emplace(t.name, tensors_.size());
        tensors_.push_back(t);
    }

    uint64_t data_start = align_up(c.pos(), alignment_);
    uint64_t data_size = data_start <= bytes_.size() ? bytes_.size() - data_start : 0;
    for (GgufTensor& t : tensors_) {
        if (t.offset > data_size || t.n_bytes > data_size - t.offset)
            fail(
                "'{}': tensor '{}' ({} bytes at data offset {}) runs past the end of the file; "
                "the file is truncated or corrupt",
                name_, t.name, t.n_bytes, t.offset);
        t.data = bytes_.data() + data_start + t.offset;
        // Kernels read block fields (f16 scales, f32 values) in place: a tensor must start at
        // an address aligned for them, which a small general.alignment does not promise.
        const uint32_t need = data_alignment(*tensor_type_info(t.type_id));
        if (reinterpret_cast<uintptr_t>(t.data) % need != 0)
            fail(
                "'{}': tensor '{}' starts at byte {}, not a multiple of {} as its type {} needs "
                "(general.alignment is {}); rewrite the file with the default alignment 32",
                name_, t.name, data_start + t.offset, need, tensor_type_info(t.type_id)->name,
                alignment_);
    }
}

const GgufValue* GgufFile::find(std::string_view key) const {
    auto it = metadata_index_.find(key);
    return it == metadata_index_.end() ? nullptr : &metadata_[it->second].second;
}

const GgufTensor* GgufFile::find_tensor(std::string_view name) const {
    auto it = tensor_index_.find(name);
    return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

void GgufFile::type_error(std::string_view key, const GgufValue& v, const char* wanted) const {
    std::string found = gguf_value_type_name(v.type);
    if (v.type == GgufValueType::ARRAY)
        found = fmt::format("array of {}", gguf_value_type_name(v.elem_type));
    fail("'{}': metadata '{}' is {}, expected {}", name_, key, found, wanted);
}

namespace {

// Decodes an integer of any width; false if `t` is not an integer type.
bool decode_int(GgufValueType t, const uint8_t* p, int64_t& out, bool& overflow) {
    overflow = false;
    switch (t) {
        case GgufValueType::U8:
            out = load<uint8_t>(p);
            return true;
        case GgufValueType::I8:
            out = load<int8_t>(p);
            return true;
        case GgufValueType::U16:
            out = load<uint16_t>(p);
            return true;
        case GgufValueType::I16:
            out = load<int16_t>(p);
            return true;
        case GgufValueType::U32:
            out = load<uint32_t>(p);
            return true;
        case GgufValueType::I32:
            out = load<int32_t>(p);
            return true;
        case GgufValueType::I64:
            out = load<int64_t>(p);
            return true;
        case GgufValueType::U64: {
            uint64_t u = load<uint64_t>(p);
            overflow = u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
            out = static_cast<int64_t>(u);
            return true;
        }
        default:
            return false;
    }
}

bool decode_float(GgufValueType t, const uint8_t* p, double& out) {
    if (t == GgufValueType::F32)
        out = load<float>(p);
    else if (t == GgufValueType::F64)
        out = load<double>(p);
    else
        return false;
    return true;
}

}  // namespace

std::optional<std::string_view> GgufFile::get_string(std::string_view key) const {
    const GgufValue* v = find(key);
    if (!v) return std::nullopt;
    if (v->type != GgufValueType::STRING) type_error(key, *v, "a string");
    return std::string_view(reinterpret_cast<const char*>(v->raw.data()) + 8, v->raw.size() - 8);
}

std::optional<int64_t> GgufFile::get_int(std::string_view key) const {
    const GgufValue* v = find(key);
    if (!v) return std::nullopt;
    int64_t out = 0;
    bool overflow = false;
    if (!decode_int(v->type, v->raw.data(), out, overflow)) type_error(key, *v, "an integer");
    if (overflow) fail("'{}': metadata '{}' is too large", name_, key);
    return out;
}

std::optional<double> GgufFile::get_float(std::string_view key) const {
    const GgufValue* v = find(key);
    if (!v) return std::nullopt;
    double out = 0;
    if (!decode_float(v->type, v->raw.data(), out)) type_error(key, *v, "a float");
    return out;
}

std::optional<bool> GgufFile::get_bool(std::string_view key) const {
    const GgufValue* v = find(key);
    if (!v) return std::nullopt;
    if (v->type != GgufValueType::BOOL) type_error(key, *v, "a bool");
    return v->raw[0] != 0;
}

std::optional<std::vector<std::string_view>> GgufFile::get_string_array(
    std::string_view key) const {
    const GgufValue* v = find(key);
    if (!v) return std::nullopt;
    if (v->type != GgufValueType::ARRAY || v->elem_type != GgufValueType::STRING)
        type_error(key, *v, "an array of strings");
    std::vector<std::string_view> out;
    out.reserve(v->count);
    const uint8_t* p = v->raw.data();  // lengths were checked while parsing
    for (uint64_t i = 0; i < v->count; ++i) {
        uint64_t len = load<uint64_t>(p);
        out.emplace_back(reinterpret_cast<const char*>(p + 8), len);
        p += 8 + len;
    }
    return out;
}

std::optional<std::vector<int64_t>> GgufFile::get_int_array(std::string_view key) const {
    const GgufValue* v = find(key);
    if (!v) return std::nullopt;
    int64_t probe = 0;
    bool overflow = false;
    uint8_t zeros[8] = {};
    if (v->type != GgufValueType::ARRAY || !decode_int(v->elem_type, zeros, probe, overflow))
        type_error(key, *v, "an array of integers");
    std::vector<int64_t> out(v->count);
    uint64_t size = value_size(v->elem_type);
    for (uint64_t i = 0; i < v->count; ++i) {
        decode_int(v->elem_type, v->raw.data() + i * size, out[i], overflow);
        if (overflow) fail("'{}': metadata '{}' element {} is too large", name_, key, i);
    }
    return out;
}

std::optional<std::vector<float>> GgufFile::get_float_array(std::string_view key) const {
    const GgufValue* v = find(key);
    if (!v) return std::nullopt;
    if (v->type != GgufValueType::ARRAY ||
        (v->elem_type != GgufValueType::F32 && v->elem_type != GgufValueType::F64))
        type_error(key, *v, "an array of floats");
    std::vector<float> out(v->count);
    uint64_t size = value_size(v->elem_type);
    for (uint64_t i = 0; i < v->count; ++i) {
        double d = 0;
        decode_float(v->elem_type, v->raw.data() + i * size, d);
        out[i] = static_cast<float>(d);
    }
    return out;
}

std::string GgufFile::describe(const GgufValue& v) const {
    const uint8_t* p = v.raw.data();
    int64_t i = 0;
    bool overflow = false;
    double d = 0;
    switch (v.type) {
        case GgufValueType::STRING:
            return std::string(reinterpret_cast<const char*>(p) + 8, v.raw.size() - 8);
        case GgufValueType::ARRAY:
            return fmt::format("[{} x {}]", gguf_value_type_name(v.elem_type), v.count);
        case GgufValueType::BOOL:
            return p[0] ? "true" : "false";
        case GgufValueType::U64:
            return fmt::format("{}", load<uint64_t>(p));
        default:
            if (decode_float(v.type, p, d)) return fmt::format("{}", d);
            decode_int(v.type, p, i, overflow);
            return fmt::format("{}", i);
    }
}

}  // namespace kite
