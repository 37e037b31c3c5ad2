#include "parser.h"

#include <algorithm>
#include <initializer_list>
#include <optional>
#include <string_view>

#include "builtins.h"
#include "engine_limits.h"

namespace dg::codegen::detail {

namespace {

// Recursive descent with Jinja2's grammar and precedence, loosest first:
//   conditional (a if c else b) < or < and < not < comparison/in < + - < ~ < * / // % < ** <
//   unary - + < postfix (.a [i]) and filters/tests (| f, is t)
class Parser {
 public:
  explicit Parser(const std::vector<Token>& tokens) : tokens_(tokens) {}

  Body parse_template() { return parse_body({}); }

 private:
  // One level of parser recursion, for as long as it lives; too many is an error at `at`.
  class Nest {
   public:
    Nest(Parser& p, const Token& at) : p_(p) {
      if (++p_.nesting_ > kMaxNesting)
        fail(at, "nested more than " + std::to_string(kMaxNesting) +
                     " levels deep (blocks, parentheses, lists, unary operators and inline ifs together)");
    }
    ~Nest() { --p_.nesting_; }
    Nest(const Nest&) = delete;
    Nest& operator=(const Nest&) = delete;

   private:
    Parser& p_;
  };

  // ---- statements ----

  // Statements up to one of the block tags in `terminators` (left unconsumed: the caller reads
  // which one it was), or to the end of the template when `terminators` is empty.
  Body parse_body(std::initializer_list<std::string_view> terminators) {
    Body body;
    for (;;) {
      const Token& t = peek();
      switch (t.kind) {
        case TokenKind::End:
          if (terminators.size() != 0) throw LocatedError{open_block_, unclosed_message_};
          return body;
        case TokenKind::Text:
          body.push_back(Stmt{Text{t.text, t.loc}});
          next();
          break;
        case TokenKind::VarBegin: {
          next();
          ExprPtr e = parse_expression();
          expect(TokenKind::VarEnd, "'}}'");
          body.push_back(Stmt{Output{std::move(e)}});
          break;
        }
        case TokenKind::BlockBegin: {
          const Token& tag = peek(1);
          if (tag.kind != TokenKind::Name) fail(tag, "expected a tag name, got " + describe(tag));
          for (std::string_view end : terminators)
            if (tag.text == end) return body;
          next();
          next();
          if (tag.text == "if")
            body.push_back(parse_if(tag));
          else if (tag.text == "for")
            body.push_back(parse_for(tag));
          else if (tag.text == "set")
            body.push_back(parse_set(tag));
          else if (is_known_tag(tag.text))
            fail(tag, "unexpected '" + tag.text + "'");
          else
            fail(tag, "unknown tag '" + tag.text + "'");
          break;
        }
        default:
          fail(t, "unexpected " + describe(t));
      }
    }
  }

  static bool is_known_tag(std::string_view name) {
    for (std::string_view t : {"elif", "else", "endif", "endfor"})
      if (name == t) return true;
    return false;
  }

  // Parses a nested body, remembering which block to blame if the template ends inside it.
  template <typename... Ends>
  Body parse_block_body(const Token& opener, const char* end_tag, Ends... terminators) {
    const Nest nest(*this, opener);
    const Location saved_loc = open_block_;
    const std::string saved_message = unclosed_message_;
    open_block_ = opener.loc;
    unclosed_message_ = "unclosed '" + opener.text + "' block: expected '{% " + end_tag + " %}'";
    Body body = parse_body({terminators...});
    open_block_ = saved_loc;
    unclosed_message_ = saved_message;
    return body;
  }

  // Consumes the "{%" and tag name that parse_body stopped at; returns the name.
  std::string take_tag() {
    next();  // BlockBegin
    std::string name = peek().text;
    next();
    return name;
  }

