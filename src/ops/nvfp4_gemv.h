// Batched NVFP4 GEMV (docs/nvfp4_gemv.md): the problem, the configuration heuristic, the template
// parameters of templates/kernels/nvfp4_gemv.cu.j2 and the launch.
#pragma once
#include <cstdint>
#include <vector>

#include "jit/kernel.h"
#include "runtime/stream.h"
#include "runtime/tensor.h"

namespace dg::ops {

// Everything the kernel needs, read from the descriptors. Strides are in bytes for a, sfa, b, sfb
// (one element = one byte) and in elements for c.
struct Nvfp4GemvProblem {
  int M = 0, K = 0, L = 0;  // K in E2M1 elements
  const void* a = nullptr;
  const void* sfa = nullptr;
  const void* b = nullptr;
  const void* sfb = nullptr;
  void* c = nullptr;
  int64_t a_sm = 0, a_sl = 0, sfa_sm = 0, sfa_sl = 0, b_sl = 0, sfb_sl = 0, c_sm = 0, c_sl = 0;
};

// Cache hint of the loads of the streamed matrix (a, sfa). The vector b is loaded ld.global.nc.
enum class Nvfp4CacheHint : int {
  kNoAllocate = 0,  // ld.global.nc.L1::no_allocate (default)
  kNc = 1,          // ld.global.nc
  kStreaming = 2,   // ld.global.cs (evict first)
  kPrefetch256 = 3  // ld.global.nc.L1::no_allocate.L2::256B
};

// The template parameters (the kernel's identity) plus the grid size (a launch setting).
struct Nvfp4GemvConfig {
  int arch = 90;        // 90: dp4a decode path; 100: cvt.rn.f16x2.e2m1x2 path
  int threads_per_row = 32;  // KT: 1, 2, 4, 8, 16 or a multiple of 32 (<= 1024)
  int row_groups = 8;        // RG: rows processed side by side in a block; KT * RG <= 1024
  int chunks = 1;            // NC: VEC-byte chunks per thread per row (per K segment)
  int rows = 1;              // R: rows per group per round (loads in flight: R * NC)
  int vec = 16;              // bytes per load of a: 16 or 8
  bool exact = false;        // K / (2 * vec) == KT * NC (no bounds checks along K)
  bool loop_k = false;       // K needs more than one segment of KT * NC chunks
  int pipe = 1;              // rounds whose loads are in flight ahead of the one computed (0..2)
  int defer = 1;             // KT > 32: rounds whose cross-warp row sums share one barrier (>= 1)
  Nvfp4CacheHint hint = Nvfp4CacheHint::kNoAllocate;
  int grid = 0;              // blocks; 0 = nvfp4_gemv_grid of one wave (blocks per SM x SMs)
  bool sweep = false;        // one batch (L = 1): rounds dealt round-robin over the grid
  int threads() const { return threads_per_row * row_groups; }
};

// User overrides (dg_nvfp4_gemv_options without the ABI header); 0 = heuristic.
struct Nvfp4GemvOverrides {
  int threads_per_row = 0, row_groups = 0, chunks = 0, rows = 0, vec = 0, grid = 0, hint = 0, prefetch = 0;
};

// The heuristic: a pure function of the shape, the largest vector width the pointers and strides
// allow (16 or 8), the SM count and the architecture (90 or 100). Overrides replace its choices;
// an invalid override gives DG_ERROR_INVALID_ARGUMENT naming the option.
dg_status choose_nvfp4_gemv_config(int M, int K, int L, int max_vec, int arch, const Nvfp4GemvOverrides& o,
                                   Nvfp4GemvConfig* config);

// Every configuration the heuristic (without overrides) can choose on `arch`: the compile tests
// build each of them.
std::vector<Nvfp4GemvConfig> all_nvfp4_gemv_heuristic_configs(int arch);

jit::KernelKey nvfp4_gemv_kernel_key(const Nvfp4GemvConfig& config);
jit::KernelSpec nvfp4_gemv_kernel_spec(const Nvfp4GemvConfig& config);

// The grid: `wave` blocks fit on the device at once and the rounds (of every batch) are dealt in
// contiguous, balanced ranges, so the grid is the fewest blocks whose longest range is as short as
// with a full wave: every block then has the same number of rounds or one less, and no block
// idles through the last round of the others (3584 rounds over 264 blocks left 112 of them
// idle for a fourteenth of the time; 256 blocks take 14 each). Capped by `rounds`.
int64_t nvfp4_gemv_grid(int64_t rounds, int64_t wave);

// Blocks of `threads` threads that fit on one SM with `regs` registers per thread (SM90/SM100).
int nvfp4_gemv_blocks_per_sm(int regs, int threads);

// One launch covering every batch, on `stream`.
dg_status run_nvfp4_gemv(const dg_stream_s& stream, const Nvfp4GemvProblem& problem, int max_vec,
                         const Nvfp4GemvOverrides& overrides);

}  // namespace dg::ops
