#include "ops/skinny_gemm.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "ops/gemm_util.h"
#include "runtime/launch.h"
#include "runtime/status.h"

namespace dg::ops {
namespace {

// The heuristic takes the skinny kernel up to the calibration's M (Sm90CostModel::skinny_max_m_*)
// and B of at most this many bytes: above ~64 MB of B (BF16 24576 x 1536 and 7168 x 16384, FP8
// 7168 x 16384) the tiled kernel's TMA pipeline streamed 2-8% faster on an H100 and 5-15% on an H200.
constexpr double kSkinnyAutoMaxBBytes = 64e6;

int64_t units_of(const GemmShape& s) { return cdiv(s.k * elem_bytes(s.kind), 128); }

// CTAs resident per SM: the kernel's launch bound (SkinnyGemmTraits::kMinBlocks).
int skinny_ctas_per_sm(const GemmShape& s, const SkinnyConfig& c) {
  return (s.kind != GemmKind::kBf16 && c.token_tiles == 4 ? 12 : 16) / c.warps;
}

bool tiled_only_override(const GemmOverride& o) {
  return o.block_m || o.block_n || o.cluster || o.math_wg || o.multicast_a >= 0 || o.fp8_promotion ||
         o.promotion_slices;
}

}  // namespace

const char* skinny_ineligible(const GemmShape& s) {
  if (s.m > kSkinnyMaxM) return "it takes M <= 32";
  if (s.epilogue.active()) return "it has no fused epilogue (bias, SwiGLU, FP8 D, skip_head_mid)";
  if (s.major_a != Major::kK || s.major_b != Major::kK) return "it reads K-major A and B only";
  const int64_t row_bytes = s.k * elem_bytes(s.kind);
  if (row_bytes % 16 != 0) return "it needs rows of K a multiple of 16 bytes (K % 8 == 0 for BF16, K % 16 for FP8)";
  if (row_bytes > (int64_t(1) << 31)) return "it takes rows of K up to 2 GiB";
  return nullptr;
}

dg_status use_skinny(const GemmShape& s, const GemmOverride& o, bool sm_capped, const Sm90CostModel& model,
                     bool* skinny) {
  *skinny = false;
  if (o.kernel == DG_GEMM_KERNEL_TILED) return DG_SUCCESS;
  const char* why = skinny_ineligible(s);
  if (o.kernel == DG_GEMM_KERNEL_SKINNY) {
    if (why != nullptr)
      return fail(DG_ERROR_UNSUPPORTED, "options.kernel: DG_GEMM_KERNEL_SKINNY cannot run m={} n={} k={}: {}", s.m,
                  s.n, s.k, why);
    if (tiled_only_override(o))
      return fail(DG_ERROR_INVALID_ARGUMENT,
                  "options: block_m, block_n, cluster, multicast_a, num_math_warpgroups and the FP8 promotion "
                  "options configure the tiled kernel (expected their defaults with DG_GEMM_KERNEL_SKINNY)");
    if (sm_capped)
      return fail(DG_ERROR_UNSUPPORTED,
                  "options.kernel: DG_GEMM_KERNEL_SKINNY launches one CTA per tile and cannot be confined to an SM "
                  "cap (num_sms); use DG_GEMM_KERNEL_TILED or AUTO");
    *skinny = true;
    return DG_SUCCESS;
  }
  const int64_t max_m = s.kind == GemmKind::kBf16 ? model.skinny_max_m_bf16 : model.skinny_max_m_fp8;
  const double b_bytes = double(s.n) * double(s.k) * elem_bytes(s.kind);
  *skinny = why == nullptr && s.m <= max_m && b_bytes <= kSkinnyAutoMaxBBytes && !tiled_only_override(o) && !sm_capped;
  return DG_SUCCESS;
}

dg_status choose_skinny_config(const GemmShape& s, int num_sms, const GemmOverride& o, SkinnyConfig* out) {
  const int64_t units = units_of(s);
  if (o.stages < 0 || o.stages > 8)
    return fail(DG_ERROR_INVALID_ARGUMENT,
                "options.num_stages: {} (the skinny kernel's 128-byte units in flight per warp: expected 0 = "
                "heuristic, or 1..8)",
                o.stages);
  if (o.split_k != 0 && o.split_k != 1 && o.split_k != 2 && o.split_k != 4 && o.split_k != 8)
    return fail(DG_ERROR_INVALID_ARGUMENT, "options.split_k: {} (expected 0 = heuristic, 1, 2, 4 or 8)", o.split_k);
  if (o.split_k > units)
    return fail(DG_ERROR_INVALID_ARGUMENT,
                "options.split_k: {} exceeds the {} 128-byte units of a row of B (expected at most that)", o.split_k,
                units);
  SkinnyConfig c;
  c.token_tiles = static_cast<int>(cdiv(s.m, 8));
  c.warps = 4;
  // One unit per warp at a time: on an H100 (M = 1, the 7 DeepSeek shapes) 1 beat 2, 3
  // and 4 on 12 of 14 BF16/FP8 shapes, by up to 20% (BF16 1 x 2112 x 7168: 17.0 us vs 20.8 at 4):
  // many warps streaming short rounds beat few warps holding deep ones.
  c.unroll = o.stages ? o.stages : 1;
  const int64_t tiles = cdiv(s.n, 16);
  if (o.split_k) {
    c.split = o.split_k;
  } else {
    // Split K over a cluster while the grid still fits on the GPU at once and every warp keeps at
    // least two units of each row.
    for (int sk : {2, 4, 8})
      if (tiles * sk <= int64_t(num_sms) * skinny_ctas_per_sm(s, c) && units >= int64_t(sk) * c.warps * 2) c.split = sk;
  }
  c.grid = static_cast<int>(tiles * c.split);
  // Bytes streamed at ~2.9 TB/s plus a launch-and-latency floor (informative: DG_PRINT_CONFIGS).
  const double bytes = double(s.n) * s.k * elem_bytes(s.kind) + double(s.m) * s.n * 4;
  c.estimate_us = 5.0 + bytes / 2.9e6;
  *out = c;
  return DG_SUCCESS;
}

jit::KernelKey skinny_kernel_key(const GemmShape& s, const SkinnyConfig& c) {
  return jit::KernelKey(jit::kFamilySkinnyGemm,
                        {static_cast<int64_t>(s.kind), s.d_dtype, s.accumulate, c.token_tiles, c.warps, c.split,
                         c.unroll});
}

jit::KernelSpec skinny_kernel_spec(const GemmShape& s, const SkinnyConfig& c) {
  jit::KernelSpec spec;
  spec.template_name = "kernels/skinny_gemm.cu.j2";
  spec.kernel_name = fmt::format("dg_skinny_{}_gemm_{}{}_t{}_w{}_s{}_u{}", kind_short_name(s.kind),
                                 s.d_dtype == DG_DTYPE_FLOAT32 ? "f32" : "bf16", s.accumulate ? "_c" : "",
                                 c.token_tiles, c.warps, c.split, c.unroll);
  spec.context = codegen::Value::map({
      {"kernel_name", spec.kernel_name},
      {"kind", kind_enumerator(s.kind)},
      {"out_type", s.d_dtype == DG_DTYPE_FLOAT32 ? "float" : "dg::bf16"},
      {"has_c", s.accumulate ? "true" : "false"},
      {"token_tiles", c.token_tiles},
      {"warps", c.warps},
      {"split", c.split},
      {"unroll", c.unroll},
  });
  return spec;
}

std::string describe(const GemmShape& s, const SkinnyConfig& c) {
  static const char* kinds[] = {"bf16", "fp8-1d2d", "fp8-1d1d"};
  return fmt::format("{} gemm m={} n={} k={} d={}{}: skinny kernel, {} token tile(s) of 8, {} warps, {} unit(s) in "
                     "flight per warp, K split over {} CTA(s), grid {}, est {:.1f} us",
                     kinds[static_cast<int>(s.kind)], s.m, s.n, s.k, s.d_dtype == DG_DTYPE_FLOAT32 ? "fp32" : "bf16",
                     s.accumulate ? " (+ beta * C)" : "", c.token_tiles, c.warps, c.unroll, c.split, c.grid,
                     c.estimate_us);
}

dg_status launch_skinny_gemm(const dg_stream_s& stream, const GemmArgs& args, const SkinnyConfig& c,
                             const Kernel& kernel) {
  const GemmShape& s = args.shape;
  SkinnyGemmParams p;
  std::memset(&p, 0, sizeof(p));
  p.a = args.a;
  p.b = args.b;
  p.d = args.d;
  p.c = s.accumulate ? args.c : nullptr;
  p.sfa = args.sfa;
  p.sfb = args.sfb;
  p.lda = args.lda;
  p.ldb = args.ldb;
  p.ldd = args.ldd;
  p.ldc = args.ldc;
  p.ld_sfa = args.ld_sfa;
  if (s.kind == GemmKind::kFp8_1D1D) {
    p.sfb_stride_n = 1;
    p.sfb_stride_k = args.ld_sfb;
  } else {
    p.sfb_stride_n = args.sfb_stride_n;
    p.sfb_stride_k = args.sfb_stride_k;
  }
  p.m = static_cast<uint32_t>(s.m);
  p.n = static_cast<uint32_t>(s.n);
  p.k = static_cast<uint32_t>(s.k);
  p.alpha = args.alpha;
  p.beta = args.beta;
  LaunchConfig lc;
  lc.grid[0] = static_cast<unsigned>(c.grid);
  lc.block[0] = static_cast<unsigned>(32 * c.warps);
  lc.cluster = static_cast<unsigned>(c.split);
  lc.pdl = config_of(stream).pdl;
  void* kargs[] = {&p};
  return launch(stream, kernel, lc, kargs);
}

}  // namespace dg::ops