  Stmt parse_if(const Token& tag) {
    If node;
    ExprPtr cond = parse_expression();
    expect(TokenKind::BlockEnd, "'%}'");
    for (;;) {
      Body body = parse_block_body(tag, "endif", "elif", "else", "endif");
      node.branches.push_back({std::move(cond), std::move(body)});
      const std::string end = take_tag();
      if (end == "elif") {
        cond = parse_expression();
        expect(TokenKind::BlockEnd, "'%}'");
        continue;
      }
      if (end == "else") {
        expect(TokenKind::BlockEnd, "'%}'");
        node.otherwise = parse_block_body(tag, "endif", "endif");
        take_tag();
      }
      expect(TokenKind::BlockEnd, "'%}'");
      return Stmt{std::move(node)};
    }
  }

  Stmt parse_for(const Token& tag) {
    For node;
    node.var = expect_name("a loop variable");
    if (peek().kind == TokenKind::Operator && peek().text == ",")
      fail(peek(), "unpacking several loop variables is not supported");
    expect_keyword("in");
    node.iterable = parse_expression(/*with_conditional=*/false);
    if (accept_keyword("if")) node.filter = parse_expression();
    expect(TokenKind::BlockEnd, "'%}'");
    node.body = parse_block_body(tag, "endfor", "else", "endfor");
    if (take_tag() == "else") {
      expect(TokenKind::BlockEnd, "'%}'");
      node.otherwise = parse_block_body(tag, "endfor", "endfor");
      take_tag();
    }
    expect(TokenKind::BlockEnd, "'%}'");
    return Stmt{std::move(node)};
  }

  Stmt parse_set(const Token& tag) {
    Set node;
    node.var = expect_name("a variable name");
    expect_operator("=");
    node.value = parse_expression();
    expect(TokenKind::BlockEnd, "'%}'");
    return Stmt{std::move(node)};
  }

  // ---- expressions ----

  ExprPtr parse_expression(bool with_conditional = true) {
    const Nest nest(*this, peek());
    return with_conditional ? parse_conditional() : parse_or();
  }

  ExprPtr parse_conditional() {
    ExprPtr then = parse_or();
    while (is_keyword(peek(), "if")) {
      const Location loc = next().loc;
      ExprPtr cond = parse_or();
      // Jinja2 makes a missing else Undefined; we ask for it rather than print an empty string.
      expect_keyword("else");
      const Nest nest(*this, peek());
      ExprPtr otherwise = parse_conditional();
      then = make(loc, Conditional{std::move(cond), std::move(then), std::move(otherwise)});
    }
    return then;
  }

  ExprPtr parse_or() {
    ExprPtr lhs = parse_and();
    while (is_keyword(peek(), "or")) {
      const Location loc = next().loc;
      lhs = make(loc, Binary{BinaryOp::Or, std::move(lhs), parse_and()});
    }
    return lhs;
  }

  ExprPtr parse_and() {
    ExprPtr lhs = parse_not();
    while (is_keyword(peek(), "and")) {
      const Location loc = next().loc;
      lhs = make(loc, Binary{BinaryOp::And, std::move(lhs), parse_not()});
    }
    return lhs;
  }

  ExprPtr parse_not() {
    if (is_keyword(peek(), "not")) {
      const Nest nest(*this, peek());
      const Location loc = next().loc;
      return make(loc, Unary{UnaryOp::Not, parse_not()});
    }
    return parse_compare();
  }

  ExprPtr parse_compare() {
    const Location loc = peek().loc;
    ExprPtr first = parse_math1();
    std::vector<Compare::Step> steps;
    for (;;) {
      const Token& t = peek();
      static constexpr std::pair<std::string_view, CompareOp> kOperators[] = {
          {"==", CompareOp::Eq}, {"!=", CompareOp::Ne}, {"<", CompareOp::Lt},
          {"<=", CompareOp::Le}, {">", CompareOp::Gt},  {">=", CompareOp::Ge}};
      std::optional<CompareOp> op;
      for (const auto& [spelling, candidate] : kOperators)
        if (is_operator(t, spelling)) op = candidate;
      if (is_keyword(t, "in")) op = CompareOp::In;
      if (is_keyword(t, "not") && is_keyword(peek(1), "in")) {
        op = CompareOp::NotIn;
        next();
      }
      if (!op) break;
      next();
      steps.push_back({*op, parse_math1(), t.loc});
    }
    if (steps.empty()) return first;
    return make(loc, Compare{std::move(first), std::move(steps)});
  }

