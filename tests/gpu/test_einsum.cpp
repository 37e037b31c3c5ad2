// dg_bf16_einsum and dg_fp8_einsum against an FP64 CPU reference of the (dequantised) inputs: the
// MLA weight-absorption forms "bhr,hdr->bhd" and "bhd,hdr->bhr" (per-head batched GEMMs, B K-major
// and MN-major; the first also in FP8 with DeepGEMM's 1D2D recipe) and the batch sum "bmk,bnk->mn"
// (FP32 D, with no C, a separate C or D itself), on DeepGEMM's test shapes (tests/test_einsum.py;
// b is a strided view of a wider tensor as there) and odd ones: rows not a multiple of the tile, K
// and N tails per head, one head, heads-first A, padded D rows, CTA pairs. Outputs are poisoned
// first (NaN); D's padding must stay poisoned. Large shapes check every head and column of a sample
// of rows (every element is computed by the same tiles).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "dg.h"
#include "gpu_fixture.h"
#include "host_numerics.h"

namespace {

using dg::test::bf2f;
using dg::test::DeviceBuffer;
using dg::test::f2bf;
using dg::test::Gpu;
using dg::test::Tensor;

constexpr uint16_t kPoisonBf16 = 0xffff;  // NaN
constexpr int64_t kMaxCheckedRows = 48;    // rows of D checked in full on large shapes

// Uniform in [-1, 1), drawn in parallel chunks (the large shapes have 10^8 - 10^9 elements).
std::vector<uint16_t> random_bf16(size_t n, std::mt19937& rng) {
  constexpr int64_t kChunk = int64_t(1) << 20;
  std::vector<uint16_t> v(std::max<size_t>(n, 1));
  const uint32_t base = rng();
  dg::test::parallel_for((static_cast<int64_t>(v.size()) + kChunk - 1) / kChunk, [&](int64_t c) {
    std::mt19937 local(base ^ static_cast<uint32_t>(c * 0x9E3779B9u));
    std::uniform_real_distribution<float> uni(-1.0f, 1.0f);
    const size_t end = std::min(v.size(), size_t((c + 1) * kChunk));
    for (size_t i = size_t(c * kChunk); i < end; ++i) v[i] = f2bf(uni(local));
  });
  return v;
}

// The rows to check: all of them, or the first, the last and a random sample.
std::vector<int64_t> rows_to_check(int64_t rows, std::mt19937& rng) {
  std::vector<int64_t> out;
  if (rows <= kMaxCheckedRows) {
    for (int64_t i = 0; i < rows; ++i) out.push_back(i);
    return out;
  }
  out = {0, rows - 1};
  std::uniform_int_distribution<int64_t> pick(1, rows - 2);
  while (static_cast<int64_t>(out.size()) < kMaxCheckedRows) out.push_back(pick(rng));
  return out;
}

// A per-head case: a [b, h, K], b [h, d, r] (rows r + b_pad apart), d [b, h, N] (rows N + d_pad
// apart); heads_first stores a as [h, b, K] and passes the transposed view.
struct HeadCase {
  bool absorb;  // "bhr,hdr->bhd" (K = r, N = d); else "bhd,hdr->bhr" (K = d, N = r)
  int64_t b, h, r, d;
  int64_t b_pad = 0, d_pad = 0;
  bool heads_first = false;
  dg_gemm_options options = DG_GEMM_OPTIONS_INIT;
};

void run_head_case(Gpu& gpu, const HeadCase& c, uint32_t seed) {
  const int64_t K = c.absorb ? c.r : c.d, N = c.absorb ? c.d : c.r;
  CAPTURE(c.absorb);
  CAPTURE(c.b);
  CAPTURE(c.h);
  CAPTURE(c.r);
  CAPTURE(c.d);
  CAPTURE(c.b_pad);
  CAPTURE(c.d_pad);
  CAPTURE(c.heads_first);
  std::mt19937 rng(seed);
  const int64_t ldb = c.r + c.b_pad, ldd = N + c.d_pad;
  const std::vector<uint16_t> a = random_bf16(size_t(c.b * c.h * K), rng);
  const std::vector<uint16_t> b = random_bf16(size_t(c.h * c.d * ldb), rng);
  // Element (i, g, k) of a.
  const std::vector<int64_t> a_strides =
      c.heads_first ? std::vector<int64_t>{K, c.b * K, 1} : std::vector<int64_t>{c.h * K, K, 1};
  DeviceBuffer da(gpu.device, a.size() * 2), db(gpu.device, b.size() * 2), dd(gpu.device, size_t(c.b * c.h * ldd) * 2);
  da.upload(a);
  db.upload(b);
  dd.poison();
  Tensor ta(da.data(), DG_DTYPE_BFLOAT16, {c.b, c.h, K}, a_strides);
  Tensor tb(db.data(), DG_DTYPE_BFLOAT16, {c.h, c.d, c.r}, {c.d * ldb, ldb, 1});
  Tensor td(dd.data(), DG_DTYPE_BFLOAT16, {c.b, c.h, N}, {c.h * ldd, ldd, 1});
  const char* expr = c.absorb ? "bhr,hdr->bhd" : "bhd, hdr -> bhr";
  REQUIRE_MESSAGE(dg_bf16_einsum(gpu.stream, expr, ta.t, tb.t, td.t, nullptr, &c.options) == DG_SUCCESS,
                  std::string(dg_last_error()));
  const std::vector<uint16_t> out = dd.download<uint16_t>();
  const std::vector<int64_t> rows = rows_to_check(c.b, rng);
  std::vector<int64_t> bad(rows.size(), 0);
  std::vector<double> worst(rows.size(), 0.0);
  dg::test::parallel_for(static_cast<int64_t>(rows.size()), [&](int64_t t) {
    const int64_t i = rows[size_t(t)];
    std::vector<double> ref(static_cast<size_t>(N)), mag(static_cast<size_t>(N));
    for (int64_t g = 0; g < c.h; ++g) {
      const uint16_t* arow = &a[size_t(i * a_strides[0] + g * a_strides[1])];
      std::fill(ref.begin(), ref.end(), 0.0);
      std::fill(mag.begin(), mag.end(), 0.0);
      // absorb: ref[j] = sum_k a[k] b[g, j, k]; else sum_k a[k] b[g, k, j] (rows of b in memory order).
      for (int64_t x = 0; x < (c.absorb ? N : K); ++x) {
        const uint16_t* brow = &b[size_t((g * c.d + x) * ldb)];
        for (int64_t y = 0; y < (c.absorb ? K : N); ++y) {
          const int64_t j = c.absorb ? x : y, k = c.absorb ? y : x;
          const double p = double(bf2f(arow[k])) * bf2f(brow[y]);
          ref[size_t(j)] += p;
          mag[size_t(j)] += std::fabs(p);
        }
      }
      for (int64_t j = 0; j < ldd; ++j) {
        const uint16_t got = out[size_t(i * c.h * ldd + g * ldd + j)];
        if (j >= N) {  // padding: untouched
          bad[size_t(t)] += got != kPoisonBf16;
          continue;
        }
        // One BF16 rounding (2^-9 relative) over FP32 accumulation.
        const double r = ref[size_t(j)];
        const double err = std::fabs(double(bf2f(got)) - r), tol = std::fabs(r) * 0x1p-8 + mag[size_t(j)] * 1e-5 + 1e-6;
        if (!(err <= tol)) ++bad[size_t(t)];
        worst[size_t(t)] = std::max(worst[size_t(t)], std::isfinite(err) ? err / tol : 1e9);
      }
    }
  });
  int64_t total_bad = 0;
  double worst_ratio = 0;
  for (size_t t = 0; t < rows.size(); ++t) total_bad += bad[t], worst_ratio = std::max(worst_ratio, worst[t]);
  CAPTURE(worst_ratio);
  CHECK(total_bad == 0);
  // Rows not in the sample: written (no poison left) and finite.
  int64_t unwritten = 0;
  for (int64_t i = 0; i < c.b; ++i)
    for (int64_t g = 0; g < c.h; ++g)
      for (int64_t j = 0; j < N; ++j) unwritten += !std::isfinite(bf2f(out[size_t(i * c.h * ldd + g * ldd + j)]));
  CHECK(unwritten == 0);
}

enum class CMode { kNone, kSeparate, kAliased };

// "bmk,bnk->mn": a [s, m, k] and b [s, n, k] with rows k + pad apart, d FP32 [m, n] with rows
// n + d_pad apart.
struct SumCase {
  int64_t s, m, n, k;
  CMode c_mode = CMode::kNone;
  int64_t pad = 0, d_pad = 0;
  dg_gemm_options options = DG_GEMM_OPTIONS_INIT;
};

void run_sum_case(Gpu& gpu, const SumCase& c, uint32_t seed) {
  CAPTURE(c.s);
  CAPTURE(c.m);
  CAPTURE(c.n);
  CAPTURE(c.k);
  CAPTURE(static_cast<int>(c.c_mode));
  CAPTURE(c.pad);
  CAPTURE(c.d_pad);
  std::mt19937 rng(seed);
  const int64_t lda = c.k + c.pad, ldd = c.n + c.d_pad;
  const std::vector<uint16_t> a = random_bf16(size_t(c.s * c.m * lda), rng);
  const std::vector<uint16_t> b = random_bf16(size_t(c.s * c.n * lda), rng);
  std::vector<float> cv(size_t(c.m * ldd));
  std::uniform_real_distribution<float> uni(-8.0f, 8.0f);
  for (auto& x : cv) x = uni(rng);
  DeviceBuffer da(gpu.device, a.size() * 2), db(gpu.device, b.size() * 2);
  DeviceBuffer dd(gpu.device, cv.size() * 4), dc(gpu.device, cv.size() * 4);
  da.upload(a);
  db.upload(b);
  dc.upload(cv);
  if (c.c_mode == CMode::kAliased) dd.upload(cv);
  else dd.poison();
  Tensor ta(da.data(), DG_DTYPE_BFLOAT16, {c.s, c.m, c.k}, {c.m * lda, lda, 1});
  Tensor tb(db.data(), DG_DTYPE_BFLOAT16, {c.s, c.n, c.k}, {c.n * lda, lda, 1});
  Tensor td(dd.data(), DG_DTYPE_FLOAT32, {c.m, c.n}, {ldd, 1});
  Tensor tc(dc.data(), DG_DTYPE_FLOAT32, {c.m, c.n}, {ldd, 1});
  const dg_tensor* c_arg = c.c_mode == CMode::kNone ? nullptr : c.c_mode == CMode::kAliased ? td.t : tc.t;
  REQUIRE_MESSAGE(dg_bf16_einsum(gpu.stream, "bmk,bnk->mn", ta.t, tb.t, td.t, c_arg, &c.options) == DG_SUCCESS,
                  std::string(dg_last_error()));
  const std::vector<float> out = dd.download<float>();
  const std::vector<int64_t> rows = rows_to_check(c.m, rng);
  std::vector<int64_t> bad(rows.size(), 0);
  dg::test::parallel_for(static_cast<int64_t>(rows.size()), [&](int64_t t) {
    const int64_t i = rows[size_t(t)];
    for (int64_t j = 0; j < ldd; ++j) {
      const float got = out[size_t(i * ldd + j)];
      if (j >= c.n) {  // padding: untouched (C's values when D was loaded with them, else poison)
        uint32_t word, want = 0xffffffffu;
        std::memcpy(&word, &got, 4);
        if (c.c_mode == CMode::kAliased) std::memcpy(&want, &cv[size_t(i * ldd + j)], 4);
        bad[size_t(t)] += word != want;
        continue;
      }
      double ref = c.c_mode == CMode::kNone ? 0.0 : double(cv[size_t(i * ldd + j)]), mag = std::fabs(ref);
      for (int64_t z = 0; z < c.s; ++z)
        for (int64_t k = 0; k < c.k; ++k) {
          const double p = double(bf2f(a[size_t((z * c.m + i) * lda + k)])) * bf2f(b[size_t((z * c.n + j) * lda + k)]);
          ref += p;
          mag += std::fabs(p);
        }
      // FP32 accumulation, partial tiles summed in FP32.
      const double tol = mag * 2e-6 + 1e-6;
      if (!(std::fabs(double(got) - ref) <= tol)) ++bad[size_t(t)];
    }
  });
  int64_t total_bad = 0;
  for (int64_t x : bad) total_bad += x;
  CHECK(total_bad == 0);
  int64_t unwritten = 0;
  for (int64_t i = 0; i < c.m; ++i)
    for (int64_t j = 0; j < c.n; ++j) unwritten += !std::isfinite(out[size_t(i * ldd + j)]);
  CHECK(unwritten == 0);
}

dg_gemm_options tiles(int bm, int bn, int cluster, int multicast_a) {
  dg_gemm_options o = DG_GEMM_OPTIONS_INIT;
  o.block_m = bm, o.block_n = bn, o.cluster = cluster, o.multicast_a = multicast_a;
  return o;
}

// ---------------------------------------------------------------------------------------------
// dg_fp8_einsum "bhr,hdr->bhd": a [b, h, r] E4M3 quantised per (token, head, 128 of r), b [h, d, r]
// E4M3 per (head, 128 x 128 block), against FP64 on the dequantised operands. Every scale block's
// values are drawn at a magnitude of its own (2^-4 .. 2^4), so a scale read from another head,
// token or block shows as a large error.

constexpr int64_t kSfBlock = 128;

struct Fp8Case {
  int64_t b, h, r, d;
  int64_t a_pad = 0, b_pad = 0, d_pad = 0;  // extra elements per row of a's heads, b's rows, d's heads
  int64_t sfa_pad = 0;                      // extra scales per K block of sfa (L = align(b, 4) + sfa_pad)
  bool pow2 = true;                         // power-of-two scales (DeepGEMM's use_ue8m0 default)
  dg_gemm_options options = DG_GEMM_OPTIONS_INIT;
};

// Quantisation scale of a block whose largest magnitude is amax.
float fp8_scale(float amax, bool pow2) {
  const float s = std::max(amax, 1e-4f) / 448.f;
  return pow2 ? std::exp2(std::ceil(std::log2(s))) : s;
}

// E4M3 codes and scales of both operands, in the layouts dg_fp8_einsum reads.
struct Fp8Operands {
  int64_t b, h, r, d, sf_k, sf_n, lda, ldb, ld_sfa;
  std::vector<uint8_t> a, bw;       // a [b, h, lda] (head rows lda apart), bw [h, d, ldb]
  std::vector<float> sfa, sfb;      // sfa[(g * sf_k + kb) * ld_sfa + i], sfb [h, sf_n, sf_k]
  Fp8Operands(const Fp8Case& c, std::mt19937& rng)
      : b(c.b), h(c.h), r(c.r), d(c.d), sf_k((c.r + kSfBlock - 1) / kSfBlock), sf_n((c.d + kSfBlock - 1) / kSfBlock),
        lda(c.r + c.a_pad), ldb(c.r + c.b_pad), ld_sfa((c.b + 3) / 4 * 4 + c.sfa_pad),
        a(size_t(std::max<int64_t>(c.b * c.h * lda, 1)), 0), bw(size_t(std::max<int64_t>(c.h * c.d * ldb, 1)), 0),
        sfa(size_t(std::max<int64_t>(c.h * sf_k * ld_sfa, 1)), 0.f),
        sfb(size_t(std::max<int64_t>(c.h * sf_n * sf_k, 1))) {
    const uint32_t seed_a = rng(), seed_b = rng();
    // a: one (token, head) row per work item.
    dg::test::parallel_for(b * h, [&](int64_t row) {
      std::mt19937 local(seed_a ^ static_cast<uint32_t>(row * 0x9E3779B9u));
      std::normal_distribution<float> nd(0.f, 1.f);
      std::uniform_int_distribution<int> mag(-4, 4);
      const int64_t i = row / h, g = row % h;
      std::vector<float> raw(static_cast<size_t>(kSfBlock));
      for (int64_t kb = 0; kb < sf_k; ++kb) {
        const int64_t k0 = kb * kSfBlock, n = std::min(kSfBlock, r - k0);
        const float m = std::ldexp(1.f, mag(local));
        float amax = 0.f;
        for (int64_t x = 0; x < n; ++x) amax = std::max(amax, std::fabs(raw[size_t(x)] = nd(local) * m));
        const float s = fp8_scale(amax, c.pow2);
        sfa[size_t((g * sf_k + kb) * ld_sfa + i)] = s;
        for (int64_t x = 0; x < n; ++x) a[size_t(row * lda + k0 + x)] = dg::test::f_to_e4m3(raw[size_t(x)] / s);
      }
    });
    // b: one (head, 128 rows of d) block row per work item.
    dg::test::parallel_for(h * sf_n, [&](int64_t unit) {
      std::mt19937 local(seed_b ^ static_cast<uint32_t>(unit * 0x85EBCA6Bu));
      std::normal_distribution<float> nd(0.f, 1.f);
      std::uniform_int_distribution<int> mag(-4, 4);
      const int64_t g = unit / sf_n, jb = unit % sf_n, j0 = jb * kSfBlock, rows = std::min(kSfBlock, d - j0);
      std::vector<float> raw(size_t(rows * r));
      for (int64_t kb = 0; kb < sf_k; ++kb) {
        const int64_t k0 = kb * kSfBlock, n = std::min(kSfBlock, r - k0);
        const float m = std::ldexp(1.f, mag(local));
        float amax = 0.f;
        for (int64_t j = 0; j < rows; ++j)
          for (int64_t x = 0; x < n; ++x) amax = std::max(amax, std::fabs(raw[size_t(j * r + k0 + x)] = nd(local) * m));
        const float s = fp8_scale(amax, c.pow2);
        sfb[size_t((g * sf_n + jb) * sf_k + kb)] = s;
        for (int64_t j = 0; j < rows; ++j)
          for (int64_t x = 0; x < n; ++x)
            bw[size_t((g * d + j0 + j) * ldb + k0 + x)] = dg::test::f_to_e4m3(raw[size_t(j * r + k0 + x)] / s);
      }
    });
  }
  // sum over r of dequantised a[i, g, :] . b[g, j, :], and the sum of the products' magnitudes.
  void dot(int64_t i, int64_t g, int64_t j, double* ref, double* mag) const {
    double acc = 0, abs_acc = 0;
    const uint8_t* ar = &a[size_t((i * h + g) * lda)];
    const uint8_t* br = &bw[size_t((g * d + j) * ldb)];
    for (int64_t kb = 0; kb < sf_k; ++kb) {
      const double s =
          double(sfa[size_t((g * sf_k + kb) * ld_sfa + i)]) * sfb[size_t((g * sf_n + j / kSfBlock) * sf_k + kb)];
      double blk = 0, blk_abs = 0;
      for (int64_t x = kb * kSfBlock; x < std::min(r, (kb + 1) * kSfBlock); ++x) {
        const double p = double(dg::test::e4m3_to_f(ar[x])) * dg::test::e4m3_to_f(br[x]);
        blk += p;
        blk_abs += std::fabs(p);
      }
      acc += blk * s;
      abs_acc += blk_abs * s;
    }
    *ref = acc;
    *mag = abs_acc;
  }
};

// Runs the case with d poisoned: the checked rows element by element (FP8 products summed in FP32 per
// 128 of r, one BF16 rounding) and with DeepGEMM's calc_diff < 1e-3; every other element of d
// written; d's row padding still poisoned.
void run_fp8_case(Gpu& gpu, const Fp8Case& c, uint32_t seed) {
  CAPTURE(c.b);
  CAPTURE(c.h);
  CAPTURE(c.r);
  CAPTURE(c.d);
  CAPTURE(c.a_pad);
  CAPTURE(c.b_pad);
  CAPTURE(c.d_pad);
  CAPTURE(c.sfa_pad);
  CAPTURE(c.pow2);
  CAPTURE(c.options.block_m);
  CAPTURE(c.options.block_n);
  CAPTURE(c.options.cluster);
  std::mt19937 rng(seed);
  const Fp8Operands ops(c, rng);
  const int64_t ldd = c.d + c.d_pad;
  DeviceBuffer da(gpu.device, ops.a.size()), db(gpu.device, ops.bw.size());
  DeviceBuffer dd(gpu.device, size_t(std::max<int64_t>(c.b * c.h * ldd, 1)) * 2);
  DeviceBuffer dsa(gpu.device, ops.sfa.size() * 4), dsb(gpu.device, ops.sfb.size() * 4);
  da.upload(ops.a);
  db.upload(ops.bw);
  dsa.upload(ops.sfa);
  dsb.upload(ops.sfb);
  dd.poison();
  Tensor ta(da.data(), DG_DTYPE_FLOAT8_E4M3, {c.b, c.h, c.r}, {c.h * ops.lda, ops.lda, 1});
  Tensor tb(db.data(), DG_DTYPE_FLOAT8_E4M3, {c.h, c.d, c.r}, {c.d * ops.ldb, ops.ldb, 1});
  Tensor tsa(dsa.data(), DG_DTYPE_FLOAT32, {c.b, c.h, ops.sf_k}, {1, ops.sf_k * ops.ld_sfa, ops.ld_sfa});
  Tensor tsb(dsb.data(), DG_DTYPE_FLOAT32, {c.h, ops.sf_n, ops.sf_k});
  Tensor td(dd.data(), DG_DTYPE_BFLOAT16, {c.b, c.h, c.d}, {c.h * ldd, ldd, 1});
  REQUIRE_MESSAGE(dg_fp8_einsum(gpu.stream, "bhr,hdr->bhd", ta.t, tsa.t, tb.t, tsb.t, td.t, nullptr, &c.options) ==
                      DG_SUCCESS,
                  std::string(dg_last_error()));
  const std::vector<uint16_t> out = dd.download<uint16_t>();
  const std::vector<int64_t> rows = rows_to_check(c.b, rng);
  const size_t per_row = size_t(c.h * c.d);
  std::vector<double> ref(rows.size() * per_row), got(ref.size());
  std::vector<int64_t> bad(rows.size(), 0);
  dg::test::parallel_for(static_cast<int64_t>(rows.size()), [&](int64_t t) {
    const int64_t i = rows[size_t(t)];
    for (int64_t g = 0; g < c.h; ++g)
      for (int64_t j = 0; j < ldd; ++j) {
        const uint16_t word = out[size_t((i * c.h + g) * ldd + j)];
        if (j >= c.d) {  // padding: untouched
          bad[size_t(t)] += word != kPoisonBf16;
          continue;
        }
        double r, mag;
        ops.dot(i, g, j, &r, &mag);
        const double v = bf2f(word);
        ref[size_t(t) * per_row + size_t(g * c.d + j)] = r;
        got[size_t(t) * per_row + size_t(g * c.d + j)] = v;
        // One BF16 rounding (2^-9 relative) over the tensor cores' FP8 block sums (their accumulator
        // keeps fewer bits than FP32) promoted into FP32.
        const double tol = std::fabs(r) * 0x1p-8 + mag * 0x1p-10 + 1e-6;
        if (!(std::fabs(v - r) <= tol)) ++bad[size_t(t)];
      }
  });
  int64_t total_bad = 0;
  for (int64_t x : bad) total_bad += x;
  CHECK(total_bad == 0);
  const double diff = dg::test::calc_diff(ref, got);
  CAPTURE(diff);
  CHECK(diff < 1e-3);
  int64_t unwritten = 0;
  for (int64_t i = 0; i < c.b; ++i)
    for (int64_t g = 0; g < c.h; ++g)
      for (int64_t j = 0; j < c.d; ++j) unwritten += !std::isfinite(bf2f(out[size_t((i * c.h + g) * ldd + j)]));
  CHECK(unwritten == 0);
}

}  // namespace

