// Fused SM90 GEMM epilogues (docs/gemm_epilogues.md): what a consumer warp-group does to its
// accumulator block before the store (sm90_store.cuh) writes it.
//   1. v = alpha * acc + bias[column]                      (bias: dense calls, optional)
//   2. SwiGLU: out[c] = silu(v[gate c]) * v[up c]          (optional; halves the columns)
//   3. FP8 output: per row and 128 output columns, the amax, the scale and E4M3 codes, with the
//      arithmetic of the stand-alone quantization (quant.cuh) applied to the BF16-rounded values,
//      so that the codes and scales equal quantizing the BF16 D of the same call bit for bit.
// Every step rewrites acc in place: afterwards acc[i][0 .. kOutN / 2) is the WGMMA fragment of the
// output's kOutN columns (FP8: already multiplied by the inverse scales, converted by the store).
//
// The fragment: per 64-row m-iteration i, a thread holds rows r = warp * 16 + lane / 4 and r + 8,
// and of each 8-column group g the columns g * 8 + (lane % 4) * 2 + {0, 1}: acc[i][4g + {0, 1}]
// in row r, acc[i][4g + {2, 3}] in row r + 8. The four lanes of a quad hold the whole of a row.
//
// SwiGLU's B interleaves gate and up rows in blocks of 128 (dg_swiglu_interleave_rows): rows
// [256 j, 256 j + 128) are gate rows 128 j.., the next 128 the matching up rows. A 256-column tile
// then holds gate and up for the same 128 output columns, in the same thread (groups g and g + 16),
// and FP8 1D2D weight scales of 128-row blocks carry over to the interleaved B unchanged.
#pragma once
#include <dg/quant.cuh>
#include <dg/types.cuh>

