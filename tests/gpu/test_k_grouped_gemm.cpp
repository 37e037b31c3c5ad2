// K-grouped GEMMs (FP8 nt, FP8 tn through the workspace, BF16 tn) through the public API, against a
// double-precision reference on the dequantised inputs at sampled entries, on the expert-parallel
// MoE weight-gradient shapes: K per group drawn from [0.7, 1.3] x the expected K (aligned to 128)
// with one empty group, with C aliasing D, with a separate C and without C. D is checked everywhere
// for finite values, and an empty group's D must equal C (or zeros) exactly. Also: more groups than
// one launch takes with M and N tails, every group empty, and an explicit tile config.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "dg.h"
#include "gpu_fixture.h"
#include "host_numerics.h"

namespace {

using Gpu = dg::test::Gpu;
using Buf = dg::test::DeviceBuffer;
using dg::test::bf2f;
using dg::test::calc_diff;
using dg::test::e4m3_to_f;
using dg::test::f2bf;
using dg::test::f_to_e4m3;
using dg::test::parallel_for;
using dg::test::Rng;
using dg::test::Tensor;

int64_t align_up(int64_t x, int64_t a) { return (x + a - 1) / a * a; }

// A value in [-2, 2) that depends only on (seed, i, k): operands are generated in parallel in any order.
float hashed(uint64_t seed, int64_t i, int64_t k) {
  uint64_t z = seed ^ (static_cast<uint64_t>(i) * 0x9e3779b97f4a7c15ull) ^ (static_cast<uint64_t>(k) * 0xc2b2ae3d27d4eb4full);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return static_cast<float>(z >> 40) * (4.0f / 16777216.0f) - 2.0f;
}

// One operand over every group: logical [K, MN] (row = K index; group g is rows [koff_g, +k_g)) in
// the forms the entry points take: FP8 stacked [K, MN] with per-(MN, 128-K) scales sf [K/128, ld]
// (MN-major TMA-aligned), the same FP8 bytes per group as [MN, k_g] row-major packed (nt), and BF16
// stacked [K, MN].
struct Operand {
  int64_t mn = 0, k = 0, ld = 0;
  std::vector<uint8_t> fp8, flat;
  std::vector<float> sf;
  std::vector<uint16_t> bf16;
  double fp8_value(int64_t i, int64_t kk) const { return double(e4m3_to_f(fp8[kk * mn + i])) * sf[(kk / 128) * ld + i]; }
  double bf16_value(int64_t i, int64_t kk) const { return bf2f(bf16[kk * mn + i]); }
};

Operand make_operand(uint64_t seed, int64_t mn, const std::vector<int64_t>& ks) {
  Operand o;
  o.mn = mn;
  for (int64_t k : ks) o.k += k;
  o.ld = align_up(mn, 4);
  o.fp8.resize(static_cast<size_t>(o.k * mn));
  o.flat.resize(o.fp8.size());
  o.bf16.resize(o.fp8.size());
  o.sf.assign(static_cast<size_t>(o.k / 128 * o.ld), 0.f);
  parallel_for(o.k / 128, [&](int64_t kb) {
    std::vector<float> v(static_cast<size_t>(128 * mn));
    std::vector<float> amax(static_cast<size_t>(mn), 1e-4f);
    for (int64_t r = 0; r < 128; ++r)
      for (int64_t i = 0; i < mn; ++i) {
        const float x = hashed(seed, i, kb * 128 + r);
        v[r * mn + i] = x;
        amax[i] = std::max(amax[i], std::fabs(x));
      }
    for (int64_t i = 0; i < mn; ++i) o.sf[kb * o.ld + i] = amax[i] / 448.f;
    for (int64_t r = 0; r < 128; ++r)
      for (int64_t i = 0; i < mn; ++i) {
        const size_t off = static_cast<size_t>((kb * 128 + r) * mn + i);
        o.fp8[off] = f_to_e4m3(v[r * mn + i] / o.sf[kb * o.ld + i]);
        o.bf16[off] = f2bf(v[r * mn + i]);
      }
  });
  // nt: group g's [MN, k_g] K-major block at element MN * koff_g.
  std::vector<int64_t> koff;
  int64_t off = 0;
  for (int64_t k : ks) koff.push_back(off), off += k;
  parallel_for(static_cast<int64_t>(ks.size()), [&](int64_t g) {
    const int64_t k0 = koff[g], kg = ks[g];
    for (int64_t i = 0; i < mn; ++i)
      for (int64_t kk = 0; kk < kg; ++kk) o.flat[mn * k0 + i * kg + kk] = o.fp8[(k0 + kk) * mn + i];
  });
  return o;
}

enum class Form { kFp8Nt, kFp8Tn, kBf16Tn };
const char* form_name(Form f) { return f == Form::kFp8Nt ? "fp8 nt" : f == Form::kFp8Tn ? "fp8 tn" : "bf16 tn"; }
enum class CMode { kNone, kAliased, kSeparate };
const char* c_name(CMode c) { return c == CMode::kNone ? "no C" : c == CMode::kAliased ? "C = D" : "separate C"; }

// Device copies of one problem's operands (every form) and C.
struct Problem {
  int64_t g, m, n, k;
  std::vector<int64_t> ks;
  Operand a, b;
  std::vector<float> c;
  Buf a_flat, b_flat, a_fp8, b_fp8, a_bf16, b_bf16, sfa, sfb, gc, gd, ws, ks_dev;
  size_t ws_bytes = 0;
  Problem(Gpu& gpu, int64_t m_, int64_t n_, std::vector<int64_t> ks_, uint64_t seed)
      : g(static_cast<int64_t>(ks_.size())), m(m_), n(n_), k(0), ks(std::move(ks_)),
        a(make_operand(seed * 3 + 1, m, ks)), b(make_operand(seed * 3 + 2, n, ks)),
        c(static_cast<size_t>(g * m * n)),
        a_flat(gpu.device, a.flat.size()), b_flat(gpu.device, b.flat.size()), a_fp8(gpu.device, a.fp8.size()),
        b_fp8(gpu.device, b.fp8.size()), a_bf16(gpu.device, a.bf16.size() * 2), b_bf16(gpu.device, b.bf16.size() * 2),
        sfa(gpu.device, a.sf.size() * 4), sfb(gpu.device, b.sf.size() * 4), gc(gpu.device, c.size() * 4),
        gd(gpu.device, c.size() * 4), ws(gpu.device, workspace_bytes(m, n, a.k)), ks_dev(gpu.device, ks.size() * 4) {
    k = a.k;
    ws_bytes = workspace_bytes(m, n, k);
    parallel_for(g, [&](int64_t grp) {
      Rng r(seed * 7919 + static_cast<uint64_t>(grp));
      for (int64_t i = 0; i < m * n; ++i) c[grp * m * n + i] = r.uniform() * 16.f;
    });
    auto upload = [](Buf& dst, const auto& host) {
      if (!host.empty()) dst.upload(host);
    };
    upload(a_flat, a.flat);
    upload(b_flat, b.flat);
    upload(a_fp8, a.fp8);
    upload(b_fp8, b.fp8);
    upload(a_bf16, a.bf16);
    upload(b_bf16, b.bf16);
    upload(sfa, a.sf);
    upload(sfb, b.sf);
    gc.upload(c);
    std::vector<int32_t> k32(ks.begin(), ks.end());
    ks_dev.upload(k32);
  }
  static size_t workspace_bytes(int64_t m, int64_t n, int64_t k) {
    size_t bytes = 0;
    REQUIRE(dg_fp8_gemm_workspace_size(DG_GEMM_LAYOUT_TN, m, n, k, &bytes) == DG_SUCCESS);
    return bytes;
  }
};

// Runs `form` with `cmode` and checks D: finite everywhere, empty groups exactly C (or zeros), and
// sampled entries of D - C against the double-precision product of the dequantised operands.
void run_and_check(Gpu& gpu, Problem& p, Form form, CMode cmode, const dg_gemm_options* extra = nullptr) {
  INFO(form_name(form) << ", " << c_name(cmode) << ": G=" << p.g << " M=" << p.m << " N=" << p.n << " K=" << p.k);
  const bool fp8 = form != Form::kBf16Tn;
  Tensor td(p.gd.data(), DG_DTYPE_FLOAT32, {p.g, p.m, p.n});
  Tensor tc(p.gc.data(), DG_DTYPE_FLOAT32, {p.g, p.m, p.n});
  Tensor tks(p.ks_dev.data(), DG_DTYPE_INT32, {p.g});
  Tensor tsfa(p.sfa.data(), DG_DTYPE_FLOAT32, {p.m, p.k / 128}, {1, p.a.ld});
  Tensor tsfb(p.sfb.data(), DG_DTYPE_FLOAT32, {p.n, p.k / 128}, {1, p.b.ld});
  Tensor ta_flat(p.a_flat.data(), DG_DTYPE_FLOAT8_E4M3, {p.m * p.k});
  Tensor tb_flat(p.b_flat.data(), DG_DTYPE_FLOAT8_E4M3, {p.n * p.k});
  Tensor ta_fp8(p.a_fp8.data(), DG_DTYPE_FLOAT8_E4M3, {p.k, p.m});
  Tensor tb_fp8(p.b_fp8.data(), DG_DTYPE_FLOAT8_E4M3, {p.k, p.n});
  Tensor ta_bf16(p.a_bf16.data(), DG_DTYPE_BFLOAT16, {p.k, p.m});
  Tensor tb_bf16(p.b_bf16.data(), DG_DTYPE_BFLOAT16, {p.k, p.n});

  if (cmode == CMode::kAliased) p.gd.upload(p.c);
  else p.gd.poison();
  const dg_tensor* c = cmode == CMode::kNone ? nullptr : cmode == CMode::kAliased ? td.t : tc.t;
  dg_gemm_options o = DG_GEMM_OPTIONS_INIT;
  if (extra != nullptr) o = *extra;
  dg_status st;
  if (form == Form::kFp8Nt) {
    st = dg_k_grouped_fp8_gemm_nt_contiguous(gpu.stream, ta_flat.t, tsfa.t, tb_flat.t, tsfb.t, td.t, c, p.ks.data(),
                                             p.g, tks.t, &o);
  } else if (form == Form::kFp8Tn) {
    o.workspace = p.ws.data();
    o.workspace_size = p.ws_bytes;
    st = dg_k_grouped_fp8_gemm_tn_contiguous(gpu.stream, ta_fp8.t, tsfa.t, tb_fp8.t, tsfb.t, td.t, c, p.ks.data(), p.g,
                                             nullptr, &o);
  } else {
    st = dg_k_grouped_bf16_gemm_tn_contiguous(gpu.stream, ta_bf16.t, tb_bf16.t, td.t, c, p.ks.data(), p.g, tks.t, &o);
  }
  INFO(dg_last_error());
  REQUIRE(st == DG_SUCCESS);
  const std::vector<float> d = p.gd.download<float>();

  const bool with_c = cmode != CMode::kNone;
  int64_t nonfinite = 0, bad_empty = 0;
  std::vector<int64_t> koff;
  int64_t off = 0;
  for (int64_t k : p.ks) koff.push_back(off), off += k;
  std::vector<double> ref, out;
  Rng rng(static_cast<uint64_t>(p.g * 131 + p.m * 7 + p.n) + static_cast<uint64_t>(form) * 17 + static_cast<uint64_t>(cmode));
  for (int64_t grp = 0; grp < p.g; ++grp) {
    const size_t base = static_cast<size_t>(grp * p.m * p.n);
    for (int64_t i = 0; i < p.m * p.n; ++i) {
      const float v = d[base + i];
      nonfinite += !std::isfinite(v);
      if (p.ks[grp] == 0) bad_empty += v != (with_c ? p.c[base + i] : 0.f);
    }
    if (p.ks[grp] == 0) continue;
    const int samples = static_cast<int>(1024 / p.g + 64);
    for (int s = 0; s < samples; ++s) {
      const int64_t i = rng.below(p.m), j = rng.below(p.n);
      double acc = 0;
      for (int64_t kk = koff[grp]; kk < koff[grp] + p.ks[grp]; ++kk)
        acc += fp8 ? p.a.fp8_value(i, kk) * p.b.fp8_value(j, kk) : p.a.bf16_value(i, kk) * p.b.bf16_value(j, kk);
      const size_t at = base + static_cast<size_t>(i * p.n + j);
      ref.push_back(acc);
      out.push_back(double(d[at]) - (with_c ? double(p.c[at]) : 0.0));
    }
  }
  CHECK(nonfinite == 0);
  CHECK(bad_empty == 0);
  const double diff = calc_diff(ref, out);
  INFO("calc_diff " << diff);
  CHECK(diff < (fp8 ? 1e-3 : 1e-5));
}

// K per group in [0.7, 1.3] x expected, aligned to 128, group `empty` at 0.
std::vector<int64_t> draw_ks(int64_t g, int64_t expected, int64_t empty, Rng& rng) {
  std::vector<int64_t> ks;
  for (int64_t grp = 0; grp < g; ++grp) {
    const int64_t lo = expected * 7 / 10, hi = expected * 13 / 10;
    ks.push_back(grp == empty ? 0 : align_up(lo + rng.below(hi - lo + 1), 128));
  }
  return ks;
}

}  // namespace

