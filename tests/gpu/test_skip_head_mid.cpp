// dg_fp8_gemm_nt_skip_head_mid (docs/skip_head_mid.md) through the public API against an FP64 CPU
// reference on the dequantised inputs: DeepGEMM's test shapes (heads 128 + 64 + 128, M 128 and
// 4096, N 32768 and 8192, K 512; DeepGEMM's calc_diff < 1e-3), and odd splits (mid not a multiple
// of anything, left or right 0, FP32 D, tiles straddling heads, padded D rows, alpha). D is
// poisoned first: the mid columns and the row padding must keep the poison bit for bit. With the
// same forced config the head columns equal the plain dg_fp8_gemm_nt's D bit for bit (TMA and
// per-element stores), and a refused call leaves D untouched.
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
using dg::test::calc_diff;
using dg::test::e4m3_to_f;
using dg::test::f_to_e4m3;

constexpr int64_t kBlock = 128;
constexpr uint16_t kPoisonBf16 = 0x7fc1;
constexpr uint32_t kPoisonF32 = 0x7fc00001u;

// FP8 operands of an nt GEMM: a [M, K] per token x 128 K, b [N, K] per 128 x 128 block, the
// dequantised values kept for the reference.
struct Operands {
  int64_t m, n, k, sf_k, ld_sfa;
  std::vector<uint8_t> a, b;
  std::vector<float> sfa, sfb, a_deq, b_deq;
  Operands(int64_t m_, int64_t n_, int64_t k_, std::mt19937& rng)
      : m(m_), n(n_), k(k_), sf_k((k_ + kBlock - 1) / kBlock), ld_sfa((m_ + 3) / 4 * 4), a(m_ * k_), b(n_ * k_),
        sfa(ld_sfa * sf_k), sfb(((n_ + kBlock - 1) / kBlock) * sf_k), a_deq(m_ * k_), b_deq(n_ * k_) {
    std::normal_distribution<float> nd(0.f, 1.f);
    std::vector<float> ra(m * k), rb(n * k);
    for (float& v : ra) v = nd(rng);
    for (float& v : rb) v = nd(rng);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t kb = 0; kb < sf_k; ++kb) {
        const int64_t k0 = kb * kBlock, k1 = std::min(k, k0 + kBlock);
        float amax = 1e-4f;
        for (int64_t c = k0; c < k1; ++c) amax = std::max(amax, std::fabs(ra[i * k + c]));
        const float s = amax / 448.f;
        sfa[kb * ld_sfa + i] = s;
        for (int64_t c = k0; c < k1; ++c) {
          a[i * k + c] = f_to_e4m3(ra[i * k + c] / s);
          a_deq[i * k + c] = e4m3_to_f(a[i * k + c]) * s;
        }
      }
    for (int64_t jb = 0; jb * kBlock < n; ++jb)
      for (int64_t kb = 0; kb < sf_k; ++kb) {
        const int64_t j0 = jb * kBlock, j1 = std::min(n, j0 + kBlock), k0 = kb * kBlock, k1 = std::min(k, k0 + kBlock);
        float amax = 1e-4f;
        for (int64_t j = j0; j < j1; ++j)
          for (int64_t c = k0; c < k1; ++c) amax = std::max(amax, std::fabs(rb[j * k + c]));
        const float s = amax / 448.f;
        sfb[jb * sf_k + kb] = s;
        for (int64_t j = j0; j < j1; ++j)
          for (int64_t c = k0; c < k1; ++c) {
            b[j * k + c] = f_to_e4m3(rb[j * k + c] / s);
            b_deq[j * k + c] = e4m3_to_f(b[j * k + c]) * s;
          }
      }
  }
  double dot(int64_t i, int64_t j) const {
    double acc = 0;
    for (int64_t c = 0; c < k; ++c) acc += double(a_deq[i * k + c]) * b_deq[j * k + c];
    return acc;
  }
};

struct Case {
  int64_t m, k, left, mid, right, heads;
  dg_dtype d_dtype = DG_DTYPE_BFLOAT16;
  int64_t row_pad = 0;  // extra D columns past the heads in each row (poisoned, never written)
  float alpha = 1.f;
  int block_m = 0, block_n = 0, cluster = 0, multicast_a = -1;
  int sampled_rows = 0;  // 0: every row against the reference
};

std::string describe(const Case& c) {
  return "m=" + std::to_string(c.m) + " k=" + std::to_string(c.k) + " heads=" + std::to_string(c.heads) + " x (" +
         std::to_string(c.left) + ", " + std::to_string(c.mid) + ", " + std::to_string(c.right) + ") " +
         (c.d_dtype == DG_DTYPE_FLOAT32 ? "f32" : "bf16") + " pad=" + std::to_string(c.row_pad) +
         " alpha=" + std::to_string(c.alpha) + " block " + std::to_string(c.block_m) + "x" + std::to_string(c.block_n) +
         " cluster " + std::to_string(c.cluster);
}

