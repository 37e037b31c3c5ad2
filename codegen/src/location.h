// Places in a template, and the error that lexer, parser and renderer throw internally; the
// Template front end turns it into a TemplateError with the template name and a caret line.
#pragma once
#include <string>

namespace dg::codegen::detail {

struct Location {
  int line = 1;    // 1-based
  int column = 1;  // 1-based, counted in UTF-8 characters
};

struct LocatedError {
  Location loc;
  std::string message;
};

}  // namespace dg::codegen::detail
