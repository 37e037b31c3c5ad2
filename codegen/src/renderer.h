// Walks a parsed template and writes its output.
#pragma once
#include <string>

#include "ast.h"

namespace dg::codegen::detail {

// `context` must be a map or null. Throws LocatedError on an undefined variable or a bad
// operation. Touches nothing but its arguments and locals, so concurrent calls are safe.
std::string render(const Body& body, const Value& context);

}  // namespace dg::codegen::detail
