#include "server/output_constraint.h"

#include <optional>
#include <vector>

#include "chat/tool_calls.h"
#include "server/api_error.h"
#include "server/request_parser.h"

namespace kite::server {

namespace {

using ojson = nlohmann::ordered_json;
using grammar::ConstraintKind;
using grammar::ConstraintSpec;

// A value the field gives, or nullopt when it asks for nothing (a "text" response format).
using Reader = std::optional<ConstraintSpec> (*)(const ojson& value, const char* name);

std::string text_of(const ojson& value, const char* name) {
    if (!value.is_string()) bad_request(name, "'{}' must be a string", name);
    return value.get<std::string>();
}

ConstraintSpec schema_spec(const ojson& schema, const char* name) {
    if (!schema.is_object() && !schema.is_boolean())
        bad_request(name, "'{}' must be a JSON Schema (an object)", name);
    return {ConstraintKind::JsonSchema, schema.dump(), {}, {}};
}

std::optional<ConstraintSpec> response_format(const ojson& rf, const char* name) {
    const auto type = rf.is_object() ? rf.find("type") : rf.end();
    if (!rf.is_object() || type == rf.end() || !type->is_string())
        bad_request(name, "'response_format' must be an object with a 'type'");
    if (*type == "text") return std::nullopt;
    if (*type == "json_object") {
        // llama.cpp also takes a schema here.
        if (auto s = rf.find("schema"); s != rf.end()) return schema_spec(*s, name);
        return ConstraintSpec{ConstraintKind::JsonObject, {}, {}, {}};
    }
    if (*type == "json_schema") {
        const auto js = rf.find("json_schema");
        if (js == rf.end() || !js->is_object() || !js->contains("schema"))
            bad_request(name,
                        "response_format json_schema needs 'json_schema': {{\"schema\": ...}}");
        return schema_spec(js->at("schema"), name);
    }
    bad_request(name, "response_format 'type' must be text, json_object or json_schema");
}

std::optional<ConstraintSpec> gbnf(const ojson& v, const char* name) {
    std::string text = text_of(v, name);
    if (text.empty()) return std::nullopt;  // llama.cpp's clients send "" for none
    return ConstraintSpec{ConstraintKind::Gbnf, std::move(text), {}, {}};
}

std::optional<ConstraintSpec> schema(const ojson& v, const char* name) {
    if (v.is_string()) {  // vLLM takes the schema as JSON text too
        const ojson parsed = ojson::parse(v.get<std::string>(), nullptr, false);
        if (parsed.is_discarded()) bad_request(name, "'{}' is not valid JSON", name);
        return schema_spec(parsed, name);
    }
    return schema_spec(v, name);
}

std::optional<ConstraintSpec> regex(const ojson& v, const char* name) {
    return ConstraintSpec{ConstraintKind::Regex, text_of(v, name), {}, {}};
}

std::optional<ConstraintSpec> choice(const ojson& v, const char* name) {
    if (!v.is_array() || v.empty())
        bad_request(name, "'{}' must be a non-empty array of strings", name);
    for (const ojson& c : v)
        if (!c.is_string()) bad_request(name, "'{}' must be a non-empty array of strings", name);
    return ConstraintSpec{ConstraintKind::Choice, v.dump(), {}, {}};
}

struct ConstraintField {
    const char* name;
    Reader read;
};

constexpr ConstraintField kFields[] = {
    {"response_format", response_format},  // OpenAI
    {"grammar", gbnf},                     // llama.cpp
    {"json_schema", schema},               // llama.cpp
    {"guided_json", schema},               // vLLM
    {"guided_regex", regex},               // vLLM
    {"guided_grammar", gbnf},              // vLLM (its GBNF form)
    {"guided_choice", choice},             // vLLM
};

// The schema of one call of `tool` written as {"name": ..., <key>: {...}}. The parameters'
// $defs move to the root, where their "#/$defs/..." references point.
ojson call_schema(const ojson& tool, const std::string& key, ojson& defs) {
    const ojson& function = tool.at("function");
    ojson params = function.value("parameters", ojson{{"type", "object"}});
    for (const char* defs_key : {"$defs", "definitions"})
        if (params.is_object() && params.contains(defs_key)) {
            for (auto& [k, v] : params[defs_key].items()) defs[defs_key][k] = v;
            params.erase(defs_key);
        }
    ojson properties = ojson::object();
    properties["name"] = {{"const", function.at("name")}};
    properties[key] = std::move(params);
    return {{"type", "object"},
            {"properties", std::move(properties)},
            {"required", {"name", key}},
            {"additionalProperties", false}};
}

// tool_choice "required" or {"type": "function", "function": {"name"}} forces one call of
// the offered tools (or of the named one), with its parameters' schema.
std::optional<ConstraintSpec> forced_tool_call(const ojson& body, const ServedModel& model) {
    const auto choice = body.find("tool_choice");
    const auto tools = body.find("tools");
    if (choice == body.end() || tools == body.end() || !tools->is_array() || tools->empty())
        return std::nullopt;
    const bool named = choice->is_object();
    if (!named && *choice != "required") return std::nullopt;
    const ToolCallFrame frame = tool_call_frame(model.chat_template->source());
    ojson defs = ojson::object();
    std::vector<ojson> calls;
    for (const ojson& tool : *tools)
        if (!named || tool.at("function").at("name") == choice->at("function").at("name"))
            calls.push_back(call_schema(tool, frame.arguments_key, defs));
    if (calls.empty())
        bad_request("tool_choice", "tool_choice names a function that is not in 'tools'");
    ojson schema = calls.size() == 1 ? calls[0] : ojson{{"anyOf", calls}};
    for (auto& [k, v] : defs.items()) schema[k] = v;
    return ConstraintSpec{ConstraintKind::JsonSchema, schema.dump(), frame.before, frame.after};
}

// Whether any field that may constrain output is present (not null).
bool names_a_constraint(const nlohmann::json& body) {
    const auto present = [&](const char* name) {
        const auto it = body.find(name);
        return it != body.end() && !it->is_null();
    };
    for (const ConstraintField& f : kFields)
        if (present(f.name)) return true;
    return present("tool_choice");
}

std::shared_ptr<const grammar::Constraint> constraint_of(const ojson& body,
                                                         const ServedModel& model) {
    std::optional<ConstraintSpec> spec;
    const char* given = nullptr;
    for (const ConstraintField& f : kFields) {
        const auto it = body.find(f.name);
        if (it == body.end() || it->is_null()) continue;
        std::optional<ConstraintSpec> s = f.read(*it, f.name);
        if (!s) continue;
        if (given)
            bad_request(f.name, "'{}' and '{}' both constrain the output; give one", given, f.name);
        spec = std::move(s);
        given = f.name;
    }
    if (model.chat_template)
        if (std::optional<ConstraintSpec> call = forced_tool_call(body, model)) {
            if (given)
                bad_request("tool_choice", "a forced tool call and '{}' cannot both be given",
                            given);
            spec = std::move(call);
            given = "tool_choice";
        }
    if (!spec) return nullptr;
    if (!model.constraints) bad_request(given, "this server does not constrain output");
    try {
        return model.constraints->get(*spec);
    } catch (const std::exception& e) {
        bad_request(given, "'{}' cannot be enforced: {}", given, e.what());
    }
}

}  // namespace

std::shared_ptr<const grammar::Constraint> output_constraint(std::string_view body_text,
                                                             const nlohmann::json& body,
                                                             const ServedModel& model) {
    if (!names_a_constraint(body)) return nullptr;
    // Parsed again keeping key order: a schema's properties are written in its order.
    return constraint_of(ojson::parse(body_text), model);
}

}  // namespace kite::server
