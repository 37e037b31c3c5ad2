// The template engine's bounds (codegen/src/engine_limits.h): hostile templates and JSON contexts end in
// an error at name:line:col, not in a stack overflow, memory exhaustion or a render that never ends.
#include <doctest/doctest.h>

#include <stdexcept>
#include <string>

#include "dg/codegen/json.h"
#include "dg/codegen/template.h"

using dg::codegen::TemplateError;
using dg::codegen::Value;

namespace {

std::string repeat(const std::string& s, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += s;
  return out;
}

// The error rendering `source` gives; fails the test when it renders.
TemplateError error_of(const std::string& source, const Value& context = Value::map()) {
  try {
    dg::codegen::render(source, "hostile.j2", context);
  } catch (const TemplateError& e) {
    return e;
  }
  FAIL("rendered without an error: " << source.substr(0, 200));
  return TemplateError("", 0, 0, "", "");
}

void check_error(const std::string& source, int line, int column, const std::string& needle) {
  const TemplateError e = error_of(source);
  CHECK(e.template_name() == "hostile.j2");
  CHECK(e.line() == line);
  CHECK(e.column() == column);
  CHECK_MESSAGE(e.message().find(needle) != std::string::npos, e.message(), " lacks ", needle);
}

std::string json_error(const std::string& text) {
  try {
    dg::codegen::parse_json(text, "ctx.json");
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  FAIL("parsed without an error: " << text.substr(0, 200));
  return {};
}

}  // namespace

TEST_CASE("nesting beyond the limit is an error where it goes too deep") {
  // 4000 parentheses, lists, unary operators, not, inline ifs, blocks: each used to overflow the stack.
  check_error("{{ " + repeat("(", 4000) + "1" + repeat(")", 4000) + " }}", 1, 68, "nested more than 64 levels");
  check_error("{{ " + repeat("[", 10000) + repeat("]", 10000) + " }}", 1, 68, "nested more than 64 levels");
  check_error("{{ " + repeat("-", 100000) + "1 }}", 1, 67, "nested more than 64 levels");
  check_error("{{ " + repeat("not ", 5000) + "1 }}", 1, 4 + 4 * 63, "nested more than 64 levels");
  check_error("{{ " + repeat("1 if x else ", 5000) + "1 }}", 1, 4 + 12 * 63 + 12, "nested more than 64 levels");
  // 63 loop bodies, the iterable and the list item in it: the '1' of the 64th loop.
  check_error(repeat("{% for i in [1] %}", 10000) + repeat("{% endfor %}", 10000), 1, 1 + 18 * 63 + 13,
              "nested more than 64 levels");
  check_error(repeat("{% if 1 %}", 10000) + repeat("{% endif %}", 10000), 1, 1 + 10 * 64 + 6,
              "nested more than 64 levels");
  // Nesting within the limit renders as before.
  CHECK(dg::codegen::render("{{ " + repeat("(", 30) + "1" + repeat(")", 30) + " }}", "ok.j2", Value::map()) == "1");
}

TEST_CASE("long operator chains beyond the expression height limit are an error") {
  check_error("{{ 1" + repeat(" + 1", 100000) + " }}", 1, 2 + 4 * 256, "expression nested more than 256 levels");
  check_error("{{ x" + repeat(".a", 100000) + " }}", 1, 4 + 2 * 256, "expression nested more than 256 levels");
  check_error("{{ x" + repeat(" | abs", 100000) + " }}", 1, 2 + 6 * 256, "expression nested more than 256 levels");
  CHECK(dg::codegen::render("{{ 1" + repeat(" + 1", 200) + " }}", "ok.j2", Value::map()) == "201");
}

TEST_CASE("values nested beyond the depth limit are an error, in templates and in JSON") {
  std::string t = "{% set x = [] %}";
  for (int i = 0; i < 200; ++i) t += "\n{% set x = [x] %}";
  check_error(t, 129, 12, "lists nested more than 128 levels deep");

  const std::string deep = repeat("[", 40000) + repeat("]", 40000);
  CHECK(json_error(deep).find("ctx.json:1:129: JSON: arrays and objects nested more than 128") == 0);
  CHECK(json_error(repeat("{\"a\":", 200) + "1" + repeat("}", 200)).find("nested more than 128") != std::string::npos);
  CHECK(dg::codegen::parse_json(repeat("[", 100) + repeat("]", 100), "ok.json").is_list());
}

TEST_CASE("JSON errors give name:line:col, and unpaired surrogates are rejected") {
  CHECK(json_error("{\n  \"a\": 1,\n}").find("ctx.json:3:1: JSON: expected a string key") == 0);
  CHECK(json_error("\"\\ud83d\"").find("unpaired surrogate") != std::string::npos);
  CHECK(json_error("\"\\ud83d\\u0041\"").find("unpaired surrogate") != std::string::npos);
  CHECK(json_error("\"\\ude00\"").find("unpaired surrogate") != std::string::npos);
  CHECK(dg::codegen::parse_json("\"\\ud83d\\ude00\"").as_string() == "\xf0\x9f\x98\x80");
}

TEST_CASE("repetition and concatenation beyond the size caps are errors with a location") {
  check_error("{{ 'ab' * 2**40 }}", 1, 9, "string would exceed the template engine's limit");
  check_error("{{ [1, 2] * 2**40 }}", 1, 11, "list would exceed the template engine's limit");
  check_error("{% set s = 'a' * 2**25 %}{{ s ~ s ~ s }}", 1, 35, "'~' would make a string longer");
  check_error("{% set s = 'a' * 2**25 %}{{ s + s + s }}", 1, 35, "string would exceed");
  check_error("{% set l = [0] * 2**21 %}{{ (l + l + l) | length }}", 1, 36, "list would exceed");
  check_error("{% set s = 'a' * 2**25 %}{{ [s, s, s] | join }}", 1, 41, "join() would exceed");
  check_error("{% set s = 'a' * 2**25 %}{{ s }}{{ s }}{{ s }}", 1, 43, "rendered output would exceed");
  check_error("{% set s = 'a' * 2**23 %}{{ s | list | length }}", 1, 33, "cannot be split into characters");
  // Measured without splitting: length and indexing of a long string.
  CHECK(dg::codegen::render("{% set s = 'ab' * 2**22 %}{{ s | length }} {{ s[-1] }} {{ s[2**22] }}", "ok.j2",
                            Value::map()) == "8388608 b a");
}

TEST_CASE("range() near the int64 limits neither overflows nor allocates without bound") {
  CHECK(dg::codegen::render("{{ range(9223372036854775806, 9223372036854775807, 2) | list }}", "r.j2", Value::map()) ==
        "[9223372036854775806]");
  CHECK(dg::codegen::render("{{ range(-9223372036854775807 - 1, 9223372036854775807, 4611686018427387904) | list }}",
                            "r.j2", Value::map()) ==
        "[-9223372036854775808, -4611686018427387904, 0, 4611686018427387904]");
  CHECK(dg::codegen::render("{{ range(5, -9223372036854775807 - 1, -9223372036854775807) | list }}", "r.j2",
                            Value::map()) == "[5, -9223372036854775802]");
  check_error("{{ range(9223372036854775807) }}", 1, 4, "range() is limited to 4194304 items");
  check_error("{{ range(-9223372036854775807 - 1, 9223372036854775807) }}", 1, 4, "range() is limited");
}

TEST_CASE("loops stop at the iteration limit instead of running for hours") {
  // Counted when a loop starts (its items, before any filter): the inner loop of the first outer
  // iteration already exceeds it, so reaching the limit costs no iterations.
  check_error("{% for i in range(1000000) %}{% for j in range(1000000) %}{% endfor %}{% endfor %}", 1, 42,
              "more than 1048576 iterations");
  check_error("{% for i in range(3) %}{% for j in range(2000000) if j %}{% endfor %}{% endfor %}", 1, 36,
              "more than 1048576 iterations");
  CHECK(dg::codegen::render("{% for i in range(100) %}{% for j in range(100) %}{% endfor %}{% endfor %}x", "ok.j2",
                            Value::map()) == "x");
}