  // Left-associative binary levels: each operand is parsed by `operand`.
  template <typename Level>
  ExprPtr parse_binary(Level operand, std::initializer_list<std::pair<std::string_view, BinaryOp>> ops) {
    ExprPtr lhs = (this->*operand)();
    for (;;) {
      const Token& t = peek();
      const BinaryOp* op = nullptr;
      for (const auto& candidate : ops)
        if (is_operator(t, candidate.first)) op = &candidate.second;
      if (op == nullptr) return lhs;
      next();
      lhs = make(t.loc, Binary{*op, std::move(lhs), (this->*operand)()});
    }
  }

  ExprPtr parse_math1() {
    return parse_binary(&Parser::parse_concat, {{"+", BinaryOp::Add}, {"-", BinaryOp::Sub}});
  }
  ExprPtr parse_concat() { return parse_binary(&Parser::parse_math2, {{"~", BinaryOp::Concat}}); }
  ExprPtr parse_math2() {
    return parse_binary(&Parser::parse_pow, {{"*", BinaryOp::Mul},
                                              {"/", BinaryOp::Div},
                                              {"//", BinaryOp::FloorDiv},
                                              {"%", BinaryOp::Mod}});
  }
  // Jinja2 makes ** left-associative: 2 ** 3 ** 2 is 64.
  ExprPtr parse_pow() { return parse_binary(&Parser::parse_unary_filtered, {{"**", BinaryOp::Pow}}); }

  ExprPtr parse_unary_filtered() { return parse_unary(true); }

  // As in Jinja2, filters bind to the whole unary expression: -x | abs is (-x) | abs.
  ExprPtr parse_unary(bool with_filters) {
    const Token& t = peek();
    ExprPtr e;
    if (is_operator(t, "-") || is_operator(t, "+")) {
      const Nest nest(*this, t);
      next();
      e = make(t.loc, Unary{t.text == "-" ? UnaryOp::Neg : UnaryOp::Pos, parse_unary(false)});
    } else {
      e = parse_primary();
    }
    e = parse_postfix(std::move(e));
    return with_filters ? parse_filters(std::move(e)) : std::move(e);
  }

  ExprPtr parse_primary() {
    const Token& t = next();
    switch (t.kind) {
      case TokenKind::Name:
        if (t.text == "true" || t.text == "True") return make(t.loc, Literal{true});
        if (t.text == "false" || t.text == "False") return make(t.loc, Literal{false});
        if (t.text == "none" || t.text == "None") return make(t.loc, Literal{Value()});
        if (is_operator(peek(), "(")) return parse_function(t);
        return make(t.loc, Name{t.text});
      case TokenKind::Int: return make(t.loc, Literal{t.int_value});
      case TokenKind::Float: return make(t.loc, Literal{t.float_value});
      case TokenKind::String: {
        std::string s = t.text;  // adjacent literals concatenate: "a" "b"
        while (peek().kind == TokenKind::String) s += next().text;
        return make(t.loc, Literal{std::move(s)});
      }
      case TokenKind::Operator:
        if (t.text == "(") {
          ExprPtr e = parse_expression();
          if (is_operator(peek(), ",")) fail(peek(), "tuples are not supported; use a list");
          expect_operator(")");
          return e;
        }
        if (t.text == "[") {
          ListExpr list;
          while (!is_operator(peek(), "]")) {
            list.items.push_back(parse_expression());
            if (!accept_operator(",")) break;
          }
          expect_operator("]");
          return make(t.loc, std::move(list));
        }
        break;
      default: break;
    }
    fail(t, "unexpected " + describe(t));
  }

  ExprPtr parse_postfix(ExprPtr e) {
    for (;;) {
      const Token& t = peek();
      if (is_operator(t, ".")) {
        next();
        const Token& attr = next();
        if (attr.kind == TokenKind::Name)
          e = make(attr.loc, GetAttr{std::move(e), attr.text});
        else if (attr.kind == TokenKind::Int)  // a.0 is a[0]
          e = make(attr.loc, GetItem{std::move(e), make(attr.loc, Literal{attr.int_value})});
        else
          fail(attr, "expected an attribute name after '.', got " + describe(attr));
      } else if (is_operator(t, "[")) {
        next();
        ExprPtr index = parse_expression();
        if (is_operator(peek(), ":")) fail(peek(), "slices are not supported");
        expect_operator("]");
        e = make(t.loc, GetItem{std::move(e), std::move(index)});
      } else if (is_operator(t, "(")) {
        fail(t, "only the global function range() can be called");
      } else {
        return e;
      }
    }
  }

