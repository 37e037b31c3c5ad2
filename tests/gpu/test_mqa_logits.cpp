// dg_fp8_mqa_logits against a double-precision reference on the dequantised inputs (q E4M3 as
// is, kv E4M3 with per-key scales): every H, D and logits dtype with clean_logits on and off on a
// small problem with random, clipped and empty key ranges (checked at every entry); the indexer's
// causal and context-parallel ranges at S_q 2048/4096 x S_kv 4096/65536 (values at sampled
// entries, the -inf mask at every entry). Logits are poisoned before each call: entries a call must
// write show if it does not, the row padding must stay untouched. Repeated calls must give bitwise
// identical logits. The compressed layout (dg_fp8_mqa_logits_compressed) on the small problem and
// on tiles split in parts (ranges clipped by max_seqlen_k or not), and on the indexer's ranges with
// max_seqlen_k the longest range: every entry of a row's range checked at its column j - ks,
// nothing written past max_seqlen_k columns (entries past a row's range are undefined and not
// checked).
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "dg.h"
#include "gpu_fixture.h"
#include "host_numerics.h"

namespace {

using Gpu = dg::test::Gpu;
using Buf = dg::test::DeviceBuffer;
using dg::test::bad_logits_in_row;
using dg::test::calc_diff;
using dg::test::e4m3_to_f;
using dg::test::f_to_e4m3;
using dg::test::parallel_for;
using dg::test::Rng;
using dg::test::Tensor;
using dg::test::word_value;

// Inputs on the host (quantised) and their dequantised values.
struct Inputs {
  int64_t s_q, s_kv, h, d;
  std::vector<uint8_t> q, kv;
  std::vector<float> kv_sf, w;
  std::vector<int32_t> ks, ke;
  std::vector<float> qf, kvf;  // dequantised (kvf without its scale)
};

Inputs make_inputs(int64_t s_q, int64_t s_kv, int64_t h, int64_t d, uint64_t seed) {
  Inputs in{s_q, s_kv, h, d, {}, {}, {}, {}, {}, {}, {}, {}};
  in.q.resize(s_q * h * d);
  in.qf.resize(in.q.size());
  parallel_for(s_q, [&](int64_t i) {
    Rng rng(seed * 7919 + i);
    for (int64_t k = 0; k < h * d; ++k) {
      const size_t o = i * h * d + k;
      in.q[o] = f_to_e4m3(rng.uniform());
      in.qf[o] = e4m3_to_f(in.q[o]);
    }
  });
  in.kv.resize(s_kv * d);
  in.kvf.resize(in.kv.size());
  in.kv_sf.resize(s_kv);
  parallel_for(s_kv, [&](int64_t j) {
    Rng rng(seed * 104729 + j);
    std::vector<float> v(d);
    float amax = 1e-4f;
    for (auto& x : v) x = rng.uniform() * 3.0f, amax = std::max(amax, std::fabs(x));
    const float s = amax / 448.f;
    in.kv_sf[j] = s;
    for (int64_t k = 0; k < d; ++k) {
      in.kv[j * d + k] = f_to_e4m3(v[k] / s);
      in.kvf[j * d + k] = e4m3_to_f(in.kv[j * d + k]);
    }
  });
  Rng rng(seed);
  in.w.resize(s_q * h);
  for (auto& x : in.w) x = rng.uniform();
  in.ks.assign(s_q, 0);
  in.ke.assign(s_q, 0);
  return in;
}

// [ks, ke) clipped to [0, S_kv), as the kernel reads it.
void clipped(const Inputs& in, int64_t i, int64_t* lo, int64_t* hi) {
  *lo = std::clamp<int64_t>(in.ks[i], 0, in.s_kv);
  *hi = std::clamp<int64_t>(in.ke[i], *lo, in.s_kv);
}

double reference(const Inputs& in, int64_t i, int64_t j) {
  double s = 0;
  for (int64_t hh = 0; hh < in.h; ++hh) {
    const float* q = &in.qf[(i * in.h + hh) * in.d];
    const float* k = &in.kvf[j * in.d];
    double dot = 0;
    for (int64_t x = 0; x < in.d; ++x) dot += double(q[x]) * k[x];
    s += double(in.w[i * in.h + hh]) * std::max(dot, 0.0);
  }
  return s * in.kv_sf[j];
}

// Row i of the logits in the compressed layout with max_seqlen_k columns: its clipped range's first
// max_seqlen_k keys, key j at column j - lo.
void compressed_row(const Inputs& in, int64_t max_seqlen_k, int64_t i, int64_t* lo, int64_t* hi) {
  clipped(in, i, lo, hi);
  *hi = std::min(*hi, *lo + max_seqlen_k);
}

// Device copies of the inputs and a logits buffer with the layout query's row stride: [S_q, S_kv],
// or [S_q, max_seqlen_k] for the compressed layout (max_seqlen_k > 0).
struct Device {
  Buf q, kv, sf, w, ks, ke, logits;
  int64_t max_seqlen_k;
  int64_t cols;  // the logits' columns
  int64_t ld;
  int64_t ldw;  // weights' row stride
  dg_dtype dtype;
  Device(const Gpu& g, const Inputs& in, dg_dtype out, int64_t weights_stride = 0, int64_t max_seqlen_k_ = 0)
      : q(g.device, in.q.size()), kv(g.device, in.kv.size()), sf(g.device, in.kv_sf.size() * 4),
        w(g.device, in.s_q * (weights_stride ? weights_stride : in.h) * 4), ks(g.device, in.ks.size() * 4),
        ke(g.device, in.ke.size() * 4), logits(g.device, bytes(in.s_q, max_seqlen_k_ ? max_seqlen_k_ : in.s_kv, out)),
        max_seqlen_k(max_seqlen_k_), cols(max_seqlen_k_ ? max_seqlen_k_ : in.s_kv), ld(stride(in.s_q, cols, out)),
        dtype(out) {
    q.upload(in.q);
    kv.upload(in.kv);
    sf.upload(in.kv_sf);
    ldw = weights_stride ? weights_stride : in.h;
    std::vector<float> padded(in.s_q * ldw, std::nanf(""));  // padding the kernel must not read
    for (int64_t i = 0; i < in.s_q; ++i) std::copy_n(&in.w[i * in.h], in.h, &padded[i * ldw]);
    w.upload(padded);
    ks.upload(in.ks);
    ke.upload(in.ke);
  }
  static int64_t stride(int64_t rows, int64_t cols, dg_dtype out) {
    int64_t sizes[2], strides[2];
    REQUIRE(dg_get_mqa_logits_layout(rows, cols, out, sizes, strides, nullptr) == DG_SUCCESS);
    return strides[0];
  }
  static size_t bytes(int64_t rows, int64_t cols, dg_dtype out) {
    size_t b = 0;
    REQUIRE(dg_get_mqa_logits_layout(rows, cols, out, nullptr, nullptr, &b) == DG_SUCCESS);
    return b;
  }
  // One call into poisoned logits; returns them as raw 32-bit (FP32) or 16-bit (BF16) words.
  std::vector<uint32_t> run(const Gpu& g, const Inputs& in, int32_t clean) {
    logits.poison();
    Tensor tq(q.data(), DG_DTYPE_FLOAT8_E4M3, {in.s_q, in.h, in.d});
    Tensor tkv(kv.data(), DG_DTYPE_FLOAT8_E4M3, {in.s_kv, in.d});
    Tensor tsf(sf.data(), DG_DTYPE_FLOAT32, {in.s_kv});
    Tensor tw(w.data(), DG_DTYPE_FLOAT32, {in.s_q, in.h}, {ldw, 1});
    Tensor tks(ks.data(), DG_DTYPE_INT32, {in.s_q});
    Tensor tke(ke.data(), DG_DTYPE_INT32, {in.s_q});
    Tensor tl(logits.data(), dtype, {in.s_q, cols}, {ld, 1});
    // Announced before the launch, so that a launch that never finishes names its configuration.
    std::printf("MQA launch: S_q %lld S_kv %lld H %lld D %lld %s clean %d max_seqlen_k %lld ... ",
                static_cast<long long>(in.s_q), static_cast<long long>(in.s_kv), static_cast<long long>(in.h),
                static_cast<long long>(in.d), dg_dtype_name(dtype), clean, static_cast<long long>(max_seqlen_k));
    std::fflush(stdout);
    const auto t0 = std::chrono::steady_clock::now();
    const dg_status st =
        max_seqlen_k ? dg_fp8_mqa_logits_compressed(g.stream, tq.t, tkv.t, tsf.t, tw.t, tks.t, tke.t, max_seqlen_k,
                                                    tl.t, clean)
                     : dg_fp8_mqa_logits(g.stream, tq.t, tkv.t, tsf.t, tw.t, tks.t, tke.t, tl.t, clean);
    REQUIRE_MESSAGE(st == DG_SUCCESS, dg_last_error());
    REQUIRE(dg_stream_synchronize(g.stream) == DG_SUCCESS);
    std::printf("done in %.3f s\n", std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    std::fflush(stdout);
    return logits.download_words(in.s_q * ld, dg_dtype_size(dtype));
  }
};

// Every entry: inside a row's range finite (not -inf); outside -inf with clean_logits; the row
// padding untouched. Compressed (max_seqlen_k > 0): the row's first hi - lo columns finite, the
// padding past max_seqlen_k untouched. Returns the number of entries that break this (0 expected).
int64_t check_masks(const Inputs& in, const std::vector<uint32_t>& out, int64_t ld, dg_dtype dtype, bool clean,
                    int64_t max_seqlen_k = 0) {
  std::vector<int64_t> bad(in.s_q, 0);
  parallel_for(in.s_q, [&](int64_t i) {
    int64_t lo, hi;
    const bool bf16 = dtype == DG_DTYPE_BFLOAT16;
    if (max_seqlen_k) {
      compressed_row(in, max_seqlen_k, i, &lo, &hi);
      bad[i] = bad_logits_in_row(&out[i * ld], ld, max_seqlen_k, 0, hi - lo, bf16, false);
    } else {
      clipped(in, i, &lo, &hi);
      bad[i] = bad_logits_in_row(&out[i * ld], ld, in.s_kv, lo, hi, bf16, clean);
    }
  });
  int64_t total = 0;
  for (int64_t b : bad) total += b;
  return total;
}

// calc_diff over `samples` entries drawn inside the rows' ranges (every entry when samples is 0).
// Compressed (max_seqlen_k > 0): key j of row i read at column j - lo.
double value_diff(const Inputs& in, const std::vector<uint32_t>& out, int64_t ld, dg_dtype dtype, int64_t samples,
                  uint64_t seed, int64_t max_seqlen_k = 0) {
  const auto row = [&](int64_t i, int64_t* lo, int64_t* hi) {
    if (max_seqlen_k) compressed_row(in, max_seqlen_k, i, lo, hi);
    else clipped(in, i, lo, hi);
  };
  std::vector<std::pair<int64_t, int64_t>> at;
  if (samples == 0) {
    for (int64_t i = 0; i < in.s_q; ++i) {
      int64_t lo, hi;
      row(i, &lo, &hi);
      for (int64_t j = lo; j < hi; ++j) at.emplace_back(i, j);
    }
  } else {
    Rng rng(seed);
    while (static_cast<int64_t>(at.size()) < samples) {
      const int64_t i = rng.below(in.s_q);
      int64_t lo, hi;
      row(i, &lo, &hi);
      if (hi > lo) at.emplace_back(i, lo + rng.below(hi - lo));
    }
  }
  std::vector<double> ref(at.size()), got(at.size());
  parallel_for(static_cast<int64_t>(at.size()), [&](int64_t n) {
    const auto [i, j] = at[n];
    int64_t lo = 0, hi;
    if (max_seqlen_k) row(i, &lo, &hi);
    ref[n] = reference(in, i, j);
    got[n] = word_value(out[i * ld + j - lo], dtype == DG_DTYPE_BFLOAT16);
  });
  return calc_diff(ref, got);
}

// Every logits dtype with clean_logits on and off on a small problem: 301 tokens (a partial last
// tile for both H), 777 keys (a partial last block), random ranges including clipped, empty,
// reversed and whole ones.
Inputs small_inputs(int64_t h, int64_t d) {
  Inputs in = make_inputs(301, 777, h, d, uint64_t(h * 1000 + d));
  Rng rng(uint64_t(h + d));
  for (int64_t i = 0; i < in.s_q; ++i) {
    const int64_t pick = rng.below(8);
    in.ks[i] = static_cast<int32_t>(rng.below(in.s_kv + 100) - 50);  // some below 0 or past S_kv
    in.ke[i] = static_cast<int32_t>(in.ks[i] + rng.below(400));
    if (pick == 0) in.ke[i] = in.ks[i];              // empty
    if (pick == 1) in.ke[i] = in.ks[i] - 3;          // reversed: empty
    if (pick == 2) in.ks[i] = 0, in.ke[i] = 1 << 30;  // every key
  }
  return in;
}

void small_problem(int64_t h, int64_t d) {
  Gpu g;
  if (!g.sm90()) return;
  const Inputs in = small_inputs(h, d);
  for (dg_dtype out : {DG_DTYPE_FLOAT32, DG_DTYPE_BFLOAT16}) {
    Device dev(g, in, out, out == DG_DTYPE_BFLOAT16 ? h + 4 : 0);  // BF16: padded weight rows
    for (int32_t clean : {1, 0}) {
      CAPTURE(dg_dtype_name(out));
      CAPTURE(clean);
      const std::vector<uint32_t> got = dev.run(g, in, clean);
      CHECK(check_masks(in, got, dev.ld, out, clean) == 0);
      const double diff = value_diff(in, got, dev.ld, out, 0, 1);
      MESSAGE("H " << h << " D " << d << " " << std::string(dg_dtype_name(out)) << " clean " << clean << ": calc_diff " << diff);
      CHECK(diff < 1e-3);
      CHECK(diff < (out == DG_DTYPE_FLOAT32 ? 5e-6 : 3e-5));
      CHECK(dev.run(g, in, clean) == got);
    }
  }
}

// The compressed layout on the small problem's ranges, every logits dtype: max_seqlen_k 300 clips
// the longer ranges (up to 399 keys, and rows of every key), 1000 clips none (and exceeds S_kv);
// 4 is a row shorter than a 16-byte store. FP32 rows of 300 are 512 apart and BF16 rows of 1000 are
// 1024 apart: padding past max_seqlen_k that must stay untouched.
void small_problem_compressed(int64_t h, int64_t d) {
  Gpu g;
  if (!g.sm90()) return;
  const Inputs in = small_inputs(h, d);
  for (dg_dtype out : {DG_DTYPE_FLOAT32, DG_DTYPE_BFLOAT16}) {
    for (int64_t max_seqlen_k : {300, 1000, 4}) {
      CAPTURE(dg_dtype_name(out));
      CAPTURE(max_seqlen_k);
      Device dev(g, in, out, out == DG_DTYPE_BFLOAT16 ? h + 4 : 0, max_seqlen_k);
      const std::vector<uint32_t> got = dev.run(g, in, 0);
      CHECK(check_masks(in, got, dev.ld, out, false, max_seqlen_k) == 0);
      const double diff = value_diff(in, got, dev.ld, out, 0, 1, max_seqlen_k);
      MESSAGE("H " << h << " D " << d << " " << std::string(dg_dtype_name(out)) << " max_seqlen_k " << max_seqlen_k
                   << ": calc_diff " << diff);
      CHECK(diff < 1e-3);
      CHECK(diff < (out == DG_DTYPE_FLOAT32 ? 5e-6 : 3e-5));
      CHECK(dev.run(g, in, 0) == got);
    }
  }
}

// Tiles cut into parts (H 64, D 128, FP32, clean on): 37 tokens make 19 tiles and S_kv 20000
// 79 blocks a tile at most, so each tile is split in 6 parts over the SMs (mqa_logits_split).
// Patterns: random ranges (clipped, empty, reversed, whole); one token with every key between
// empty tiles; a few tokens with ranges ending at S_kv; no token with a range (every entry -inf);
// one token of a single-block range (parts without blocks). Compressed (max_seqlen_k > 0, clean
// off): max_seqlen_k 20000 splits the tiles as S_kv does; 5000 in 2 parts, clipping long ranges.
void split_tiles(int64_t max_seqlen_k = 0) {
  Gpu g;
  if (!g.sm90()) return;
  Inputs in = make_inputs(37, 20000, 64, 128, 7);
  Device dev(g, in, DG_DTYPE_FLOAT32, 0, max_seqlen_k);
  const int32_t clean = max_seqlen_k ? 0 : 1;
  const char* patterns[] = {"random ranges", "one long token", "ranges at the end", "no ranges", "one block"};
  for (int pattern = 0; pattern < 5; ++pattern) {
    CAPTURE(std::string(patterns[pattern]));
    Rng rng(uint64_t(pattern + 11));
    for (int64_t i = 0; i < in.s_q; ++i) {
      in.ks[i] = in.ke[i] = 0;
      if (pattern == 0) {
        in.ks[i] = static_cast<int32_t>(rng.below(in.s_kv + 100) - 50);
        in.ke[i] = static_cast<int32_t>(in.ks[i] + rng.below(in.s_kv));
        if (i % 7 == 3) in.ke[i] = in.ks[i] - 1;
      }
      if (pattern == 1 && i == 20) in.ks[i] = 3, in.ke[i] = static_cast<int32_t>(in.s_kv);
      if (pattern == 2 && i >= 33) in.ks[i] = static_cast<int32_t>(rng.below(in.s_kv)), in.ke[i] = 1 << 30;
      if (pattern == 4 && i == 36) in.ks[i] = 130, in.ke[i] = 200;
    }
    dev.ks.upload(in.ks);
    dev.ke.upload(in.ke);
    const std::vector<uint32_t> got = dev.run(g, in, clean);
    CHECK(check_masks(in, got, dev.ld, DG_DTYPE_FLOAT32, clean, max_seqlen_k) == 0);
    if (pattern != 3) {
      const double diff = value_diff(in, got, dev.ld, DG_DTYPE_FLOAT32, 0, 1, max_seqlen_k);
      MESSAGE(std::string(patterns[pattern]) << " max_seqlen_k " << max_seqlen_k << ": calc_diff " << diff);
      CHECK(diff < 5e-6);
    }
    CHECK(dev.run(g, in, clean) == got);
  }
}

// The indexer's causal and context-parallel ranges at H 64, D 128, FP32 logits: values at 2^16
// sampled entries, the -inf mask at every entry, 20 runs bitwise identical.
void indexer_problem(int64_t s_q, int64_t s_kv) {
  Gpu g;
  if (!g.sm90()) return;
  Inputs in = make_inputs(s_q, s_kv, 64, 128, uint64_t(s_q + s_kv));
  Device dev(g, in, DG_DTYPE_FLOAT32);
  for (const char* pattern : {"causal", "context-parallel"}) {
    CAPTURE(pattern);
    if (pattern[0] == 'c' && pattern[1] == 'a') {
      for (int64_t i = 0; i < s_q; ++i) in.ks[i] = 0, in.ke[i] = static_cast<int32_t>(i + s_kv - s_q);
    } else {
      // Context parallelism as DeepGEMM's tests lay it out: the S_q tokens are two chunks of S_q / 2
      // at mirrored positions of a cp = S_kv / S_q split of the keys (chunk id cp / 3 and 2 cp - 1 - id).
      const int64_t chunk = s_q / 2, cp = s_kv / s_q, id = cp / 3;
      for (int64_t i = 0; i < chunk; ++i) {
        in.ks[i] = in.ks[i + chunk] = 0;
        in.ke[i] = static_cast<int32_t>(id * chunk + i);
        in.ke[i + chunk] = static_cast<int32_t>((2 * cp - 1 - id) * chunk + i);
      }
    }
    dev.ks.upload(in.ks);
    dev.ke.upload(in.ke);
    const std::vector<uint32_t> got = dev.run(g, in, 1);
    CHECK(check_masks(in, got, dev.ld, DG_DTYPE_FLOAT32, true) == 0);
    const double diff = value_diff(in, got, dev.ld, DG_DTYPE_FLOAT32, 1 << 16, uint64_t(s_q ^ s_kv));
    MESSAGE("S_q " << s_q << " S_kv " << s_kv << " " << std::string(pattern) << ": calc_diff " << diff);
    CHECK(diff < 1e-3);
    CHECK(diff < 5e-6);
    int differ = 0;
    for (int r = 1; r < 20; ++r) differ += dev.run(g, in, 1) != got;
    CHECK(differ == 0);
  }
}

// The indexer's ranges in the compressed layout (H 64, D 128), max_seqlen_k the longest range as
// DeepGEMM's test passes it: causal and context-parallel (ks = 0), and packed sequences (ks the
// first key of a token's sequence: rows start at varied keys).
// FP32 and BF16 logits; values at 2^16 sampled entries, finite entries over every row's range and
// untouched padding past max_seqlen_k, 5 runs bitwise identical.
void indexer_problem_compressed(int64_t s_q, int64_t s_kv) {
  Gpu g;
  if (!g.sm90()) return;
  Inputs in = make_inputs(s_q, s_kv, 64, 128, uint64_t(s_q + s_kv + 1));
  for (const char* pattern : {"causal", "context-parallel", "packed sequences"}) {
    CAPTURE(pattern);
    const std::string name = pattern;
    if (name == "causal") {
      for (int64_t i = 0; i < s_q; ++i) in.ks[i] = 0, in.ke[i] = static_cast<int32_t>(i + s_kv - s_q);
    } else if (name == "context-parallel") {
      const int64_t chunk = s_q / 2, cp = s_kv / s_q, id = cp / 3;
      for (int64_t i = 0; i < chunk; ++i) {
        in.ks[i] = in.ks[i + chunk] = 0;
        in.ke[i] = static_cast<int32_t>(id * chunk + i);
        in.ke[i + chunk] = static_cast<int32_t>((2 * cp - 1 - id) * chunk + i);
      }
    } else {
      // Sequences of 1 to 3000 of the queries' tokens, each with r = S_kv / S_q times as many keys
      // (its cached prefix, then its new tokens) from key r * (its first token): token i sees its
      // sequence's keys up to its own.
      const int64_t r = s_kv / s_q;
      Rng rng(uint64_t(s_q * 3 + s_kv));
      for (int64_t start = 0; start < s_q;) {
        const int64_t len = std::min<int64_t>(1 + rng.below(3000), s_q - start);
        for (int64_t i = start; i < start + len; ++i) {
          in.ks[i] = static_cast<int32_t>(r * start);
          in.ke[i] = static_cast<int32_t>(r * start + (r - 1) * len + (i - start) + 1);
        }
        start += len;
      }
    }
    int64_t max_seqlen_k = 1;
    for (int64_t i = 0; i < s_q; ++i) max_seqlen_k = std::max<int64_t>(max_seqlen_k, in.ke[i] - in.ks[i]);
    for (dg_dtype out : {DG_DTYPE_FLOAT32, DG_DTYPE_BFLOAT16}) {
      CAPTURE(dg_dtype_name(out));
      Device dev(g, in, out, 0, max_seqlen_k);
      const std::vector<uint32_t> got = dev.run(g, in, 0);
      CHECK(check_masks(in, got, dev.ld, out, false, max_seqlen_k) == 0);
      const double diff = value_diff(in, got, dev.ld, out, 1 << 16, uint64_t(s_q ^ s_kv), max_seqlen_k);
      MESSAGE("S_q " << s_q << " S_kv " << s_kv << " " << name << " max_seqlen_k " << max_seqlen_k << " "
                     << std::string(dg_dtype_name(out)) << ": calc_diff " << diff);
      CHECK(diff < 1e-3);
      CHECK(diff < (out == DG_DTYPE_FLOAT32 ? 5e-6 : 3e-5));
      int differ = 0;
      for (int r = 1; r < 5; ++r) differ += dev.run(g, in, 0) != got;
      CHECK(differ == 0);
    }
  }
}

}  // namespace

// One case per shape (no commas in the names: doctest filters split on them), so that each can
// run in a process of its own under a time limit.
TEST_CASE("MQA logits: small problem H 32 D 64 (every logits dtype; clean on and off)" * doctest::test_suite("quick")) { small_problem(32, 64); }
TEST_CASE("MQA logits: small problem H 32 D 128 (every logits dtype; clean on and off)") { small_problem(32, 128); }
TEST_CASE("MQA logits: small problem H 64 D 64 (every logits dtype; clean on and off)") { small_problem(64, 64); }
TEST_CASE("MQA logits: small problem H 64 D 128 (every logits dtype; clean on and off)" * doctest::test_suite("quick")) { small_problem(64, 128); }
TEST_CASE("MQA logits: tiles split in parts (few tiles; empty and single-block ranges)" * doctest::test_suite("quick")) { split_tiles(); }
TEST_CASE("MQA logits: indexer ranges S_q 2048 S_kv 4096") { indexer_problem(2048, 4096); }
TEST_CASE("MQA logits: indexer ranges S_q 4096 S_kv 4096") { indexer_problem(4096, 4096); }
TEST_CASE("MQA logits: indexer ranges S_q 2048 S_kv 65536") { indexer_problem(2048, 65536); }
TEST_CASE("MQA logits: indexer ranges S_q 4096 S_kv 65536") { indexer_problem(4096, 65536); }
TEST_CASE("MQA logits compressed: small problem H 32 D 64 (every logits dtype; clipped and unclipped rows)" * doctest::test_suite("quick")) { small_problem_compressed(32, 64); }
TEST_CASE("MQA logits compressed: small problem H 32 D 128 (every logits dtype; clipped and unclipped rows)") { small_problem_compressed(32, 128); }
TEST_CASE("MQA logits compressed: small problem H 64 D 64 (every logits dtype; clipped and unclipped rows)") { small_problem_compressed(64, 64); }
TEST_CASE("MQA logits compressed: small problem H 64 D 128 (every logits dtype; clipped and unclipped rows)" * doctest::test_suite("quick")) { small_problem_compressed(64, 128); }
TEST_CASE("MQA logits compressed: tiles split in parts (max_seqlen_k 20000)" * doctest::test_suite("quick")) { split_tiles(20000); }
TEST_CASE("MQA logits compressed: tiles split in parts (max_seqlen_k 5000; clipped ranges)") { split_tiles(5000); }
TEST_CASE("MQA logits compressed: indexer ranges S_q 2048 S_kv 4096") { indexer_problem_compressed(2048, 4096); }
TEST_CASE("MQA logits compressed: indexer ranges S_q 4096 S_kv 65536") { indexer_problem_compressed(4096, 65536); }
