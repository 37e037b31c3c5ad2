// The byte transpose (templates/kernels/transpose.cu.j2, templates/include/dg/transpose.cuh) and
// its use by the SM90 FP8 GEMMs: K-major copies of MN-major operands in the caller's workspace.
#pragma once
#include <cstddef>
#include <cstdint>

#include "dg.h"
#include "jit/kernel.h"
#include "runtime/stream.h"

namespace dg::ops {

// The kernel argument: host mirror of dg::transpose::Params.
struct TransposeParams {
  const void* src;
  int64_t ld_src;  // bytes between source rows
  void* dst;
  int64_t ld_dst;  // bytes between destination rows
  int64_t rows;    // source rows = destination columns
  int64_t cols;    // source columns = destination rows
};
static_assert(sizeof(TransposeParams) == 48 && offsetof(TransposeParams, dst) == 16 &&
                  offsetof(TransposeParams, rows) == 32,
              "must match the device struct");

// Mirrors of dg/transpose.cuh's launch constants (the unit tests compare them).
constexpr int kTransposeTile = 128;
constexpr int kTransposeThreads = 256;
constexpr int kTransposeBlocksPerSm = 4;

jit::KernelSpec transpose_kernel_spec();

// Blocks launched for a rows x cols transpose on num_sms SMs (rows, cols > 0): one per tile, at
// most kTransposeBlocksPerSm per SM, all resident at once; with more tiles, as few blocks as walk
// them in the same number of rounds, so that no block has more than one tile more than another.
unsigned transpose_grid(int64_t rows, int64_t cols, int num_sms);

// dst[c * ld_dst + r] = src[r * ld_src + c] for r < rows, c < cols, on the stream. With prepare_only
// the kernel is compiled and loaded and nothing runs.
dg_status run_transpose(const dg_stream_s& stream, const TransposeParams& p, bool prepare_only);

// Where an SM90 FP8 GEMM keeps the K-major copies of its MN-major operands in the caller's
// workspace (dg_fp8_gemm_workspace_size): A's [M, K] copy at offset 0, then B's [N, K] copy, each
// with rows align(K, 16) bytes apart (TMA) and taking align(rows * align(K, 16), 256) bytes, so
// that both start 256-byte aligned.
struct Fp8GemmWorkspace {
  int64_t ld = 0;        // bytes between the rows of a copy
  size_t offset_b = 0;   // where B's copy starts
  size_t bytes = 0;      // all the call needs
};
Fp8GemmWorkspace fp8_gemm_workspace(bool copy_a, bool copy_b, int64_t m, int64_t n, int64_t k);

}  // namespace dg::ops
