// Fused GEMM epilogues (docs/gemm_epilogues.md) through the public API: a bias on dense BF16 and FP8
// GEMMs, SwiGLU on dense, M-grouped contiguous (with padding rows) and masked FP8 GEMMs, against FP64
// references on the unquantized values; and the FP8 D (FP32, power-of-two and packed UE8M0 scales)
// bit for bit against quantizing the same call's BF16 D with dg_quantize_fp8_per_token*. Outputs are
// poisoned first, odd M and masked counts (0, partial, full) exercise the tails, and the weights go
// through dg_swiglu_interleave as an engine would prepare them.
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

using Gpu = dg::test::Gpu;
using Buf = dg::test::DeviceBuffer;
using dg::test::Tensor;
using dg::test::bf2f;
using dg::test::f2bf;

std::vector<float> random_bf16(size_t n, float scale, std::mt19937& rng) {
  std::normal_distribution<float> nd(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = bf2f(f2bf(nd(rng)));
  return v;
}

std::vector<uint16_t> bf16_bits(const std::vector<float>& v) {
  std::vector<uint16_t> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = f2bf(v[i]);
  return out;
}

double silu(double x) { return x / (1.0 + std::exp(-x)); }

int64_t align4(int64_t x) { return (x + 3) / 4 * 4; }

// FP8 weights [G, 2I, K] from BF16 [gate; up] rows: per-block quantized, then interleaved in blocks
// of 128 rows (and their scales in blocks of one 128-row block) for the SwiGLU epilogue.
struct SwiGluWeights {
  int64_t g, i2, k;
  std::vector<float> w;  // [G, 2I, K], gate rows then up rows, as a checkpoint holds them
  Buf q, sf;             // interleaved codes and scales
  SwiGluWeights(Gpu& gpu, int64_t groups, int64_t inter, int64_t k_, std::mt19937& rng)
      : g(groups), i2(2 * inter), k(k_), w(random_bf16(size_t(groups * 2 * inter * k_), 0.05f, rng)),
        q(gpu.device, size_t(g * i2 * k)), sf(gpu.device, size_t(g * (i2 / 128) * ((k + 127) / 128) * 4)) {
    const int64_t kb = (k + 127) / 128;
    Buf raw(gpu.device, w.size() * 2), q0(gpu.device, w.size()), sf0(gpu.device, sf.bytes());
    raw.upload(bf16_bits(w));
    Tensor tw(raw.data(), DG_DTYPE_BFLOAT16, {g, i2, k}), tq0(q0.data(), DG_DTYPE_FLOAT8_E4M3, {g, i2, k});
    Tensor tsf0(sf0.data(), DG_DTYPE_FLOAT32, {g, i2 / 128, kb});
    REQUIRE(dg_quantize_fp8_per_block(gpu.stream, tw.t, tq0.t, tsf0.t, nullptr) == DG_SUCCESS);
    Tensor tq(q.data(), DG_DTYPE_FLOAT8_E4M3, {g, i2, k}), tsf(sf.data(), DG_DTYPE_FLOAT32, {g, i2 / 128, kb});
    REQUIRE_MESSAGE(dg_swiglu_interleave(gpu.stream, tq0.t, tq.t, 128) == DG_SUCCESS, std::string(dg_last_error()));
    REQUIRE_MESSAGE(dg_swiglu_interleave(gpu.stream, tsf0.t, tsf.t, 1) == DG_SUCCESS, std::string(dg_last_error()));
    uint8_t byte = 0;
    q.download(&byte, 1);  // finish the copies before the sources go
  }
  // sum_t x[t] * w[group, row, t] over the unquantized values.
  double dot(const float* x, int64_t group, int64_t row) const {
    double acc = 0;
    const float* wr = &w[size_t((group * i2 + row) * k)];
    for (int64_t t = 0; t < k; ++t) acc += double(x[t]) * wr[t];
    return acc;
  }
  // The SwiGLU output column j of row x.
  double swiglu(const float* x, int64_t group, int64_t j, double alpha) const {
    return silu(alpha * dot(x, group, j)) * (alpha * dot(x, group, i2 / 2 + j));
  }
};

// Per-token FP8 codes and scales of BF16 x [(G,) rows, K] (masked: with counts).
struct Fp8Tokens {
  Buf q, sf;
  Fp8Tokens(Gpu& gpu, const std::vector<float>& x, int64_t groups, int64_t rows, int64_t k, const dg_tensor* masked_m)
      : q(gpu.device, x.size()), sf(gpu.device, size_t(groups * align4(rows) * ((k + 127) / 128) * 4)) {
    const int64_t kb = (k + 127) / 128;
    Buf raw(gpu.device, x.size() * 2);
    raw.upload(bf16_bits(x));
    if (masked_m != nullptr) {
      Tensor tx(raw.data(), DG_DTYPE_BFLOAT16, {groups, rows, k}), tq(q.data(), DG_DTYPE_FLOAT8_E4M3, {groups, rows, k});
      Tensor tsf(sf.data(), DG_DTYPE_FLOAT32, {groups, rows, kb}, {align4(rows) * kb, 1, align4(rows)});
      REQUIRE(dg_quantize_fp8_per_token_masked(gpu.stream, tx.t, tq.t, tsf.t, masked_m, nullptr) == DG_SUCCESS);
    } else {
      Tensor tx(raw.data(), DG_DTYPE_BFLOAT16, {rows, k}), tq(q.data(), DG_DTYPE_FLOAT8_E4M3, {rows, k});
      Tensor tsf(sf.data(), DG_DTYPE_FLOAT32, {rows, kb}, {1, align4(rows)});
      REQUIRE(dg_quantize_fp8_per_token(gpu.stream, tx.t, tq.t, tsf.t, nullptr) == DG_SUCCESS);
    }
    uint8_t byte = 0;
    q.download(&byte, 1);
  }
};

// The FP8 forms of an output of `groups` x [rows, cols]: scales as FP32, FP32 powers of two, or
// packed UE8M0 words, in the layouts dg_quantize_fp8_per_token writes.
struct ScaleForm {
  const char* name;
  bool packed, pow2;
};
constexpr ScaleForm kScaleForms[] = {{"fp32", false, false}, {"pow2", false, true}, {"ue8m0", true, true}};

struct Fp8Out {
  int64_t groups, rows, cols, words;
  Buf d, sf;
  Fp8Out(Gpu& gpu, int64_t g, int64_t r, int64_t c, bool packed)
      : groups(g), rows(r), cols(c), words(packed ? (c / 128 + 3) / 4 : c / 128), d(gpu.device, size_t(g * r * c)),
        sf(gpu.device, size_t(g * align4(r) * words * 4)) {
    d.poison();
    sf.poison();
  }
  dg_dtype sf_dtype(bool packed) const { return packed ? DG_DTYPE_INT32 : DG_DTYPE_FLOAT32; }
  std::vector<int64_t> d_sizes() const { return groups > 1 ? std::vector<int64_t>{groups, rows, cols} : std::vector<int64_t>{rows, cols}; }
  std::vector<int64_t> sf_sizes() const { return groups > 1 ? std::vector<int64_t>{groups, rows, words} : std::vector<int64_t>{rows, words}; }
  std::vector<int64_t> sf_strides() const {
    return groups > 1 ? std::vector<int64_t>{align4(rows) * words, 1, align4(rows)} : std::vector<int64_t>{1, align4(rows)};
  }
};

// Compares codes of valid rows and scale words of every layout row bit for bit. With
// `check_foreign`, each row that is no group's holds either codes 0 and scale words 0 in the fused
// output (a computed tile covers it) or is untouched (poison 0xff throughout: no tile covers it).
void check_same_fp8(Fp8Out& fused, Fp8Out& ref, const std::vector<bool>& valid, bool check_foreign) {
  const std::vector<uint8_t> d1 = fused.d.download<uint8_t>(), d2 = ref.d.download<uint8_t>();
  const std::vector<uint32_t> s1 = fused.sf.download<uint32_t>(), s2 = ref.sf.download<uint32_t>();
  int64_t bad_codes = 0, bad_scales = 0, bad_foreign = 0, zero_rows = 0;
  for (int64_t g = 0; g < fused.groups; ++g)
    for (int64_t r = 0; r < fused.rows; ++r) {
      const bool v = valid[size_t(g * fused.rows + r)];
      bool zeros = true, poison = true;
      for (int64_t c = 0; c < fused.cols; ++c) {
        const size_t i = size_t((g * fused.rows + r) * fused.cols + c);
        if (v) bad_codes += d1[i] != d2[i];
        zeros = zeros && d1[i] == 0, poison = poison && d1[i] == 0xff;
      }
      for (int64_t w = 0; w < fused.words; ++w) {
        const size_t i = size_t(g * align4(fused.rows) * fused.words + w * align4(fused.rows) + r);
        if (v) bad_scales += s1[i] != s2[i];
        zeros = zeros && s1[i] == 0, poison = poison && s1[i] == 0xffffffffu;
      }
      if (!v && check_foreign) {
        bad_foreign += !zeros && !poison;
        zero_rows += zeros;
      }
    }
  CHECK(bad_codes == 0);
  CHECK(bad_scales == 0);
  CHECK(bad_foreign == 0);
  if (check_foreign) CHECK(zero_rows > 0);  // the cases have foreign rows inside computed tiles
}

dg_gemm_epilogue swiglu_epilogue() {
  dg_gemm_epilogue e = DG_GEMM_EPILOGUE_INIT;
  e.activation = DG_ACTIVATION_SWIGLU;
  return e;
}

// For each scale form: the GEMM with the SwiGLU + FP8 D epilogue (`gemm(epilogue, d)`) beside the
// quantization of the same call's BF16 D (`quantize(options, q, sf)`), compared by check_same_fp8;
// `also(fused)` checks more of the fused output.
template <class Gemm, class Quantize, class Also>
void check_fp8_forms(Gpu& gpu, int64_t groups, int64_t rows, int64_t cols, const std::vector<bool>& valid,
                     bool check_foreign, Gemm gemm, Quantize quantize, Also also) {
  for (const ScaleForm& f : kScaleForms) {
    CAPTURE(f.name);
    Fp8Out fused(gpu, groups, rows, cols, f.packed), ref(gpu, groups, rows, cols, f.packed);
    Tensor tq(fused.d.data(), DG_DTYPE_FLOAT8_E4M3, fused.d_sizes());
    Tensor tsf(fused.sf.data(), fused.sf_dtype(f.packed), fused.sf_sizes(), fused.sf_strides());
    dg_gemm_epilogue e = swiglu_epilogue();
    e.d_scales = tsf.t;
    e.pow2_scales = f.pow2;
    REQUIRE_MESSAGE(gemm(&e, tq.t) == DG_SUCCESS, std::string(dg_last_error()));
    Tensor rq(ref.d.data(), DG_DTYPE_FLOAT8_E4M3, ref.d_sizes());
    Tensor rsf(ref.sf.data(), ref.sf_dtype(f.packed), ref.sf_sizes(), ref.sf_strides());
    dg_quant_options qo = DG_QUANT_OPTIONS_INIT;
    qo.pow2_scales = f.pow2;
    REQUIRE_MESSAGE(quantize(&qo, rq.t, rsf.t) == DG_SUCCESS, std::string(dg_last_error()));
    check_same_fp8(fused, ref, valid, check_foreign);
    also(fused);
  }
}

}  // namespace

