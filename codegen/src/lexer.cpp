#include "lexer.h"

#include <charconv>
#include <cstdlib>

#include "utf8.h"

namespace dg::codegen::detail {

namespace {

// Python's str.isspace() on ASCII, which is what Jinja2's '-' markers strip.
bool is_space(char c) {
  return c == ' ' || (c >= '\t' && c <= '\r') || (c >= '\x1c' && c <= '\x1f');
}
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_name_start(char c) { return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool is_name_char(char c) { return is_name_start(c) || is_digit(c); }

class Lexer {
 public:
  explicit Lexer(std::string_view src) : src_(src) {}

  std::vector<Token> run() {
    bool strip_next_text = false;  // the previous tag ended with '-'
    while (pos_ < src_.size()) {
      const std::size_t open = find_tag_open(pos_);
      std::string_view text = src_.substr(pos_, open - pos_);
      if (strip_next_text) text = lstrip(text);
      if (open < src_.size() && open + 2 < src_.size() && src_[open + 2] == '-') text = rstrip(text);
      if (!text.empty()) push(TokenKind::Text, std::string(text), pos_);
      if (open == src_.size()) break;

      const char kind = src_[open + 1];
      pos_ = open + 2;
      if (pos_ < src_.size() && src_[pos_] == '-') ++pos_;
      if (kind == '#')
        strip_next_text = skip_comment(open);
      else
        strip_next_text = lex_tag(open, kind == '{' ? TokenKind::VarBegin : TokenKind::BlockBegin);
    }
    push(TokenKind::End, "", src_.size());
    return std::move(tokens_);
  }

 private:
  // Offset of the next "{{", "{%" or "{#" at or after `from`, or src_.size().
  std::size_t find_tag_open(std::size_t from) const {
    for (std::size_t i = src_.find('{', from); i != std::string_view::npos; i = src_.find('{', i + 1))
      if (i + 1 < src_.size() && (src_[i + 1] == '{' || src_[i + 1] == '%' || src_[i + 1] == '#'))
        return i;
    return src_.size();
  }

  static std::string_view lstrip(std::string_view s) {
    while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
    return s;
  }
  static std::string_view rstrip(std::string_view s) {
    while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
    return s;
  }

  // Returns whether the comment ends with "-#}".
  bool skip_comment(std::size_t open) {
    const std::size_t close = src_.find("#}", pos_);
    if (close == std::string_view::npos) fail(open, "unclosed comment");
    pos_ = close + 2;
    return close > open + 2 && src_[close - 1] == '-';
  }

  // Lexes the tokens of one {{ }} or {% %} tag; returns whether its end marker had a '-'.
  bool lex_tag(std::size_t open, TokenKind begin) {
    push(begin, "", open);
    const std::string_view close = begin == TokenKind::VarBegin ? "}}" : "%}";
    const TokenKind end = begin == TokenKind::VarBegin ? TokenKind::VarEnd : TokenKind::BlockEnd;
    for (;;) {
      while (pos_ < src_.size() && is_space(src_[pos_])) ++pos_;
      if (pos_ >= src_.size())
        fail(open, begin == TokenKind::VarBegin ? "unclosed '{{'" : "unclosed '{%'");
      // The end marker wins over operators, as in Jinja2: "{{ a -}}" is 'a' then a stripping end.
      const bool dash = src_[pos_] == '-';
      if (src_.substr(pos_ + dash, 2) == close) {
        push(end, "", pos_);
        pos_ += dash + 2;
        return dash;
      }
      lex_token();
    }
  }

  void lex_token() {
    const char c = src_[pos_];
    if (is_name_start(c)) {
      const std::size_t start = pos_;
      while (pos_ < src_.size() && is_name_char(src_[pos_])) ++pos_;
      push(TokenKind::Name, std::string(src_.substr(start, pos_ - start)), start);
    } else if (is_digit(c)) {
      lex_number();
    } else if (c == '\'' || c == '"') {
      lex_string();
    } else {
      static constexpr std::string_view kOperators[] = {
          "//", "**", "==", "!=", "<=", ">=", "+", "-", "*", "/", "%", "~", "<", ">",
          "=",  "(",  ")",  "[",  "]",  ",",  ".", "|", ":", "{", "}"};
      for (std::string_view op : kOperators) {
        if (src_.substr(pos_, op.size()) == op) {
          push(TokenKind::Operator, std::string(op), pos_);
          pos_ += op.size();
          return;
        }
      }
      fail(pos_, "unexpected character '" + std::string(1, c) + "'");
    }
  }

  // Digits with optional '_' separators, as in Python and Jinja2.
  std::string digits() {
    std::string out;
    while (pos_ < src_.size() && (is_digit(src_[pos_]) || (src_[pos_] == '_' && !out.empty() &&
                                                           pos_ + 1 < src_.size() &&
                                                           is_digit(src_[pos_ + 1])))) {
      if (src_[pos_] != '_') out += src_[pos_];
      ++pos_;
    }
    return out;
  }

  void lex_number() {
    const std::size_t start = pos_;
    std::string text = digits();
    // After a '.', Jinja2 reads only an integer so that "a.0.1" is two subscripts, not a float.
    const bool after_dot = !tokens_.empty() && tokens_.back().kind == TokenKind::Operator &&
                           tokens_.back().text == ".";
    bool is_float = false;
    if (!after_dot && pos_ + 1 < src_.size() && src_[pos_] == '.' && is_digit(src_[pos_ + 1])) {
      ++pos_;
      text += '.' + digits();
      is_float = true;
    }
    if (!after_dot && pos_ < src_.size() && (src_[pos_] == 'e' || src_[pos_] == 'E')) {
      std::size_t p = pos_ + 1;
      if (p < src_.size() && (src_[p] == '+' || src_[p] == '-')) ++p;
      if (p < src_.size() && is_digit(src_[p])) {
        text += 'e' + std::string(src_.substr(pos_ + 1, p - pos_ - 1));
        pos_ = p;
        text += digits();
        is_float = true;
      }
    }
    Token& t = push(is_float ? TokenKind::Float : TokenKind::Int, text, start);
    if (is_float) {
      t.float_value = std::strtod(text.c_str(), nullptr);
    } else {
      auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), t.int_value);
      if (ec != std::errc()) fail(start, "integer literal " + text + " is out of range");
    }
  }

