// The template engine: values, golden renderings, whitespace control, scoping, every error path
// with its exact location, and concurrent rendering. jinja2_diff.py checks the same golden files
// against Python Jinja2.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "dg/codegen/json.h"
#include "dg/codegen/template.h"

#ifndef DG_TEST_DATA_DIR
#error "DG_TEST_DATA_DIR must be the absolute path of tests/unit"
#endif

namespace fs = std::filesystem;
using dg::codegen::parse_json;
using dg::codegen::Template;
using dg::codegen::TemplateError;
using dg::codegen::Value;

namespace {

std::string render(const std::string& source, const Value& context = Value::map()) {
  return dg::codegen::render(source, "t.j2", context);
}

// The TemplateError that rendering `source` throws (parse or render time); fails if none.
TemplateError error_of(const std::string& source, const Value& context = Value::map()) {
  try {
    render(source, context);
  } catch (const TemplateError& e) {
    return e;
  }
  FAIL("no TemplateError for: " << source);
  return TemplateError("", 0, 0, "", "");
}

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  REQUIRE_MESSAGE(in, "cannot read " << p);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

Value context_for(const fs::path& template_path) {
  fs::path json = template_path;
  json.replace_extension(".json");
  return fs::exists(json) ? parse_json(read_file(json)) : Value::map();
}

std::vector<fs::path> templates_in(const std::string& dir) {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(fs::path(DG_TEST_DATA_DIR) / "codegen" / dir))
    if (e.path().extension() == ".j2") out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

TEST_CASE("Value: construction, access and building") {
  CHECK(Value().is_null());
  CHECK(Value(nullptr).is_null());
  CHECK(Value(true).is_bool());
  CHECK(Value(7).as_int() == 7);
  CHECK(Value(7L).is_int());
  CHECK(Value(7LL).is_int());
  CHECK(Value(7u).as_int() == 7);
  CHECK(Value(std::size_t{9}).as_int() == 9);
  CHECK_THROWS_AS(Value(~std::uint64_t{0}), std::out_of_range);
  CHECK(Value(1.5).is_double());
  CHECK(Value(3).as_double() == 3.0);
  CHECK(Value("s").as_string() == "s");
  CHECK(Value(std::string("s")).is_string());
  CHECK_THROWS_AS(Value("s").as_int(), std::invalid_argument);
  CHECK_THROWS_AS(Value(1.5).as_int(), std::invalid_argument);

  Value ctx;
  ctx["block_m"] = 128;
  ctx["dtypes"] = Value::list({"fp8", "bf16"});
  ctx["tile"]["k"] = 64;  // nested maps are created on demand
  REQUIRE(ctx.is_map());
  CHECK(ctx.size() == 3);
  CHECK(ctx.find("tile")->find("k")->as_int() == 64);
  CHECK(ctx.find("nope") == nullptr);
  CHECK_THROWS_AS(Value(1)["k"], std::invalid_argument);

  Value list;
  list.push_back(1);
  list.push_back("a");
  CHECK(list.as_list().size() == 2);

  // Copies share storage until one of them is written.
  Value copy = ctx;
  copy["block_m"] = 256;
  CHECK(ctx.find("block_m")->as_int() == 128);
  CHECK(copy.find("block_m")->as_int() == 256);

  CHECK(Value::map({{"a", 1}, {"b", Value::list({1, 2.5})}}) ==
        Value::map({{"b", Value::list({1, 2.5})}, {"a", 1}}));
  CHECK(Value(1) != Value(1.0));
}

TEST_CASE("Value::to_string prints like Python's str()") {
  CHECK(Value().to_string() == "None");
  CHECK(Value(true).to_string() == "True");
  CHECK(Value(false).to_string() == "False");
  CHECK(Value(-42).to_string() == "-42");
  CHECK(Value(1.5).to_string() == "1.5");
  CHECK(Value(3.0).to_string() == "3.0");
  CHECK(Value(-0.0).to_string() == "-0.0");
  CHECK(Value(0.1 + 0.2).to_string() == "0.30000000000000004");
  CHECK(Value(1e15).to_string() == "1000000000000000.0");
  CHECK(Value(1e16).to_string() == "1e+16");
  CHECK(Value(1.5e300).to_string() == "1.5e+300");
  CHECK(Value(0.0001).to_string() == "0.0001");
  CHECK(Value(0.00001).to_string() == "1e-05");
  CHECK(Value(2.5e-7).to_string() == "2.5e-07");
  CHECK(Value(123456789.125).to_string() == "123456789.125");
  CHECK(Value(1.0 / 0.0).to_string() == "inf");
  CHECK(Value(-1.0 / 0.0).to_string() == "-inf");
  CHECK(Value("plain").to_string() == "plain");
  CHECK(Value::list({1, "a", Value(), true, 2.0}).to_string() == "[1, 'a', None, True, 2.0]");
  CHECK(Value::list({"it's", "q\"q", "a\\b\n"}).to_string() == R"(["it's", 'q"q', 'a\\b\n'])");
  CHECK(Value::map({{"b", 1}, {"a", Value::list({})}}).to_string() == "{'a': [], 'b': 1}");
}

TEST_CASE("Value::canonical is type-tagged and unambiguous") {
  CHECK(Value(1).canonical() != Value(1.0).canonical());
  CHECK(Value(1).canonical() != Value("1").canonical());
  CHECK(Value(1).canonical() != Value(true).canonical());
  CHECK(Value::list({"a,b"}).canonical() != Value::list({"a", "b"}).canonical());
  CHECK(Value::list({Value::list({})}).canonical() != Value::list({}).canonical());
  CHECK(Value::map({{"ab", "c"}}).canonical() != Value::map({{"a", "bc"}}).canonical());
  Value a, b;  // same contents built in a different order
  a["x"] = 1;
  a["y"] = 2;
  b["y"] = 2;
  b["x"] = 1;
  CHECK(a.canonical() == b.canonical());
  CHECK(Value::map({{"k", Value::list({1, 2.5, "s", Value(), false})}}).canonical() ==
        "m{1:kl[i1,d2.5,s1:s,n,b0,],}");
}

TEST_CASE("parse_json") {
  const Value v = parse_json(R"( {"i": -12, "f": 1.5, "e": 1e2, "s": "a\"\n\u00e9\ud83d\ude00",
                                  "l": [true, false, null, []], "m": {}} )");
  CHECK(v.find("i")->as_int() == -12);
  CHECK(v.find("f")->as_double() == 1.5);
  CHECK(v.find("e")->is_double());
  CHECK(v.find("s")->as_string() == "a\"\n\xc3\xa9\xf0\x9f\x98\x80");
  CHECK(v.find("l")->to_string() == "[True, False, None, []]");
  CHECK(v.find("m")->is_map());
  CHECK_THROWS_AS(parse_json("{\"a\": 1,}"), std::invalid_argument);
  CHECK_THROWS_AS(parse_json("[1] x"), std::invalid_argument);
  CHECK_THROWS_AS(parse_json("99999999999999999999"), std::invalid_argument);
}