TEST_CASE("fused bias on dense BF16 and FP8 GEMMs matches an FP64 reference") {
  Gpu gpu;
  if (!gpu.sm90()) return;
  std::mt19937 rng(7);
  const int64_t m = 200, n = 384, k = 640;
  const float alpha = 0.5f;
  const std::vector<float> a = random_bf16(size_t(m * k), 1.0f, rng), b = random_bf16(size_t(n * k), 0.05f, rng);
  const std::vector<float> bias = random_bf16(size_t(n), 1.0f, rng);
  for (const bool fp8 : {false, true})
    for (const dg_dtype bias_dtype : {DG_DTYPE_BFLOAT16, DG_DTYPE_FLOAT32}) {
      CAPTURE(fp8);
      CAPTURE(bias_dtype);
      Buf da(gpu.device, a.size() * 2), db(gpu.device, b.size() * 2), dbias(gpu.device, size_t(n * 4)), dd(gpu.device, size_t(m * n * 2));
      da.upload(bf16_bits(a));
      db.upload(bf16_bits(b));
      if (bias_dtype == DG_DTYPE_FLOAT32) dbias.upload(bias);
      else dbias.upload(bf16_bits(bias));
      dd.poison();
      Tensor tbias(dbias.data(), bias_dtype, {n}), td(dd.data(), DG_DTYPE_BFLOAT16, {m, n});
      dg_gemm_epilogue e = DG_GEMM_EPILOGUE_INIT;
      e.bias = tbias.t;
      dg_gemm_options o = DG_GEMM_OPTIONS_INIT;
      o.alpha = alpha;
      o.epilogue = &e;
      if (fp8) {
        Fp8Tokens qa(gpu, a, 1, m, k, nullptr);
        Buf qb(gpu.device, b.size()), sfb(gpu.device, size_t((n / 128) * (k / 128 + 1) * 4));
        Tensor tb(db.data(), DG_DTYPE_BFLOAT16, {n, k}), tqb(qb.data(), DG_DTYPE_FLOAT8_E4M3, {n, k});
        Tensor tsfb(sfb.data(), DG_DTYPE_FLOAT32, {n / 128, (k + 127) / 128});
        REQUIRE(dg_quantize_fp8_per_block(gpu.stream, tb.t, tqb.t, tsfb.t, nullptr) == DG_SUCCESS);
        Tensor tqa(qa.q.data(), DG_DTYPE_FLOAT8_E4M3, {m, k}), tsfa(qa.sf.data(), DG_DTYPE_FLOAT32, {m, (k + 127) / 128}, {1, align4(m)});
        REQUIRE_MESSAGE(dg_fp8_gemm_nt(gpu.stream, tqa.t, tsfa.t, tqb.t, tsfb.t, td.t, nullptr, &o) == DG_SUCCESS, std::string(dg_last_error()));
      } else {
        Tensor ta(da.data(), DG_DTYPE_BFLOAT16, {m, k}), tb(db.data(), DG_DTYPE_BFLOAT16, {n, k});
        REQUIRE_MESSAGE(dg_bf16_gemm_nt(gpu.stream, ta.t, tb.t, td.t, nullptr, &o) == DG_SUCCESS, std::string(dg_last_error()));
      }
      std::vector<uint16_t> d(size_t(m * n));
      dd.download(d.data(), d.size() * 2);
      std::vector<double> ref(d.size()), got(d.size());
      dg::test::parallel_for(m, [&](int64_t i) {
        for (int64_t j = 0; j < n; ++j) {
          double acc = 0;
          for (int64_t t = 0; t < k; ++t) acc += double(a[size_t(i * k + t)]) * b[size_t(j * k + t)];
          ref[size_t(i * n + j)] = alpha * acc + bias[size_t(j)];
          got[size_t(i * n + j)] = bf2f(d[size_t(i * n + j)]);
        }
      });
      CHECK(dg::test::calc_diff(ref, got) < (fp8 ? 2e-3 : 1e-5));
    }
}