// Device copies of the operands and a poisoned D of `c`'s layout.
struct Problem {
  const Case& c;
  Operands ops;
  int64_t n, d_cols, ldd, eb;
  Buf ga, gb, gsa, gsb, gd;
  Problem(Gpu& g, const Case& c_, std::mt19937& rng)
      : c(c_), ops(c_.m, c_.heads * (c_.left + c_.right), c_.k, rng), n(c_.heads * (c_.left + c_.right)),
        d_cols(c_.heads * (c_.left + c_.mid + c_.right)), ldd(0), eb(c_.d_dtype == DG_DTYPE_FLOAT32 ? 4 : 2),
        ga(g.device, ops.a.size()), gb(g.device, ops.b.size()), gsa(g.device, ops.sfa.size() * 4),
        gsb(g.device, ops.sfb.size() * 4), gd(g.device, 16) {
    const int64_t per16 = 16 / eb;
    ldd = (d_cols + c.row_pad + per16 - 1) / per16 * per16;
    ga.upload(ops.a);
    gb.upload(ops.b);
    gsa.upload(ops.sfa);
    gsb.upload(ops.sfb);
  }
  std::vector<uint32_t> poisoned_d() const {
    return std::vector<uint32_t>(size_t(c.m * ldd), eb == 4 ? kPoisonF32 : kPoisonBf16);
  }
  void upload_d(Buf& d, const std::vector<uint32_t>& words) const {
    if (eb == 4) return d.upload(words);
    std::vector<uint16_t> half(words.begin(), words.end());
    d.upload(half);
  }
  dg_gemm_options options() const {
    dg_gemm_options o = DG_GEMM_OPTIONS_INIT;
    o.alpha = c.alpha;
    o.block_m = c.block_m, o.block_n = c.block_n, o.cluster = c.cluster, o.multicast_a = c.multicast_a;
    return o;
  }
  dg_status run(Gpu& g, Buf& d, int64_t left, int64_t mid, int64_t right) {
    Tensor ta(ga.data(), DG_DTYPE_FLOAT8_E4M3, {c.m, c.k}), tb(gb.data(), DG_DTYPE_FLOAT8_E4M3, {n, c.k});
    Tensor tsa(gsa.data(), DG_DTYPE_FLOAT32, {c.m, ops.sf_k}, {1, ops.ld_sfa});
    Tensor tsb(gsb.data(), DG_DTYPE_FLOAT32, {(n + kBlock - 1) / kBlock, ops.sf_k});
    Tensor td(d.data(), c.d_dtype, {c.m, d_cols}, {ldd, 1});
    const dg_gemm_options o = options();
    return dg_fp8_gemm_nt_skip_head_mid(g.stream, ta.t, tsa.t, tb.t, tsb.t, td.t, left, mid, right, &o);
  }
};

// D's column of GEMM column j, or -1.
int64_t d_column(const Case& c, int64_t j) {
  const int64_t h = j / (c.left + c.right), o = j % (c.left + c.right);
  return h * (c.left + c.mid + c.right) + (o < c.left ? o : o + c.mid);
}

double word_value(uint32_t w, int64_t eb) {
  if (eb == 2) return bf2f(static_cast<uint16_t>(w));
  float f;
  std::memcpy(&f, &w, 4);
  return f;
}

