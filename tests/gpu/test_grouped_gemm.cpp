// M-grouped GEMMs (contiguous with per-row indices or group ends, masked) through the public API,
// against a double-precision reference on the dequantised inputs at sampled entries, on the
// DeepSeek MoE shapes: group sizes drawn from [0.7, 1.3] x the expected size with one empty group,
// padding rows of A and their scales poisoned with NaN, D poisoned before each call and checked
// everywhere (padding rows zero, rows outside any tile untouched). Also: group data that only the
// device sees out of range (bad indices, ends, counts), a masked call captured in a CUDA graph and
// replayed with new counts, and bad arguments.
#include <dlfcn.h>
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <string>
#include <thread>
#include <vector>

#include "dg.h"
#include "gpu_fixture.h"
#include "host_numerics.h"
#include "ops/gemm.h"
#include "ops/gemm_cost_model.h"
#include "runtime/device.h"
#include "runtime/driver.h"

namespace {

using Gpu = dg::test::Gpu;
using Buf = dg::test::DeviceBuffer;
using dg::test::Tensor;

using dg::test::bf2f;
using dg::test::calc_diff;
using dg::test::e4m3_to_f;
using dg::test::f2bf;
using dg::test::f_to_e4m3;
using dg::test::parallel_for;
using dg::test::Rng;

// ---------------------------------------------------------------- operands
constexpr int64_t kAlign = 128;  // dg_get_mk_alignment_for_contiguous_layout()
int64_t align_up(int64_t x, int64_t a) { return (x + a - 1) / a * a; }

// Rows of an A-like operand: K-major bytes (FP8 or BF16) and, for FP8, one scale per 128 K.
// Row r's bytes start at r * K * eb; its scales are sf[kb * sf_ld + sf_row(r)].
struct Rows {
  bool fp8;
  int64_t k, sf_k;
  int eb;
  std::vector<uint8_t> bytes;
  std::vector<float> sf;
  int64_t sf_ld = 0;
};

// Quantises row r (values from `rng`) in place: per-token scales of 128 K for FP8.
void fill_row(Rows& a, int64_t r, int64_t sf_col, Rng& rng) {
  std::vector<float> v(a.k);
  for (auto& x : v) x = rng.uniform();
  uint8_t* p = &a.bytes[r * a.k * a.eb];
  if (!a.fp8) {
    for (int64_t k = 0; k < a.k; ++k) {
      const uint16_t h = f2bf(v[k]);
      std::memcpy(p + k * 2, &h, 2);
    }
    return;
  }
  for (int64_t kb = 0; kb < a.sf_k; ++kb) {
    float amax = 1e-4f;
    const int64_t k1 = std::min(a.k, kb * 128 + 128);
    for (int64_t k = kb * 128; k < k1; ++k) amax = std::max(amax, std::fabs(v[k]));
    const float s = amax / 448.f;
    a.sf[kb * a.sf_ld + sf_col] = s;
    for (int64_t k = kb * 128; k < k1; ++k) p[k] = f_to_e4m3(v[k] / s);
  }
}

float row_value(const Rows& a, int64_t r, int64_t sf_col, int64_t k) {
  if (!a.fp8) {
    uint16_t h;
    std::memcpy(&h, &a.bytes[(r * a.k + k) * 2], 2);
    return bf2f(h);
  }
  return e4m3_to_f(a.bytes[r * a.k + k]) * a.sf[(k / 128) * a.sf_ld + sf_col];
}

// B [G, N, K] with per-128x128-block scales sfb [G, ceil(N/128), ceil(K/128)] (FP8).
struct Weights {
  bool fp8;
  int64_t g, n, k, nb, sf_k;
  int eb;
  std::vector<uint8_t> bytes;
  std::vector<float> sfb;
  float value(int64_t grp, int64_t j, int64_t kk) const {
    const size_t off = (grp * n + j) * k + kk;
    if (!fp8) {
      uint16_t h;
      std::memcpy(&h, &bytes[off * 2], 2);
      return bf2f(h);
    }
    return e4m3_to_f(bytes[off]) * sfb[(grp * nb + j / 128) * sf_k + kk / 128];
  }
};

Weights make_weights(bool fp8, int64_t g, int64_t n, int64_t k, uint64_t seed) {
  Weights w{fp8, g, n, k, (n + 127) / 128, (k + 127) / 128, fp8 ? 1 : 2, {}, {}};
  w.bytes.resize(static_cast<size_t>(g * n * k * w.eb));
  if (fp8) w.sfb.resize(static_cast<size_t>(g * w.nb * w.sf_k));
  // One task per (group, 128-row block): its values, scales and bytes.
  parallel_for(g * w.nb, [&](int64_t task) {
    const int64_t grp = task / w.nb, jb = task % w.nb, j0 = jb * 128, j1 = std::min(n, j0 + 128);
    Rng rng(seed * 1000003 + static_cast<uint64_t>(task));
    std::vector<float> v((j1 - j0) * k);
    for (auto& x : v) x = rng.uniform();
    for (int64_t kb = 0; kb < w.sf_k; ++kb) {
      const int64_t k0 = kb * 128, k1 = std::min(k, k0 + 128);
      float s = 1.f;
      if (fp8) {
        float amax = 1e-4f;
        for (int64_t j = j0; j < j1; ++j)
          for (int64_t kk = k0; kk < k1; ++kk) amax = std::max(amax, std::fabs(v[(j - j0) * k + kk]));
        s = amax / 448.f;
        w.sfb[(grp * w.nb + jb) * w.sf_k + kb] = s;
      }
      for (int64_t j = j0; j < j1; ++j)
        for (int64_t kk = k0; kk < k1; ++kk) {
          const size_t off = (grp * n + j) * k + kk;
          const float x = v[(j - j0) * k + kk];
          if (fp8) {
            w.bytes[off] = f_to_e4m3(x / s);
          } else {
            const uint16_t h = f2bf(x);
            std::memcpy(&w.bytes[off * 2], &h, 2);
          }
        }
    }
  });
  return w;
}

// The same weights as [G, K, N] (BF16 nn).
std::vector<uint8_t> transposed_weights(const Weights& w) {
  std::vector<uint8_t> t(w.bytes.size());
  parallel_for(w.g, [&](int64_t grp) {
    for (int64_t j = 0; j < w.n; ++j)
      for (int64_t kk = 0; kk < w.k; ++kk)
        std::memcpy(&t[((grp * w.k + kk) * w.n + j) * w.eb], &w.bytes[((grp * w.n + j) * w.k + kk) * w.eb], w.eb);
  });
  return t;
}

// Device copies of the weights (B, its transpose for BF16 nn, SFB), shared by the calls of a shape.
struct DeviceWeights {
  Buf b, bt, sfb;
  DeviceWeights(const Gpu& g, const Weights& w)
      : b(g.device, w.bytes.size()), bt(g.device, w.fp8 ? 256 : w.bytes.size()), sfb(g.device, w.sfb.size() * 4 + 16) {
    b.upload(w.bytes);
    if (!w.fp8) bt.upload(transposed_weights(w));
    if (w.fp8) sfb.upload(w.sfb);
  }
};

uint16_t d_at(const std::vector<uint16_t>& d, int64_t row, int64_t ld, int64_t col) { return d[row * ld + col]; }
constexpr uint16_t kPoison = 0xffff;  // the bytes every D starts with (a NaN)

// Checks `samples` entries of rows [r0, r1) of D against the reference of group `grp`, A's rows
// starting at a_row0 (and its scales at sf_col0).
void sample_group(const Rows& a, int64_t a_row0, int64_t sf_col0, const Weights& w, int64_t grp,
                  const std::vector<uint16_t>& d, int64_t d_row0, int64_t rows, int64_t ldd, int samples, Rng& rng,
                  std::vector<double>& ref, std::vector<double>& out) {
  for (int s = 0; s < samples && rows > 0; ++s) {
    const int64_t i = rng.below(rows), j = rng.below(w.n);
    double acc = 0;
    for (int64_t kk = 0; kk < w.k; ++kk)
      acc += double(row_value(a, a_row0 + i, sf_col0 + i, kk)) * w.value(grp, j, kk);
    ref.push_back(acc);
    out.push_back(bf2f(d_at(d, d_row0 + i, ldd, j)));
  }
}

// ---------------------------------------------------------------- contiguous
struct Contiguous {
  int64_t m_total = 0;
  std::vector<int64_t> start, rows;  // per group
  std::vector<int32_t> indices, ends;
};

// Group sizes in [0.7, 1.3] x expected with group `empty` at 0, each group padded to 128 rows.
Contiguous contiguous_groups(int64_t g, int64_t expected, int64_t empty, Rng& rng) {
  Contiguous c;
  for (int64_t grp = 0; grp < g; ++grp) {
    const int64_t lo = expected * 7 / 10, hi = expected * 13 / 10;
    const int64_t m = grp == empty ? 0 : lo + rng.below(hi - lo + 1);
    c.start.push_back(c.m_total);
    c.rows.push_back(m);
    c.ends.push_back(static_cast<int32_t>(c.m_total + m));
    c.m_total += align_up(m, kAlign);
  }
  c.indices.assign(c.m_total, -1);
  for (int64_t grp = 0; grp < g; ++grp)
    for (int64_t r = 0; r < c.rows[grp]; ++r) c.indices[c.start[grp] + r] = static_cast<int32_t>(grp);
  return c;
}

// Runs one contiguous problem through every applicable entry point and layout and checks it.
void check_contiguous(Gpu& g, const Weights& w, DeviceWeights& dw, int64_t groups, int64_t expected, uint64_t seed) {
  Rng rng(seed);
  const Contiguous c = contiguous_groups(groups, expected, rng.below(groups), rng);
  const int64_t M = c.m_total, N = w.n, K = w.k, sf_k = w.sf_k;
  Rows a{w.fp8, K, sf_k, w.eb, std::vector<uint8_t>(static_cast<size_t>(M * K * w.eb), 0xff), {}, align_up(M, 4)};
  if (w.fp8) a.sf.assign(static_cast<size_t>(a.sf_ld * sf_k), NAN);  // padding rows keep NaN scales
  parallel_for(groups, [&](int64_t grp) {
    Rng r(seed * 7919 + static_cast<uint64_t>(grp));
    for (int64_t i = 0; i < c.rows[grp]; ++i) fill_row(a, c.start[grp] + i, c.start[grp] + i, r);
  });
  Buf ga(g.device, a.bytes.size()), gsa(g.device, a.sf.size() * 4 + 16), gd(g.device, M * N * 2);
  Buf gidx(g.device, c.indices.size() * 4), gends(g.device, c.ends.size() * 4);
  ga.upload(a.bytes);
  if (w.fp8) gsa.upload(a.sf);
  gidx.upload(c.indices);
  gends.upload(c.ends);
  const dg_dtype ab = w.fp8 ? DG_DTYPE_FLOAT8_E4M3 : DG_DTYPE_BFLOAT16;
  Tensor ta(ga.data(), ab, {M, K});
  Tensor tsa(gsa.data(), DG_DTYPE_FLOAT32, {M, sf_k}, {1, a.sf_ld});
  Tensor tb(dw.b.data(), ab, {groups, N, K});
  Tensor tbt(dw.bt.data(), ab, {groups, K, N});
  Tensor tsb(dw.sfb.data(), DG_DTYPE_FLOAT32, {groups, w.nb, sf_k});
  // FP8 nn: [G, K, N] views of the [G, N, K] memory (K-major per group), scales transposed with them.
  Tensor tb_nn(dw.b.data(), ab, {groups, K, N}, {N * K, 1, K});
  Tensor tsb_nn(dw.sfb.data(), DG_DTYPE_FLOAT32, {groups, sf_k, w.nb}, {w.nb * sf_k, 1, sf_k});
  Tensor td(gd.data(), DG_DTYPE_BFLOAT16, {M, N});
  Tensor tidx(gidx.data(), DG_DTYPE_INT32, {M});
  Tensor tends(gends.data(), DG_DTYPE_INT32, {groups});

  // Variants: indices, psum; then nn (BF16: [G, K, N] memory with both layouts; FP8: K-major views);
  // then indices and psum again with CTA pairs along M sharing B (cluster 2).
  dg_gemm_options pair = DG_GEMM_OPTIONS_INIT;
  pair.cluster = 2;
  pair.multicast_a = 0;
  const int plain = w.fp8 ? 3 : 4;
  for (int variant = 0; variant < plain + 2; ++variant) {
    const bool paired = variant >= plain;
    const bool psum = (paired ? variant - plain : variant) % 2 == 1, nn = !paired && variant >= 2;
    const dg_gemm_options* opts = paired ? &pair : nullptr;
    INFO((w.fp8 ? "fp8" : "bf16") << (nn ? " nn" : " nt") << (psum ? " psum" : " indices") << (paired ? " pairs" : "")
                                  << " G=" << groups
                                  << " expected_m=" << expected << " M=" << M << " N=" << N << " K=" << K);
    gd.poison();
    const dg_tensor* layout = psum ? tends.t : tidx.t;
    const int32_t code = psum ? DG_M_GROUPED_LAYOUT_PSUM : DG_M_GROUPED_LAYOUT_INDICES;
    const int64_t exp = psum ? expected : 0;
    dg_status st;
    if (w.fp8 && nn)
      st = dg_m_grouped_fp8_gemm_nn_contiguous(g.stream, ta.t, tsa.t, tb_nn.t, tsb_nn.t, td.t, layout, code, exp, opts);
    else if (w.fp8)
      st = dg_m_grouped_fp8_gemm_nt_contiguous(g.stream, ta.t, tsa.t, tb.t, tsb.t, td.t, layout, code, exp, opts);
    else if (nn) st = dg_m_grouped_bf16_gemm_nn_contiguous(g.stream, ta.t, tbt.t, td.t, layout, code, exp, opts);
    else st = dg_m_grouped_bf16_gemm_nt_contiguous(g.stream, ta.t, tb.t, td.t, layout, code, exp, opts);
    INFO(dg_last_error());
    REQUIRE(st == DG_SUCCESS);
    const std::vector<uint16_t> d = gd.download<uint16_t>();
    std::vector<double> ref, out;
    int64_t nonzero_padding = 0, nonfinite = 0;
    for (int64_t grp = 0; grp < groups; ++grp) {
      sample_group(a, c.start[grp], c.start[grp], w, grp, d, c.start[grp], c.rows[grp], N, 1024 / int(groups) + 64,
                   rng, ref, out);
      for (int64_t r = c.start[grp]; r < c.start[grp] + align_up(c.rows[grp], kAlign); ++r)
        for (int64_t j = 0; j < N; ++j) {
          const uint16_t v = d_at(d, r, N, j);
          if (r < c.start[grp] + c.rows[grp]) nonfinite += !std::isfinite(bf2f(v));
          else nonzero_padding += v != 0;  // padding rows share their group's last block: written as zeros
        }
    }
    CHECK(nonfinite == 0);
    CHECK(nonzero_padding == 0);
    const double diff = calc_diff(ref, out);
    CHECK(diff < (w.fp8 ? 1e-3 : 1e-5));
  }
}

// ---------------------------------------------------------------- masked
// Checks D of a masked call: sampled entries of each group's valid rows against the reference (FP8
// calc_diff < 1e-3, BF16 < 1e-5) and finite, zeros from masked_m to the end of its 64-row block, rows
// from its 128-row block's end on untouched (between the two: either).
void check_masked_d(const Rows& a, int64_t max_m, const Weights& w, int64_t groups, const std::vector<int32_t>& masked,
                    const std::vector<uint16_t>& d, Rng& rng) {
  std::vector<double> ref, out;
  int64_t bad_zero = 0, bad_untouched = 0, nonfinite = 0;
  for (int64_t grp = 0; grp < groups; ++grp) {
    const int64_t valid = std::clamp<int64_t>(masked[grp], 0, max_m), base = grp * max_m;
    sample_group(a, base, grp * a.sf_ld * a.sf_k, w, grp, d, base, valid, w.n, 1024 / int(groups) + 64, rng, ref,
                 out);
    for (int64_t r = 0; r < max_m; ++r)
      for (int64_t j = 0; j < w.n; ++j) {
        const uint16_t v = d_at(d, base + r, w.n, j);
        if (r < valid) nonfinite += !std::isfinite(bf2f(v));
        else if (r < align_up(valid, 64)) bad_zero += v != 0;
        else if (r >= align_up(valid, 128)) bad_untouched += v != kPoison;
        else bad_untouched += v != 0 && v != kPoison;
      }
  }
  CHECK(nonfinite == 0);
  CHECK(bad_zero == 0);
  CHECK(bad_untouched == 0);
  CHECK(calc_diff(ref, out) < (w.fp8 ? 1e-3 : 1e-5));
}

// Masked A with its per-group scales: sfa [G, max_m, sf_k] MN-major TMA-aligned per group. Rows past
// each group's count hold NaN (bytes 0xff) and NaN scales: they must not reach D.
Rows masked_rows(bool fp8, int64_t groups, int64_t max_m, int64_t k, const std::vector<int32_t>& masked, uint64_t seed) {
  const int64_t sf_k = (k + 127) / 128;
  Rows a{fp8, k, sf_k, fp8 ? 1 : 2, std::vector<uint8_t>(static_cast<size_t>(groups * max_m * k * (fp8 ? 1 : 2)), 0xff),
         {}, align_up(max_m, 4)};
  if (fp8) a.sf.assign(static_cast<size_t>(groups * a.sf_ld * sf_k), NAN);
  parallel_for(groups, [&](int64_t grp) {
    Rng r(seed * 104729 + static_cast<uint64_t>(grp));
    const int64_t valid = std::clamp<int64_t>(masked[grp], 0, max_m);
    // Group grp's scales start at grp * sf_ld * sf_k: its row i is column grp * sf_ld * sf_k + i of
    // a [sf_k, sf_ld]-strided matrix, i.e. kb * sf_ld + (grp * sf_ld * sf_k + i).
    for (int64_t i = 0; i < valid; ++i) fill_row(a, grp * max_m + i, grp * a.sf_ld * sf_k + i, r);
  });
  return a;
}

struct MaskedCall {
  Buf ga, gsa, gd, gm;
  Tensor ta, tsa, tb, tsb, td, tm;
  MaskedCall(const Gpu& g, const Rows& a, DeviceWeights& dw, const Weights& w, int64_t groups, int64_t max_m)
      : ga(g.device, a.bytes.size()),
        gsa(g.device, a.sf.size() * 4 + 16),
        gd(g.device, groups * max_m * w.n * 2),
        gm(g.device, groups * 4),
        ta(ga.data(), w.fp8 ? DG_DTYPE_FLOAT8_E4M3 : DG_DTYPE_BFLOAT16, {groups, max_m, w.k}),
        tsa(gsa.data(), DG_DTYPE_FLOAT32, {groups, max_m, w.sf_k}, {a.sf_ld * w.sf_k, 1, a.sf_ld}),
        tb(dw.b.data(), w.fp8 ? DG_DTYPE_FLOAT8_E4M3 : DG_DTYPE_BFLOAT16, {groups, w.n, w.k}),
        tsb(dw.sfb.data(), DG_DTYPE_FLOAT32, {groups, w.nb, w.sf_k}),
        td(gd.data(), DG_DTYPE_BFLOAT16, {groups, max_m, w.n}),
        tm(gm.data(), DG_DTYPE_INT32, {groups}) {
    ga.upload(a.bytes);
    if (w.fp8) gsa.upload(a.sf);
  }
  dg_status run(const Gpu& g, bool fp8, int64_t expected, const dg_gemm_options* o = nullptr) {
    if (fp8) return dg_m_grouped_fp8_gemm_nt_masked(g.stream, ta.t, tsa.t, tb.t, tsb.t, td.t, tm.t, expected, o);
    return dg_m_grouped_bf16_gemm_nt_masked(g.stream, ta.t, tb.t, td.t, tm.t, expected, o);
  }
};

std::vector<int32_t> draw_counts(int64_t groups, int64_t expected, int64_t max_m, Rng& rng) {
  std::vector<int32_t> m(groups);
  for (auto& v : m) {
    const int64_t lo = expected * 7 / 10, hi = expected * 13 / 10;
    v = static_cast<int32_t>(std::min(max_m, lo + rng.below(hi - lo + 1)));
  }
  return m;
}

void check_masked(Gpu& g, const Weights& w, DeviceWeights& dw, int64_t groups, int64_t expected, uint64_t seed,
                  int64_t kMaxM = 4096) {
  Rng rng(seed);
  const std::vector<int32_t> masked = draw_counts(groups, expected, kMaxM, rng);
  const Rows a = masked_rows(w.fp8, groups, kMaxM, w.k, masked, seed);
  MaskedCall call(g, a, dw, w, groups, kMaxM);
  call.gm.upload(masked);
  dg_gemm_options pair = DG_GEMM_OPTIONS_INIT;
  pair.cluster = 2;
  pair.multicast_a = 0;
  for (const dg_gemm_options* o : std::initializer_list<const dg_gemm_options*>{nullptr, &pair}) {
    call.gd.poison();
    INFO((w.fp8 ? "fp8" : "bf16") << " masked G=" << groups << " expected_m=" << expected << " N=" << w.n
                                  << " K=" << w.k << (o ? " pairs" : ""));
    const dg_status st = call.run(g, w.fp8, expected * 6 / 5, o);
    INFO(dg_last_error());
    REQUIRE(st == DG_SUCCESS);
    const std::vector<uint16_t> d = call.gd.download<uint16_t>();
    check_masked_d(a, kMaxM, w, groups, masked, d, rng);
  }
}

// The masked split tail on a grid of 8 CTAs (4 pairs) with 128x128 tiles, 4 N blocks (the last one
// partial at N = 448) and 7 K blocks (halves of 3 and 4): a last round of 4 tiles after 16 whole
// ones, 4 tiles alone (no whole round), a full last round (no split), each with split_k 2 (the tail
// forced) and 1 (off).
void check_masked_tail(Gpu& g, bool fp8, int64_t n, uint64_t seed) {
  const int64_t groups = 2, max_m = 512, k = fp8 ? 7 * 128 : 7 * 64;
  const Weights w = make_weights(fp8, groups, n, k, seed);
  DeviceWeights dw(g, w);
  const std::vector<std::vector<int32_t>> sets = {{300, 130}, {40, 0}, {500, 0}, {257, 0}};
  for (const auto& counts : sets) {
    const Rows a = masked_rows(fp8, groups, max_m, k, counts, seed);
    MaskedCall call(g, a, dw, w, groups, max_m);
    call.gm.upload(counts);
    for (int split : {2, 1}) {
      dg_gemm_options o = DG_GEMM_OPTIONS_INIT;
      o.block_m = 128, o.block_n = 128, o.num_sms = 8, o.split_k = split;
      call.gd.poison();
      INFO((fp8 ? "fp8" : "bf16") << " masked N=" << n << " counts " << counts[0] << "," << counts[1]
                                  << " split_k " << split);
      const dg_status st = call.run(g, fp8, 256, &o);
      INFO(dg_last_error());
      REQUIRE(st == DG_SUCCESS);
      const std::vector<uint16_t> d = call.gd.download<uint16_t>();
      Rng rng(seed + static_cast<uint64_t>(split));
      check_masked_d(a, max_m, w, groups, counts, d, rng);
    }
  }
}

// Count-adaptive masked tiles (BF16): the heuristic's kernel for G groups at `hint` holds more tile
// widths (GemmConfig::alts); for each of its tiles the first total of row blocks that runs it is
// checked, so that every tile of the one kernel runs.
void check_masked_adaptive(Gpu& g, int64_t groups, int64_t hint, uint64_t seed) {
  constexpr bool fp8 = false;
  const int64_t n = 4096, k = 24 * 64, max_m = 2048;
  dg::ops::GemmShape s;
  s.kind = dg::ops::GemmKind::kBf16;
  s.m = max_m, s.n = n, s.k = k, s.type = dg::ops::GemmType::kMGroupedMasked;
  s.num_groups = groups, s.expected_m = hint;
  dg::ops::GemmConfig c;
  REQUIRE(dg::ops::choose_gemm_config(s, g.device->sm_count, {}, dg::ops::sm90_cost_model(g.device->name), &c) ==
          DG_SUCCESS);
  INFO("main " << c.block_m << "x" << c.block_n << ", other widths " << c.alts[0].block_n << ", " << c.alts[1].block_n);
  REQUIRE(c.alt_tiles() != 0);
  // The first total of row blocks within the groups' rows that runs each tile (0: main).
  std::vector<int64_t> first(static_cast<size_t>(c.alt_tiles() + 1), 0);
  for (int64_t r = groups; r <= groups * (max_m / c.block_m) && r < dg::ops::kAltRowBlocks; ++r) {
    int64_t& f = first[static_cast<size_t>(c.tile_at(r))];
    if (f == 0) f = r;
  }
  for (size_t t = 0; t < first.size(); ++t) {
    INFO("tile " << t);
    REQUIRE(first[t] != 0);
  }
  const Weights w = make_weights(fp8, groups, n, k, seed);
  DeviceWeights dw(g, w);
  for (const int64_t blocks : first) {
    // `blocks` row blocks over the groups, the last of each group partial (rows past the count are not D's).
    std::vector<int32_t> counts(static_cast<size_t>(groups));
    for (int64_t i = 0; i < groups; ++i) {
      const int64_t b = blocks / groups + (i < blocks % groups ? 1 : 0);
      counts[static_cast<size_t>(i)] = static_cast<int32_t>(b * c.block_m - (b > 0 ? 37 : 0));
    }
    const Rows a = masked_rows(fp8, groups, max_m, k, counts, seed + static_cast<uint64_t>(blocks));
    MaskedCall call(g, a, dw, w, groups, max_m);
    call.gm.upload(counts);
    call.gd.poison();
    INFO("G " << groups << ", " << blocks << " row blocks (tile " << c.tile_at(blocks) << ")");
    const dg_status st = call.run(g, fp8, hint);
    INFO(dg_last_error());
    REQUIRE(st == DG_SUCCESS);
    const std::vector<uint16_t> d = call.gd.download<uint16_t>();
    Rng rng(seed + 1);
    check_masked_d(a, max_m, w, groups, counts, d, rng);
  }
}

// The DeepSeek MoE sets: (N, K) x contiguous (G, expected M per group) and masked (G, expected m).
void moe_sets(bool fp8) {
  Gpu g;
  if (!g.sm90()) return;
  const int64_t nk[3][2] = {{4096, 7168}, {7168, 2048}, {6144, 7168}};
  const int64_t contiguous[3][2] = {{4, 8192}, {8, 4096}, {32, 256}};
  const int64_t masked[6][2] = {{1, 1024}, {2, 512}, {4, 256}, {32, 192}, {6, 1024}, {32, 20}};
  uint64_t seed = fp8 ? 100 : 200;
  for (auto& p : nk) {
    // One set of 32 groups of weights per shape; a call with G groups uses the first G.
    const Weights w = make_weights(fp8, 32, p[0], p[1], ++seed);
    DeviceWeights dw(g, w);
    for (auto& c : contiguous) check_contiguous(g, w, dw, c[0], c[1], ++seed);
    for (auto& m : masked) check_masked(g, w, dw, m[0], m[1], ++seed);
  }
}

}  // namespace

