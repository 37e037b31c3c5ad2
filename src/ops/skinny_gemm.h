// The skinny GEMM (templates/kernels/skinny_gemm.cu.j2, dg/gemm/skinny_gemm.cuh): dense GEMMs with
// few tokens (M <= 32) that stream B once through mma.sync, instead of the tiled WGMMA kernel whose
// 64-row tiles leave most of each tile empty there. Eligibility, the heuristic, the kernel's
// key/spec and the launch; run_gemm (ops/gemm.cpp) chooses between the two.
#pragma once
#include <cstdint>
#include <string>

#include "dg.h"
#include "jit/kernel.h"
#include "ops/gemm.h"
#include "ops/gemm_cost_model.h"
#include "runtime/stream.h"

namespace dg::ops {

constexpr int64_t kSkinnyMaxM = 32;

struct SkinnyConfig {
  int token_tiles = 1;  // tiles of 8 tokens: ceil(M / 8)
  int warps = 4;        // per CTA, splitting the CTA's K between them
  int split = 1;        // CTAs of a cluster sharing each 16-row tile's K (1, 2, 4, 8)
  int unroll = 4;       // 128-byte units of each row in flight per warp (1..8)
  int grid = 0;         // CTAs: ceil(N / 16) * split
  double estimate_us = 0;
};

// Why `s` cannot run on the skinny kernel; nullptr when it can. Shape-only: the API has already
// checked that operand rows are 16-byte aligned.
const char* skinny_ineligible(const GemmShape& s);

// Whether run_gemm takes the skinny kernel for `s` (o.kernel, or the heuristic when it is AUTO, with
// the M range of the device's calibration `model`; not under an SM cap, which a non-persistent grid
// cannot keep); DG_ERROR_UNSUPPORTED when the caller forces a kernel that cannot run `s`.
dg_status use_skinny(const GemmShape& s, const GemmOverride& o, bool sm_capped, const Sm90CostModel& model,
                     bool* skinny);

// The heuristic; o.split_k and o.stages override the split and the unroll depth.
dg_status choose_skinny_config(const GemmShape& s, int num_sms, const GemmOverride& o, SkinnyConfig* out);

jit::KernelKey skinny_kernel_key(const GemmShape& s, const SkinnyConfig& c);
jit::KernelSpec skinny_kernel_spec(const GemmShape& s, const SkinnyConfig& c);
std::string describe(const GemmShape& s, const SkinnyConfig& c);

// The kernel argument: host mirror of dg::gemm::SkinnyGemmParams.
struct SkinnyGemmParams {
  const void* a;
  const void* b;
  void* d;
  const void* c;
  const float* sfa;
  const float* sfb;
  int64_t lda, ldb, ldd, ldc, ld_sfa, sfb_stride_n, sfb_stride_k;
  uint32_t m, n, k;
  float alpha, beta;
};
static_assert(sizeof(SkinnyGemmParams) == 128, "must match the device struct");

// Launches the skinny kernel for `args` (K-major A and B; D := alpha * A.B^T + beta * C in one pass).
dg_status launch_skinny_gemm(const dg_stream_s& stream, const GemmArgs& args, const SkinnyConfig& c,
                             const Kernel& kernel);

}  // namespace dg::ops
