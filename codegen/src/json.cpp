#include "dg/codegen/json.h"

#include <charconv>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "engine_limits.h"
#include "utf8.h"

namespace dg::codegen {

namespace {

class JsonReader {
 public:
  JsonReader(std::string_view s, std::string_view name) : s_(s), name_(name) {}

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

  // Containers nest at most kMaxValueDepth deep: the reader, and everything that later walks the
  // value, recurse once per level.
  class Nest {
   public:
    explicit Nest(JsonReader& r) : r_(r) {
      if (++r_.depth_ > detail::kMaxValueDepth)
        r_.fail("arrays and objects nested more than " + std::to_string(detail::kMaxValueDepth) + " levels deep");
    }
    ~Nest() { --r_.depth_; }
    Nest(const Nest&) = delete;
    Nest& operator=(const Nest&) = delete;

   private:
    JsonReader& r_;
  };

  Value object() {
    const Nest nest(*this);
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
    const Nest nest(*this);
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
          if (cp >= 0xd800 && cp < 0xdc00) {  // a high surrogate must start a pair
            if (s_.substr(pos_, 2) != "\\u") fail("unpaired surrogate");
            pos_ += 2;
            const std::uint32_t low = hex4();
            if (low < 0xdc00 || low >= 0xe000) fail("unpaired surrogate");
            cp = 0x10000 + ((cp - 0xd800) << 10) + (low - 0xdc00);
          } else if (cp >= 0xdc00 && cp < 0xe000) {
            fail("unpaired surrogate");
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
  // "name:line:col: JSON: what", line and column 1-based, the column in UTF-8 characters.
  [[noreturn]] void fail(const std::string& what) {
    std::size_t line = 1, column = 1;
    for (std::size_t i = 0; i < pos_ && i < s_.size(); ++i) {
      const auto c = static_cast<unsigned char>(s_[i]);
      if (c == '\n') {
        ++line;
        column = 1;
      } else if ((c & 0xc0) != 0x80) {
        ++column;
      }
    }
    throw std::invalid_argument(std::string(name_) + ":" + std::to_string(line) + ":" + std::to_string(column) +
                                ": JSON: " + what);
  }

  std::string_view s_;
  std::string_view name_;
  std::size_t pos_ = 0;
  int depth_ = 0;
};

}  // namespace

Value parse_json(std::string_view text, std::string_view name) { return JsonReader(text, name).document(); }

}  // namespace dg::codegen
