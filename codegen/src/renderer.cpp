#include "renderer.h"

#include <optional>
#include <string_view>
#include <utility>

#include "builtins.h"
#include "engine_limits.h"
#include "ops.h"
#include "python.h"

namespace dg::codegen::detail {

namespace {

// Jinja2's name for a value's type in "has no attribute" messages.
std::string object_repr(const Value& v) {
  if (v.is_null()) return "'None'";
  std::string name = python_type(v);  // 'int'
  name.insert(name.size() - 1, " object");
  return name;
}

std::string repr(const Value& v) { return v.is_string() ? python::string_repr(v.as_string()) : v.to_string(); }

Operand defined(Value v) { return Operand{std::move(v), {}, {}}; }
Operand undefined(std::string why, Location where) { return Operand{{}, std::move(why), where}; }

// Runs `f`, attributing an EvalError it throws to `loc`.
template <typename F>
auto at(Location loc, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const EvalError& e) {
    throw LocatedError{loc, e.message};
  }
}

class Renderer {
 public:
  explicit Renderer(const Value& context) : context_(context) { frames_.emplace_back(); }

  void render(const Body& body) {
    for (const Stmt& s : body) std::visit([&](const auto& node) { exec(node); }, s.node);
  }

  std::string take_output() { return std::move(out_); }

 private:
  struct Binding {
    std::string_view name;  // points into the template's syntax tree or a literal
    Operand value;
  };
  using Frame = std::vector<Binding>;

  // ---- statements ----

  void exec(const Text& t) { emit(t.text, t.loc); }

  void exec(const Output& o) {
    const Operand result = eval(*o.expr);
    const std::optional<std::string> text = to_string_within(result.get(), kMaxStringBytes - out_.size());
    if (!text) output_too_long(o.expr->loc);
    emit(*text, o.expr->loc);
  }

  void emit(const std::string& text, Location loc) {
    if (text.size() > kMaxStringBytes - out_.size()) output_too_long(loc);
    out_ += text;
  }

  [[noreturn]] static void output_too_long(Location loc) {
    throw LocatedError{loc, "the rendered output would exceed the template engine's limit of " +
                                std::to_string(kMaxStringBytes) + " bytes"};
  }

  void exec(const If& s) {
    for (const If::Branch& b : s.branches) {
      if (test(*b.cond)) {
        render(b.body);
        return;
      }
    }
    render(s.otherwise);
  }

  // Each iteration runs in a fresh frame: a {% set %} in the body is gone at the next iteration
  // and after the loop, and until it runs the body sees the enclosing value (Jinja2 scoping).
  void exec(const For& s) {
    const Value iterable = eval(*s.iterable).get();
    std::vector<Value> items = at(s.iterable->loc, [&] { return iterate(iterable); });
    // Counted before the filter, which runs once per item too.
    iterations_ += static_cast<std::int64_t>(items.size());
    if (iterations_ > kMaxIterations)
      throw LocatedError{s.iterable->loc, "loops would run more than " + std::to_string(kMaxIterations) +
                                              " iterations in one render (the template engine's limit)"};
    if (s.filter) {
      std::vector<Value> kept;
      for (Value& item : items) {
        frames_.push_back({{s.var, defined(item)}});
        const bool keep = test(*s.filter);
        frames_.pop_back();
        if (keep) kept.push_back(std::move(item));
      }
      items = std::move(kept);
    }
    const std::int64_t n = static_cast<std::int64_t>(items.size());
    for (std::int64_t i = 0; i < n; ++i) {
      Value loop = Value::map({{"index", i + 1},
                               {"index0", i},
                               {"revindex", n - i},
                               {"revindex0", n - i - 1},
                               {"first", i == 0},
                               {"last", i == n - 1},
                               {"length", n}});
      frames_.push_back({{s.var, defined(std::move(items[static_cast<std::size_t>(i)]))},
                         {"loop", defined(std::move(loop))}});
      render(s.body);
      frames_.pop_back();
    }
    if (n == 0) {
      frames_.emplace_back();
      render(s.otherwise);
      frames_.pop_back();
    }
  }

  // Binds in the innermost frame. The value may be undefined: like Jinja2, only a use fails.
  void exec(const Set& s) {
    Operand value = eval(*s.value);
    Frame& frame = frames_.back();
    for (Binding& b : frame) {
      if (b.name == s.var) {
        b.value = std::move(value);
        return;
      }
    }
    frame.push_back({s.var, std::move(value)});
  }

  // ---- expressions ----

  bool test(const Expr& e) { return truthy(eval(e).get()); }

  Operand eval(const Expr& e) {
    return at(e.loc, [&] { return std::visit([&](const auto& node) { return eval(e, node); }, e.node); });
  }

  Operand eval(const Expr&, const Literal& n) { return defined(n.value); }

  // The only way a template nests values: bounded, so that printing, comparing and destroying
  // them cannot overflow the stack.
  Operand eval(const Expr& e, const ListExpr& n) {
    Value::List items;
    for (const ExprPtr& item : n.items) {
      items.push_back(eval(*item).get());
      if (deeper_than(items.back(), kMaxValueDepth - 1))
        throw LocatedError{e.loc, "lists nested more than " + std::to_string(kMaxValueDepth) + " levels deep"};
    }
    return defined(std::move(items));
  }

