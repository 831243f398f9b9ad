// The request fields that constrain output, under every name clients use for them:
//   OpenAI     response_format {"type": "json_object"} or {"type": "json_schema",
//              "json_schema": {"name", "schema", "strict"}}; tool_choice "required" or a
//              named function (the call is forced, in the model's own tool-call format)
//   llama.cpp  grammar (GBNF), json_schema
//   vLLM       guided_json, guided_regex, guided_grammar (GBNF), guided_choice
// At most one may be given. Each compiles through the server's ConstraintCache (a schema
// seen before is not compiled again); what cannot be compiled is a 400 naming the field.
#pragma once

#include <memory>
#include <string_view>

#include <nlohmann/json.hpp>

#include "grammar/constraint.h"

namespace kite::server {

struct ServedModel;

// The constraint a request asks for, or null. `body` is `body_text` parsed; the text is
// parsed again, keeping key order, only when a constraint field is present. A forced tool
// call needs the model's chat template.
std::shared_ptr<const grammar::Constraint> output_constraint(std::string_view body_text,
                                                             const nlohmann::json& body,
                                                             const ServedModel& model);

}  // namespace kite::server
