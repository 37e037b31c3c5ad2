#include "api/gemm_epilogue.h"

#include "ops/gemm_util.h"
#include "ops/layout.h"
#include "ops/quantize.h"
#include "runtime/checked.h"
#include "runtime/options.h"
#include "runtime/status.h"
#include "runtime/stream.h"

namespace dg::api {
namespace {

using ops::GemmType;

constexpr float kMinAmaxFloor = 1e-30f;  // as the quantization calls: 1 / scale stays finite
constexpr float kMaxAmaxFloor = 1e30f;
constexpr int64_t kSwiGluTile = 2 * ops::kSwiGluBlock;

// What the call must not combine with a fused epilogue; nullptr when nothing is in the way.
const char* incompatible(const dg_gemm_options& o, const ops::GemmShape& s, bool has_c) {
  if (has_c) return "c: a C term";
  if (s.kind == ops::GemmKind::kFp8_1D1D) return "options.recipe: the 1D1D recipe";
  if (s.type == GemmType::kKGrouped) return "K-grouped GEMMs";
  if (o.split_k > 1) return "options.split_k > 1";
  if (o.kernel == DG_GEMM_KERNEL_SKINNY) return "options.kernel DG_GEMM_KERNEL_SKINNY";
  if (s.k == 0) return "K = 0";
  return nullptr;
}

// need_data: false for a prepare call, which reads the descriptors but never their memory.
dg_status check_bias(const dg_tensor* bias, const ops::GemmShape& s, bool need_data, ops::GemmArgs* args) {
  DG_TRY(check_tensor(bias, "options.epilogue.bias"));
  if (s.type != GemmType::kNormal)
    return fail(DG_ERROR_UNSUPPORTED, "options.epilogue.bias: a bias is fused in dense GEMMs only (this call is M-grouped)");
  DG_TRY(check_rank(*bias, "options.epilogue.bias", {1}));
  DG_TRY(check_dtype(*bias, "options.epilogue.bias", {DG_DTYPE_BFLOAT16, DG_DTYPE_FLOAT32}));
  if (bias->sizes[0] != s.n || (s.n > 1 && bias->strides[0] != 1))
    return fail(DG_ERROR_INVALID_ARGUMENT, "options.epilogue.bias: shape {} (expected [N = {}] with stride 1)",
                describe(*bias), s.n);
  if (need_data && (bias->data == nullptr || reinterpret_cast<uintptr_t>(bias->data) % 8 != 0))
    return fail(DG_ERROR_INVALID_ARGUMENT, "options.epilogue.bias: data pointer {} is NULL or not 8-byte aligned",
                bias->data);
  args->bias = bias->data;
  args->shape.epilogue.bias = bias->dtype == DG_DTYPE_FLOAT32 ? ops::BiasType::kFp32 : ops::BiasType::kBf16;
  return DG_SUCCESS;
}

// d's scales: [(G,) rows, ceil(cols / 128)] as dg_quantize_fp8_per_token takes them for D.
dg_status check_d_scales(const dg_tensor* sf, const ops::GemmShape& s, bool need_data, ops::GemmArgs* args) {
  const char* arg = "options.epilogue.d_scales";
  if (sf == nullptr)
    return fail(DG_ERROR_INVALID_ARGUMENT, "{}: NULL, but d is FLOAT8_E4M3 (expected its per-(row, 128 columns) scales)",
                arg);
  DG_TRY(check_tensor(sf, arg));
  DG_TRY(check_dtype(*sf, arg, {DG_DTYPE_FLOAT32, DG_DTYPE_INT32, DG_DTYPE_UE8M0X4}));
  if (need_data) DG_TRY(check_alignment(*sf, arg, 16));
  const bool masked = s.type == GemmType::kMGroupedMasked, packed = sf->dtype != DG_DTYPE_FLOAT32;
  const int rank = masked ? 3 : 2;
  const int64_t sizes[3] = {s.num_groups, s.m, ceil_div(ops::out_n(s), ops::kScaleBlock)};
  const int64_t* logical = masked ? sizes : sizes + 1;
  ops::SfLayout layout;
  DG_TRY(ops::mn_major_tma_aligned_layout(packed ? ops::LayoutOp::kPackUe8m0 : ops::LayoutOp::kTranspose, rank, logical,
                                          "d", &layout));
  if (!ops::has_layout(*sf, layout)) {
    dg_tensor_s want = *sf;
    want.rank = rank;
    for (int i = 0; i < rank; ++i) want.sizes[i] = layout.sizes[i], want.strides[i] = layout.strides[i];
    return fail(DG_ERROR_INVALID_ARGUMENT, "{}: has shape {} (expected {}, as {} gives for d)", arg, describe(*sf),
                describe(want),
                packed ? "dg_get_mn_major_tma_aligned_packed_ue8m0_tensor_layout" : "dg_get_mn_major_tma_aligned_tensor_layout");
  }
  if (need_data && sf->data == nullptr) return fail(DG_ERROR_INVALID_ARGUMENT, "{}: data is NULL", arg);
  args->d_sf = sf->data;
  args->d_sf_ld = layout.strides[rank - 1];
  args->d_sf_batch = masked ? layout.strides[0] : 0;
  args->shape.epilogue.scales = packed ? ops::DScales::kPackedUe8m0 : ops::DScales::kFp32;
  return DG_SUCCESS;
}

}  // namespace

dg_status read_epilogue(const dg_gemm_options& o, Epilogue* out) {
  *out = Epilogue{};
  if (o.epilogue == nullptr) return DG_SUCCESS;
  DG_TRY(read_options(o.epilogue, dg_gemm_epilogue DG_GEMM_EPILOGUE_INIT, sizeof(dg_gemm_epilogue), "options.epilogue",
                      "DG_GEMM_EPILOGUE_INIT", &out->e));
  dg_gemm_epilogue& e = out->e;
  if (e.activation != DG_ACTIVATION_NONE && e.activation != DG_ACTIVATION_SWIGLU)
    return fail(DG_ERROR_INVALID_ARGUMENT,
                "options.epilogue.activation: {} (expected DG_ACTIVATION_NONE (0) or DG_ACTIVATION_SWIGLU (1))",
                e.activation);
  if (e.pow2_scales != 0 && e.pow2_scales != 1)
    return fail(DG_ERROR_INVALID_ARGUMENT, "options.epilogue.pow2_scales: {} (expected 0 or 1)", e.pow2_scales);
  if (e.amax_floor == 0.0f) e.amax_floor = ops::kQuantDefaultAmaxFloor;
  if (!(e.amax_floor >= kMinAmaxFloor && e.amax_floor <= kMaxAmaxFloor))
    return fail(DG_ERROR_INVALID_ARGUMENT, "options.epilogue.amax_floor: {} (expected 0 for the default {}, or {} .. {})",
                e.amax_floor, ops::kQuantDefaultAmaxFloor, kMinAmaxFloor, kMaxAmaxFloor);
  out->given = true;
  return DG_SUCCESS;
}

dg_status check_d_dtype(const Epilogue& e, const dg_tensor_s& d, bool fp32_allowed) {
  if (d.dtype == DG_DTYPE_FLOAT8_E4M3 && !e.given)
    return fail(DG_ERROR_INVALID_ARGUMENT,
                "d: FLOAT8_E4M3 needs a fused epilogue with its scales (options.epilogue.d_scales); got {}", describe(d));
  if (fp32_allowed) return check_dtype(d, "d", {DG_DTYPE_BFLOAT16, DG_DTYPE_FLOAT32, DG_DTYPE_FLOAT8_E4M3});
  return check_dtype(d, "d", {DG_DTYPE_BFLOAT16, DG_DTYPE_FLOAT8_E4M3});
}

dg_status epilogue_out_cols(const Epilogue& e, int64_t n, int64_t* cols) {
  *cols = n;
  if (!e.given || e.e.activation != DG_ACTIVATION_SWIGLU) return DG_SUCCESS;
  if (n % kSwiGluTile != 0)
    return fail(DG_ERROR_UNSUPPORTED,
                "b: N = {} with SwiGLU: N must be a multiple of {} (blocks of 128 gate and 128 up rows, "
                "dg_swiglu_interleave)",
                n, kSwiGluTile);
  *cols = n / 2;
  return DG_SUCCESS;
}

dg_status apply_epilogue(const Epilogue& e, const dg_gemm_options& o, const dg_tensor_s& d, bool has_c,
                         ops::GemmArgs* args) {
  return apply_epilogue(e, o, d.dtype, has_c, true, args);
}

dg_status apply_epilogue(const Epilogue& e, const dg_gemm_options& o, dg_dtype d_dtype, bool has_c, bool need_data,
                         ops::GemmArgs* args) {
  if (!e.given) return DG_SUCCESS;
  ops::GemmShape& s = args->shape;
  if (const char* what = incompatible(o, s, has_c))
    return fail(DG_ERROR_UNSUPPORTED, "options.epilogue: fused epilogues do not run with {}", what);
  s.epilogue.act = e.e.activation == DG_ACTIVATION_SWIGLU ? ops::Activation::kSwiGlu : ops::Activation::kNone;
  if (e.e.bias != nullptr) DG_TRY(check_bias(e.e.bias, s, need_data, args));
  if (d_dtype == DG_DTYPE_FLOAT8_E4M3) {
    DG_TRY(check_d_scales(e.e.d_scales, s, need_data, args));
  } else if (e.e.d_scales != nullptr) {
    return fail(DG_ERROR_INVALID_ARGUMENT, "options.epilogue.d_scales: given, but d is {} (scales go with a FLOAT8_E4M3 d)",
                dtype_name(d_dtype));
  }
  args->amax_floor = e.e.amax_floor;
  args->pow2_scales = e.e.pow2_scales != 0;
  return DG_SUCCESS;
}

}  // namespace dg::api