TEST_CASE("fused SwiGLU on a dense FP8 GEMM: BF16 D against FP64, FP8 D bit for bit against quantizing it") {
  Gpu gpu;
  if (!gpu.sm90()) return;
  std::mt19937 rng(11);
  const int64_t m = 203, inter = 384, k = 896;
  const float alpha = 1.25f;
  SwiGluWeights w(gpu, 1, inter, k, rng);
  const std::vector<float> a = random_bf16(size_t(m * k), 1.0f, rng);
  Fp8Tokens qa(gpu, a, 1, m, k, nullptr);
  const int64_t kb = (k + 127) / 128;
  Tensor tqa(qa.q.data(), DG_DTYPE_FLOAT8_E4M3, {m, k}), tsfa(qa.sf.data(), DG_DTYPE_FLOAT32, {m, kb}, {1, align4(m)});
  Tensor tqb(w.q.data(), DG_DTYPE_FLOAT8_E4M3, {2 * inter, k}), tsfb(w.sf.data(), DG_DTYPE_FLOAT32, {2 * inter / 128, kb});
  dg_gemm_epilogue e = swiglu_epilogue();
  dg_gemm_options o = DG_GEMM_OPTIONS_INIT;
  o.alpha = alpha;
  o.epilogue = &e;

  Buf dd(gpu.device, size_t(m * inter * 2));
  Tensor td(dd.data(), DG_DTYPE_BFLOAT16, {m, inter});
  // alpha 64 puts most gates beyond +-43, where silu saturates (x, or 0 within 1e-17).
  for (const float scale : {alpha, 64.0f}) {
    CAPTURE(scale);
    o.alpha = scale;
    dd.poison();
    REQUIRE_MESSAGE(dg_fp8_gemm_nt(gpu.stream, tqa.t, tsfa.t, tqb.t, tsfb.t, td.t, nullptr, &o) == DG_SUCCESS, std::string(dg_last_error()));
    std::vector<uint16_t> d(size_t(m * inter));
    dd.download(d.data(), d.size() * 2);
    std::vector<double> ref(d.size()), got(d.size());
    int64_t not_finite = 0;
    dg::test::parallel_for(m, [&](int64_t i) {
      for (int64_t j = 0; j < inter; ++j) {
        ref[size_t(i * inter + j)] = w.swiglu(&a[size_t(i * k)], 0, j, scale);
        got[size_t(i * inter + j)] = bf2f(d[size_t(i * inter + j)]);
      }
    });
    for (const double v : got) not_finite += !std::isfinite(v);
    CHECK(not_finite == 0);
    CHECK(dg::test::calc_diff(ref, got) < 3e-3);
  }
  o.alpha = alpha;  // the BF16 D below is the quantization's input: the first scale's
  REQUIRE(dg_fp8_gemm_nt(gpu.stream, tqa.t, tsfa.t, tqb.t, tsfb.t, td.t, nullptr, &o) == DG_SUCCESS);

  // The layout's padding rows (m .. align4(m)) hold 0 in both.
  const std::vector<bool> valid(static_cast<size_t>(m), true);
  check_fp8_forms(
      gpu, 1, m, inter, valid, false,
      [&](const dg_gemm_epilogue* e8, const dg_tensor* d8) {
        o.epilogue = e8;
        return dg_fp8_gemm_nt(gpu.stream, tqa.t, tsfa.t, tqb.t, tsfb.t, d8, nullptr, &o);
      },
      [&](const dg_quant_options* qo, const dg_tensor* q, const dg_tensor* sf) {
        return dg_quantize_fp8_per_token(gpu.stream, td.t, q, sf, qo);
      },
      [&](Fp8Out& fused) {
        const std::vector<uint32_t> s1 = fused.sf.download<uint32_t>();
        int64_t bad_padding = 0;
        for (int64_t w2 = 0; w2 < fused.words; ++w2)
          for (int64_t r = m; r < align4(m); ++r) bad_padding += s1[size_t(w2 * align4(m) + r)] != 0;
        CHECK(bad_padding == 0);
      });
}