TEST_CASE("m-grouped gemm: FP8 contiguous (indices, psum) and masked on the DeepSeek MoE shapes") { moe_sets(true); }

// The quick suite's M-grouped GEMMs: every contiguous variant (indices, psum, nn, CTA pairs) and
// masked (alone and in pairs), FP8 and BF16, on three groups (one empty) with N not a multiple of 128.
TEST_CASE("quick: M-grouped contiguous and masked GEMMs" * doctest::test_suite("quick")) {
  Gpu g;
  if (!g.sm90()) return;
  for (bool fp8 : {true, false}) {
    const Weights w = make_weights(fp8, 3, 320, 384, fp8 ? 61 : 62);
    DeviceWeights dw(g, w);
    check_contiguous(g, w, dw, 3, 150, fp8 ? 63 : 64);
    check_masked(g, w, dw, 3, 100, fp8 ? 65 : 66, 256);
  }
}

TEST_CASE("m-grouped gemm: masked split tail over CTA pairs (FP8, BF16; N 512 and 448)" *
          doctest::test_suite("quick")) {
  Gpu g;
  if (!g.sm90()) return;
  for (bool fp8 : {true, false})
    for (int64_t n : {512, 448}) check_masked_tail(g, fp8, n, fp8 ? 71 + n : 81 + n);
}