namespace dg::epilogue {

enum class Activation : int { kNone = 0, kSwiGlu = 1 };
enum class Bias : int { kNone = 0, kBf16 = 1, kFp32 = 2 };
// FP8 D's scales: FP32 (MN-major, one per row and 128 columns), or UE8M0 codes packed four to an
// INT32 word (the first 128-column group in the low byte).
enum class Scales : int { kNone = 0, kFp32 = 1, kPackedUe8m0 = 2 };

constexpr uint32_t kSwiGluBlock = 128;  // gate / up interleaving of B's rows
constexpr uint32_t kScaleGroup = quant::kGroup;

// The fused epilogue's arguments (a member of the GEMM's kernel parameter).
struct FusedParams {
  const void* bias;     // [N] per GEMM column (before SwiGLU), BF16 or FP32
  void* sf;             // FP8 D's scales: sf[group * sf_batch + (column group) * sf_ld + row]
  int64_t sf_ld;        // between 128-column groups (packed: between words of four groups)
  int64_t sf_batch;     // between the groups of a masked call (0 otherwise)
  uint32_t sf_rows;     // rows of the scale layout per column group: align(rows, 4)
  uint32_t sf_groups;   // ceil(output columns / 128)
  float amax_floor;
  uint32_t pow2;        // FP32 scales rounded up to powers of two (packed scales always are)
};

// SwiGLU runs in the epilogue, where the math warp-groups issue no WGMMA: its cost is exposed. Its
// exp2 and reciprocals run on the special-function unit, a fraction of the FP32 rate, so it spends
// few MUFU operations (silu2, Fused::swiglu).
DG_DEVICE float fast_ex2(float x) {
  float r;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
  return r;
}
DG_DEVICE float fast_rcp(float x) {
  float r;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
  return r;
}
// max(x, lo), NaN if x is NaN.
DG_DEVICE float max_nan(float x, float lo) {
  float r;
  asm("max.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(x), "f"(lo));
  return r;
}

// 1 / p for p in [1, 2^125] on the FMA pipe: a first guess from the bit pattern (within 5.1%) and
// three Newton steps (at most 0.51 ulp on 3 million values spread over the range).
constexpr uint32_t kRcpGuess = 0x7ef311c3u;
DG_DEVICE float rcp_newton(float p) {
  float y = __uint_as_float(kRcpGuess - __float_as_uint(p));
#pragma unroll
  for (int i = 0; i < 3; ++i) y = __fmaf_rn(y, __fmaf_rn(-p, y, 1.0f), y);
  return y;
}

// silu(x) = x / (1 + exp(-x)) of two values with one reciprocal: r = 1 / (d0 d1) gives 1 / d0 =
// r d1 and 1 / d1 = r d0 (within 5 ulp, and up to |x| ulp more for x < -1: the rounding of x log2(e)
// before exp2). x is first raised to kSiluMinX, so that d0 d1 < 2^125 stays finite: below it silu(x)
// is within 1e-17 of 0 and returns silu(kSiluMinX) (-inf included); NaN stays NaN. The reciprocal
// runs on the special-function unit (kMufuRcp: three MUFU operations per pair) or on the FMA pipe
// (two MUFU operations, and seven integer and FMA ones for the third).
constexpr float kSiluMinX = -43.0f;  // exp(43) < 2^62.1
constexpr float kMinusLog2e = -1.4426950408889634f;
template <bool kMufuRcp>
DG_DEVICE void silu2(float& x0, float& x1) {
  x0 = max_nan(x0, kSiluMinX);
  x1 = max_nan(x1, kSiluMinX);
  const float d0 = 1.0f + fast_ex2(x0 * kMinusLog2e), d1 = 1.0f + fast_ex2(x1 * kMinusLog2e);
  const float r = kMufuRcp ? fast_rcp(d0 * d1) : rcp_newton(d0 * d1);
  x0 *= r * d1;
  x1 *= r * d0;
}

// max of the two 16-bit halves of a and b, each unsigned.
DG_DEVICE uint32_t max_u16x2(uint32_t a, uint32_t b) {
  uint32_t r;
  asm("max.u16x2 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
  return r;
}

template <Activation kAct, Bias kBias, Scales kScales, uint32_t kMIters, uint32_t kBlockN>
struct Fused {
  static constexpr bool kSwiGlu = kAct == Activation::kSwiGlu;
  static constexpr uint32_t kOutN = kSwiGlu ? kBlockN / 2 : kBlockN;
  static constexpr uint32_t kGroups = kBlockN / 8;  // 8-column groups of the accumulator
  static constexpr bool kActive = kAct != Activation::kNone || kBias != Bias::kNone || kScales != Scales::kNone;
  static_assert(!kSwiGlu || kBlockN == 2 * kSwiGluBlock, "SwiGLU tiles hold one gate and one up block: BLOCK_N 256");
  static_assert(kScales == Scales::kNone || kOutN % kScaleGroup == 0, "FP8 D: whole 128-column groups per tile");

  // Step 1: acc = alpha * acc + bias, columns n0.. of the GEMM's n (bias past n: 0).
  template <class Acc>
  DG_DEVICE static void scale_bias(Acc& acc, float alpha, const void* bias, uint32_t n0, uint32_t n) {
    const uint32_t lane = threadIdx.x % 32;
#pragma unroll
    for (uint32_t g = 0; g < kGroups; ++g) {
      float b0 = 0.0f, b1 = 0.0f;
      if constexpr (kBias != Bias::kNone) {
        // D's rows are 16-byte multiples, so N is even and a pair is in or out together.
        const uint32_t col = n0 + g * 8 + (lane % 4) * 2;
        if (col < n) {
          if constexpr (kBias == Bias::kFp32) {
            const f32x2 v = *reinterpret_cast<const f32x2*>(static_cast<const float*>(bias) + col);
            b0 = v.x, b1 = v.y;
          } else {
            const uint32_t w = *reinterpret_cast<const uint32_t*>(static_cast<const bf16*>(bias) + col);
            b0 = __uint_as_float(w << 16), b1 = __uint_as_float(w & 0xffff0000u);
          }
        }
      }
#pragma unroll
      for (uint32_t i = 0; i < kMIters; ++i) {
        acc[i][g * 4 + 0] = __fmaf_rn(alpha, acc[i][g * 4 + 0], b0);
        acc[i][g * 4 + 1] = __fmaf_rn(alpha, acc[i][g * 4 + 1], b1);
        acc[i][g * 4 + 2] = __fmaf_rn(alpha, acc[i][g * 4 + 2], b0);
        acc[i][g * 4 + 3] = __fmaf_rn(alpha, acc[i][g * 4 + 3], b1);
      }
    }
  }

  // Step 2: gate in groups [0, 16), up in [16, 32): the output's 128 columns in groups [0, 16).
  // One pair in kMufuRcpEvery takes its reciprocal on the special-function unit, the others on the
  // FMA pipe: the unit's load drops by a quarter while the FMA pipe takes on about as much (exp2
  // stays on the unit).
  static constexpr uint32_t kMufuRcpEvery = 4;
  template <class Acc>
  DG_DEVICE static void swiglu(Acc& acc) {
#pragma unroll
    for (uint32_t i = 0; i < kMIters; ++i)
#pragma unroll
      for (uint32_t r = 0; r < kOutN / 2; r += 2) {
        float g0 = acc[i][r], g1 = acc[i][r + 1];
        if ((r / 2) % kMufuRcpEvery == kMufuRcpEvery - 1) silu2<true>(g0, g1);  // resolved when unrolled
        else silu2<false>(g0, g1);
        acc[i][r] = g0 * acc[i][r + kOutN / 2];
        acc[i][r + 1] = g1 * acc[i][r + 1 + kOutN / 2];
      }
  }

  // Step 3 for one row half h (0: row r, 1: row r + 8) of m-iteration i and 128-column group q:
  // returns the scale after multiplying the group's values by its inverse.
  template <class Acc>
  DG_DEVICE static float quantize_group(Acc& acc, uint32_t i, uint32_t h, uint32_t q, float amax_floor, bool pow2) {
    constexpr uint32_t kGroupsPerScale = kScaleGroup / 8;
    // The maxima of |BF16| bit patterns, per half word (quant.cuh's order: BF16 values are the upper
    // halves of their FP32 patterns): two operations per pair of values.
    uint32_t amax2 = 0;
#pragma unroll
    for (uint32_t g = q * kGroupsPerScale; g < (q + 1) * kGroupsPerScale; ++g) {
      float &lo = acc[i][g * 4 + 2 * h], &hi = acc[i][g * 4 + 2 * h + 1];
      const uint32_t w = float2_to_bf16x2(lo, hi).bits;
      amax2 = max_u16x2(amax2, w & 0x7fff7fffu);
      lo = __uint_as_float(w << 16);
      hi = __uint_as_float(w & 0xffff0000u);
    }
    uint32_t amax = max_of(amax2 << 16, amax2 & 0xffff0000u);
    // The quad's four lanes hold the row's 128 columns.
    amax = max_of(amax, __shfl_xor_sync(0xffffffffu, amax, 1));
    amax = max_of(amax, __shfl_xor_sync(0xffffffffu, amax, 2));
    const float scale = quant::scale_of(amax, amax_floor, pow2);
    const float inv = quant::inverse_of(scale);
#pragma unroll
    for (uint32_t g = q * kGroupsPerScale; g < (q + 1) * kGroupsPerScale; ++g)
#pragma unroll
      for (uint32_t e = 0; e < 2; ++e) acc[i][g * 4 + 2 * h + e] = __fmul_rn(acc[i][g * 4 + 2 * h + e], inv);
    return scale;
  }

  // Writes one scale (lane 0 of the quad). Rows outside their group get 0 (code 0 when packed);
  // a packed word's codes past the last group are 0.
  DG_DEVICE static void write_scale(const FusedParams& f, uint32_t group, uint32_t row, uint32_t q_global, float scale,
                                    bool valid) {
    if (row >= f.sf_rows) return;
    if constexpr (kScales == Scales::kFp32) {
      float* sf = static_cast<float*>(f.sf) + group * f.sf_batch + q_global * f.sf_ld + row;
      *sf = valid ? scale : 0.0f;
    } else {
      uint8_t* word = reinterpret_cast<uint8_t*>(static_cast<uint32_t*>(f.sf) + group * f.sf_batch +
                                                 (q_global / 4) * f.sf_ld + row);
      word[q_global % 4] = valid ? static_cast<uint8_t>(quant::ue8m0_of(scale)) : 0;
      if (q_global + 1 == f.sf_groups)
        for (uint32_t b = q_global % 4 + 1; b < 4; ++b) word[b] = 0;
    }
  }

  // The whole epilogue. n0 / n: the tile's first column and the GEMM's columns (before SwiGLU);
  // row_valid[i][h]: the thread's rows that belong to the output (FP8 scales of other rows are 0);
  // sf_row0 / sf_group: the scale layout's row of the thread's first row, and the masked group.
  template <class Acc>
  DG_DEVICE static void run(Acc& acc, float alpha, const FusedParams& f, uint32_t n0, uint32_t n,
                            const bool (&row_valid)[kMIters][2], uint32_t sf_row0, uint32_t sf_group) {
    if (kBias != Bias::kNone || alpha != 1.0f) scale_bias(acc, alpha, f.bias, n0, n);
    if constexpr (kSwiGlu) swiglu(acc);
    if constexpr (kScales != Scales::kNone) {
      const bool pow2 = kScales == Scales::kPackedUe8m0 || f.pow2 != 0;
      const uint32_t q0 = (kSwiGlu ? n0 / 2 : n0) / kScaleGroup, lane = threadIdx.x % 32;
#pragma unroll
      for (uint32_t i = 0; i < kMIters; ++i)
#pragma unroll
        for (uint32_t h = 0; h < 2; ++h)
#pragma unroll
          for (uint32_t q = 0; q < kOutN / kScaleGroup; ++q) {
            const float scale = quantize_group(acc, i, h, q, f.amax_floor, pow2);
            if (lane % 4 == 0 && q0 + q < f.sf_groups)
              write_scale(f, sf_group, sf_row0 + i * 64 + h * 8, q0 + q, scale, row_valid[i][h]);
          }
    }
  }
};

}  // namespace dg::epilogue