// Operands whose GEMM is exact in FP32 (E4M3 values in {+-0.5, +-1, +-1.5}, unit scales, K = 256: every
// product and partial sum lies on the 1/4 grid below 2^10), so that an FP32 D shows the SwiGLU arithmetic
// alone against FP64, value by value, for every pair position (the pairs that take rcp.approx and the ones
// on the FMA pipe): within docs/gemm_epilogues.md's bound for silu (5 ulp, and up to |x| ulp more for a
// negative gate x) plus the product's rounding, with 4 ulp to spare.
TEST_CASE("fused SwiGLU on exact GEMM values: FP32 D within its documented ulp bound of FP64, value by value") {
  Gpu gpu;
  if (!gpu.sm90()) return;
  std::mt19937 rng(23);
  const int64_t m = 77, inter = 256, n = 2 * inter, k = 256, kb = k / 128;
  const uint8_t codes[] = {0x30, 0x38, 0x3c, 0xb0, 0xb8, 0xbc};  // 0.5, 1, 1.5 and their negatives
  const double values[] = {0.5, 1.0, 1.5, -0.5, -1.0, -1.5};
  std::uniform_int_distribution<int> pick(0, 5);
  std::vector<uint8_t> qa(size_t(m * k)), qb(size_t(n * k));
  std::vector<double> va(qa.size()), vb(qb.size());
  for (size_t i = 0; i < qa.size(); ++i) { const int c = pick(rng); qa[i] = codes[c]; va[i] = values[c]; }
  for (size_t i = 0; i < qb.size(); ++i) { const int c = pick(rng); qb[i] = codes[c]; vb[i] = values[c]; }
  Buf da(gpu.device, qa.size()), db(gpu.device, qb.size());
  da.upload(qa);
  db.upload(qb);
  Buf dsfa(gpu.device, size_t(align4(m) * kb * 4)), dsfb(gpu.device, size_t(n / 128 * kb * 4));
  dsfa.upload(std::vector<float>(size_t(align4(m) * kb), 1.0f));
  dsfb.upload(std::vector<float>(size_t(n / 128 * kb), 1.0f));
  Tensor ta(da.data(), DG_DTYPE_FLOAT8_E4M3, {m, k}), tsfa(dsfa.data(), DG_DTYPE_FLOAT32, {m, kb}, {1, align4(m)});
  Tensor tb(db.data(), DG_DTYPE_FLOAT8_E4M3, {n, k}), tsfb(dsfb.data(), DG_DTYPE_FLOAT32, {n / 128, kb});
  Buf dd(gpu.device, size_t(m * inter * 4));
  Tensor td(dd.data(), DG_DTYPE_FLOAT32, {m, inter});
  dd.poison();
  dg_gemm_epilogue e = swiglu_epilogue();
  dg_gemm_options o = DG_GEMM_OPTIONS_INIT;
  o.epilogue = &e;
  REQUIRE_MESSAGE(dg_fp8_gemm_nt(gpu.stream, ta.t, tsfa.t, tb.t, tsfb.t, td.t, nullptr, &o) == DG_SUCCESS,
                  std::string(dg_last_error()));
  const std::vector<float> d = dd.download<float>();
  // B's rows alternate blocks of 128 gate rows and the 128 matching up rows (the SwiGLU layout).
  auto dot = [&](int64_t i, int64_t row) {
    double acc = 0;
    for (int64_t x = 0; x < k; ++x) acc += va[size_t(i * k + x)] * vb[size_t(row * k + x)];
    return acc;
  };
  int64_t bad = 0;
  double worst_ulps = 0;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t c = 0; c < inter; ++c) {
      const int64_t gate_row = (c / 128) * 256 + c % 128;
      const double g = std::max(dot(i, gate_row), -43.0), u = dot(i, gate_row + 128);  // -43: the documented floor
      const double ref = g / (1.0 + std::exp(-g)) * u;
      const double got = d[size_t(i * inter + c)];
      const double ulp = std::ldexp(1.0, std::ilogb(std::max(std::fabs(ref), 1e-30)) - 23);
      const double ulps = std::fabs(got - ref) / ulp, bound = 10.0 + std::max(-g, 0.0);
      worst_ulps = std::max(worst_ulps, std::isfinite(ulps) ? ulps : 1e30);
      bad += !(ulps <= bound);
    }
  CAPTURE(worst_ulps);
  CHECK(bad == 0);
}

