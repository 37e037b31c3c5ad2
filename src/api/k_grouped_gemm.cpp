// dg_k_grouped_*: argument validation of the K-grouped GEMMs (MoE weight gradient), then
// ops/k_grouped_gemm.
#include <cstdint>

#include "api/gemm_common.h"
#include "api/matrix_view.h"
#include "dg.h"
#include "ops/gemm.h"
#include "runtime/device.h"
#include "runtime/status.h"
#include "runtime/stream.h"
#include "runtime/tensor.h"

namespace {

using dg::api::View;
using dg::ops::GemmKind;
using dg::ops::KGroupedArgs;
using dg::ops::KGroupedOperand;
using dg::ops::Major;

// Which operand form an entry point takes.
enum class Form { kFp8Nt, kFp8Tn, kBf16Tn };

// The options a K-grouped call honours: alpha, beta, the tile overrides and (FP8 tn) the workspace;
// the rest name features the K-grouped kernels do not have, so a value other than the default is
// refused, not ignored.
dg_status check_k_grouped_options(const dg_gemm_options& o, Form form) {
  if (o.recipe != DG_FP8_RECIPE_1D2D && o.recipe != DG_FP8_RECIPE_1D1D)
    return dg::fail(DG_ERROR_INVALID_ARGUMENT, "options.recipe: {} (expected DG_FP8_RECIPE_1D1D)", o.recipe);
  if (o.cluster > 1)
    return dg::fail(DG_ERROR_INVALID_ARGUMENT, "options.cluster: {} (K-grouped GEMMs run single CTAs: expected 0 or 1)",
                    o.cluster);
  if (o.multicast_a != -1)
    return dg::fail(DG_ERROR_INVALID_ARGUMENT, "options.multicast_a: {} (K-grouped GEMMs do not multicast: expected -1)",
                    o.multicast_a);
  if (o.split_k > 1)
    return dg::fail(DG_ERROR_INVALID_ARGUMENT, "options.split_k: {} (K-grouped GEMMs do not split K: expected 0 or 1)",
                    o.split_k);
  if (o.kernel == DG_GEMM_KERNEL_SKINNY)
    return dg::fail(DG_ERROR_INVALID_ARGUMENT,
                    "options.kernel: DG_GEMM_KERNEL_SKINNY (K-grouped GEMMs run the tiled kernel: expected AUTO or TILED)");
  if (o.block_m > 128)
    return dg::fail(DG_ERROR_INVALID_ARGUMENT, "options.block_m: {} (K-grouped GEMMs write FP32 D: expected 0, 64 or 128)",
                    o.block_m);
  if (form != Form::kFp8Tn && (o.workspace != nullptr || o.workspace_size != 0))
    return dg::fail(DG_ERROR_INVALID_ARGUMENT,
                    "options.workspace: only the FP8 tn form takes a workspace (expected NULL and workspace_size 0)");
  return DG_SUCCESS;
}

dg::ops::GemmOverride k_grouped_override(const dg_gemm_options& o) {
  dg::ops::GemmOverride r = dg::api::override_of(o);
  r.split_k = 0, r.kernel = 0, r.multicast_a = -1;
  return r;
}

// D (or C): FLOAT32 [G, M, N], contiguous, 16-byte aligned.
dg_status check_output(const dg_tensor_s& t, const char* arg, int64_t g, int64_t m, int64_t n) {
  DG_TRY(dg::check_rank(t, arg, {3}));
  DG_TRY(dg::check_dtype(t, arg, {DG_DTYPE_FLOAT32}));
  if (t.sizes[0] != g || (m >= 0 && (t.sizes[1] != m || t.sizes[2] != n)))
    return dg::fail(DG_ERROR_INVALID_ARGUMENT, "{}: shape {} (expected [G = {}, M, N]{})", arg, dg::describe(t), g,
                    m >= 0 ? " as d" : "");
  const int64_t mm = t.sizes[1], nn = t.sizes[2];
  const bool contiguous = (t.strides[2] == 1 || nn <= 1) && (t.strides[1] == nn || mm <= 1) &&
                          (t.strides[0] == mm * nn || g <= 1);
  if (!contiguous)
    return dg::fail(DG_ERROR_INVALID_ARGUMENT, "{}: must be contiguous (strides ({}, {}, 1)); got {}", arg, mm * nn, nn,
                    dg::describe(t));
  if (mm > 0 && nn > 0) {
    if (t.data == nullptr) return dg::fail(DG_ERROR_INVALID_ARGUMENT, "{}: data is NULL", arg);
    if (reinterpret_cast<uintptr_t>(t.data) % 16 != 0)
      return dg::fail(DG_ERROR_INVALID_ARGUMENT, "{}: data pointer {} is not 16-byte aligned (TMA)", arg, t.data);
    if (nn % 4 != 0)
      return dg::fail(DG_ERROR_UNSUPPORTED, "{}: N = {} (expected a multiple of 4: FP32 rows a multiple of 16 bytes, TMA)",
                      arg, nn);
  }
  return DG_SUCCESS;
}

// A flat FP8 operand (nt): rank 1 with `elems` = MN x K elements, 16-byte aligned.
dg_status check_flat(const dg_tensor_s& t, const char* arg, int64_t elems, const char* mn_name) {
  DG_TRY(dg::check_rank(t, arg, {1}));
  DG_TRY(dg::check_dtype(t, arg, {DG_DTYPE_FLOAT8_E4M3}));
  if (t.sizes[0] != elems)
    return dg::fail(DG_ERROR_INVALID_ARGUMENT,
                    "{}: has {} elements (expected {} x sum(ks) = {}: each group's [{}, k_g] K-major, packed); shape {}",
                    arg, t.sizes[0], mn_name, elems, mn_name, dg::describe(t));
  if (elems > 1 && t.strides[0] != 1)
    return dg::fail(DG_ERROR_INVALID_ARGUMENT, "{}: must be contiguous (stride 1); got {}", arg, dg::describe(t));
  if (elems > 0 && (t.data == nullptr || reinterpret_cast<uintptr_t>(t.data) % 16 != 0))
    return dg::fail(DG_ERROR_INVALID_ARGUMENT, "{}: data pointer {} is NULL or not 16-byte aligned (TMA)", arg, t.data);
  return DG_SUCCESS;
}

// A stacked operand (tn): [K, MN] with stride 1 along MN and rows a multiple of 16 bytes apart.
dg_status check_stacked(const dg_tensor_s& t, const char* arg, dg_dtype dtype, int64_t k, int64_t mn, const char* mn_name,
                        int64_t* ld) {
  DG_TRY(dg::check_rank(t, arg, {2}));
  DG_TRY(dg::check_dtype(t, arg, {dtype}));
  if (t.sizes[0] != k || t.sizes[1] != mn)
    return dg::fail(DG_ERROR_INVALID_ARGUMENT, "{}: shape {} (expected [sum(ks) = {}, {} = {}])", arg, dg::describe(t), k,
                    mn_name, mn);
  const int64_t eb = static_cast<int64_t>(dg::dtype_size(dtype));
  *ld = k > 1 ? t.strides[0] : mn;
  if (!(t.strides[1] == 1 || mn == 1) || *ld < mn || (*ld * eb) % 16 != 0)
    return dg::fail(DG_ERROR_UNSUPPORTED,
                    "{}: expected stride 1 along {} and rows a multiple of 16 bytes apart (TMA; {} % {} == 0 when "
                    "contiguous); got {}",
                    arg, mn_name, mn_name, 16 / eb, dg::describe(t));
  if (k > 0 && (t.data == nullptr || reinterpret_cast<uintptr_t>(t.data) % 16 != 0))
    return dg::fail(DG_ERROR_INVALID_ARGUMENT, "{}: data pointer {} is NULL or not 16-byte aligned (TMA)", arg, t.data);
  return DG_SUCCESS;
}

dg_status k_grouped(dg_stream* stream, const dg_tensor* a, const dg_tensor* sfa, const dg_tensor* b,
                    const dg_tensor* sfb, const dg_tensor* d, const dg_tensor* c, const int64_t* ks, int64_t num_groups,
                    const dg_tensor* ks_tensor, const dg_gemm_options* options, Form form) {
  const bool fp8 = form != Form::kBf16Tn;
  DG_TRY(dg::check_stream(stream, "stream"));
  DG_TRY(dg::check_tensor(a, "a"));
  if (fp8) DG_TRY(dg::check_tensor(sfa, "sfa"));
  DG_TRY(dg::check_tensor(b, "b"));
  if (fp8) DG_TRY(dg::check_tensor(sfb, "sfb"));
  DG_TRY(dg::check_tensor(d, "d"));
  if (c != nullptr) DG_TRY(dg::check_tensor(c, "c"));
  if (ks_tensor != nullptr) DG_TRY(dg::check_tensor(ks_tensor, "ks_tensor"));
  dg_gemm_options opts;
  DG_TRY(dg::api::read_options(options, &opts));
  DG_TRY(check_k_grouped_options(opts, form));
  if (stream->device->cc_major != 9)
    return dg::fail(DG_ERROR_UNSUPPORTED, "stream: device {} is sm_{}{}; the K-grouped GEMMs run on SM90 (sm_90a) only",
                    stream->device->name, stream->device->cc_major, stream->device->cc_minor);
  int64_t total_k = 0;
  DG_TRY(dg::api::check_ks(ks, num_groups, &total_k));
  if (ks_tensor != nullptr)
    DG_TRY(dg::api::check_int_vector(*ks_tensor, "ks_tensor", num_groups, "num_groups, one K per group"));
  DG_TRY(check_output(*d, "d", num_groups, -1, -1));
  KGroupedArgs args;
  args.m = d->sizes[1];
  args.n = d->sizes[2];
  int64_t rows = 0;  // the kernels index D's G x M rows in 32 bits
  if (args.m > INT32_MAX || args.n > INT32_MAX || __builtin_mul_overflow(num_groups, args.m, &rows) || rows > INT32_MAX)
    return dg::fail(DG_ERROR_UNSUPPORTED, "d: G = {}, M = {}, N = {} (G x M and N must be below 2^31)", num_groups,
                    args.m, args.n);
  if (c != nullptr) DG_TRY(check_output(*c, "c", num_groups, args.m, args.n));  // contiguous: aliasing d is exact
  int64_t elems_a = 0, elems_b = 0;
  if (__builtin_mul_overflow(args.m, total_k, &elems_a) || __builtin_mul_overflow(args.n, total_k, &elems_b))
    return dg::fail(DG_ERROR_UNSUPPORTED, "d, ks: M x K or N x K overflows 64-bit arithmetic (M {}, N {}, K {})", args.m,
                    args.n, total_k);
  if (form == Form::kFp8Nt) {
    DG_TRY(check_flat(*a, "a", elems_a, "M"));
    DG_TRY(check_flat(*b, "b", elems_b, "N"));
    args.a_layout = args.b_layout = KGroupedOperand::kFlat;
  } else {
    const dg_dtype dt = fp8 ? DG_DTYPE_FLOAT8_E4M3 : DG_DTYPE_BFLOAT16;
    DG_TRY(check_stacked(*a, "a", dt, total_k, args.m, "M", &args.lda));
    DG_TRY(check_stacked(*b, "b", dt, total_k, args.n, "N", &args.ldb));
    args.a_layout = args.b_layout = KGroupedOperand::kMNMajor;
  }
  if (fp8) {
    DG_TRY(dg::api::check_token_scales(*sfa, false, "sfa", args.m, total_k / 128, &args.ld_sfa));
    DG_TRY(dg::api::check_token_scales(*sfb, false, "sfb", args.n, total_k / 128, &args.ld_sfb));
  }
  args.kind = fp8 ? GemmKind::kFp8_1D1D : GemmKind::kBf16;
  args.ks = ks;
  args.num_groups = num_groups;
  args.a = a->data;
  args.b = b->data;
  args.sfa = fp8 ? static_cast<const float*>(sfa->data) : nullptr;
  args.sfb = fp8 ? static_cast<const float*>(sfb->data) : nullptr;
  args.d = static_cast<float*>(d->data);
  args.c = c != nullptr ? static_cast<const float*>(c->data) : nullptr;
  args.alpha = opts.alpha;
  args.beta = opts.beta;
  if (form == Form::kFp8Tn && total_k > 0 && args.m > 0 && args.n > 0) {
    dg::ops::GemmShape s;
    s.m = args.m, s.n = args.n, s.k = total_k;
    s.major_a = s.major_b = Major::kMN;
    DG_TRY(dg::api::check_workspace(opts, s, "a ([K, M])", "b ([K, N])"));
    args.workspace = opts.workspace;
  }
  if (args.m == 0 || args.n == 0) return DG_SUCCESS;
  return dg::ops::run_k_grouped_gemm(*stream, args, k_grouped_override(opts), false);
}

dg_status prepare(dg_stream* stream, dg_dtype ab_dtype, int32_t layout, int64_t m, int64_t n, const int64_t* ks,
                  int64_t num_groups, int32_t with_c, const dg_gemm_options* options) {
  DG_TRY(dg::check_stream(stream, "stream"));
  if (ab_dtype != DG_DTYPE_BFLOAT16 && ab_dtype != DG_DTYPE_FLOAT8_E4M3)
    return dg::fail(DG_ERROR_INVALID_ARGUMENT, "ab_dtype: {} (expected bfloat16 or float8_e4m3)",
                    dg::dtype_name(ab_dtype));
  const bool fp8 = ab_dtype == DG_DTYPE_FLOAT8_E4M3;
  if (layout != DG_GEMM_LAYOUT_NT && layout != DG_GEMM_LAYOUT_TN)
    return dg::fail(DG_ERROR_INVALID_ARGUMENT, "layout: {} (expected DG_GEMM_LAYOUT_NT (0) or _TN (2))", layout);
  if (!fp8 && layout != DG_GEMM_LAYOUT_TN)
    return dg::fail(DG_ERROR_UNSUPPORTED, "layout: the BF16 K-grouped GEMM takes DG_GEMM_LAYOUT_TN only");
  const Form form = !fp8 ? Form::kBf16Tn : layout == DG_GEMM_LAYOUT_NT ? Form::kFp8Nt : Form::kFp8Tn;
  dg_gemm_options opts;
  DG_TRY(dg::api::read_options(options, &opts));
  dg_gemm_options checked = opts;
  checked.workspace = nullptr, checked.workspace_size = 0;  // not read here
  DG_TRY(check_k_grouped_options(checked, form));
  if (m < 0 || n < 0 || m > INT32_MAX || n > INT32_MAX)
    return dg::fail(DG_ERROR_INVALID_ARGUMENT, "m, n: {}, {} (expected 0 .. 2^31 - 1)", m, n);
  if (with_c != 0 && with_c != 1) return dg::fail(DG_ERROR_INVALID_ARGUMENT, "with_c: {} (expected 0 or 1)", with_c);
  int64_t total_k = 0;
  DG_TRY(dg::api::check_ks(ks, num_groups, &total_k));
  if (num_groups * m > INT32_MAX)
    return dg::fail(DG_ERROR_UNSUPPORTED, "num_groups x m = {} (expected below 2^31)", num_groups * m);
  if (stream->device->cc_major != 9)
    return dg::fail(DG_ERROR_UNSUPPORTED, "stream: the K-grouped GEMMs run on SM90 only");
  KGroupedArgs args;
  args.kind = fp8 ? GemmKind::kFp8_1D1D : GemmKind::kBf16;
  args.m = m, args.n = n;
  args.ks = ks;
  args.num_groups = num_groups;
  args.a_layout = args.b_layout = form == Form::kFp8Nt ? KGroupedOperand::kFlat : KGroupedOperand::kMNMajor;
  args.alpha = opts.alpha;
  args.beta = opts.beta;
  // Only whether C is given matters to the kernels: a non-NULL stand-in that no kernel reads.
  static const float kStandIn = 0.f;
  args.c = with_c ? &kStandIn : nullptr;
  if (m == 0 || n == 0) return DG_SUCCESS;
  return dg::ops::run_k_grouped_gemm(*stream, args, k_grouped_override(opts), true);
}

}  // namespace

