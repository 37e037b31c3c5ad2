#include "ops/gemm.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstddef>
#include <cstring>

#include "jit/concurrent.h"
#include "jit/kernel_cache.h"
#include "ops/gemm_config_cache.h"
#include "ops/gemm_util.h"
#include "ops/skinny_gemm.h"
#include "ops/transpose.h"
#include "runtime/device.h"
#include "runtime/launch.h"
#include "runtime/log.h"
#include "runtime/status.h"
#include "runtime/tma.h"

namespace dg::ops {

const char* kind_enumerator(GemmKind k) {
  static const char* names[] = {"kBf16", "kFp8_1D2D", "kFp8_1D1D"};
  return names[static_cast<int>(k)];
}

const char* kind_short_name(GemmKind k) {
  static const char* names[] = {"bf16", "fp8_1d2d", "fp8_1d1d"};
  return names[static_cast<int>(k)];
}

const char* gemm_type_enumerator(GemmType t) {
  static const char* names[] = {"kNormal", "kMGroupedContiguous", "kMGroupedMasked", "kKGrouped",
                                "kMGroupedContiguousPsum"};
  return names[static_cast<int>(t)];
}

namespace {
// Kernel-name tag of the grouped types ("" for Normal, whose names predate them).
const char* gemm_type_tag(GemmType t) {
  static const char* tags[] = {"", "_mgc", "_mgm", "_kg", "_mgp"};
  return tags[static_cast<int>(t)];
}
}  // namespace

jit::KernelKey gemm_kernel_key(const GemmShape& s, const GemmConfig& c) {
  return jit::KernelKey(jit::kFamilySm90Gemm,
                        {static_cast<int64_t>(s.kind), static_cast<int64_t>(s.major_a), static_cast<int64_t>(s.major_b),
                         s.d_dtype, s.accumulate, c.block_m, c.block_n, c.stages, c.math_wg, c.cluster, c.multicast_a,
                         c.overlap, c.promote_split, c.d_bufs, c.split_k, static_cast<int64_t>(s.type), c.sfb_boundaries,
                         c.stage_aligned});
}

jit::KernelSpec gemm_kernel_spec(const GemmShape& s, const GemmConfig& c) {
  const char* majors[] = {"kK", "kMN"};
  jit::KernelSpec spec;
  spec.template_name = "kernels/sm90_gemm.cu.j2";
  spec.kernel_name = fmt::format("dg_sm90_{}_gemm{}_{}{}_{}{}_{}x{}x{}_s{}{}_w{}_c{}{}{}{}{}{}{}", kind_short_name(s.kind),
                                 gemm_type_tag(s.type),
                                 s.major_a == Major::kK ? "k" : "m", s.major_b == Major::kK ? "k" : "m",
                                 s.d_dtype == DG_DTYPE_FLOAT32 ? "f32" : "bf16", s.accumulate ? "_acc" : "",
                                 c.block_m, c.block_n, c.block_k, c.stages, c.stage_aligned ? "u" : "", c.math_wg, c.cluster,
                                 c.cluster == 2 ? (c.multicast_a ? "a" : "b") : "", c.overlap ? "_ov" : "",
                                 c.promote_split > 1 ? fmt::format("_p{}", c.promote_split) : std::string(),
                                 c.d_bufs ? fmt::format("_e{}", c.d_bufs) : std::string(),
                                 c.split_k > 1 ? fmt::format("_k{}", c.split_k) : std::string(),
                                 c.sfb_boundaries ? fmt::format("_b{:x}", c.sfb_boundaries) : std::string());
  spec.context = codegen::Value::map({
      {"kernel_name", spec.kernel_name},
      {"kind", kind_enumerator(s.kind)},
      {"major_a", majors[static_cast<int>(s.major_a)]},
      {"major_b", majors[static_cast<int>(s.major_b)]},
      {"out_type", s.d_dtype == DG_DTYPE_FLOAT32 ? "float" : "dg::bf16"},
      {"reduce_add", s.accumulate ? "true" : "false"},
      {"block_m", c.block_m},
      {"block_n", c.block_n},
      {"stages", c.stages},
      {"math_wg", c.math_wg},
      {"cluster", c.cluster},
      {"pair_along_n", c.multicast_a ? "true" : "false"},
      {"overlap", c.overlap ? "true" : "false"},
      {"promote_split", c.promote_split},
      {"d_bufs", c.d_bufs},
      {"split_k", c.split_k},
      {"gemm_type", gemm_type_enumerator(s.type)},
      {"sfb_boundaries", static_cast<int64_t>(c.sfb_boundaries)},
      {"stage_aligned", c.stage_aligned ? "true" : "false"},
      {"smem_bytes", static_cast<int64_t>(c.smem_bytes)},
  });
  return spec;
}

std::string describe(const GemmShape& s, const GemmConfig& c) {
  static const char* kinds[] = {"bf16", "fp8-1d2d", "fp8-1d1d"};
  static const char* types[] = {"", " m-grouped contiguous", " m-grouped masked", " k-grouped", " m-grouped psum"};
  const std::string groups = s.type == GemmType::kNormal     ? std::string()
                             : s.type == GemmType::kKGrouped ? fmt::format(" groups={} (non-empty; k = mean K)", s.num_groups)
                                                             : fmt::format(" groups={} expected_m={}", s.num_groups, s.expected_m);
  return fmt::format(
      "{}{} gemm{} m={} n={} k={} a={} b={} d={}{}: block {}x{}x{}, {} stages, {} math WG, cluster {}{}{}, {} SMs, grid {}, "
      "raster bands of {} along {}, smem {} B{}{}, est {:.1f} us",
      kinds[static_cast<int>(s.kind)], types[static_cast<int>(s.type)], groups, s.m, s.n, s.k, s.major_a == Major::kK ? "K-major" : "M-major",
      s.major_b == Major::kK ? "K-major" : "N-major", s.d_dtype == DG_DTYPE_FLOAT32 ? "fp32" : "bf16",
      s.accumulate ? " (+=)" : "", c.block_m, c.block_n, c.block_k, c.stages, c.math_wg, c.cluster,
      c.cluster == 2 ? (c.multicast_a ? " (multicast A)" : " (multicast B)") : "",
      std::string(c.overlap ? ", overlapped promotion" : "") +
          (c.promote_split > 1 ? fmt::format(" in {} column slices", c.promote_split) : std::string()),
      c.num_sms, c.grid, c.raster_band, c.raster_along_n ? "N" : "M", c.smem_bytes,
      c.d_bufs ? fmt::format(" ({} rotating epilogue strips)", c.d_bufs) : std::string(),
      c.split_k <= 1                         ? std::string()
      : s.type == GemmType::kMGroupedMasked ? std::string(", a last round at most half full split over CTA pairs")
                                             : fmt::format(", split-K over {} CTAs", c.split_k),
      c.estimate_us);
}

FastDiv fast_div(uint32_t d) {
  FastDiv f{d, 0, 0};
  while (f.shift < 32 && (uint64_t{1} << f.shift) < d) ++f.shift;  // ceil(log2 d)
  // (2^shift - d) < d, so the quotient fits 32 bits.
  f.mul = static_cast<uint32_t>(((uint64_t{1} << 32) * ((uint64_t{1} << f.shift) - d)) / d + 1);
  return f;
}

WalkDivisors walk_divisors(int64_t units_m, int64_t units_n, int band, bool along_n) {
  const uint32_t b = static_cast<uint32_t>(std::max(band, 1));
  const uint32_t cut = static_cast<uint32_t>(std::max<int64_t>(along_n ? units_n : units_m, 1));
  const uint32_t across = static_cast<uint32_t>(along_n ? units_m : units_n);
  WalkDivisors w;
  w.per_band = fast_div(std::max(b * across, 1u));
  w.band = fast_div(b);
  w.last_band = (cut - 1) / b;
  w.last = fast_div(cut - w.last_band * b);
  w.per_slot = fast_div(static_cast<uint32_t>(std::max<int64_t>(units_m * units_n, 1)));
  return w;
}

jit::KernelSpec gemm_scale_kernel_spec(dg_dtype d_dtype, bool has_c) {
  jit::KernelSpec spec;
  spec.template_name = "kernels/gemm_scale.cu.j2";
  spec.kernel_name = fmt::format("dg_gemm_scale_{}{}", d_dtype == DG_DTYPE_FLOAT32 ? "f32" : "bf16", has_c ? "_c" : "_zero");
  spec.context = codegen::Value::map({{"kernel_name", spec.kernel_name},
                                      {"dtype", d_dtype == DG_DTYPE_FLOAT32 ? "float" : "dg::bf16"},
                                      {"has_c", has_c ? "true" : "false"}});
  return spec;
}

dg_status run_gemm_scale(const dg_stream_s& stream, const GemmArgs& a, bool has_c, bool prepare_only) {
  const dg_dtype dt = a.shape.d_dtype;
  const jit::KernelKey key(jit::kFamilyElementwise, {1 /* gemm scale */, dt, has_c});
  const jit::Kernel* kernel = nullptr;
  DG_TRY(stream.device->kernels->get(
      key, [&](jit::KernelSpec* out) { *out = gemm_scale_kernel_spec(dt, has_c); return DG_SUCCESS; },
      config_of(stream), &kernel));
  if (prepare_only) return DG_SUCCESS;
  void* d = a.d;
  const void* c = a.c;
  long long ldd = a.ldd, ldc = a.ldc;
  int m = static_cast<int>(a.shape.m), n = static_cast<int>(a.shape.n);
  float beta = a.beta;
  void* args[] = {&d, &c, &ldd, &ldc, &m, &n, &beta};
  LaunchConfig lc;
  lc.block[0] = 256;
  lc.grid[0] = static_cast<unsigned>(std::min<int64_t>(cdiv(a.shape.n, 256), 8));
  lc.grid[1] = static_cast<unsigned>(std::min<int64_t>(a.shape.m, 65535));
  lc.pdl = config_of(stream).pdl;
  return launch(stream, *kernel, lc, args);
}

namespace {

// SM90 FP8 WGMMA reads K-major operands only. An FP8 problem's MN-major A or B is read from a K-major
// copy in the workspace (fp8_gemm_workspace's layout; the API checked its size and alignment): points
// `g` at the copies and returns the transposes that make them, to run before the GEMM. While only
// preparing there is no workspace, and the copies' addresses are NULL.
int k_major_copies(GemmArgs* g, TransposeParams copies[2]) {
  GemmShape& s = g->shape;
  if (!is_fp8(s.kind)) return 0;
  const bool copy_a = s.major_a == Major::kMN, copy_b = s.major_b == Major::kMN;
  const Fp8GemmWorkspace w = fp8_gemm_workspace(copy_a, copy_b, s.m, s.n, s.k);
  char* const base = static_cast<char*>(g->workspace);
  int count = 0;
  if (copy_a) {
    copies[count++] = TransposeParams{g->a, g->lda, base, w.ld, s.k, s.m};
    g->a = base;
    g->lda = w.ld;
    s.major_a = Major::kK;
  }
  if (copy_b) {
    void* const dst = base != nullptr ? base + w.offset_b : nullptr;
    copies[count++] = TransposeParams{g->b, g->ldb, dst, w.ld, s.k, s.n};
    g->b = dst;
    g->ldb = w.ld;
    s.major_b = Major::kK;
  }
  return count;
}

CUtensorMapDataType ab_tma_type(GemmKind k) {
  return is_fp8(k) ? CU_TENSOR_MAP_DATA_TYPE_UINT8 : CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
}

// The skinny kernel computes D := alpha * A.B^T + beta * C itself: no pre-pass.
dg_status run_skinny(const dg_stream_s& stream, const GemmArgs& args, const GemmShape& s, int num_sms,
                     const GemmOverride& o, const TransposeParams* copies, int num_copies, bool prepare_only) {
  SkinnyConfig c;
  DG_TRY(cached_config(stream, s, num_sms, o, choose_skinny_config, &c));
  const jit::Kernel* kernel = nullptr;
  auto load_skinny = [&] {
    return stream.device->kernels->get(
        skinny_kernel_key(s, c), [&](jit::KernelSpec* spec) { *spec = skinny_kernel_spec(s, c); return DG_SUCCESS; },
        config_of(stream), &kernel);
  };
  auto load_copies = [&]() -> dg_status {
    for (int i = 0; i < num_copies; ++i) DG_TRY(run_transpose(stream, copies[i], true));
    return DG_SUCCESS;
  };
  if (prepare_only) return num_copies > 0 ? jit::run_concurrently(load_skinny, load_copies) : load_skinny();
  DG_TRY(load_skinny());
  for (int i = 0; i < num_copies; ++i) DG_TRY(run_transpose(stream, copies[i], false));
  GemmArgs a = args;
  a.shape = s;
  return launch_skinny_gemm(stream, a, c, *kernel);
}

}  // namespace

dg_status run_gemm(const dg_stream_s& stream, const GemmArgs& in, const GemmOverride& o, bool prepare_only) {
  GemmArgs args = in;  // k_major_copies points it at operand copies
  const GemmShape& s0 = args.shape;
  if (s0.m == 0 || s0.n == 0) return DG_SUCCESS;
  if (s0.m > INT32_MAX || s0.n > INT32_MAX || s0.k > INT32_MAX)
    return fail(DG_ERROR_UNSUPPORTED, "m, n, k = {}, {}, {}: each must be below 2^31", s0.m, s0.n, s0.k);
  const bool has_c = args.c != nullptr && args.beta != 0.0f;
  if (s0.k == 0) return run_gemm_scale(stream, args, has_c, prepare_only);

  TransposeParams copies[2];
  const int num_copies = k_major_copies(&args, copies);
  GemmShape s = s0;
  s.accumulate = has_c;
  int num_sms = 0;
  DG_TRY(num_sms_of(stream, &num_sms));
  const bool grouped = s.type != GemmType::kNormal;
  bool skinny = false;
  if (!grouped) DG_TRY(use_skinny(s, o, num_sms < stream.device->sm_count || o.num_sms > 0, &skinny));
  if (skinny) return run_skinny(stream, args, s, num_sms, o, copies, num_copies, prepare_only);
  GemmConfig c;
  DG_TRY(cached_config(stream, s, num_sms, o, choose_gemm_config, &c));
  const jit::Kernel* kernel = nullptr;
  // The spec (strings, a template context) is built only on a cache miss: the warm path hashes the key.
  auto load_gemm = [&] {
    return stream.device->kernels->get(
        gemm_kernel_key(s, c), [&](jit::KernelSpec* spec) { *spec = gemm_kernel_spec(s, c); return DG_SUCCESS; },
        config_of(stream), &kernel);
  };
  const bool pre_pass = has_c && !(args.c == args.d && args.beta == 1.0f);
  // A prepare with a C term loads the pre-pass whatever beta it was given; one without C never needs it.
  const bool load_pre_pass = pre_pass || (prepare_only && args.c != nullptr && !grouped);
  auto load_others = [&]() -> dg_status {
    if (load_pre_pass) DG_TRY(run_gemm_scale(stream, args, true, true));
    for (int i = 0; i < num_copies; ++i) DG_TRY(run_transpose(stream, copies[i], true));
    return DG_SUCCESS;
  };
  // A prepare compiles the GEMM and the kernels beside it at once; a call loads them in turn (its
  // warm path starts no thread).
  if (prepare_only)
    return load_pre_pass || num_copies > 0 ? jit::run_concurrently(load_gemm, load_others) : load_gemm();
  DG_TRY(load_gemm());
  DG_TRY(load_others());
  if (pre_pass) DG_TRY(run_gemm_scale(stream, args, true, false));
  for (int i = 0; i < num_copies; ++i) DG_TRY(run_transpose(stream, copies[i], false));

  // cuTensorMapEncodeTiled needs the device's context current on this thread.
  ContextScope scope;
  DG_TRY(scope.enter(*stream.device));
  Sm90GemmParams p;
  std::memset(&p, 0, sizeof(p));
  const int eb = elem_bytes(s.kind);
  const bool mc_a = c.cluster == 2 && c.multicast_a, mc_b = c.cluster == 2 && !c.multicast_a;
  // Grouped operands are one 2-D map over every group: A and D over the G x max_m rows of masked
  // calls, B over its G matrices stacked along N (K-major) or K (MN-major), SFA of masked calls
  // over G x ceil(K/128) K blocks.
  const bool masked = s.type == GemmType::kMGroupedMasked;
  const int64_t rows = masked ? s.m * s.num_groups : s.m;
  const int64_t sf_k = cdiv(s.k, 128);
  if (s.major_a == Major::kK)
    DG_TRY(tma::encode_2d(&p.tma_a, args.a, ab_tma_type(s.kind), eb, s.k, rows, args.lda, c.block_k,
                          mc_a ? c.block_m / 2 : c.block_m, 128, "a"));
  else
    DG_TRY(tma::encode_2d(&p.tma_a, args.a, ab_tma_type(s.kind), eb, rows, s.k, args.lda, 64, c.block_k, 128, "a"));
  if (s.major_b == Major::kK)
    DG_TRY(tma::encode_2d(&p.tma_b, args.b, ab_tma_type(s.kind), eb, s.k, s.n * s.num_groups, args.ldb, c.block_k,
                          mc_b ? c.block_n / 2 : c.block_n, 128, "b"));
  else
    DG_TRY(tma::encode_2d(&p.tma_b, args.b, ab_tma_type(s.kind), eb, s.n, s.k * s.num_groups, args.ldb, 64, c.block_k,
                          128, "b"));
  const int ob = out_bytes(s);
  const uint32_t strip_bytes = static_cast<uint32_t>(c.d_strip * ob);
  DG_TRY(tma::encode_2d(&p.tma_d, args.d, ob == 4 ? CU_TENSOR_MAP_DATA_TYPE_FLOAT32 : CU_TENSOR_MAP_DATA_TYPE_BFLOAT16,
                        ob, s.n, rows, args.ldd, c.d_strip, c.block_m / c.math_wg, strip_bytes >= 32 ? strip_bytes : 0,
                        "d"));
  if (is_fp8(s.kind))
    DG_TRY(tma::encode_2d(&p.tma_sfa, args.sfa, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 4, align_up(s.m, 4),
                          masked ? sf_k * s.num_groups : sf_k, args.ld_sfa, c.block_m, 1, 0, "sfa"));
  if (s.kind == GemmKind::kFp8_1D1D)
    DG_TRY(tma::encode_2d(&p.tma_sfb, args.sfb, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 4, align_up(s.n, 4), sf_k, args.ld_sfb,
                          c.block_n, 1, 0, "sfb"));
  p.sfb = args.sfb;
  p.sfb_stride_n = args.sfb_stride_n;
  p.sfb_stride_k = args.sfb_stride_k;
  p.m = static_cast<uint32_t>(s.m);
  p.n = static_cast<uint32_t>(s.n);
  p.k = static_cast<uint32_t>(s.k);
  p.alpha = args.alpha;
  p.raster_band = static_cast<uint32_t>(c.raster_band);
  p.raster_along_n = c.raster_along_n ? 1u : 0u;
  {
    // The scheduler's units: tiles, or tile pairs along the dimension a 2-CTA cluster shares.
    const bool pair_m = c.cluster == 2 && !c.multicast_a, pair_n = c.cluster == 2 && c.multicast_a;
    p.walk = walk_divisors(cdiv(cdiv(s.m, c.block_m), pair_m ? 2 : 1), cdiv(cdiv(s.n, c.block_n), pair_n ? 2 : 1),
                           c.raster_band, c.raster_along_n);
  }
  p.sfb_rows = static_cast<uint32_t>(cdiv(s.n, 128));
  p.d = args.d;
  p.ldd = args.ldd;
  p.grouped_layout = args.grouped_layout;
  p.num_groups = static_cast<uint32_t>(s.num_groups);
  p.sfb_stride_g = args.sfb_stride_g;
  p.group_rows = static_cast<uint32_t>(s.m);

  LaunchConfig lc;
  lc.grid[0] = static_cast<unsigned>(c.grid);
  lc.block[0] = c.threads;
  lc.smem_bytes = c.smem_bytes + group_table_bytes(s.type, s.num_groups);
  lc.cluster = static_cast<unsigned>(c.split_k > 1 ? c.split_k : c.cluster);
  lc.pdl = config_of(stream).pdl;
  void* kargs[] = {&p};
  return launch(stream, *kernel, lc, kargs);
}

}  // namespace dg::ops
