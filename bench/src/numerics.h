// Host-side numerics shared by dg-bench and its tests: DeepGEMM's calc_diff
// (docs/README.md#how-results-are-checked), BF16 and FP8 E4M3 decoding, FLOP and byte counts, and
// the device peak. Header-only, no CUDA.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>

namespace dgb {

// Sums of x*y, x^2, y^2 in double precision, the parts of calc_diff, plus a count of non-finite
// elements of x (the output under test: a poisoned, unwritten element shows up here).
struct DiffSums {
  double xy = 0, xx = 0, yy = 0;
  int64_t nonfinite = 0;
};

// calc_diff(x, y) = 1 - 2 * sum(x*y) / sum(x^2 + y^2), 0 when both are all zero.
inline double calc_diff(const DiffSums& s) {
  const double denom = s.xx + s.yy;
  if (denom == 0) return 0.0;
  return 1.0 - 2.0 * s.xy / denom;
}

template <typename X, typename Y>
inline double calc_diff(const X* x, const Y* y, int64_t n) {
  DiffSums s;
  for (int64_t i = 0; i < n; ++i) {
    const double a = static_cast<double>(x[i]), b = static_cast<double>(y[i]);
    s.xy += a * b;
    s.xx += a * a;
    s.yy += b * b;
  }
  return calc_diff(s);
}

inline float bf16_to_float(uint16_t bits) {
  const uint32_t u = static_cast<uint32_t>(bits) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// Round to nearest even, NaN kept quiet.
inline uint16_t float_to_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40);
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}

// FP8 E4M3 "fn": bias 7, no infinities, S.1111.111 is NaN, max 448.
inline float e4m3_to_float(uint8_t v) {
  const int sign = v >> 7, exp = (v >> 3) & 0xf, man = v & 7;
  float mag;
  if (exp == 0xf && man == 7) return std::nanf("");
  if (exp == 0) mag = std::ldexp(static_cast<float>(man) / 8.0f, -6);
  else mag = std::ldexp(1.0f + static_cast<float>(man) / 8.0f, exp - 7);
  return sign ? -mag : mag;
}

// 2 * M * N * K * G.
inline double gemm_flops(int64_t m, int64_t n, int64_t k, int64_t g = 1) {
  return 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k) * static_cast<double>(g);
}

// Bytes a dense GEMM moves at least (as DeepGEMM's tests count them): A, its scales, B, its scales, D, and C when
// accumulating, each once. Scales: FP32, per token x 128 K for A (1x128), per 128x128 block for B.
struct GemmBytes {
  int a_elem = 2, b_elem = 2, d_elem = 2;  // bytes per element
  bool sfa_per_token = false;              // FP32 [M, ceil(K/128)]
  bool sfb_per_block = false;              // FP32 [ceil(N/128), ceil(K/128)]
  bool with_c = false;
};

inline double gemm_bytes(int64_t m, int64_t n, int64_t k, const GemmBytes& b) {
  const double kb = static_cast<double>((k + 127) / 128);
  double bytes = static_cast<double>(m) * k * b.a_elem + static_cast<double>(n) * k * b.b_elem +
                 static_cast<double>(m) * n * b.d_elem;
  if (b.sfa_per_token) bytes += 4.0 * m * kb;
  if (b.sfb_per_block) bytes += 4.0 * static_cast<double>((n + 127) / 128) * kb;
  if (b.with_c) bytes += static_cast<double>(m) * n * b.d_elem;
  return bytes;
}

// Bytes an M-grouped GEMM moves at least: `rows` valid rows of A (and their scales) and of D, and
// B (and its per-block scales) of the `groups` groups that have rows. Padding and masked-off rows
// are not counted, nor the group tensor.
inline double grouped_gemm_bytes(int64_t rows, int64_t groups, int64_t n, int64_t k, const GemmBytes& b) {
  const double kb = static_cast<double>((k + 127) / 128);
  double bytes = static_cast<double>(rows) * k * b.a_elem + static_cast<double>(groups) * n * k * b.b_elem +
                 static_cast<double>(rows) * n * b.d_elem;
  if (b.sfa_per_token) bytes += 4.0 * rows * kb;
  if (b.sfb_per_block) bytes += 4.0 * static_cast<double>(groups) * static_cast<double>((n + 127) / 128) * kb;
  return bytes;
}

// Dense tensor-core FLOPs per clock per SM, and the clock the datasheet peaks assume. SM90 (H100,
// H200): 4096 BF16 / 8192 FP8 at 1830 MHz, i.e. 989 / 1979 TFLOPS with 132 SMs. Zero when unknown.
inline double dense_flops_per_clock_per_sm(int cc_major, bool fp8) {
  if (cc_major == 9) return fp8 ? 8192.0 : 4096.0;
  if (cc_major == 10) return fp8 ? 16384.0 : 8192.0;  // B200 datasheet, not yet measured here
  return 0.0;
}
inline double datasheet_clock_mhz(int cc_major) {
  if (cc_major == 9) return 1830.0;
  if (cc_major == 10) return 1965.0;
  return 0.0;
}
// TFLOPS; 0 when the architecture is unknown.
inline double peak_tflops(int cc_major, int sm_count, double clock_mhz, bool fp8) {
  return dense_flops_per_clock_per_sm(cc_major, fp8) * sm_count * clock_mhz * 1e6 / 1e12;
}

}  // namespace dgb
