// The filters, tests and global functions a template may call. The parser looks names up here,
// so an unknown filter is a syntax error, and binds arguments to the parameters listed.
#pragma once
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dg/codegen/value.h"
#include "location.h"

namespace dg::codegen::detail {

// An evaluated expression. As in Jinja2, a missing variable, key or index evaluates to an
// undefined marker that fails only when used, so `x | default(1)` and `x is defined` work.
struct Operand {
  Value value;
  std::string undefined;  // why it is undefined, e.g. "undefined variable 'x'"; empty if defined
  Location where;         // where it became undefined

  bool defined() const { return undefined.empty(); }
  // The value; throws LocatedError{where, undefined} when undefined.
  const Value& get() const {
    if (!defined()) throw LocatedError{where, undefined};
    return value;
  }
};

enum class BuiltinKind { Filter, Test, Function };

struct Param {
  std::string_view name;
  std::optional<Value> default_value;  // none: the argument is required
};

struct Builtin {
  BuiltinKind kind;
  std::string_view name;
  std::vector<Param> params;
  // Whether the input and arguments may be undefined (default, defined, undefined). For every
  // other builtin the renderer raises the undefined error before calling it.
  bool takes_undefined;
  // `input` is null-valued for a function; `args` has one entry per parameter. Throws EvalError.
  Operand (*apply)(const Operand& input, const std::vector<Operand>& args);
};

// nullptr when no builtin of that kind has that name.
const Builtin* find_builtin(BuiltinKind kind, std::string_view name);

}  // namespace dg::codegen::detail