TEST_CASE("einsum: bhr,hdr->bhd and bhd,hdr->bhr on DeepGEMM's shapes (b a view of a wider tensor)") {
  Gpu gpu;
  if (!gpu.sm90()) return;
  uint32_t seed = 1;
  const int64_t hrd[2][3] = {{128, 512, 128}, {8, 4096, 1024}};
  for (bool absorb : {true, false})
    for (const auto& p : hrd)
      for (int64_t b : {4, 32, 128, 4096, 8192}) {
        HeadCase c{absorb, b, p[0], p[1], p[2]};
        c.b_pad = 128;  // DeepGEMM's y = fy[:, :, :r] of fy [h, d, r + 128]
        run_head_case(gpu, c, seed++);
      }
}

TEST_CASE("einsum: per-head forms with tails, one head, heads-first A, padded D, CTA pairs" *
          doctest::test_suite("quick")) {
  Gpu gpu;
  if (!gpu.sm90()) return;
  uint32_t seed = 100;
  for (bool absorb : {true, false}) {
    run_head_case(gpu, HeadCase{absorb, 77, 5, 200, 72}, seed++);                // b, K and N tails
    run_head_case(gpu, HeadCase{absorb, 1, 3, 136, 264}, seed++);               // one row
    run_head_case(gpu, HeadCase{absorb, 300, 1, 64, 128}, seed++);              // one head
    run_head_case(gpu, HeadCase{absorb, 130, 6, 128, 192, 8, 0, true}, seed++);  // a [h, b, K] transposed
    run_head_case(gpu, HeadCase{absorb, 65, 4, 256, 128, 0, 24}, seed++);        // padded D rows
    // Forced tiles: pairs along M (blocks per head padded to even), pairs along N, 256-row tiles.
    HeadCase pm{absorb, 300, 3, 200, 136};
    pm.options = tiles(128, 64, 2, 0);
    if (!absorb) pm.options.block_n = 128;  // MN-major B needs block_n % 64 and halves of 64
    run_head_case(gpu, pm, seed++);
    HeadCase pn{absorb, 300, 3, 200, 256};
    pn.options = tiles(64, 128, 2, 1);
    run_head_case(gpu, pn, seed++);
    HeadCase big{absorb, 77, 5, 200, 72};
    big.options = tiles(256, absorb ? 64 : 128, 1, -1);
    run_head_case(gpu, big, seed++);
  }
}

