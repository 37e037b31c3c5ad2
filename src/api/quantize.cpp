// The FP8 quantization entry points: argument checks, then ops::run_quantize.
#include <algorithm>
#include <cmath>

#include "api/gemm_common.h"
#include "ops/layout.h"
#include "ops/quantize.h"
#include "runtime/checked.h"
#include "runtime/options.h"
#include "runtime/status.h"

namespace {

using dg::ops::KGroupedQuantParams;
using dg::ops::QuantGrouping;
using dg::ops::QuantOp;
using dg::ops::QuantParams;
using dg::ops::QuantVariant;

constexpr float kMinAmaxFloor = 1e-30f;  // scale >= 2e-33: its reciprocal stays finite
constexpr float kMaxAmaxFloor = 1e30f;

dg_status read_quant_options(const dg_quant_options* options, dg_quant_options* o) {
  DG_TRY(dg::read_options(options, dg_quant_options DG_QUANT_OPTIONS_INIT, sizeof(dg_quant_options), "options",
                          "DG_QUANT_OPTIONS_INIT", o));
  if (o->pow2_scales != 0 && o->pow2_scales != 1)
    return dg::fail(DG_ERROR_INVALID_ARGUMENT, "options.pow2_scales: {} (expected 0 or 1)", o->pow2_scales);
  if (o->amax_floor == 0.0f) o->amax_floor = dg::ops::kQuantDefaultAmaxFloor;
  if (!(o->amax_floor >= kMinAmaxFloor && o->amax_floor <= kMaxAmaxFloor))
    return dg::fail(DG_ERROR_INVALID_ARGUMENT, "options.amax_floor: {} (expected 0 for the default {}, or {} .. {})",
                    o->amax_floor, dg::ops::kQuantDefaultAmaxFloor, kMinAmaxFloor, kMaxAmaxFloor);
  return DG_SUCCESS;
}

// x (BF16 or FP32) and out (E4M3, x's sizes), `ranks` allowed, stride 1 along the last dimension.
dg_status check_values(const dg_tensor* x, const dg_tensor* out, std::initializer_list<int> ranks, const char* unit) {
  DG_TRY(dg::check_tensor(x, "x"));
  DG_TRY(dg::check_tensor(out, "out"));
  DG_TRY(dg::check_dtype(*x, "x", {DG_DTYPE_BFLOAT16, DG_DTYPE_FLOAT32}));
  DG_TRY(dg::check_dtype(*out, "out", {DG_DTYPE_FLOAT8_E4M3}));
  DG_TRY(dg::check_rank(*x, "x", ranks));
  DG_TRY(dg::check_alignment(*x, "x", dg::dtype_size(x->dtype)));
  if (out->rank != x->rank)
    return dg::fail(DG_ERROR_INVALID_ARGUMENT, "out: rank {} but x has rank {} (expected x's sizes); out {}, x {}",
                    out->rank, x->rank, dg::describe(*out), dg::describe(*x));
  for (int i = 0; i < x->rank; ++i)
    if (out->sizes[i] != x->sizes[i])
      return dg::fail(DG_ERROR_INVALID_ARGUMENT, "out: shape {} differs from x's {} (expected the same sizes)",
                      dg::describe(*out), dg::describe(*x));
  const int last = x->rank - 1;
  for (const auto& [t, name] : {std::pair{x, "x"}, std::pair{out, "out"}})
    if (t->sizes[last] > 1 && t->strides[last] != 1)
      return dg::fail(DG_ERROR_INVALID_ARGUMENT, "{}: stride {} along {} (expected 1); {}", name, t->strides[last], unit,
                      dg::describe(*t));
  // Rows written by different threads must not share bytes.
  int64_t extent = out->sizes[last];
  for (int i = last - 1; i >= 0 && dg::numel(*out) > 0; --i) {
    if (out->sizes[i] > 1 && out->strides[i] < extent)
      return dg::fail(DG_ERROR_INVALID_ARGUMENT, "out: stride {} of dimension {} is below {} (its rows would overlap); {}",
                      out->strides[i], i, extent, dg::describe(*out));
    extent += (out->sizes[i] - 1) * out->strides[i];
  }
  return DG_SUCCESS;
}

// Data pointers of a problem with work to do.
dg_status check_data(const dg_tensor* x, const dg_tensor* out, const dg_tensor* sf) {
  if (x->data == nullptr) return dg::fail(DG_ERROR_INVALID_ARGUMENT, "x: data is NULL");
  if (out->data == nullptr) return dg::fail(DG_ERROR_INVALID_ARGUMENT, "out: data is NULL");
  if (sf->data == nullptr) return dg::fail(DG_ERROR_INVALID_ARGUMENT, "sf: data is NULL");
  return DG_SUCCESS;
}

// Per-token scales: FP32 in the MN-major TMA-aligned layout, or packed UE8M0 in its packed layout,
// for scales [batch?, rows, ceil(cols / 128)]. *packed tells which.
dg_status check_token_sf(const dg_tensor* sf, int rank, const int64_t* sizes, bool* packed, dg::ops::SfLayout* layout) {
  DG_TRY(dg::check_tensor(sf, "sf"));
  DG_TRY(dg::check_dtype(*sf, "sf", {DG_DTYPE_FLOAT32, DG_DTYPE_INT32, DG_DTYPE_UE8M0X4}));
  DG_TRY(dg::check_alignment(*sf, "sf", 16));
  *packed = sf->dtype != DG_DTYPE_FLOAT32;
  const dg::ops::LayoutOp op = *packed ? dg::ops::LayoutOp::kPackUe8m0 : dg::ops::LayoutOp::kTranspose;
  DG_TRY(dg::ops::mn_major_tma_aligned_layout(op, rank, sizes, "x", layout));
  if (!dg::ops::has_layout(*sf, *layout)) {
    dg_tensor_s want = *sf;
    want.rank = rank;
    for (int i = 0; i < rank; ++i) want.sizes[i] = layout->sizes[i], want.strides[i] = layout->strides[i];
    return dg::fail(DG_ERROR_INVALID_ARGUMENT, "sf: has shape {} (expected {}, as {} gives)", dg::describe(*sf),
                    dg::describe(want),
                    *packed ? "dg_get_mn_major_tma_aligned_packed_ue8m0_tensor_layout"
                            : "dg_get_mn_major_tma_aligned_tensor_layout");
  }
  return DG_SUCCESS;
}

struct TokenProblem {
  QuantVariant v;
  QuantParams p{};
  int64_t batch = 1;
  bool empty = false;
};

// The per-token problem of x [(G,) M, K] and its checked scales.
dg_status plan_per_token(const dg_tensor* x, const dg_tensor* out, const dg_tensor* sf, const dg_quant_options* options,
                         std::initializer_list<int> ranks, QuantGrouping grouping, TokenProblem* t) {
  DG_TRY(check_values(x, out, ranks, "K"));
  dg_quant_options o;
  DG_TRY(read_quant_options(options, &o));
  const int r = x->rank;
  const int64_t rows = x->sizes[r - 2], cols = x->sizes[r - 1];
  t->batch = r == 3 ? x->sizes[0] : 1;
  const int64_t sf_sizes[3] = {t->batch, rows, dg::ceil_div(cols, dg::ops::kQuantGroup)};
  bool packed = false;
  dg::ops::SfLayout l;
  DG_TRY(check_token_sf(sf, r, r == 3 ? sf_sizes : sf_sizes + 1, &packed, &l));
  DG_TRY(dg::ops::check_quantize_limits(QuantOp::kPerToken, t->batch, rows, cols, "x"));
  t->empty = t->batch == 0 || rows == 0 || cols == 0;
  const int64_t xs[2] = {x->strides[r - 2], r == 3 ? x->strides[0] : 0};
  const int64_t os[2] = {out->strides[r - 2], r == 3 ? out->strides[0] : 0};
  t->v = {QuantOp::kPerToken, x->dtype == DG_DTYPE_FLOAT32,
          dg::ops::quantize_vec_ok(x->data, dg::dtype_size(x->dtype), xs, 2, out->data, os, 2, cols), grouping, packed};
  QuantParams& p = t->p;
  p.x = x->data, p.out = out->data, p.sf = sf->data;
  p.x_ld = xs[0], p.x_batch = xs[1], p.out_ld = os[0], p.out_batch = os[1];
  p.sf_ld = l.strides[r - 1], p.sf_batch = r == 3 ? l.strides[0] : 0;
  p.rows = static_cast<int32_t>(rows), p.cols = static_cast<int32_t>(cols);
  p.sf_rows = static_cast<int32_t>(l.strides[r - 1]);  // align(rows, 4): padding rows get scale 0
  p.amax_floor = o.amax_floor;
  p.pow2 = o.pow2_scales || packed;
  return DG_SUCCESS;
}

dg_status launch(dg_stream* stream, const TokenProblem& t, const dg_tensor* x, const dg_tensor* out,
                 const dg_tensor* sf) {
  if (t.empty) return DG_SUCCESS;
  DG_TRY(check_data(x, out, sf));
  return dg::ops::run_quantize(*stream, t.v, t.p, t.batch);
}

dg_status quantize_per_block(dg_stream* stream, const dg_tensor* x, const dg_tensor* out, const dg_tensor* sf,
                             const dg_quant_options* options) {
  DG_TRY(dg::check_stream(stream, "stream"));
  DG_TRY(check_values(x, out, {2, 3}, "K"));
  dg_quant_options o;
  DG_TRY(read_quant_options(options, &o));
  const int r = x->rank;
  const int64_t batch = r == 3 ? x->sizes[0] : 1, rows = x->sizes[r - 2], cols = x->sizes[r - 1];
  const int64_t sf_rows = dg::ceil_div(rows, dg::ops::kQuantGroup), sf_cols = dg::ceil_div(cols, dg::ops::kQuantGroup);
  DG_TRY(dg::check_tensor(sf, "sf"));
  DG_TRY(dg::check_dtype(*sf, "sf", {DG_DTYPE_FLOAT32}));
  DG_TRY(dg::check_rank(*sf, "sf", {r}));
  DG_TRY(dg::check_alignment(*sf, "sf", 4));
  if (r == 3) DG_TRY(dg::check_size(*sf, "sf", 0, batch, "G of x"));
  DG_TRY(dg::check_size(*sf, "sf", r - 2, sf_rows, "ceil(N / 128)"));
  DG_TRY(dg::check_size(*sf, "sf", r - 1, sf_cols, "ceil(K / 128)"));
  const bool contiguous = (sf_cols <= 1 || sf->strides[r - 1] == 1) && (sf_rows <= 1 || sf->strides[r - 2] == sf_cols) &&
                          (r == 2 || batch <= 1 || sf->strides[0] == sf_rows * sf_cols);
  if (!contiguous)
    return dg::fail(DG_ERROR_INVALID_ARGUMENT, "sf: must be contiguous row-major (K-major); got {}", dg::describe(*sf));
  DG_TRY(dg::ops::check_quantize_limits(QuantOp::kPerBlock, batch, rows, cols, "x"));
  if (batch == 0 || rows == 0 || cols == 0) return DG_SUCCESS;
  DG_TRY(check_data(x, out, sf));
  const int64_t xs[2] = {x->strides[r - 2], r == 3 ? x->strides[0] : 0};
  const int64_t os[2] = {out->strides[r - 2], r == 3 ? out->strides[0] : 0};
  const QuantVariant v{QuantOp::kPerBlock, x->dtype == DG_DTYPE_FLOAT32,
                       dg::ops::quantize_vec_ok(x->data, dg::dtype_size(x->dtype), xs, 2, out->data, os, 2, cols),
                       QuantGrouping::kNone, false};
  QuantParams p{};
  p.x = x->data, p.out = out->data, p.sf = sf->data;
  p.x_ld = xs[0], p.x_batch = xs[1], p.out_ld = os[0], p.out_batch = os[1];
  p.sf_ld = sf_cols, p.sf_batch = sf_rows * sf_cols;
  p.rows = static_cast<int32_t>(rows), p.cols = static_cast<int32_t>(cols), p.sf_rows = static_cast<int32_t>(sf_rows);
  p.amax_floor = o.amax_floor, p.pow2 = o.pow2_scales;
  return dg::ops::run_quantize(*stream, v, p, batch);
}

dg_status quantize_mn_major(dg_stream* stream, const dg_tensor* x, const dg_tensor* out, const dg_tensor* sf,
                            const dg_quant_options* options) {
  DG_TRY(dg::check_stream(stream, "stream"));
  DG_TRY(check_values(x, out, {2}, "MN"));
  dg_quant_options o;
  DG_TRY(read_quant_options(options, &o));
  const int64_t k = x->sizes[0], mn = x->sizes[1];
  const int64_t sf_sizes[2] = {mn, dg::ceil_div(k, dg::ops::kQuantGroup)};
  DG_TRY(dg::check_tensor(sf, "sf"));
  DG_TRY(dg::check_dtype(*sf, "sf", {DG_DTYPE_FLOAT32}));
  DG_TRY(dg::check_alignment(*sf, "sf", 16));
  dg::ops::SfLayout l;
  DG_TRY(dg::ops::mn_major_tma_aligned_layout(dg::ops::LayoutOp::kTranspose, 2, sf_sizes, "x", &l));
  if (!dg::ops::has_layout(*sf, l))
    return dg::fail(DG_ERROR_INVALID_ARGUMENT,
                    "sf: has shape {} (expected [{}, {}] strides [1, {}], as dg_get_mn_major_tma_aligned_tensor_layout "
                    "gives for [MN, ceil(K / 128)])",
                    dg::describe(*sf), l.sizes[0], l.sizes[1], l.strides[1]);
  DG_TRY(dg::ops::check_quantize_limits(QuantOp::kMnMajor, 1, k, mn, "x"));
  if (k == 0 || mn == 0) return DG_SUCCESS;
  DG_TRY(check_data(x, out, sf));
  const QuantVariant v{QuantOp::kMnMajor, x->dtype == DG_DTYPE_FLOAT32,
                       dg::ops::quantize_vec_ok(x->data, dg::dtype_size(x->dtype), x->strides, 1, out->data,
                                                out->strides, 1, mn),
                       QuantGrouping::kNone, false};
  QuantParams p{};
  p.x = x->data, p.out = out->data, p.sf = sf->data;
  p.x_ld = x->strides[0], p.out_ld = out->strides[0];
  p.sf_ld = l.strides[1];
  p.rows = static_cast<int32_t>(k), p.cols = static_cast<int32_t>(mn), p.sf_rows = static_cast<int32_t>(sf_sizes[1]);
  p.amax_floor = o.amax_floor, p.pow2 = o.pow2_scales;
  return dg::ops::run_quantize(*stream, v, p, 1);
}

// K-grouped: the host counts, their sum (x's rows) and the padded output's 128-row blocks.
dg_status check_host_ks(const int64_t* ks, int64_t num_groups, int64_t* rows, int64_t* blocks) {
  int64_t sum = 0, nb = 0;
  for (int64_t g = 0; g < num_groups; ++g) {
    if (ks[g] < 0 || ks[g] > INT32_MAX)
      return dg::fail(DG_ERROR_INVALID_ARGUMENT, "ks[{}]: {} (expected 0 .. 2^31 - 1 rows)", g, ks[g]);
    sum += ks[g];
    nb += dg::ceil_div(ks[g], int64_t{dg::ops::kQuantGroup});
    if (nb * dg::ops::kQuantGroup > INT32_MAX)
      return dg::fail(DG_ERROR_UNSUPPORTED, "ks: the first {} groups, each padded to a multiple of 128, hold {} rows "
                      "(expected below 2^31)", g + 1, nb * dg::ops::kQuantGroup);
  }
  *rows = sum, *blocks = nb;
  return DG_SUCCESS;
}

// K-grouped out: [rows, MN] stride 1 along MN (MN-major), or rank 1 [MN * rows] contiguous and
// 16-byte aligned (K-major per group). *rows: its rows; `want_rows` >= 0: the rows it must have.
dg_status check_k_grouped_out(const dg_tensor* out, int64_t mn, int64_t want_rows, int64_t* rows) {
  DG_TRY(dg::check_tensor(out, "out"));
  DG_TRY(dg::check_dtype(*out, "out", {DG_DTYPE_FLOAT8_E4M3}));
  DG_TRY(dg::check_rank(*out, "out", {1, 2}));
  const char* want = "the padded rows sum(align(ks[g], 128))";
  if (out->rank == 2) {
    if (out->sizes[1] != mn || (want_rows >= 0 && out->sizes[0] != want_rows))
      return dg::fail(DG_ERROR_INVALID_ARGUMENT, "out: shape {} (expected [{}, MN = {}])", dg::describe(*out),
                      want_rows >= 0 ? fmt::format("{} = {}", want, want_rows) : "rows", mn);
    *rows = out->sizes[0];
    if (mn > 1 && out->strides[1] != 1)
      return dg::fail(DG_ERROR_INVALID_ARGUMENT, "out: stride {} along MN (expected 1); {}", out->strides[1],
                      dg::describe(*out));
    if (*rows > 1 && mn > 0 && out->strides[0] < mn)
      return dg::fail(DG_ERROR_INVALID_ARGUMENT, "out: row stride {} is below MN = {} (its rows would overlap); {}",
                      out->strides[0], mn, dg::describe(*out));
  } else {
    const int64_t elems = out->sizes[0];
    int64_t want_elems = 0;
    if (want_rows >= 0 && (__builtin_mul_overflow(want_rows, mn, &want_elems) || elems != want_elems))
      return dg::fail(DG_ERROR_INVALID_ARGUMENT, "out: {} elements (expected MN x {} = {} x {}); {}", elems, want, mn,
                      want_rows, dg::describe(*out));
    if (want_rows < 0 && (mn == 0 ? elems != 0 : elems % mn != 0))
      return dg::fail(DG_ERROR_INVALID_ARGUMENT, "out: {} elements (expected a multiple of MN = {}); {}", elems, mn,
                      dg::describe(*out));
    *rows = want_rows >= 0 ? want_rows : mn == 0 ? 0 : elems / mn;
    if (elems > 1 && out->strides[0] != 1)
      return dg::fail(DG_ERROR_INVALID_ARGUMENT, "out: must be contiguous (stride 1); got {}", dg::describe(*out));
    DG_TRY(dg::check_alignment(*out, "out", 16));
  }
  if (want_rows < 0 && *rows % dg::ops::kQuantGroup != 0)
    return dg::fail(DG_ERROR_INVALID_ARGUMENT, "out: {} rows (expected a multiple of 128: with device counts out "
                    "holds whole 128-row blocks); {}", *rows, dg::describe(*out));
  return DG_SUCCESS;
}

// K-grouped x: [rows, MN] BF16 or FP32, stride 1 along MN, rows below 2^31.
dg_status check_k_grouped_x(const dg_tensor* x) {
  DG_TRY(dg::check_tensor(x, "x"));
  DG_TRY(dg::check_dtype(*x, "x", {DG_DTYPE_BFLOAT16, DG_DTYPE_FLOAT32}));
  DG_TRY(dg::check_rank(*x, "x", {2}));
  DG_TRY(dg::check_alignment(*x, "x", dg::dtype_size(x->dtype)));
  if (x->sizes[1] > 1 && x->strides[1] != 1)
    return dg::fail(DG_ERROR_INVALID_ARGUMENT, "x: stride {} along MN (expected 1); {}", x->strides[1], dg::describe(*x));
  if (x->sizes[0] > INT32_MAX)
    return dg::fail(DG_ERROR_UNSUPPORTED, "x: {} rows (expected below 2^31)", x->sizes[0]);
  return DG_SUCCESS;
}

// Host counts: launches of up to kQuantMaxHostGroups groups, each with its pointers offset to its
// first group's rows. Device counts: one launch that reads them.
dg_status launch_k_grouped(dg_stream* stream, const QuantVariant& v, KGroupedQuantParams p, const int64_t* ks,
                           int64_t num_groups, size_t x_esize) {
  if (ks == nullptr) return dg::ops::run_quantize_k_grouped(*stream, v, p);
  const int64_t out_ld = v.transpose ? p.mn : p.out_ld;  // bytes per padded row
  int64_t x_row = 0, blk = 0;
  for (int64_t g0 = 0; g0 < num_groups; g0 += dg::ops::kQuantMaxHostGroups) {
    const int64_t n = std::min<int64_t>(num_groups - g0, dg::ops::kQuantMaxHostGroups);
    KGroupedQuantParams c = p;
    c.x = static_cast<const char*>(p.x) + x_row * p.x_ld * static_cast<int64_t>(x_esize);
    c.out = static_cast<uint8_t*>(p.out) + blk * dg::ops::kQuantGroup * out_ld;
    c.sf = p.sf + blk * p.sf_ld;
    int64_t rows = 0, blocks = 0;
    for (int64_t i = 0; i < n; ++i) {
      c.ks[i] = static_cast<int32_t>(ks[g0 + i]);
      rows += ks[g0 + i];
      blocks += dg::ceil_div(ks[g0 + i], int64_t{dg::ops::kQuantGroup});
    }
    c.num_groups = static_cast<int32_t>(n), c.x_rows = static_cast<int32_t>(rows);
    c.out_blocks = static_cast<int32_t>(blocks);
    if (blocks > 0) DG_TRY(dg::ops::run_quantize_k_grouped(*stream, v, c));
    x_row += rows, blk += blocks;
  }
  return DG_SUCCESS;
}

dg_status quantize_k_grouped(dg_stream* stream, const dg_tensor* x, const dg_tensor* out, const dg_tensor* sf,
                             const int64_t* ks, int64_t num_groups, const dg_tensor* ks_tensor,
                             const dg_quant_options* options) {
  DG_TRY(dg::check_stream(stream, "stream"));
  DG_TRY(check_k_grouped_x(x));
  if (ks_tensor != nullptr) DG_TRY(dg::check_tensor(ks_tensor, "ks_tensor"));
  dg_quant_options o;
  DG_TRY(read_quant_options(options, &o));
  if (num_groups < 1 || num_groups > INT32_MAX)
    return dg::fail(DG_ERROR_INVALID_ARGUMENT, "num_groups: {} (expected 1 .. 2^31 - 1)", num_groups);
  if (ks == nullptr && ks_tensor == nullptr)
    return dg::fail(DG_ERROR_INVALID_ARGUMENT, "ks: NULL and ks_tensor NULL (expected the num_groups = {} host counts "
                    "ks, or the INT32 [num_groups] device counts ks_tensor)", num_groups);
  if (ks_tensor != nullptr)
    DG_TRY(dg::api::check_int_vector(*ks_tensor, "ks_tensor", num_groups, "num_groups, one K per group"));
  const int64_t x_rows = x->sizes[0], mn = x->sizes[1];
  int64_t sum = 0, blocks = -1;
  if (ks != nullptr) {
    DG_TRY(check_host_ks(ks, num_groups, &sum, &blocks));
    if (sum != x_rows)
      return dg::fail(DG_ERROR_INVALID_ARGUMENT, "x: {} rows but the counts ks sum to {} (expected equal); {}", x_rows,
                      sum, dg::describe(*x));
  }
  int64_t out_rows = 0;
  DG_TRY(check_k_grouped_out(out, mn, blocks >= 0 ? blocks * dg::ops::kQuantGroup : -1, &out_rows));
  DG_TRY(dg::check_tensor(sf, "sf"));
  DG_TRY(dg::check_dtype(*sf, "sf", {DG_DTYPE_FLOAT32}));
  DG_TRY(dg::check_alignment(*sf, "sf", 16));
  const int64_t sf_sizes[2] = {mn, out_rows / dg::ops::kQuantGroup};
  dg::ops::SfLayout l;
  DG_TRY(dg::ops::mn_major_tma_aligned_layout(dg::ops::LayoutOp::kTranspose, 2, sf_sizes, "x", &l));
  if (!dg::ops::has_layout(*sf, l))
    return dg::fail(DG_ERROR_INVALID_ARGUMENT, "sf: has shape {} (expected [MN, out rows / 128] = [{}, {}] strides "
                    "[1, {}], as dg_get_mn_major_tma_aligned_tensor_layout gives)", dg::describe(*sf), l.sizes[0],
                    l.sizes[1], l.strides[1]);
  DG_TRY(dg::ops::check_quantize_limits(QuantOp::kKGrouped, 1, out_rows, mn, "out"));
  if (mn == 0 || out_rows == 0) return DG_SUCCESS;
  if (x->data == nullptr && x_rows > 0) return dg::fail(DG_ERROR_INVALID_ARGUMENT, "x: data is NULL");
  if (out->data == nullptr) return dg::fail(DG_ERROR_INVALID_ARGUMENT, "out: data is NULL");
  if (sf->data == nullptr) return dg::fail(DG_ERROR_INVALID_ARGUMENT, "sf: data is NULL");
  if (ks == nullptr && ks_tensor->data == nullptr) return dg::fail(DG_ERROR_INVALID_ARGUMENT, "ks_tensor: data is NULL");
  QuantVariant v{QuantOp::kKGrouped, x->dtype == DG_DTYPE_FLOAT32, false, QuantGrouping::kNone, false, out->rank == 1};
  const int64_t out_ld = out->rank == 2 ? (out_rows > 1 ? out->strides[0] : mn) : mn;
  const int64_t x_ld = x_rows > 1 ? x->strides[0] : mn;
  v.vec = dg::ops::quantize_vec_ok(x->data, dg::dtype_size(x->dtype), &x_ld, 1, out->data, &out_ld, 1, mn);
  KGroupedQuantParams p{};
  p.x = x->data, p.out = out->data, p.sf = static_cast<float*>(sf->data);
  p.ks_dev = ks == nullptr ? static_cast<const int32_t*>(ks_tensor->data) : nullptr;
  p.x_ld = x_ld, p.out_ld = out_ld, p.sf_ld = l.strides[1];
  p.x_rows = static_cast<int32_t>(x_rows), p.out_blocks = static_cast<int32_t>(out_rows / dg::ops::kQuantGroup);
  p.mn = static_cast<int32_t>(mn), p.num_groups = static_cast<int32_t>(num_groups);
  p.amax_floor = o.amax_floor, p.pow2 = o.pow2_scales;
  return launch_k_grouped(stream, v, p, ks, num_groups, dg::dtype_size(x->dtype));
}

}  // namespace

