// A model whose logits overflow (a finite but huge output norm, which load-time checks
// cannot call wrong) stops the sequence with NonFinite instead of sampling from NaN, and
// `kite run` says so in one line with exit 1.
#include <gtest/gtest.h>

#include <filesystem>
#include <vector>

#include "engine/engine.h"
#include "gguf/gguf_file.h"
#include "gguf/gguf_writer.h"
#include "model/model.h"
#include "run_command.h"
#include "test_paths.h"
#include "tokenizer/tokenizer.h"

namespace kite {
namespace {

// The default model with output_norm.weight multiplied by 1e38.
std::string overflowing_model() {
    const auto path = std::filesystem::temp_directory_path() /
                      ("kite_overflow_" + std::to_string(getpid()) + ".gguf");
    auto f = GgufFile::open(test::default_model_path());
    GgufWriter w;
    for (const auto& [key, value] : f->metadata()) w.add_raw(key, value);
    std::vector<std::vector<float>> keep;
    for (const GgufTensor& t : f->tensors()) {
        std::vector<uint64_t> dims(t.dims.begin(), t.dims.begin() + t.n_dims);
        std::span<const uint8_t> bytes(t.data, t.n_bytes);
        if (t.name == "output_norm.weight") {
            EXPECT_EQ(t.type(), TensorType::F32);
            auto& v = keep.emplace_back(t.n_elements);
            for (float& x : v) x = 1e38f;
            bytes = {reinterpret_cast<const uint8_t*>(v.data()), t.n_bytes};
        }
        w.add_tensor(t.name, t.type(), dims, bytes);
    }
    w.write_file(path.string());
    return path.string();
}

TEST(NonFiniteLogits, StopTheSequenceWithAnError) {
    const std::string path = overflowing_model();
    {
        auto model = Model::load(path);
        auto tokenizer = Tokenizer::from_gguf(model->file());
        EngineConfig c;
        c.threads = 1;
        c.context_length = 256;
        Engine engine(*model, *tokenizer, c);
        GenerationParams p;
        p.max_tokens = 4;
        const int64_t id = engine.submit(tokenizer->encode("Hello", true, true), p);
        std::vector<TokenEvent> events;
        while (engine.has_work())
            for (const TokenEvent& ev : engine.step()) events.push_back(ev);
        ASSERT_EQ(events.size(), 1u);
        EXPECT_EQ(events[0].seq_id, id);
        EXPECT_EQ(events[0].finish, FinishReason::NonFinite);
        EXPECT_EQ(engine.stats().generated_tokens, 0);
    }
    const auto r = test::run_kite("run -m " + path + " -p hi -n 4 -t 1");
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_NE(r.err.find("non-finite logits"), std::string::npos) << r.err;
    std::filesystem::remove(path);
}

}  // namespace
}  // namespace kite
