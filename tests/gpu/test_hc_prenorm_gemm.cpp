// dg_tf32_hc_prenorm_gemm against an FP64 CPU reference: D = A . B^T and S = sum A^2 over each
// split's K range, with random BF16 A and FP32 B, odd M, N, K (chunk tails), padded and unaligned
// row strides, empty splits, and outputs poisoned first (strided D keeps its padding untouched).
// 16-byte aligned rows with K >= 64 take the streaming (TMA) kernel: a persistent grid walking
// (row tile, split) items, or clusters of 2..8 CTAs for unsplit and small-M calls; the rest the
// register kernel. The cases cover each, CTAs with several items, and splits whose chunk count is
// odd (a stage shared with the next split).
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

constexpr int kChunk = 32;  // K granularity of the splits (dg.h)
constexpr uint32_t kPoison = 0xffffffffu;

struct Case {
  int64_t m, n, k;
  int splits;          // 0 = no split
  int64_t lda_pad = 0;  // extra elements per row of A (and of B)
  int64_t ldd_pad = 0;  // extra elements per row of D
};

uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

// Runs the case and checks it; returns D's words, so that a caller can compare two runs.
std::vector<uint32_t> run_case(Gpu& gpu, const Case& c, uint32_t seed) {
  CAPTURE(c.m);
  CAPTURE(c.n);
  CAPTURE(c.k);
  CAPTURE(c.splits);
  CAPTURE(c.lda_pad);
  CAPTURE(c.ldd_pad);
  const int64_t lda = c.k + c.lda_pad, ldb = c.k + c.lda_pad, ldd = c.n + c.ldd_pad;
  const int64_t S = c.splits > 0 ? c.splits : 1;
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> uni(-1.0f, 1.0f);
  std::vector<uint16_t> a(std::max<int64_t>(c.m * lda, 1));
  std::vector<float> b(std::max<int64_t>(c.n * ldb, 1));
  for (auto& x : a) x = f2bf(uni(rng) * 4.0f);
  for (auto& x : b) x = uni(rng);

  DeviceBuffer da(gpu.device, a.size() * 2), db(gpu.device, b.size() * 4);
  DeviceBuffer dd(gpu.device, size_t(S * c.m * ldd) * 4), ds(gpu.device, size_t(S * c.m) * 4);
  da.upload(a);
  db.upload(b);
  dd.poison();
  ds.poison();
  Tensor ta(da.data(), DG_DTYPE_BFLOAT16, {c.m, c.k}, {lda, 1});
  Tensor tb(db.data(), DG_DTYPE_FLOAT32, {c.n, c.k}, {ldb, 1});
  std::vector<int64_t> d_sizes = {c.m, c.n}, d_strides = {ldd, 1}, s_sizes = {c.m};
  if (c.splits > 0) {
    d_sizes.insert(d_sizes.begin(), S);
    d_strides.insert(d_strides.begin(), c.m * ldd);
    s_sizes.insert(s_sizes.begin(), S);
  }
  Tensor td(dd.data(), DG_DTYPE_FLOAT32, d_sizes, d_strides);
  Tensor ts(ds.data(), DG_DTYPE_FLOAT32, s_sizes);
  REQUIRE_MESSAGE(dg_tf32_hc_prenorm_gemm(gpu.stream, ta.t, tb.t, td.t, ts.t, c.splits) == DG_SUCCESS,
                  std::string(dg_last_error()));
  REQUIRE(dg_stream_synchronize(gpu.stream) == DG_SUCCESS);
  std::vector<uint32_t> d_out = dd.download_words(size_t(S * c.m * ldd), 4);
  std::vector<uint32_t> s_out = ds.download_words(size_t(S * c.m), 4);

  const int64_t chunks = (c.k + kChunk - 1) / kChunk;
  const int64_t cps = std::max<int64_t>(1, (chunks + S - 1) / S);
  std::vector<double> ref_all, out_all;
  int64_t bad = 0, padding_written = 0;
  for (int64_t s = 0; s < S; ++s) {
    const int64_t k0 = std::min(c.k, s * cps * kChunk), k1 = std::min(c.k, (s + 1) * cps * kChunk);
    const double tf32_rel = std::ldexp(1.0, -10) + std::ldexp(1.0, -22) * double(k1 - k0);
    for (int64_t i = 0; i < c.m; ++i) {
      double sq = 0;
      for (int64_t kk = k0; kk < k1; ++kk) sq += double(bf2f(a[i * lda + kk])) * bf2f(a[i * lda + kk]);
      float got_s;
      std::memcpy(&got_s, &s_out[s * c.m + i], 4);
      if (!(std::fabs(got_s - sq) <= std::ldexp(1.0, -22) * double(k1 - k0 + 1) * sq)) ++bad;
      for (int64_t j = 0; j < ldd; ++j) {
        const uint32_t word = d_out[(s * c.m + i) * ldd + j];
        if (j >= c.n) {
          padding_written += word != kPoison;
          continue;
        }
        double ref = 0, mag = 0;
        for (int64_t kk = k0; kk < k1; ++kk) {
          const double p = double(bf2f(a[i * lda + kk])) * b[j * ldb + kk];
          ref += p;
          mag += std::fabs(p);
        }
        float got;
        std::memcpy(&got, &word, 4);
        if (!(std::fabs(got - ref) <= tf32_rel * mag) || (k1 == k0 && word != bits(0.0f))) ++bad;
        ref_all.push_back(ref);
        out_all.push_back(got);
      }
    }
  }
  CHECK(bad == 0);
  CHECK(padding_written == 0);
  CHECK(dg::test::calc_diff(ref_all, out_all) < 1e-6);
  return d_out;
}

}  // namespace

