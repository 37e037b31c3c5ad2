// dg_bf16_einsum / dg_bf16_einsum_prepare and dg_fp8_einsum / dg_fp8_einsum_prepare: DeepGEMM's
// einsum forms parsed and validated, then the batched GEMMs of ops/batched_gemm.
#include <cstdint>
#include <string>
#include <utility>

#include "api/gemm_common.h"
#include "dg.h"
#include "ops/batched_gemm.h"
#include "runtime/device.h"
#include "runtime/status.h"
#include "runtime/stream.h"
#include "runtime/tensor.h"

namespace {

using dg::ops::BatchedArgs;
using dg::ops::BatchedOperand;
using dg::ops::Major;

enum class Form { kBmkBnkMn, kBhrHdrBhd, kBhdHdrBhr };
constexpr const char* kForms = "\"bmk,bnk->mn\", \"bhr,hdr->bhd\" or \"bhd,hdr->bhr\"";
// Expressions longer than this are no form of ours (and are not copied whole into the message).
constexpr size_t kMaxExprChars = 64;

// `expr` without its spaces; `forms` names the expected ones in the messages.
dg_status strip_expr(const char* expr, const char* forms, std::string* out) {
  if (expr == nullptr) return dg::fail(DG_ERROR_INVALID_ARGUMENT, "expr: NULL (expected {})", forms);
  std::string e;
  for (const char* p = expr; *p != '\0'; ++p) {
    if (e.size() > kMaxExprChars)
      return dg::fail(DG_ERROR_UNSUPPORTED, "expr: longer than {} characters (expected {})", kMaxExprChars, forms);
    if (*p != ' ') e.push_back(*p);
  }
  *out = std::move(e);
  return DG_SUCCESS;
}

dg_status parse_expr(const char* expr, Form* out) {
  std::string e;
  DG_TRY(strip_expr(expr, kForms, &e));
  if (e == "bmk,bnk->mn") *out = Form::kBmkBnkMn;
  else if (e == "bhr,hdr->bhd") *out = Form::kBhrHdrBhd;
  else if (e == "bhd,hdr->bhr") *out = Form::kBhdHdrBhr;
  else return dg::fail(DG_ERROR_UNSUPPORTED, "expr: \"{}\" (expected {})", e, kForms);
  return DG_SUCCESS;
}

// The options an einsum honours: the tile overrides and the SM cap (FP8: the promotion options and
// the 1D2D recipe too); the rest keep their defaults.
dg_status check_einsum_options(const dg_gemm_options& o, bool fp8) {
  if (o.alpha != 1.0f || o.beta != 1.0f)
    return dg::fail(DG_ERROR_INVALID_ARGUMENT,
                    "options.alpha, options.beta: {}, {} (einsum takes neither: expected 1, 1)", o.alpha, o.beta);
  if (o.split_k > 1)
    return dg::fail(DG_ERROR_INVALID_ARGUMENT, "options.split_k: {} (einsum splits K itself: expected 0 or 1)",
                    o.split_k);
  if (o.kernel == DG_GEMM_KERNEL_SKINNY)
    return dg::fail(DG_ERROR_INVALID_ARGUMENT, "options.kernel: DG_GEMM_KERNEL_SKINNY (einsum runs the tiled kernel)");
  if (!fp8 && (o.fp8_promotion != 0 || o.fp8_promotion_slices != 0))
    return dg::fail(DG_ERROR_INVALID_ARGUMENT, "options.fp8_promotion, fp8_promotion_slices: FP8 options (expected 0)");
  if (fp8 && o.recipe != DG_FP8_RECIPE_1D2D)
    return dg::fail(DG_ERROR_UNSUPPORTED,
                    "options.recipe: {} (the FP8 einsum takes DG_FP8_RECIPE_1D2D: per-token sfa, 128 x 128 block sfb)",
                    o.recipe);
  if (o.workspace != nullptr || o.workspace_size != 0)
    return dg::fail(DG_ERROR_INVALID_ARGUMENT,
                    "options.workspace: einsum takes none (expected NULL and workspace_size 0)");
  if (o.epilogue != nullptr)
    return dg::fail(DG_ERROR_INVALID_ARGUMENT, "options.epilogue: einsum has no fused epilogue (expected NULL)");
  return DG_SUCCESS;
}

// A rank-`rank` tensor of `dtype` with the sizes `want` (names: the dimensions' letters), stride 1 in
// its last dimension and the other strides multiples of 16 bytes where their size exceeds 1.
dg_status check_operand(const dg_tensor_s& t, const char* arg, dg_dtype dtype, const char* names,
                        std::initializer_list<int64_t> want) {
  const int rank = static_cast<int>(want.size());
  DG_TRY(dg::check_rank(t, arg, {rank}));
  DG_TRY(dg::check_dtype(t, arg, {dtype}));
  int i = 0;
  bool match = true;
  std::string expected;
  for (int64_t w : want) {
    match = match && t.sizes[i++] == w;
    expected += (expected.empty() ? "" : ", ") + std::to_string(w);
  }
  if (!match)
    return dg::fail(DG_ERROR_INVALID_ARGUMENT, "{}: shape {} (expected [{}] = [{}])", arg, dg::describe(t), names,
                    expected);
  if (dg::numel(t) == 0) return DG_SUCCESS;  // nothing is read or written: the strides never reach a TMA map
  if (t.sizes[rank - 1] > 1 && t.strides[rank - 1] != 1)
    return dg::fail(DG_ERROR_UNSUPPORTED, "{}: stride {} in the last dimension (expected 1); got {}", arg,
                    t.strides[rank - 1], dg::describe(t));
  const int64_t eb = static_cast<int64_t>(dg::dtype_size(dtype));
  for (int j = 0; j < rank - 1; ++j)
    if (t.sizes[j] > 1 && (t.strides[j] * eb % 16 != 0 || t.strides[j] <= 0))
      return dg::fail(DG_ERROR_UNSUPPORTED,
                      "{}: stride {} of dimension {} is not a positive multiple of 16 bytes (TMA); got {}", arg,
                      t.strides[j], j, dg::describe(t));
  if (t.data == nullptr) return dg::fail(DG_ERROR_INVALID_ARGUMENT, "{}: data is NULL", arg);
  return dg::check_alignment(t, arg, 16);
}

// Sizes the kernels index in 32 bits.
dg_status check_sizes(const dg_tensor_s& a, const dg_tensor_s& b) {
  for (const dg_tensor_s* t : {&a, &b})
    for (int j = 0; j < t->rank; ++j)
      if (t->sizes[j] > INT32_MAX)
        return dg::fail(DG_ERROR_UNSUPPORTED, "{}: size {} of dimension {} (expected below 2^31)", t == &a ? "a" : "b",
                        t->sizes[j], j);
  return DG_SUCCESS;
}

BatchedOperand operand(const dg_tensor_s& t, int batch_dim, int row_dim, Major major) {
  BatchedOperand op;
  op.data = t.data;
  op.ld = t.sizes[row_dim] > 1 ? t.strides[row_dim] : 0;
  op.batch_stride = t.sizes[batch_dim] > 1 ? t.strides[batch_dim] : 0;
  op.major = major;
  return op;
}

// "bmk,bnk->mn": a [s, m, k], b [s, n, k], d FLOAT32 [m, n], c NULL, FLOAT32 [m, n] or d.
dg_status reduced_args(const dg_tensor_s& a, const dg_tensor_s& b, const dg_tensor_s& d, const dg_tensor_s* c,
                       BatchedArgs* args) {
  DG_TRY(dg::check_rank(a, "a", {3}));
  const int64_t s = a.sizes[0], m = a.sizes[1], k = a.sizes[2];
  DG_TRY(check_operand(a, "a", DG_DTYPE_BFLOAT16, "s, m, k", {s, m, k}));
  DG_TRY(dg::check_rank(b, "b", {3}));
  DG_TRY(check_operand(b, "b", DG_DTYPE_BFLOAT16, "s, n, k as a", {s, b.sizes[1], k}));
  const int64_t n = b.sizes[1];
  DG_TRY(check_sizes(a, b));
  DG_TRY(dg::check_rank(d, "d", {2}));
  DG_TRY(check_operand(d, "d", DG_DTYPE_FLOAT32, "m, n", {m, n}));
  DG_TRY(dg::check_no_overlap(d, "d"));
  if (c != nullptr) {
    DG_TRY(dg::check_rank(*c, "c", {2}));
    DG_TRY(check_operand(*c, "c", DG_DTYPE_FLOAT32, "m, n", {m, n}));
    if (c->data == d.data && m > 1 && c->strides[0] != d.strides[0])
      return dg::fail(DG_ERROR_INVALID_ARGUMENT, "c: shares d's data with another row stride ({} vs {})", c->strides[0],
                      d.strides[0]);
  }
  args->reduce = true;
  args->batches = s, args->m = m, args->n = n, args->k = k;
  args->a = operand(a, 0, 1, Major::kK);
  args->b = operand(b, 0, 1, Major::kK);
  args->d_dtype = DG_DTYPE_FLOAT32;
  args->d = d.data;
  args->ldd = m > 1 ? d.strides[0] : n;
  args->c = c != nullptr ? static_cast<const float*>(c->data) : nullptr;
  args->ldc = c != nullptr && m > 1 ? c->strides[0] : n;
  return DG_SUCCESS;
}

// "bhr,hdr->bhd" (a [b, h, r], b [h, d, r], d [b, h, d]) and "bhd,hdr->bhr" (a [b, h, d], b [h, d, r],
// d [b, h, r]): per head h, D_h [b, N] = A_h [b, K] . B_h, B_h K-major ([d, r] over r) in the first
// form and MN-major ([d, r] over d) in the second.
dg_status batched_args(Form form, const dg_tensor_s& a, const dg_tensor_s& b, const dg_tensor_s& d,
                       const dg_tensor_s* c, BatchedArgs* args) {
  if (c != nullptr)
    return dg::fail(DG_ERROR_INVALID_ARGUMENT, "c: must be NULL (only \"bmk,bnk->mn\" accumulates)");
  const bool absorb = form == Form::kBhrHdrBhd;  // contracts r; else d
  DG_TRY(dg::check_rank(b, "b", {3}));
  const int64_t h = b.sizes[0], dd = b.sizes[1], r = b.sizes[2];
  DG_TRY(check_operand(b, "b", DG_DTYPE_BFLOAT16, "h, d, r", {h, dd, r}));
  DG_TRY(dg::check_rank(a, "a", {3}));
  const int64_t batch = a.sizes[0], k = absorb ? r : dd, n = absorb ? dd : r;
  DG_TRY(check_operand(a, "a", DG_DTYPE_BFLOAT16, absorb ? "b, h, r" : "b, h, d", {batch, h, k}));
  DG_TRY(check_sizes(a, b));
  DG_TRY(dg::check_rank(d, "d", {3}));
  DG_TRY(check_operand(d, "d", DG_DTYPE_BFLOAT16, absorb ? "b, h, d" : "b, h, r", {batch, h, n}));
  DG_TRY(dg::check_no_overlap(d, "d"));
  args->reduce = false;
  args->batches = h, args->m = batch, args->n = n, args->k = k;
  args->a = operand(a, 1, 0, Major::kK);
  args->b = operand(b, 0, 1, absorb ? Major::kK : Major::kMN);
  args->d_dtype = DG_DTYPE_BFLOAT16;
  args->d = d.data;
  args->ldd = batch > 1 ? d.strides[0] : n;
  args->d_batch_stride = h > 1 ? d.strides[1] : 0;
  return DG_SUCCESS;
}

dg_status check_sm90(const dg_stream_s& stream) {
  if (stream.device->cc_major != 9)
    return dg::fail(DG_ERROR_UNSUPPORTED, "stream: device {} is sm_{}{}; einsum runs on SM90 (sm_90a) only",
                    stream.device->name, stream.device->cc_major, stream.device->cc_minor);
  return DG_SUCCESS;
}

dg_status einsum(dg_stream* stream, const char* expr, const dg_tensor* a, const dg_tensor* b, const dg_tensor* d,
                 const dg_tensor* c, const dg_gemm_options* options) {
  DG_TRY(dg::check_stream(stream, "stream"));
  Form form;
  DG_TRY(parse_expr(expr, &form));
  DG_TRY(dg::check_tensor(a, "a"));
  DG_TRY(dg::check_tensor(b, "b"));
  DG_TRY(dg::check_tensor(d, "d"));
  if (c != nullptr) DG_TRY(dg::check_tensor(c, "c"));
  dg_gemm_options opts;
  DG_TRY(dg::api::read_options(options, &opts));
  DG_TRY(check_einsum_options(opts, false));
  BatchedArgs args;
  if (form == Form::kBmkBnkMn) DG_TRY(reduced_args(*a, *b, *d, c, &args));
  else DG_TRY(batched_args(form, *a, *b, *d, c, &args));
  DG_TRY(check_sm90(*stream));
  if (args.m == 0 || args.n == 0 || (!args.reduce && args.batches == 0)) return DG_SUCCESS;
  return dg::ops::run_batched_gemm(*stream, args, dg::api::override_of(opts), false);
}

// prepare's a_sizes[3] and b_sizes[3]: each in [0, 2^31).
dg_status check_prepare_sizes(const int64_t* a_sizes, const int64_t* b_sizes) {
  for (int j = 0; j < 3; ++j) {
    if (a_sizes[j] < 0 || a_sizes[j] > INT32_MAX)
      return dg::fail(DG_ERROR_INVALID_ARGUMENT, "a_sizes[{}]: {} (expected 0 .. 2^31 - 1)", j, a_sizes[j]);
    if (b_sizes[j] < 0 || b_sizes[j] > INT32_MAX)
      return dg::fail(DG_ERROR_INVALID_ARGUMENT, "b_sizes[{}]: {} (expected 0 .. 2^31 - 1)", j, b_sizes[j]);
  }
  return DG_SUCCESS;
}

// The call's problem from the sizes of a and b alone (the pointers are never read).
dg_status prepare(dg_stream* stream, const char* expr, const int64_t* a_sizes, const int64_t* b_sizes, int32_t with_c,
                  const dg_gemm_options* options) {
  DG_TRY(dg::check_stream(stream, "stream"));
  Form form;
  DG_TRY(parse_expr(expr, &form));
  if (a_sizes == nullptr) return dg::fail(DG_ERROR_INVALID_ARGUMENT, "a_sizes: NULL (expected a's 3 sizes)");
  if (b_sizes == nullptr) return dg::fail(DG_ERROR_INVALID_ARGUMENT, "b_sizes: NULL (expected b's 3 sizes)");
  dg_gemm_options opts;
  DG_TRY(dg::api::read_options(options, &opts));
  DG_TRY(check_einsum_options(opts, false));
  DG_TRY(check_prepare_sizes(a_sizes, b_sizes));
  if (with_c != 0 && with_c != 1) return dg::fail(DG_ERROR_INVALID_ARGUMENT, "with_c: {} (expected 0 or 1)", with_c);
  if (with_c == 1 && form != Form::kBmkBnkMn)
    return dg::fail(DG_ERROR_INVALID_ARGUMENT, "with_c: 1 (only \"bmk,bnk->mn\" accumulates)");
  BatchedArgs args;
  args.reduce = form == Form::kBmkBnkMn;
  const bool absorb = form == Form::kBhrHdrBhd;
  const int64_t shared[2][2] = {{a_sizes[0], b_sizes[0]}, {a_sizes[2], b_sizes[2]}};  // bmk: s and k
  if (args.reduce && (shared[0][0] != shared[0][1] || shared[1][0] != shared[1][1]))
    return dg::fail(DG_ERROR_INVALID_ARGUMENT, "b_sizes: s, k = {}, {} (expected a's {}, {})", b_sizes[0], b_sizes[2],
                    a_sizes[0], a_sizes[2]);
  if (!args.reduce && (a_sizes[1] != b_sizes[0] || a_sizes[2] != (absorb ? b_sizes[2] : b_sizes[1])))
    return dg::fail(DG_ERROR_INVALID_ARGUMENT, "b_sizes: [{}, {}, {}] does not match a_sizes [{}, {}, {}] for \"{}\"",
                    b_sizes[0], b_sizes[1], b_sizes[2], a_sizes[0], a_sizes[1], a_sizes[2],
                    absorb ? "bhr,hdr->bhd" : "bhd,hdr->bhr");
  if (args.reduce) args.batches = a_sizes[0], args.m = a_sizes[1], args.n = b_sizes[1], args.k = a_sizes[2];
  else args.batches = b_sizes[0], args.m = a_sizes[0], args.n = absorb ? b_sizes[1] : b_sizes[2], args.k = a_sizes[2];
  args.b.major = absorb || args.reduce ? Major::kK : Major::kMN;
  args.d_dtype = args.reduce ? DG_DTYPE_FLOAT32 : DG_DTYPE_BFLOAT16;
  static const float kStandIn = 0.f;  // only whether C is given matters; no kernel reads it
  args.c = with_c ? &kStandIn : nullptr;
  DG_TRY(check_sm90(*stream));
  if (args.m == 0 || args.n == 0 || (!args.reduce && args.batches == 0)) return DG_SUCCESS;
  return dg::ops::run_batched_gemm(*stream, args, dg::api::override_of(opts), true);
}

// ---------------------------------------------------------------------------------------------
// FP8: "bhr,hdr->bhd" with DeepGEMM's 1D2D recipe, per head the FP8 GEMM D_h = A_h . B_h^T.

constexpr const char* kFp8Form = "\"bhr,hdr->bhd\"";
constexpr int64_t kSfBlock = 128;      // scales cover 128 elements of r (and 128 rows of d for sfb)
constexpr int64_t kSfRowAlign = 4;     // per-token scales: K blocks a multiple of 16 bytes apart (TMA)

dg_status parse_fp8_expr(const char* expr) {
  std::string e;
  DG_TRY(strip_expr(expr, kFp8Form, &e));
  if (e == "bhr,hdr->bhd") return DG_SUCCESS;
  if (e == "bhd,hdr->bhr" || e == "bhd,bhr->hdr")
    return dg::fail(DG_ERROR_UNSUPPORTED, "expr: \"{}\" (DeepGEMM runs this FP8 form on SM100 only; libdg's SM90 FP8 "
                    "einsum takes {})", e, kFp8Form);
  return dg::fail(DG_ERROR_UNSUPPORTED, "expr: \"{}\" (the FP8 einsum takes {})", e, kFp8Form);
}

// sfa: FP32 [b, h, ceil(r / 128)], MN-major and TMA-aligned per head: strides (1, ceil(r / 128) * L, L)
// with L a multiple of 4 and >= b (the kernel reads it as one map of h * ceil(r / 128) rows of L).
dg_status check_fp8_sfa(const dg_tensor_s& t, int64_t batch, int64_t h, int64_t sf_k, int64_t* ld) {
  DG_TRY(dg::check_rank(t, "sfa", {3}));
  DG_TRY(dg::check_dtype(t, "sfa", {DG_DTYPE_FLOAT32}));
  if (t.sizes[0] != batch || t.sizes[1] != h || t.sizes[2] != sf_k)
    return dg::fail(DG_ERROR_INVALID_ARGUMENT, "sfa: shape {} (expected [b, h, ceil(r / 128)] = [{}, {}, {}])",
                    dg::describe(t), batch, h, sf_k);
  const int64_t aligned = (batch + kSfRowAlign - 1) / kSfRowAlign * kSfRowAlign;
  *ld = sf_k > 1 ? t.strides[2] : h > 1 ? t.strides[1] : aligned;
  if (dg::numel(t) == 0) return DG_SUCCESS;
  const bool ok = (batch == 1 || t.strides[0] == 1) && *ld % kSfRowAlign == 0 && *ld >= aligned &&
                  (h == 1 || (t.strides[1] % sf_k == 0 && t.strides[1] / sf_k == *ld));
  if (!ok)
    return dg::fail(DG_ERROR_INVALID_ARGUMENT,
                    "sfa: strides must be (1, {} * L, L) with L a multiple of 4 and >= align(b, 4) = {} "
                    "(per-token scales MN-major and TMA-aligned per head: dg_transform_sf_into_required_layout of "
                    "the [h, b, {}] view gives them); got {}",
                    sf_k, aligned, sf_k, dg::describe(t));
  if (t.data == nullptr) return dg::fail(DG_ERROR_INVALID_ARGUMENT, "sfa: data is NULL");
  return dg::check_alignment(t, "sfa", 16);
}

// sfb: FP32 [h, ceil(d / 128), ceil(r / 128)], any strides, 4-byte aligned.
dg_status check_fp8_sfb(const dg_tensor_s& t, int64_t h, int64_t dd, int64_t sf_k) {
  DG_TRY(dg::check_rank(t, "sfb", {3}));
  DG_TRY(dg::check_dtype(t, "sfb", {DG_DTYPE_FLOAT32}));
  const int64_t sf_n = (dd + kSfBlock - 1) / kSfBlock;
  if (t.sizes[0] != h || t.sizes[1] != sf_n || t.sizes[2] != sf_k)
    return dg::fail(DG_ERROR_INVALID_ARGUMENT,
                    "sfb: shape {} (expected [h, ceil(d / 128), ceil(r / 128)] = [{}, {}, {}] for the 1D2D recipe)",
                    dg::describe(t), h, sf_n, sf_k);
  if (dg::numel(t) == 0) return DG_SUCCESS;
  if (t.data == nullptr) return dg::fail(DG_ERROR_INVALID_ARGUMENT, "sfb: data is NULL");
  return dg::check_alignment(t, "sfb", 4);
}

// a FLOAT8_E4M3 [b, h, r], b FLOAT8_E4M3 [h, d, r], d BFLOAT16 [b, h, d] (TMA-legal strides as the
// BF16 forms'), their scales; c NULL.
dg_status fp8_args(const dg_tensor_s& a, const dg_tensor_s& sfa, const dg_tensor_s& b, const dg_tensor_s& sfb,
                   const dg_tensor_s& d, const dg_tensor_s* c, BatchedArgs* args) {
  if (c != nullptr)
    return dg::fail(DG_ERROR_UNSUPPORTED,
                    "c: given; the SM90 FP8 einsum writes d without accumulation (expected NULL)");
  DG_TRY(dg::check_rank(b, "b", {3}));
  const int64_t h = b.sizes[0], dd = b.sizes[1], r = b.sizes[2];
  DG_TRY(check_operand(b, "b", DG_DTYPE_FLOAT8_E4M3, "h, d, r", {h, dd, r}));
  DG_TRY(dg::check_rank(a, "a", {3}));
  const int64_t batch = a.sizes[0], sf_k = (r + kSfBlock - 1) / kSfBlock;
  DG_TRY(check_operand(a, "a", DG_DTYPE_FLOAT8_E4M3, "b, h, r", {batch, h, r}));
  DG_TRY(check_sizes(a, b));
  // The kernel addresses sfa's K blocks of every head as rows of one map (32-bit TMA coordinates).
  if (h * sf_k > INT32_MAX)
    return dg::fail(DG_ERROR_UNSUPPORTED, "sfa: h * ceil(r / 128) = {} * {} rows of scales (expected below 2^31)", h,
                    sf_k);
  DG_TRY(check_fp8_sfa(sfa, batch, h, sf_k, &args->ld_sfa));
  DG_TRY(check_fp8_sfb(sfb, h, dd, sf_k));
  DG_TRY(dg::check_rank(d, "d", {3}));
  if (d.dtype == DG_DTYPE_FLOAT32)
    return dg::fail(DG_ERROR_UNSUPPORTED, "d: FLOAT32; the SM90 FP8 einsum writes BFLOAT16 d (as DeepGEMM's)");
  DG_TRY(check_operand(d, "d", DG_DTYPE_BFLOAT16, "b, h, d", {batch, h, dd}));
  DG_TRY(dg::check_no_overlap(d, "d"));
  args->kind = dg::ops::GemmKind::kFp8_1D2D;
  args->batches = h, args->m = batch, args->n = dd, args->k = r;
  args->a = operand(a, 1, 0, Major::kK);
  args->b = operand(b, 0, 1, Major::kK);
  args->d_dtype = DG_DTYPE_BFLOAT16;
  args->d = d.data;
  args->ldd = batch > 1 ? d.strides[0] : dd;
  args->d_batch_stride = h > 1 ? d.strides[1] : 0;
  args->sfa = static_cast<const float*>(sfa.data);
  args->sfb = static_cast<const float*>(sfb.data);
  args->sfb_stride_g = sfb.strides[0], args->sfb_stride_n = sfb.strides[1], args->sfb_stride_k = sfb.strides[2];
  return DG_SUCCESS;
}

dg_status fp8_einsum(dg_stream* stream, const char* expr, const dg_tensor* a, const dg_tensor* sfa, const dg_tensor* b,
                     const dg_tensor* sfb, const dg_tensor* d, const dg_tensor* c, const dg_gemm_options* options) {
  DG_TRY(dg::check_stream(stream, "stream"));
  DG_TRY(parse_fp8_expr(expr));
  DG_TRY(dg::check_tensor(a, "a"));
  DG_TRY(dg::check_tensor(sfa, "sfa"));
  DG_TRY(dg::check_tensor(b, "b"));
  DG_TRY(dg::check_tensor(sfb, "sfb"));
  DG_TRY(dg::check_tensor(d, "d"));
  if (c != nullptr) DG_TRY(dg::check_tensor(c, "c"));
  dg_gemm_options opts;
  DG_TRY(dg::api::read_options(options, &opts));
  DG_TRY(check_einsum_options(opts, true));
  BatchedArgs args;
  DG_TRY(fp8_args(*a, *sfa, *b, *sfb, *d, c, &args));
  DG_TRY(check_sm90(*stream));
  if (args.m == 0 || args.n == 0 || args.batches == 0) return DG_SUCCESS;
  return dg::ops::run_batched_gemm(*stream, args, dg::api::override_of(opts), false);
}

// The FP8 call's problem from a's [b, h, r] and b's [h, d, r] sizes (no pointer is read).
dg_status fp8_prepare(dg_stream* stream, const char* expr, const int64_t* a_sizes, const int64_t* b_sizes,
                      int32_t with_c, const dg_gemm_options* options) {
  DG_TRY(dg::check_stream(stream, "stream"));
  DG_TRY(parse_fp8_expr(expr));
  if (a_sizes == nullptr) return dg::fail(DG_ERROR_INVALID_ARGUMENT, "a_sizes: NULL (expected a's 3 sizes b, h, r)");
  if (b_sizes == nullptr) return dg::fail(DG_ERROR_INVALID_ARGUMENT, "b_sizes: NULL (expected b's 3 sizes h, d, r)");
  dg_gemm_options opts;
  DG_TRY(dg::api::read_options(options, &opts));
  DG_TRY(check_einsum_options(opts, true));
  DG_TRY(check_prepare_sizes(a_sizes, b_sizes));
  if (with_c != 0 && with_c != 1) return dg::fail(DG_ERROR_INVALID_ARGUMENT, "with_c: {} (expected 0 or 1)", with_c);
  if (with_c == 1)
    return dg::fail(DG_ERROR_UNSUPPORTED, "with_c: 1; the SM90 FP8 einsum writes d without accumulation (expected 0)");
  if (a_sizes[1] != b_sizes[0] || a_sizes[2] != b_sizes[2])
    return dg::fail(DG_ERROR_INVALID_ARGUMENT,
                    "b_sizes: [{}, {}, {}] does not match a_sizes [{}, {}, {}] for \"bhr,hdr->bhd\" "
                    "(expected [{}, d, {}])",
                    b_sizes[0], b_sizes[1], b_sizes[2], a_sizes[0], a_sizes[1], a_sizes[2], a_sizes[1], a_sizes[2]);
  BatchedArgs args;
  args.kind = dg::ops::GemmKind::kFp8_1D2D;
  args.batches = b_sizes[0], args.m = a_sizes[0], args.n = b_sizes[1], args.k = a_sizes[2];
  DG_TRY(check_sm90(*stream));
  if (args.m == 0 || args.n == 0 || args.batches == 0) return DG_SUCCESS;
  return dg::ops::run_batched_gemm(*stream, args, dg::api::override_of(opts), true);
}

}  // namespace

