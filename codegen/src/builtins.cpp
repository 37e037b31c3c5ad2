#include "builtins.h"

#include <cmath>
#include <cstdlib>
#include <limits>

#include "engine_limits.h"
#include "ops.h"

namespace dg::codegen::detail {

namespace {

using Args = std::vector<Operand>;

Operand of(Value v) { return Operand{std::move(v), {}, {}}; }

bool is_py_space(char c) {
  return c == ' ' || (c >= '\t' && c <= '\r') || (c >= '\x1c' && c <= '\x1f');
}

std::string strip(const std::string& s, const std::string& chars, bool whitespace) {
  auto drop = [&](char c) { return whitespace ? is_py_space(c) : chars.find(c) != std::string::npos; };
  std::size_t b = 0, e = s.size();
  while (b < e && drop(s[b])) ++b;
  while (e > b && drop(s[e - 1])) --e;
  return s.substr(b, e - b);
}

// Python's int(s, base): surrounding whitespace, a sign, the base's 0x/0o/0b prefix, and '_'
// between digits. nullopt where Python raises ValueError.
std::optional<std::int64_t> parse_int(const std::string& text, std::int64_t base) {
  if (base < 2 || base > 36) throw EvalError{"int() base must be >= 2 and <= 36"};
  std::string s = strip(text, "", true);
  bool negative = false;
  std::size_t i = 0;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) negative = s[i++] == '-';
  if (s.size() - i > 2 && s[i] == '0') {
    const char p = static_cast<char>(s[i + 1] | 0x20);
    if ((base == 16 && p == 'x') || (base == 8 && p == 'o') || (base == 2 && p == 'b')) i += 2;
  }
  std::int64_t r = 0;
  bool any = false;
  for (; i < s.size(); ++i) {
    if (s[i] == '_' && any && i + 1 < s.size() && s[i + 1] != '_') continue;
    const char c = static_cast<char>(s[i] | 0x20);
    const int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'z' ? c - 'a' + 10 : 99;
    if (d >= base) return std::nullopt;
    if (__builtin_mul_overflow(r, base, &r) || __builtin_add_overflow(r, d, &r))
      throw EvalError{"integer overflow: template arithmetic is limited to 64 bits"};
    any = true;
  }
  if (!any) return std::nullopt;
  return negative ? -r : r;
}

// Python's float(s). nullopt where Python raises ValueError.
std::optional<double> parse_float(const std::string& text) {
  std::string s;
  for (char c : strip(text, "", true))
    if (c != '_') s += c;
  if (s.empty() || s.find_first_of("xX(") != std::string::npos) return std::nullopt;  // strtod extras
  char* end = nullptr;
  const double d = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size()) return std::nullopt;
  return d;
}

// Python's int() of a float: truncation; inf and nan raise.
std::optional<std::int64_t> float_to_int(double d) {
  if (std::isnan(d)) return std::nullopt;
  if (!(d > -9.3e18 && d < 9.3e18) || std::trunc(d) < -9223372036854775808.0 ||
      std::trunc(d) >= 9223372036854775808.0)
    throw EvalError{"cannot convert float " + Value(d).to_string() + " to a 64-bit integer"};
  return static_cast<std::int64_t>(std::trunc(d));
}

// Jinja2's int filter: int(value) or int(value, base) for strings; failing that int(float(value));
// failing that the default.
Operand filter_int(const Operand& in, const Args& a) {
  const Value& v = in.value;
  if (v.is_int()) return of(v);
  if (v.is_bool()) return of(std::int64_t{v.as_bool()});
  if (v.is_double()) {
    if (auto i = float_to_int(v.as_double())) return of(*i);
    return a[0];
  }
  if (v.is_string()) {
    if (!a[1].value.is_int()) throw EvalError{"int() base must be an integer"};
    if (auto i = parse_int(v.as_string(), a[1].value.as_int())) return of(*i);
    if (auto d = parse_float(v.as_string())) {
      if (std::isinf(*d)) return a[0];
      if (auto i = float_to_int(*d)) return of(*i);
    }
  }
  return a[0];
}

Operand filter_float(const Operand& in, const Args& a) {
  const Value& v = in.value;
  if (v.is_bool() || v.is_int()) return of(v.is_bool() ? static_cast<double>(v.as_bool()) : v.as_double());
  if (v.is_double()) return of(v);
  if (v.is_string())
    if (auto d = parse_float(v.as_string())) return of(*d);
  return a[0];
}

