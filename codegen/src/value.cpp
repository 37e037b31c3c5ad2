#include "dg/codegen/value.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <stdexcept>

#include "engine_limits.h"
#include "python.h"

namespace dg::codegen {

const char* type_name(Value::Type t) {
  switch (t) {
    case Value::Type::Null: return "none";
    case Value::Type::Bool: return "bool";
    case Value::Type::Int: return "int";
    case Value::Type::Double: return "float";
    case Value::Type::String: return "string";
    case Value::Type::List: return "list";
    case Value::Type::Map: return "map";
  }
  return "?";
}

namespace {
[[noreturn]] void wrong_type(Value::Type want, Value::Type got) {
  throw std::invalid_argument(std::string("Value: expected ") + type_name(want) + ", got " +
                              type_name(got));
}
}  // namespace

void Value::throw_out_of_range() { throw std::out_of_range("Value: integer above INT64_MAX"); }

bool Value::as_bool() const {
  if (!is_bool()) wrong_type(Type::Bool, type());
  return std::get<bool>(v_);
}

std::int64_t Value::as_int() const {
  if (!is_int()) wrong_type(Type::Int, type());
  return std::get<std::int64_t>(v_);
}

double Value::as_double() const {
  if (is_int()) return static_cast<double>(std::get<std::int64_t>(v_));
  if (!is_double()) wrong_type(Type::Double, type());
  return std::get<double>(v_);
}

const std::string& Value::as_string() const {
  if (!is_string()) wrong_type(Type::String, type());
  return std::get<std::string>(v_);
}

const Value::List& Value::as_list() const {
  if (!is_list()) wrong_type(Type::List, type());
  return *std::get<std::shared_ptr<List>>(v_);
}

const Value::Map& Value::as_map() const {
  if (!is_map()) wrong_type(Type::Map, type());
  return *std::get<std::shared_ptr<Map>>(v_);
}

// Copy on write: a list or map shared with another Value is cloned before it is modified.
Value::List& Value::mutable_list() {
  if (is_null()) v_ = std::make_shared<List>();
  if (!is_list()) wrong_type(Type::List, type());
  auto& p = std::get<std::shared_ptr<List>>(v_);
  if (p.use_count() > 1) p = std::make_shared<List>(*p);
  return *p;
}

Value::Map& Value::mutable_map() {
  if (is_null()) v_ = std::make_shared<Map>();
  if (!is_map()) wrong_type(Type::Map, type());
  auto& p = std::get<std::shared_ptr<Map>>(v_);
  if (p.use_count() > 1) p = std::make_shared<Map>(*p);
  return *p;
}

Value& Value::operator[](const std::string& key) { return mutable_map()[key]; }

void Value::push_back(Value item) { mutable_list().push_back(std::move(item)); }

const Value* Value::find(const std::string& key) const {
  if (!is_map()) return nullptr;
  const Map& m = as_map();
  auto it = m.find(key);
  return it == m.end() ? nullptr : &it->second;
}

std::size_t Value::size() const {
  switch (type()) {
    case Type::String: return as_string().size();
    case Type::List: return as_list().size();
    case Type::Map: return as_map().size();
    default: return 0;
  }
}

bool operator==(const Value& a, const Value& b) {
  if (a.type() != b.type()) return false;
  switch (a.type()) {
    case Value::Type::Null: return true;
    case Value::Type::Bool: return a.as_bool() == b.as_bool();
    case Value::Type::Int: return a.as_int() == b.as_int();
    case Value::Type::Double: return a.as_double() == b.as_double();
    case Value::Type::String: return a.as_string() == b.as_string();
    case Value::Type::List: return a.as_list() == b.as_list();
    case Value::Type::Map: return a.as_map() == b.as_map();
  }
  return false;
}

namespace {

struct TooLong {};

void append_repr(std::string& out, const Value& v, std::size_t limit);

// Appends str(v); throws TooLong as soon as `out` exceeds `limit` bytes.
void append_str(std::string& out, const Value& v, std::size_t limit) {
  switch (v.type()) {
    case Value::Type::Null: out += "None"; break;
    case Value::Type::Bool: out += v.as_bool() ? "True" : "False"; break;
    case Value::Type::Int: out += std::to_string(v.as_int()); break;
    case Value::Type::Double: out += python::float_repr(v.as_double()); break;
    case Value::Type::String: out += v.as_string(); break;
    case Value::Type::List: {
      out += '[';
      const char* sep = "";
      for (const Value& item : v.as_list()) {
        out += sep;
        append_repr(out, item, limit);
        sep = ", ";
      }
      out += ']';
      break;
    }
    case Value::Type::Map: {
      out += '{';
      const char* sep = "";
      for (const auto& [key, item] : v.as_map()) {
        out += sep;
        out += python::string_repr(key);
        out += ": ";
        append_repr(out, item, limit);
        sep = ", ";
      }
      out += '}';
      break;
    }
  }
  if (out.size() > limit) throw TooLong{};
}

// Inside containers Python prints repr() of each item, which only differs from str() for strings.
void append_repr(std::string& out, const Value& v, std::size_t limit) {
  if (v.is_string())
    out += python::string_repr(v.as_string());
  else
    append_str(out, v, limit);
  if (out.size() > limit) throw TooLong{};
}

void append_canonical(std::string& out, const Value& v) {
  switch (v.type()) {
    case Value::Type::Null: out += 'n'; break;
    case Value::Type::Bool: out += v.as_bool() ? "b1" : "b0"; break;
    case Value::Type::Int: out += 'i' + std::to_string(v.as_int()); break;
    case Value::Type::Double: out += 'd' + python::float_repr(v.as_double()); break;
    case Value::Type::String:
      out += 's' + std::to_string(v.as_string().size()) + ':' + v.as_string();
      break;
    case Value::Type::List:
      out += "l[";
      for (const Value& item : v.as_list()) {
        append_canonical(out, item);
        out += ',';
      }
      out += ']';
      break;
    case Value::Type::Map:
      out += "m{";
      for (const auto& [key, item] : v.as_map()) {
        out += std::to_string(key.size()) + ':' + key;
        append_canonical(out, item);
        out += ',';
      }
      out += '}';
      break;
  }
}

}  // namespace

std::string Value::to_string() const {
  if (is_string()) return as_string();
  std::string out;
  append_str(out, *this, std::string::npos);
  return out;
}

std::string Value::canonical() const {
  std::string out;
  append_canonical(out, *this);
  return out;
}

namespace detail {

std::size_t list_bytes(const Value::List& items) {
  std::size_t bytes = items.size() * sizeof(Value);
  for (const Value& item : items)
    if (item.is_string()) bytes += item.as_string().size();
  return bytes;
}

bool deeper_than(const Value& v, int depth) {
  if (!v.is_list() && !v.is_map()) return false;
  if (depth <= 0) return true;
  if (v.is_list()) {
    for (const Value& item : v.as_list())
      if (deeper_than(item, depth - 1)) return true;
  } else {
    for (const auto& item : v.as_map())
      if (deeper_than(item.second, depth - 1)) return true;
  }
  return false;
}

std::optional<std::string> to_string_within(const Value& v, std::size_t limit) {
  if (v.is_string()) return v.as_string().size() <= limit ? std::optional<std::string>(v.as_string()) : std::nullopt;
  std::string out;
  try {
    append_str(out, v, limit);
  } catch (const TooLong&) {
    return std::nullopt;
  }
  return out;
}

}  // namespace detail

namespace python {

std::string float_repr(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d < 0 ? "-inf" : "inf";
  // Shortest round-trip digits, then Python's layout: positional when the decimal exponent is in
  // [-4, 16), else scientific with a signed exponent of at least two digits; always a '.' or 'e'.
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
  std::string_view sci(buf, static_cast<std::size_t>(res.ptr - buf));  // "-1.2345e+17"
  std::string sign = sci.front() == '-' ? "-" : "";
  if (!sign.empty()) sci.remove_prefix(1);
  const std::size_t e = sci.find('e');
  std::string digits(sci.substr(0, e));
  if (digits.size() > 1) digits.erase(1, 1);  // drop the '.'
  const int exp10 = std::stoi(std::string(sci.substr(e + 1)));
  const int n = static_cast<int>(digits.size());

  if (exp10 < -4 || exp10 >= 16) {
    std::string mantissa = digits.substr(0, 1);
    if (n > 1) mantissa += '.' + digits.substr(1);
    char exp[16];
    std::snprintf(exp, sizeof exp, "e%c%02d", exp10 < 0 ? '-' : '+', std::abs(exp10));
    return sign + mantissa + exp;
  }
  if (exp10 < 0) return sign + "0." + std::string(static_cast<std::size_t>(-exp10 - 1), '0') + digits;
  if (exp10 + 1 >= n) return sign + digits + std::string(static_cast<std::size_t>(exp10 + 1 - n), '0') + ".0";
  return sign + digits.substr(0, static_cast<std::size_t>(exp10 + 1)) + '.' +
         digits.substr(static_cast<std::size_t>(exp10 + 1));
}

std::string string_repr(std::string_view s) {
  // Python prefers single quotes and switches to double quotes when that avoids escaping.
  const char quote = s.find('\'') != std::string_view::npos && s.find('"') == std::string_view::npos
                         ? '"'
                         : '\'';
  std::string out(1, quote);
  for (unsigned char c : s) {
    switch (c) {
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c == quote) {
          out += '\\';
          out += static_cast<char>(c);
        } else if (c < 0x20 || c == 0x7f) {
          char hex[8];
          std::snprintf(hex, sizeof hex, "\\x%02x", c);
          out += hex;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  out += quote;
  return out;
}

}  // namespace python

}  // namespace dg::codegen
