#include "template/template.h"

#include "template/json_value.h"
#include "template/parser.h"

namespace kite::tmpl {

Template::Template(std::string_view source)
    : body_(std::make_shared<const Body>(parse_template(source))) {}

std::string Template::render(const Dict& context, const RenderOptions& options) const {
    Renderer renderer(context, options);
    return renderer.render(*body_);
}

std::string Template::render_json(const nlohmann::ordered_json& context,
                                  const RenderOptions& options) const {
    if (!context.is_object()) template_fail("the template context must be a JSON object");
    const Value v = from_json(context);
    return render(v.dict(), options);
}

}  // namespace kite::tmpl
