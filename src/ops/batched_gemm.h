// Batched GEMMs (docs/einsum.md): the SM90 GEMM kernel over a batch of problems whose operands are
// strided views, each read through one 3-D TMA map (K-major: (K, MN, batch); MN-major: (MN, K,
// batch)), so that no operand is copied and every batch's K and MN tails clip on their own.
//   kBatched:      D[z] = A[z] . B[z]^T for z < batches (D a 3-D map as well); BF16, or FP8 E4M3
//                  K-major with the 1D2D recipe's scales of every batch (sfa, sfb below);
//   kBatchReduced: D = C + sum_z A[z] . B[z]^T, FP32 D, the K blocks of every batch split over CTAs
//                  that add their partial tiles into D (TMA reduce-add; the order of the additions
//                  varies from run to run).
#pragma once
#include <cstdint>

#include "dg.h"
#include "ops/gemm.h"
#include "runtime/stream.h"

namespace dg::ops {

// One operand: `batches` matrices of [MN, K] (K-major: rows of K elements `ld` apart) or [K, MN]
// (MN-major: rows of MN elements `ld` apart), `batch_stride` elements apart.
struct BatchedOperand {
  const void* data = nullptr;
  int64_t ld = 0;
  int64_t batch_stride = 0;
  Major major = Major::kK;
};

struct BatchedArgs {
  GemmKind kind = GemmKind::kBf16;  // kBf16, or kFp8_1D2D (kBatched only)
  bool reduce = false;  // kBatchReduced (D = C + sum over the batch) instead of kBatched
  int64_t batches = 0, m = 0, n = 0, k = 0;  // every batch's problem [m, n] over k
  BatchedOperand a, b;
  dg_dtype d_dtype = DG_DTYPE_BFLOAT16;  // reduce: FLOAT32
  void* d = nullptr;
  int64_t ldd = 0;           // elements between D's rows
  int64_t d_batch_stride = 0;  // kBatched: elements between D[z] and D[z + 1]
  const float* c = nullptr;  // reduce: FP32 [m, n] with rows ldc apart, may be d; nullptr: D = the sum
  int64_t ldc = 0;
  // FP8 1D2D: batch z's per-token scale of row i and K block kb is sfa[(z * ceil(k / 128) + kb) * ld_sfa + i]
  // (ld_sfa a multiple of 4, >= m); its 128 x 128 block scale of rows nb * 128.. and K block kb is
  // sfb[z * sfb_stride_g + nb * sfb_stride_n + kb * sfb_stride_k].
  const float* sfa = nullptr;
  int64_t ld_sfa = 0;
  const float* sfb = nullptr;
  int64_t sfb_stride_g = 0, sfb_stride_n = 0, sfb_stride_k = 0;
};

// The kernel's problem as the heuristic sees it: [m, n] per batch over k (kBatched), or [m, n]
// over the batch's whole K (kBatchReduced).
GemmShape batched_gemm_shape(const BatchedArgs& args);

// The overrides the call runs with: the caller's, split_k 1 (batch-reduced: the kernel splits K
// itself), and for batch-reduced calls without tile options 128 x 128 tiles (smaller ones for a
// small m or n).
GemmOverride batched_gemm_override(const BatchedArgs& args, const GemmOverride& o);

// What the kernel runs for a call: the call's problem, shape and overrides (batched_gemm_shape,
// batched_gemm_override), or for per-head BF16 products of at most 32 rows per batch, at least 64
// columns and K at most 512, with no tile, cluster or warp-group option, the swapped problem
// D_z^T = B_z . A_z^T: `args` with A and B exchanged and m, n exchanged, the shape's transpose_d set,
// block_n the call's m rounded up to 8 and single CTAs (docs/einsum.md#few-rows-per-head).
struct BatchedPlan {
  BatchedArgs args;
  GemmShape shape;
  GemmOverride over;
};
BatchedPlan plan_batched_gemm(const BatchedArgs& args, const GemmOverride& o);

// The K splits of a batch-reduced launch: enough to fill `clusters` with `units` tile units, each
// split at least kMinSplitKBlocks of the num_kb K blocks (>= 1).
int64_t batch_reduced_splits(int64_t units, int64_t clusters, int64_t num_kb);

// Runs the call on the stream (the API has checked the arguments: sizes below 2^31, TMA-legal
// strides, m, n > 0). k == 0 (or no batch, reduce) gives D = C or zeros. With prepare_only the
// kernels are compiled and loaded and nothing runs (the pointers are not read).
dg_status run_batched_gemm(const dg_stream_s& stream, const BatchedArgs& args, const GemmOverride& o,
                           bool prepare_only);

}  // namespace dg::ops