TEST_CASE("m-grouped gemm: masked count-adaptive tiles run every width (BF16; G 1 and 2)" *
          doctest::test_suite("quick")) {
  Gpu g;
  if (!g.sm90()) return;
  // On the H200 calibration three widths each: 128x192 with 128x160 and 128x256 at G 1, hint 750;
  // 128x128 with two others at G 2, hint 425.
  const int64_t calls[2][2] = {{1, 750}, {2, 425}};
  for (auto& c : calls) check_masked_adaptive(g, c[0], c[1], 95 + c[0]);
}

TEST_CASE("m-grouped gemm: BF16 contiguous (indices, psum; nt, nn) and masked on the DeepSeek MoE shapes") {
  moe_sets(false);
}

// Group data the host never sees, out of range: nothing is read or written outside the tensors.
TEST_CASE("m-grouped gemm: out-of-range group data is skipped or clamped on the device" * doctest::test_suite("quick")) {
  Gpu g;
  if (!g.sm90()) return;
  for (bool fp8 : {true, false}) {
    const int64_t G = 3, N = 256, K = 512;
    const Weights w = make_weights(fp8, G, N, K, fp8 ? 11 : 12);
    DeviceWeights dw(g, w);
    // Indices: block 1 has group 7 (>= G), block 2 has -5, block 3 is group 2 with rows 40.. of it -1.
    {
      const int64_t M = 4 * kAlign;
      Rows a{fp8, K, w.sf_k, w.eb, std::vector<uint8_t>(static_cast<size_t>(M * K * w.eb)), {}, M};
      if (fp8) a.sf.assign(static_cast<size_t>(M * w.sf_k), 0.f);
      Rng rng(5);
      for (int64_t r = 0; r < M; ++r) fill_row(a, r, r, rng);
      std::vector<int32_t> idx(M, 0);
      for (int64_t r = 128; r < 256; ++r) idx[r] = 7;
      for (int64_t r = 256; r < 384; ++r) idx[r] = -5;
      for (int64_t r = 384; r < 512; ++r) idx[r] = r < 424 ? 2 : -1;
      Buf ga(g.device, a.bytes.size()), gsa(g.device, a.sf.size() * 4 + 16), gd(g.device, M * N * 2),
          gi(g.device, M * 4);
      ga.upload(a.bytes);
      if (fp8) gsa.upload(a.sf);
      gi.upload(idx);
      const dg_dtype ab = fp8 ? DG_DTYPE_FLOAT8_E4M3 : DG_DTYPE_BFLOAT16;
      Tensor ta(ga.data(), ab, {M, K}), tsa(gsa.data(), DG_DTYPE_FLOAT32, {M, w.sf_k}, {1, M});
      Tensor tb(dw.b.data(), ab, {G, N, K}), tsb(dw.sfb.data(), DG_DTYPE_FLOAT32, {G, w.nb, w.sf_k});
      Tensor td(gd.data(), DG_DTYPE_BFLOAT16, {M, N}), ti(gi.data(), DG_DTYPE_INT32, {M});
      // Alone, and as CTA pairs (blocks 0-1 and 2-3: each pair has one block without a group).
      dg_gemm_options pair = DG_GEMM_OPTIONS_INIT;
      pair.cluster = 2;
      pair.multicast_a = 0;
      for (const dg_gemm_options* o : std::initializer_list<const dg_gemm_options*>{nullptr, &pair}) {
        gd.poison();
        const dg_status st =
            fp8 ? dg_m_grouped_fp8_gemm_nt_contiguous(g.stream, ta.t, tsa.t, tb.t, tsb.t, td.t, ti.t,
                                                      DG_M_GROUPED_LAYOUT_INDICES, 0, o)
                : dg_m_grouped_bf16_gemm_nt_contiguous(g.stream, ta.t, tb.t, td.t, ti.t, DG_M_GROUPED_LAYOUT_INDICES, 0, o);
        INFO(dg_last_error());
        REQUIRE(st == DG_SUCCESS);
        const std::vector<uint16_t> d = gd.download<uint16_t>();
        int64_t untouched_bad = 0, zero_bad = 0;
        for (int64_t r = 128; r < 384; ++r)
          for (int64_t j = 0; j < N; ++j) untouched_bad += d_at(d, r, N, j) != kPoison;
        for (int64_t r = 424; r < 512; ++r)
          for (int64_t j = 0; j < N; ++j) zero_bad += d_at(d, r, N, j) != 0;
        CHECK(untouched_bad == 0);
        CHECK(zero_bad == 0);
        std::vector<double> ref, out;
        sample_group(a, 0, 0, w, 0, d, 0, 128, N, 256, rng, ref, out);
        sample_group(a, 384, 384, w, 2, d, 384, 40, N, 256, rng, ref, out);
        CHECK(calc_diff(ref, out) < (fp8 ? 1e-3 : 1e-5));
      }
    }
    // Masked counts: above max_m (clamped), negative (empty), zero.
    {
      const int64_t max_m = 192;
      const std::vector<int32_t> counts = {100000, -3, 0};
      std::vector<int32_t> valid = {static_cast<int32_t>(max_m), 0, 0};
      const Rows a = masked_rows(fp8, G, max_m, K, valid, 9);
      MaskedCall call(g, a, dw, w, G, max_m);
      call.gm.upload(counts);
      call.gd.poison();
      REQUIRE(call.run(g, fp8, 64) == DG_SUCCESS);
      const std::vector<uint16_t> d = call.gd.download<uint16_t>();
      Rng rng(3);
      check_masked_d(a, max_m, w, G, counts, d, rng);
    }
    // Psum ends: decreasing and past M are read as a running maximum clamped to M.
    {
      const int64_t M = 3 * kAlign;
      // Raw ends {200, 100, 1000}: group 0 = rows [0, 200), group 1 starts at 256 and ends at
      // max(100, 200) = 200 (empty), group 2 = rows [256, 384) (clamped to M).
      const std::vector<int32_t> ends = {200, 100, 1000};
      Rows a{fp8, K, w.sf_k, w.eb, std::vector<uint8_t>(static_cast<size_t>(M * K * w.eb)), {}, M};
      if (fp8) a.sf.assign(static_cast<size_t>(M * w.sf_k), 0.f);
      Rng rng(6);
      for (int64_t r = 0; r < M; ++r) fill_row(a, r, r, rng);
      Buf ga(g.device, a.bytes.size()), gsa(g.device, a.sf.size() * 4 + 16), gd(g.device, M * N * 2), ge(g.device, 12);
      ga.upload(a.bytes);
      if (fp8) gsa.upload(a.sf);
      ge.upload(ends);
      gd.poison();
      const dg_dtype ab = fp8 ? DG_DTYPE_FLOAT8_E4M3 : DG_DTYPE_BFLOAT16;
      Tensor ta(ga.data(), ab, {M, K}), tsa(gsa.data(), DG_DTYPE_FLOAT32, {M, w.sf_k}, {1, M});
      Tensor tb(dw.b.data(), ab, {G, N, K}), tsb(dw.sfb.data(), DG_DTYPE_FLOAT32, {G, w.nb, w.sf_k});
      Tensor td(gd.data(), DG_DTYPE_BFLOAT16, {M, N}), te(ge.data(), DG_DTYPE_INT32, {G});
      const dg_status st =
          fp8 ? dg_m_grouped_fp8_gemm_nt_contiguous(g.stream, ta.t, tsa.t, tb.t, tsb.t, td.t, te.t,
                                                    DG_M_GROUPED_LAYOUT_PSUM, 0, nullptr)
              : dg_m_grouped_bf16_gemm_nt_contiguous(g.stream, ta.t, tb.t, td.t, te.t, DG_M_GROUPED_LAYOUT_PSUM, 0,
                                                     nullptr);
      INFO(dg_last_error());
      REQUIRE(st == DG_SUCCESS);
      const std::vector<uint16_t> d = gd.download<uint16_t>();
      int64_t zero_bad = 0;
      for (int64_t r = 200; r < 256; ++r)
        for (int64_t j = 0; j < N; ++j) zero_bad += d_at(d, r, N, j) != 0;
      CHECK(zero_bad == 0);
      std::vector<double> ref, out;
      sample_group(a, 0, 0, w, 0, d, 0, 200, N, 256, rng, ref, out);
      sample_group(a, 256, 256, w, 2, d, 256, 128, N, 256, rng, ref, out);
      CHECK(calc_diff(ref, out) < (fp8 ? 1e-3 : 1e-5));
    }
  }
}

