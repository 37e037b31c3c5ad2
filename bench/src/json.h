// A minimal JSON value (null, bool, number, string, array, object with insertion order) and its
// serialiser: enough for dg-bench's report, with no dependency. Non-finite numbers are written as
// null (JSON has no NaN). Header-only; tested in tests/unit.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace dgb {

inline std::string json_escape(const std::string& s) {
  std::string out;
  out.reserve(s.size() + 2);
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);  // UTF-8 passes through unchanged
        }
    }
  }
  return out;
}

// Shortest text that reads back as the same double ("%.17g" trimmed); null when not finite.
inline std::string json_number(double x) {
  if (!std::isfinite(x)) return "null";
  if (x == std::floor(x) && std::fabs(x) < 1e15) {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%.0f", x);
    return buf;
  }
  for (int precision = 6; precision <= 17; ++precision) {
    char buf[40];
    std::snprintf(buf, sizeof(buf), "%.*g", precision, x);
    if (std::strtod(buf, nullptr) == x) return buf;
  }
  char buf[40];
  std::snprintf(buf, sizeof(buf), "%.17g", x);
  return buf;
}

class Json {
 public:
  enum class Type { Null, Bool, Number, String, Array, Object };

  Json() = default;
  Json(std::nullptr_t) {}
  Json(bool b) : type_(Type::Bool), bool_(b) {}
  Json(double x) : type_(Type::Number), number_(x) {}
  Json(int x) : type_(Type::Number), number_(x) {}
  Json(int64_t x) : type_(Type::Number), number_(static_cast<double>(x)) {}
  Json(uint64_t x) : type_(Type::Number), number_(static_cast<double>(x)) {}
  Json(const char* s) : type_(Type::String), string_(s ? s : "") {}
  Json(std::string s) : type_(Type::String), string_(std::move(s)) {}

  static Json array() { Json j; j.type_ = Type::Array; return j; }
  static Json object() { Json j; j.type_ = Type::Object; return j; }

  Type type() const { return type_; }

  // Arrays.
  Json& push(Json v) {
    if (type_ == Type::Null) type_ = Type::Array;
    items_.push_back(std::move(v));
    return items_.back();
  }
  size_t size() const { return type_ == Type::Object ? members_.size() : items_.size(); }
  const Json& at(size_t i) const { return items_.at(i); }

  // Objects: keys keep their first insertion position; setting a key again replaces its value.
  Json& operator[](const std::string& key) {
    if (type_ == Type::Null) type_ = Type::Object;
    for (auto& kv : members_)
      if (kv.first == key) return kv.second;
    members_.emplace_back(key, Json());
    return members_.back().second;
  }
  const Json* find(const std::string& key) const {
    for (auto& kv : members_)
      if (kv.first == key) return &kv.second;
    return nullptr;
  }

  double number() const { return number_; }
  const std::string& string() const { return string_; }
  bool boolean() const { return bool_; }

  // indent < 0: one line; else pretty-printed with that many spaces per level.
  std::string dump(int indent = -1) const {
    std::string out;
    write(out, indent, 0);
    return out;
  }

 private:
  void newline(std::string& out, int indent, int depth) const {
    if (indent < 0) return;
    out += '\n';
    out.append(static_cast<size_t>(indent * depth), ' ');
  }
  void write(std::string& out, int indent, int depth) const {
    switch (type_) {
      case Type::Null: out += "null"; break;
      case Type::Bool: out += bool_ ? "true" : "false"; break;
      case Type::Number: out += json_number(number_); break;
      case Type::String: out += '"' + json_escape(string_) + '"'; break;
      case Type::Array:
        if (items_.empty()) { out += "[]"; break; }
        out += '[';
        for (size_t i = 0; i < items_.size(); ++i) {
          if (i) out += ',';
          newline(out, indent, depth + 1);
          items_[i].write(out, indent, depth + 1);
        }
        newline(out, indent, depth);
        out += ']';
        break;
      case Type::Object:
        if (members_.empty()) { out += "{}"; break; }
        out += '{';
        for (size_t i = 0; i < members_.size(); ++i) {
          if (i) out += ',';
          newline(out, indent, depth + 1);
          out += '"' + json_escape(members_[i].first) + "\":";
          if (indent >= 0) out += ' ';
          members_[i].second.write(out, indent, depth + 1);
        }
        newline(out, indent, depth);
        out += '}';
        break;
    }
  }

  Type type_ = Type::Null;
  bool bool_ = false;
  double number_ = 0;
  std::string string_;
  std::vector<Json> items_;
  std::vector<std::pair<std::string, Json>> members_;
};

// RFC 4180 field: quoted when it holds a comma, quote or line break.
inline std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + '"';
}

}  // namespace dgb
