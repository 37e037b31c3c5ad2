// The dense GEMM recipes, shared by the SM90 tiled kernel and the skinny (small-M) kernel; the host
// mirrors the values (src/ops/gemm.h, GemmKind).
#pragma once

namespace dg::gemm {

enum class Kind : int { kBf16 = 0, kFp8_1D2D = 1, kFp8_1D1D = 2 };

}  // namespace dg::gemm
