// Python's semantics for the operators of a template expression, on Values.
#pragma once
#include <string>
#include <vector>

#include "ast.h"
#include "dg/codegen/value.h"

namespace dg::codegen::detail {

// A failure of an operation (a type error, a division by zero). The renderer adds the location
// of the expression that performed it.
struct EvalError {
  std::string message;
};

bool truthy(const Value& v);
bool equal(const Value& a, const Value& b);                // ==, across int/float/bool like Python
bool compare(CompareOp op, const Value& a, const Value& b);  // throws EvalError for 1 < 'a'
Value arithmetic(BinaryOp op, const Value& a, const Value& b);  // + - * / // % ** (not ~, and, or)
Value unary(UnaryOp op, const Value& v);
// What `for x in v` visits: list items, map keys, or the characters of a string.
std::vector<Value> iterate(const Value& v);
// Characters of a UTF-8 string (bytes that do not continue a UTF-8 sequence).
std::size_t character_count(const std::string& s);
// Characters of a UTF-8 string, each as a string; an EvalError beyond kMaxListItems.
std::vector<Value> characters(const std::string& s);
// Python's name for a value's type in error messages, e.g. "'str'".
std::string python_type(const Value& v);

}  // namespace dg::codegen::detail
