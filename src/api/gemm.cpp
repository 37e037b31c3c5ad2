// dg_bf16_gemm_*, dg_fp8_gemm_*, dg_fp8_gemm_nt_skip_head_mid, dg_fp8_gemm_workspace_size,
// dg_gemm_prepare: argument validation, then ops/gemm.
#include <cstddef>
#include <cstdint>
#include <string>

#include "api/gemm_common.h"
#include "api/gemm_epilogue.h"
#include "api/matrix_view.h"
#include "dg.h"
#include "ops/gemm.h"
#include "ops/transpose.h"
#include "runtime/checked.h"
#include "runtime/device.h"
#include "runtime/options.h"
#include "runtime/status.h"
#include "runtime/stream.h"
#include "runtime/tensor.h"

namespace {

using dg::api::View;
using dg::api::view_of;
using dg::api::check_row_major_output;
using dg::api::check_token_scales;
using dg::api::check_workspace;
using dg::api::operand_major;
using dg::api::override_of;
using dg::api::read_options;
using dg::ops::GemmKind;
using dg::ops::Major;

// The layouts' letters name each operand as the math reads it: A is [M, K] ('N') or stored [K, M]
// ('T'); B is read [N, K] ('T': stored so, as B^T's rows) or stored [K, N] ('N').
bool a_transposed(int32_t layout) { return layout == DG_GEMM_LAYOUT_TN || layout == DG_GEMM_LAYOUT_TT; }
bool b_transposed(int32_t layout) { return layout == DG_GEMM_LAYOUT_NN || layout == DG_GEMM_LAYOUT_TN; }

GemmKind kind_of(bool fp8, const dg_gemm_options& opts) {
  if (!fp8) return GemmKind::kBf16;
  return opts.recipe == DG_FP8_RECIPE_1D1D ? GemmKind::kFp8_1D1D : GemmKind::kFp8_1D2D;
}

// dg_fp8_gemm_nt_skip_head_mid's head columns (docs/skip_head_mid.md).
struct HeadSplit {
  int64_t left = 0, mid = 0, right = 0;
};

// Checks the head split against the call and gives D's columns: N / (left + right) heads of
// left + mid + right.
dg_status head_split_cols(const HeadSplit& h, const dg_gemm_options& opts, int64_t n, int64_t k, int64_t* d_cols) {
  if (opts.epilogue != nullptr)
    return dg::fail(DG_ERROR_UNSUPPORTED, "options.epilogue: skip_head_mid takes no fused epilogue (expected NULL)");
  if (opts.recipe != DG_FP8_RECIPE_1D2D)
    return dg::fail(DG_ERROR_UNSUPPORTED, "options.recipe: {}; skip_head_mid runs the 1D2D recipe (expected {})",
                    opts.recipe, DG_FP8_RECIPE_1D2D);
  if (h.left < 0 || h.mid < 0 || h.right < 0 || h.left > INT32_MAX || h.mid > INT32_MAX || h.right > INT32_MAX)
    return dg::fail(DG_ERROR_INVALID_ARGUMENT, "left, mid, right: {}, {}, {} (expected each in [0, 2^31))", h.left,
                    h.mid, h.right);
  if (h.left + h.right == 0)
    return dg::fail(DG_ERROR_INVALID_ARGUMENT, "left, right: both 0 (expected heads of left + right > 0 GEMM columns)");
  if (n % (h.left + h.right) != 0)
    return dg::fail(DG_ERROR_INVALID_ARGUMENT, "left, right: b has N = {} rows, not a multiple of left + right = {}", n,
                    h.left + h.right);
  DG_TRY(dg::checked_mul(n / (h.left + h.right), h.left + h.mid + h.right, d_cols, "d columns"));
  if (*d_cols > INT32_MAX)
    return dg::fail(DG_ERROR_UNSUPPORTED, "d: {} columns ({} heads of {}) must be below 2^31", *d_cols,
                    n / (h.left + h.right), h.left + h.mid + h.right);
  if (k == 0) return dg::fail(DG_ERROR_UNSUPPORTED, "a: K = 0; skip_head_mid needs K > 0");
  return DG_SUCCESS;
}

dg_status gemm(dg_stream* stream, const dg_tensor* a, const dg_tensor* sfa, const dg_tensor* b, const dg_tensor* sfb,
               const dg_tensor* d, const dg_tensor* c, const dg_gemm_options* options, int32_t layout,
               dg_dtype ab_dtype, const HeadSplit* heads = nullptr) {
  const bool a_t = a_transposed(layout), b_t = b_transposed(layout), fp8 = ab_dtype == DG_DTYPE_FLOAT8_E4M3;
  DG_TRY(dg::check_stream(stream, "stream"));
  DG_TRY(dg::check_tensor(a, "a"));
  DG_TRY(dg::check_tensor(b, "b"));
  DG_TRY(dg::check_tensor(d, "d"));
  if (fp8) {
    DG_TRY(dg::check_tensor(sfa, "sfa"));
    DG_TRY(dg::check_tensor(sfb, "sfb"));
  }
  dg_gemm_options opts;
  DG_TRY(read_options(options, &opts));
  dg::api::Epilogue epilogue;
  DG_TRY(dg::api::read_epilogue(opts, &epilogue));
  if (stream->device->cc_major != 9)
    return dg::fail(DG_ERROR_UNSUPPORTED, "stream: device {} is sm_{}{}; the dense GEMMs run on SM90 (sm_90a) only",
                    stream->device->name, stream->device->cc_major, stream->device->cc_minor);
  DG_TRY(dg::check_rank(*a, "a", {2}));
  DG_TRY(dg::check_rank(*b, "b", {2}));
  DG_TRY(dg::check_dtype(*a, "a", {ab_dtype}));
  DG_TRY(dg::check_dtype(*b, "b", {ab_dtype}));
  DG_TRY(dg::api::check_d_dtype(epilogue, *d, true));

  const View va = view_of(*a, a_t), vb = view_of(*b, b_t);
  const char* a_name = a_t ? "aᵀ (a is [K, M])" : "a ([M, K])";
  const char* b_name = b_t ? "bᵀ (b is [K, N])" : "b ([N, K])";
  const int64_t m = va.rows, n = vb.rows, k = va.cols;
  if (vb.cols != k)
    return dg::fail(DG_ERROR_INVALID_ARGUMENT, "b: K is {} but a has K = {} (a {}, b {})", vb.cols, k,
                    dg::describe(*a), dg::describe(*b));
  // Before any size arithmetic: the kernels index with 32-bit M, N and K.
  if (m > INT32_MAX || k > INT32_MAX)
    return dg::fail(DG_ERROR_UNSUPPORTED, "a: M = {}, K = {}: each must be below 2^31; shape {}", m, k,
                    dg::describe(*a));
  if (n > INT32_MAX)
    return dg::fail(DG_ERROR_UNSUPPORTED, "b: N = {} must be below 2^31; shape {}", n, dg::describe(*b));
  int64_t d_cols = n;
  DG_TRY(heads ? head_split_cols(*heads, opts, n, k, &d_cols) : dg::api::epilogue_out_cols(epilogue, n, &d_cols));
  DG_TRY(check_row_major_output(*d, "d", m, d_cols, true));
  if (c != nullptr) {
    if (c->dtype != d->dtype)
      return dg::fail(DG_ERROR_INVALID_ARGUMENT, "c: dtype is {} but d is {} (expected the same dtype)",
                      dg::dtype_name(c->dtype), dg::dtype_name(d->dtype));
    DG_TRY(check_row_major_output(*c, "c", m, n, true));
    if (c->data == d->data && c->strides[0] != d->strides[0] && m > 1)
      return dg::fail(DG_ERROR_INVALID_ARGUMENT,
                      "c: aliases d but its strides differ (c {}, d {}); an aliased C must match D exactly",
                      dg::describe(*c), dg::describe(*d));
  }

  dg::ops::GemmArgs args;
  dg::ops::GemmShape& s = args.shape;
  s.kind = kind_of(fp8, opts);
  s.m = m, s.n = n, s.k = k;
  s.d_dtype = d->dtype;
  if (s.kind == GemmKind::kFp8_1D1D && d->dtype != DG_DTYPE_FLOAT32)
    return dg::fail(DG_ERROR_UNSUPPORTED, "d: dtype is {}; the 1D1D recipe writes FLOAT32 on SM90",
                    dg::dtype_name(d->dtype));
  DG_TRY(dg::api::apply_epilogue(epilogue, opts, *d, c != nullptr, &args));
  if (heads) s.epilogue.head_left = heads->left, s.epilogue.head_mid = heads->mid, s.epilogue.head_right = heads->right;
  if (m == 0 || n == 0) return DG_SUCCESS;
  if (d->data == nullptr) return dg::fail(DG_ERROR_INVALID_ARGUMENT, "d: data is NULL");
  if (c != nullptr && c->data == nullptr) return dg::fail(DG_ERROR_INVALID_ARGUMENT, "c: data is NULL");
  args.d = d->data;
  args.ldd = m > 1 ? d->strides[0] : d_cols;
  if (c != nullptr) {
    args.c = c->data;
    args.ldc = m > 1 ? c->strides[0] : n;
  }
  args.alpha = opts.alpha;
  args.beta = opts.beta;
  if (k > 0) {
    if (a->data == nullptr || b->data == nullptr)
      return dg::fail(DG_ERROR_INVALID_ARGUMENT, "{}: data is NULL", a->data == nullptr ? "a" : "b");
    DG_TRY(operand_major(*a, va, "a", a_name, fp8, &s.major_a, &args.lda));
    DG_TRY(operand_major(*b, vb, "b", b_name, fp8, &s.major_b, &args.ldb));
    args.a = a->data;
    args.b = b->data;
    if (fp8) {
      const int64_t sf_k = (k + 127) / 128;
      DG_TRY(check_token_scales(*sfa, a_t, "sfa", m, sf_k, &args.ld_sfa));
      args.sfa = static_cast<const float*>(sfa->data);
      if (s.kind == GemmKind::kFp8_1D1D) {
        DG_TRY(check_token_scales(*sfb, b_t, "sfb", n, sf_k, &args.ld_sfb));
      } else {
        DG_TRY(dg::check_rank(*sfb, "sfb", {2}));
        DG_TRY(dg::check_dtype(*sfb, "sfb", {DG_DTYPE_FLOAT32}));
        const View vs = view_of(*sfb, b_t);
        if (vs.rows != (n + 127) / 128 || vs.cols != sf_k)
          return dg::fail(DG_ERROR_INVALID_ARGUMENT,
                          "sfb: view is [{}, {}] (expected [ceil(N / 128) = {}, ceil(K / 128) = {}] for the 1D2D "
                          "recipe); shape {}",
                          vs.rows, vs.cols, (n + 127) / 128, sf_k, dg::describe(*sfb));
        if (sfb->data == nullptr || reinterpret_cast<uintptr_t>(sfb->data) % 4 != 0)
          return dg::fail(DG_ERROR_INVALID_ARGUMENT, "sfb: data pointer {} is NULL or not 4-byte aligned", sfb->data);
        args.sfb_stride_n = vs.stride_rows;
        args.sfb_stride_k = vs.stride_cols;
      }
      args.sfb = static_cast<const float*>(sfb->data);
      DG_TRY(check_workspace(opts, s, a_name, b_name));
      args.workspace = opts.workspace;
    }
  }
  return dg::ops::run_gemm(*stream, args, override_of(opts), false);
}

dg_status prepare(dg_stream* stream, dg_dtype ab_dtype, int32_t layout, int64_t m, int64_t n, int64_t k,
                  dg_dtype d_dtype, int32_t with_c, const dg_gemm_options* options) {
  DG_TRY(dg::check_stream(stream, "stream"));
  dg_gemm_options opts;
  DG_TRY(read_options(options, &opts));
  dg::api::Epilogue epilogue;
  DG_TRY(dg::api::read_epilogue(opts, &epilogue));
  if (ab_dtype != DG_DTYPE_BFLOAT16 && ab_dtype != DG_DTYPE_FLOAT8_E4M3)
    return dg::fail(DG_ERROR_INVALID_ARGUMENT, "ab_dtype: {} (expected bfloat16 or float8_e4m3)",
                    dg::dtype_name(ab_dtype));
  if (d_dtype == DG_DTYPE_FLOAT8_E4M3 && !epilogue.given)
    return dg::fail(DG_ERROR_INVALID_ARGUMENT,
                    "d_dtype: float8_e4m3 needs a fused epilogue with its scales (options.epilogue.d_scales)");
  if (d_dtype != DG_DTYPE_BFLOAT16 && d_dtype != DG_DTYPE_FLOAT32 && d_dtype != DG_DTYPE_FLOAT8_E4M3)
    return dg::fail(DG_ERROR_INVALID_ARGUMENT, "d_dtype: {} (expected bfloat16, float32, or float8_e4m3 with an epilogue)",
                    dg::dtype_name(d_dtype));
  if (layout < DG_GEMM_LAYOUT_NT || layout > DG_GEMM_LAYOUT_TT)
    return dg::fail(DG_ERROR_INVALID_ARGUMENT, "layout: {} (expected DG_GEMM_LAYOUT_NT..TT)", layout);
  if (m < 0 || n < 0 || k < 0)
    return dg::fail(DG_ERROR_INVALID_ARGUMENT, "m, n, k: {}, {}, {} (expected >= 0)", m, n, k);
  if (m > INT32_MAX || n > INT32_MAX || k > INT32_MAX)
    return dg::fail(DG_ERROR_UNSUPPORTED, "m, n, k: {}, {}, {}: each must be below 2^31", m, n, k);
  if (stream->device->cc_major != 9)
    return dg::fail(DG_ERROR_UNSUPPORTED, "stream: the dense GEMMs run on SM90 only");
  const bool fp8 = ab_dtype == DG_DTYPE_FLOAT8_E4M3;
  dg::ops::GemmArgs args;
  dg::ops::GemmShape& s = args.shape;
  s.kind = kind_of(fp8, opts);
  s.m = m, s.n = n, s.k = k;
  s.d_dtype = d_dtype;
  // A contiguous operand stored transposed is MN-major in memory.
  s.major_a = a_transposed(layout) ? Major::kMN : Major::kK;
  s.major_b = b_transposed(layout) ? Major::kMN : Major::kK;
  if (s.kind == GemmKind::kFp8_1D1D && d_dtype != DG_DTYPE_FLOAT32)
    return dg::fail(DG_ERROR_UNSUPPORTED, "d_dtype: the 1D1D recipe writes FLOAT32 on SM90");
  int64_t d_cols = n;
  DG_TRY(dg::api::epilogue_out_cols(epilogue, n, &d_cols));
  DG_TRY(dg::api::apply_epilogue(epilogue, opts, d_dtype, with_c != 0, false, &args));
  if (m == 0 || n == 0) return DG_SUCCESS;
  // Preparing reads no memory: only whether C is given, and whether it is D, choose kernels. A
  // distinct non-NULL stand-in for C means "C given, not D"; no kernel runs, so none reads it.
  static const char kStandIn[16] = {};
  args.c = with_c ? kStandIn : nullptr;
  args.d = nullptr;
  args.alpha = opts.alpha;
  args.beta = opts.beta;
  return dg::ops::run_gemm(*stream, args, override_of(opts), true);
}

dg_status fp8_workspace_size(int32_t layout, int64_t m, int64_t n, int64_t k, size_t* bytes) {
  if (bytes == nullptr) return dg::fail(DG_ERROR_INVALID_ARGUMENT, "bytes: out-pointer is NULL");
  if (layout < DG_GEMM_LAYOUT_NT || layout > DG_GEMM_LAYOUT_TT)
    return dg::fail(DG_ERROR_INVALID_ARGUMENT, "layout: {} (expected DG_GEMM_LAYOUT_NT..TT, 0..3)", layout);
  if (m < 0 || n < 0 || k < 0 || m > INT32_MAX || n > INT32_MAX || k > INT32_MAX)
    return dg::fail(DG_ERROR_INVALID_ARGUMENT, "m, n, k: {}, {}, {} (expected each in [0, 2^31))", m, n, k);
  // Operands stored [K, M] / [K, N] are copied (a contiguous single row, M or N = 1, would not be:
  // counting it anyway keeps the size right for padded ones); with nothing to multiply, nothing is.
  const bool work = m > 0 && n > 0 && k > 0;
  *bytes = dg::ops::fp8_gemm_workspace(work && a_transposed(layout), work && b_transposed(layout), m, n, k).bytes;
  return DG_SUCCESS;
}

}  // namespace

