// Host-side number formats and helpers shared by the GPU tests: BF16 and E4M3 conversions (round
// to nearest even, as the hardware does), a fast reproducible RNG, a parallel loop over the
// host's cores (data generation dominates the tests' time), and DeepGEMM's calc_diff.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

namespace dg::test {

inline uint16_t f2bf(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return 0x7fc0;
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}

inline float bf2f(uint16_t b) {
  const uint32_t u = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// A word of an FP32 output, or of a BF16 one zero-extended (DeviceBuffer::download_words), as a value.
inline double word_value(uint32_t word, bool bf16) {
  if (bf16) return bf2f(static_cast<uint16_t>(word));
  float f;
  std::memcpy(&f, &word, 4);
  return f;
}

inline float e4m3_decode(uint8_t v) {
  const int s = v >> 7, e = (v >> 3) & 15, m = v & 7;
  float r;
  if (e == 15 && m == 7) r = NAN;
  else if (e == 0) r = std::ldexp(m / 8.0f, -6);
  else r = std::ldexp(1.0f + m / 8.0f, e - 7);
  return s ? -r : r;
}

inline float e4m3_to_f(uint8_t v) {
  static const std::vector<float> table = [] {
    std::vector<float> t(256);
    for (int i = 0; i < 256; ++i) t[i] = e4m3_decode(static_cast<uint8_t>(i));
    return t;
  }();
  return table[v];
}

// Round to nearest even, saturating at 448 (inputs are finite and scaled into range).
inline uint8_t f_to_e4m3(float x) {
  const uint8_t sign = x < 0 ? 0x80 : 0;
  const float a = std::fabs(x);
  if (a >= 448.f) return sign | 0x7e;
  if (a < 0.015625f) return sign | static_cast<uint8_t>(std::nearbyint(a * 512.f));  // subnormals: m / 8 * 2^-6
  uint32_t u;
  std::memcpy(&u, &a, 4);
  u += 0x7ffffu + ((u >> 20) & 1u);
  const int e = static_cast<int>((u >> 23) & 0xff) - 127 + 7;
  return sign | static_cast<uint8_t>(e << 3) | static_cast<uint8_t>((u >> 20) & 7);
}

// The entries of one row of MQA logits words (FP32, or BF16 zero-extended) that break the masks:
// [lo, hi) finite (not -inf); the rest of [0, cols) -inf with clean_logits (anything without);
// the row padding [cols, ld) untouched, still DeviceBuffer::poison's all-ones bytes.
inline int64_t bad_logits_in_row(const uint32_t* row, int64_t ld, int64_t cols, int64_t lo, int64_t hi, bool bf16,
                                 bool clean) {
  const uint32_t ninf = bf16 ? 0xff80u : 0xff800000u, poison = bf16 ? 0xffffu : 0xffffffffu;
  int64_t bad = 0;
  for (int64_t j = 0; j < ld; ++j) {
    const uint32_t v = row[j];
    bool ok;
    if (j >= cols) ok = v == poison;
    else if (j >= lo && j < hi) ok = v != ninf && std::isfinite(word_value(v, bf16));
    else ok = !clean || v == ninf;
    bad += !ok;
  }
  return bad;
}

// xorshift64*: fast, reproducible uniform values in [-2, 2).
struct Rng {
  uint64_t s;
  explicit Rng(uint64_t seed) : s(seed * 0x9e3779b97f4a7c15ull + 1) {}
  uint64_t next() {
    s ^= s >> 12, s ^= s << 25, s ^= s >> 27;
    return s * 0x2545f4914f6cdd1dull;
  }
  float uniform() { return static_cast<float>(next() >> 40) * (4.0f / 16777216.0f) - 2.0f; }
  int64_t below(int64_t n) { return static_cast<int64_t>(next() % static_cast<uint64_t>(n)); }
};

// Runs f(i) for i in [0, n) on the host's cores.
template <typename F>
void parallel_for(int64_t n, F&& f) {
  const int64_t workers = std::max<int64_t>(1, std::min<int64_t>(n, std::thread::hardware_concurrency()));
  std::vector<std::thread> threads;
  for (int64_t w = 0; w < workers; ++w)
    threads.emplace_back([&, w] {
      for (int64_t i = w; i < n; i += workers) f(i);
    });
  for (auto& t : threads) t.join();
}

// 1 - 2 xy / (xx + yy) over the pairs (DeepGEMM's accuracy metric); 1 if any output is not finite.
inline double calc_diff(const std::vector<double>& ref, const std::vector<double>& out) {
  double xy = 0, xx = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    if (!std::isfinite(out[i])) return 1.0;
    xy += ref[i] * out[i];
    xx += ref[i] * ref[i] + out[i] * out[i];
  }
  return xx == 0 ? 0.0 : 1.0 - 2.0 * xy / xx;
}

}  // namespace dg::test
