// The parsed form of a template: expressions and statements, as Jinja2 defines them.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "template/value.h"

namespace kite::tmpl {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
    enum class Kind {
        Literal,  // value
        Name,     // name
        List,     // items: a list, or a tuple when `tuple` is set
        Dict,     // keys[i]: items[i]
        Attr,     // object.name
        Item,     // object[items[0]]
        Slice,    // object[items[0]:items[1]:items[2]] (null: omitted)
        Call,     // object(items, keywords)
        Filter,   // object|name(items, keywords)
        Test,     // object is [not] name(items)
        Unary,    // name ("-", "+", "not") applied to object
        Binary,   // object name other ("+", "-", "*", "/", "//", "%", "**", "~", "and", "or")
        Compare,  // object ops[0] items[0] ops[1] items[1] ...
        Cond,     // items[0] if object else items[1] (items[1] may be null)
    };
    Kind kind;
    int line = 0;
    Value value;
    std::string name;
    ExprPtr object;
    ExprPtr other;
    std::vector<ExprPtr> items;
    std::vector<ExprPtr> keys;
    std::vector<std::pair<std::string, ExprPtr>> keywords;
    std::vector<std::string> ops;
    bool negated = false;
    bool tuple = false;  // a List written (a, b) or a, b
};

struct Node;
using NodePtr = std::unique_ptr<Node>;
using Body = std::vector<NodePtr>;

struct Node {
    enum class Kind {
        Text,         // text
        Output,       // {{ expr }}
        If,           // conditions[i] -> bodies[i]; else_body
        For,          // for targets in expr [if condition]: body; else_body
        Set,          // set targets = expr, or set targets[0].attribute = expr
        SetBlock,     // set targets[0] %} body {% endset, filtered by filters
        Macro,        // macro name(params with defaults): body
        CallBlock,    // call(params) expr: body passed as `caller`
        FilterBlock,  // filter filters: body
        Scope,        // body in a scope of its own (transformers' {% generation %})
        Break,
        Continue,
    };
    Kind kind;
    int line = 0;
    std::string text;
    std::string name;
    std::string attribute;
    ExprPtr expr;
    ExprPtr condition;
    std::vector<std::string> targets;
    std::vector<std::pair<std::string, ExprPtr>> params;
    std::vector<ExprPtr> conditions;
    std::vector<Body> bodies;
    Body body;
    Body else_body;
    // Filter chains for SetBlock/FilterBlock: Filter expressions whose object is null.
    std::vector<ExprPtr> filters;
};

}  // namespace kite::tmpl