TEST_CASE("golden cases render their checked-in output") {
  const auto cases = templates_in("cases");
  REQUIRE(cases.size() >= 15);
  for (const fs::path& path : cases) {
    CAPTURE(path.filename().string());
    fs::path expected = path;
    expected.replace_extension(".out");
    const std::string out = dg::codegen::render(read_file(path), path.filename().string(), context_for(path));
    CHECK(out == read_file(expected));
  }
}

TEST_CASE("error cases fail with their checked-in message, location and caret") {
  const auto cases = templates_in("errors");
  REQUIRE(cases.size() >= 20);
  for (const fs::path& path : cases) {
    CAPTURE(path.filename().string());
    fs::path expected = path;
    expected.replace_extension(".err");
    std::string want = read_file(expected);
    want.pop_back();  // dg-codegen printed what() and a newline
    try {
      dg::codegen::render(read_file(path), path.filename().string(), context_for(path));
      FAIL("rendered without error");
    } catch (const TemplateError& e) {
      CHECK(std::string(e.what()) == want);
    }
  }
}

TEST_CASE("TemplateError carries name, line, column and a caret line") {
  const TemplateError e = error_of("// header\nint m = {{ block_m }};\nint n = {{ block_n }};\n",
                                   Value::map({{"block_m", 1}}));
  CHECK(e.template_name() == "t.j2");
  CHECK(e.line() == 3);
  CHECK(e.column() == 12);
  CHECK(e.message() == "undefined variable 'block_n'");
  CHECK(std::string(e.what()) ==
        "t.j2:3:12: undefined variable 'block_n'\nint n = {{ block_n }};\n           ^");

  SUBCASE("tabs are kept in the caret line and columns count characters, not bytes") {
    const TemplateError t = error_of("\t\xc3\xa9 {{ x }}");
    CHECK(t.column() == 7);
    CHECK(std::string(t.what()) == "t.j2:1:7: undefined variable 'x'\n\t\xc3\xa9 {{ x }}\n\t     ^");
  }
  SUBCASE("CRLF line ends count as one line break") {
    const TemplateError t = error_of("a\r\nb\r\n{{ x }}");
    CHECK(t.line() == 3);
    CHECK(t.column() == 4);
  }
}