Operand filter_abs(const Operand& in, const Args&) {
  const Value& v = in.value;
  if (v.is_double()) return of(std::fabs(v.as_double()));
  if (v.is_int() || v.is_bool()) {
    const std::int64_t i = v.is_bool() ? v.as_bool() : v.as_int();
    if (i == std::numeric_limits<std::int64_t>::min())
      throw EvalError{"integer overflow: template arithmetic is limited to 64 bits"};
    return of(i < 0 ? -i : i);
  }
  throw EvalError{"bad operand type for abs(): " + python_type(v)};
}

Operand filter_default(const Operand& in, const Args& a) {
  if (!in.defined() || (truthy(a[1].get()) && !truthy(in.value))) return a[0];
  return in;
}

Operand first_or_last(const Operand& in, bool last) {
  const std::vector<Value> items = iterate(in.value);
  if (items.empty()) return Operand{{}, "no item: the sequence is empty", {}};
  return of(last ? items.back() : items.front());
}
Operand filter_first(const Operand& in, const Args&) { return first_or_last(in, false); }
Operand filter_last(const Operand& in, const Args&) { return first_or_last(in, true); }

Operand filter_join(const Operand& in, const Args& a) {
  const std::string sep = a[0].value.to_string();
  std::string out;
  bool first = true;
  for (const Value& item : iterate(in.value)) {
    if (!first) out += sep;
    const std::optional<std::string> text = to_string_within(item, kMaxStringBytes - out.size());
    if (!text) throw EvalError{"join() would exceed the template engine's limit of " + std::to_string(kMaxStringBytes) + " bytes"};
    out += *text;
    first = false;
    if (out.size() > kMaxStringBytes)
      throw EvalError{"join() would exceed the template engine's limit of " + std::to_string(kMaxStringBytes) + " bytes"};
  }
  return of(std::move(out));
}

Operand filter_length(const Operand& in, const Args&) {
  const Value& v = in.value;
  if (v.is_string()) return of(character_count(v.as_string()));
  if (v.is_list() || v.is_map()) return of(v.size());
  throw EvalError{"object of type " + python_type(v) + " has no len()"};
}

Operand filter_list(const Operand& in, const Args&) { return of(iterate(in.value)); }

