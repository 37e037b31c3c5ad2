#include "ops.h"

#include <cmath>
#include <cstdint>
#include <limits>

#include "engine_limits.h"

namespace dg::codegen::detail {

namespace {

// bool takes part in arithmetic as 0 or 1, as in Python.
bool is_integral(const Value& v) { return v.is_int() || v.is_bool(); }
bool is_numeric(const Value& v) { return is_integral(v) || v.is_double(); }
std::int64_t to_int(const Value& v) { return v.is_bool() ? v.as_bool() : v.as_int(); }
double to_double(const Value& v) { return v.is_bool() ? v.as_bool() : v.as_double(); }

const char* symbol(BinaryOp op) {
  switch (op) {
    case BinaryOp::Add: return "+";
    case BinaryOp::Sub: return "-";
    case BinaryOp::Mul: return "*";
    case BinaryOp::Div: return "/";
    case BinaryOp::FloorDiv: return "//";
    case BinaryOp::Mod: return "%";
    case BinaryOp::Pow: return "**";
    case BinaryOp::Concat: return "~";
    case BinaryOp::And: return "and";
    case BinaryOp::Or: return "or";
  }
  return "?";
}

const char* symbol(CompareOp op) {
  switch (op) {
    case CompareOp::Eq: return "==";
    case CompareOp::Ne: return "!=";
    case CompareOp::Lt: return "<";
    case CompareOp::Le: return "<=";
    case CompareOp::Gt: return ">";
    case CompareOp::Ge: return ">=";
    case CompareOp::In: return "in";
    case CompareOp::NotIn: return "not in";
  }
  return "?";
}

[[noreturn]] void unsupported(const char* op, const Value& a, const Value& b) {
  throw EvalError{std::string("unsupported operand type(s) for ") + op + ": " + python_type(a) +
                  " and " + python_type(b)};
}

[[noreturn]] void overflow() {
  throw EvalError{"integer overflow: template arithmetic is limited to 64 bits"};
}

std::int64_t add(std::int64_t a, std::int64_t b) {
  std::int64_t r;
  if (__builtin_add_overflow(a, b, &r)) overflow();
  return r;
}
std::int64_t sub(std::int64_t a, std::int64_t b) {
  std::int64_t r;
  if (__builtin_sub_overflow(a, b, &r)) overflow();
  return r;
}
std::int64_t mul(std::int64_t a, std::int64_t b) {
  std::int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) overflow();
  return r;
}

[[noreturn]] void too_long(const char* what, std::size_t limit) {
  throw EvalError{std::string(what) + " would exceed the template engine's limit of " + std::to_string(limit) +
                  (what[0] == 's' ? " bytes" : " items")};
}

std::string joined(const std::string& a, const std::string& b) {
  if (a.size() + b.size() > kMaxStringBytes) too_long("string", kMaxStringBytes);
  return a + b;
}

Value::List concatenated(const Value::List& a, const Value::List& b) {
  if (a.size() + b.size() > kMaxListItems) too_long("list", kMaxListItems);
  if (list_bytes(a) + list_bytes(b) > kMaxListBytes) too_long("list of strings", kMaxListBytes);
  Value::List out = a;
  out.insert(out.end(), b.begin(), b.end());
  return out;
}

Value repeat(const Value& seq, std::int64_t n) {
  // An empty sequence repeated any number of times is empty: no loop of n rounds over nothing.
  const bool empty = seq.is_string() ? seq.as_string().empty() : seq.as_list().empty();
  if (n <= 0 || empty) return seq.is_string() ? Value("") : Value(Value::List());
  const auto times = static_cast<std::uint64_t>(n);
  if (seq.is_string()) {
    const std::string& s = seq.as_string();
    if (!s.empty() && times > kMaxStringBytes / s.size()) too_long("string", kMaxStringBytes);
    std::string out;
    out.reserve(s.size() * times);
    for (std::uint64_t i = 0; i < times; ++i) out += s;
    return out;
  }
  const Value::List& items = seq.as_list();
  if (!items.empty() && (times > kMaxListItems / items.size() || times > kMaxListBytes / list_bytes(items)))
    too_long("list", kMaxListItems);
  Value::List out;
  out.reserve(items.size() * times);
  for (std::uint64_t i = 0; i < times; ++i) out.insert(out.end(), items.begin(), items.end());
  return out;
}

Value int_arithmetic(BinaryOp op, std::int64_t a, std::int64_t b) {
  switch (op) {
    case BinaryOp::Add: return add(a, b);
    case BinaryOp::Sub: return sub(a, b);
    case BinaryOp::Mul: return mul(a, b);
    case BinaryOp::Div:
      if (b == 0) throw EvalError{"division by zero"};
      return static_cast<double>(a) / static_cast<double>(b);
    case BinaryOp::FloorDiv:
    case BinaryOp::Mod: {
      if (b == 0) throw EvalError{"integer division or modulo by zero"};
      if (a == std::numeric_limits<std::int64_t>::min() && b == -1) {
        if (op == BinaryOp::FloorDiv) overflow();
        return std::int64_t{0};
      }
      // C++ truncates toward zero; Python floors, so the remainder takes the divisor's sign.
      std::int64_t q = a / b, m = a % b;
      if (m != 0 && ((m < 0) != (b < 0))) {
        q -= 1;
        m += b;
      }
      return op == BinaryOp::FloorDiv ? q : m;
    }
    case BinaryOp::Pow: {
      if (b < 0) {
        if (a == 0) throw EvalError{"0 cannot be raised to a negative power"};
        return std::pow(static_cast<double>(a), static_cast<double>(b));
      }
      std::int64_t result = 1, base = a;
      for (std::int64_t e = b; e > 0; e >>= 1) {
        if (e & 1) result = mul(result, base);
        if (e > 1) base = mul(base, base);
      }
      return result;
    }
    default: break;
  }
  throw EvalError{"bad integer operator"};
}

Value float_arithmetic(BinaryOp op, double a, double b) {
  switch (op) {
    case BinaryOp::Add: return a + b;
    case BinaryOp::Sub: return a - b;
    case BinaryOp::Mul: return a * b;
    case BinaryOp::Div:
      if (b == 0) throw EvalError{"float division by zero"};
      return a / b;
    case BinaryOp::FloorDiv:
    case BinaryOp::Mod: {
      if (b == 0) throw EvalError{"float modulo by zero"};
      // CPython's float_divmod: fmod, then move the remainder to the divisor's sign.
      double m = std::fmod(a, b);
      double q = (a - m) / b;
      if (m != 0) {
        if ((b < 0) != (m < 0)) {
          m += b;
          q -= 1;
        }
      } else {
        m = std::copysign(0.0, b);
      }
      if (op == BinaryOp::Mod) return m;
      if (q == 0) return std::copysign(0.0, a / b);
      double fq = std::floor(q);
      if (q - fq > 0.5) fq += 1;
      return fq;
    }
    case BinaryOp::Pow:
      if (a == 0 && b < 0) throw EvalError{"0.0 cannot be raised to a negative power"};
      if (a < 0 && b != std::floor(b)) throw EvalError{"negative number raised to a fractional power"};
      return std::pow(a, b);
    default: break;
  }
  throw EvalError{"bad float operator"};
}

// Python's ordering for <, <=, >, >=: numbers, strings, and lists element by element.
bool order(CompareOp op, const Value& a, const Value& b) {
  auto apply = [op](auto x, auto y) {
    switch (op) {
      case CompareOp::Lt: return x < y;
      case CompareOp::Le: return x <= y;
      case CompareOp::Gt: return x > y;
      default: return x >= y;
    }
  };
  if (is_integral(a) && is_integral(b)) return apply(to_int(a), to_int(b));
  if (is_numeric(a) && is_numeric(b)) return apply(to_double(a), to_double(b));
  if (a.is_string() && b.is_string()) return apply(a.as_string().compare(b.as_string()), 0);
  if (a.is_list() && b.is_list()) {
    const auto& x = a.as_list();
    const auto& y = b.as_list();
    for (std::size_t i = 0; i < x.size() && i < y.size(); ++i)
      if (!equal(x[i], y[i])) return order(op, x[i], y[i]);
    return apply(x.size(), y.size());
  }
  throw EvalError{std::string("'") + symbol(op) + "' not supported between instances of " +
                  python_type(a) + " and " + python_type(b)};
}

bool contains(const Value& container, const Value& item) {
  if (container.is_string()) {
    if (!item.is_string())
      throw EvalError{"'in <string>' requires string as left operand, not " + python_type(item)};
    return container.as_string().find(item.as_string()) != std::string::npos;
  }
  if (container.is_list()) {
    for (const Value& x : container.as_list())
      if (equal(x, item)) return true;
    return false;
  }
  if (container.is_map()) return item.is_string() && container.find(item.as_string()) != nullptr;
  throw EvalError{"argument of type " + python_type(container) + " is not iterable"};
}

}  // namespace

