// The data a template is rendered with: a JSON-like value whose printing and arithmetic follow
// Python, so that our engine renders exactly what Jinja2 renders for the same context.
#pragma once
#include <cstdint>
#include <initializer_list>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

namespace dg::codegen {

class Value {
 public:
  using List = std::vector<Value>;
  using Map = std::map<std::string, Value>;  // ordered by key: iteration and printing are deterministic
  enum class Type { Null, Bool, Int, Double, String, List, Map };

  Value() = default;
  Value(std::nullptr_t) {}
  Value(bool b) : v_(b) {}
  // Every integer type but bool; unsigned values above INT64_MAX throw std::out_of_range.
  template <typename T, std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>, int> = 0>
  Value(T i) : v_(checked_int(i)) {}
  Value(double d) : v_(d) {}
  Value(const char* s) : v_(std::string(s)) {}
  Value(std::string_view s) : v_(std::string(s)) {}
  Value(std::string s) : v_(std::move(s)) {}
  Value(List l) : v_(std::make_shared<List>(std::move(l))) {}
  Value(Map m) : v_(std::make_shared<Map>(std::move(m))) {}

  static Value list(std::initializer_list<Value> items = {}) { return Value(List(items)); }
  static Value map(std::initializer_list<Map::value_type> items = {}) { return Value(Map(items)); }

  Type type() const { return static_cast<Type>(v_.index()); }
  bool is_null() const { return type() == Type::Null; }
  bool is_bool() const { return type() == Type::Bool; }
  bool is_int() const { return type() == Type::Int; }
  bool is_double() const { return type() == Type::Double; }
  bool is_number() const { return is_int() || is_double(); }  // bool is not a number here
  bool is_string() const { return type() == Type::String; }
  bool is_list() const { return type() == Type::List; }
  bool is_map() const { return type() == Type::Map; }

  // Typed access; each throws std::invalid_argument naming both types when the type differs.
  bool as_bool() const;
  std::int64_t as_int() const;
  double as_double() const;  // also accepts an int
  const std::string& as_string() const;
  const List& as_list() const;
  const Map& as_map() const;

  // Building: operator[] turns a null value into a map and inserts missing keys; push_back turns a
  // null value into a list. Lists and maps are shared between copies and copied on first write.
  Value& operator[](const std::string& key);
  void push_back(Value item);
  // Lookup without inserting: nullptr when absent or when this is not a map.
  const Value* find(const std::string& key) const;
  // Number of items of a list or map, or bytes of a string; 0 otherwise.
  std::size_t size() const;

  // What `{{ v }}` prints, which is Python's str(): None, True, 3, 1.5, 1e-05, [1, 'a'], {'k': 2}.
  std::string to_string() const;
  // A type-tagged, unambiguous and deterministic serialisation for cache keys: 1 and 1.0 and "1"
  // differ, map keys are sorted, strings are length-prefixed.
  std::string canonical() const;

  // Structural equality: same type and same contents (1 != 1.0 here, unlike in a template).
  friend bool operator==(const Value& a, const Value& b);
  friend bool operator!=(const Value& a, const Value& b) { return !(a == b); }

 private:
  template <typename T>
  static std::int64_t checked_int(T i) {
    if constexpr (std::is_unsigned_v<T> && sizeof(T) >= sizeof(std::int64_t))
      if (i > static_cast<T>(INT64_MAX)) throw_out_of_range();
    return static_cast<std::int64_t>(i);
  }
  [[noreturn]] static void throw_out_of_range();
  List& mutable_list();
  Map& mutable_map();

  // Lists and maps sit behind shared pointers so that copying a value (binding a loop variable,
  // passing a context around) costs O(1); the index order matches Type.
  std::variant<std::monostate, bool, std::int64_t, double, std::string, std::shared_ptr<List>,
               std::shared_ptr<Map>>
      v_;
};

const char* type_name(Value::Type t);  // "none", "bool", "int", "float", "string", "list", "map"

}  // namespace dg::codegen