// At most 32 rows per head over K <= 512: the operands run swapped and D is stored transposed (plan_batched_gemm):
// every b from 1 to 32 the WGMMA's N rounds up (8, 16, 24, 32), K and N tails, heads-first A, padded D.
TEST_CASE("einsum: per-head forms of at most 32 rows (operands swapped, D transposed)" *
          doctest::test_suite("quick")) {
  Gpu gpu;
  if (!gpu.sm90()) return;
  uint32_t seed = 300;
  for (bool absorb : {true, false}) {
    run_head_case(gpu, HeadCase{absorb, 5, 7, 200, 72}, seed++);                  // N 8, K and N tails
    run_head_case(gpu, HeadCase{absorb, 13, 3, 136, 264, 40}, seed++);            // N 16, padded b rows
    run_head_case(gpu, HeadCase{absorb, 21, 2, 264, 64, 0, 24}, seed++);          // N 24, padded D rows
    run_head_case(gpu, HeadCase{absorb, 32, 4, 256, 128, 0, 0, true}, seed++);    // N 32, a [h, b, K]
    run_head_case(gpu, HeadCase{absorb, 1, 128, 512, 128}, seed++);              // one token, MLA's heads
  }
}

TEST_CASE("einsum: bmk,bnk->mn on DeepGEMM's shapes, FP32 D with C = D, without C, with another C") {
  Gpu gpu;
  if (!gpu.sm90()) return;
  uint32_t seed = 200;
  const int64_t mnk[3][3] = {{128, 384, 128}, {256, 256, 256}, {384, 128, 384}};
  for (const auto& p : mnk) {
    run_sum_case(gpu, SumCase{129, p[0], p[1], p[2], CMode::kAliased}, seed++);
    run_sum_case(gpu, SumCase{129, p[0], p[1], p[2], CMode::kNone}, seed++);
  }
  run_sum_case(gpu, SumCase{1024, 128, 384, 128, CMode::kSeparate}, seed++);
}