Operand change_case(const Operand& in, bool upper) {
  std::string s = in.value.to_string();
  for (char& c : s) {  // ASCII only; Python would also map non-ASCII letters
    if (upper && c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
    if (!upper && c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return of(std::move(s));
}
Operand filter_lower(const Operand& in, const Args&) { return change_case(in, false); }
Operand filter_upper(const Operand& in, const Args&) { return change_case(in, true); }

Operand filter_string(const Operand& in, const Args&) { return of(in.value.to_string()); }

Operand filter_trim(const Operand& in, const Args& a) {
  const Value& chars = a[0].value;
  if (!chars.is_null() && !chars.is_string()) throw EvalError{"trim() chars must be a string"};
  return of(strip(in.value.to_string(), chars.is_null() ? "" : chars.as_string(), chars.is_null()));
}

Operand is(bool b) { return of(b); }
Operand test_defined(const Operand& in, const Args&) { return is(in.defined()); }
Operand test_undefined(const Operand& in, const Args&) { return is(!in.defined()); }
Operand test_none(const Operand& in, const Args&) { return is(in.value.is_null()); }
Operand test_boolean(const Operand& in, const Args&) { return is(in.value.is_bool()); }
Operand test_integer(const Operand& in, const Args&) { return is(in.value.is_int()); }
Operand test_float(const Operand& in, const Args&) { return is(in.value.is_double()); }
Operand test_number(const Operand& in, const Args&) {
  return is(in.value.is_number() || in.value.is_bool());
}
Operand test_string(const Operand& in, const Args&) { return is(in.value.is_string()); }
Operand test_mapping(const Operand& in, const Args&) { return is(in.value.is_map()); }
Operand test_sequence(const Operand& in, const Args&) {
  return is(in.value.is_string() || in.value.is_list() || in.value.is_map());
}
Operand test_divisibleby(const Operand& in, const Args& a) {
  return is(equal(arithmetic(BinaryOp::Mod, in.value, a[0].value), Value(0)));
}
Operand test_even(const Operand& in, const Args&) {
  return is(equal(arithmetic(BinaryOp::Mod, in.value, Value(2)), Value(0)));
}
Operand test_odd(const Operand& in, const Args&) {
  return is(equal(arithmetic(BinaryOp::Mod, in.value, Value(2)), Value(1)));
}

// range(stop) or range(start, stop[, step]), as in Python.
Operand function_range(const Operand&, const Args& a) {
  for (const Operand& arg : a)
    if (!arg.value.is_null() && !arg.value.is_int() && !arg.value.is_bool())
      throw EvalError{python_type(arg.value) + " object cannot be interpreted as an integer"};
  auto to_int = [](const Value& v) -> std::int64_t { return v.is_bool() ? v.as_bool() : v.as_int(); };
  std::int64_t start = 0, stop = to_int(a[0].value), step = to_int(a[2].value);
  if (!a[1].value.is_null()) {
    start = stop;
    stop = to_int(a[1].value);
  }
  if (step == 0) throw EvalError{"range() arg 3 must not be zero"};
  // The count first, in unsigned arithmetic: stepping an int64 past stop could overflow.
  std::uint64_t count = 0;
  if (step > 0 && start < stop)
    count = (static_cast<std::uint64_t>(stop) - static_cast<std::uint64_t>(start) - 1) / static_cast<std::uint64_t>(step) + 1;
  else if (step < 0 && start > stop)
    count = (static_cast<std::uint64_t>(start) - static_cast<std::uint64_t>(stop) - 1) /
                (std::uint64_t{0} - static_cast<std::uint64_t>(step)) + 1;
  if (count > kMaxListItems)
    throw EvalError{"range() is limited to " + std::to_string(kMaxListItems) + " items (this one has " +
                    std::to_string(count) + ")"};
  Value::List out;
  out.reserve(count);
  // start + i * step lies between start and stop: computed modulo 2^64, it is exact.
  for (std::uint64_t i = 0; i < count; ++i)
    out.emplace_back(static_cast<std::int64_t>(static_cast<std::uint64_t>(start) + i * static_cast<std::uint64_t>(step)));
  return of(std::move(out));
}

const std::vector<Builtin>& builtins() {
  using K = BuiltinKind;
  static const std::vector<Builtin> all = {
      {K::Filter, "abs", {}, false, filter_abs},
      {K::Filter, "count", {}, false, filter_length},
      {K::Filter, "d", {{"default_value", Value("")}, {"boolean", Value(false)}}, true, filter_default},
      {K::Filter, "default", {{"default_value", Value("")}, {"boolean", Value(false)}}, true, filter_default},
      {K::Filter, "first", {}, false, filter_first},
      {K::Filter, "float", {{"default", Value(0.0)}}, false, filter_float},
      {K::Filter, "int", {{"default", Value(0)}, {"base", Value(10)}}, false, filter_int},
      {K::Filter, "join", {{"d", Value("")}}, false, filter_join},
      {K::Filter, "last", {}, false, filter_last},
      {K::Filter, "length", {}, false, filter_length},
      {K::Filter, "list", {}, false, filter_list},
      {K::Filter, "lower", {}, false, filter_lower},
      {K::Filter, "string", {}, false, filter_string},
      {K::Filter, "trim", {{"chars", Value()}}, false, filter_trim},
      {K::Filter, "upper", {}, false, filter_upper},
      {K::Test, "boolean", {}, false, test_boolean},
      {K::Test, "defined", {}, true, test_defined},
      {K::Test, "divisibleby", {{"num", std::nullopt}}, false, test_divisibleby},
      {K::Test, "even", {}, false, test_even},
      {K::Test, "float", {}, false, test_float},
      {K::Test, "integer", {}, false, test_integer},
      {K::Test, "mapping", {}, false, test_mapping},
      {K::Test, "none", {}, false, test_none},
      {K::Test, "number", {}, false, test_number},
      {K::Test, "odd", {}, false, test_odd},
      {K::Test, "sequence", {}, false, test_sequence},
      {K::Test, "string", {}, false, test_string},
      {K::Test, "undefined", {}, true, test_undefined},
      {K::Function, "range", {{"start", std::nullopt}, {"stop", Value()}, {"step", Value(1)}}, false,
       function_range},
  };
  return all;
}

}  // namespace

const Builtin* find_builtin(BuiltinKind kind, std::string_view name) {
  for (const Builtin& b : builtins())
    if (b.kind == kind && b.name == name) return &b;
  return nullptr;
}

}  // namespace dg::codegen::detail
