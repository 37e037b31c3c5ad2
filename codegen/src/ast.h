// The parsed form of a template: statements holding expressions. Immutable once parsed, which
// is what lets one Template render on several threads at once.
#pragma once
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "dg/codegen/value.h"
#include "location.h"

namespace dg::codegen::detail {

struct Builtin;
struct Expr;
using ExprPtr = std::unique_ptr<const Expr>;

enum class UnaryOp { Neg, Pos, Not };
enum class BinaryOp { Add, Sub, Mul, Div, FloorDiv, Mod, Pow, Concat, And, Or };
enum class CompareOp { Eq, Ne, Lt, Le, Gt, Ge, In, NotIn };

struct Literal {
  Value value;
};
struct ListExpr {
  std::vector<ExprPtr> items;
};
struct Name {
  std::string name;
};
struct GetAttr {  // a.b
  ExprPtr object;
  std::string attr;
};
struct GetItem {  // a[i], and a.0
  ExprPtr object;
  ExprPtr index;
};
struct Unary {
  UnaryOp op;
  ExprPtr operand;
};
struct Binary {
  BinaryOp op;
  ExprPtr lhs, rhs;
};
struct Compare {  // a < b <= c: Python's chained comparison
  struct Step {
    CompareOp op;
    ExprPtr rhs;
    Location loc;  // of the operator
  };
  ExprPtr first;
  std::vector<Step> steps;
};
struct Conditional {  // then if cond else otherwise
  ExprPtr cond, then, otherwise;
};
// A filter (x | f(args)), a test (x is f args) or a global function (range(args)). Arguments are
// bound to the builtin's parameters at parse time; a null entry takes the parameter's default.
struct Apply {
  const Builtin* builtin;
  ExprPtr input;  // null for a global function
  std::vector<ExprPtr> args;
  bool negated = false;  // x is not f
};

struct Expr {
  Location loc;
  std::variant<Literal, ListExpr, Name, GetAttr, GetItem, Unary, Binary, Compare, Conditional, Apply> node;
  int height = 1;  // levels of the tree rooted here (bounded by kMaxExpressionHeight)
};

struct Stmt;
using Body = std::vector<Stmt>;

struct Text {
  std::string text;
  Location loc;
};
struct Output {  // {{ expr }}
  ExprPtr expr;
};
struct If {
  struct Branch {
    ExprPtr cond;
    Body body;
  };
  std::vector<Branch> branches;  // if, then each elif
  Body otherwise;
};
struct For {
  std::string var;
  ExprPtr iterable;
  ExprPtr filter;  // for x in xs if filter; may be null
  Body body;
  Body otherwise;  // rendered when nothing was iterated
};
struct Set {
  std::string var;
  ExprPtr value;
};

struct Stmt {
  std::variant<Text, Output, If, For, Set> node;
};

// A parsed template and what error messages need to quote its lines.
struct Program {
  std::string name;
  std::string source;
  Body body;
};

}  // namespace dg::codegen::detail