  Operand eval(const Expr& e, const Name& n) {
    for (auto frame = frames_.rbegin(); frame != frames_.rend(); ++frame)
      for (auto b = frame->rbegin(); b != frame->rend(); ++b)
        if (b->name == n.name) return b->value;
    if (const Value* v = context_.find(n.name)) return defined(*v);
    return undefined("undefined variable '" + n.name + "'", e.loc);
  }

  // As in Jinja2, a missing attribute or item is undefined rather than an error, so that
  // `cfg.opt | default(0)` and `cfg.opt is defined` work.
  Operand eval(const Expr& e, const GetAttr& n) {
    const Value object = eval(*n.object).get();
    if (const Value* v = object.find(n.attr)) return defined(*v);
    return undefined(object_repr(object) + " has no attribute '" + n.attr + "'", e.loc);
  }

  Operand eval(const Expr& e, const GetItem& n) {
    const Value object = eval(*n.object).get();
    const Value index = eval(*n.index).get();
    if (object.is_map() && index.is_string()) {
      if (const Value* v = object.find(index.as_string())) return defined(*v);
    } else if ((object.is_list() || object.is_string()) && (index.is_int() || index.is_bool())) {
      const std::int64_t size = static_cast<std::int64_t>(object.is_list() ? object.as_list().size()
                                                                             : character_count(object.as_string()));
      std::int64_t i = index.is_bool() ? index.as_bool() : index.as_int();
      if (i < 0) i += size;  // Python's negative indices count from the end
      if (i >= 0 && i < size) {
        if (object.is_list()) return defined(object.as_list()[static_cast<std::size_t>(i)]);
        return defined(character_at(object.as_string(), static_cast<std::size_t>(i)));
      }
    }
    if (index.is_string())
      return undefined(object_repr(object) + " has no attribute '" + index.as_string() + "'", e.loc);
    return undefined(object_repr(object) + " has no element " + repr(index), e.loc);
  }

  Operand eval(const Expr&, const Unary& n) { return defined(unary(n.op, eval(*n.operand).get())); }

  Operand eval(const Expr& e, const Binary& n) {
    switch (n.op) {
      case BinaryOp::And: {  // Python returns the deciding operand, not a bool
        Operand lhs = eval(*n.lhs);
        return truthy(lhs.get()) ? eval(*n.rhs) : lhs;
      }
      case BinaryOp::Or: {
        Operand lhs = eval(*n.lhs);
        return truthy(lhs.get()) ? lhs : eval(*n.rhs);
      }
      case BinaryOp::Concat: {
        std::optional<std::string> s = to_string_within(eval(*n.lhs).get(), kMaxStringBytes);
        if (s) {
          const std::optional<std::string> rhs = to_string_within(eval(*n.rhs).get(), kMaxStringBytes - s->size());
          if (rhs) return defined(*s + *rhs);
        }
        throw LocatedError{e.loc, "'~' would make a string longer than the template engine's limit of " +
                                      std::to_string(kMaxStringBytes) + " bytes"};
      }
      default: {
        const Value lhs = eval(*n.lhs).get();
        const Value rhs = eval(*n.rhs).get();
        return defined(arithmetic(n.op, lhs, rhs));
      }
    }
  }

  // a < b < c is (a < b) and (b < c), evaluating b once and c only if needed.
  Operand eval(const Expr&, const Compare& n) {
    Value lhs = eval(*n.first).get();
    for (const Compare::Step& step : n.steps) {
      Value rhs = eval(*step.rhs).get();
      if (!at(step.loc, [&] { return compare(step.op, lhs, rhs); })) return defined(false);
      lhs = std::move(rhs);
    }
    return defined(true);
  }

  Operand eval(const Expr&, const Conditional& n) { return test(*n.cond) ? eval(*n.then) : eval(*n.otherwise); }

  Operand eval(const Expr& e, const Apply& n) {
    const Builtin& b = *n.builtin;
    Operand input = n.input ? eval(*n.input) : Operand{};
    std::vector<Operand> args;
    args.reserve(n.args.size());
    for (std::size_t i = 0; i < n.args.size(); ++i)
      args.push_back(n.args[i] ? eval(*n.args[i]) : defined(*b.params[i].default_value));
    if (!b.takes_undefined) {
      input.get();
      for (const Operand& a : args) a.get();
    }
    Operand result = b.apply(input, args);
    if (n.negated) return defined(!truthy(result.get()));
    if (!b.takes_undefined && !result.defined()) result.where = e.loc;
    return result;
  }

  // The character of UTF-8 `s` at character index `i` (< character_count(s)).
  static std::string character_at(const std::string& s, std::size_t i) {
    std::size_t begin = 0;
    for (std::size_t seen = 0;; ++begin)
      if ((static_cast<unsigned char>(s[begin]) & 0xc0) != 0x80 && seen++ == i) break;
    std::size_t end = begin + 1;
    while (end < s.size() && (static_cast<unsigned char>(s[end]) & 0xc0) == 0x80) ++end;
    return s.substr(begin, end - begin);
  }

  const Value& context_;
  std::vector<Frame> frames_;  // innermost last; the first holds top-level {% set %}s
  std::string out_;
  std::int64_t iterations_ = 0;
};

}  // namespace

std::string render(const Body& body, const Value& context) {
  Renderer r(context);
  r.render(body);
  return r.take_output();
}

}  // namespace dg::codegen::detail