TEST_CASE("fused SwiGLU + FP8 D on M-grouped masked and contiguous FP8 GEMMs") {
  Gpu gpu;
  if (!gpu.sm90()) return;
  std::mt19937 rng(23);
  const int64_t g = 3, inter = 256, k = 512, kb = k / 128;
  SwiGluWeights w(gpu, g, inter, k, rng);
  Tensor tqb(w.q.data(), DG_DTYPE_FLOAT8_E4M3, {g, 2 * inter, k}), tsfb(w.sf.data(), DG_DTYPE_FLOAT32, {g, 2 * inter / 128, kb});

  SUBCASE("masked: counts 37, 0, 128 of max_m 128") {
    const int64_t max_m = 128;
    const std::vector<int32_t> counts = {37, 0, 128};
    Buf dm(gpu.device, 12);
    dm.upload(counts);
    Tensor tm(dm.data(), DG_DTYPE_INT32, {g});
    const std::vector<float> a = random_bf16(size_t(g * max_m * k), 1.0f, rng);
    Fp8Tokens qa(gpu, a, g, max_m, k, tm.t);
    Tensor tqa(qa.q.data(), DG_DTYPE_FLOAT8_E4M3, {g, max_m, k});
    Tensor tsfa(qa.sf.data(), DG_DTYPE_FLOAT32, {g, max_m, kb}, {align4(max_m) * kb, 1, align4(max_m)});
    std::vector<bool> valid(size_t(g * max_m));
    for (int64_t gi = 0; gi < g; ++gi)
      for (int64_t r = 0; r < max_m; ++r) valid[size_t(gi * max_m + r)] = r < counts[size_t(gi)];
    // BF16 D against FP64 on the valid rows.
    Buf dd(gpu.device, size_t(g * max_m * inter * 2));
    dd.poison();
    Tensor td(dd.data(), DG_DTYPE_BFLOAT16, {g, max_m, inter});
    dg_gemm_epilogue e = swiglu_epilogue();
    dg_gemm_options o = DG_GEMM_OPTIONS_INIT;
    o.epilogue = &e;
    REQUIRE_MESSAGE(dg_m_grouped_fp8_gemm_nt_masked(gpu.stream, tqa.t, tsfa.t, tqb.t, tsfb.t, td.t, tm.t, 64, &o) == DG_SUCCESS,
                    std::string(dg_last_error()));
    std::vector<uint16_t> d(size_t(g * max_m * inter));
    dd.download(d.data(), d.size() * 2);
    std::vector<double> ref, got;
    for (int64_t gi = 0; gi < g; ++gi)
      for (int64_t r = 0; r < counts[size_t(gi)]; ++r)
        for (int64_t j = 0; j < inter; ++j) {
          ref.push_back(w.swiglu(&a[size_t((gi * max_m + r) * k)], gi, j, 1.0));
          got.push_back(bf2f(d[size_t((gi * max_m + r) * inter + j)]));
        }
    CHECK(dg::test::calc_diff(ref, got) < 3e-3);
    check_fp8_forms(
        gpu, g, max_m, inter, valid, true,
        [&](const dg_gemm_epilogue* e8, const dg_tensor* d8) {
          o.epilogue = e8;
          return dg_m_grouped_fp8_gemm_nt_masked(gpu.stream, tqa.t, tsfa.t, tqb.t, tsfb.t, d8, tm.t, 64, &o);
        },
        [&](const dg_quant_options* qo, const dg_tensor* q, const dg_tensor* sf) {
          return dg_quantize_fp8_per_token_masked(gpu.stream, td.t, q, sf, tm.t, qo);
        },
        [](Fp8Out&) {});
  }

  SUBCASE("contiguous: groups of 100, 0 and 250 rows, -1 padding") {
    const int64_t m = 512;
    const int32_t sizes[3] = {100, 0, 250};
    std::vector<int32_t> idx(size_t(m), -1);
    std::vector<std::pair<int64_t, int64_t>> spans;
    int64_t row = 0;
    for (int32_t gi = 0; gi < 3; ++gi) {
      for (int32_t i = 0; i < sizes[gi]; ++i) idx[size_t(row + i)] = gi;
      spans.push_back({row, sizes[gi]});
      row = (row + sizes[gi] + 127) / 128 * 128;
    }
    Buf di(gpu.device, size_t(m * 4));
    di.upload(idx);
    Tensor ti(di.data(), DG_DTYPE_INT32, {m});
    const std::vector<float> a = random_bf16(size_t(m * k), 1.0f, rng);
    Fp8Tokens qa(gpu, a, 1, m, k, nullptr);
    Tensor tqa(qa.q.data(), DG_DTYPE_FLOAT8_E4M3, {m, k}), tsfa(qa.sf.data(), DG_DTYPE_FLOAT32, {m, kb}, {1, m});
    std::vector<bool> valid(static_cast<size_t>(m));
    for (int64_t r = 0; r < m; ++r) valid[size_t(r)] = idx[size_t(r)] >= 0;
    Buf dd(gpu.device, size_t(m * inter * 2));
    dd.poison();
    Tensor td(dd.data(), DG_DTYPE_BFLOAT16, {m, inter});
    dg_gemm_epilogue e = swiglu_epilogue();
    dg_gemm_options o = DG_GEMM_OPTIONS_INIT;
    o.epilogue = &e;
    REQUIRE_MESSAGE(dg_m_grouped_fp8_gemm_nt_contiguous(gpu.stream, tqa.t, tsfa.t, tqb.t, tsfb.t, td.t, ti.t,
                                                        DG_M_GROUPED_LAYOUT_INDICES, 0, &o) == DG_SUCCESS,
                    std::string(dg_last_error()));
    std::vector<uint16_t> d(size_t(m * inter));
    dd.download(d.data(), d.size() * 2);
    std::vector<double> ref, got;
    for (int64_t gi = 0; gi < g; ++gi)
      for (int64_t r = spans[size_t(gi)].first; r < spans[size_t(gi)].first + spans[size_t(gi)].second; ++r)
        for (int64_t j = 0; j < inter; ++j) {
          ref.push_back(w.swiglu(&a[size_t(r * k)], gi, j, 1.0));
          got.push_back(bf2f(d[size_t(r * inter + j)]));
        }
    CHECK(dg::test::calc_diff(ref, got) < 3e-3);
    // Padding rows of the computed tiles (rows 0 .. 511 here: every row is in a computed tile).
    check_fp8_forms(
        gpu, 1, m, inter, valid, true,
        [&](const dg_gemm_epilogue* e8, const dg_tensor* d8) {
          o.epilogue = e8;
          return dg_m_grouped_fp8_gemm_nt_contiguous(gpu.stream, tqa.t, tsfa.t, tqb.t, tsfb.t, d8, ti.t,
                                                     DG_M_GROUPED_LAYOUT_INDICES, 0, &o);
        },
        [&](const dg_quant_options* qo, const dg_tensor* q, const dg_tensor* sf) {
          return dg_quantize_fp8_per_token_contiguous(gpu.stream, td.t, q, sf, ti.t, DG_M_GROUPED_LAYOUT_INDICES, g, qo);
        },
        [](Fp8Out&) {});
  }
}