std::string python_type(const Value& v) {
  switch (v.type()) {
    case Value::Type::Null: return "'NoneType'";
    case Value::Type::Bool: return "'bool'";
    case Value::Type::Int: return "'int'";
    case Value::Type::Double: return "'float'";
    case Value::Type::String: return "'str'";
    case Value::Type::List: return "'list'";
    case Value::Type::Map: return "'dict'";
  }
  return "'?'";
}

bool truthy(const Value& v) {
  switch (v.type()) {
    case Value::Type::Null: return false;
    case Value::Type::Bool: return v.as_bool();
    case Value::Type::Int: return v.as_int() != 0;
    case Value::Type::Double: return v.as_double() != 0;
    default: return v.size() != 0;
  }
}

bool equal(const Value& a, const Value& b) {
  if (is_integral(a) && is_integral(b)) return to_int(a) == to_int(b);
  if (is_numeric(a) && is_numeric(b)) return to_double(a) == to_double(b);
  if (a.type() != b.type()) return false;
  if (a.is_list()) {
    const auto& x = a.as_list();
    const auto& y = b.as_list();
    if (x.size() != y.size()) return false;
    for (std::size_t i = 0; i < x.size(); ++i)
      if (!equal(x[i], y[i])) return false;
    return true;
  }
  if (a.is_map()) {
    const auto& x = a.as_map();
    const auto& y = b.as_map();
    if (x.size() != y.size()) return false;
    for (auto i = x.begin(), j = y.begin(); i != x.end(); ++i, ++j)
      if (i->first != j->first || !equal(i->second, j->second)) return false;
    return true;
  }
  return a == b;
}