TEST_CASE("error locations") {
  struct Case {
    const char* source;
    int line, column;
    const char* message;
  };
  const Case cases[] = {
      {"{{ a.b }}", 1, 4, "undefined variable 'a'"},
      {"{{ m.b + 1 }}", 1, 6, "'dict object' has no attribute 'b'"},
      {"{{ m['k'] }}", 1, 5, "'dict object' has no attribute 'k'"},
      {"{{ l[3] }}", 1, 5, "'list object' has no element 3"},
      {"{{ l.x ~ '' }}", 1, 6, "'list object' has no attribute 'x'"},
      {"{{ []|first }}", 1, 7, "no item: the sequence is empty"},
      {"{% set y = q %}\n\n{{ y }}", 1, 12, "undefined variable 'q'"},  // where q went missing
      {"{{ 1 +\n  'a' }}", 1, 6, "unsupported operand type(s) for +: 'int' and 'str'"},
      {"{{ 1 < 2 < 'a' }}", 1, 10, "'<' not supported between instances of 'int' and 'str'"},
      {"{{ 1 in 2 }}", 1, 6, "argument of type 'int' is not iterable"},
      {"{{ -'a' }}", 1, 4, "bad operand type for unary -: 'str'"},
      {"{{ 2 ** 63 }}", 1, 6, "integer overflow: template arithmetic is limited to 64 bits"},
      {"{{ 9223372036854775808 }}", 1, 4, "integer literal 9223372036854775808 is out of range"},
      {"{% for x in 3 %}{% endfor %}", 1, 13, "'int' object is not iterable"},
      {"{% for x in l %}{{ y }}{% endfor %}", 1, 20, "undefined variable 'y'"},
      {"{{ x|int(1, 2, 3) }}", 1, 9, "'int' takes at most 2 argument(s), got 3"},
      {"{{ x|int(bass=2) }}", 1, 10, "'int' has no parameter 'bass'"},
      {"{{ x|int(base=2, base=3) }}", 1, 18, "'int' got parameter 'base' twice"},
      {"{{ x|int(base=2, 3) }}", 1, 18, "positional argument follows keyword argument"},
      {"{{ 4 is divisibleby }}", 1, 9, "'divisibleby' is missing its argument 'num'"},
      {"{{ nope(1) }}", 1, 4, "unknown function 'nope'"},
      {"{{ l.pop() }}", 1, 9, "only the global function range() can be called"},
      {"{{ l[1:2] }}", 1, 7, "slices are not supported"},
      {"{{ (1, 2) }}", 1, 6, "tuples are not supported; use a list"},
      {"{{ {} }}", 1, 4, "unexpected '{'"},
      {"{{ 1 if true }}", 1, 14, "expected 'else', got '}}'"},
      {"{% for a, b in l %}{% endfor %}", 1, 9, "unpacking several loop variables is not supported"},
      {"{% for x l %}{% endfor %}", 1, 10, "expected 'in', got 'l'"},
      {"{% if true %}{% endif junk %}", 1, 23, "expected '%}', got 'junk'"},
      {"{% set x 1 %}", 1, 10, "expected '=', got '1'"},
      {"{% %}", 1, 4, "expected a tag name, got '%}'"},
      {"{% else %}", 1, 4, "unexpected 'else'"},
      {"{% if x %}{% else %}{% elif y %}{% endif %}", 1, 24, "unexpected 'elif'"},
      {"{% for x in l %}\n{% if x %}\n", 2, 4, "unclosed 'if' block: expected '{% endif %}'"},
      {"{{ x.}}", 1, 6, "expected an attribute name after '.', got '}}'"},
      {"{{ 'a\\x4' }}", 1, 6, "invalid \\x escape"},
      {"ok {{ x\n", 1, 4, "unclosed '{{'"},
      {"ok {% if", 1, 4, "unclosed '{%'"},
  };
  const Value ctx = Value::map({{"m", Value::map()}, {"l", Value::list({1, 2})}, {"x", "5"}});
  for (const Case& c : cases) {
    const std::string source = c.source;
    CAPTURE(source);
    const TemplateError e = error_of(c.source, ctx);
    CHECK(e.message() == c.message);
    CHECK(e.line() == c.line);
    CHECK(e.column() == c.column);
  }
}