TEST_CASE("K-grouped GEMMs: the expert-parallel weight-gradient sets, every form, with and without C") {
  Gpu gpu;
  if (!gpu.sm90()) return;
  const struct {
    int64_t g, m, n, expected_k;
  } sets[] = {{4, 4096, 7168, 8192}, {4, 7168, 2048, 8192}, {8, 4096, 7168, 4096},
              {8, 7168, 2048, 4096}, {16, 4096, 7168, 2048}, {16, 7168, 2048, 2048}};
  uint64_t seed = 1;
  for (const auto& s : sets) {
    Rng rng(seed * 31);
    Problem p(gpu, s.m, s.n, draw_ks(s.g, s.expected_k, rng.below(s.g), rng), seed++);
    run_and_check(gpu, p, Form::kFp8Nt, CMode::kAliased);
    run_and_check(gpu, p, Form::kFp8Tn, CMode::kNone);
    run_and_check(gpu, p, Form::kBf16Tn, CMode::kSeparate);
  }
}

TEST_CASE("K-grouped GEMMs: more groups than one launch takes, M and N tails, tile overrides" * doctest::test_suite("quick")) {
  Gpu gpu;
  if (!gpu.sm90()) return;
  // 40 groups (two launches of up to 32) with several empty ones, M and N not multiples of any tile.
  Rng rng(77);
  std::vector<int64_t> ks;
  for (int g = 0; g < 40; ++g) ks.push_back(g % 7 == 3 ? 0 : 128 * (1 + rng.below(4)));
  Problem p(gpu, 208, 144, ks, 99);
  for (Form f : {Form::kFp8Nt, Form::kFp8Tn, Form::kBf16Tn})
    for (CMode c : {CMode::kNone, CMode::kAliased, CMode::kSeparate}) run_and_check(gpu, p, f, c);
  dg_gemm_options o = DG_GEMM_OPTIONS_INIT;
  o.block_m = 64;
  o.block_n = 64;
  for (Form f : {Form::kFp8Nt, Form::kBf16Tn}) run_and_check(gpu, p, f, CMode::kSeparate, &o);
}

TEST_CASE("K-grouped GEMMs: every group empty leaves D = C, or zeros" * doctest::test_suite("quick")) {
  Gpu gpu;
  if (!gpu.sm90()) return;
  Problem p(gpu, 256, 512, {0, 0, 0}, 5);
  for (Form f : {Form::kFp8Nt, Form::kFp8Tn, Form::kBf16Tn})
    for (CMode c : {CMode::kNone, CMode::kSeparate}) run_and_check(gpu, p, f, c);
}
