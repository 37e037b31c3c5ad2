// dg_fp8_mqa_logits (both layouts), the paged calls and the layout query: argument validation, then
// ops/mqa_logits.
#include <algorithm>
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

// Both prefill entry points: dg_fp8_mqa_logits ([S_q, S_kv] logits; max_seqlen_k unused), and with
// `compressed` dg_fp8_mqa_logits_compressed ([S_q, max_seqlen_k]).
dg_status mqa_logits(dg_stream* stream, const dg_tensor* q, const dg_tensor* kv, const dg_tensor* kv_sf,
                     const dg_tensor* weights, const dg_tensor* ks, const dg_tensor* ke, const dg_tensor* logits,
                     int32_t clean_logits, bool compressed, int64_t max_seqlen_k) {
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
  if (compressed && clean_logits)
    return dg::fail(DG_ERROR_UNSUPPORTED,
                    "clean_logits: 1 with the compressed layout (no -inf is written there; DeepGEMM requires "
                    "clean_logits False with max_seqlen_k > 0): pass 0");
  if (compressed && (max_seqlen_k < 1 || max_seqlen_k > INT32_MAX))
    return dg::fail(DG_ERROR_INVALID_ARGUMENT,
                    "max_seqlen_k: {} (expected 1 to 2^31 - 1: the logits' columns; dg_fp8_mqa_logits writes the "
                    "[S_q, S_kv] layout)",
                    max_seqlen_k);

  const int64_t s_q = q->sizes[0], heads = q->sizes[1], head_dim = q->sizes[2], s_kv = kv->sizes[0];
  // The logits' columns: every key, or each token's keys from its first.
  const int64_t cols = compressed ? max_seqlen_k : s_kv;
  const char* const cols_name = compressed ? "max_seqlen_k" : "S_kv";
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
  DG_TRY(check_dim(*logits, "logits", 1, cols, compressed ? "max_seqlen_k" : "S_kv of kv"));

  // Memory orders.
  DG_TRY(check_tma_rows(*q, "q", 1, s_q * heads));
  int64_t token_stride = 0;  // H * stride(1), checked: a stride near INT64_MAX is a valid tensor
  DG_TRY(dg::checked_mul(heads, q->strides[1], &token_stride, "q"));
  if (s_q > 1 && q->strides[0] != token_stride)
    return dg::fail(DG_ERROR_INVALID_ARGUMENT,
                    "q: stride(0) = {} (expected H * stride(1) = {}: the (token, head) rows evenly spaced); got {}",
                    q->strides[0], token_stride, dg::describe(*q));
  DG_TRY(check_tma_rows(*kv, "kv", 0, s_kv));
  if (s_kv > 1 && kv_sf->strides[0] != 1)
    return dg::fail(DG_ERROR_INVALID_ARGUMENT, "kv_sf: must be contiguous (stride 1); got {}", dg::describe(*kv_sf));
  DG_TRY(dg::check_alignment(*kv_sf, "kv_sf", 16));
  if (heads > 1 && weights->strides[1] != 1)
    return dg::fail(DG_ERROR_INVALID_ARGUMENT, "weights: stride {} along H (expected 1); got {}", weights->strides[1],
                    dg::describe(*weights));
  // Read by TMA with the Q tiles: rows a multiple of 16 bytes apart, 16-byte aligned.
  if (s_q > 1 && (weights->strides[0] % 4 != 0 || weights->strides[0] < heads))
    return dg::fail(DG_ERROR_INVALID_ARGUMENT,
                    "weights: row stride {} (expected a multiple of 4 elements (16 bytes, TMA), at least H = {}); got {}",
                    weights->strides[0], heads, dg::describe(*weights));
  DG_TRY(dg::check_alignment(*weights, "weights", 16));
  const int64_t eb = static_cast<int64_t>(dg::dtype_size(logits->dtype));
  if (cols > 1 && logits->strides[1] != 1)
    return dg::fail(DG_ERROR_INVALID_ARGUMENT, "logits: stride {} along keys (expected 1); got {}", logits->strides[1],
                    dg::describe(*logits));
  if (s_q > 1 && (logits->strides[0] < cols || (logits->strides[0] * eb) % 16 != 0))
    return dg::fail(DG_ERROR_INVALID_ARGUMENT,
                    "logits: row stride {} (expected at least {} = {} and a multiple of 16 bytes; "
                    "dg_get_mqa_logits_layout gives one); got {}",
                    logits->strides[0], cols_name, cols, dg::describe(*logits));
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
  a.max_seqlen_k = compressed ? max_seqlen_k : 0;
  a.q = q->data;
  a.ld_q = s_q * heads > 1 ? q->strides[1] : head_dim;
  a.kv = kv->data;
  a.ld_kv = s_kv > 1 ? kv->strides[0] : head_dim;
  a.kv_sf = static_cast<const float*>(kv_sf->data);
  a.weights = static_cast<const float*>(weights->data);
  a.ld_weights = s_q > 1 ? weights->strides[0] : heads;
  a.ks = static_cast<const int32_t*>(ks->data);
  a.ke = static_cast<const int32_t*>(ke->data);
  a.logits = logits->data;
  a.ld_logits = s_q > 1 ? logits->strides[0] : dg::ops::mqa_logits_row_stride(cols, logits->dtype);
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

// ---- paged (decoding) ----

// Context lengths: INT32 [B] or [B, next_n], stride 1 along next_n. Sets *two_d.
dg_status check_context_lens(const dg_tensor_s& t, int64_t batch, int64_t next_n, bool* two_d) {
  const char* arg = "context_lens";
  DG_TRY(dg::check_dtype(t, arg, {DG_DTYPE_INT32}));
  DG_TRY(dg::check_rank(t, arg, {1, 2}));
  DG_TRY(check_dim(t, arg, 0, batch, "B of q"));
  *two_d = t.rank == 2;
  if (*two_d) {
    DG_TRY(check_dim(t, arg, 1, next_n, "next_n of q"));
    if (next_n > 1 && t.strides[1] != 1)
      return dg::fail(DG_ERROR_INVALID_ARGUMENT, "context_lens: stride {} along next_n (expected 1); got {}",
                      t.strides[1], dg::describe(t));
  } else if (batch > 1 && t.strides[0] != 1) {
    return dg::fail(DG_ERROR_INVALID_ARGUMENT, "context_lens: must be contiguous (stride 1); got {}", dg::describe(t));
  }
  if (batch > 1 && t.strides[0] < (*two_d ? next_n : 1))
    return dg::fail(DG_ERROR_INVALID_ARGUMENT, "context_lens: row stride {} (expected at least {}); got {}",
                    t.strides[0], *two_d ? next_n : 1, dg::describe(t));
  return dg::check_alignment(t, arg, 4);
}

// The schedule: INT32 [num_ctas + 1, 2] contiguous, num_ctas >= 1.
dg_status check_schedule(const dg_tensor_s& t, int64_t* num_ctas) {
  const char* arg = "schedule_meta";
  DG_TRY(dg::check_dtype(t, arg, {DG_DTYPE_INT32}));
  DG_TRY(dg::check_rank(t, arg, {2}));
  DG_TRY(check_dim(t, arg, 1, 2, "(sequence, segment) pairs"));
  if (t.sizes[0] < 2 || t.sizes[0] > 65536)
    return dg::fail(DG_ERROR_INVALID_ARGUMENT, "schedule_meta: {} rows (expected num_sms + 1 with 1 <= num_sms <= 65535); got {}",
                    t.sizes[0], dg::describe(t));
  if (t.strides[1] != 1 || t.strides[0] != 2)
    return dg::fail(DG_ERROR_INVALID_ARGUMENT, "schedule_meta: must be contiguous (strides (2, 1)); got {}",
                    dg::describe(t));
  DG_TRY(dg::check_alignment(t, arg, 4));
  *num_ctas = t.sizes[0] - 1;
  return DG_SUCCESS;
}

dg_status paged_metadata(dg_stream* stream, const dg_tensor* context_lens, int32_t block_kv, int32_t num_sms,
                         const dg_tensor* schedule_meta) {
  DG_TRY(dg::check_stream(stream, "stream"));
  DG_TRY(dg::check_tensor(context_lens, "context_lens"));
  DG_TRY(dg::check_tensor(schedule_meta, "schedule_meta"));
  if (block_kv != 64)
    return dg::fail(DG_ERROR_UNSUPPORTED, "block_kv: {} (expected 64: SM90 cache blocks hold 64 keys)", block_kv);
  if (num_sms < 1 || num_sms > 65535)
    return dg::fail(DG_ERROR_INVALID_ARGUMENT, "num_sms: {} (expected 1 to 65535)", num_sms);
  const int64_t batch = context_lens->rank >= 1 ? context_lens->sizes[0] : 0;
  const int64_t cols = context_lens->rank == 2 ? context_lens->sizes[1] : 1;
  if (context_lens->rank == 2 && cols != 1 && cols != 2 && cols != 4)
    return dg::fail(DG_ERROR_UNSUPPORTED, "context_lens: next_n = {} (expected 1, 2 or 4); shape {}", cols,
                    dg::describe(*context_lens));
  bool two_d = false;
  DG_TRY(check_context_lens(*context_lens, batch, cols, &two_d));
  if (batch > INT32_MAX - 1)
    return dg::fail(DG_ERROR_UNSUPPORTED, "context_lens: B = {} exceeds 2^31 - 2", batch);
  int64_t num_ctas = 0;
  DG_TRY(check_schedule(*schedule_meta, &num_ctas));
  if (num_ctas != num_sms)
    return dg::fail(DG_ERROR_INVALID_ARGUMENT, "schedule_meta: {} rows (expected num_sms + 1 = {}); shape {}",
                    schedule_meta->sizes[0], num_sms + 1, dg::describe(*schedule_meta));
  if (batch > 0) DG_TRY(check_data(*context_lens, "context_lens"));
  DG_TRY(check_data(*schedule_meta, "schedule_meta"));
  dg::ops::PagedMqaMetadataArgs a;
  a.ctx = static_cast<const int32_t*>(context_lens->data);
  a.batch = batch;
  a.cols = static_cast<int>(cols);
  a.ld_ctx = batch > 1 ? context_lens->strides[0] : cols;
  a.num_sms = num_sms;
  a.schedule = static_cast<int32_t*>(schedule_meta->data);
  return dg::ops::run_paged_mqa_metadata(*stream, a, false);
}

dg_status check_paged_shape(int64_t heads, int64_t head_dim, int64_t next_n, const dg_tensor_s& q) {
  if (next_n != 1 && next_n != 2 && next_n != 4)
    return dg::fail(DG_ERROR_UNSUPPORTED, "q: next_n = {} (expected 1, 2 or 4); shape {}", next_n, dg::describe(q));
  return check_heads(heads, head_dim, q);
}

// The cache: [num_blocks, 64, 1, D + 4] bytes; a block is 64 rows of D FP8 values, then 64 FP32
// scales. Gives the block count and the bytes between blocks.
dg_status check_paged_cache(const dg_tensor* kv_cache, int64_t head_dim, int64_t* num_blocks_out,
                            int64_t* block_stride_out) {
  const int64_t num_blocks = kv_cache->sizes[0];
  if (kv_cache->sizes[1] != 64)
    return dg::fail(DG_ERROR_UNSUPPORTED, "kv_cache: {} keys per block (expected 64 on SM90); shape {}",
                    kv_cache->sizes[1], dg::describe(*kv_cache));
  DG_TRY(check_dim(*kv_cache, "kv_cache", 2, 1, "one KV head"));
  DG_TRY(check_dim(*kv_cache, "kv_cache", 3, head_dim + 4, "D of q + 4 (values, then the FP32 scale)"));
  if (num_blocks > INT32_MAX)
    return dg::fail(DG_ERROR_UNSUPPORTED, "kv_cache: {} blocks exceed 2^31 - 1", num_blocks);
  if (kv_cache->strides[3] != 1 || kv_cache->strides[1] != head_dim + 4)
    return dg::fail(DG_ERROR_INVALID_ARGUMENT,
                    "kv_cache: strides (., {}, ., {}) (expected stride(1) = D + 4 = {} and stride(3) = 1: each block "
                    "holds its 64 rows of values, then their scales); got {}",
                    kv_cache->strides[1], kv_cache->strides[3], head_dim + 4, dg::describe(*kv_cache));
  const int64_t block_stride = num_blocks > 1 ? kv_cache->strides[0] : 64 * (head_dim + 4);
  if (block_stride % 16 != 0 || block_stride < 64 * (head_dim + 4))
    return dg::fail(DG_ERROR_INVALID_ARGUMENT,
                    "kv_cache: blocks {} bytes apart (stride(0)); TMA needs a multiple of 16, at least 64 * (D + 4) "
                    "= {}; got {}",
                    block_stride, 64 * (head_dim + 4), dg::describe(*kv_cache));
  DG_TRY(dg::check_alignment(*kv_cache, "kv_cache", 16));
  *num_blocks_out = num_blocks;
  *block_stride_out = block_stride;
  return DG_SUCCESS;
}

// q's (token, head) rows evenly spaced for one TMA map, and logits' rows as TMA writes them.
dg_status check_paged_memory_orders(const dg_tensor* q, const dg_tensor* logits, int64_t batch, int64_t next_n,
                                    int64_t heads, int64_t max_context_len) {
  const int64_t rows = batch * next_n;
  DG_TRY(check_tma_rows(*q, "q", 2, rows * heads));
  int64_t token_stride = 0, batch_stride = 0;  // H * stride(2), next_n * H * stride(2), checked
  DG_TRY(dg::checked_mul(heads, q->strides[2], &token_stride, "q"));
  DG_TRY(dg::checked_mul(next_n, token_stride, &batch_stride, "q"));
  if (rows * heads > 1 && ((heads > 1 || next_n > 1) && q->strides[1] != token_stride))
    return dg::fail(DG_ERROR_INVALID_ARGUMENT,
                    "q: stride(1) = {} (expected H * stride(2) = {}: the (token, head) rows evenly spaced); got {}",
                    q->strides[1], token_stride, dg::describe(*q));
  if (batch > 1 && q->strides[0] != batch_stride)
    return dg::fail(DG_ERROR_INVALID_ARGUMENT,
                    "q: stride(0) = {} (expected next_n * H * stride(2) = {}: the (token, head) rows evenly spaced); "
                    "got {}",
                    q->strides[0], batch_stride, dg::describe(*q));
  const int64_t eb = static_cast<int64_t>(dg::dtype_size(logits->dtype));
  if (max_context_len > 1 && logits->strides[1] != 1)
    return dg::fail(DG_ERROR_INVALID_ARGUMENT, "logits: stride {} along keys (expected 1); got {}", logits->strides[1],
                    dg::describe(*logits));
  if (rows > 1 && (logits->strides[0] < max_context_len || (logits->strides[0] * eb) % 16 != 0))
    return dg::fail(DG_ERROR_INVALID_ARGUMENT,
                    "logits: row stride {} (expected at least max_context_len = {} and a multiple of 16 bytes; "
                    "dg_get_mqa_logits_layout gives one); got {}",
                    logits->strides[0], max_context_len, dg::describe(*logits));
  DG_TRY(dg::check_alignment(*logits, "logits", 16));
  return DG_SUCCESS;
}

dg_status paged_mqa_logits(dg_stream* stream, const dg_tensor* q, const dg_tensor* kv_cache, const dg_tensor* weights,
                           const dg_tensor* context_lens, const dg_tensor* block_table,
                           const dg_tensor* schedule_meta, int64_t max_context_len, const dg_tensor* logits,
                           int32_t clean_logits) {
  DG_TRY(dg::check_stream(stream, "stream"));
  DG_TRY(dg::check_tensor(q, "q"));
  DG_TRY(dg::check_tensor(kv_cache, "kv_cache"));
  DG_TRY(dg::check_tensor(weights, "weights"));
  DG_TRY(dg::check_tensor(context_lens, "context_lens"));
  DG_TRY(dg::check_tensor(block_table, "block_table"));
  DG_TRY(dg::check_tensor(schedule_meta, "schedule_meta"));
  DG_TRY(dg::check_tensor(logits, "logits"));
  DG_TRY(dg::check_dtype(*q, "q", {DG_DTYPE_FLOAT8_E4M3}));
  DG_TRY(dg::check_dtype(*kv_cache, "kv_cache", {DG_DTYPE_UINT8}));
  DG_TRY(dg::check_dtype(*weights, "weights", {DG_DTYPE_FLOAT32}));
  DG_TRY(dg::check_dtype(*block_table, "block_table", {DG_DTYPE_INT32}));
  DG_TRY(dg::check_dtype(*logits, "logits", {DG_DTYPE_FLOAT32, DG_DTYPE_BFLOAT16}));
  DG_TRY(dg::check_rank(*q, "q", {4}));
  DG_TRY(dg::check_rank(*kv_cache, "kv_cache", {4}));
  DG_TRY(dg::check_rank(*weights, "weights", {2}));
  DG_TRY(dg::check_rank(*block_table, "block_table", {2}));
  DG_TRY(dg::check_rank(*logits, "logits", {2}));
  if (clean_logits != 0 && clean_logits != 1)
    return dg::fail(DG_ERROR_INVALID_ARGUMENT, "clean_logits: {} (expected 0 or 1)", clean_logits);
  if (max_context_len < 0 || max_context_len > INT32_MAX)
    return dg::fail(DG_ERROR_INVALID_ARGUMENT, "max_context_len: {} (expected 0 to 2^31 - 1)", max_context_len);

  const int64_t batch = q->sizes[0], next_n = q->sizes[1], heads = q->sizes[2], head_dim = q->sizes[3];
  DG_TRY(check_paged_shape(heads, head_dim, next_n, *q));
  const int64_t rows = batch * next_n;
  if (rows * heads > INT32_MAX)
    return dg::fail(DG_ERROR_UNSUPPORTED, "q: B * next_n * H = {} rows exceed 2^31 - 1; shape {}", rows * heads,
                    dg::describe(*q));
  int64_t num_blocks = 0, block_stride = 0;
  DG_TRY(check_paged_cache(kv_cache, head_dim, &num_blocks, &block_stride));
  DG_TRY(check_dim(*weights, "weights", 0, rows, "B * next_n of q"));
  DG_TRY(check_dim(*weights, "weights", 1, heads, "H of q"));
  if (heads > 1 && weights->strides[1] != 1)
    return dg::fail(DG_ERROR_INVALID_ARGUMENT, "weights: stride {} along H (expected 1); got {}", weights->strides[1],
                    dg::describe(*weights));
  // Read by TMA with the Q tiles: rows a multiple of 16 bytes apart, 16-byte aligned.
  if (rows > 1 && (weights->strides[0] % 4 != 0 || weights->strides[0] < heads))
    return dg::fail(DG_ERROR_INVALID_ARGUMENT,
                    "weights: row stride {} (expected a multiple of 4 elements (16 bytes, TMA), at least H = {}); got {}",
                    weights->strides[0], heads, dg::describe(*weights));
  DG_TRY(dg::check_alignment(*weights, "weights", 16));
  bool two_d = false;
  DG_TRY(check_context_lens(*context_lens, batch, next_n, &two_d));
  DG_TRY(check_dim(*block_table, "block_table", 0, batch, "B of q"));
  const int64_t max_blocks = block_table->sizes[1];
  if (max_blocks > 1 && block_table->strides[1] != 1)
    return dg::fail(DG_ERROR_INVALID_ARGUMENT, "block_table: stride {} along blocks (expected 1); got {}",
                    block_table->strides[1], dg::describe(*block_table));
  DG_TRY(dg::check_alignment(*block_table, "block_table", 4));
  int64_t num_ctas = 0;
  DG_TRY(check_schedule(*schedule_meta, &num_ctas));
  DG_TRY(check_dim(*logits, "logits", 0, rows, "B * next_n of q"));
  DG_TRY(check_dim(*logits, "logits", 1, max_context_len, "max_context_len"));

  DG_TRY(check_paged_memory_orders(q, logits, batch, next_n, heads, max_context_len));
  if (rows == 0 || max_context_len == 0) return DG_SUCCESS;
  DG_TRY(check_data(*q, "q"));
  DG_TRY(check_data(*weights, "weights"));
  DG_TRY(check_data(*context_lens, "context_lens"));
  DG_TRY(check_data(*schedule_meta, "schedule_meta"));
  DG_TRY(check_data(*logits, "logits"));
  if (num_blocks > 0) DG_TRY(check_data(*kv_cache, "kv_cache"));
  if (max_blocks > 0) DG_TRY(check_data(*block_table, "block_table"));

  dg::ops::PagedMqaLogitsArgs a;
  a.batch = batch;
  a.num_blocks = num_blocks;
  // Keys past max_context_len are never read: the table's capacity counts up to there.
  a.max_blocks = std::min<int64_t>(max_blocks, (max_context_len + 63) / 64);
  a.max_context_len = max_context_len;
  a.next_n = static_cast<int>(next_n);
  a.heads = static_cast<int>(heads);
  a.head_dim = static_cast<int>(head_dim);
  a.logits_dtype = logits->dtype;
  a.clean = clean_logits != 0;
  a.ctx_2d = two_d;
  a.num_ctas = static_cast<int>(num_ctas);
  a.q = q->data;
  a.ld_q = rows * heads > 1 ? q->strides[2] : head_dim;
  a.kv_cache = kv_cache->data;
  a.block_stride = block_stride;
  a.weights = static_cast<const float*>(weights->data);
  a.ld_weights = rows > 1 ? weights->strides[0] : heads;
  a.ctx = static_cast<const int32_t*>(context_lens->data);
  a.ld_ctx = batch > 1 ? context_lens->strides[0] : (two_d ? next_n : 1);
  a.block_table = static_cast<const int32_t*>(block_table->data);
  a.ld_block_table = block_table->strides[0];
  a.schedule = static_cast<const int32_t*>(schedule_meta->data);
  a.logits = logits->data;
  a.ld_logits = rows > 1 ? logits->strides[0] : dg::ops::mqa_logits_row_stride(max_context_len, logits->dtype);
  return dg::ops::run_paged_mqa_logits(*stream, a, false);
}

dg_status paged_prepare(dg_stream* stream, int32_t heads, int32_t head_dim, int32_t next_n, dg_dtype logits_dtype) {
  DG_TRY(dg::check_stream(stream, "stream"));
  if (heads != 32 && heads != 64)
    return dg::fail(DG_ERROR_UNSUPPORTED, "heads: {} (expected 32 or 64)", heads);
  if (head_dim != 64 && head_dim != 128)
    return dg::fail(DG_ERROR_UNSUPPORTED, "head_dim: {} (expected 64 or 128)", head_dim);
  if (next_n != 1 && next_n != 2 && next_n != 4)
    return dg::fail(DG_ERROR_UNSUPPORTED, "next_n: {} (expected 1, 2 or 4)", next_n);
  DG_TRY(check_logits_dtype(logits_dtype, "logits_dtype"));
  dg::ops::PagedMqaLogitsArgs a;
  a.heads = heads;
  a.head_dim = head_dim;
  a.next_n = next_n;
  a.logits_dtype = logits_dtype;
  return dg::ops::prepare_paged_mqa(*stream, a);
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
    return mqa_logits(stream, q, kv, kv_sf, weights, cu_seq_len_k_start, cu_seq_len_k_end, logits, clean_logits, false,
                      0);
  })
}