TEST_CASE("whitespace control") {
  CHECK(render("a  {{- 1 -}}  b") == "a1b");
  CHECK(render("a \n {{- 1 }} \n b") == "a1 \n b");
  CHECK(render("a \n {{ 1 -}} \n b") == "a \n 1b");
  CHECK(render("a\n  {%- if true -%}\n  x\n  {%- endif -%}\n  b\n") == "axb\n");
  CHECK(render("a {#- c -#} b") == "ab");
  CHECK(render("a {# c #} b") == "a  b");
  CHECK(render("{% if true %}\nx\n{% endif %}\n") == "\nx\n\n");  // trim_blocks is off
  CHECK(render("  {% if true %}x{% endif %}") == "  x");          // lstrip_blocks is off
  CHECK(render("x\n") == "x\n");                                   // keep_trailing_newline
  CHECK(render("{{ 1 }}\n\n") == "1\n\n");
  CHECK(render("{{ 5-}} 6") == "56");    // '-}}' ends the tag even right after an operand
  CHECK(render("{{ 5 -1 }}") == "4");    // but '-' before other tokens is subtraction
  CHECK(render("{{- -1 -}}") == "-1");
  CHECK(render(" \t\r\n\v\f{{- 'x' -}} \t\r\n\v\f") == "x");
  CHECK(render("a\r\nb\rc") == "a\nb\nc");  // newlines are normalised as in Jinja2
  CHECK(render("{% for i in [1, 2, 3] -%}\n  {{ i }}\n{%- endfor %}") == "123");
  CHECK(render("{} {x} %} #} }}") == "{} {x} %} #} }}");
  CHECK(render("{{ 1 }}}") == "1}");
}

TEST_CASE("loops: variables, nesting and else") {
  const Value ctx = Value::map({{"xs", Value::list({"a", "b", "c"})}});
  CHECK(render("{% for x in xs %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}"
               "{{ loop.revindex0 }}{{ loop.first }}{{ loop.last }}{{ loop.length }}{{ x }} {% endfor %}",
               ctx) == "1032TrueFalse3a 2121FalseFalse3b 3210FalseTrue3c ");
  CHECK(render("{% for x in xs if x != 'b' %}{{ loop.index }}{{ x }}{{ loop.length }}{% endfor %}", ctx) ==
        "1a22c2");
  CHECK(render("{% for i in [1, 2] %}{% for j in [3] %}{{ loop.index }}{{ i }}{{ j }}{% endfor %}"
               "{{ loop.index }}{% endfor %}") == "11311232");
  CHECK(render("{% for x in [] %}a{% else %}b{% endfor %}") == "b");
  CHECK(render("{% for k in m %}{{ k }}{{ m[k] }}{% endfor %}",
               Value::map({{"m", Value::map({{"b", 2}, {"a", 1}})}})) == "a1b2");  // keys sorted
  CHECK(render("{% for c in 'h\xc3\xa9' %}[{{ c }}]{% endfor %}") == "[h][\xc3\xa9]");
  CHECK(render("{% for i in range(2, 8, 3) %}{{ i }}{% endfor %}{{ range(3) }}") == "25[0, 1, 2]");
}

