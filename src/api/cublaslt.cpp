// dg_cublaslt_gemm_{nt,nn,tn,tt}: the cuBLASLt baseline (docs/gemm.md#the-cublaslt-baseline) behind the C ABI.
#include "dg.h"
#include "api/matrix_view.h"
#include "ops/cublaslt.h"
#include "runtime/options.h"
#include "runtime/status.h"
#include "runtime/stream.h"
#include "runtime/tensor.h"

namespace {

using dg::api::View;
using dg::api::view_of;
using dg::api::check_row_major_output;

// One of the two strides of an [MN, K] view must be 1 (a dimension of size 1 may have any stride),
// and the other must step over a whole row/column so that elements do not overlap.
dg_status check_operand(const dg_tensor_s& t, const View& v, const char* arg, const char* view_name) {
  const bool k_major = v.stride_cols == 1 || v.cols == 1;
  const bool mn_major = v.stride_rows == 1 || v.rows == 1;
  if (!k_major && !mn_major)
    return dg::fail(DG_ERROR_INVALID_ARGUMENT,
                    "{}: neither stride of {} is 1 (expected a K-major or an MN-major matrix); shape {}", arg,
                    view_name, dg::describe(t));
  if (k_major && v.rows > 1 && v.stride_rows < v.cols && !(mn_major && v.stride_cols >= v.rows))
    return dg::fail(DG_ERROR_INVALID_ARGUMENT,
                    "{}: rows of {} overlap (row stride {} < {} columns); shape {}", arg, view_name, v.stride_rows,
                    v.cols, dg::describe(t));
  if (!k_major && v.cols > 1 && v.stride_cols < v.rows)
    return dg::fail(DG_ERROR_INVALID_ARGUMENT,
                    "{}: columns of {} overlap (column stride {} < {} rows); shape {}", arg, view_name,
                    v.stride_cols, v.rows, dg::describe(t));
  return DG_SUCCESS;
}


dg_status gemm(dg_stream* stream, const dg_tensor* a, const dg_tensor* b, const dg_tensor* d, const dg_tensor* c,
               const dg_cublaslt_options* options, bool a_transposed, bool b_transposed, const char* layout) {
  DG_TRY(dg::check_stream(stream, "stream"));
  DG_TRY(dg::check_tensor(a, "a"));
  DG_TRY(dg::check_tensor(b, "b"));
  DG_TRY(dg::check_tensor(d, "d"));
  dg_cublaslt_options opts;
  DG_TRY(dg::read_options(options, dg_cublaslt_options DG_CUBLASLT_OPTIONS_INIT, sizeof(dg_cublaslt_options),
                          "options", "DG_CUBLASLT_OPTIONS_INIT", &opts));
  if (opts.workspace_size > 0 && opts.workspace == nullptr)
    return dg::fail(DG_ERROR_INVALID_ARGUMENT, "options: workspace is NULL but workspace_size is {} bytes",
                    opts.workspace_size);
  if (opts.workspace != nullptr && reinterpret_cast<uintptr_t>(opts.workspace) % 256 != 0)
    return dg::fail(DG_ERROR_INVALID_ARGUMENT, "options: workspace {} is not 256-byte aligned", opts.workspace);

  DG_TRY(dg::check_rank(*a, "a", {2}));
  DG_TRY(dg::check_rank(*b, "b", {2}));
  DG_TRY(dg::check_dtype(*a, "a", {DG_DTYPE_BFLOAT16, DG_DTYPE_FLOAT8_E4M3}));
  if (b->dtype != a->dtype)
    return dg::fail(DG_ERROR_INVALID_ARGUMENT, "b: dtype is {} but a is {} (expected the same dtype)",
                    dg::dtype_name(b->dtype), dg::dtype_name(a->dtype));
  DG_TRY(dg::check_dtype(*d, "d", {DG_DTYPE_BFLOAT16, DG_DTYPE_FLOAT32}));

  // A' = a or aᵀ as [M, K]; B' = b or bᵀ as [N, K].
  const View va = view_of(*a, a_transposed);
  const View vb = view_of(*b, b_transposed);
  const char* a_name = a_transposed ? "aᵀ (a is [K, M])" : "a ([M, K])";
  const char* b_name = b_transposed ? "bᵀ (b is [K, N])" : "b ([N, K])";
  const int64_t m = va.rows, n = vb.rows, k = va.cols;
  if (vb.cols != k)
    return dg::fail(DG_ERROR_INVALID_ARGUMENT, "b: K is {} but a has K = {} ({} layout: a {}, b {})", vb.cols, k,
                    layout, dg::describe(*a), dg::describe(*b));
  DG_TRY(check_operand(*a, va, "a", a_name));
  DG_TRY(check_operand(*b, vb, "b", b_name));
  DG_TRY(check_row_major_output(*d, "d", m, n, false));
  if (c != nullptr) {
    if (c->dtype != d->dtype)
      return dg::fail(DG_ERROR_INVALID_ARGUMENT, "c: dtype is {} but d is {} (expected the same dtype)",
                      dg::dtype_name(c->dtype), dg::dtype_name(d->dtype));
    DG_TRY(check_row_major_output(*c, "c", m, n, false));
    if (c->data == d->data && (c->strides[0] != d->strides[0] || c->strides[1] != d->strides[1]))
      return dg::fail(DG_ERROR_INVALID_ARGUMENT,
                      "c: aliases d but its strides differ (c {}, d {}); an aliased C must match D exactly",
                      dg::describe(*c), dg::describe(*d));
  }

  const bool a_k_major = va.stride_cols == 1 || va.cols == 1;
  const bool b_k_major = vb.stride_cols == 1 || vb.cols == 1;
  if (a->dtype == DG_DTYPE_FLOAT8_E4M3 && !(a_k_major && b_k_major))
    return dg::fail(DG_ERROR_UNSUPPORTED,
                    "{}: cuBLASLt FP8 GEMMs need K-major a and b (the nt layout); got a {}-major, b {}-major "
                    "(a {}, b {})",
                    a_k_major ? "b" : "a", a_k_major ? "K" : "M", b_k_major ? "K" : "N", dg::describe(*a),
                    dg::describe(*b));

  if (m == 0 || n == 0) return DG_SUCCESS;
  if (k > 0 && (a->data == nullptr || b->data == nullptr))
    return dg::fail(DG_ERROR_INVALID_ARGUMENT, "{}: data is NULL", a->data == nullptr ? "a" : "b");
  if (d->data == nullptr) return dg::fail(DG_ERROR_INVALID_ARGUMENT, "d: data is NULL");
  if (c != nullptr && c->data == nullptr) return dg::fail(DG_ERROR_INVALID_ARGUMENT, "c: data is NULL");

  dg::cublaslt::Problem p;
  p.ab_dtype = a->dtype;
  p.d_dtype = d->dtype;
  p.m = m, p.n = n, p.k = k;
  p.a = a->data;
  p.a_stride_m = va.stride_rows, p.a_stride_k = va.stride_cols;
  p.b = b->data;
  p.b_stride_n = vb.stride_rows, p.b_stride_k = vb.stride_cols;
  p.d = d->data;
  p.ldd = d->strides[0];
  if (c != nullptr) {
    p.c = c->data;
    p.ldc = c->strides[0];
  }
  p.alpha = opts.alpha;
  p.beta = opts.beta;
  p.workspace = opts.workspace;
  p.workspace_size = opts.workspace_size;
  return dg::cublaslt::run(*stream, p);
}

}  // namespace

