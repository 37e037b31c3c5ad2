// Splits a template into text and the tokens inside its {{ }} and {% %} tags. Comments vanish
// here, and so does the whitespace that '-' markers strip, so the parser never sees either.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "location.h"

namespace dg::codegen::detail {

enum class TokenKind {
  Text,        // literal template text between tags
  VarBegin,    // {{
  VarEnd,      // }}
  BlockBegin,  // {%
  BlockEnd,    // %}
  Name,        // identifiers and keywords (if, and, true, ...)
  Int,
  Float,
  String,      // text holds the unescaped contents
  Operator,    // text holds the spelling: + // ** == ( [ | ...
  End,         // end of the template
};

struct Token {
  TokenKind kind;
  std::string text;
  std::int64_t int_value = 0;
  double float_value = 0;
  Location loc;
};

// How a token reads in an error message: 'foo', '}}', end of template.
std::string describe(const Token& t);

// Throws LocatedError on an unclosed tag or comment, an unterminated string, a stray character.
std::vector<Token> tokenize(std::string_view source);

}  // namespace dg::codegen::detail