  ExprPtr parse_filters(ExprPtr e) {
    for (;;) {
      if (accept_operator("|")) {
        const Token& name = expect_name_token("a filter name");
        const Builtin* filter = find_builtin(BuiltinKind::Filter, name.text);
        if (filter == nullptr) fail(name, "unknown filter '" + name.text + "'");
        std::vector<ExprPtr> args;
        if (is_operator(peek(), "(")) args = parse_call_args(*filter);
        else args = bind(*filter, {}, {}, name);
        e = make(name.loc, Apply{filter, std::move(e), std::move(args)});
      } else if (is_keyword(peek(), "is")) {
        next();
        const bool negated = accept_keyword("not");
        const Token& name = expect_name_token("a test name");
        const Builtin* test = find_builtin(BuiltinKind::Test, name.text);
        if (test == nullptr) fail(name, "unknown test '" + name.text + "'");
        std::vector<ExprPtr> args;
        if (is_operator(peek(), "(")) {
          args = parse_call_args(*test);
        } else if (takes_bare_argument(peek())) {  // x is divisibleby 3
          std::vector<ExprPtr> positional;
          positional.push_back(parse_postfix(parse_primary()));
          args = bind(*test, std::move(positional), {}, name);
        } else {
          args = bind(*test, {}, {}, name);
        }
        e = make(name.loc, Apply{test, std::move(e), std::move(args), negated});
      } else {
        return e;
      }
    }
  }

  // Jinja2 reads one primary after a test name unless what follows ends the expression.
  static bool takes_bare_argument(const Token& t) {
    if (t.kind == TokenKind::Name)
      return !(t.text == "else" || t.text == "or" || t.text == "and" || t.text == "if" ||
               t.text == "is" || t.text == "in" || t.text == "not");
    return t.kind == TokenKind::Int || t.kind == TokenKind::Float || t.kind == TokenKind::String ||
           is_operator(t, "[");
  }

  ExprPtr parse_function(const Token& name) {
    const Builtin* function = find_builtin(BuiltinKind::Function, name.text);
    if (function == nullptr) fail(name, "unknown function '" + name.text + "'");
    return make(name.loc, Apply{function, nullptr, parse_call_args(*function)});
  }

  // "(a, b, key=c)" bound to the builtin's parameters.
  std::vector<ExprPtr> parse_call_args(const Builtin& b) {
    const Token& open = next();  // "("
    std::vector<ExprPtr> positional;
    std::vector<std::pair<const Token*, ExprPtr>> keywords;
    while (!is_operator(peek(), ")")) {
      if (peek().kind == TokenKind::Name && is_operator(peek(1), "=")) {
        const Token& key = next();
        next();
        keywords.emplace_back(&key, parse_expression());
      } else {
        if (!keywords.empty()) fail(peek(), "positional argument follows keyword argument");
        positional.push_back(parse_expression());
      }
      if (!accept_operator(",")) break;
    }
    expect_operator(")");
    return bind(b, std::move(positional), std::move(keywords), open);
  }

  std::vector<ExprPtr> bind(const Builtin& b, std::vector<ExprPtr> positional,
                            std::vector<std::pair<const Token*, ExprPtr>> keywords, const Token& at) {
    const std::string what = "'" + std::string(b.name) + "'";
    if (positional.size() > b.params.size())
      fail(at, what + " takes at most " + std::to_string(b.params.size()) + " argument(s), got " +
                   std::to_string(positional.size()));
    std::vector<ExprPtr> args(b.params.size());
    for (std::size_t i = 0; i < positional.size(); ++i) args[i] = std::move(positional[i]);
    for (auto& [key, value] : keywords) {
      std::size_t i = 0;
      while (i < b.params.size() && b.params[i].name != key->text) ++i;
      if (i == b.params.size()) fail(*key, what + " has no parameter '" + key->text + "'");
      if (args[i]) fail(*key, what + " got parameter '" + key->text + "' twice");
      args[i] = std::move(value);
    }
    for (std::size_t i = 0; i < args.size(); ++i)
      if (!args[i] && !b.params[i].default_value)
        fail(at, what + " is missing its argument '" + std::string(b.params[i].name) + "'");
    return args;
  }

