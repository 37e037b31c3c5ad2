// A small Jinja subset: renders the kernel templates exactly as Python Jinja2 would with
// StrictUndefined and keep_trailing_newline=True (trim_blocks and lstrip_blocks off).
//
// Supported: {{ expr }}, {# comment #}, {% if/elif/else/endif %}, {% for x in seq [if cond] %}
// with {% else %} and loop.index/index0/revindex/revindex0/first/last/length, {% set x = expr %},
// whitespace control with '-' on any tag. Expressions: literals (int, float, string, true/false/
// none in either case, lists), names, a.b, a[i], + - * / // % ** ~, unary - + not, comparisons
// (chained), and/or (returning an operand, as Python does), in/not in, x if c else y, range(),
// filters (abs default/d first float int join last length/count list lower string trim upper)
// and tests (defined undefined none boolean integer float number string sequence mapping even
// odd divisibleby). Anything else is a syntax error rather than a silent difference from Jinja2.
// Deliberately stricter than Jinja2: an inline if needs its else, and an undefined value fails
// as soon as it is put in a list. Map keys iterate sorted (Jinja2: in insertion order).
#pragma once
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>

#include "dg/codegen/value.h"

namespace dg::codegen {

// A syntax error, or a failure while rendering (undefined variable, type error), with its place.
// what() is "name:line:col: message\n<source line>\n<spaces>^".
class TemplateError : public std::runtime_error {
 public:
  TemplateError(std::string template_name, int line, int column, std::string message,
                std::string_view source_line);
  const std::string& template_name() const { return template_name_; }
  int line() const { return line_; }      // 1-based
  int column() const { return column_; }  // 1-based, in characters
  const std::string& message() const { return message_; }  // without location and caret

 private:
  std::string template_name_;
  int line_;
  int column_;
  std::string message_;
};

namespace detail {
struct Program;
}

// A parsed template: immutable, cheap to copy, and safe to render from several threads at once.
class Template {
 public:
  // Throws TemplateError on syntax errors and on unknown filters, tests or tags.
  static Template parse(std::string source, std::string name);
  // `context` must be a map (or null for an empty one); throws TemplateError when rendering fails.
  std::string render(const Value& context) const;
  const std::string& name() const;

 private:
  explicit Template(std::shared_ptr<const detail::Program> program) : program_(std::move(program)) {}
  std::shared_ptr<const detail::Program> program_;
};

// Template::parse(source, name).render(context).
std::string render(std::string_view source, std::string_view name, const Value& context);

}  // namespace dg::codegen