// Runs the case: the head columns against the reference (calc_diff < 1e-3, DeepGEMM's bound), and
// every other element of D (mid columns, row padding) still poisoned.
void check_case(Gpu& g, const Case& c, std::mt19937& rng) {
  INFO(describe(c));
  Problem p(g, c, rng);
  Buf d(g.device, size_t(c.m * p.ldd * p.eb));
  const std::vector<uint32_t> init = p.poisoned_d();
  p.upload_d(d, init);
  const dg_status st = p.run(g, d, c.left, c.mid, c.right);
  INFO(dg_status_string(st) << ": " << (st == DG_SUCCESS ? "" : dg_last_error()));
  REQUIRE(st == DG_SUCCESS);
  REQUIRE(dg_stream_synchronize(g.stream) == DG_SUCCESS);
  const std::vector<uint32_t> out = d.download_words(size_t(c.m * p.ldd), size_t(p.eb));

  // Nothing but the head columns changed.
  std::vector<char> head_col(size_t(p.ldd), 0);
  for (int64_t j = 0; j < p.n; ++j) head_col[size_t(d_column(c, j))] = 1;
  int64_t touched = 0;
  for (int64_t i = 0; i < c.m; ++i)
    for (int64_t col = 0; col < p.ldd; ++col)
      if (!head_col[size_t(col)] && out[size_t(i * p.ldd + col)] != init[size_t(i * p.ldd + col)]) ++touched;
  CHECK_MESSAGE(touched == 0, touched << " mid or padding elements lost their poison");

  std::vector<int64_t> rows;
  if (c.sampled_rows == 0) {
    for (int64_t i = 0; i < c.m; ++i) rows.push_back(i);
  } else {
    std::uniform_int_distribution<int64_t> ri(0, c.m - 1);
    rows = {0, c.m - 1};
    while (static_cast<int>(rows.size()) < c.sampled_rows) rows.push_back(ri(rng));
  }
  std::vector<double> ref(rows.size() * size_t(p.n)), got(ref.size());
  dg::test::parallel_for(static_cast<int64_t>(rows.size()), [&](int64_t r) {
    const int64_t i = rows[size_t(r)];
    for (int64_t j = 0; j < p.n; ++j) {
      ref[size_t(r * p.n + j)] = double(c.alpha) * p.ops.dot(i, j);
      got[size_t(r * p.n + j)] = word_value(out[size_t(i * p.ldd + d_column(c, j))], p.eb);
    }
  });
  const double diff = calc_diff(ref, got);
  INFO("calc_diff " << diff);
  CHECK(diff < 1e-3);
}

}  // namespace

TEST_CASE("sm90 fp8 gemm skip_head_mid: DeepGEMM's test shapes") {
  Gpu g;
  if (!g.sm90()) return;
  std::mt19937 rng(44);
  for (int64_t m : {128, 4096})
    for (int64_t n : {32768, 8192}) {
      Case c{m, 512, 128, 64, 128, n / 256};
      c.sampled_rows = m > 128 ? 96 : 0;
      check_case(g, c, rng);
    }
}

TEST_CASE("sm90 fp8 gemm skip_head_mid: odd splits, FP32 D, tiles straddling heads, padded rows" *
          doctest::test_suite("quick")) {
  Gpu g;
  if (!g.sm90()) return;
  std::mt19937 rng(4401);
  std::vector<Case> cases;
  // Mid of 8 columns (16 bytes: every head's right part starts at a TMA box's narrowest alignment),
  // 5 heads, K and M tails; mid of 7 (right parts at odd columns: the per-element store).
  cases.push_back({200, 640, 16, 8, 48, 5});
  cases.push_back({200, 640, 16, 7, 48, 5});
  // The same with 144-column tiles (tiles straddle heads and 128-column SFB blocks) and alpha.
  {
    Case c{200, 640, 16, 8, 48, 5};
    c.block_n = 144, c.alpha = 0.625f, c.row_pad = 24;
    cases.push_back(c);
  }
  // FP32 D: 8-column boxes, 7 heads of (8, 4, 24); (8, 3, 24) stores per element.
  for (int64_t mid : {4, 3}) {
    Case c{77, 528, 8, mid, 24, 7};
    c.d_dtype = DG_DTYPE_FLOAT32;
    cases.push_back(c);
  }
  // No left part; no middle; 96-column tiles over 96-column heads.
  {
    Case c{300, 1040, 0, 40, 96, 5};
    c.d_dtype = DG_DTYPE_FLOAT32;
    cases.push_back(c);
  }
  {
    Case c{300, 1040, 32, 0, 64, 5};
    c.block_n = 96;
    cases.push_back(c);
  }
  // 192-column tiles over 256-column heads; CTA pairs sharing A (the pair's spare tile past N), and
  // sharing B over an odd M.
  {
    Case c{129, 384, 128, 64, 128, 4};
    c.block_n = 192;
    cases.push_back(c);
  }
  {
    Case c{256, 384, 64, 64, 64, 3};  // 3 tiles along N: the last pair's second tile is past N
    c.block_m = 128, c.block_n = 128, c.cluster = 2, c.multicast_a = 1;
    cases.push_back(c);
  }
  {
    Case c{300, 384, 64, 32, 64, 3};  // 5 row blocks: the last pair's second block is past M
    c.block_m = 64, c.block_n = 128, c.cluster = 2, c.multicast_a = 0;
    cases.push_back(c);
  }
  // block_m 256 on a large M (two 128-row promotion units per warp-group).
  {
    Case c{1000, 768, 128, 64, 128, 2};
    c.block_m = 256, c.block_n = 128;
    cases.push_back(c);
  }
  // Parts no 32-byte TMA box divides: the per-element store (8 + 8 and odd 5 + 11 BF16 columns,
  // 4 + 12 FP32), with tails along M and N.
  {
    Case c{150, 384, 8, 5, 8, 9};
    cases.push_back(c);
  }
  {
    Case c{77, 528, 5, 3, 11, 7};
    c.block_n = 48, c.row_pad = 5;
    cases.push_back(c);
  }
  {
    Case c{100, 256, 4, 2, 12, 6};
    c.d_dtype = DG_DTYPE_FLOAT32, c.alpha = 1.5f;
    cases.push_back(c);
  }
  for (const Case& c : cases) check_case(g, c, rng);
}

