// Dense and M-grouped GEMMs: the skinny kernel for small problems, else the SM90 GEMM kernel
// through the family's launch path (gemm_launch.h) with one 2-D TMA map per operand.
#include "ops/gemm.h"

#include <cstring>

#include "jit/concurrent.h"
#include "jit/kernel_cache.h"
#include "ops/gemm_config_cache.h"
#include "ops/gemm_launch.h"
#include "ops/gemm_util.h"
#include "ops/skinny_gemm.h"
#include "runtime/device.h"
#include "runtime/status.h"
#include "runtime/tma.h"

namespace dg::ops {
namespace {

CUtensorMapDataType ab_tma_type(GemmKind k) {
  return is_fp8(k) ? CU_TENSOR_MAP_DATA_TYPE_UINT8 : CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
}

// The skinny kernel computes D := alpha * A.B^T + beta * C itself: no pre-pass.
dg_status run_skinny(const dg_stream_s& stream, const GemmArgs& args, int num_sms, const GemmOverride& o,
                     const OperandCopies& copies, bool prepare_only) {
  const GemmShape& s = args.shape;
  SkinnyConfig c;
  DG_TRY(cached_config(stream, s, num_sms, o, choose_skinny_config, &c));
  const Kernel* kernel = nullptr;
  auto load_skinny = [&] {
    return jit::get_kernel(
        stream, skinny_kernel_key(s, c), [&](jit::KernelSpec* spec) { *spec = skinny_kernel_spec(s, c); return DG_SUCCESS; },
        &kernel);
  };
  if (prepare_only) return jit::run_concurrently(load_skinny, [&] { return run_copies(stream, copies, true); });
  DG_TRY(load_skinny());
  DG_TRY(run_copies(stream, copies, true));
  DG_TRY(run_copies(stream, copies, false));
  return launch_skinny_gemm(stream, args, c, *kernel);
}

dg_status encode_d_strips(const GemmShape& s, const GemmConfig& c, void* d, int64_t rows, int64_t ldd,
                          tma::Descriptor* out) {
  const int ob = out_bytes(s);
  // Strips narrower than the 32-byte swizzle are stored unswizzled.
  const uint32_t strip_bytes = static_cast<uint32_t>(c.d_strip * ob);
  const CUtensorMapDataType type = ob == 4   ? CU_TENSOR_MAP_DATA_TYPE_FLOAT32
                                   : ob == 1 ? CU_TENSOR_MAP_DATA_TYPE_UINT8
                                             : CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
  return tma::encode_2d(out, d, type, ob, d_cols(s), rows, ldd, c.d_strip, c.block_m / c.math_wg,
                        strip_bytes >= 32 ? strip_bytes : 0, "d");
}

// B over its G matrices stacked along N (K-major) or K (MN-major).
dg_status encode_b(const GemmArgs& args, const GemmConfig& c, tma::Descriptor* out) {
  const GemmShape& s = args.shape;
  const int eb = elem_bytes(s.kind);
  const CUtensorMapDataType ab = ab_tma_type(s.kind);
  const bool mc_b = c.cluster == 2 && !c.multicast_a;
  const tma::L2Fetch fetch = operand_l2_fetch(s);
  if (s.major_b == Major::kK)
    return tma::encode_2d(out, args.b, ab, eb, s.k, s.n * s.num_groups, args.ldb, c.block_k,
                          mc_b ? c.block_n / 2 : c.block_n, kOperandSwizzle, "b", fetch);
  return tma::encode_2d(out, args.b, ab, eb, s.n, s.k * s.num_groups, args.ldb, kMnMajorBox, c.block_k,
                        kOperandSwizzle, "b", fetch);
}

// Grouped operands are one 2-D map over every group: A and D over the G x max_m rows of masked
// calls, B over its G matrices stacked along N (K-major) or K (MN-major), SFA of masked calls over
// G x ceil(K/128) K blocks.
dg_status encode_maps(const GemmArgs& args, const GemmConfig& c, Sm90GemmParams* p) {
  const GemmShape& s = args.shape;
  const int eb = elem_bytes(s.kind);
  const CUtensorMapDataType ab = ab_tma_type(s.kind);
  const bool mc_a = c.cluster == 2 && c.multicast_a;
  const bool masked = s.type == GemmType::kMGroupedMasked;
  const int64_t rows = masked ? s.m * s.num_groups : s.m;
  const int64_t sf_k = cdiv(s.k, kScaleBlock);
  const tma::L2Fetch fetch = operand_l2_fetch(s);
  if (s.major_a == Major::kK)
    DG_TRY(tma::encode_2d(&p->tma_a, args.a, ab, eb, s.k, rows, args.lda, c.block_k, mc_a ? c.block_m / 2 : c.block_m,
                          kOperandSwizzle, "a", fetch));
  else
    DG_TRY(tma::encode_2d(&p->tma_a, args.a, ab, eb, rows, s.k, args.lda, kMnMajorBox, c.block_k, kOperandSwizzle, "a",
                          fetch));
  // A dense call's partial last row block: a box of its own rows rounded up to 8 (the kernel's
  // kATailBox), so that TMA fills at most 7 rows past M with zeros.
  const int64_t tail_rows = tail_box_rows(s.m, c.block_m);
  if (s.type == GemmType::kNormal && s.major_a == Major::kK && !mc_a && tail_rows != 0)
    DG_TRY(tma::encode_2d(&p->tma_a_tail, args.a, ab, eb, s.k, rows, args.lda, c.block_k, tail_rows, kOperandSwizzle,
                          "a (last row block)", fetch));
  // Masked and psum groups' tiles of at most half their rows: half boxes (the kernel's kAHalfBox).
  const bool table = masked || s.type == GemmType::kMGroupedContiguousPsum;
  if (table && s.major_a == Major::kK && !mc_a && c.block_m >= 64)
    DG_TRY(tma::encode_2d(&p->tma_a_tail, args.a, ab, eb, s.k, rows, args.lda, c.block_k, c.block_m / 2,
                          kOperandSwizzle, "a (half tiles)", fetch));
  DG_TRY(encode_b(args, c, &p->tma_b));
  DG_TRY(encode_d_strips(s, c, args.d, rows, args.ldd, &p->tma_d));
  if (is_fp8(s.kind))
    DG_TRY(tma::encode_2d(&p->tma_sfa, args.sfa, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 4, align_up(s.m, kScaleRowAlign),
                          masked ? sf_k * s.num_groups : sf_k, args.ld_sfa, c.block_m, 1, 0, "sfa"));
  if (s.kind == GemmKind::kFp8_1D1D)
    DG_TRY(tma::encode_2d(&p->tma_sfb, args.sfb, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 4, align_up(s.n, kScaleRowAlign), sf_k,
                          args.ld_sfb, c.block_n, 1, 0, "sfb"));
  return DG_SUCCESS;
}

// The fused epilogue's bias and FP8 D scales. The scale layout has align(rows, 4) rows per 128-column
// group: A's rows, or a masked group's max_m.
void fill_fused(const GemmArgs& args, Sm90GemmParams* p) {
  const GemmShape& s = args.shape;
  FusedParams& f = p->fused;
  f.bias = args.bias;
  f.sf = args.d_sf;
  f.sf_ld = args.d_sf_ld;
  f.sf_batch = args.d_sf_batch;
  f.sf_rows = static_cast<uint32_t>(align_up(s.m, kScaleRowAlign));
  f.sf_groups = static_cast<uint32_t>(cdiv(out_n(s), kScaleBlock));
  f.amax_floor = args.amax_floor;
  f.pow2 = args.pow2_scales ? 1u : 0u;
}

dg_status launch_tiled(const GemmArgs& args, const GemmConfig& c, const Kernel& kernel, Sm90GemmParams* p,
                       const LaunchConfig& lc, const dg_stream_s& stream) {
  const GemmShape& s = args.shape;
  DG_TRY(encode_maps(args, c, p));
  p->alpha = args.alpha;
  p->sfb = args.sfb;
  p->sfb_stride_n = args.sfb_stride_n;
  p->sfb_stride_k = args.sfb_stride_k;
  p->sfb_rows = static_cast<uint32_t>(cdiv(s.n, kScaleBlock));
  p->d = args.d;
  p->ldd = args.ldd;
  p->grouped_layout = args.grouped_layout;
  p->num_groups = static_cast<uint32_t>(s.num_groups);
  p->sfb_stride_g = args.sfb_stride_g;
  p->group_rows = static_cast<uint32_t>(s.m);
  fill_fused(args, p);
  if (c.alt_tiles() == 0) {
    void* kargs[] = {p};
    return launch(stream, kernel, lc, kargs);
  }
  // Count-adaptive: each other tile's B and D maps, and the row-block totals it runs.
  Sm90GemmAltParams alt;
  std::memset(&alt, 0, sizeof(alt));
  for (int i = 0; i < c.alt_tiles(); ++i) {
    const GemmConfig a = alt_config(c, i);
    DG_TRY(encode_b(args, a, &alt.tile[i].tma_b));
    DG_TRY(encode_d_strips(s, a, args.d, s.m * s.num_groups, args.ldd, &alt.tile[i].tma_d));
    std::memcpy(alt.tile[i].rows, c.alts[i].rows, sizeof(alt.tile[i].rows));
  }
  void* kargs[] = {p, &alt};
  return launch(stream, kernel, lc, kargs);
}

}  // namespace

dg_status run_gemm(const dg_stream_s& stream, const GemmArgs& in, const GemmOverride& o, bool prepare_only) {
  GemmArgs args = in;  // the FP8 K-major copies replace MN-major operands
  const bool has_c = args.c != nullptr && args.beta != 0.0f;
  if (args.shape.k == 0) return run_gemm_scale(stream, args, has_c, prepare_only);

  GemmShape& s = args.shape;
  OperandView a{args.a, args.lda, s.major_a}, b{args.b, args.ldb, s.major_b};
  const OperandCopies copies = k_major_copies(s.kind, s.m, s.n, s.k, args.workspace, &a, &b);
  args.a = a.data, args.lda = a.ld, s.major_a = a.major;
  args.b = b.data, args.ldb = b.ld, s.major_b = b.major;
  s.accumulate = has_c;

  int num_sms = 0;
  DG_TRY(num_sms_of(stream, &num_sms));
  const bool grouped = s.type != GemmType::kNormal;
  bool skinny = false;
  if (!grouped) {
    const bool sm_capped = num_sms < stream.device->sm_count || o.num_sms > 0;
    DG_TRY(use_skinny(s, o, sm_capped, sm90_cost_model(stream.device->name), &skinny));
  }
  if (skinny) return run_skinny(stream, args, num_sms, o, copies, prepare_only);

  // With C, D holds beta * C first (unless it already is C) and the kernel adds into it. A prepare
  // with a C term loads that pre-pass whatever beta it was given; one without C never needs it.
  const bool pre_pass = has_c && !(args.c == args.d && args.beta == 1.0f);
  const bool load_pre_pass = pre_pass || (prepare_only && args.c != nullptr && !grouped);
  auto prologue = [&](Phase phase) -> dg_status {
    const bool load = phase == Phase::kLoad;
    if (load ? load_pre_pass : pre_pass) DG_TRY(run_gemm_scale(stream, args, true, load));
    return run_copies(stream, copies, load);
  };
  auto launcher = [&](const GemmConfig& c, const Kernel& kernel, Sm90GemmParams* p, const LaunchConfig& lc) {
    return launch_tiled(args, c, kernel, p, lc, stream);
  };
  return run_sm90_gemm(stream, s, num_sms, o, prepare_only, prologue, launcher);
}

}  // namespace dg::ops
