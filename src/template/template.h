// A Jinja2 template, parsed once and rendered many times: the engine behind chat templates.
// It renders what Python's jinja2 renders in Hugging Face transformers' sandboxed environment
// (trim_blocks, lstrip_blocks, loop controls, tojson, raise_exception, strftime_now), and
// nothing a template does can read files, reach the environment, or run without bound.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "template/ast.h"
#include "template/error.h"
#include "template/renderer.h"
#include "template/value.h"

namespace kite::tmpl {

class Template {
  public:
    // Throws TemplateError when the source does not parse.
    explicit Template(std::string_view source);

    // Throws TemplateError when rendering fails: the template raised, used a value in a way
    // Python would refuse, or passed a sandbox limit.
    std::string render(const Dict& context, const RenderOptions& options = {}) const;
    // The context as a JSON object (messages, tools, add_generation_prompt, ...).
    std::string render_json(const nlohmann::ordered_json& context,
                            const RenderOptions& options = {}) const;

  private:
    std::shared_ptr<const Body> body_;
};

}  // namespace kite::tmpl