TEST_CASE("einsum: bmk,bnk->mn with tails, padded rows, few and many K blocks, forced tiles" *
          doctest::test_suite("quick")) {
  Gpu gpu;
  if (!gpu.sm90()) return;
  uint32_t seed = 300;
  run_sum_case(gpu, SumCase{7, 77, 40, 200, CMode::kSeparate, 8, 4}, seed++);  // K tail in every batch
  run_sum_case(gpu, SumCase{33, 200, 136, 72, CMode::kNone}, seed++);
  run_sum_case(gpu, SumCase{1, 8, 8, 8, CMode::kAliased}, seed++);              // one K block
  run_sum_case(gpu, SumCase{300, 64, 64, 64, CMode::kNone}, seed++);           // splits of several batches
  SumCase pm{9, 200, 136, 200, CMode::kAliased};
  pm.options = tiles(128, 64, 2, 0);
  run_sum_case(gpu, pm, seed++);
  SumCase pn{9, 200, 136, 200, CMode::kSeparate};
  pn.options = tiles(64, 128, 2, 1);
  run_sum_case(gpu, pn, seed++);
}

TEST_CASE("einsum: empty sums write C or zeros; empty outputs return at once" * doctest::test_suite("quick")) {
  Gpu gpu;
  if (!gpu.sm90()) return;
  // k = 0: d = c (separate), d = 0 (none).
  const int64_t m = 40, n = 24;
  std::vector<float> cv(size_t(m * n));
  for (size_t i = 0; i < cv.size(); ++i) cv[i] = float(i % 97) - 48.5f;
  DeviceBuffer da(gpu.device, 256), db(gpu.device, 256), dd(gpu.device, cv.size() * 4), dc(gpu.device, cv.size() * 4);
  dc.upload(cv);
  Tensor ta(da.data(), DG_DTYPE_BFLOAT16, {5, m, 0});
  Tensor tb(db.data(), DG_DTYPE_BFLOAT16, {5, n, 0});
  Tensor td(dd.data(), DG_DTYPE_FLOAT32, {m, n});
  Tensor tc(dc.data(), DG_DTYPE_FLOAT32, {m, n});
  dd.poison();
  REQUIRE_MESSAGE(dg_bf16_einsum(gpu.stream, "bmk,bnk->mn", ta.t, tb.t, td.t, tc.t, nullptr) == DG_SUCCESS,
                  std::string(dg_last_error()));
  CHECK(dd.download<float>() == cv);
  dd.poison();
  REQUIRE(dg_bf16_einsum(gpu.stream, "bmk,bnk->mn", ta.t, tb.t, td.t, nullptr, nullptr) == DG_SUCCESS);
  CHECK(dd.download<float>() == std::vector<float>(cv.size(), 0.0f));
  // r = 0 per head: d = 0 for every head.
  const int64_t b = 9, h = 3, d = 16;
  DeviceBuffer ho(gpu.device, size_t(b * h * d) * 2);
  ho.poison();
  Tensor hx(da.data(), DG_DTYPE_BFLOAT16, {b, h, 0});
  Tensor hy(db.data(), DG_DTYPE_BFLOAT16, {h, d, 0});
  Tensor hz(ho.data(), DG_DTYPE_BFLOAT16, {b, h, d});
  REQUIRE(dg_bf16_einsum(gpu.stream, "bhr,hdr->bhd", hx.t, hy.t, hz.t, nullptr, nullptr) == DG_SUCCESS);
  CHECK(ho.download<uint16_t>() == std::vector<uint16_t>(size_t(b * h * d), 0));
  // b = 0: nothing to write (the buffer keeps its poison).
  ho.poison();
  Tensor ex(da.data(), DG_DTYPE_BFLOAT16, {0, h, 8});
  Tensor ey(db.data(), DG_DTYPE_BFLOAT16, {h, d, 8});
  Tensor ez(ho.data(), DG_DTYPE_BFLOAT16, {0, h, d});
  REQUIRE(dg_bf16_einsum(gpu.stream, "bhr,hdr->bhd", ex.t, ey.t, ez.t, nullptr, nullptr) == DG_SUCCESS);
  CHECK(ho.download<uint16_t>() == std::vector<uint16_t>(size_t(b * h * d), kPoisonBf16));
}

