// The hyper-connection pre-norm GEMM (templates/kernels/hc_prenorm_gemm.cu.j2, dg/hc_prenorm.cuh):
// D = A . B^T with BF16 A [M, K], FP32 B [N, K] (N <= 32), FP32 D, and each row's sum of squares
// of A, optionally as per-split partials over K. The configuration heuristic, the kernel spec and
// the launch.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "dg.h"
#include "jit/kernel.h"
#include "runtime/stream.h"

namespace dg::ops {

// The kernel argument: host mirror of dg::hc::Params (dg/hc_prenorm.cuh). Strides in elements.
struct HcPrenormParams {
  const void* a;  // BF16 [M, K], stride 1 along K
  const float* b;  // FP32 [N, K], stride 1 along K
  float* d;        // FP32 [splits, M, N], stride 1 along N
  float* s;        // FP32 [splits, M]
  int64_t lda, ldb;
  int64_t d_split, d_row;
  int64_t s_split, s_row;
  int32_t m, n, k;
  int32_t chunks_per_split;  // chunks of kHcChunk k per split
};
static_assert(sizeof(HcPrenormParams) == 96 && offsetof(HcPrenormParams, lda) == 32 &&
                  offsetof(HcPrenormParams, m) == 80 && offsetof(HcPrenormParams, chunks_per_split) == 92,
              "must match the device struct");

constexpr int kHcChunk = 32;       // k per chunk (the template's kChunk)
constexpr int kHcMaxN = 32;        // four 8-column MMA tiles
constexpr int kHcMaxSplits = 65535;  // grid.y
constexpr int kHcWarps = 4;
// Chunks of A in flight per warp: 64 registers of A either way, 8 KiB per warp in flight.
constexpr int hc_prenorm_stages(int m_tiles) { return m_tiles == 1 ? 8 : 4; }

// The template parameters (the kernel's identity).
struct HcPrenormConfig {
  int n_tiles = 1;  // ceil(N / 8), 1..4
  int m_tiles = 1;  // 16-row MMA tiles per warp, 1 or 2
  int warps = kHcWarps;
  int stages = hc_prenorm_stages(1);  // chunks of A in flight per warp (even)
  bool vec = true;         // 16-byte loads of A and B
  int block_m() const { return warps * m_tiles * 16; }
};

// The heuristic: N's tiles, and two row tiles per warp where the grid still has two blocks per SM
// with them (more rows per warp share each load of B; fewer blocks leave SMs idle) and N <= 24
// (N = 32 with two row tiles spills registers).
HcPrenormConfig choose_hc_prenorm_config(int64_t m, int n, int splits, bool vec, int num_sms);

// Every configuration the heuristic can choose (the compile tests build each).
std::vector<HcPrenormConfig> all_hc_prenorm_configs();

jit::KernelKey hc_prenorm_kernel_key(const HcPrenormConfig& c);
jit::KernelSpec hc_prenorm_kernel_spec(const HcPrenormConfig& c);

// Chunks of K per split: K's chunks spread over `splits` as evenly as whole chunks allow (trailing
// splits may get none: their D and S are zeros).
int32_t hc_prenorm_chunks_per_split(int64_t k, int splits);

// One launch, grid (ceil(M / block_m), splits), on `stream`. M = 0: nothing runs.
dg_status run_hc_prenorm_gemm(const dg_stream_s& stream, const HcPrenormParams& p, int splits, bool vec);

}  // namespace dg::ops