  // Quoted text with Python's backslash escapes; unknown escapes stay as written.
  void lex_string() {
    const std::size_t start = pos_;
    const char quote = src_[pos_++];
    std::string out;
    for (;;) {
      if (pos_ >= src_.size()) fail(start, "unterminated string");
      const char c = src_[pos_++];
      if (c == quote) break;
      if (c != '\\' || pos_ >= src_.size()) {
        out += c;
        continue;
      }
      const char e = src_[pos_++];
      switch (e) {
        case '\n': break;  // line continuation
        case '\\': case '\'': case '"': out += e; break;
        case 'a': out += '\a'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'v': out += '\v'; break;
        case 'x': case 'u': case 'U': {
          const std::size_t n = e == 'x' ? 2 : e == 'u' ? 4 : 8;
          std::uint32_t cp = 0;
          auto [end, ec] = std::from_chars(src_.data() + pos_, src_.data() + std::min(pos_ + n, src_.size()), cp, 16);
          if (ec != std::errc() || end != src_.data() + pos_ + n || cp > 0x10ffff)
            fail(pos_ - 2, std::string("invalid \\") + e + " escape");
          pos_ += n;
          append_utf8(out, cp);
          break;
        }
        default:
          if (e >= '0' && e <= '7') {  // octal: up to three digits
            std::uint32_t cp = static_cast<std::uint32_t>(e - '0');
            for (int i = 0; i < 2 && pos_ < src_.size() && src_[pos_] >= '0' && src_[pos_] <= '7'; ++i)
              cp = cp * 8 + static_cast<std::uint32_t>(src_[pos_++] - '0');
            append_utf8(out, cp);
          } else {
            out += '\\';
            out += e;
          }
      }
    }
    push(TokenKind::String, std::move(out), start);
  }

  Token& push(TokenKind kind, std::string text, std::size_t offset) {
    tokens_.push_back(Token{kind, std::move(text), 0, 0, location(offset)});
    return tokens_.back();
  }

  [[noreturn]] void fail(std::size_t offset, std::string message) {
    throw LocatedError{location(offset), std::move(message)};
  }

  // Offsets are asked for in increasing order, so the line/column scan resumes where it stopped.
  Location location(std::size_t offset) {
    if (offset < scanned_) scanned_ = 0, here_ = Location{};
    for (; scanned_ < offset && scanned_ < src_.size(); ++scanned_) {
      const auto c = static_cast<unsigned char>(src_[scanned_]);
      if (c == '\n') {
        ++here_.line;
        here_.column = 1;
      } else if ((c & 0xc0) != 0x80) {  // not a UTF-8 continuation byte
        ++here_.column;
      }
    }
    return here_;
  }

  std::string_view src_;
  std::size_t pos_ = 0;
  std::vector<Token> tokens_;
  std::size_t scanned_ = 0;
  Location here_;
};

}  // namespace

std::string describe(const Token& t) {
  switch (t.kind) {
    case TokenKind::End: return "end of template";
    case TokenKind::VarEnd: return "'}}'";
    case TokenKind::BlockEnd: return "'%}'";
    case TokenKind::String: return "string";
    case TokenKind::Text: return "template text";
    default: return "'" + t.text + "'";
  }
}

std::vector<Token> tokenize(std::string_view source) { return Lexer(source).run(); }

}  // namespace dg::codegen::detail
