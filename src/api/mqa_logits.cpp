// dg_fp8_mqa_logits and its layout query: argument validation, then ops/mqa_logits.
#include <cstdint>

#include "api/gemm_common.h"
#include "dg.h"
#include "ops/mqa_logits.h"
#include "runtime/checked.h"
#include "runtime/status.h"
#include "runtime/stream.h"
#include "runtime/tensor.h"

namespace {

dg_status check_logits_dtype(dg_dtype dtype, const char* arg) {
  if (dtype != DG_DTYPE_FLOAT32 && dtype != DG_DTYPE_BFLOAT16)
    return dg::fail(DG_ERROR_INVALID_ARGUMENT, "{}: {} ({}) (expected DG_DTYPE_FLOAT32 or DG_DTYPE_BFLOAT16)", arg,
                    dtype, dg::dtype_name(dtype));
  return DG_SUCCESS;
}

// H and D of q: the kernels exist for H in {32, 64} and D in {64, 128}.
dg_status check_heads(int64_t heads, int64_t head_dim, const dg_tensor_s& q) {
  if (heads != 32 && heads != 64)
    return dg::fail(DG_ERROR_UNSUPPORTED, "q: H = {} heads (expected 32 or 64); shape {}", heads, dg::describe(q));
  if (head_dim != 64 && head_dim != 128)
    return dg::fail(DG_ERROR_UNSUPPORTED, "q: D = {} (head dim; expected 64 or 128); shape {}", head_dim,
                    dg::describe(q));
  return DG_SUCCESS;
}

// sizes[dim] == want, naming what the size is.
dg_status check_dim(const dg_tensor_s& t, const char* arg, int dim, int64_t want, const char* what) {
  return dg::check_size(t, arg, dim, want, what);
}

// FP8 rows of D bytes read by TMA: stride 1 along D, rows a multiple of 16 bytes apart and at
// least D, data 16-byte aligned.
dg_status check_tma_rows(const dg_tensor_s& t, const char* arg, int row_dim, int64_t rows) {
  const int last = t.rank - 1;
  if (t.strides[last] != 1 && t.sizes[last] > 1)
    return dg::fail(DG_ERROR_INVALID_ARGUMENT, "{}: stride {} along D (expected 1); got {}", arg, t.strides[last],
                    dg::describe(t));
  if (rows > 1 && (t.strides[row_dim] % 16 != 0 || t.strides[row_dim] < t.sizes[last]))
    return dg::fail(DG_ERROR_INVALID_ARGUMENT,
                    "{}: rows {} bytes apart (stride({})); TMA needs a multiple of 16 bytes, at least D = {}; got {}", arg,
                    t.strides[row_dim], row_dim, t.sizes[last], dg::describe(t));
  return dg::check_alignment(t, arg, 16);
}

dg_status check_data(const dg_tensor_s& t, const char* arg) {
  if (t.data == nullptr) return dg::fail(DG_ERROR_INVALID_ARGUMENT, "{}: data is NULL", arg);
  return DG_SUCCESS;
}

dg_status mqa_logits(dg_stream* stream, const dg_tensor* q, const dg_tensor* kv, const dg_tensor* kv_sf,
                     const dg_tensor* weights, const dg_tensor* ks, const dg_tensor* ke, const dg_tensor* logits,
                     int32_t clean_logits) {
  DG_TRY(dg::check_stream(stream, "stream"));
  DG_TRY(dg::check_tensor(q, "q"));
  DG_TRY(dg::check_tensor(kv, "kv"));
  DG_TRY(dg::check_tensor(kv_sf, "kv_sf"));
  DG_TRY(dg::check_tensor(weights, "weights"));
  DG_TRY(dg::check_tensor(ks, "cu_seq_len_k_start"));
  DG_TRY(dg::check_tensor(ke, "cu_seq_len_k_end"));
  DG_TRY(dg::check_tensor(logits, "logits"));
  DG_TRY(dg::check_dtype(*q, "q", {DG_DTYPE_FLOAT8_E4M3}));
  DG_TRY(dg::check_dtype(*kv, "kv", {DG_DTYPE_FLOAT8_E4M3}));
  DG_TRY(dg::check_dtype(*kv_sf, "kv_sf", {DG_DTYPE_FLOAT32}));
  DG_TRY(dg::check_dtype(*weights, "weights", {DG_DTYPE_FLOAT32}));
  DG_TRY(dg::check_dtype(*logits, "logits", {DG_DTYPE_FLOAT32, DG_DTYPE_BFLOAT16}));
  DG_TRY(dg::check_rank(*q, "q", {3}));
  DG_TRY(dg::check_rank(*kv, "kv", {2}));
  DG_TRY(dg::check_rank(*kv_sf, "kv_sf", {1}));
  DG_TRY(dg::check_rank(*weights, "weights", {2}));
  DG_TRY(dg::check_rank(*logits, "logits", {2}));
  if (clean_logits != 0 && clean_logits != 1)
    return dg::fail(DG_ERROR_INVALID_ARGUMENT, "clean_logits: {} (expected 0 or 1)", clean_logits);

  const int64_t s_q = q->sizes[0], heads = q->sizes[1], head_dim = q->sizes[2], s_kv = kv->sizes[0];
  DG_TRY(check_heads(heads, head_dim, *q));
  // The kernels index (token, head) rows and keys with 32-bit coordinates.
  if (s_q > INT32_MAX / heads)
    return dg::fail(DG_ERROR_UNSUPPORTED, "q: S_q * H = {} * {} rows exceed 2^31 - 1; shape {}", s_q, heads,
                    dg::describe(*q));
  if (s_kv > INT32_MAX)
    return dg::fail(DG_ERROR_UNSUPPORTED, "kv: S_kv = {} exceeds 2^31 - 1; shape {}", s_kv, dg::describe(*kv));
  DG_TRY(check_dim(*kv, "kv", 1, head_dim, "D of q"));
  DG_TRY(check_dim(*kv_sf, "kv_sf", 0, s_kv, "S_kv of kv"));
  DG_TRY(check_dim(*weights, "weights", 0, s_q, "S_q of q"));
  DG_TRY(check_dim(*weights, "weights", 1, heads, "H of q"));
  DG_TRY(dg::api::check_int_vector(*ks, "cu_seq_len_k_start", s_q, "S_q of q"));
  DG_TRY(dg::api::check_int_vector(*ke, "cu_seq_len_k_end", s_q, "S_q of q"));
  DG_TRY(check_dim(*logits, "logits", 0, s_q, "S_q of q"));
  DG_TRY(check_dim(*logits, "logits", 1, s_kv, "S_kv of kv"));

  // Memory orders.
  DG_TRY(check_tma_rows(*q, "q", 1, s_q * heads));
  if (s_q > 1 && q->strides[0] != heads * q->strides[1])
    return dg::fail(DG_ERROR_INVALID_ARGUMENT,
                    "q: stride(0) = {} (expected H * stride(1) = {}: the (token, head) rows evenly spaced); got {}",
                    q->strides[0], heads * q->strides[1], dg::describe(*q));
  DG_TRY(check_tma_rows(*kv, "kv", 0, s_kv));
  if (s_kv > 1 && kv_sf->strides[0] != 1)
    return dg::fail(DG_ERROR_INVALID_ARGUMENT, "kv_sf: must be contiguous (stride 1); got {}", dg::describe(*kv_sf));
  DG_TRY(dg::check_alignment(*kv_sf, "kv_sf", 16));
  if (heads > 1 && weights->strides[1] != 1)
    return dg::fail(DG_ERROR_INVALID_ARGUMENT, "weights: stride {} along H (expected 1); got {}", weights->strides[1],
                    dg::describe(*weights));
  DG_TRY(dg::check_alignment(*weights, "weights", 4));
  const int64_t eb = static_cast<int64_t>(dg::dtype_size(logits->dtype));
  if (s_kv > 1 && logits->strides[1] != 1)
    return dg::fail(DG_ERROR_INVALID_ARGUMENT, "logits: stride {} along keys (expected 1); got {}", logits->strides[1],
                    dg::describe(*logits));
  if (s_q > 1 && (logits->strides[0] < s_kv || (logits->strides[0] * eb) % 16 != 0))
    return dg::fail(DG_ERROR_INVALID_ARGUMENT,
                    "logits: row stride {} (expected at least S_kv = {} and a multiple of 16 bytes; "
                    "dg_get_mqa_logits_layout gives one); got {}",
                    logits->strides[0], s_kv, dg::describe(*logits));
  DG_TRY(dg::check_alignment(*logits, "logits", 16));
  if (s_q == 0 || s_kv == 0) return DG_SUCCESS;
  DG_TRY(check_data(*q, "q"));
  DG_TRY(check_data(*kv, "kv"));
  DG_TRY(check_data(*kv_sf, "kv_sf"));
  DG_TRY(check_data(*weights, "weights"));
  DG_TRY(check_data(*logits, "logits"));

  dg::ops::MqaLogitsArgs a;
  a.s_q = s_q;
  a.s_kv = s_kv;
  a.heads = static_cast<int>(heads);
  a.head_dim = static_cast<int>(head_dim);
  a.logits_dtype = logits->dtype;
  a.clean = clean_logits != 0;
  a.q = q->data;
  a.ld_q = s_q * heads > 1 ? q->strides[1] : head_dim;
  a.kv = kv->data;
  a.ld_kv = s_kv > 1 ? kv->strides[0] : head_dim;
  a.kv_sf = static_cast<const float*>(kv_sf->data);
  a.weights = static_cast<const float*>(weights->data);
  a.ld_weights = weights->strides[0];
  a.ks = static_cast<const int32_t*>(ks->data);
  a.ke = static_cast<const int32_t*>(ke->data);
  a.logits = logits->data;
  a.ld_logits = s_q > 1 ? logits->strides[0] : dg::ops::mqa_logits_row_stride(s_kv, logits->dtype);
  return dg::ops::run_mqa_logits(*stream, a, false);
}

dg_status mqa_logits_layout(int64_t seq_len, int64_t seq_len_kv, dg_dtype dtype, int64_t* out_sizes,
                            int64_t* out_strides, size_t* out_bytes) {
  if (seq_len < 0) return dg::fail(DG_ERROR_INVALID_ARGUMENT, "seq_len: {} is negative", seq_len);
  if (seq_len_kv < 0) return dg::fail(DG_ERROR_INVALID_ARGUMENT, "seq_len_kv: {} is negative", seq_len_kv);
  DG_TRY(check_logits_dtype(dtype, "logits_dtype"));
  int64_t stride = 0, elems = 0, bytes = 0;
  DG_TRY(dg::checked_align(seq_len_kv, 1024 / static_cast<int64_t>(dg::dtype_size(dtype)), &stride, "seq_len_kv"));
  DG_TRY(dg::checked_mul(seq_len, stride, &elems, "seq_len"));
  DG_TRY(dg::checked_mul(elems, static_cast<int64_t>(dg::dtype_size(dtype)), &bytes, "seq_len"));
  if (out_sizes) out_sizes[0] = seq_len, out_sizes[1] = seq_len_kv;
  if (out_strides) out_strides[0] = stride, out_strides[1] = 1;
  if (out_bytes) *out_bytes = static_cast<size_t>(bytes);
  return DG_SUCCESS;
}

}  // namespace

extern "C" {

DG_API dg_status dg_get_mqa_logits_layout(int64_t seq_len, int64_t seq_len_kv, dg_dtype logits_dtype,
                                          int64_t* out_sizes, int64_t* out_strides, size_t* out_bytes) {
  DG_API_GUARD({ return mqa_logits_layout(seq_len, seq_len_kv, logits_dtype, out_sizes, out_strides, out_bytes); })
}

DG_API dg_status dg_fp8_mqa_logits(dg_stream* stream, const dg_tensor* q, const dg_tensor* kv, const dg_tensor* kv_sf,
                                   const dg_tensor* weights, const dg_tensor* cu_seq_len_k_start,
                                   const dg_tensor* cu_seq_len_k_end, const dg_tensor* logits, int32_t clean_logits) {
  DG_API_GUARD({
    return mqa_logits(stream, q, kv, kv_sf, weights, cu_seq_len_k_start, cu_seq_len_k_end, logits, clean_logits);
  })
}

}  // extern "C"