extern "C" {

DG_API dg_status dg_quantize_fp8_per_token(dg_stream* stream, const dg_tensor* x, const dg_tensor* out,
                                           const dg_tensor* sf, const dg_quant_options* options) {
  DG_API_GUARD({
    DG_TRY(dg::check_stream(stream, "stream"));
    TokenProblem t;
    DG_TRY(plan_per_token(x, out, sf, options, {2, 3}, QuantGrouping::kNone, &t));
    return launch(stream, t, x, out, sf);
  })
}

DG_API dg_status dg_quantize_fp8_per_token_contiguous(dg_stream* stream, const dg_tensor* x, const dg_tensor* out,
                                                      const dg_tensor* sf, const dg_tensor* grouped_layout,
                                                      int32_t layout, int64_t num_groups,
                                                      const dg_quant_options* options) {
  DG_API_GUARD({
    DG_TRY(dg::check_stream(stream, "stream"));
    if (layout != DG_M_GROUPED_LAYOUT_INDICES && layout != DG_M_GROUPED_LAYOUT_PSUM)
      return dg::fail(DG_ERROR_INVALID_ARGUMENT,
                      "layout: {} (expected DG_M_GROUPED_LAYOUT_INDICES (0) or DG_M_GROUPED_LAYOUT_PSUM (1))", layout);
    if (num_groups < 1 || num_groups > INT32_MAX)
      return dg::fail(DG_ERROR_INVALID_ARGUMENT, "num_groups: {} (expected 1 .. 2^31 - 1)", num_groups);
    const bool psum = layout == DG_M_GROUPED_LAYOUT_PSUM;
    TokenProblem t;
    DG_TRY(plan_per_token(x, out, sf, options, {2}, psum ? QuantGrouping::kPsum : QuantGrouping::kIndices, &t));
    DG_TRY(dg::check_tensor(grouped_layout, "grouped_layout"));
    DG_TRY(dg::api::check_int_vector(*grouped_layout, "grouped_layout", psum ? num_groups : x->sizes[0],
                                     psum ? "num_groups, one end row per group" : "M, one group per row of x"));
    t.p.groups = static_cast<const int32_t*>(grouped_layout->data);
    t.p.num_groups = static_cast<int32_t>(num_groups);
    return launch(stream, t, x, out, sf);
  })
}

DG_API dg_status dg_quantize_fp8_per_token_masked(dg_stream* stream, const dg_tensor* x, const dg_tensor* out,
                                                  const dg_tensor* sf, const dg_tensor* masked_m,
                                                  const dg_quant_options* options) {
  DG_API_GUARD({
    DG_TRY(dg::check_stream(stream, "stream"));
    TokenProblem t;
    DG_TRY(plan_per_token(x, out, sf, options, {3}, QuantGrouping::kMasked, &t));
    DG_TRY(dg::check_tensor(masked_m, "masked_m"));
    DG_TRY(dg::api::check_int_vector(*masked_m, "masked_m", x->sizes[0], "G, one row count per group"));
    if (x->sizes[0] > dg::ops::kQuantMaxMaskedGroups)
      return dg::fail(DG_ERROR_UNSUPPORTED, "masked_m: {} groups (the masked layout takes at most {}, as the masked "
                      "GEMMs)", x->sizes[0], dg::ops::kQuantMaxMaskedGroups);
    t.p.groups = static_cast<const int32_t*>(masked_m->data);
    t.p.num_groups = static_cast<int32_t>(x->sizes[0]);
    return launch(stream, t, x, out, sf);
  })
}

DG_API dg_status dg_quantize_fp8_per_block(dg_stream* stream, const dg_tensor* x, const dg_tensor* out,
                                           const dg_tensor* sf, const dg_quant_options* options) {
  DG_API_GUARD({ return quantize_per_block(stream, x, out, sf, options); })
}

DG_API dg_status dg_quantize_fp8_mn_major(dg_stream* stream, const dg_tensor* x, const dg_tensor* out,
                                          const dg_tensor* sf, const dg_quant_options* options) {
  DG_API_GUARD({ return quantize_mn_major(stream, x, out, sf, options); })
}

DG_API dg_status dg_quantize_fp8_k_grouped(dg_stream* stream, const dg_tensor* x, const dg_tensor* out,
                                           const dg_tensor* sf, const int64_t* ks, int64_t num_groups,
                                           const dg_tensor* ks_tensor, const dg_quant_options* options) {
  DG_API_GUARD({ return quantize_k_grouped(stream, x, out, sf, ks, num_groups, ks_tensor, options); })
}

}  // extern "C"
