// dg_m_grouped_*: argument validation of the M-grouped GEMMs (contiguous and masked), then
// ops/gemm with a grouped problem.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <utility>

#include "api/gemm_common.h"
#include "api/gemm_epilogue.h"
#include "api/matrix_view.h"
#include "dg.h"
#include "ops/gemm.h"
#include "ops/gemm_util.h"
#include "runtime/device.h"
#include "runtime/status.h"
#include "runtime/stream.h"
#include "runtime/tensor.h"

namespace {

using dg::api::View;
using dg::api::check_int_vector;
using dg::ops::GemmKind;
using dg::ops::GemmType;
using dg::ops::Major;

// The options a grouped call honours are alpha and the tile overrides; the rest describe features
// the grouped kernels do not have, so a value other than the default is refused, not ignored.
// masked: the call is a masked one (split_k 2 splits its last round over CTA pairs).
dg_status check_grouped_options(const dg_gemm_options& o, bool masked) {
  if (o.recipe != DG_FP8_RECIPE_1D2D)
    return dg::fail(DG_ERROR_INVALID_ARGUMENT,
                    "options.recipe: {} (M-grouped FP8 GEMMs use the 1D2D recipe: expected DG_FP8_RECIPE_1D2D (0))",
                    o.recipe);
  if (o.cluster < 0 || o.cluster > 2)
    return dg::fail(DG_ERROR_INVALID_ARGUMENT, "options.cluster: {} (expected 0 = heuristic, 1, or 2: CTA pairs along M "
                    "sharing B)", o.cluster);
  if (o.multicast_a != -1 && o.multicast_a != 0)
    return dg::fail(DG_ERROR_INVALID_ARGUMENT,
                    "options.multicast_a: {} (M-grouped CTA pairs share B, never A: expected -1 or 0)", o.multicast_a);
  if (masked && (o.split_k < 0 || o.split_k > 2))
    return dg::fail(DG_ERROR_INVALID_ARGUMENT,
                    "options.split_k: {} (masked GEMMs: expected 0 = heuristic, 1, or 2: a last round at most half "
                    "full split over CTA pairs)", o.split_k);
  if (!masked && o.split_k > 1)
    return dg::fail(DG_ERROR_INVALID_ARGUMENT,
                    "options.split_k: {} (contiguous M-grouped GEMMs do not split K: expected 0 or 1)", o.split_k);
  if (o.workspace != nullptr || o.workspace_size != 0)
    return dg::fail(DG_ERROR_INVALID_ARGUMENT,
                    "options.workspace: M-grouped GEMMs take no workspace (expected NULL and workspace_size 0)");
  if (o.kernel == DG_GEMM_KERNEL_SKINNY)
    return dg::fail(DG_ERROR_INVALID_ARGUMENT,
                    "options.kernel: DG_GEMM_KERNEL_SKINNY (M-grouped GEMMs run the tiled kernel: expected AUTO or TILED)");
  if (o.block_m != 0 && o.block_m != 64 && o.block_m != 128)
    return dg::fail(DG_ERROR_INVALID_ARGUMENT, "options.block_m: {} (M-grouped GEMMs: expected 0, 64 or 128)", o.block_m);
  return DG_SUCCESS;
}

dg::ops::GemmOverride grouped_override(const dg_gemm_options& o, bool masked) {
  dg::ops::GemmOverride r = dg::api::override_of(o);
  if (!masked) r.split_k = 0;
  r.kernel = 0;
  return r;
}

// One group's [rows, cols] view of a rank-3 tensor [G, rows, cols], through `transposed`.
View group_view(const dg_tensor_s& t, bool transposed) {
  View v{t.sizes[1], t.sizes[2], t.strides[1], t.strides[2]};
  if (transposed) {
    std::swap(v.rows, v.cols);
    std::swap(v.stride_rows, v.stride_cols);
  }
  return v;
}

// An operand's memory rows (K rows for MN-major) must follow each other group after group, so that
// one 2-D TMA map covers every group: stride(0) == rows_per_group * ld.
dg_status check_packed_groups(const dg_tensor_s& t, const char* arg, int64_t rows_per_group, int64_t ld) {
  int64_t packed = 0;
  if (t.sizes[0] > 1 && __builtin_mul_overflow(rows_per_group, ld, &packed))
    return dg::fail(DG_ERROR_INVALID_ARGUMENT, "{}: {} rows of {} elements overflow 64-bit arithmetic; got {}", arg,
                    rows_per_group, ld, dg::describe(t));
  if (t.sizes[0] > 1 && t.strides[0] != packed)
    return dg::fail(DG_ERROR_INVALID_ARGUMENT,
                    "{}: groups must be packed (stride(0) = {} x {} = {} elements); got {}", arg, rows_per_group, ld,
                    rows_per_group * ld, dg::describe(t));
  return DG_SUCCESS;
}

// FP8 SFB [G, ceil(N/128), ceil(K/128)] (any strides, transposed per group with its data for nn).
dg_status check_block_scales(const dg_tensor_s& sfb, bool transposed, int64_t g, int64_t n, int64_t k,
                             dg::ops::GemmArgs* args) {
  DG_TRY(dg::check_rank(sfb, "sfb", {3}));
  DG_TRY(dg::check_dtype(sfb, "sfb", {DG_DTYPE_FLOAT32}));
  const View v = group_view(sfb, transposed);
  if (sfb.sizes[0] != g || v.rows != (n + 127) / 128 || v.cols != (k + 127) / 128)
    return dg::fail(DG_ERROR_INVALID_ARGUMENT,
                    "sfb: view is [{}, {}, {}] (expected [G = {}, ceil(N / 128) = {}, ceil(K / 128) = {}] for the 1D2D "
                    "recipe); shape {}",
                    sfb.sizes[0], v.rows, v.cols, g, (n + 127) / 128, (k + 127) / 128, dg::describe(sfb));
  if (sfb.data == nullptr || reinterpret_cast<uintptr_t>(sfb.data) % 4 != 0)
    return dg::fail(DG_ERROR_INVALID_ARGUMENT, "sfb: data pointer {} is NULL or not 4-byte aligned", sfb.data);
  args->sfb = static_cast<const float*>(sfb.data);
  args->sfb_stride_g = sfb.strides[0];
  args->sfb_stride_n = v.stride_rows;
  args->sfb_stride_k = v.stride_cols;
  return DG_SUCCESS;
}

// B [G, N, K] (nt) or [G, K, N] (nn): reads G, N, K and the operand's memory order into `args`.
dg_status check_grouped_b(const dg_tensor_s& b, bool nn, bool fp8, dg::ops::GemmArgs* args) {
  DG_TRY(dg::check_rank(b, "b", {3}));
  DG_TRY(dg::check_dtype(b, "b", {fp8 ? DG_DTYPE_FLOAT8_E4M3 : DG_DTYPE_BFLOAT16}));
  dg::ops::GemmShape& s = args->shape;
  s.num_groups = b.sizes[0];
  if (s.num_groups == 0) return dg::fail(DG_ERROR_INVALID_ARGUMENT, "b: has G = 0 groups (expected at least 1)");
  const View v = group_view(b, nn);
  s.n = v.rows;
  s.k = v.cols;
  if (s.n == 0 || s.k == 0)
    return dg::fail(DG_ERROR_UNSUPPORTED, "b: N = {}, K = {}: M-grouped GEMMs need N > 0 and K > 0; shape {}", s.n, s.k,
                    dg::describe(b));
  if (b.data == nullptr) return dg::fail(DG_ERROR_INVALID_ARGUMENT, "b: data is NULL");
  const char* name = nn ? "each group's bᵀ (b is [G, K, N])" : "each group of b ([G, N, K])";
  DG_TRY(dg::api::operand_major(b, v, "b", name, fp8, &s.major_b, &args->ldb));
  if (fp8 && s.major_b != Major::kK)
    return dg::fail(DG_ERROR_UNSUPPORTED,
                    "b: {} is MN-major in memory; SM90 FP8 M-grouped GEMMs read K-major B only (store B as [G, N, K] "
                    "and call the nt form); got {}",
                    name, dg::describe(b));
  if (s.major_b == Major::kMN && s.k % 64 != 0)
    return dg::fail(DG_ERROR_UNSUPPORTED,
                    "b: K = {} with an MN-major B ([G, K, N] in memory): K must be a multiple of 64, so that no K tile "
                    "spans two groups",
                    s.k);
  DG_TRY(check_packed_groups(b, "b", s.major_b == Major::kK ? s.n : s.k, args->ldb));
  args->b = b.data;
  return DG_SUCCESS;
}

// A K-major [rows, K] view of a (one group of it for masked); sets lda.
dg_status check_grouped_a(const dg_tensor_s& a, const View& v, const char* view_name, bool fp8, dg::ops::GemmArgs* args) {
  Major major;
  DG_TRY(dg::api::operand_major(a, v, "a", view_name, fp8, &major, &args->lda));
  if (major != Major::kK && v.rows > 1)
    return dg::fail(DG_ERROR_UNSUPPORTED, "a: {} must be K-major (stride 1 along K); got {}", view_name, dg::describe(a));
  args->shape.major_a = Major::kK;
  if (v.rows == 1) args->lda = v.cols;
  args->a = a.data;
  return DG_SUCCESS;
}

dg_status begin(dg_stream* stream, const dg_tensor* a, const dg_tensor* sfa, const dg_tensor* b, const dg_tensor* sfb,
                const dg_tensor* d, const dg_tensor* groups, bool masked, const dg_gemm_options* options,
                bool fp8, dg_gemm_options* opts, dg::api::Epilogue* epilogue) {
  DG_TRY(dg::check_stream(stream, "stream"));
  DG_TRY(dg::check_tensor(a, "a"));
  if (fp8) DG_TRY(dg::check_tensor(sfa, "sfa"));
  DG_TRY(dg::check_tensor(b, "b"));
  if (fp8) DG_TRY(dg::check_tensor(sfb, "sfb"));
  DG_TRY(dg::check_tensor(d, "d"));
  DG_TRY(dg::check_tensor(groups, masked ? "masked_m" : "grouped_layout"));
  DG_TRY(dg::api::read_options(options, opts));
  DG_TRY(check_grouped_options(*opts, masked));
  DG_TRY(dg::api::read_epilogue(*opts, epilogue));
  if (stream->device->cc_major != 9)
    return dg::fail(DG_ERROR_UNSUPPORTED, "stream: device {} is sm_{}{}; the M-grouped GEMMs run on SM90 (sm_90a) only",
                    stream->device->name, stream->device->cc_major, stream->device->cc_minor);
  DG_TRY(dg::check_dtype(*a, "a", {fp8 ? DG_DTYPE_FLOAT8_E4M3 : DG_DTYPE_BFLOAT16}));
  DG_TRY(dg::api::check_d_dtype(*epilogue, *d, false));
  return DG_SUCCESS;
}

void init_args(dg::ops::GemmArgs* args, const dg_gemm_options& opts, bool fp8, const dg_tensor_s& d) {
  dg::ops::GemmShape& s = args->shape;
  s.kind = fp8 ? GemmKind::kFp8_1D2D : GemmKind::kBf16;
  s.d_dtype = d.dtype;
  args->alpha = opts.alpha;
  args->beta = 0.0f;
  args->d = d.data;
}

dg_status contiguous(dg_stream* stream, const dg_tensor* a, const dg_tensor* sfa, const dg_tensor* b,
                     const dg_tensor* sfb, const dg_tensor* d, const dg_tensor* grouped_layout, int32_t layout,
                     int64_t expected_m, const dg_gemm_options* options, bool nn, bool fp8) {
  dg_gemm_options opts;
  dg::api::Epilogue epilogue;
  DG_TRY(begin(stream, a, sfa, b, sfb, d, grouped_layout, false, options, fp8, &opts, &epilogue));
  if (layout != DG_M_GROUPED_LAYOUT_INDICES && layout != DG_M_GROUPED_LAYOUT_PSUM)
    return dg::fail(DG_ERROR_INVALID_ARGUMENT,
                    "layout: {} (expected DG_M_GROUPED_LAYOUT_INDICES (0) or DG_M_GROUPED_LAYOUT_PSUM (1))", layout);
  DG_TRY(dg::check_rank(*a, "a", {2}));
  dg::ops::GemmArgs args;
  dg::ops::GemmShape& s = args.shape;
  init_args(&args, opts, fp8, *d);
  s.type = layout == DG_M_GROUPED_LAYOUT_PSUM ? GemmType::kMGroupedContiguousPsum : GemmType::kMGroupedContiguous;
  DG_TRY(check_grouped_b(*b, nn, fp8, &args));
  const View va = dg::api::view_of(*a, false);
  s.m = va.rows;
  if (va.cols != s.k)
    return dg::fail(DG_ERROR_INVALID_ARGUMENT, "a: K is {} but b has K = {} (a {}, b {})", va.cols, s.k, dg::describe(*a),
                    dg::describe(*b));
  if (s.type == GemmType::kMGroupedContiguous) {
    if (s.m % dg::ops::kMkAlignment != 0)
      return dg::fail(DG_ERROR_INVALID_ARGUMENT,
                      "a: M = {} rows (expected a multiple of {}, dg_get_mk_alignment_for_contiguous_layout(): every "
                      "group is padded to it)",
                      s.m, dg::ops::kMkAlignment);
    DG_TRY(check_int_vector(*grouped_layout, "grouped_layout", s.m, "M, one group index per row of a"));
  } else {
    if (s.num_groups > dg::ops::kMaxTableGroups)
      return dg::fail(DG_ERROR_UNSUPPORTED, "b: G = {} groups; the psum layout takes at most {}", s.num_groups,
                      dg::ops::kMaxTableGroups);
    DG_TRY(check_int_vector(*grouped_layout, "grouped_layout", s.num_groups, "G, one end row per group"));
  }
  if (s.m > INT32_MAX || s.n > INT32_MAX || s.k > INT32_MAX)
    return dg::fail(DG_ERROR_UNSUPPORTED, "a, b: M = {}, N = {}, K = {}: each must be below 2^31", s.m, s.n, s.k);
  if (expected_m < 0)
    return dg::fail(DG_ERROR_INVALID_ARGUMENT, "expected_m: {} (expected >= 0; 0 = M / G)", expected_m);
  s.expected_m = expected_m > 0 ? expected_m : std::max<int64_t>(1, s.m / s.num_groups);
  int64_t d_cols = s.n;
  DG_TRY(dg::api::epilogue_out_cols(epilogue, s.n, &d_cols));
  DG_TRY(dg::api::check_row_major_output(*d, "d", s.m, d_cols, true));
  DG_TRY(dg::api::apply_epilogue(epilogue, opts, *d, false, &args));
  if (s.m == 0) return DG_SUCCESS;
  if (a->data == nullptr) return dg::fail(DG_ERROR_INVALID_ARGUMENT, "a: data is NULL");
  if (d->data == nullptr) return dg::fail(DG_ERROR_INVALID_ARGUMENT, "d: data is NULL");
  DG_TRY(check_grouped_a(*a, va, "a ([M, K])", fp8, &args));
  args.ldd = s.m > 1 ? d->strides[0] : d_cols;
  args.grouped_layout = static_cast<const int32_t*>(grouped_layout->data);
  if (fp8) {
    DG_TRY(dg::api::check_token_scales(*sfa, false, "sfa", s.m, (s.k + 127) / 128, &args.ld_sfa));
    args.sfa = static_cast<const float*>(sfa->data);
    DG_TRY(check_block_scales(*sfb, nn, s.num_groups, s.n, s.k, &args));
  }
  return dg::ops::run_gemm(*stream, args, grouped_override(opts, false), false);
}

// The masked SFA [G, max_m, sf_k]: per group MN-major TMA-aligned, groups packed.
dg_status check_masked_sfa(const dg_tensor_s& sfa, int64_t g, int64_t max_m, int64_t sf_k, int64_t* ld) {
  DG_TRY(dg::check_rank(sfa, "sfa", {3}));
  DG_TRY(dg::check_dtype(sfa, "sfa", {DG_DTYPE_FLOAT32}));
  if (sfa.data == nullptr) return dg::fail(DG_ERROR_INVALID_ARGUMENT, "sfa: data is NULL");
  const int64_t aligned = (max_m + 3) / 4 * 4;
  const bool sizes_ok = sfa.sizes[0] == g && sfa.sizes[1] == max_m && sfa.sizes[2] == sf_k;
  const bool strides_ok = (sfa.strides[1] == 1 || max_m == 1) && (sfa.strides[2] == aligned || sf_k == 1) &&
                          (sfa.strides[0] == aligned * sf_k || g == 1);
  if (!sizes_ok || !strides_ok || sfa.data == nullptr || reinterpret_cast<uintptr_t>(sfa.data) % 16 != 0)
    return dg::fail(DG_ERROR_INVALID_ARGUMENT,
                    "sfa: expected [G = {}, max_m = {}, ceil(K / 128) = {}] FP32 with strides ({}, 1, {}) (MN-major "
                    "TMA-aligned per group, as dg_transform_sf_into_required_layout makes it) and a 16-byte aligned "
                    "base; got {}",
                    g, max_m, sf_k, aligned * sf_k, aligned, dg::describe(sfa));
  *ld = aligned;
  return DG_SUCCESS;
}

dg_status masked(dg_stream* stream, const dg_tensor* a, const dg_tensor* sfa, const dg_tensor* b, const dg_tensor* sfb,
                 const dg_tensor* d, const dg_tensor* masked_m, int64_t expected_m, const dg_gemm_options* options,
                 bool fp8) {
  dg_gemm_options opts;
  dg::api::Epilogue epilogue;
  DG_TRY(begin(stream, a, sfa, b, sfb, d, masked_m, true, options, fp8, &opts, &epilogue));
  DG_TRY(dg::check_rank(*a, "a", {3}));
  DG_TRY(dg::check_rank(*d, "d", {3}));
  dg::ops::GemmArgs args;
  dg::ops::GemmShape& s = args.shape;
  init_args(&args, opts, fp8, *d);
  s.type = GemmType::kMGroupedMasked;
  DG_TRY(check_grouped_b(*b, false, fp8, &args));
  const int64_t g = s.num_groups;
  if (a->sizes[0] != g || d->sizes[0] != g)
    return dg::fail(DG_ERROR_INVALID_ARGUMENT, "{}: has {} groups but b has G = {} (a {}, d {})",
                    a->sizes[0] != g ? "a" : "d", a->sizes[0] != g ? a->sizes[0] : d->sizes[0], g, dg::describe(*a),
                    dg::describe(*d));
  if (g > dg::ops::kMaxTableGroups)
    return dg::fail(DG_ERROR_UNSUPPORTED, "b: G = {} groups; the masked GEMMs take at most {}", g,
                    dg::ops::kMaxTableGroups);
  const View va = group_view(*a, false);
  s.m = va.rows;
  if (va.cols != s.k)
    return dg::fail(DG_ERROR_INVALID_ARGUMENT, "a: K is {} but b has K = {} (a {}, b {})", va.cols, s.k, dg::describe(*a),
                    dg::describe(*b));
  if (s.m % 64 != 0)
    return dg::fail(DG_ERROR_INVALID_ARGUMENT,
                    "a: max_m = {} (expected a multiple of 64, so that no tile spans two groups)", s.m);
  if (g * s.m > INT32_MAX || s.n > INT32_MAX || s.k > INT32_MAX)
    return dg::fail(DG_ERROR_UNSUPPORTED, "a, b: G x max_m = {}, N = {}, K = {}: each must be below 2^31", g * s.m, s.n,
                    s.k);
  int64_t d_cols = s.n;
  DG_TRY(dg::api::epilogue_out_cols(epilogue, s.n, &d_cols));
  if (d->sizes[1] != s.m || d->sizes[2] != d_cols)
    return dg::fail(DG_ERROR_INVALID_ARGUMENT, "d: shape {} (expected [G = {}, max_m = {}, {} = {}])", dg::describe(*d),
                    g, s.m, epilogue.given && epilogue.e.activation == DG_ACTIVATION_SWIGLU ? "N / 2" : "N", d_cols);
  DG_TRY(check_int_vector(*masked_m, "masked_m", g, "G, one row count per group"));
  if (expected_m <= 0)
    return dg::fail(DG_ERROR_INVALID_ARGUMENT, "expected_m: {} (expected > 0: the rows per group to plan for)",
                    expected_m);
  s.expected_m = std::min(expected_m, s.m);
  DG_TRY(dg::api::apply_epilogue(epilogue, opts, *d, false, &args));
  if (s.m == 0) return DG_SUCCESS;
  if (a->data == nullptr) return dg::fail(DG_ERROR_INVALID_ARGUMENT, "a: data is NULL");
  if (d->data == nullptr) return dg::fail(DG_ERROR_INVALID_ARGUMENT, "d: data is NULL");
  DG_TRY(check_grouped_a(*a, va, "each group of a ([G, max_m, K])", fp8, &args));
  DG_TRY(check_packed_groups(*a, "a", s.m, args.lda));
  // D: each group [max_m, N] row-major, groups packed.
  dg_tensor_s d2 = *d;
  d2.rank = 2;
  d2.sizes[0] = s.m, d2.sizes[1] = d_cols;
  d2.strides[0] = d->strides[1], d2.strides[1] = d->strides[2];
  DG_TRY(dg::api::check_row_major_output(d2, "d", s.m, d_cols, true));
  args.ldd = s.m > 1 ? d->strides[1] : d_cols;
  DG_TRY(check_packed_groups(*d, "d", s.m, args.ldd));
  args.grouped_layout = static_cast<const int32_t*>(masked_m->data);
  if (fp8) {
    DG_TRY(check_masked_sfa(*sfa, g, s.m, (s.k + 127) / 128, &args.ld_sfa));
    args.sfa = static_cast<const float*>(sfa->data);
    DG_TRY(check_block_scales(*sfb, false, g, s.n, s.k, &args));
  }
  return dg::ops::run_gemm(*stream, args, grouped_override(opts, true), false);
}

dg_status prepare(dg_stream* stream, dg_dtype ab_dtype, int32_t gemm_layout, int32_t grouping, int64_t num_groups,
                  int64_t m, int64_t n, int64_t k, int64_t expected_m, const dg_gemm_options* options) {
  DG_TRY(dg::check_stream(stream, "stream"));
  dg_gemm_options opts;
  DG_TRY(dg::api::read_options(options, &opts));
  DG_TRY(check_grouped_options(opts, grouping == DG_M_GROUPED_LAYOUT_MASKED));
  dg::api::Epilogue epilogue;
  DG_TRY(dg::api::read_epilogue(opts, &epilogue));
  if (ab_dtype != DG_DTYPE_BFLOAT16 && ab_dtype != DG_DTYPE_FLOAT8_E4M3)
    return dg::fail(DG_ERROR_INVALID_ARGUMENT, "ab_dtype: {} (expected bfloat16 or float8_e4m3)",
                    dg::dtype_name(ab_dtype));
  const bool fp8 = ab_dtype == DG_DTYPE_FLOAT8_E4M3;
  if (gemm_layout != DG_GEMM_LAYOUT_NT && gemm_layout != DG_GEMM_LAYOUT_NN)
    return dg::fail(DG_ERROR_INVALID_ARGUMENT, "gemm_layout: {} (expected DG_GEMM_LAYOUT_NT (0) or _NN (1))", gemm_layout);
  if (grouping < DG_M_GROUPED_LAYOUT_INDICES || grouping > DG_M_GROUPED_LAYOUT_MASKED)
    return dg::fail(DG_ERROR_INVALID_ARGUMENT,
                    "grouping: {} (expected DG_M_GROUPED_LAYOUT_INDICES (0), _PSUM (1) or _MASKED (2))", grouping);
  if (grouping == DG_M_GROUPED_LAYOUT_MASKED && gemm_layout != DG_GEMM_LAYOUT_NT)
    return dg::fail(DG_ERROR_INVALID_ARGUMENT, "gemm_layout: the masked GEMMs take DG_GEMM_LAYOUT_NT only");
  if (fp8 && gemm_layout == DG_GEMM_LAYOUT_NN)
    return dg::fail(DG_ERROR_UNSUPPORTED, "gemm_layout: NN with FP8: SM90 FP8 M-grouped GEMMs read K-major B only");
  if (num_groups <= 0 || m < 0 || n <= 0 || k <= 0 || expected_m < 0 || m > INT32_MAX || n > INT32_MAX ||
      k > INT32_MAX || num_groups > INT32_MAX)
    return dg::fail(DG_ERROR_INVALID_ARGUMENT,
                    "num_groups, m, n, k, expected_m: {}, {}, {}, {}, {} (expected G >= 1, m >= 0, n, k >= 1, each "
                    "below 2^31, expected_m >= 0)",
                    num_groups, m, n, k, expected_m);
  if (stream->device->cc_major != 9)
    return dg::fail(DG_ERROR_UNSUPPORTED, "stream: the M-grouped GEMMs run on SM90 only");
  dg::ops::GemmArgs args;
  dg::ops::GemmShape& s = args.shape;
  s.kind = fp8 ? GemmKind::kFp8_1D2D : GemmKind::kBf16;
  s.type = grouping == DG_M_GROUPED_LAYOUT_MASKED ? GemmType::kMGroupedMasked
           : grouping == DG_M_GROUPED_LAYOUT_PSUM ? GemmType::kMGroupedContiguousPsum
                                                  : GemmType::kMGroupedContiguous;
  if (dg::ops::uses_group_table(s.type) && num_groups > dg::ops::kMaxTableGroups)
    return dg::fail(DG_ERROR_UNSUPPORTED, "num_groups: {} (masked and psum layouts take at most {})", num_groups,
                    dg::ops::kMaxTableGroups);
  if (s.type == GemmType::kMGroupedMasked && (m % 64 != 0 || expected_m == 0))
    return dg::fail(DG_ERROR_INVALID_ARGUMENT, "m, expected_m: {}, {} (masked: max_m a multiple of 64, expected_m > 0)",
                    m, expected_m);
  s.num_groups = num_groups;
  s.m = m, s.n = n, s.k = k;
  s.major_a = Major::kK;
  s.major_b = gemm_layout == DG_GEMM_LAYOUT_NN ? Major::kMN : Major::kK;
  s.expected_m = expected_m > 0 ? (s.type == GemmType::kMGroupedMasked ? std::min(expected_m, m) : expected_m)
                                : std::max<int64_t>(1, m / num_groups);
  args.alpha = opts.alpha;
  // An epilogue with d's scales writes an FP8 d (the call's d is FLOAT8_E4M3).
  const bool fp8_d = epilogue.given && epilogue.e.d_scales != nullptr;
  s.d_dtype = fp8_d ? DG_DTYPE_FLOAT8_E4M3 : DG_DTYPE_BFLOAT16;
  int64_t d_cols = n;
  DG_TRY(dg::api::epilogue_out_cols(epilogue, n, &d_cols));
  DG_TRY(dg::api::apply_epilogue(epilogue, opts, s.d_dtype, false, false, &args));
  if (m == 0) return DG_SUCCESS;
  return dg::ops::run_gemm(*stream, args, grouped_override(opts, s.type == GemmType::kMGroupedMasked), true);
}

}  // namespace