  // ---- tokens ----

  // Heights of a node's children; the renderer and the destructor recurse once per level.
  static int height(const ExprPtr& e) { return e ? e->height : 0; }
  static int children_height(const Literal&) { return 0; }
  static int children_height(const Name&) { return 0; }
  static int children_height(const ListExpr& n) {
    int h = 0;
    for (const ExprPtr& item : n.items) h = std::max(h, height(item));
    return h;
  }
  static int children_height(const GetAttr& n) { return height(n.object); }
  static int children_height(const GetItem& n) { return std::max(height(n.object), height(n.index)); }
  static int children_height(const Unary& n) { return height(n.operand); }
  static int children_height(const Binary& n) { return std::max(height(n.lhs), height(n.rhs)); }
  static int children_height(const Compare& n) {
    int h = height(n.first);
    for (const Compare::Step& step : n.steps) h = std::max(h, height(step.rhs));
    return h;
  }
  static int children_height(const Conditional& n) {
    return std::max({height(n.cond), height(n.then), height(n.otherwise)});
  }
  static int children_height(const Apply& n) {
    int h = height(n.input);
    for (const ExprPtr& arg : n.args) h = std::max(h, height(arg));
    return h;
  }

  template <typename Node>
  static ExprPtr make(Location loc, Node node) {
    const int h = children_height(node) + 1;
    if (h > kMaxExpressionHeight)
      throw LocatedError{loc, "expression nested more than " + std::to_string(kMaxExpressionHeight) +
                                  " levels deep (split a long operator chain with {% set %})"};
    return std::make_unique<const Expr>(Expr{loc, std::move(node), h});
  }

  const Token& peek(std::size_t ahead = 0) const {
    const std::size_t i = pos_ + ahead;
    return i < tokens_.size() ? tokens_[i] : tokens_.back();
  }
  const Token& next() {
    const Token& t = peek();
    if (pos_ < tokens_.size() - 1) ++pos_;
    return t;
  }

  static bool is_operator(const Token& t, std::string_view op) {
    return t.kind == TokenKind::Operator && t.text == op;
  }
  static bool is_keyword(const Token& t, std::string_view word) {
    return t.kind == TokenKind::Name && t.text == word;
  }
  bool accept_operator(std::string_view op) {
    if (!is_operator(peek(), op)) return false;
    next();
    return true;
  }
  bool accept_keyword(std::string_view word) {
    if (!is_keyword(peek(), word)) return false;
    next();
    return true;
  }

  void expect(TokenKind kind, const char* what) {
    if (peek().kind != kind) fail(peek(), std::string("expected ") + what + ", got " + describe(peek()));
    next();
  }
  void expect_operator(std::string_view op) {
    if (!accept_operator(op))
      fail(peek(), "expected '" + std::string(op) + "', got " + describe(peek()));
  }
  void expect_keyword(std::string_view word) {
    if (!accept_keyword(word))
      fail(peek(), "expected '" + std::string(word) + "', got " + describe(peek()));
  }
  const Token& expect_name_token(const char* what) {
    if (peek().kind != TokenKind::Name) fail(peek(), std::string("expected ") + what + ", got " + describe(peek()));
    return next();
  }
  std::string expect_name(const char* what) { return expect_name_token(what).text; }

  [[noreturn]] static void fail(const Token& t, std::string message) {
    throw LocatedError{t.loc, std::move(message)};
  }

  const std::vector<Token>& tokens_;
  std::size_t pos_ = 0;
  int nesting_ = 0;
  // The innermost open block, blamed when the template ends before its end tag.
  Location open_block_;
  std::string unclosed_message_;
};

}  // namespace

Body parse(const std::vector<Token>& tokens) { return Parser(tokens).parse_template(); }

}  // namespace dg::codegen::detail
