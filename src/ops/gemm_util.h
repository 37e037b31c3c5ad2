// Sizes shared by the SM90 GEMM heuristic (gemm_heuristic.cpp), the launch (gemm.cpp) and the
// skinny kernel's choice (skinny_gemm.cpp).
#pragma once
#include <cstdint>
#include <numeric>

#include "ops/gemm.h"
#include "runtime/tma.h"

namespace dg::ops {

// FP8 scaling factors cover blocks of 128 elements along K (and along N for 1D2D SFB).
constexpr int64_t kScaleBlock = 128;
// Per-token scale rows are padded to 4 floats (16 bytes) for TMA.
constexpr int64_t kScaleRowAlign = 4;
// Rows each group of a contiguous M-grouped layout (and each K slice of a K-grouped one) is padded
// to: dg_get_mk_alignment_for_contiguous_layout.
constexpr int64_t kMkAlignment = 128;

// TMA boxes of A and B are 128-byte swizzled; MN-major operands are read in boxes 64 elements wide.
constexpr uint32_t kOperandSwizzle = 128;
constexpr int kMnMajorBox = 64;
// A dense call's partial last row block loads K-major A in a box of its rows rounded up to this (the
// kernel's kATailBox computes the same).
constexpr int64_t kTailBoxRowAlign = 8;

inline bool is_fp8(GemmKind k) { return k != GemmKind::kBf16; }
// The rows of the A box of the partial last row block of `rows` (kTailBoxRowAlign); 0 when every
// block is whole or the rounded tail is a whole block.
inline int64_t tail_box_rows(int64_t rows, int block_m) {
  const int64_t tail = (rows % block_m + kTailBoxRowAlign - 1) / kTailBoxRowAlign * kTailBoxRowAlign;
  return tail < block_m ? tail : 0;
}
// Dense and batched problems of at most this many rows (M, a batch's m) read each B tile for one
// row block: they stream B from DRAM once, and their operand maps fetch single lines into L2
// (tma::L2Fetch::kLine). On an H200 that ran einsum's per-head forms at b 4-128 3.5% faster and
// dense BF16 at M 128 0.6-3.1% (FP8 -0.8..+2.5%), while FP8 at M 4096-8192 with short K ran up to 3.5%
// slower the same way: larger problems, and the M-grouped ones (masked decoding 0.4% slower with
// single lines), keep line pairs (docs/gemm.md#l2-fetch).
constexpr int64_t kStreamingRows = 128;
inline tma::L2Fetch operand_l2_fetch(const GemmShape& s) {
  const bool streams = (s.type == GemmType::kNormal || s.type == GemmType::kBatched) && s.m <= kStreamingRows;
  return streams ? tma::L2Fetch::kLine : tma::L2Fetch::kPair;
}
inline int elem_bytes(GemmKind k) { return is_fp8(k) ? 1 : 2; }
inline int out_bytes(const GemmShape& s) {
  return s.d_dtype == DG_DTYPE_FLOAT32 ? 4 : s.d_dtype == DG_DTYPE_FLOAT8_E4M3 ? 1 : 2;
}
// Columns of D a block_n-wide tile writes (SwiGLU: half, one output per gate / up pair).
inline int out_cols(const GemmShape& s, int block_n) {
  return s.epilogue.act == Activation::kSwiGlu ? block_n / 2 : block_n;
}
// Columns of D the GEMM writes.
inline int64_t out_n(const GemmShape& s) { return s.epilogue.act == Activation::kSwiGlu ? s.n / 2 : s.n; }
// Columns of D's memory: out_n, or with skip_head_mid every head's left, middle and right columns.
inline int64_t d_cols(const GemmShape& s) {
  const GemmEpilogue& e = s.epilogue;
  return e.head_split() ? s.n / (e.head_left + e.head_right) * (e.head_left + e.head_mid + e.head_right) : out_n(s);
}
// The narrowest epilogue strip (one TMA box) of a BF16 or FP32 D: 16 BF16 columns (stmatrix x4), 8
// FP32 (a fragment group).
constexpr int kMinStripBytes = 32;
// A TMA box starts on a 16-byte boundary of global memory (an unaligned start faults).
constexpr int kTmaBoxAlignBytes = 16;
// skip_head_mid whose left or right part no strip of kMinStripBytes or more divides, or whose middle
// part would start the right boxes off a 16-byte boundary: the kernel stores the tile from registers,
// element by element (mirrors dg::epilogue::HeadColumns::kDirect).
inline bool direct_head_store(const GemmShape& s) {
  const GemmEpilogue& e = s.epilogue;
  return e.head_split() && (std::gcd(e.head_left, e.head_right) % (kMinStripBytes / out_bytes(s)) != 0 ||
                            e.head_mid * out_bytes(s) % kTmaBoxAlignBytes != 0);
}
// What each epilogue strip must divide besides the tile's columns: with skip_head_mid (TMA stores)
// gcd(left, right), so that no box straddles a left / right boundary; 0 = nothing.
inline int64_t strip_divisor(const GemmShape& s) {
  return s.epilogue.head_split() && !direct_head_store(s) ? std::gcd(s.epilogue.head_left, s.epilogue.head_right)
                                                           : 0;
}
inline int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
inline int64_t align_up(int64_t a, int64_t b) { return cdiv(a, b) * b; }

}  // namespace dg::ops
