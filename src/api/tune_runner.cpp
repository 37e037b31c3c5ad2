#include "api/tune_runner.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <mutex>
#include <numeric>
#include <random>
#include <string>
#include <thread>

#include "ops/gemm_util.h"
#include "ops/l2_flush.h"
#include "runtime/device.h"
#include "runtime/driver.h"
#include "runtime/status.h"
#include "runtime/stream.h"

namespace dg::api {
namespace {

using ops::GemmKind;
using ops::GemmShape;
using ops::TuneFamily;
using ops::TuneProblem;

// Random values are written in chunks of this many bytes, repeated over a buffer.
constexpr size_t kFillChunk = size_t(1) << 20;
// The L2 flush reads this many times the L2 size; without an L2 size, this many bytes.
constexpr size_t kFlushL2Factor = 2;
constexpr size_t kFlushFallbackBytes = size_t(256) << 20;
// Operand values: E4M3 0x30..0x3F and BF16 0x3F00..0x3FFF are 0.5 .. ~2, with random signs.
constexpr uint8_t kFp8Base = 0x30, kFp8Mantissas = 0x0F;
constexpr uint16_t kBf16Base = 0x3F00, kBf16Mantissas = 0xFF;
constexpr float kScaleLow = 0.5f, kScaleSpan = 1.5f;

bool mul(size_t a, size_t b, size_t* out) { return !__builtin_mul_overflow(a, b, out); }
bool mul3(size_t a, size_t b, size_t c, size_t* out) {
  size_t ab = 0;
  return mul(a, b, &ab) && mul(ab, c, out);
}

// Copies `chunk` over `bytes` of device memory at `dst`, repeated.
dg_status fill_repeated(CUdeviceptr dst, size_t bytes, const std::vector<unsigned char>& chunk) {
  for (size_t off = 0; off < bytes; off += chunk.size())
    DG_CU(cuMemcpyHtoD(dst + off, chunk.data(), std::min(chunk.size(), bytes - off)));
  return DG_SUCCESS;
}

// Random non-zero values of `kind`'s operand dtype (BF16 or E4M3), never zero, inf or NaN.
dg_status fill_operand(const DeviceBuffer& buf, GemmKind kind, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<unsigned char> chunk(std::min(kFillChunk, buf.bytes()));
  if (kind == GemmKind::kBf16) {
    for (size_t i = 0; i + 1 < chunk.size(); i += 2) {
      const uint32_t r = rng();
      const uint16_t v = static_cast<uint16_t>(((r >> 8) & 1u) << 15 | kBf16Base | (r & kBf16Mantissas));
      chunk[i] = static_cast<unsigned char>(v & 0xFF);
      chunk[i + 1] = static_cast<unsigned char>(v >> 8);
    }
  } else {
    for (unsigned char& c : chunk) {
      const uint32_t r = rng();
      c = static_cast<unsigned char>(((r >> 4) & 1u) << 7 | kFp8Base | (r & kFp8Mantissas));
    }
  }
  return fill_repeated(buf.ptr(), buf.bytes(), chunk);
}

dg_status fill_scales(const DeviceBuffer& buf, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(kScaleLow, kScaleLow + kScaleSpan);
  std::vector<unsigned char> chunk(std::min(kFillChunk, buf.bytes()) / sizeof(float) * sizeof(float));
  for (size_t i = 0; i < chunk.size(); i += sizeof(float)) {
    const float v = dist(rng);
    std::memcpy(&chunk[i], &v, sizeof(float));
  }
  return chunk.empty() ? DG_SUCCESS : fill_repeated(buf.ptr(), buf.bytes(), chunk);
}

dg_tensor_s tensor(void* data, dg_dtype dtype, std::initializer_list<int64_t> sizes,
                   std::initializer_list<int64_t> strides) {
  dg_tensor_s t;
  t.data = data, t.dtype = dtype, t.rank = static_cast<int>(sizes.size());
  std::copy(sizes.begin(), sizes.end(), t.sizes);
  std::copy(strides.begin(), strides.end(), t.strides);
  return t;
}

// A row-major [rows, cols] tensor.
dg_tensor_s matrix(void* data, dg_dtype dtype, int64_t rows, int64_t cols) {
  return tensor(data, dtype, {rows, cols}, {cols, 1});
}

// Rows of A (all groups) of the problem.
int64_t a_rows(const TuneProblem& p) {
  return p.family == TuneFamily::kMasked ? p.shape.num_groups * p.shape.m : p.shape.m;
}

bool fp8_d(const TuneProblem& p) { return p.shape.d_dtype == DG_DTYPE_FLOAT8_E4M3; }

// D's columns: the GEMM's N, or half of it after SwiGLU.
int64_t d_cols(const TuneProblem& p) { return ops::out_n(p.shape); }

// The FP8 D's scales (data may be NULL for a prepare call): FP32 [(G,) M, ceil(cols / 128)] in the
// MN-major TMA-aligned layout, M the rows of D per group (masked) or in all.
dg_tensor_s d_scales_tensor(const TuneProblem& p, void* data) {
  const GemmShape& s = p.shape;
  const int64_t c = ops::cdiv(d_cols(p), ops::kScaleBlock), m4 = ops::align_up(s.m, 4);
  if (p.family == TuneFamily::kMasked)
    return tensor(data, DG_DTYPE_FLOAT32, {s.num_groups, s.m, c}, {m4 * c, 1, m4});
  return tensor(data, DG_DTYPE_FLOAT32, {s.m, c}, {1, m4});
}

// The problem's fused epilogue, its FP8 D's scales at `d_scales` (which must outlive the call).
dg_gemm_epilogue epilogue_of(const TuneProblem& p, const dg_tensor_s* d_scales) {
  dg_gemm_epilogue e = DG_GEMM_EPILOGUE_INIT;
  e.activation = p.shape.epilogue.act == ops::Activation::kSwiGlu ? DG_ACTIVATION_SWIGLU : DG_ACTIVATION_NONE;
  e.d_scales = fp8_d(p) ? d_scales : nullptr;
  return e;
}

}  // namespace

DeviceBuffer::~DeviceBuffer() {
  if (ptr_ != 0) (void)driver::api().cuMemFree(ptr_);
}

dg_status DeviceBuffer::allocate(size_t bytes, const char* what) {
  if (bytes == 0) return DG_SUCCESS;
  const CUresult r = driver::api().cuMemAlloc(&ptr_, bytes);
  if (r != CUDA_SUCCESS) {
    ptr_ = 0;
    return driver::check(r, fmt::format("cuMemAlloc of {} bytes for {}", bytes, what).c_str());
  }
  bytes_ = bytes;
  return DG_SUCCESS;
}

namespace {

// Where sample `sample` of `strata` puts `key` (a group, a pair of groups): the midpoint of one
// stratum of [0, 1), the key meeting every stratum once over the samples in an order of its own (a
// Fisher-Yates shuffle seeded by the key through splitmix64, the same on every run).
double stratum_point(int strata, int sample, int64_t key) {
  uint64_t state = 0x9e3779b97f4a7c15ull * (static_cast<uint64_t>(key) + 1);
  const auto next = [&state] {
    uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  };
  std::vector<int> order(static_cast<size_t>(strata));
  for (int i = 0; i < strata; ++i) order[static_cast<size_t>(i)] = i;
  for (int i = strata - 1; i > 0; --i)
    std::swap(order[static_cast<size_t>(i)], order[next() % static_cast<uint64_t>(i + 1)]);
  return (double(order[static_cast<size_t>(sample)]) + 0.5) / strata;
}

}  // namespace

int32_t masked_sample_count(const ops::CountSpread& spread, int sample, int64_t group) {
  const double at = stratum_point(kMaskedCountSamples, sample, group);
  return static_cast<int32_t>(spread.lo + std::llround(at * double(spread.hi - spread.lo)));
}

std::vector<int64_t> contiguous_sample_rows(int64_t m, int64_t groups, int sample) {
  std::vector<int64_t> rows(static_cast<size_t>(groups), m);
  const int64_t slot = ops::align_up(m, ops::kMkAlignment);
  for (int64_t g = 0; g + 1 < groups; g += 2) {
    const double at = stratum_point(kContiguousSamples, sample, g / 2);
    const int64_t d = std::llround(kContiguousSpread * (2.0 * at - 1.0) * double(m));
    int64_t& x = rows[static_cast<size_t>(g)];
    int64_t& y = rows[static_cast<size_t>(g + 1)];
    x = m + d, y = m - d;
    // The pair's aligned rows may pass its two slots by one alignment unit (the longer group
    // crossing into a further unit): the shorter group gives it back, so that the longer keeps m + d.
    int64_t& shorter = x < y ? x : y;
    const int64_t over = ops::align_up(x, ops::kMkAlignment) + ops::align_up(y, ops::kMkAlignment) - 2 * slot;
    if (over > 0) shorter -= std::min(shorter, over);
  }
  return rows;
}

Footprint max_of(const Footprint& x, const Footprint& y) {
  return {std::max(x.a, y.a),         std::max(x.b, y.b),
          std::max(x.sfa, y.sfa),     std::max(x.sfb, y.sfb),
          std::max(x.d, y.d),         std::max(x.d_scales, y.d_scales),
          std::max(x.groups, y.groups)};
}

dg_status footprint_of(const TuneProblem& p, Footprint* out) {
  const GemmShape& s = p.shape;
  const size_t eb = p.fp8 ? 1 : 2, ob = s.d_dtype == DG_DTYPE_FLOAT32 ? 4 : fp8_d(p) ? 1 : 2;
  const size_t rows = static_cast<size_t>(a_rows(p)), g = static_cast<size_t>(s.num_groups);
  const size_t n = static_cast<size_t>(s.n), k = static_cast<size_t>(s.k);
  // K-grouped: the groups' K slices one after another, D (FP32) one [M, N] block per group.
  const bool kg = p.family == TuneFamily::kKGrouped;
  const size_t kall = kg ? g * k : k, d_blocks = kg ? g : 1;
  const size_t sfk = static_cast<size_t>(ops::cdiv(static_cast<int64_t>(kall), ops::kScaleBlock));
  const size_t sf_rows = p.family == TuneFamily::kMasked ? g * ops::align_up(s.m, 4) : ops::align_up(rows, 4);
  const size_t sfb_rows = s.kind == GemmKind::kFp8_1D1D ? ops::align_up(s.n, 4) : g * ops::cdiv(s.n, ops::kScaleBlock);
  Footprint f;
  const size_t dn = static_cast<size_t>(d_cols(p)), dsk = static_cast<size_t>(ops::cdiv(d_cols(p), ops::kScaleBlock));
  size_t d_rows = 0;
  // B: G matrices [N, K] (M-grouped), or N by the G slices of K (K-grouped): g * n * k either way.
  bool ok = mul(rows, d_blocks, &d_rows) && mul3(rows, kall, eb, &f.a) && mul3(g * n, k, eb, &f.b) &&
            mul3(d_rows, dn, ob, &f.d);
  ok = ok && (!p.fp8 || (mul3(sf_rows, sfk, 4, &f.sfa) && mul3(sfb_rows, sfk, 4, &f.sfb)));
  ok = ok && (!fp8_d(p) || mul3(sf_rows, dsk, 4, &f.d_scales));
  const size_t group_entries = p.family == TuneFamily::kContiguous ? rows * kContiguousSamples
                              : p.family == TuneFamily::kMasked   ? g * kMaskedCountSamples
                                                                  : 0;
  f.groups = group_entries * sizeof(int32_t);
  if (!ok) return fail(DG_ERROR_INVALID_ARGUMENT, "problems: line {}: {} needs more memory than 64-bit sizes hold",
                       p.line, p.text);
  *out = f;
  return DG_SUCCESS;
}

dg_status allocate_buffers(const Device& device, const Footprint& max, TuneBuffers* b) {
  DG_TRY(b->a.allocate(max.a, "A"));
  DG_TRY(b->b.allocate(max.b, "B"));
  DG_TRY(b->sfa.allocate(max.sfa, "the scales of A"));
  DG_TRY(b->sfb.allocate(max.sfb, "the scales of B"));
  DG_TRY(b->d.allocate(max.d, "D"));
  DG_TRY(b->d_scales.allocate(max.d_scales, "the scales of the FP8 D"));
  DG_TRY(b->groups.allocate(max.groups, "the group tensor"));
  const size_t flush =
      device.l2_bytes > 0 ? kFlushL2Factor * static_cast<size_t>(device.l2_bytes) : kFlushFallbackBytes;
  DG_TRY(b->flush.allocate(flush, "the L2 flush"));
  DG_CU(cuMemsetD8(b->flush.ptr(), 0, b->flush.bytes()));
  DG_CU(cuCtxSynchronize());  // before the flushes on the tuner's stream, which may not wait for it
  if (b->sfa.bytes()) DG_TRY(fill_scales(b->sfa, 3));
  if (b->sfb.bytes()) DG_TRY(fill_scales(b->sfb, 4));
  return DG_SUCCESS;
}

namespace {

// The group tensors: contiguous, kContiguousSamples of A's rows, each group's rows then -1 padding
// to 128; masked, the counts of kMaskedCountSamples samples, G each.
dg_status fill_groups(const TuneProblem& p, const DeviceBuffer& buf) {
  const GemmShape& s = p.shape;
  std::vector<int32_t> v;
  if (p.family == TuneFamily::kContiguous) {
    v.assign(static_cast<size_t>(s.m) * kContiguousSamples, -1);
    for (int j = 0; j < kContiguousSamples; ++j) {
      const auto sample = v.begin() + static_cast<std::ptrdiff_t>(j) * s.m;
      int64_t row = 0;
      const std::vector<int64_t> rows = contiguous_sample_rows(s.expected_m, s.num_groups, j);
      for (int64_t g = 0; g < s.num_groups; ++g) {
        std::fill_n(sample + row, rows[static_cast<size_t>(g)], static_cast<int32_t>(g));
        row += ops::align_up(rows[static_cast<size_t>(g)], ops::kMkAlignment);
      }
    }
  } else if (p.family == TuneFamily::kMasked) {
    const ops::CountSpread spread = ops::count_spread(std::max<int64_t>(s.expected_m, 1), s.m);
    for (int j = 0; j < kMaskedCountSamples; ++j)
      for (int64_t g = 0; g < s.num_groups; ++g) v.push_back(masked_sample_count(spread, j, g));
  }
  if (!v.empty()) DG_CU(cuMemcpyHtoD(buf.ptr(), v.data(), v.size() * sizeof(int32_t)));
  return DG_SUCCESS;
}

}  // namespace

dg_status bind_problem(const TuneProblem& p, TuneBuffers* buf, TuneCall* call) {
  const GemmShape& s = p.shape;
  const int kind = static_cast<int>(s.kind == GemmKind::kBf16 ? GemmKind::kBf16 : GemmKind::kFp8_1D2D);
  if (buf->a_fill != kind) {
    DG_TRY(fill_operand(buf->a, s.kind, 1));
    buf->a_fill = kind;
  }
  if (buf->b_fill != kind) {
    DG_TRY(fill_operand(buf->b, s.kind, 2));
    buf->b_fill = kind;
  }
  DG_TRY(fill_groups(p, buf->groups));
  const dg_dtype ab = p.fp8 ? DG_DTYPE_FLOAT8_E4M3 : DG_DTYPE_BFLOAT16;
  const int64_t m = s.m, n = s.n, k = s.k, g = s.num_groups, sfk = ops::cdiv(k, ops::kScaleBlock);
  const int64_t nb = ops::cdiv(n, ops::kScaleBlock), m4 = ops::align_up(m, 4);
  TuneCall c;
  c.problem = &p;
  const int64_t dn = d_cols(p);
  if (p.family == TuneFamily::kKGrouped) {
    // FP8: flat K-major groups (nt_contiguous) with 1D1D scales per 128 K; BF16: [K, M] / [K, N] (tn).
    const int64_t kall = g * k, kb = kall / ops::kScaleBlock;
    c.ks.assign(static_cast<size_t>(g), k);
    c.a = p.fp8 ? tensor(buf->a.data(), ab, {m * kall}, {1}) : matrix(buf->a.data(), ab, kall, m);
    c.b = p.fp8 ? tensor(buf->b.data(), ab, {n * kall}, {1}) : matrix(buf->b.data(), ab, kall, n);
    c.sfa = tensor(buf->sfa.data(), DG_DTYPE_FLOAT32, {m, kb}, {1, m4});
    c.sfb = tensor(buf->sfb.data(), DG_DTYPE_FLOAT32, {n, kb}, {1, ops::align_up(n, 4)});
    c.d = tensor(buf->d.data(), DG_DTYPE_FLOAT32, {g, m, n}, {m * n, n, 1});
    *call = c;
    return DG_SUCCESS;
  }
  if (p.family == TuneFamily::kMasked) {
    c.a = tensor(buf->a.data(), ab, {g, m, k}, {m * k, k, 1});
    c.sfa = tensor(buf->sfa.data(), DG_DTYPE_FLOAT32, {g, m, sfk}, {m4 * sfk, 1, m4});
    c.d = tensor(buf->d.data(), s.d_dtype, {g, m, dn}, {m * dn, dn, 1});
    c.groups = tensor(buf->groups.data(), DG_DTYPE_INT32, {g}, {1});
    c.samples = kMaskedCountSamples;
    c.sample_bytes = static_cast<size_t>(g) * sizeof(int32_t);
  } else {
    const bool a_t = s.major_a == ops::Major::kMN;
    c.a = a_t ? matrix(buf->a.data(), ab, k, m) : matrix(buf->a.data(), ab, m, k);
    c.sfa = tensor(buf->sfa.data(), DG_DTYPE_FLOAT32, {m, sfk}, {1, m4});
    c.d = matrix(buf->d.data(), s.d_dtype, m, dn);
    c.groups = tensor(buf->groups.data(), DG_DTYPE_INT32, {m}, {1});
    if (p.family == TuneFamily::kContiguous) {
      c.samples = kContiguousSamples;
      c.sample_bytes = static_cast<size_t>(m) * sizeof(int32_t);
    }
  }
  c.d_scales = d_scales_tensor(p, buf->d_scales.data());
  if (p.family == TuneFamily::kDense) {
    const bool b_t = s.major_b == ops::Major::kMN;
    c.b = b_t ? matrix(buf->b.data(), ab, k, n) : matrix(buf->b.data(), ab, n, k);
    c.sfb = s.kind == GemmKind::kFp8_1D1D
                ? tensor(buf->sfb.data(), DG_DTYPE_FLOAT32, {n, sfk}, {1, ops::align_up(n, 4)})
                : matrix(buf->sfb.data(), DG_DTYPE_FLOAT32, nb, sfk);
  } else {
    c.b = tensor(buf->b.data(), ab, {g, n, k}, {n * k, k, 1});
    c.sfb = tensor(buf->sfb.data(), DG_DTYPE_FLOAT32, {g, nb, sfk}, {nb * sfk, sfk, 1});
  }
  *call = c;
  return DG_SUCCESS;
}

dg_gemm_options options_for(const TuneProblem& p, const ops::GemmOverride& o) {
  dg_gemm_options opts = DG_GEMM_OPTIONS_INIT;
  opts.recipe = p.shape.kind == GemmKind::kFp8_1D1D ? DG_FP8_RECIPE_1D1D : DG_FP8_RECIPE_1D2D;
  opts.block_m = o.block_m, opts.block_n = o.block_n, opts.num_stages = o.stages;
  opts.cluster = o.cluster, opts.multicast_a = o.multicast_a, opts.num_math_warpgroups = o.math_wg;
  opts.fp8_promotion = o.fp8_promotion, opts.fp8_promotion_slices = o.promotion_slices;
  // Contiguous and K-grouped calls take no split_k option, grouped calls no kernel choice.
  opts.split_k = p.family == TuneFamily::kContiguous || p.family == TuneFamily::kKGrouped ? 0 : o.split_k;
  opts.kernel = p.family == TuneFamily::kDense ? DG_GEMM_KERNEL_TILED : 0;
  return opts;
}

namespace {

dg_status run_dense(dg_stream* stream, const TuneCall& c, const dg_gemm_options& o) {
  const TuneProblem& p = *c.problem;
  if (p.fp8) return dg_fp8_gemm_nt(stream, &c.a, &c.sfa, &c.b, &c.sfb, &c.d, nullptr, &o);
  switch (p.layout) {
    case DG_GEMM_LAYOUT_NN: return dg_bf16_gemm_nn(stream, &c.a, &c.b, &c.d, nullptr, &o);
    case DG_GEMM_LAYOUT_TN: return dg_bf16_gemm_tn(stream, &c.a, &c.b, &c.d, nullptr, &o);
    case DG_GEMM_LAYOUT_TT: return dg_bf16_gemm_tt(stream, &c.a, &c.b, &c.d, nullptr, &o);
    default: return dg_bf16_gemm_nt(stream, &c.a, &c.b, &c.d, nullptr, &o);
  }
}

// The problem's entry point with options `forced` (and the problem's fused epilogue).
dg_status run_call(dg_stream* stream, const TuneCall& c, const dg_gemm_options& forced) {
  const TuneProblem& p = *c.problem;
  const int64_t em = p.shape.expected_m;
  const dg_gemm_epilogue epilogue = epilogue_of(p, &c.d_scales);
  dg_gemm_options o = forced;
  if (p.shape.epilogue.active()) o.epilogue = &epilogue;
  switch (p.family) {
    case TuneFamily::kContiguous:
      return p.fp8 ? dg_m_grouped_fp8_gemm_nt_contiguous(stream, &c.a, &c.sfa, &c.b, &c.sfb, &c.d, &c.groups,
                                                         DG_M_GROUPED_LAYOUT_INDICES, em, &o)
                   : dg_m_grouped_bf16_gemm_nt_contiguous(stream, &c.a, &c.b, &c.d, &c.groups,
                                                          DG_M_GROUPED_LAYOUT_INDICES, em, &o);
    case TuneFamily::kMasked:
      return p.fp8 ? dg_m_grouped_fp8_gemm_nt_masked(stream, &c.a, &c.sfa, &c.b, &c.sfb, &c.d, &c.groups, em, &o)
                   : dg_m_grouped_bf16_gemm_nt_masked(stream, &c.a, &c.b, &c.d, &c.groups, em, &o);
    case TuneFamily::kKGrouped: {
      // C is D (D += A_g B_g^T, as a weight gradient accumulates), so no pass runs before the GEMM.
      const int64_t g = p.shape.num_groups;
      return p.fp8 ? dg_k_grouped_fp8_gemm_nt_contiguous(stream, &c.a, &c.sfa, &c.b, &c.sfb, &c.d, &c.d, c.ks.data(), g,
                                                         nullptr, &o)
                   : dg_k_grouped_bf16_gemm_tn_contiguous(stream, &c.a, &c.b, &c.d, &c.d, c.ks.data(), g, nullptr, &o);
    }
    default: return run_dense(stream, c, o);
  }
}

dg_status prepare_one(dg_stream* stream, const TuneProblem& p, const dg_gemm_options& forced) {
  const GemmShape& s = p.shape;
  const dg_tensor_s d_scales = d_scales_tensor(p, nullptr);
  const dg_gemm_epilogue epilogue = epilogue_of(p, &d_scales);
  dg_gemm_options o = forced;
  if (s.epilogue.active()) o.epilogue = &epilogue;
  const dg_dtype ab = p.fp8 ? DG_DTYPE_FLOAT8_E4M3 : DG_DTYPE_BFLOAT16;
  if (p.family == TuneFamily::kDense) return dg_gemm_prepare(stream, ab, p.layout, s.m, s.n, s.k, s.d_dtype, 0, &o);
  if (p.family == TuneFamily::kKGrouped) {
    const std::vector<int64_t> ks(static_cast<size_t>(s.num_groups), s.k);
    return dg_k_grouped_gemm_prepare(stream, ab, p.layout, s.m, s.n, ks.data(), s.num_groups, 1, &o);
  }
  const int grouping = p.family == TuneFamily::kMasked ? DG_M_GROUPED_LAYOUT_MASKED : DG_M_GROUPED_LAYOUT_INDICES;
  return dg_m_grouped_gemm_prepare(stream, ab, DG_GEMM_LAYOUT_NT, grouping, s.num_groups, s.m, s.n, s.k, s.expected_m,
                                   &o);
}

// CUDA events destroyed with the set (the device's context current).
class Events {
 public:
  ~Events() {
    for (CUevent e : events_) (void)driver::api().cuEventDestroy(e);
  }
  dg_status create(size_t count) {
    events_.reserve(count);
    for (size_t i = 0; i < count; ++i) {
      CUevent e = nullptr;
      DG_CU(cuEventCreate(&e, CU_EVENT_DEFAULT));
      events_.push_back(e);
    }
    return DG_SUCCESS;
  }
  CUevent operator[](size_t i) const { return events_[i]; }