TEST_CASE("einsum: prepare compiles what the call runs" * doctest::test_suite("quick")) {
  Gpu gpu;
  if (!gpu.sm90()) return;
  const int64_t a_sizes[3] = {77, 5, 200}, b_sizes[3] = {5, 72, 200};
  REQUIRE_MESSAGE(dg_bf16_einsum_prepare(gpu.stream, "bhr,hdr->bhd", a_sizes, b_sizes, 0, nullptr) == DG_SUCCESS,
                  std::string(dg_last_error()));
  int64_t compiled = 0, from_disk = 0, hits = 0;
  REQUIRE(dg_jit_get_stats(&compiled, &from_disk, &hits) == DG_SUCCESS);
  const int64_t before = compiled + from_disk;
  run_head_case(gpu, HeadCase{true, 77, 5, 200, 72}, 7);
  REQUIRE(dg_jit_get_stats(&compiled, &from_disk, &hits) == DG_SUCCESS);
  CHECK(compiled + from_disk == before);
  const int64_t s_sizes[3] = {7, 77, 200}, t_sizes[3] = {7, 40, 200};
  REQUIRE(dg_bf16_einsum_prepare(gpu.stream, "bmk,bnk->mn", s_sizes, t_sizes, 1, nullptr) == DG_SUCCESS);
  REQUIRE(dg_jit_get_stats(&compiled, &from_disk, &hits) == DG_SUCCESS);
  const int64_t after_prepare = compiled + from_disk;
  run_sum_case(gpu, SumCase{7, 77, 40, 200, CMode::kSeparate}, 8);
  run_sum_case(gpu, SumCase{7, 77, 40, 200, CMode::kNone}, 9);
  REQUIRE(dg_jit_get_stats(&compiled, &from_disk, &hits) == DG_SUCCESS);
  CHECK(compiled + from_disk == after_prepare);
}