DG_API dg_status dg_fp8_mqa_logits_compressed(dg_stream* stream, const dg_tensor* q, const dg_tensor* kv,
                                              const dg_tensor* kv_sf, const dg_tensor* weights,
                                              const dg_tensor* cu_seq_len_k_start, const dg_tensor* cu_seq_len_k_end,
                                              int64_t max_seqlen_k, const dg_tensor* logits, int32_t clean_logits) {
  DG_API_GUARD({
    return mqa_logits(stream, q, kv, kv_sf, weights, cu_seq_len_k_start, cu_seq_len_k_end, logits, clean_logits, true,
                      max_seqlen_k);
  })
}

DG_API dg_status dg_get_paged_mqa_logits_metadata(dg_stream* stream, const dg_tensor* context_lens, int32_t block_kv,
                                                  int32_t num_sms, const dg_tensor* schedule_meta) {
  DG_API_GUARD({ return paged_metadata(stream, context_lens, block_kv, num_sms, schedule_meta); })
}

DG_API dg_status dg_fp8_paged_mqa_logits(dg_stream* stream, const dg_tensor* q, const dg_tensor* kv_cache,
                                         const dg_tensor* weights, const dg_tensor* context_lens,
                                         const dg_tensor* block_table, const dg_tensor* schedule_meta,
                                         int64_t max_context_len, const dg_tensor* logits, int32_t clean_logits) {
  DG_API_GUARD({
    return paged_mqa_logits(stream, q, kv_cache, weights, context_lens, block_table, schedule_meta, max_context_len,
                            logits, clean_logits);
  })
}

DG_API dg_status dg_paged_mqa_logits_prepare(dg_stream* stream, int32_t heads, int32_t head_dim, int32_t next_n,
                                             dg_dtype logits_dtype) {
  DG_API_GUARD({ return paged_prepare(stream, heads, head_dim, next_n, logits_dtype); })
}

}  // extern "C"