// A masked call captured once and replayed with different counts: the counts are read on the device.
TEST_CASE("m-grouped gemm: a captured masked call is right on every replay with new counts") {
  Gpu g;
  if (!g.sm90()) return;
  void* cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  REQUIRE(cuda != nullptr);
  using Begin = CUresult (*)(CUstream, CUstreamCaptureMode);
  using End = CUresult (*)(CUstream, CUgraph*);
  using Instantiate = CUresult (*)(CUgraphExec*, CUgraph, unsigned long long);
  using GraphLaunch = CUresult (*)(CUgraphExec, CUstream);
  using ExecDestroy = CUresult (*)(CUgraphExec);
  using GraphDestroy = CUresult (*)(CUgraph);
  const auto begin = reinterpret_cast<Begin>(dlsym(cuda, "cuStreamBeginCapture_v2"));
  const auto end = reinterpret_cast<End>(dlsym(cuda, "cuStreamEndCapture"));
  const auto instantiate = reinterpret_cast<Instantiate>(dlsym(cuda, "cuGraphInstantiateWithFlags"));
  const auto graph_launch = reinterpret_cast<GraphLaunch>(dlsym(cuda, "cuGraphLaunch"));
  const auto exec_destroy = reinterpret_cast<ExecDestroy>(dlsym(cuda, "cuGraphExecDestroy"));
  const auto graph_destroy = reinterpret_cast<GraphDestroy>(dlsym(cuda, "cuGraphDestroy"));
  REQUIRE((begin && end && instantiate && graph_launch && exec_destroy && graph_destroy));
  for (bool fp8 : {true, false}) {
    const int64_t G = 6, max_m = 512, N = 1024, K = 1024;
    const Weights w = make_weights(fp8, G, N, K, fp8 ? 31 : 32);
    DeviceWeights dw(g, w);
    const std::vector<int32_t> full(G, static_cast<int32_t>(max_m));
    const Rows a = masked_rows(fp8, G, max_m, K, full, 13);  // every row valid: counts vary per replay
    MaskedCall call(g, a, dw, w, G, max_m);
    REQUIRE(dg_m_grouped_gemm_prepare(g.stream, fp8 ? DG_DTYPE_FLOAT8_E4M3 : DG_DTYPE_BFLOAT16, DG_GEMM_LAYOUT_NT,
                                      DG_M_GROUPED_LAYOUT_MASKED, G, max_m, N, K, 200, nullptr) == DG_SUCCESS);
    call.gm.upload(full);
    void* raw = nullptr;
    REQUIRE(dg_stream_get_cu_stream(g.stream, &raw) == DG_SUCCESS);
    const CUstream s = static_cast<CUstream>(raw);
    CUgraph graph = nullptr;
    CUgraphExec exec = nullptr;
    {
      dg::ContextScope scope;
      REQUIRE(scope.enter(*g.device) == DG_SUCCESS);
      REQUIRE(begin(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL) == CUDA_SUCCESS);
      const dg_status st = call.run(g, fp8, 200);
      REQUIRE(end(s, &graph) == CUDA_SUCCESS);
      REQUIRE(st == DG_SUCCESS);
      REQUIRE(instantiate(&exec, graph, 0) == CUDA_SUCCESS);
    }
    Rng rng(fp8 ? 41 : 42);
    for (int replay = 0; replay < 3; ++replay) {
      std::vector<int32_t> counts = draw_counts(G, 64 + 150 * replay, max_m, rng);
      counts[replay] = 0;  // an empty group each time, a different one
      call.gm.upload(counts);
      call.gd.poison();
      {
        dg::ContextScope scope;
        REQUIRE(scope.enter(*g.device) == DG_SUCCESS);
        REQUIRE(graph_launch(exec, s) == CUDA_SUCCESS);
      }
      REQUIRE(dg_stream_synchronize(g.stream) == DG_SUCCESS);
      const std::vector<uint16_t> d = call.gd.download<uint16_t>();
      INFO("replay " << replay);
      check_masked_d(a, max_m, w, G, counts, d, rng);
    }
    exec_destroy(exec);
    graph_destroy(graph);
  }
  dlclose(cuda);
}