TEST_CASE("sm90 fp8 gemm skip_head_mid: head columns equal the plain GEMM's bit for bit; a refused call writes nothing" *
          doctest::test_suite("quick")) {
  Gpu g;
  if (!g.sm90()) return;
  std::mt19937 rng(4402);
  // 6 heads over N = 768: (64, 48, 64) takes the TMA store, (24, 48, 104) the per-element one; D has
  // the same columns for both.
  Case c{250, 896, 64, 48, 64, 6};
  c.block_m = 128, c.block_n = 128;
  Problem p(g, c, rng);
  const std::vector<uint32_t> init = p.poisoned_d();
  Buf d(g.device, size_t(c.m * p.ldd * p.eb));

  // The plain GEMM into [M, N], and both head calls, with the same tiles, stages and promotion.
  dg_gemm_options o = p.options();
  o.num_stages = 4, o.fp8_promotion = DG_FP8_PROMOTION_AFTER, o.fp8_promotion_slices = 1;
  Tensor ta(p.ga.data(), DG_DTYPE_FLOAT8_E4M3, {c.m, c.k}), tb(p.gb.data(), DG_DTYPE_FLOAT8_E4M3, {p.n, c.k});
  Tensor tsa(p.gsa.data(), DG_DTYPE_FLOAT32, {c.m, p.ops.sf_k}, {1, p.ops.ld_sfa});
  Tensor tsb(p.gsb.data(), DG_DTYPE_FLOAT32, {(p.n + kBlock - 1) / kBlock, p.ops.sf_k});
  Tensor td(d.data(), c.d_dtype, {c.m, p.d_cols}, {p.ldd, 1});
  Buf full(g.device, size_t(c.m * p.n * 2));
  Tensor tf(full.data(), DG_DTYPE_BFLOAT16, {c.m, p.n});
  REQUIRE(dg_fp8_gemm_nt(g.stream, ta.t, tsa.t, tb.t, tsb.t, tf.t, nullptr, &o) == DG_SUCCESS);
  const std::vector<uint32_t> plain = full.download_words(size_t(c.m * p.n), 2);
  for (const int64_t left : {int64_t(64), int64_t(24)}) {
    Case h = c;
    h.left = left, h.right = 128 - left;
    INFO("left " << h.left << " right " << h.right);
    p.upload_d(d, init);
    const dg_status st =
        dg_fp8_gemm_nt_skip_head_mid(g.stream, ta.t, tsa.t, tb.t, tsb.t, td.t, h.left, h.mid, h.right, &o);
    INFO(dg_status_string(st) << ": " << (st == DG_SUCCESS ? "" : dg_last_error()));
    REQUIRE(st == DG_SUCCESS);
    const std::vector<uint32_t> out = d.download_words(size_t(c.m * p.ldd), size_t(p.eb));
    std::vector<char> head_col(size_t(p.ldd), 0);
    int64_t differ = 0, touched = 0;
    for (int64_t j = 0; j < p.n; ++j) head_col[size_t(d_column(h, j))] = 1;
    for (int64_t i = 0; i < c.m; ++i) {
      for (int64_t j = 0; j < p.n; ++j)
        if (out[size_t(i * p.ldd + d_column(h, j))] != plain[size_t(i * p.n + j)]) ++differ;
      for (int64_t col = 0; col < p.ldd; ++col)
        if (!head_col[size_t(col)] && out[size_t(i * p.ldd + col)] != init[size_t(i * p.ldd + col)]) ++touched;
    }
    CHECK_MESSAGE(differ == 0, differ << " head elements differ from the plain GEMM's");
    CHECK_MESSAGE(touched == 0, touched << " mid or padding elements lost their poison");
  }

  // Heads of 100 + 100 do not divide N = 768: refused before any launch, D keeps its poison.
  p.upload_d(d, init);
  const dg_status st = p.run(g, d, 100, c.mid, 100);
  CHECK(st == DG_ERROR_INVALID_ARGUMENT);
  CHECK(std::string(dg_last_error()).find("left") == 0);
  REQUIRE(dg_stream_synchronize(g.stream) == DG_SUCCESS);
  CHECK(d.download_words(size_t(c.m * p.ldd), size_t(p.eb)) == init);
}
