// JSON to Value, for template contexts kept in files (dg-codegen --context, golden tests).
#pragma once
#include <string_view>

#include "dg/codegen/value.h"

namespace dg::codegen {

// Numbers without a fraction or exponent become ints, as Python's json module reads them.
// Throws std::invalid_argument with the byte offset of the first error.
Value parse_json(std::string_view text);

}  // namespace dg::codegen