TEST_CASE("scoping follows Jinja2") {
  CHECK(render("{% set x = 1 %}{% if true %}{% set x = 2 %}{% endif %}{{ x }}") == "2");
  CHECK(render("{% set x = 1 %}{% for i in [1] %}{% set x = 2 %}{{ x }}{% endfor %}{{ x }}") == "21");
  CHECK(render("{% set x = 5 %}{% for i in [1, 2] %}{% if loop.first %}{% set x = 1 %}{% endif %}"
               "{{ x }}{% endfor %}") == "15");  // a set lasts one iteration
  CHECK(render("{% set i = 'o' %}{% for i in [1, 2] %}{{ i }}{% endfor %}{{ i }}") == "12o");
  CHECK(error_of("{% for i in [1] %}{% set y = 1 %}{% endfor %}{{ y }}").message() ==
        "undefined variable 'y'");
  CHECK(error_of("{% for i in [1] %}{% endfor %}{{ loop }}").message() == "undefined variable 'loop'");
  CHECK(render("{% set n = n + 1 %}{{ n }}", Value::map({{"n", 1}})) == "2");  // shadows the context
}

TEST_CASE("undefined values fail only where used") {
  CHECK(render("{{ x | default(3) }}{{ m.k | default('d') }}{{ l[5] | d(0) }}",
               Value::map({{"m", Value::map()}, {"l", Value::list()}})) == "3d0");
  CHECK(render("{{ x is defined }}{{ x is not defined }}{{ x is undefined }}") == "FalseTrueTrue");
  CHECK(render("{{ 1 or x }}{{ 0 and x }}") == "10");  // short circuit never evaluates x
  CHECK(render("{% set y = x %}ok") == "ok");
  CHECK(render("{{ 1 if true else x }}") == "1");
  CHECK(error_of("{{ x.k | default(1) }}").message() == "undefined variable 'x'");
  CHECK(error_of("{{ [x] }}").message() == "undefined variable 'x'");  // stricter than Jinja2
  CHECK(error_of("{{ x | upper }}").message() == "undefined variable 'x'");
  CHECK(error_of("{{ 1 | default(2, x) }}").message() == "undefined variable 'x'");
}

TEST_CASE("Template: reusable, copyable, rendered concurrently") {
  const Template t = Template::parse(
      "{% for i in range(n) %}{{ name }}{{ i * n }}{{ ',' if not loop.last else '' }}{% endfor %}", "conc.j2");
  CHECK(t.name() == "conc.j2");
  const Template copy = t;
  CHECK(copy.render(Value::map({{"n", 2}, {"name", "a"}})) == "a0,a2");
  CHECK(t.render(Value::map({{"n", 1}, {"name", "b"}})) == "b0");
  CHECK(Template::parse("x", "x.j2").render(Value()) == "x");  // null context: empty
  CHECK_THROWS_AS(t.render(Value(1)), std::invalid_argument);

  constexpr int kThreads = 8;
  std::vector<std::string> expected(kThreads), got(kThreads);
  for (int i = 0; i < kThreads; ++i)
    expected[i] = t.render(Value::map({{"n", 20 + i}, {"name", "k" + std::to_string(i)}}));
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i)
    threads.emplace_back([&, i] {
      for (int rep = 0; rep < 50; ++rep) {
        std::string out = t.render(Value::map({{"n", 20 + i}, {"name", "k" + std::to_string(i)}}));
        if (rep == 0 || out != expected[i]) got[i] = std::move(out);
      }
    });
  for (std::thread& th : threads) th.join();
  CHECK(got == expected);
}
