// Overflow-checked size arithmetic for the argument checks. Sizes and strides come from callers as
// int64_t; a product or a rounding of them that wraps would pass later checks with a wrong value,
// so every size computation on caller input goes through these and fails naming the argument:
//
//   int64_t bytes = 0;
//   DG_TRY(dg::checked_mul(rows, row_bytes, &bytes, "sizes"));
#pragma once
#include <cstdint>

#include "runtime/status.h"

namespace dg {

// The message every overflow gives: "<arg>: <what> overflows 64-bit arithmetic (...)".
inline dg_status size_overflow(const char* arg, const char* op, int64_t a, int64_t b) {
  return fail(DG_ERROR_INVALID_ARGUMENT, "{}: {} {} {} overflows 64-bit arithmetic (sizes too large)", arg, a, op, b);
}

// Each writes *out only on success (it may be a caller's out-parameter, untouched on error).
inline dg_status checked_mul(int64_t a, int64_t b, int64_t* out, const char* arg) {
  int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) return size_overflow(arg, "*", a, b);
  *out = r;
  return DG_SUCCESS;
}

inline dg_status checked_add(int64_t a, int64_t b, int64_t* out, const char* arg) {
  int64_t r = 0;
  if (__builtin_add_overflow(a, b, &r)) return size_overflow(arg, "+", a, b);
  *out = r;
  return DG_SUCCESS;
}

// ceil(a / b) for a >= 0, b > 0, without forming a + b - 1.
constexpr int64_t ceil_div(int64_t a, int64_t b) { return a / b + (a % b != 0); }

// align(a, b) = ceil(a / b) * b for a >= 0, b > 0; fails when the result exceeds INT64_MAX.
inline dg_status checked_align(int64_t a, int64_t b, int64_t* out, const char* arg) {
  int64_t r = 0;
  if (__builtin_mul_overflow(ceil_div(a, b), b, &r))
    return fail(DG_ERROR_INVALID_ARGUMENT, "{}: {} rounded up to a multiple of {} overflows 64-bit arithmetic", arg, a,
                b);
  *out = r;
  return DG_SUCCESS;
}

}  // namespace dg