extern "C" {

DG_API dg_status dg_k_grouped_fp8_gemm_nt_contiguous(dg_stream* stream, const dg_tensor* a, const dg_tensor* sfa,
                                                     const dg_tensor* b, const dg_tensor* sfb, const dg_tensor* d,
                                                     const dg_tensor* c, const int64_t* ks, int64_t num_groups,
                                                     const dg_tensor* ks_tensor, const dg_gemm_options* options) {
  DG_API_GUARD(return k_grouped(stream, a, sfa, b, sfb, d, c, ks, num_groups, ks_tensor, options, Form::kFp8Nt);)
}
DG_API dg_status dg_k_grouped_fp8_gemm_tn_contiguous(dg_stream* stream, const dg_tensor* a, const dg_tensor* sfa,
                                                     const dg_tensor* b, const dg_tensor* sfb, const dg_tensor* d,
                                                     const dg_tensor* c, const int64_t* ks, int64_t num_groups,
                                                     const dg_tensor* ks_tensor, const dg_gemm_options* options) {
  DG_API_GUARD(return k_grouped(stream, a, sfa, b, sfb, d, c, ks, num_groups, ks_tensor, options, Form::kFp8Tn);)
}
DG_API dg_status dg_k_grouped_bf16_gemm_tn_contiguous(dg_stream* stream, const dg_tensor* a, const dg_tensor* b,
                                                      const dg_tensor* d, const dg_tensor* c, const int64_t* ks,
                                                      int64_t num_groups, const dg_tensor* ks_tensor,
                                                      const dg_gemm_options* options) {
  DG_API_GUARD(
      return k_grouped(stream, a, nullptr, b, nullptr, d, c, ks, num_groups, ks_tensor, options, Form::kBf16Tn);)
}
DG_API dg_status dg_k_grouped_gemm_prepare(dg_stream* stream, dg_dtype ab_dtype, int32_t layout, int64_t m, int64_t n,
                                           const int64_t* ks, int64_t num_groups, int32_t with_c,
                                           const dg_gemm_options* options) {
  DG_API_GUARD(return prepare(stream, ab_dtype, layout, m, n, ks, num_groups, with_c, options);)
}

}  // extern "C"
