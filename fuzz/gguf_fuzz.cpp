// libFuzzer target: any bytes given to the GGUF reader (and the readers of its metadata) must
// parse or raise kite::Error; a crash, sanitizer report, hang or huge allocation is a bug.
#include <cstddef>
#include <cstdint>

#include "core/error.h"
#include "gguf/gguf_file.h"
#include "model/model_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    try {
        auto file = kite::GgufFile::parse({data, size}, "fuzz.gguf");
        for (const auto& [key, value] : file->metadata()) {
            (void)file->describe(value);
            if (value.type != kite::GgufValueType::ARRAY) continue;
            try {
                (void)file->get_string_array(key);
            } catch (const kite::Error&) {
            }
            try {
                (void)file->get_int_array(key);
            } catch (const kite::Error&) {
            }
            try {
                (void)file->get_float_array(key);
            } catch (const kite::Error&) {
            }
        }
        (void)kite::read_model_config(*file);
    } catch (const kite::Error&) {
    }
    return 0;
}