TEST_CASE("fp8 einsum: bhr,hdr->bhd on DeepGEMM's shapes (power-of-two scales)") {
  Gpu gpu;
  if (!gpu.sm90()) return;
  uint32_t seed = 400;
  for (int64_t b : {4, 32, 128, 4096, 8192}) run_fp8_case(gpu, Fp8Case{b, 8, 4096, 1024}, seed++);
}

TEST_CASE("fp8 einsum: tails in b, r and d, views, padded scales, forced tiles" * doctest::test_suite("quick")) {
  Gpu gpu;
  if (!gpu.sm90()) return;
  uint32_t seed = 500;
  run_fp8_case(gpu, Fp8Case{77, 5, 208, 72}, seed++);                  // b, r and d tails
  run_fp8_case(gpu, Fp8Case{1, 3, 144, 264}, seed++);                  // one row, d over three scale rows
  run_fp8_case(gpu, Fp8Case{300, 1, 384, 200}, seed++);                // one head
  Fp8Case views{129, 4, 656, 336, 48, 128, 24, 12};                    // a, b views of wider rows; padded d, sfa
  views.pow2 = false;
  run_fp8_case(gpu, views, seed++);
  run_fp8_case(gpu, Fp8Case{33, 6, 128, 128, 0, 0, 0, 0, false}, seed++);  // one K block (sfa's L from the head stride)
  // Forced tiles: CTA pairs along M (blocks per head padded to even) and along N, tiles straddling
  // two 128-row SFB blocks (block_n 160, 192), 256-row tiles.
  const int tiles_of[5][4] = {{128, 64, 2, 0}, {64, 128, 2, 1}, {64, 160, 1, -1}, {128, 192, 1, -1}, {256, 128, 1, -1}};
  for (const auto& t : tiles_of) {
    Fp8Case f{300, 3, 400, 336};
    f.options = tiles(t[0], t[1], t[2], t[3]);
    run_fp8_case(gpu, f, seed++);
  }
}

