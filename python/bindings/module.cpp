// The _kite extension module: the engine, generation parameters and tool-call parsing, bound
// with nanobind. Only the mechanics live here; python/kite/ holds the API users see (LLM,
// SamplingParams, outputs), written in Python over these.
//
// Every call that runs the engine releases the GIL, so other Python threads run meanwhile;
// step() first checks for signals, so Ctrl-C stops a generation between two steps.
#include <Python.h>
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "chat/tool_calls.h"
#include "core/error.h"
#include "native_engine.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace kite::python {

namespace {

// The engine's checks of a request raise ValueError: the arguments were wrong, not the engine.
void validate(NativeEngine& e, const std::vector<int32_t>& prompt, const GenerationParams& p) {
    try {
        nb::gil_scoped_release unlocked;
        e.validate(prompt, p);
    } catch (const Error& err) {
        throw nb::value_error(err.what());
    }
}

// A constraint that cannot be compiled raises ValueError: the argument was wrong.
void constrain(NativeEngine& e, GenerationParams& p, int kind, const std::string& text) {
    try {
        nb::gil_scoped_release unlocked;
        e.constrain(p, kind, text);
    } catch (const Error& err) {
        throw nb::value_error(err.what());
    }
}

std::vector<NativeEvent> step(NativeEngine& e) {
    if (PyErr_CheckSignals() != 0) throw nb::python_error();
    nb::gil_scoped_release unlocked;
    return e.step();
}

using Matrix = nb::ndarray<nb::numpy, float, nb::ndim<2>>;

// The vectors as a numpy array (inputs x dimensions) that owns them; bad input is a ValueError.
Matrix embed(NativeEngine& e, const std::vector<std::vector<int32_t>>& inputs, int64_t dimensions) {
    std::vector<float> flat;
    try {
        nb::gil_scoped_release unlocked;
        flat = e.embed(inputs, dimensions);
    } catch (const Error& err) {
        throw nb::value_error(err.what());
    }
    const size_t rows = inputs.size(), cols = flat.size() / rows;
    auto* owned = new std::vector<float>(std::move(flat));
    nb::capsule owner(owned, [](void* p) noexcept { delete static_cast<std::vector<float>*>(p); });
    return Matrix(owned->data(), {rows, cols}, owner);
}

void bind_params(nb::module_& m) {
    // A field of the SamplingParams inside GenerationParams, as a flat attribute.
#define KITE_SAMPLING_FIELD(name)                                         \
    def_prop_rw(                                                          \
        #name, [](const GenerationParams& p) { return p.sampling.name; }, \
        [](GenerationParams& p, decltype(SamplingParams::name) v) { p.sampling.name = v; })
    nb::class_<GenerationParams>(m, "GenerationParams")
        .def(nb::init<>())
        .def_rw("max_tokens", &GenerationParams::max_tokens)
        .def_rw("stop", &GenerationParams::stop)
        .def_rw("ignore_eos", &GenerationParams::ignore_eos)
        .def_rw("logprobs", &GenerationParams::logprobs)
        .KITE_SAMPLING_FIELD(temperature)
        .KITE_SAMPLING_FIELD(top_k)
        .KITE_SAMPLING_FIELD(top_p)
        .KITE_SAMPLING_FIELD(min_p)
        .KITE_SAMPLING_FIELD(repetition_penalty)
        .KITE_SAMPLING_FIELD(presence_penalty)
        .KITE_SAMPLING_FIELD(frequency_penalty)
        .KITE_SAMPLING_FIELD(penalty_last_n)
        .KITE_SAMPLING_FIELD(dry_multiplier)
        .KITE_SAMPLING_FIELD(dry_base)
        .KITE_SAMPLING_FIELD(dry_allowed_length)
        .KITE_SAMPLING_FIELD(dry_penalty_last_n)
        .KITE_SAMPLING_FIELD(dry_sequence_breakers)
        .KITE_SAMPLING_FIELD(logit_bias)
        .KITE_SAMPLING_FIELD(seed);
#undef KITE_SAMPLING_FIELD
}

void bind_engine(nb::module_& m) {
    nb::class_<NativeEvent>(m, "Event")
        .def_ro("seq_id", &NativeEvent::seq_id)
        .def_ro("token", &NativeEvent::token)
        .def_ro("text", &NativeEvent::text)
        .def_ro("finish", &NativeEvent::finish)
        .def_ro("logprob", &NativeEvent::logprob)
        .def_ro("top_logprobs", &NativeEvent::top_logprobs);
    nb::class_<NativeEngine>(m, "Engine")
        .def(
            "__init__",
            [](NativeEngine* self, const std::string& model, int threads, int64_t ctx,
               const std::string& kv_type, int64_t max_seqs, const std::string& draft_model,
               const std::string& pooling) {
                nb::gil_scoped_release unlocked;
                new (self) NativeEngine(
                    NativeOptions{model, threads, ctx, kv_type, max_seqs, draft_model, pooling});
            },
            "model"_a, "threads"_a, "ctx"_a, "kv_type"_a, "max_seqs"_a, "draft_model"_a,
            "pooling"_a)
        .def("tokenize", &NativeEngine::tokenize, "text"_a, "add_special"_a, "parse_special"_a,
             nb::call_guard<nb::gil_scoped_release>())
        .def("detokenize", &NativeEngine::detokenize, "ids"_a,
             nb::call_guard<nb::gil_scoped_release>())
        .def("chat_prompt", &NativeEngine::chat_prompt, "messages_json"_a, "tools_json"_a,
             nb::call_guard<nb::gil_scoped_release>())
        .def("constrain", &constrain, "params"_a, "kind"_a, "text"_a)
        .def("validate", &validate, "prompt"_a, "params"_a)
        .def("submit", &NativeEngine::submit, "prompt"_a, "params"_a,
             nb::call_guard<nb::gil_scoped_release>())
        .def("release", &NativeEngine::release, "seq_id"_a,
             nb::call_guard<nb::gil_scoped_release>())
        .def("embed", &embed, "inputs"_a, "dimensions"_a)
        .def("has_work", &NativeEngine::has_work)
        .def("step", &step)
        .def("close", &NativeEngine::close, nb::call_guard<nb::gil_scoped_release>())
        .def_prop_ro("closed", &NativeEngine::closed)
        .def_prop_ro("n_vocab", &NativeEngine::n_vocab)
        .def_prop_ro("context_length", &NativeEngine::context_length)
        .def_prop_ro("threads", &NativeEngine::threads)
        .def_prop_ro("model_path", &NativeEngine::model_path);
}

// (content, [(id, name, arguments JSON)]) of a reply that may hold tool calls.
std::pair<std::string, std::vector<std::vector<std::string>>> tool_calls(const std::string& text) {
    server::ParsedReply reply = server::parse_tool_calls(text);
    std::vector<std::vector<std::string>> calls;
    for (server::ToolCall& c : reply.calls) calls.push_back({c.id, c.name, c.arguments});
    return {reply.content, calls};
}

}  // namespace

}  // namespace kite::python

NB_MODULE(_kite, m) {
    m.doc() = "Kite's engine, bound for the kite package (use kite.LLM, not this module).";
    nb::exception<kite::Error>(m, "KiteError", PyExc_RuntimeError);
    // An LLM still referenced at interpreter exit is freed by the OS, not reported.
    nb::set_leak_warnings(false);
    kite::python::bind_params(m);
    kite::python::bind_engine(m);
    m.def("parse_tool_calls", &kite::python::tool_calls, "text"_a);
}
