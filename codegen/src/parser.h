// Builds the statement tree of a template from its tokens.
#pragma once
#include <vector>

#include "ast.h"
#include "lexer.h"

namespace dg::codegen::detail {

// Throws LocatedError on a syntax error, an unknown tag, filter, test or function, or a block
// that is never closed.
Body parse(const std::vector<Token>& tokens);

}  // namespace dg::codegen::detail