TEST_CASE("tf32_hc_prenorm_gemm matches an FP64 reference on odd shapes, tails and splits") {
  Gpu gpu;
  const Case cases[] = {
      // Streaming kernel (rows 16-byte aligned, K >= 64); the cluster the heuristic picks noted.
      {13, 24, 28672, 0},          // DeepGEMM's shapes: one 64-row tile, cluster 8
      {137, 24, 7680, 16},         // 15 chunks per split (odd), cluster 2
      {137, 24, 28672, 16},        // cluster 4
      {1000, 24, 7168, 16},        // no cluster
      {77, 17, 1000, 3},           // N and K tails, K % 32 = 8; 11 chunks per split (odd)
      {520, 32, 8192, 2},          // four column tiles, a row tail, cluster 8 over 5 row tiles
      {200, 1, 2048, 0},           // N = 1, cluster 8
      {1, 5, 640, 0},              // one row
      {65, 32, 4101, 7, 3},        // padded rows 16-byte aligned, K % 8 = 5
      {33, 8, 96, 100},            // more splits than chunks: one chunk per stage, empty splits zeros
      {4096, 24, 512, 64},         // 2048 work items of one stage: ~8 per CTA of the persistent grid
      {3000, 24, 7200, 16},        // 384 items of 8 stages (15 chunks, odd): 1-2 per CTA, a row tail
      {300, 24, 2048, 0, 8, 5},    // padded D rows stay untouched
      // Register kernel (rows not 16-byte aligned, or K < 64).
      {1, 1, 1, 0},                // one element
      {65, 32, 4101, 7},           // element loads
      {4096, 24, 510, 64},         // two row tiles per warp
      {130, 24, 0, 2},             // K = 0: zeros
      {100, 24, 40, 0, 8},         // aligned but K under a stage
  };
  uint32_t seed = 1;
  for (const Case& c : cases) run_case(gpu, c, seed++);
}

TEST_CASE("tf32_hc_prenorm_gemm: the cluster reduction gives the same bits on every run") {
  Gpu gpu;
  const Case c = {300, 24, 28672, 0};  // three row tiles, clusters of 8 CTAs
  const std::vector<uint32_t> first = run_case(gpu, c, 7), second = run_case(gpu, c, 7);
  CHECK(first == second);
}

TEST_CASE("tf32_hc_prenorm_gemm: M = 0 writes nothing, N > 32 is unsupported") {
  Gpu gpu;
  DeviceBuffer buf(gpu.device, 1 << 16);
  buf.poison();
  Tensor a0(buf.data(), DG_DTYPE_BFLOAT16, {0, 64}), b(buf.data(), DG_DTYPE_FLOAT32, {24, 64});
  Tensor d0(buf.data(), DG_DTYPE_FLOAT32, {0, 24}), s0(buf.data(), DG_DTYPE_FLOAT32, {0});
  CHECK(dg_tf32_hc_prenorm_gemm(gpu.stream, a0.t, b.t, d0.t, s0.t, 0) == DG_SUCCESS);
  REQUIRE(dg_stream_synchronize(gpu.stream) == DG_SUCCESS);
  const std::vector<uint32_t> after = buf.download_words(16, 4);
  CHECK(std::all_of(after.begin(), after.end(), [](uint32_t w) { return w == kPoison; }));
  Tensor a(buf.data(), DG_DTYPE_BFLOAT16, {4, 64}), b33(buf.data(), DG_DTYPE_FLOAT32, {33, 64});
  Tensor d(buf.data(), DG_DTYPE_FLOAT32, {4, 33}), s(buf.data(), DG_DTYPE_FLOAT32, {4});
  CHECK(dg_tf32_hc_prenorm_gemm(gpu.stream, a.t, b33.t, d.t, s.t, 0) == DG_ERROR_UNSUPPORTED);
}
