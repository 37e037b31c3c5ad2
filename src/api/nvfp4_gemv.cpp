// dg_nvfp4_gemv: argument validation, then ops/nvfp4_gemv.
#include <cstdint>
#include <string>

#include "ops/nvfp4_gemv.h"
#include "runtime/options.h"
#include "runtime/status.h"
#include "runtime/stream.h"
#include "runtime/tensor.h"

namespace {

// Size of dimension `d`, with the batch dimension of a rank-2 tensor read as 1.
int64_t size_at(const dg_tensor_s& t, int d) { return d < t.rank ? t.sizes[d] : 1; }
int64_t stride_at(const dg_tensor_s& t, int d) { return d < t.rank ? t.strides[d] : 0; }

dg_status check_shape(const dg_tensor_s& t, const char* arg, int rank, std::initializer_list<int64_t> want,
                      const char* expected) {
  if (t.rank != rank)
    return dg::fail(DG_ERROR_INVALID_ARGUMENT, "{}: rank {} but a has rank {} (expected {}); got {}", arg, t.rank,
                    rank, expected, dg::describe(t));
  int d = 0;
  for (int64_t w : want) {
    if (d < rank && w >= 0 && t.sizes[d] != w)
      return dg::fail(DG_ERROR_INVALID_ARGUMENT, "{}: size {} of dimension {} (expected {}, i.e. {}); got {}", arg,
                      t.sizes[d], d, w, expected, dg::describe(t));
    ++d;
  }
  for (int i = 0; i < rank; ++i)
    if (t.strides[i] < 0)
      return dg::fail(DG_ERROR_INVALID_ARGUMENT, "{}: negative stride {} in dimension {}; got {}", arg, t.strides[i],
                      i, dg::describe(t));
  return DG_SUCCESS;
}

// The K dimension (1) must be contiguous.
dg_status check_k_contiguous(const dg_tensor_s& t, const char* arg) {
  if (t.sizes[1] > 1 && t.strides[1] != 1)
    return dg::fail(DG_ERROR_INVALID_ARGUMENT, "{}: stride {} in the K dimension (1), expected 1; got {}", arg,
                    t.strides[1], dg::describe(t));
  return DG_SUCCESS;
}

// Byte address and the strides of the dimensions that are walked (rows of a/sfa, batches of all)
// are multiples of `bytes`.
bool aligned(const dg_tensor_s& t, bool rows_walked, int64_t bytes) {
  if (reinterpret_cast<uintptr_t>(t.data) % bytes != 0) return false;
  if (rows_walked && t.sizes[0] > 1 && stride_at(t, 0) % bytes != 0) return false;
  if (size_at(t, 2) > 1 && stride_at(t, 2) % bytes != 0) return false;
  return true;
}

dg_status check_aligned8(const dg_tensor_s& t, const char* arg, bool rows_walked) {
  if (aligned(t, rows_walked, 8)) return DG_SUCCESS;
  return dg::fail(DG_ERROR_INVALID_ARGUMENT,
                  "{}: data pointer {} or its {}batch stride is not a multiple of 8 bytes (loads are 8 or 16 bytes "
                  "wide); got {}",
                  arg, t.data, rows_walked ? "row or " : "", dg::describe(t));
}

dg_status nvfp4_gemv(dg_stream* stream, const dg_tensor* a, const dg_tensor* sfa, const dg_tensor* b,
                     const dg_tensor* sfb, const dg_tensor* c, const dg_nvfp4_gemv_options* options) {
  DG_TRY(dg::check_stream(stream, "stream"));
  DG_TRY(dg::check_tensor(a, "a"));
  DG_TRY(dg::check_tensor(sfa, "sfa"));
  DG_TRY(dg::check_tensor(b, "b"));
  DG_TRY(dg::check_tensor(sfb, "sfb"));
  DG_TRY(dg::check_tensor(c, "c"));
  DG_TRY(dg::check_dtype(*a, "a", {DG_DTYPE_FLOAT4_E2M1X2}));
  DG_TRY(dg::check_dtype(*sfa, "sfa", {DG_DTYPE_FLOAT8_E4M3}));
  DG_TRY(dg::check_dtype(*b, "b", {DG_DTYPE_FLOAT4_E2M1X2}));
  DG_TRY(dg::check_dtype(*sfb, "sfb", {DG_DTYPE_FLOAT8_E4M3}));
  DG_TRY(dg::check_dtype(*c, "c", {DG_DTYPE_FLOAT16}));
  DG_TRY(dg::check_rank(*a, "a", {2, 3}));

  dg_nvfp4_gemv_options opts;
  DG_TRY(dg::read_options(options, dg_nvfp4_gemv_options DG_NVFP4_GEMV_OPTIONS_INIT, sizeof(dg_nvfp4_gemv_options),
                          "options", "DG_NVFP4_GEMV_OPTIONS_INIT", &opts));

  const int rank = a->rank;
  // Sizes are >= 0 (dg_tensor_create); bound them before K = 2 * sizes[1] can wrap.
  if (a->sizes[0] > INT32_MAX || a->sizes[1] > INT32_MAX / 2 || size_at(*a, 2) > INT32_MAX)
    return dg::fail(DG_ERROR_INVALID_ARGUMENT, "a: M, K or L above 2^31 - 1; got {}", dg::describe(*a));
  const int64_t M = a->sizes[0], K = 2 * a->sizes[1], L = size_at(*a, 2);
  if (K % 32 != 0)
    return dg::fail(DG_ERROR_INVALID_ARGUMENT,
                    "a: K = 2 * sizes[1] = {} is not a multiple of 32 (two 16-element scale blocks per 16-byte load)",
                    K);
  const char* rows = rank == 3 ? "[M, K/2, L]" : "[M, K/2]";
  DG_TRY(check_shape(*a, "a", rank, {M, K / 2, L}, rows));
  DG_TRY(check_shape(*sfa, "sfa", rank, {M, K / 16, L}, rank == 3 ? "[M, K/16, L]" : "[M, K/16]"));
  DG_TRY(check_shape(*b, "b", rank, {-1, K / 2, L}, rank == 3 ? "[Np, K/2, L]" : "[Np, K/2]"));
  DG_TRY(check_shape(*sfb, "sfb", rank, {-1, K / 16, L}, rank == 3 ? "[Np, K/16, L]" : "[Np, K/16]"));
  DG_TRY(check_shape(*c, "c", rank, {M, 1, L}, rank == 3 ? "[M, 1, L]" : "[M, 1]"));
  if (b->sizes[0] < 1)
    return dg::fail(DG_ERROR_INVALID_ARGUMENT, "b: {} rows (expected at least 1: row 0 is the vector); got {}",
                    b->sizes[0], dg::describe(*b));
  if (sfb->sizes[0] < 1)
    return dg::fail(DG_ERROR_INVALID_ARGUMENT, "sfb: {} rows (expected at least 1: row 0 scales the vector); got {}",
                    sfb->sizes[0], dg::describe(*sfb));
  DG_TRY(check_k_contiguous(*a, "a"));
  DG_TRY(check_k_contiguous(*sfa, "sfa"));
  DG_TRY(check_k_contiguous(*b, "b"));
  DG_TRY(check_k_contiguous(*sfb, "sfb"));
  DG_TRY(dg::check_alignment(*c, "c", 2));
  DG_TRY(dg::check_no_overlap(*c, "c"));  // rows and batches written in parallel: none may share an element
  if (M == 0 || L == 0) return DG_SUCCESS;
  // c is written for every (m, l); a, sfa and the vector are read only when K > 0.
  const struct {
    const dg_tensor_s* t;
    const char* name;
    bool read;
  } operands[] = {{a, "a", K > 0}, {sfa, "sfa", K > 0}, {b, "b", K > 0}, {sfb, "sfb", K > 0}, {c, "c", true}};
  for (const auto& op : operands)
    if (op.read && op.t->data == nullptr) return dg::fail(DG_ERROR_INVALID_ARGUMENT, "{}: data is NULL", op.name);

  // Vector width: 16-byte loads need a and b (and their walked strides) 16-byte aligned and sfa,
  // sfb 2-byte aligned (two scales per load); 8-byte loads need 8-byte a and b only.
  DG_TRY(check_aligned8(*a, "a", true));
  DG_TRY(check_aligned8(*b, "b", false));
  const bool v16 = aligned(*a, true, 16) && aligned(*b, false, 16) && aligned(*sfa, true, 2) && aligned(*sfb, false, 2);

  dg::ops::Nvfp4GemvProblem p;
  p.M = static_cast<int>(M);
  p.K = static_cast<int>(K);
  p.L = static_cast<int>(L);
  p.a = a->data;
  p.sfa = sfa->data;
  p.b = b->data;
  p.sfb = sfb->data;
  p.c = c->data;
  p.a_sm = a->strides[0];
  p.a_sl = stride_at(*a, 2);
  p.sfa_sm = sfa->strides[0];
  p.sfa_sl = stride_at(*sfa, 2);
  p.b_sl = stride_at(*b, 2);
  p.sfb_sl = stride_at(*sfb, 2);
  p.c_sm = c->strides[0];
  p.c_sl = stride_at(*c, 2);

  dg::ops::Nvfp4GemvOverrides o;
  o.threads_per_row = opts.threads_per_row;
  o.row_groups = opts.row_groups;
  o.chunks = opts.chunks_per_thread;
  o.rows = opts.rows_per_round;
  o.vec = opts.vector_bytes;
  o.grid = opts.grid_blocks;
  o.hint = opts.cache_hint;
  o.prefetch = opts.prefetch;
  return dg::ops::run_nvfp4_gemv(*stream, p, v16 ? 16 : 8, o);
}

}  // namespace

extern "C" {

DG_API dg_status dg_nvfp4_gemv(dg_stream* stream, const dg_tensor* a, const dg_tensor* sfa, const dg_tensor* b,
                               const dg_tensor* sfb, const dg_tensor* c, const dg_nvfp4_gemv_options* options) {
  DG_API_GUARD({ return nvfp4_gemv(stream, a, sfa, b, sfb, c, options); })
}

}  // extern "C"
