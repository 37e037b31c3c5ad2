// The hyper-connection pre-norm GEMM: D = A . B^T with BF16 A [M, K], FP32 B [N, K] (N <= 32),
// FP32 D, and each row's sum of squares of A, optionally as per-split partials over K. Two kernels
// with the same arithmetic: the streaming one (templates/kernels/hc_prenorm_gemm_tma.cu.j2,
// dg/hc_prenorm_tma.cuh: TMA ring, clusters sharing a split) wherever TMA can address A and B, and
// the register one (hc_prenorm_gemm.cu.j2, dg/hc_prenorm.cuh) for the rest. The configuration
// heuristic, the kernel specs and the launch.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "dg.h"
#include "jit/kernel.h"
#include "runtime/stream.h"
#include "runtime/tma.h"

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

// The streaming kernel's argument: host mirror of dg::hc::TmaParams (dg/hc_prenorm_tma.cuh).
struct HcPrenormTmaParams {
  tma::Descriptor a_map;  // BF16 [M, K], box [kHcStageK, block_m], 128-byte swizzle
  tma::Descriptor b_map;  // FP32 [N, K], box [kHcChunk, 8 * n_tiles], 128-byte swizzle
  float* d;
  float* s;
  int64_t d_split, d_row;
  int64_t s_split, s_row;
  int32_t m, n, k;
  int32_t chunks_per_split;
  int32_t splits;  // work items are ceil(M / block_m) x splits
};
static_assert(sizeof(HcPrenormTmaParams) == 384 && offsetof(HcPrenormTmaParams, d) == 256 &&
                  offsetof(HcPrenormTmaParams, m) == 304 && offsetof(HcPrenormTmaParams, splits) == 320,
              "must match the device struct");

constexpr int kHcChunk = 32;       // k per chunk (the template's kChunk)
constexpr int kHcStageK = 2 * kHcChunk;  // k per stage of the streaming kernel's ring
constexpr int kHcMaxN = 32;        // four 8-column MMA tiles
constexpr int kHcMaxSplits = 65535;  // grid.y
constexpr int kHcWarps = 4;
// Chunks of A in flight per warp: 64 registers of A either way, 8 KiB per warp in flight.
constexpr int hc_prenorm_stages(int m_tiles) { return m_tiles == 1 ? 8 : 4; }

constexpr int kHcMaxCluster = 8;   // CTAs of a cluster sharing one split's K (portable cluster size)
constexpr int kHcBlocksPerSm = 2;  // the streaming kernel's shared memory leaves room for two CTAs

// The template parameters (the kernel's identity).
struct HcPrenormConfig {
  bool tma = false;  // the streaming kernel (else the register one)
  int n_tiles = 1;   // ceil(N / 8), 1..4
  int m_tiles = 1;   // 16-row MMA tiles per (math) warp, 1 or 2
  int warps = kHcWarps;  // math warps (the streaming kernel adds a producer warp)
  int stages = hc_prenorm_stages(1);  // register kernel: chunks of A in flight per warp (even);
                                      // streaming kernel: slots of 64 k in the ring
  bool vec = true;   // register kernel: 16-byte loads of A and B
  int cluster = 1;   // streaming kernel: CTAs sharing a split's K
  int block_m() const { return warps * m_tiles * 16; }
  unsigned threads() const { return unsigned((warps + (tma ? 1 : 0)) * 32); }
  unsigned smem_bytes() const;  // the streaming kernel's dynamic shared memory (0 for the other)
};

// The heuristic. Where A and B are 16-byte aligned (`vec`) and K has a stage: the streaming kernel
// with 128-row tiles (64 where M fits one, or where a split call's 64-row items number at most one
// per SM), as many ring slots as two CTAs per SM leave room for, and clusters of 2..8 CTAs sharing
// each (row tile, split) item's K, doubled while the doubled grid still runs in one round of two
// CTAs per SM and each CTA keeps at least four stages, or (up to 4) while it keeps one CTA per SM
// and each CTA two stages (the launch halves a cluster again where the device's GPCs run fewer such
// clusters at once than the grid has). Else the register kernel: N's tiles, and two row tiles per
// warp where the grid still has two blocks per SM with them and N <= 24 (N = 32 with two row tiles
// spills registers).
HcPrenormConfig choose_hc_prenorm_config(int64_t m, int n, int64_t k, int splits, bool vec, int num_sms);

// Every configuration the heuristic can choose (the compile tests build each).
std::vector<HcPrenormConfig> all_hc_prenorm_configs();

jit::KernelKey hc_prenorm_kernel_key(const HcPrenormConfig& c);
jit::KernelSpec hc_prenorm_kernel_spec(const HcPrenormConfig& c);

// Chunks of K per split: K's chunks spread over `splits` as evenly as whole chunks allow (trailing
// splits may get none: their D and S are zeros).
int32_t hc_prenorm_chunks_per_split(int64_t k, int splits);

// The launch grid: streaming kernel with clusters (ceil(M / block_m) * cluster, splits); without,
// persistent: min(work items, kHcBlocksPerSm * num_sms) CTAs; register kernel
// (ceil(M / block_m), splits).
void hc_prenorm_grid(const HcPrenormConfig& c, int64_t m, int splits, int num_sms, unsigned (&grid)[2]);

// One launch on `stream`. M = 0: nothing runs. The streaming kernel's TMA maps are encoded here
// from p's A and B.
dg_status run_hc_prenorm_gemm(const dg_stream_s& stream, const HcPrenormParams& p, int splits, bool vec);

}  // namespace dg::ops
