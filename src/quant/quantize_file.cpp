#include "quant/quantize_file.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstring>
#include <exception>
#include <filesystem>
#include <memory>
#include <system_error>
#include <thread>

#include "core/error.h"
#include "gguf/gguf_writer.h"
#include "quant/convert.h"

namespace kite {

namespace {

constexpr std::string_view kFileTypeKey = "general.file_type";

bool ends_with(std::string_view s, std::string_view suffix) {
    return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// Dimensions as ggml counts them: trailing dimensions of 1 do not count.
uint32_t effective_dims(const GgufTensor& t) {
    uint32_t n = t.n_dims;
    while (n > 1 && t.dims[n - 1] == 1) n--;
    return n;
}

// Rows of the source tensor, converted in parallel: each thread dequantizes its rows to
// f32 and quantizes them to the new type.
void convert_tensor(const GgufTensor& t, TensorType to, std::span<uint8_t> out,
                    unsigned n_threads) {
    if (t.type() == to) {
        std::memcpy(out.data(), t.data, out.size());
        return;
    }
    const size_t n = t.dims[0];
    const size_t rows = t.n_elements / n;
    const size_t in_row = row_bytes(t.type(), n), out_row = row_bytes(to, n);
    auto convert_rows = [&](size_t begin, size_t end) {
        std::vector<float> row(n);
        for (size_t r = begin; r < end; ++r) {
            dequantize_row(t.type(), t.data + r * in_row, row.data(), n);
            quantize_row(to, row.data(), out.data() + r * out_row, n);
        }
    };
    // Small tensors are not worth a thread: give each thread at least ~64K values.
    size_t workers = std::min<size_t>(n_threads, std::max<size_t>(1, t.n_elements >> 16));
    workers = std::min(workers, rows);
    if (workers <= 1) {
        convert_rows(0, rows);
        return;
    }
    std::vector<std::exception_ptr> errors(workers);
    std::vector<std::jthread> threads;  // joined on the way out, even if a start fails
    for (size_t w = 0; w < workers; ++w) {
        threads.emplace_back([&, w] {
            try {
                convert_rows(rows * w / workers, rows * (w + 1) / workers);
            } catch (...) {
                errors[w] = std::current_exception();
            }
        });
    }
    threads.clear();  // joins
    for (const std::exception_ptr& e : errors)
        if (e) std::rethrow_exception(e);
}

bool same_file(const std::string& a, const std::string& b) {
    std::error_code ec;
    return std::filesystem::equivalent(a, b, ec) && !ec;
}

}  // namespace

TensorType parse_quantize_type(std::string_view name) {
    std::string upper(name);
    for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    for (const RowConversion& c : row_conversions())
        if (c.quantize && upper == tensor_type_name(c.type)) return c.type;
    fail("unknown type '{}' (types: {}; mixes: {})", name, writable_type_names(),
         quant_mix_names());
}

uint32_t llama_file_type(TensorType type) {
    const RowConversion* c = row_conversion(type);
    if (!c) fail("no file type for {}", tensor_type_name(type));
    return c->llama_file_type;
}

namespace {

bool rows_fill_blocks(const GgufTensor& t, TensorType type) {
    return t.dims[0] % tensor_type_info(static_cast<uint32_t>(type))->block_size == 0;
}

// What llama-quantize writes for a tensor that should become `type`: its narrow-rows type
// where the rows do not fill `type`'s blocks, and F16 where they do not fill that one's either.
TensorType type_for_rows(const GgufTensor& t, TensorType type) {
    if (rows_fill_blocks(t, type)) return type;
    const TensorType fallback = row_conversion(type)->narrow_rows;
    return rows_fill_blocks(t, fallback) ? fallback : TensorType::F16;
}

// Tensors the rules convert to the chosen type: "*.weight" with two or more dimensions.
bool is_weight_matrix(const GgufTensor& t) {
    return effective_dims(t) >= 2 && ends_with(t.name, ".weight");
}

// The plan for every tensor, given the type `wanted_for(i)` chosen for each weight matrix i.
template <typename WantedFor>
std::vector<TensorPlan> plan_tensors(const GgufFile& file, WantedFor wanted_for) {
    std::vector<TensorPlan> plans;
    plans.reserve(file.tensors().size());
    for (size_t i = 0; i < file.tensors().size(); ++i) {
        const GgufTensor& t = file.tensors()[i];
        TensorPlan p;
        p.name = t.name;
        p.from = t.type();
        p.dims.assign(t.dims.begin(), t.dims.begin() + t.n_dims);
        p.bytes_before = t.n_bytes;
        if (is_weight_matrix(t)) {
            p.wanted = wanted_for(i);
            p.to = type_for_rows(t, p.wanted);
            p.fallback = p.to != p.wanted;
        } else {
            p.to = p.wanted = effective_dims(t) == 1 ? TensorType::F32 : p.from;
        }
        if (p.to != p.from && !row_conversion(p.from))
            fail("'{}': tensor '{}' has type {}, which kite quantize cannot convert (it reads {})",
                 file.name(), t.name, tensor_type_name(t.type_id), convertible_type_names());
        p.bytes_after =
            p.to == p.from ? t.n_bytes : t.n_elements / t.dims[0] * row_bytes(p.to, t.dims[0]);
        plans.push_back(std::move(p));
    }
    return plans;
}

// The model's layer count: {arch}.block_count, else one more than the highest "blk.N.".
int layer_count(const GgufFile& file, std::string_view arch) {
    if (auto n = file.get_int(std::string(arch) + ".block_count")) return static_cast<int>(*n);
    int n = 0;
    for (const GgufTensor& t : file.tensors()) {
        int layer = -1;
        if (t.name.starts_with("blk."))
            std::from_chars(t.name.data() + 4, t.name.data() + t.name.size(), layer);
        n = std::max(n, layer + 1);
    }
    return n;
}

}  // namespace

std::vector<TensorPlan> plan_quantize(const GgufFile& file, TensorType type) {
    const RowConversion* conversion = row_conversion(type);
    if (!conversion || !conversion->quantize)
        fail("kite quantize cannot write {} (it writes {})", tensor_type_name(type),
             writable_type_names());
    return plan_tensors(file, [type](size_t) { return type; });
}

std::vector<TensorPlan> plan_quantize(const GgufFile& file, const QuantMix& mix) {
    const std::string_view arch = file.get_string("general.architecture").value_or("");
    if (file.get_int(std::string(arch) + ".expert_count").value_or(0) > 1 || arch == "falcon")
        fail(
            "'{}': kite quantize does not make {} files of {} models (llama-quantize has "
            "rules of their own for them)",
            file.name(), mix.name,
            arch == "falcon" ? std::string("Falcon") : std::string("mixture-of-experts"));
    const bool has_output = file.find_tensor("output.weight") != nullptr;
    std::vector<MixTensor> matrices;
    std::vector<size_t> matrix_of(file.tensors().size());
    for (size_t i = 0; i < file.tensors().size(); ++i) {
        const GgufTensor& t = file.tensors()[i];
        if (!is_weight_matrix(t)) continue;
        matrix_of[i] = matrices.size();
        matrices.push_back(
            {.name = t.name, .row_width = t.dims[0], .model_has_output = has_output});
    }
    count_mix_positions(matrices, layer_count(file, arch));
    return plan_tensors(file,
                        [&](size_t i) { return mix_tensor_type(mix, matrices[matrix_of[i]]); });
}

namespace {

// The path the output replaces: `out` when it is new or a regular file, the target of a
// symlink to a regular file. Anything else (a device, a directory, a socket) is refused, so
// the final rename never replaces what is not a plain file.
std::string output_path(const std::string& out) {
    namespace fs = std::filesystem;
    std::error_code ec;
    const fs::file_status link = fs::symlink_status(out, ec);
    if (fs::is_symlink(link)) {
        if (!fs::is_regular_file(fs::status(out, ec)))
            fail(
                "output '{}' is a symlink to something that is not a regular file; kite "
                "quantize writes only to a regular file or a new path",
                out);
        return fs::canonical(out).string();
    }
    if (fs::exists(link) && !fs::is_regular_file(link))
        fail(
            "output '{}' exists and is not a regular file; kite quantize writes only to a "
            "regular file or a new path",
            out);
    return out;
}

// OUT.tmp, written first, may only be a leftover regular file or symlink: it is removed, so
// the writer never follows a link someone left there.
void clear_temporary(const std::string& tmp) {
    namespace fs = std::filesystem;
    std::error_code ec;
    const fs::file_status t = fs::symlink_status(tmp, ec);
    if (!fs::exists(t) && !fs::is_symlink(t)) return;
    if (!fs::is_regular_file(t) && !fs::is_symlink(t))
        fail("'{}' (where the output is written first) exists and is not a regular file", tmp);
    fs::remove(tmp, ec);
}

}  // namespace

QuantizeResult quantize_file(const std::string& in, const std::string& out_path,
                             const QuantizeOptions& options) {
    const std::string out = output_path(out_path);
    const std::string tmp = out + ".tmp";
    if (same_file(in, out) || same_file(in, tmp))
        fail("output '{}' would overwrite the input '{}'", out, in);
    clear_temporary(tmp);
    std::unique_ptr<GgufFile> file = GgufFile::open(in);
    std::vector<TensorPlan> plans =
        options.mix ? plan_quantize(*file, *options.mix) : plan_quantize(*file, options.type);
    const uint32_t file_type =
        options.mix ? options.mix->llama_file_type : llama_file_type(options.type);
    const unsigned n_threads =
        options.n_threads ? options.n_threads : std::max(1u, std::thread::hardware_concurrency());

    GgufWriter writer;
    bool has_file_type = false;
    for (const auto& [key, value] : file->metadata()) {
        if (key == kFileTypeKey) {
            writer.add_u32(key, file_type);
            has_file_type = true;
        } else {
            writer.add_raw(key, value);
        }
    }
    if (!has_file_type) writer.add_u32(kFileTypeKey, file_type);
    // (A general.alignment key, copied above, gives the writer the source's alignment.)

    QuantizeResult result;
    result.bytes_before = file->file_size();
    result.n_tensors = plans.size();
    for (size_t i = 0; i < plans.size(); ++i) {
        const TensorPlan& p = plans[i];
        result.n_converted += p.to != p.from;
        result.n_fallback += p.fallback;
        // Runs while the file is written, so only one converted tensor is in memory at once.
        auto fill = [&options, &plans, &file, i, n_threads](std::span<uint8_t> bytes) {
            if (options.on_tensor) options.on_tensor(i, plans.size(), plans[i]);
            convert_tensor(file->tensors()[i], plans[i].to, bytes, n_threads);
        };
        writer.add_tensor(p.name, p.to, p.dims, fill);
    }

    try {
        writer.write_file(tmp);
        std::error_code ec;
        std::filesystem::rename(tmp, out, ec);
        if (ec) fail("cannot rename '{}' to '{}': {}", tmp, out, ec.message());
        uint64_t size = std::filesystem::file_size(out, ec);
        result.bytes_after = ec ? 0 : size;
    } catch (...) {
        std::error_code ignored;
        std::filesystem::remove(tmp, ignored);
        throw;
    }
    return result;
}

}  // namespace kite