namespace {

// src and dst of dg_swiglu_interleave: the same [(G,) 2I, C] shape and dtype, packed rows.
dg_status check_interleave_tensor(const dg_tensor_s& t, const dg_tensor_s& src, const char* arg) {
  DG_TRY(dg::check_rank(t, arg, {2, 3}));
  if (t.rank != src.rank || t.dtype != src.dtype)
    return dg::fail(DG_ERROR_INVALID_ARGUMENT, "{}: {} (expected src's rank and dtype: {})", arg, dg::describe(t),
                    dg::describe(src));
  for (int i = 0; i < t.rank; ++i)
    if (t.sizes[i] != src.sizes[i])
      return dg::fail(DG_ERROR_INVALID_ARGUMENT, "{}: shape {} (expected src's sizes, {})", arg, dg::describe(t),
                      dg::describe(src));
  const int r = t.rank;
  const int64_t rows = t.sizes[r - 2], cols = t.sizes[r - 1];
  if ((cols > 1 && t.strides[r - 1] != 1) || (rows > 1 && t.strides[r - 2] != cols))
    return dg::fail(DG_ERROR_INVALID_ARGUMENT, "{}: rows must be packed (strides (..., C = {}, 1)); got {}", arg, cols,
                    dg::describe(t));
  if (dg::numel(t) > 0 && t.data == nullptr) return dg::fail(DG_ERROR_INVALID_ARGUMENT, "{}: data is NULL", arg);
  return DG_SUCCESS;
}

dg_status swiglu_interleave(dg_stream* stream, const dg_tensor* src, const dg_tensor* dst, int64_t block) {
  DG_TRY(dg::check_stream(stream, "stream"));
  DG_TRY(dg::check_tensor(src, "src"));
  DG_TRY(dg::check_tensor(dst, "dst"));
  DG_TRY(check_interleave_tensor(*src, *src, "src"));
  DG_TRY(check_interleave_tensor(*dst, *src, "dst"));
  DG_TRY(dg::check_no_overlap(*dst, "dst"));
  const int r = src->rank;
  const int64_t rows = src->sizes[r - 2];
  if (block < 1) return dg::fail(DG_ERROR_INVALID_ARGUMENT, "block: {} (expected 128 for weights, 1 for their scales)", block);
  if (rows % 2 != 0)
    return dg::fail(DG_ERROR_INVALID_ARGUMENT, "src: {} rows (expected 2I: I gate rows, then I up rows); shape {}", rows,
                    dg::describe(*src));
  if ((rows / 2) % block != 0)
    return dg::fail(DG_ERROR_INVALID_ARGUMENT, "block: {} does not divide I = {} (src has 2I rows: gate, then up)", block,
                    rows / 2);
  if (dg::numel(*src) == 0) return DG_SUCCESS;
  const auto lo = [](const dg_tensor_s& t) { return reinterpret_cast<uintptr_t>(t.data); };
  if (lo(*src) < lo(*dst) + dg::extent_bytes(*dst) && lo(*dst) < lo(*src) + dg::extent_bytes(*src))
    return dg::fail(DG_ERROR_INVALID_ARGUMENT, "dst: overlaps src (expected separate memory)");
  const int64_t eb = static_cast<int64_t>(dg::dtype_size(src->dtype));
  dg::ops::RowBlockInterleave job;
  job.src = src->data;
  job.dst = dst->data;
  job.groups = r == 3 ? src->sizes[0] : 1;
  job.half = rows / 2;
  job.block = block;
  DG_TRY(dg::checked_mul(src->sizes[r - 1], eb, &job.row_bytes, "src"));
  if (r == 3) {
    DG_TRY(dg::checked_mul(src->strides[0], eb, &job.src_group_stride, "src"));
    DG_TRY(dg::checked_mul(dst->strides[0], eb, &job.dst_group_stride, "dst"));
  }
  return dg::ops::run_row_block_interleave(*stream, job);
}

}  // namespace

extern "C" {

DG_API dg_status dg_swiglu_interleave(dg_stream* stream, const dg_tensor* src, const dg_tensor* dst, int64_t block) {
  DG_API_GUARD(return swiglu_interleave(stream, src, dst, block);)
}

}  // extern "C"