extern "C" {

DG_API dg_status dg_bf16_einsum(dg_stream* stream, const char* expr, const dg_tensor* a, const dg_tensor* b,
                                const dg_tensor* d, const dg_tensor* c, const dg_gemm_options* options) {
  DG_API_GUARD(return einsum(stream, expr, a, b, d, c, options);)
}

DG_API dg_status dg_bf16_einsum_prepare(dg_stream* stream, const char* expr, const int64_t* a_sizes,
                                        const int64_t* b_sizes, int32_t with_c, const dg_gemm_options* options) {
  DG_API_GUARD(return prepare(stream, expr, a_sizes, b_sizes, with_c, options);)
}

}  // extern "C"

extern "C" {

DG_API dg_status dg_fp8_einsum(dg_stream* stream, const char* expr, const dg_tensor* a, const dg_tensor* sfa,
                               const dg_tensor* b, const dg_tensor* sfb, const dg_tensor* d, const dg_tensor* c,
                               const dg_gemm_options* options) {
  DG_API_GUARD(return fp8_einsum(stream, expr, a, sfa, b, sfb, d, c, options);)
}

DG_API dg_status dg_fp8_einsum_prepare(dg_stream* stream, const char* expr, const int64_t* a_sizes,
                                       const int64_t* b_sizes, int32_t with_c, const dg_gemm_options* options) {
  DG_API_GUARD(return fp8_prepare(stream, expr, a_sizes, b_sizes, with_c, options);)
}

}  // extern "C"