 private:
  std::vector<CUevent> events_;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t h = v.size() / 2;
  return v.size() % 2 ? v[h] : 0.5 * (v[h - 1] + v[h]);
}

}  // namespace

dg_status prepare_all(dg_stream* stream, const std::vector<TuneProblem>& problems,
                      const std::vector<std::vector<dg_gemm_options>>& options, int threads) {
  std::vector<std::pair<size_t, size_t>> work;
  for (size_t i = 0; i < problems.size(); ++i)
    for (size_t j = 0; j < options[i].size(); ++j) work.push_back({i, j});
  std::atomic<size_t> next{0};
  std::atomic<bool> failed{false};
  std::mutex mu;
  dg_status status = DG_SUCCESS;
  std::string message;
  // Each worker compiles the next pair until the list ends or one fails; the first failure (its
  // thread's message) is the call's.
  auto worker = [&] {
    for (size_t w = next++; w < work.size() && !failed; w = next++) {
      const auto [i, j] = work[w];
      const dg_status st = prepare_one(stream, problems[i], options[i][j]);
      std::lock_guard<std::mutex> lock(mu);
      if (st != DG_SUCCESS && !failed.exchange(true))
        status = st,
        message = fmt::format("problems: line {}: {}: {}", problems[i].line, problems[i].text, last_error());
    }
  };
  const int n = std::max(1, std::min<int>(threads, static_cast<int>(work.size())));
  std::vector<std::thread> pool;
  for (int t = 1; t < n; ++t) pool.emplace_back(worker);
  worker();
  for (std::thread& t : pool) t.join();
  if (status != DG_SUCCESS) return fail(status, "{}", message);
  return DG_SUCCESS;
}

namespace {

// The standard error of the mean of config i's per-sample leads over config 0 (0 with one sample).
double lead_standard_error(const ConfigTimes& t, size_t i) {
  const size_t n = t.sample_ms.size();
  if (n < 2) return 0.0;
  std::vector<double> leads;
  for (const std::vector<double>& s : t.sample_ms) leads.push_back(s[0] / s[i] - 1.0);
  const double mean = std::accumulate(leads.begin(), leads.end(), 0.0) / double(n);
  double sq = 0.0;
  for (const double l : leads) sq += (l - mean) * (l - mean);
  return std::sqrt(sq / double(n - 1) / double(n));
}

}  // namespace

size_t tuned_winner(const ConfigTimes& t, size_t* fastest) {
  const std::vector<double>& ms = t.mean_ms;
  size_t best = 0;
  for (size_t i = 1; i < ms.size(); ++i)
    if (ms[i] < ms[best]) best = i;
  if (fastest != nullptr) *fastest = best;
  if (best == 0) return 0;
  const double lead = ms[0] / ms[best] - 1.0;
  // A lead of exactly the margin passes (the margin is a share of the heuristic's time).
  const bool past_margin = ms[best] <= ms[0] * (1.0 - kTunedMinLead);
  return past_margin && lead >= kTunedLeadErrors * lead_standard_error(t, best) ? best : 0;
}

dg_status time_configs(dg_stream* stream, const TuneCall& call, const std::vector<dg_gemm_options>& options, int reps,
                       TuneBuffers* buf, ConfigTimes* times) {
  const size_t n = options.size(), runs = n * static_cast<size_t>(reps);
  // A read of the flush buffer before each run leaves L2 clean, as the bench suites' flush does.
  const auto flush = [&] { return ops::run_l2_flush(*stream, buf->flush.data(), buf->flush.bytes(), buf->flush.data()); };
  for (const dg_gemm_options& o : options) DG_TRY(run_call(stream, call, o));  // loads each kernel
  DG_TRY(flush());
  ContextScope scope;
  DG_TRY(scope.enter(*stream->device));
  Events ev;
  DG_TRY(ev.create(2 * runs));
  CUstream cs = stream->handle;
  ConfigTimes out;
  out.mean_ms.assign(n, 0.0);
  for (int sample = 0; sample < call.samples; ++sample) {
    TuneCall c = call;
    c.groups.data = static_cast<char*>(call.groups.data) + static_cast<size_t>(sample) * call.sample_bytes;
    // Round robin: each round times every config once, so that clock and thermal drift hit all alike.
    for (size_t r = 0, e = 0; r < static_cast<size_t>(reps); ++r)
      for (size_t i = 0; i < n; ++i, e += 2) {
        DG_TRY(flush());
        DG_CU(cuEventRecord(ev[e], cs));
        DG_TRY(run_call(stream, c, options[i]));
        DG_CU(cuEventRecord(ev[e + 1], cs));
      }
    DG_CU(cuEventSynchronize(ev[2 * runs - 1]));
    std::vector<std::vector<double>> ms(n);
    for (size_t r = 0, e = 0; r < static_cast<size_t>(reps); ++r)
      for (size_t i = 0; i < n; ++i, e += 2) {
        float t = 0;
        DG_CU(cuEventElapsedTime(&t, ev[e], ev[e + 1]));
        ms[i].push_back(t);
      }
    std::vector<double>& per_config = out.sample_ms.emplace_back(n);
    for (size_t i = 0; i < n; ++i) {
      per_config[i] = median(ms[i]);
      out.mean_ms[i] += per_config[i] / call.samples;
    }
  }
  *times = std::move(out);
  return DG_SUCCESS;
}

}  // namespace dg::api