TEST_CASE("m-grouped gemm: bad arguments name the argument") {
  Gpu g;
  if (!g.sm90()) return;
  Buf buf(g.device, 1 << 22);
  auto msg = [] { return std::string(dg_last_error()); };
  const dg_dtype f8 = DG_DTYPE_FLOAT8_E4M3, bf = DG_DTYPE_BFLOAT16, f32 = DG_DTYPE_FLOAT32, i32 = DG_DTYPE_INT32;
  Tensor a(buf.data(), f8, {256, 256}), sfa(buf.data(), f32, {256, 2}, {1, 256});
  Tensor b(buf.data(), f8, {4, 128, 256}), sfb(buf.data(), f32, {4, 1, 2});
  Tensor d(buf.data(), bf, {256, 128}), idx(buf.data(), i32, {256}), ends(buf.data(), i32, {4});
  auto fp8_contig = [&](const dg_tensor* ta, const dg_tensor* tb, const dg_tensor* td, const dg_tensor* tl,
                        int32_t layout, const dg_gemm_options* o = nullptr) {
    return dg_m_grouped_fp8_gemm_nt_contiguous(g.stream, ta, sfa.t, tb, sfb.t, td, tl, layout, 0, o);
  };
  // Group count 0, K mismatch, M not a multiple of 128, wrong index count, wrong dtype.
  Tensor b0(buf.data(), f8, {0, 128, 256});
  CHECK(fp8_contig(a.t, b0.t, d.t, idx.t, DG_M_GROUPED_LAYOUT_INDICES) == DG_ERROR_INVALID_ARGUMENT);
  CHECK(msg().find("b:") == 0);
  Tensor bk(buf.data(), f8, {4, 128, 128});
  CHECK(fp8_contig(a.t, bk.t, d.t, idx.t, DG_M_GROUPED_LAYOUT_INDICES) == DG_ERROR_INVALID_ARGUMENT);
  CHECK(msg().find("a:") == 0);
  Tensor a200(buf.data(), f8, {200, 256}), d200(buf.data(), bf, {200, 128}), idx200(buf.data(), i32, {200});
  CHECK(fp8_contig(a200.t, b.t, d200.t, idx200.t, DG_M_GROUPED_LAYOUT_INDICES) == DG_ERROR_INVALID_ARGUMENT);
  CHECK(msg().find("a: M = 200") == 0);
  Tensor idx_short(buf.data(), i32, {255});
  CHECK(fp8_contig(a.t, b.t, d.t, idx_short.t, DG_M_GROUPED_LAYOUT_INDICES) == DG_ERROR_INVALID_ARGUMENT);
  CHECK(msg().find("grouped_layout:") == 0);
  Tensor idx_f32(buf.data(), f32, {256});
  CHECK(fp8_contig(a.t, b.t, d.t, idx_f32.t, DG_M_GROUPED_LAYOUT_INDICES) == DG_ERROR_INVALID_ARGUMENT);
  CHECK(msg().find("grouped_layout:") == 0);
  CHECK(fp8_contig(a.t, b.t, d.t, idx.t, DG_M_GROUPED_LAYOUT_PSUM) == DG_ERROR_INVALID_ARGUMENT);
  CHECK(msg().find("grouped_layout:") == 0);
  CHECK(fp8_contig(a.t, b.t, d.t, ends.t, 7) == DG_ERROR_INVALID_ARGUMENT);
  CHECK(msg().find("layout:") == 0);
  Tensor d_f32(buf.data(), f32, {256, 128});
  CHECK(fp8_contig(a.t, b.t, d_f32.t, idx.t, DG_M_GROUPED_LAYOUT_INDICES) == DG_ERROR_INVALID_ARGUMENT);
  CHECK(msg().find("d:") == 0);
  Tensor b_unpacked(buf.data(), f8, {4, 128, 256}, {128 * 256 + 256, 256, 1});
  CHECK(fp8_contig(a.t, b_unpacked.t, d.t, idx.t, DG_M_GROUPED_LAYOUT_INDICES) == DG_ERROR_INVALID_ARGUMENT);
  CHECK(msg().find("b:") == 0);
  // FP8 nn with B MN-major in memory.
  Tensor b_nn(buf.data(), f8, {4, 256, 128}), sfb_nn(buf.data(), f32, {4, 2, 1});
  CHECK(dg_m_grouped_fp8_gemm_nn_contiguous(g.stream, a.t, sfa.t, b_nn.t, sfb_nn.t, d.t, idx.t,
                                            DG_M_GROUPED_LAYOUT_INDICES, 0, nullptr) == DG_ERROR_UNSUPPORTED);
  CHECK(msg().find("b:") == 0);
  // Options that do not apply.
  dg_gemm_options o = DG_GEMM_OPTIONS_INIT;
  o.recipe = DG_FP8_RECIPE_1D1D;
  CHECK(fp8_contig(a.t, b.t, d.t, idx.t, DG_M_GROUPED_LAYOUT_INDICES, &o) == DG_ERROR_INVALID_ARGUMENT);
  CHECK(msg().find("options.recipe") == 0);
  o = DG_GEMM_OPTIONS_INIT;
  o.split_k = 2;
  CHECK(fp8_contig(a.t, b.t, d.t, idx.t, DG_M_GROUPED_LAYOUT_INDICES, &o) == DG_ERROR_INVALID_ARGUMENT);
  CHECK(msg().find("options.split_k") == 0);
  o = DG_GEMM_OPTIONS_INIT;
  o.block_m = 64;
  CHECK(fp8_contig(a.t, b.t, d.t, idx.t, DG_M_GROUPED_LAYOUT_INDICES, &o) == DG_ERROR_INVALID_ARGUMENT);
  CHECK(msg().find("options") == 0);
  // Masked: max_m not a multiple of 64, expected_m <= 0, counts of the wrong length, G mismatch.
  Tensor am(buf.data(), bf, {4, 100, 256}), dm(buf.data(), bf, {4, 100, 128}), bm(buf.data(), bf, {4, 128, 256});
  Tensor cnt(buf.data(), i32, {4}), cnt3(buf.data(), i32, {3});
  CHECK(dg_m_grouped_bf16_gemm_nt_masked(g.stream, am.t, bm.t, dm.t, cnt.t, 64, nullptr) == DG_ERROR_INVALID_ARGUMENT);
  CHECK(msg().find("a: max_m = 100") == 0);
  Tensor am2(buf.data(), bf, {4, 128, 256}), dm2(buf.data(), bf, {4, 128, 128});
  CHECK(dg_m_grouped_bf16_gemm_nt_masked(g.stream, am2.t, bm.t, dm2.t, cnt.t, 0, nullptr) == DG_ERROR_INVALID_ARGUMENT);
  CHECK(msg().find("expected_m:") == 0);
  CHECK(dg_m_grouped_bf16_gemm_nt_masked(g.stream, am2.t, bm.t, dm2.t, cnt3.t, 64, nullptr) ==
        DG_ERROR_INVALID_ARGUMENT);
  CHECK(msg().find("masked_m:") == 0);
  Tensor dm3(buf.data(), bf, {3, 128, 128});
  CHECK(dg_m_grouped_bf16_gemm_nt_masked(g.stream, am2.t, bm.t, dm3.t, cnt.t, 64, nullptr) == DG_ERROR_INVALID_ARGUMENT);
  CHECK(msg().find("d:") == 0);
  CHECK(dg_m_grouped_bf16_gemm_nt_masked(g.stream, am2.t, bm.t, dm2.t, nullptr, 64, nullptr) ==
        DG_ERROR_INVALID_ARGUMENT);
  CHECK(msg().find("masked_m") == 0);
  // Masked split_k: 0, 1 or 2 (the split tail).
  dg_gemm_options split4 = DG_GEMM_OPTIONS_INIT;
  split4.split_k = 4;
  CHECK(dg_m_grouped_bf16_gemm_nt_masked(g.stream, am2.t, bm.t, dm2.t, cnt.t, 64, &split4) ==
        DG_ERROR_INVALID_ARGUMENT);
  CHECK(msg().find("options.split_k: 4 (masked") == 0);
  dg_gemm_options split_one_sm = DG_GEMM_OPTIONS_INIT;
  split_one_sm.split_k = 2, split_one_sm.num_sms = 1;
  CHECK(dg_m_grouped_bf16_gemm_nt_masked(g.stream, am2.t, bm.t, dm2.t, cnt.t, 64, &split_one_sm) ==
        DG_ERROR_INVALID_ARGUMENT);
  CHECK(msg().find("options: the explicit kernel config cannot run this problem: the masked split tail") == 0);
  // BF16 nn with K not a multiple of 64 (a K tile would span two groups).
  Tensor a_k96(buf.data(), bf, {128, 96}), b_nn96(buf.data(), bf, {2, 96, 128}), d128(buf.data(), bf, {128, 128});
  Tensor idx128(buf.data(), i32, {128});
  CHECK(dg_m_grouped_bf16_gemm_nn_contiguous(g.stream, a_k96.t, b_nn96.t, d128.t, idx128.t,
                                             DG_M_GROUPED_LAYOUT_INDICES, 0, nullptr) == DG_ERROR_UNSUPPORTED);
  CHECK(msg().find("b: K = 96") == 0);
  // Prepare validates too.
  CHECK(dg_m_grouped_gemm_prepare(g.stream, f8, DG_GEMM_LAYOUT_NN, DG_M_GROUPED_LAYOUT_INDICES, 4, 256, 128, 256, 0,
                                  nullptr) == DG_ERROR_UNSUPPORTED);
  CHECK(dg_m_grouped_gemm_prepare(g.stream, bf, DG_GEMM_LAYOUT_NT, DG_M_GROUPED_LAYOUT_MASKED, 4, 100, 128, 256, 64,
                                  nullptr) == DG_ERROR_INVALID_ARGUMENT);
  CHECK(dg_m_grouped_gemm_prepare(g.stream, bf, DG_GEMM_LAYOUT_NT, DG_M_GROUPED_LAYOUT_MASKED, 4, 128, 128, 256, 64,
                                  nullptr) == DG_SUCCESS);
}
