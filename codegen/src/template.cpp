#include "dg/codegen/template.h"

#include "ast.h"
#include "lexer.h"
#include "engine_limits.h"
#include "parser.h"
#include "renderer.h"

namespace dg::codegen {

namespace {

// The caret line under `source_line`: tabs are kept so that the caret lines up in a terminal.
std::string caret_line(std::string_view source_line, int column) {
  std::string out;
  int col = 1;
  for (std::size_t i = 0; i < source_line.size() && col < column; ++i) {
    const auto c = static_cast<unsigned char>(source_line[i]);
    if ((c & 0xc0) == 0x80) continue;  // UTF-8 continuation byte: same character
    out += c == '\t' ? '\t' : ' ';
    ++col;
  }
  out.append(static_cast<std::size_t>(column - col), ' ');
  return out + '^';
}

std::string_view line_of(std::string_view source, int line) {
  std::size_t begin = 0;
  for (int l = 1; l < line && begin != std::string_view::npos; ++l) {
    begin = source.find('\n', begin);
    if (begin != std::string_view::npos) ++begin;
  }
  if (begin == std::string_view::npos || begin > source.size()) return {};
  const std::size_t end = source.find('\n', begin);
  return source.substr(begin, end == std::string_view::npos ? std::string_view::npos : end - begin);
}

TemplateError located(const detail::Program& p, const detail::LocatedError& e) {
  return TemplateError(p.name, e.loc.line, e.loc.column, e.message, line_of(p.source, e.loc.line));
}

// Jinja2 turns \r\n and \r into \n before anything else.
std::string normalize_newlines(std::string s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\r') {
      out += '\n';
      if (i + 1 < s.size() && s[i + 1] == '\n') ++i;
    } else {
      out += s[i];
    }
  }
  return out;
}

}  // namespace

TemplateError::TemplateError(std::string template_name, int line, int column, std::string message,
                             std::string_view source_line)
    : std::runtime_error(template_name + ":" + std::to_string(line) + ":" + std::to_string(column) +
                         ": " + message + "\n" + std::string(source_line) + "\n" +
                         caret_line(source_line, column)),
      template_name_(std::move(template_name)),
      line_(line),
      column_(column),
      message_(std::move(message)) {}

Template Template::parse(std::string source, std::string name) {
  auto program = std::make_shared<detail::Program>();
  program->name = std::move(name);
  if (source.size() > detail::kMaxSourceBytes)
    throw TemplateError(program->name, 1, 1,
                        "the template is " + std::to_string(source.size()) + " bytes (the engine's limit is " +
                            std::to_string(detail::kMaxSourceBytes) + ")",
                        {});
  program->source = normalize_newlines(std::move(source));
  try {
    program->body = detail::parse(detail::tokenize(program->source));
  } catch (const detail::LocatedError& e) {
    throw located(*program, e);
  }
  return Template(std::move(program));
}

std::string Template::render(const Value& context) const {
  if (!context.is_map() && !context.is_null())
    throw std::invalid_argument("Template::render: the context must be a map, got " +
                                std::string(type_name(context.type())));
  try {
    return detail::render(program_->body, context);
  } catch (const detail::LocatedError& e) {
    throw located(*program_, e);
  }
}

const std::string& Template::name() const { return program_->name; }

std::string render(std::string_view source, std::string_view name, const Value& context) {
  return Template::parse(std::string(source), std::string(name)).render(context);
}

}  // namespace dg::codegen
