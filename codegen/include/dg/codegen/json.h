// JSON to Value, for template contexts kept in files (dg-codegen --context, golden tests).
#pragma once
#include <string_view>

#include "dg/codegen/value.h"

namespace dg::codegen {

// Numbers without a fraction or exponent become ints, as Python's json module reads them.
// Throws std::invalid_argument "name:line:col: JSON: message" at the first error, including
// arrays and objects nested more than 128 deep and unpaired UTF-16 surrogates in \u escapes.
Value parse_json(std::string_view text, std::string_view name = "<json>");

}  // namespace dg::codegen