TEST_CASE("fused epilogues refuse what they cannot run, leaving the outputs untouched") {
  Gpu gpu;
  if (!gpu.sm90()) return;
  const int64_t m = 64, n = 384, k = 256;
  Buf da(gpu.device, size_t(m * k * 2)), db(gpu.device, size_t(n * k * 2)), dd(gpu.device, size_t(m * n * 4));
  Buf dbias(gpu.device, size_t(n * 4));
  da.poison(0x3c);
  db.poison(0x3c);
  dd.poison();
  Tensor ta(da.data(), DG_DTYPE_BFLOAT16, {m, k}), tb(db.data(), DG_DTYPE_BFLOAT16, {n, k});
  Tensor td(dd.data(), DG_DTYPE_BFLOAT16, {m, n}), td_half(dd.data(), DG_DTYPE_BFLOAT16, {m, n / 2});
  Tensor td8(dd.data(), DG_DTYPE_FLOAT8_E4M3, {m, n}), tbias(dbias.data(), DG_DTYPE_FLOAT32, {n});
  dg_gemm_epilogue e = DG_GEMM_EPILOGUE_INIT;
  dg_gemm_options o = DG_GEMM_OPTIONS_INIT;
  o.epilogue = &e;
  // A C term: unsupported.
  CHECK(dg_bf16_gemm_nt(gpu.stream, ta.t, tb.t, td.t, td.t, &o) == DG_ERROR_UNSUPPORTED);
  // SwiGLU with N = 384 (not a multiple of 256): unsupported.
  e.activation = DG_ACTIVATION_SWIGLU;
  CHECK(dg_bf16_gemm_nt(gpu.stream, ta.t, tb.t, td_half.t, nullptr, &o) == DG_ERROR_UNSUPPORTED);
  e.activation = DG_ACTIVATION_NONE;
  // An FP8 D without scales, and without an epilogue.
  CHECK(dg_bf16_gemm_nt(gpu.stream, ta.t, tb.t, td8.t, nullptr, &o) == DG_ERROR_INVALID_ARGUMENT);
  CHECK(dg_bf16_gemm_nt(gpu.stream, ta.t, tb.t, td8.t, nullptr, nullptr) == DG_ERROR_INVALID_ARGUMENT);
  // The skinny kernel has no epilogue.
  o.kernel = DG_GEMM_KERNEL_SKINNY;
  e.bias = tbias.t;
  CHECK(dg_bf16_gemm_nt(gpu.stream, ta.t, tb.t, td.t, nullptr, &o) == DG_ERROR_UNSUPPORTED);
  o.kernel = DG_GEMM_KERNEL_AUTO;
  // A bad activation, and a bias of the wrong size.
  e.activation = 5;
  CHECK(dg_bf16_gemm_nt(gpu.stream, ta.t, tb.t, td.t, nullptr, &o) == DG_ERROR_INVALID_ARGUMENT);
  e.activation = DG_ACTIVATION_NONE;
  Tensor tbias_short(dbias.data(), DG_DTYPE_FLOAT32, {n - 8});
  e.bias = tbias_short.t;
  CHECK(dg_bf16_gemm_nt(gpu.stream, ta.t, tb.t, td.t, nullptr, &o) == DG_ERROR_INVALID_ARGUMENT);
  const std::vector<uint8_t> after = dd.download<uint8_t>();
  int64_t touched = 0;
  for (uint8_t v : after) touched += v != 0xff;
  CHECK(touched == 0);
}
