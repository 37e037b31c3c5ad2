// dg_tf32_hc_prenorm_gemm: argument validation, then ops/hc_prenorm_gemm.
#include <cstdint>

#include "ops/hc_prenorm_gemm.h"
#include "runtime/status.h"
#include "runtime/stream.h"
#include "runtime/tensor.h"

namespace {

// Row and k indices (rounded up to a block or a chunk) stay in int32 on the device.
constexpr int64_t kMaxDim = (int64_t{1} << 31) - 256;

dg_status check_shape(const dg_tensor_s& t, const char* arg, std::initializer_list<int64_t> want,
                      const char* expected) {
  int d = 0;
  for (int64_t w : want) {
    if (t.sizes[d] != w)
      return dg::fail(DG_ERROR_INVALID_ARGUMENT, "{}: size {} of dimension {} (expected {}, i.e. {}); got {}", arg,
                      t.sizes[d], d, w, expected, dg::describe(t));
    ++d;
  }
  for (int i = 0; i < t.rank; ++i)
    if (t.strides[i] < 0)
      return dg::fail(DG_ERROR_INVALID_ARGUMENT, "{}: negative stride {} in dimension {}; got {}", arg, t.strides[i],
                      i, dg::describe(t));
  return DG_SUCCESS;
}

// The last dimension has stride 1 (or a single element).
dg_status check_inner_contiguous(const dg_tensor_s& t, const char* arg, const char* dim) {
  const int last = t.rank - 1;
  if (t.sizes[last] > 1 && t.strides[last] != 1)
    return dg::fail(DG_ERROR_INVALID_ARGUMENT, "{}: stride {} along {} (the last dimension), expected 1; got {}", arg,
                    t.strides[last], dim, dg::describe(t));
  return DG_SUCCESS;
}

// 16-byte loads: the data pointer and the row stride (when there are rows to step) 16-byte aligned.
bool rows_aligned16(const dg_tensor_s& t, size_t elem) {
  if (reinterpret_cast<uintptr_t>(t.data) % 16 != 0) return false;
  return t.sizes[0] <= 1 || (t.strides[0] * static_cast<int64_t>(elem)) % 16 == 0;
}

dg_status hc_prenorm(dg_stream* stream, const dg_tensor* a, const dg_tensor* b, const dg_tensor* d,
                     const dg_tensor* sqr_sum, int32_t num_splits) {
  DG_TRY(dg::check_stream(stream, "stream"));
  DG_TRY(dg::check_tensor(a, "a"));
  DG_TRY(dg::check_tensor(b, "b"));
  DG_TRY(dg::check_tensor(d, "d"));
  DG_TRY(dg::check_tensor(sqr_sum, "sqr_sum"));
  if (num_splits < 0 || num_splits > dg::ops::kHcMaxSplits)
    return dg::fail(DG_ERROR_INVALID_ARGUMENT, "num_splits: {} (expected 0 for no split, or 1..{})", num_splits,
                    dg::ops::kHcMaxSplits);
  DG_TRY(dg::check_dtype(*a, "a", {DG_DTYPE_BFLOAT16}));
  DG_TRY(dg::check_dtype(*b, "b", {DG_DTYPE_FLOAT32}));
  DG_TRY(dg::check_dtype(*d, "d", {DG_DTYPE_FLOAT32}));
  DG_TRY(dg::check_dtype(*sqr_sum, "sqr_sum", {DG_DTYPE_FLOAT32}));
  DG_TRY(dg::check_rank(*a, "a", {2}));
  DG_TRY(dg::check_rank(*b, "b", {2}));
  const bool split = num_splits > 0;
  DG_TRY(dg::check_rank(*d, "d", {split ? 3 : 2}));
  DG_TRY(dg::check_rank(*sqr_sum, "sqr_sum", {split ? 2 : 1}));
  const int64_t M = a->sizes[0], K = a->sizes[1], N = b->sizes[0];
  if (M >= kMaxDim || K >= kMaxDim)
    return dg::fail(DG_ERROR_INVALID_ARGUMENT, "a: M or K is {} or more; got {}", kMaxDim, dg::describe(*a));
  if (N < 1)
    return dg::fail(DG_ERROR_INVALID_ARGUMENT, "b: N = 0 rows (expected 1..{}); got {}", dg::ops::kHcMaxN,
                    dg::describe(*b));
  if (N > dg::ops::kHcMaxN)
    return dg::fail(DG_ERROR_UNSUPPORTED, "b: N = {} rows; the pre-norm GEMM takes N <= {} (hyper-connection widths); got {}",
                    N, dg::ops::kHcMaxN, dg::describe(*b));
  const int64_t S = split ? num_splits : 1;
  DG_TRY(check_shape(*a, "a", {M, K}, "[M, K]"));
  DG_TRY(check_shape(*b, "b", {N, K}, "[N, K] with a's K"));
  if (split) {
    DG_TRY(check_shape(*d, "d", {S, M, N}, "[num_splits, M, N]"));
    DG_TRY(check_shape(*sqr_sum, "sqr_sum", {S, M}, "[num_splits, M]"));
  } else {
    DG_TRY(check_shape(*d, "d", {M, N}, "[M, N]"));
    DG_TRY(check_shape(*sqr_sum, "sqr_sum", {M}, "[M]"));
  }
  DG_TRY(check_inner_contiguous(*a, "a", "K"));
  DG_TRY(check_inner_contiguous(*b, "b", "K"));
  DG_TRY(check_inner_contiguous(*d, "d", "N"));
  DG_TRY(dg::check_alignment(*a, "a", 2));
  DG_TRY(dg::check_alignment(*b, "b", 4));
  DG_TRY(dg::check_alignment(*d, "d", 4));
  DG_TRY(dg::check_alignment(*sqr_sum, "sqr_sum", 4));
  DG_TRY(dg::check_no_overlap(*d, "d"));  // written by many threads: no two elements may share memory
  DG_TRY(dg::check_no_overlap(*sqr_sum, "sqr_sum"));
  if (M == 0) return DG_SUCCESS;
  const struct {
    const dg_tensor_s* t;
    const char* name;
    bool used;
  } operands[] = {{a, "a", K > 0}, {b, "b", K > 0}, {d, "d", true}, {sqr_sum, "sqr_sum", true}};
  for (const auto& op : operands)
    if (op.used && op.t->data == nullptr) return dg::fail(DG_ERROR_INVALID_ARGUMENT, "{}: data is NULL", op.name);

  dg::ops::HcPrenormParams p{};
  p.a = a->data;
  p.b = static_cast<const float*>(b->data);
  p.d = static_cast<float*>(d->data);
  p.s = static_cast<float*>(sqr_sum->data);
  p.lda = a->strides[0];
  p.ldb = b->strides[0];
  p.d_split = split ? d->strides[0] : 0;
  p.d_row = d->strides[split ? 1 : 0];
  p.s_split = split ? sqr_sum->strides[0] : 0;
  p.s_row = sqr_sum->strides[split ? 1 : 0];
  p.m = static_cast<int32_t>(M);
  p.n = static_cast<int32_t>(N);
  p.k = static_cast<int32_t>(K);
  p.chunks_per_split = dg::ops::hc_prenorm_chunks_per_split(K, static_cast<int>(S));
  const bool vec = rows_aligned16(*a, 2) && rows_aligned16(*b, 4);
  return dg::ops::run_hc_prenorm_gemm(*stream, p, static_cast<int>(S), vec);
}

}  // namespace

extern "C" {

DG_API dg_status dg_tf32_hc_prenorm_gemm(dg_stream* stream, const dg_tensor* a, const dg_tensor* b,
                                         const dg_tensor* d, const dg_tensor* sqr_sum, int32_t num_splits) {
  DG_API_GUARD({ return hc_prenorm(stream, a, b, d, sqr_sum, num_splits); })
}

}  // extern "C"
