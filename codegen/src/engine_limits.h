// Bounds on what a template (or a JSON context) can make the engine do. Kernel templates stay far
// below each of them; a template or context that exceeds one is an error at its name:line:col
// instead of a stack overflow, memory exhaustion or a render that never ends.
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "dg/codegen/value.h"

namespace dg::codegen::detail {

// Parser recursion: nested blocks, parentheses, list literals, chained unary operators and inline
// ifs. Each level costs the parser about a dozen stack frames.
constexpr int kMaxNesting = 64;
// Height of an expression tree (long operator chains such as 1 + 1 + ... + 1): the renderer and the
// tree's destructor recurse once per level.
constexpr int kMaxExpressionHeight = 256;
// Lists within lists, in a template's values and in a JSON context.
constexpr int kMaxValueDepth = 128;
// Bytes of one string, and of the rendered output.
constexpr std::size_t kMaxStringBytes = std::size_t(1) << 26;
// Items of one list (range(), repetition, concatenation, the characters of a string).
constexpr std::size_t kMaxListItems = std::size_t(1) << 22;
// Bytes one list holds directly (its items, and the strings among them, which copies duplicate).
constexpr std::size_t kMaxListBytes = std::size_t(1) << 28;
// Loop iterations in one render (kernel templates run a few thousand; a million takes about a
// second, tens under AddressSanitizer).
constexpr std::int64_t kMaxIterations = std::int64_t(1) << 20;
// Bytes of a template's source.
constexpr std::size_t kMaxSourceBytes = std::size_t(1) << 26;

// Bytes a list holds directly: its items plus the strings among them.
std::size_t list_bytes(const Value::List& items);
// Whether `v` has lists or maps nested more than `depth` levels deep (a scalar has depth 0).
bool deeper_than(const Value& v, int depth);
// What Value::to_string() gives, or nullopt once it would exceed `limit` bytes.
std::optional<std::string> to_string_within(const Value& v, std::size_t limit);

}  // namespace dg::codegen::detail
