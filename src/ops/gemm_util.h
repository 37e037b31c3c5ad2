// Sizes shared by the SM90 GEMM heuristic (gemm_heuristic.cpp), the launch (gemm.cpp) and the
// skinny kernel's choice (skinny_gemm.cpp).
#pragma once
#include <cstdint>

#include "ops/gemm.h"

namespace dg::ops {

inline bool is_fp8(GemmKind k) { return k != GemmKind::kBf16; }
inline int elem_bytes(GemmKind k) { return is_fp8(k) ? 1 : 2; }
inline int out_bytes(const GemmShape& s) { return s.d_dtype == DG_DTYPE_FLOAT32 ? 4 : 2; }
inline int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
inline int64_t align_up(int64_t a, int64_t b) { return cdiv(a, b) * b; }

}  // namespace dg::ops