extern "C" {

DG_API size_t dg_cublaslt_workspace_size(void) { return dg::cublaslt::kRecommendedWorkspace; }

DG_API dg_status dg_cublaslt_available(void) {
  DG_API_GUARD(return dg::cublaslt::load();)
}

DG_API dg_status dg_cublaslt_gemm_nt(dg_stream* stream, const dg_tensor* a, const dg_tensor* b, const dg_tensor* d,
                                     const dg_tensor* c, const dg_cublaslt_options* options) {
  DG_API_GUARD(return gemm(stream, a, b, d, c, options, false, false, "nt");)
}

DG_API dg_status dg_cublaslt_gemm_nn(dg_stream* stream, const dg_tensor* a, const dg_tensor* b, const dg_tensor* d,
                                     const dg_tensor* c, const dg_cublaslt_options* options) {
  DG_API_GUARD(return gemm(stream, a, b, d, c, options, false, true, "nn");)
}

DG_API dg_status dg_cublaslt_gemm_tn(dg_stream* stream, const dg_tensor* a, const dg_tensor* b, const dg_tensor* d,
                                     const dg_tensor* c, const dg_cublaslt_options* options) {
  DG_API_GUARD(return gemm(stream, a, b, d, c, options, true, true, "tn");)
}

DG_API dg_status dg_cublaslt_gemm_tt(dg_stream* stream, const dg_tensor* a, const dg_tensor* b, const dg_tensor* d,
                                     const dg_tensor* c, const dg_cublaslt_options* options) {
  DG_API_GUARD(return gemm(stream, a, b, d, c, options, true, false, "tt");)
}

}  // extern "C"