extern "C" {

DG_API dg_status dg_bf16_gemm_nt(dg_stream* stream, const dg_tensor* a, const dg_tensor* b, const dg_tensor* d,
                                 const dg_tensor* c, const dg_gemm_options* options) {
  DG_API_GUARD(return gemm(stream, a, nullptr, b, nullptr, d, c, options, DG_GEMM_LAYOUT_NT, DG_DTYPE_BFLOAT16);)
}
DG_API dg_status dg_bf16_gemm_nn(dg_stream* stream, const dg_tensor* a, const dg_tensor* b, const dg_tensor* d,
                                 const dg_tensor* c, const dg_gemm_options* options) {
  DG_API_GUARD(return gemm(stream, a, nullptr, b, nullptr, d, c, options, DG_GEMM_LAYOUT_NN, DG_DTYPE_BFLOAT16);)
}
DG_API dg_status dg_bf16_gemm_tn(dg_stream* stream, const dg_tensor* a, const dg_tensor* b, const dg_tensor* d,
                                 const dg_tensor* c, const dg_gemm_options* options) {
  DG_API_GUARD(return gemm(stream, a, nullptr, b, nullptr, d, c, options, DG_GEMM_LAYOUT_TN, DG_DTYPE_BFLOAT16);)
}
DG_API dg_status dg_bf16_gemm_tt(dg_stream* stream, const dg_tensor* a, const dg_tensor* b, const dg_tensor* d,
                                 const dg_tensor* c, const dg_gemm_options* options) {
  DG_API_GUARD(return gemm(stream, a, nullptr, b, nullptr, d, c, options, DG_GEMM_LAYOUT_TT, DG_DTYPE_BFLOAT16);)
}

DG_API dg_status dg_fp8_gemm_nt(dg_stream* stream, const dg_tensor* a, const dg_tensor* sfa, const dg_tensor* b,
                                const dg_tensor* sfb, const dg_tensor* d, const dg_tensor* c,
                                const dg_gemm_options* options) {
  DG_API_GUARD(return gemm(stream, a, sfa, b, sfb, d, c, options, DG_GEMM_LAYOUT_NT, DG_DTYPE_FLOAT8_E4M3);)
}
DG_API dg_status dg_fp8_gemm_nn(dg_stream* stream, const dg_tensor* a, const dg_tensor* sfa, const dg_tensor* b,
                                const dg_tensor* sfb, const dg_tensor* d, const dg_tensor* c,
                                const dg_gemm_options* options) {
  DG_API_GUARD(return gemm(stream, a, sfa, b, sfb, d, c, options, DG_GEMM_LAYOUT_NN, DG_DTYPE_FLOAT8_E4M3);)
}
DG_API dg_status dg_fp8_gemm_tn(dg_stream* stream, const dg_tensor* a, const dg_tensor* sfa, const dg_tensor* b,
                                const dg_tensor* sfb, const dg_tensor* d, const dg_tensor* c,
                                const dg_gemm_options* options) {
  DG_API_GUARD(return gemm(stream, a, sfa, b, sfb, d, c, options, DG_GEMM_LAYOUT_TN, DG_DTYPE_FLOAT8_E4M3);)
}
DG_API dg_status dg_fp8_gemm_tt(dg_stream* stream, const dg_tensor* a, const dg_tensor* sfa, const dg_tensor* b,
                                const dg_tensor* sfb, const dg_tensor* d, const dg_tensor* c,
                                const dg_gemm_options* options) {
  DG_API_GUARD(return gemm(stream, a, sfa, b, sfb, d, c, options, DG_GEMM_LAYOUT_TT, DG_DTYPE_FLOAT8_E4M3);)
}

DG_API dg_status dg_fp8_gemm_nt_skip_head_mid(dg_stream* stream, const dg_tensor* a, const dg_tensor* sfa,
                                              const dg_tensor* b, const dg_tensor* sfb, const dg_tensor* d,
                                              int64_t left, int64_t mid, int64_t right,
                                              const dg_gemm_options* options) {
  const HeadSplit heads{left, mid, right};
  DG_API_GUARD(
      return gemm(stream, a, sfa, b, sfb, d, nullptr, options, DG_GEMM_LAYOUT_NT, DG_DTYPE_FLOAT8_E4M3, &heads);)
}

DG_API dg_status dg_fp8_gemm_workspace_size(int32_t layout, int64_t m, int64_t n, int64_t k, size_t* bytes) {
  DG_API_GUARD(return fp8_workspace_size(layout, m, n, k, bytes);)
}

DG_API dg_status dg_gemm_prepare(dg_stream* stream, dg_dtype ab_dtype, int32_t layout, int64_t m, int64_t n, int64_t k,
                                 dg_dtype d_dtype, int32_t with_c, const dg_gemm_options* options) {
  DG_API_GUARD(return prepare(stream, ab_dtype, layout, m, n, k, d_dtype, with_c, options);)
}

}  // extern "C"