TEST_CASE("fp8 einsum: r = 0 writes zeros, b = 0 writes nothing, prepare compiles what the call runs" *
          doctest::test_suite("quick")) {
  Gpu gpu;
  if (!gpu.sm90()) return;
  const int64_t b = 9, h = 3, d = 40;
  DeviceBuffer dx(gpu.device, 256), dy(gpu.device, 256), ds(gpu.device, 256), dz(gpu.device, size_t(b * h * d) * 2);
  dz.poison();
  Tensor x(dx.data(), DG_DTYPE_FLOAT8_E4M3, {b, h, 0}), y(dy.data(), DG_DTYPE_FLOAT8_E4M3, {h, d, 0});
  Tensor sx(ds.data(), DG_DTYPE_FLOAT32, {b, h, 0}), sy(ds.data(), DG_DTYPE_FLOAT32, {h, 1, 0});
  Tensor z(dz.data(), DG_DTYPE_BFLOAT16, {b, h, d});
  REQUIRE_MESSAGE(dg_fp8_einsum(gpu.stream, "bhr,hdr->bhd", x.t, sx.t, y.t, sy.t, z.t, nullptr, nullptr) == DG_SUCCESS,
                  std::string(dg_last_error()));
  CHECK(dz.download<uint16_t>() == std::vector<uint16_t>(size_t(b * h * d), 0));
  dz.poison();
  Tensor x0(dx.data(), DG_DTYPE_FLOAT8_E4M3, {0, h, 128}), y1(dy.data(), DG_DTYPE_FLOAT8_E4M3, {h, d, 128});
  Tensor sx0(ds.data(), DG_DTYPE_FLOAT32, {0, h, 1}), sy1(ds.data(), DG_DTYPE_FLOAT32, {h, 1, 1});
  Tensor z0(dz.data(), DG_DTYPE_BFLOAT16, {0, h, d});
  REQUIRE(dg_fp8_einsum(gpu.stream, "bhr,hdr->bhd", x0.t, sx0.t, y1.t, sy1.t, z0.t, nullptr, nullptr) == DG_SUCCESS);
  CHECK(dz.download<uint16_t>() == std::vector<uint16_t>(size_t(b * h * d), kPoisonBf16));
  // prepare, then the call compiles nothing more.
  const int64_t a_sizes[3] = {77, 5, 208}, b_sizes[3] = {5, 72, 208};
  REQUIRE_MESSAGE(dg_fp8_einsum_prepare(gpu.stream, "bhr,hdr->bhd", a_sizes, b_sizes, 0, nullptr) == DG_SUCCESS,
                  std::string(dg_last_error()));
  int64_t compiled = 0, from_disk = 0, hits = 0;
  REQUIRE(dg_jit_get_stats(&compiled, &from_disk, &hits) == DG_SUCCESS);
  const int64_t before = compiled + from_disk;
  run_fp8_case(gpu, Fp8Case{77, 5, 208, 72}, 9);
  REQUIRE(dg_jit_get_stats(&compiled, &from_disk, &hits) == DG_SUCCESS);
  CHECK(compiled + from_disk == before);
}