extern "C" {

DG_API dg_status dg_m_grouped_fp8_gemm_nt_contiguous(dg_stream* stream, const dg_tensor* a, const dg_tensor* sfa,
                                                     const dg_tensor* b, const dg_tensor* sfb, const dg_tensor* d,
                                                     const dg_tensor* grouped_layout, int32_t layout, int64_t expected_m,
                                                     const dg_gemm_options* options) {
  DG_API_GUARD(return contiguous(stream, a, sfa, b, sfb, d, grouped_layout, layout, expected_m, options, false, true);)
}
DG_API dg_status dg_m_grouped_fp8_gemm_nn_contiguous(dg_stream* stream, const dg_tensor* a, const dg_tensor* sfa,
                                                     const dg_tensor* b, const dg_tensor* sfb, const dg_tensor* d,
                                                     const dg_tensor* grouped_layout, int32_t layout, int64_t expected_m,
                                                     const dg_gemm_options* options) {
  DG_API_GUARD(return contiguous(stream, a, sfa, b, sfb, d, grouped_layout, layout, expected_m, options, true, true);)
}
DG_API dg_status dg_m_grouped_bf16_gemm_nt_contiguous(dg_stream* stream, const dg_tensor* a, const dg_tensor* b,
                                                      const dg_tensor* d, const dg_tensor* grouped_layout, int32_t layout,
                                                      int64_t expected_m, const dg_gemm_options* options) {
  DG_API_GUARD(return contiguous(stream, a, nullptr, b, nullptr, d, grouped_layout, layout, expected_m, options, false,
                                 false);)
}
DG_API dg_status dg_m_grouped_bf16_gemm_nn_contiguous(dg_stream* stream, const dg_tensor* a, const dg_tensor* b,
                                                      const dg_tensor* d, const dg_tensor* grouped_layout, int32_t layout,
                                                      int64_t expected_m, const dg_gemm_options* options) {
  DG_API_GUARD(return contiguous(stream, a, nullptr, b, nullptr, d, grouped_layout, layout, expected_m, options, true,
                                 false);)
}
DG_API dg_status dg_m_grouped_fp8_gemm_nt_masked(dg_stream* stream, const dg_tensor* a, const dg_tensor* sfa,
                                                 const dg_tensor* b, const dg_tensor* sfb, const dg_tensor* d,
                                                 const dg_tensor* masked_m, int64_t expected_m,
                                                 const dg_gemm_options* options) {
  DG_API_GUARD(return masked(stream, a, sfa, b, sfb, d, masked_m, expected_m, options, true);)
}
DG_API dg_status dg_m_grouped_bf16_gemm_nt_masked(dg_stream* stream, const dg_tensor* a, const dg_tensor* b,
                                                  const dg_tensor* d, const dg_tensor* masked_m, int64_t expected_m,
                                                  const dg_gemm_options* options) {
  DG_API_GUARD(return masked(stream, a, nullptr, b, nullptr, d, masked_m, expected_m, options, false);)
}
DG_API dg_status dg_m_grouped_gemm_prepare(dg_stream* stream, dg_dtype ab_dtype, int32_t gemm_layout, int32_t grouping,
                                           int64_t num_groups, int64_t m, int64_t n, int64_t k, int64_t expected_m,
                                           const dg_gemm_options* options) {
  DG_API_GUARD(return prepare(stream, ab_dtype, gemm_layout, grouping, num_groups, m, n, k, expected_m, options);)
}

}  // extern "C"
