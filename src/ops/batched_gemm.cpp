// Batched GEMMs: the SM90 GEMM kernel with sched::GemmType::kBatched / kBatchReduced through the
// family's launch path (gemm_launch.h), every operand one 3-D TMA map over its strided batch.
#include "ops/batched_gemm.h"

#include <algorithm>

#include "ops/gemm_launch.h"
#include "ops/gemm_util.h"
#include "runtime/status.h"
#include "runtime/tma.h"

namespace dg::ops {
namespace {

// A batch-reduced split runs at least this many K blocks, so that its partial tile's reduce-add
// into D stays a small share of its work.
constexpr int64_t kMinSplitKBlocks = 4;
// Batch-reduced tiles: 128 x 128 (64 rows for m <= 64, n rounded up to 8 columns below 128).
constexpr int kReduceBlock = 128, kReduceSmallM = 64, kReduceBlockNStep = 8;
// Per-head BF16 products of at most this many rows, over at most kSwapMaxK, run with their operands
// swapped (swap_operands).
constexpr int64_t kSwapMaxRows = 32;
constexpr int64_t kSwapMaxK = 512;  // eight BF16 K blocks
// A WGMMA's rows: the swapped problem's columns per batch (the original n) must fill one.
constexpr int64_t kWgmmaRows = 64;
// A transposed D's TMA box: 64 BF16 columns (128 bytes, the swizzle's width) by the tile's rows.
constexpr uint32_t kTransposedStrip = 64, kTransposedSwizzle = 128;

// Operand maps: K-major (K, MN, batch) with boxes of block_k x rows; MN-major (MN, K, batch) with
// boxes 64 elements wide (the kernel loads an MN-major tile in 64-element chunks).
dg_status encode_operand(tma::Descriptor* out, const BatchedOperand& op, GemmKind kind, int64_t mn, int64_t k,
                         int64_t batches, int block_k, int box_rows, const char* what, tma::L2Fetch fetch) {
  const CUtensorMapDataType dt = is_fp8(kind) ? CU_TENSOR_MAP_DATA_TYPE_UINT8 : CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
  const uint32_t eb = static_cast<uint32_t>(elem_bytes(kind));
  if (op.major == Major::kK)
    return tma::encode_3d(out, op.data, dt, eb, k, mn, op.ld, batches, op.batch_stride, block_k, box_rows,
                          kOperandSwizzle, what, fetch);
  return tma::encode_3d(out, op.data, dt, eb, mn, k, op.ld, batches, op.batch_stride, kMnMajorBox, block_k,
                        kOperandSwizzle, what, fetch);
}

// D in strips of the epilogue (strips narrower than the 32-byte swizzle are stored unswizzled):
// 3-D (N, M, batch) for kBatched, 2-D for kBatchReduced. With swapped operands (s.transpose_d) the
// kernel's M is D's columns and its N D's rows: boxes of 64 columns by the tile's block_n rows.
dg_status encode_d(const BatchedArgs& args, const GemmShape& s, const GemmConfig& c, tma::Descriptor* out) {
  if (s.transpose_d)
    return tma::encode_3d(out, args.d, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, args.m, args.n, args.ldd, args.batches,
                          args.d_batch_stride, kTransposedStrip, static_cast<uint32_t>(c.block_n), kTransposedSwizzle,
                          "d");
  const int ob = out_bytes(s);
  const uint32_t strip_bytes = static_cast<uint32_t>(c.d_strip * ob);
  const CUtensorMapDataType dt = ob == 4 ? CU_TENSOR_MAP_DATA_TYPE_FLOAT32 : CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
  const uint32_t rows = static_cast<uint32_t>(c.block_m / c.math_wg), swizzle = strip_bytes >= 32 ? strip_bytes : 0;
  if (args.reduce)
    return tma::encode_2d(out, args.d, dt, ob, args.n, args.m, args.ldd, c.d_strip, rows, swizzle, "d");
  return tma::encode_3d(out, args.d, dt, ob, args.n, args.m, args.ldd, args.batches, args.d_batch_stride, c.d_strip,
                        rows, swizzle, "d");
}

// kBatched: the walk covers every batch's blocks of rows (a whole number of CTA pairs per batch
// when pairs run along M, so that no pair straddles two batches).
dg_status fill_batched(const BatchedArgs& args, const GemmConfig& c, Sm90GemmParams* p) {
  const bool pair_m = c.cluster == 2 && !c.multicast_a, pair_n = c.cluster == 2 && c.multicast_a;
  const int64_t blocks = align_up(cdiv(args.m, c.block_m), pair_m ? 2 : 1);
  const int64_t rows = args.batches * blocks * c.block_m;
  if (rows > INT32_MAX)
    return fail(DG_ERROR_UNSUPPORTED, "a, d: {} batches of {} rows take {} rows of tiles (expected below 2^31)",
                args.batches, args.m, rows);
  p->m = static_cast<uint32_t>(rows);
  p->walk = walk_divisors(args.batches * blocks / (pair_m ? 2 : 1), cdiv(cdiv(args.n, c.block_n), pair_n ? 2 : 1),
                          c.raster_band, c.raster_along_n);
  p->walk.per_slot = fast_div(static_cast<uint32_t>(blocks));
  p->num_groups = static_cast<uint32_t>(args.batches);
  p->group_rows = static_cast<uint32_t>(args.m);
  return DG_SUCCESS;
}

// kBatchReduced: K is one batch's, the splits fill the SMs (one unit of the walk per split and
// tile unit), and the grid is cut to the units it has.
dg_status fill_reduced(const BatchedArgs& args, const GemmConfig& c, Sm90GemmParams* p, LaunchConfig* lc) {
  const int64_t num_kb = args.batches * cdiv(args.k, c.block_k);
  const int64_t units = p->walk.per_slot.d, clusters = std::max(c.num_sms / c.cluster, 1);
  const int64_t splits = batch_reduced_splits(units, clusters, num_kb);
  if (num_kb * splits > UINT32_MAX)
    return fail(DG_ERROR_UNSUPPORTED, "a, b: {} batches of K = {} take {} K blocks (expected below 2^32 / {} splits)",
                args.batches, args.k, num_kb, splits);
  p->k = static_cast<uint32_t>(args.k);
  p->group_rows = static_cast<uint32_t>(args.batches);
  p->num_groups = static_cast<uint32_t>(splits);
  lc->grid[0] = static_cast<unsigned>(std::min(units * splits, clusters) * c.cluster);
  return DG_SUCCESS;
}

// FP8 1D2D: SFA one 2-D map (rows of the batch's m scales, ceil(k / 128) rows per batch, batch after
// batch), boxes of a tile's rows; SFB read by the kernel's producer at the batch's offset.
dg_status fill_scales(const BatchedArgs& args, const GemmConfig& c, Sm90GemmParams* p) {
  const int64_t sf_k = cdiv(args.k, kScaleBlock);
  DG_TRY(tma::encode_2d(&p->tma_sfa, args.sfa, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 4, args.m, args.batches * sf_k,
                        args.ld_sfa, c.block_m, 1, 0, "sfa"));
  p->sfb = args.sfb;
  p->sfb_stride_g = args.sfb_stride_g;
  p->sfb_stride_n = args.sfb_stride_n;
  p->sfb_stride_k = args.sfb_stride_k;
  p->sfb_rows = static_cast<uint32_t>(cdiv(args.n, kScaleBlock));
  return DG_SUCCESS;
}

dg_status launch_batched(const dg_stream_s& stream, const BatchedArgs& args, const GemmShape& s, const GemmConfig& c,
                         const Kernel& kernel, Sm90GemmParams* p, const LaunchConfig& launch_cfg) {
  const bool mc_a = c.cluster == 2 && c.multicast_a, mc_b = c.cluster == 2 && !c.multicast_a;
  const tma::L2Fetch fetch = operand_l2_fetch(s);
  DG_TRY(encode_operand(&p->tma_a, args.a, args.kind, args.m, args.k, args.batches, c.block_k,
                        mc_a ? c.block_m / 2 : c.block_m, "a", fetch));
  // Every batch's partial last row block: a box of its own rows rounded up to 8 (the kernel's
  // kATailBox; kBatched only), so that TMA reads at most 7 rows past the batch's m.
  const int64_t tail_rows = tail_box_rows(args.m, c.block_m);
  if (!args.reduce && args.a.major == Major::kK && !mc_a && tail_rows != 0)
    DG_TRY(encode_operand(&p->tma_a_tail, args.a, args.kind, args.m, args.k, args.batches, c.block_k,
                          static_cast<int>(tail_rows), "a (last row block)", fetch));
  DG_TRY(encode_operand(&p->tma_b, args.b, args.kind, args.n, args.k, args.batches, c.block_k,
                        mc_b ? c.block_n / 2 : c.block_n, "b", fetch));
  DG_TRY(encode_d(args, s, c, &p->tma_d));
  if (is_fp8(args.kind)) DG_TRY(fill_scales(args, c, p));
  p->alpha = 1.0f;
  p->d = args.d;
  p->ldd = args.ldd;
  LaunchConfig lc = launch_cfg;
  if (args.reduce) DG_TRY(fill_reduced(args, c, p, &lc));
  else DG_TRY(fill_batched(args, c, p));
  void* kargs[] = {p};
  return launch(stream, kernel, lc, kargs);
}

// D over [m, n] for the elementwise passes (D := C, D := 0) of batch z.
GemmArgs d_of_batch(const BatchedArgs& args, int64_t z) {
  GemmArgs g;
  g.shape.m = args.m;
  g.shape.n = args.n;
  g.shape.d_dtype = args.d_dtype;
  g.d = static_cast<char*>(args.d) + z * args.d_batch_stride * (args.d_dtype == DG_DTYPE_FLOAT32 ? 4 : 2);
  g.ldd = args.ldd;
  g.c = args.c;
  g.ldc = args.ldc;
  g.beta = 1.0f;
  return g;
}

// No K to sum over: D = C (reduce with C) or zeros, batch by batch.
dg_status run_empty(const dg_stream_s& stream, const BatchedArgs& args, bool prepare_only) {
  const bool has_c = args.reduce && args.c != nullptr;
  const int64_t count = args.reduce || prepare_only ? 1 : args.batches;
  for (int64_t z = 0; z < count; ++z) DG_TRY(run_gemm_scale(stream, d_of_batch(args, z), has_c, prepare_only));
  return DG_SUCCESS;
}

// Per-head BF16 products of few rows (MLA's weight absorption while decoding: b tokens per head)
// leave a 64-row WGMMA mostly idle. Where a tile has few K blocks its WGMMAs are a visible share of
// the call, after the weights' last stage lands: D_z^T = B_z . A_z^T puts the weights' rows on the
// WGMMA's M and the b rows on its N (8-32), an eighth of the tensor work at b <= 8. On an H200 at h 128
// (K 512 and 128) 1.5-4.9% faster; at h 8 (K 4096 and 1024) 1-3% slower (not isolated), hence
// kSwapMaxK. Only where the heuristic is free to pick the tiles.
bool swap_operands(const BatchedArgs& args, const GemmOverride& o) {
  const bool free = o.block_m == 0 && o.block_n == 0 && o.cluster == 0 && o.multicast_a < 0 && o.math_wg == 0;
  return !args.reduce && args.kind == GemmKind::kBf16 && args.d_dtype == DG_DTYPE_BFLOAT16 && free &&
         args.m <= kSwapMaxRows && args.n >= kWgmmaRows && args.k <= kSwapMaxK;
}

}  // namespace

GemmShape batched_gemm_shape(const BatchedArgs& args) {
  GemmShape s;
  s.kind = args.kind;
  s.m = args.m;
  s.n = args.n;
  s.k = args.reduce ? args.batches * args.k : args.k;
  s.major_a = args.a.major;
  s.major_b = args.b.major;
  s.d_dtype = args.d_dtype;
  s.accumulate = args.reduce;  // the splits add into D
  s.type = args.reduce ? GemmType::kBatchReduced : GemmType::kBatched;
  s.num_groups = args.reduce ? 1 : args.batches;
  return s;
}

GemmOverride batched_gemm_override(const BatchedArgs& args, const GemmOverride& o) {
  GemmOverride over = o;
  over.split_k = 1;  // the batch-reduced splits are the kernel's own; batched tiles run whole
  over.kernel = 0;
  if (args.reduce && o.block_m == 0 && o.block_n == 0) {
    // The heuristic, blind to the splits, would shrink the tiles of a small [m, n] to fill the SMs;
    // the splits fill them, so the tiles stay large.
    over.block_m = args.m > kReduceSmallM ? kReduceBlock : kReduceSmallM;
    over.block_n = static_cast<int>(std::min<int64_t>(align_up(args.n, kReduceBlockNStep), kReduceBlock));
  }
  return over;
}

BatchedPlan plan_batched_gemm(const BatchedArgs& args, const GemmOverride& o) {
  if (!swap_operands(args, o)) return {args, batched_gemm_shape(args), batched_gemm_override(args, o)};
  BatchedPlan plan;
  plan.args = args;
  std::swap(plan.args.a, plan.args.b);  // D and its strides stay the caller's: encode_d maps them transposed
  std::swap(plan.args.m, plan.args.n);
  plan.shape = batched_gemm_shape(plan.args);
  plan.shape.transpose_d = true;
  plan.over = batched_gemm_override(plan.args, o);
  plan.over.block_n = static_cast<int>(align_up(args.m, int64_t{8}));  // a head's rows in one WGMMA N
  plan.over.cluster = 1;
  return plan;
}

int64_t batch_reduced_splits(int64_t units, int64_t clusters, int64_t num_kb) {
  const int64_t fill = std::max<int64_t>(clusters / std::max<int64_t>(units, 1), 1);
  return std::max<int64_t>(std::min(fill, num_kb / kMinSplitKBlocks), 1);
}

dg_status run_batched_gemm(const dg_stream_s& stream, const BatchedArgs& args, const GemmOverride& o,
                           bool prepare_only) {
  int num_sms = 0;
  DG_TRY(num_sms_of(stream, &num_sms));  // the SM cap is checked before any kernel is asked for
  if (args.k == 0 || args.batches == 0) return run_empty(stream, args, prepare_only);
  const BatchedPlan plan = plan_batched_gemm(args, o);
  const GemmShape& s = plan.shape;
  const GemmOverride& over = plan.over;
  // Batch-reduced: D holds C (or zeros) first, unless it already is C; the splits add into it.
  const bool zero = args.reduce && args.c == nullptr, copy_c = args.reduce && args.c != nullptr && args.c != args.d;
  auto prologue = [&](Phase phase) -> dg_status {
    const bool load = phase == Phase::kLoad, both = load && prepare_only && args.reduce;
    if (zero || both) DG_TRY(run_gemm_scale(stream, d_of_batch(args, 0), false, load));
    if (copy_c || both) DG_TRY(run_gemm_scale(stream, d_of_batch(args, 0), true, load));
    return DG_SUCCESS;
  };
  auto launcher = [&](const GemmConfig& c, const Kernel& kernel, Sm90GemmParams* p, const LaunchConfig& lc) {
    return launch_batched(stream, plan.args, s, c, kernel, p, lc);
  };
  return run_sm90_gemm(stream, s, num_sms, over, prepare_only, prologue, launcher);
}

}  // namespace dg::ops