bool compare(CompareOp op, const Value& a, const Value& b) {
  switch (op) {
    case CompareOp::Eq: return equal(a, b);
    case CompareOp::Ne: return !equal(a, b);
    case CompareOp::In: return contains(b, a);
    case CompareOp::NotIn: return !contains(b, a);
    default: return order(op, a, b);
  }
}

Value arithmetic(BinaryOp op, const Value& a, const Value& b) {
  if (is_integral(a) && is_integral(b)) return int_arithmetic(op, to_int(a), to_int(b));
  if (is_numeric(a) && is_numeric(b)) return float_arithmetic(op, to_double(a), to_double(b));
  if (op == BinaryOp::Add && a.is_string() && b.is_string()) return joined(a.as_string(), b.as_string());
  if (op == BinaryOp::Add && a.is_list() && b.is_list()) return concatenated(a.as_list(), b.as_list());
  if (op == BinaryOp::Mul) {
    if ((a.is_string() || a.is_list()) && is_integral(b)) return repeat(a, to_int(b));
    if (is_integral(a) && (b.is_string() || b.is_list())) return repeat(b, to_int(a));
  }
  unsupported(symbol(op), a, b);
}

Value unary(UnaryOp op, const Value& v) {
  switch (op) {
    case UnaryOp::Not: return !truthy(v);
    case UnaryOp::Pos:
      if (is_integral(v)) return to_int(v);
      if (v.is_double()) return v;
      throw EvalError{"bad operand type for unary +: " + python_type(v)};
    case UnaryOp::Neg:
      if (is_integral(v)) {
        if (to_int(v) == std::numeric_limits<std::int64_t>::min()) overflow();
        return -to_int(v);
      }
      if (v.is_double()) return -v.as_double();
      throw EvalError{"bad operand type for unary -: " + python_type(v)};
  }
  return v;
}

std::size_t character_count(const std::string& s) {
  std::size_t n = 0;
  for (char c : s) n += (static_cast<unsigned char>(c) & 0xc0) != 0x80;
  return n;
}

std::vector<Value> characters(const std::string& s) {
  if (character_count(s) > kMaxListItems)
    throw EvalError{"a string of more than " + std::to_string(kMaxListItems) +
                    " characters cannot be split into characters (the template engine's list limit)"};
  std::vector<Value> out;
  for (std::size_t i = 0; i < s.size();) {
    std::size_t n = 1;
    while (i + n < s.size() && (static_cast<unsigned char>(s[i + n]) & 0xc0) == 0x80) ++n;
    out.emplace_back(s.substr(i, n));
    i += n;
  }
  return out;
}

std::vector<Value> iterate(const Value& v) {
  if (v.is_list()) return v.as_list();
  if (v.is_string()) return characters(v.as_string());
  if (v.is_map()) {
    std::vector<Value> keys;
    for (const auto& item : v.as_map()) keys.emplace_back(item.first);
    return keys;
  }
  throw EvalError{python_type(v) + " object is not iterable"};
}

}  // namespace dg::codegen::detail
