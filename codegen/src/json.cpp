#include "dg/codegen/json.h"

#include <charconv>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "utf8.h"

namespace dg::codegen {

namespace {

class JsonReader {
 public:
  explicit JsonReader(std::string_view s) : s_(s) {}

  Value document() {
    Value v = value();
    skip_space();
    if (pos_ != s_.size()) fail("trailing characters");
    return v;
  }

 private:
  Value value() {
    skip_space();
    if (pos_ >= s_.size()) fail("unexpected end of input");
    const char c = s_[pos_];
    if (c == '{') return object();
    if (c == '[') return array();
    if (c == '"') return string();
    if (literal("true")) return true;
    if (literal("false")) return false;
    if (literal("null")) return Value();
    return number();
  }

  Value object() {
    ++pos_;
    Value::Map m;
    if (peek_after_space('}')) return m;
    do {
      skip_space();
      if (pos_ >= s_.size() || s_[pos_] != '"') fail("expected a string key");
      std::string key = string();
      skip_space();
      expect(':');
      m[std::move(key)] = value();
      skip_space();
    } while (accept(','));
    expect('}');
    return m;
  }

  Value array() {
    ++pos_;
    Value::List l;
    if (peek_after_space(']')) return l;
    do {
      l.push_back(value());
      skip_space();
    } while (accept(','));
    expect(']');
    return l;
  }

  std::string string() {
    ++pos_;  // opening quote
    std::string out;
    for (;;) {
      if (pos_ >= s_.size()) fail("unterminated string");
      const char c = s_[pos_++];
      if (c == '"') return out;
      if (c != '\\') {
        out += c;
        continue;
      }
      if (pos_ >= s_.size()) fail("unterminated string");
      const char e = s_[pos_++];
      switch (e) {
        case '"': case '\\': case '/': out += e; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          std::uint32_t cp = hex4();
          if (cp >= 0xd800 && cp < 0xdc00 && s_.substr(pos_, 2) == "\\u") {  // surrogate pair
            pos_ += 2;
            cp = 0x10000 + ((cp - 0xd800) << 10) + (hex4() - 0xdc00);
          }
          detail::append_utf8(out, cp);
          break;
        }
        default: fail("bad escape");
      }
    }
  }

  std::uint32_t hex4() {
    std::uint32_t cp = 0;
    auto [end, ec] = std::from_chars(s_.data() + pos_, s_.data() + std::min(pos_ + 4, s_.size()), cp, 16);
    if (ec != std::errc() || end != s_.data() + pos_ + 4) fail("bad \\u escape");
    pos_ += 4;
    return cp;
  }

  Value number() {
    const std::size_t start = pos_;
    bool is_float = false;
    if (pos_ < s_.size() && s_[pos_] == '-') ++pos_;
    for (; pos_ < s_.size(); ++pos_) {
      const char c = s_[pos_];
      if (c == '.' || c == 'e' || c == 'E' || ((c == '+' || c == '-') && is_float)) is_float = true;
      else if (c < '0' || c > '9') break;
    }
    const std::string text(s_.substr(start, pos_ - start));
    if (text.empty() || text == "-") fail("unexpected character");
    if (is_float) {
      char* end = nullptr;
      const double d = std::strtod(text.c_str(), &end);
      if (end != text.c_str() + text.size()) fail("bad number");
      return d;
    }
    std::int64_t i = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), i);
    if (ec != std::errc() || end != text.data() + text.size()) fail("integer out of range");
    return i;
  }

  bool literal(std::string_view word) {
    if (s_.substr(pos_, word.size()) != word) return false;
    pos_ += word.size();
    return true;
  }
  void skip_space() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r'))
      ++pos_;
  }
  bool accept(char c) {
    if (pos_ < s_.size() && s_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  bool peek_after_space(char c) {
    skip_space();
    return accept(c);
  }
  void expect(char c) {
    if (!accept(c)) fail(std::string("expected '") + c + "'");
  }
  [[noreturn]] void fail(const std::string& what) {
    throw std::invalid_argument("JSON: " + what + " at offset " + std::to_string(pos_));
  }

  std::string_view s_;
  std::size_t pos_ = 0;
};

}  // namespace

Value parse_json(std::string_view text) { return JsonReader(text).document(); }

}  // namespace dg::codegen
