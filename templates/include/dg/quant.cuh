// FP8 (E4M3) quantization math shared by the stand-alone quantization kernels
// (kernels/quantize.cu.j2) and any kernel that must reproduce their output bit for bit (a GEMM
// epilogue that writes FP8). docs/quantization.md states the numerics; in short, for each group:
//   amax  = max |x| over the group's elements (NaN above +inf, so a NaN wins),
//   scale = max(amax, amax_floor) / 448, rounded to nearest (pow2: then up to a power of two),
//   q     = E4M3(x * (1 / scale)), both roundings to nearest even, saturating at +-448, NaN -> NaN.
// The maxima are taken on the bit patterns of |x| (unsigned order = float order for non-negative
// floats, and NaN patterns sort above +inf), so the result does not depend on the reduction order.
// An epilogue matches the stand-alone kernel bit for bit when it feeds these functions the values
// that kernel would read: e.g. its FP32 accumulators rounded to BF16 first, to match quantizing the
// BF16 D of the unfused GEMM.
#pragma once
#include <dg/types.cuh>

namespace dg::quant {

constexpr float kE4m3Max = 448.0f;
constexpr int kGroup = 128;        // elements per scale along the quantized axis
constexpr int kElemsPerLane = 16;  // consecutive elements one thread loads, quantizes and stores
constexpr int kLanesPerGroup = kGroup / kElemsPerLane;

// The kernels' argument (host mirror: dg::ops::QuantParams in src/ops/quantize.h). Strides are
// in elements (sf: in its own elements, FP32 or packed words).
struct Params {
  const void* x;          // BF16 or FP32 input
  uint8_t* out;           // E4M3 codes
  void* sf;               // scales: FP32, or UE8M0 codes packed four to a word
  const int32_t* groups;  // per-row groups (indices), group ends (psum) or valid rows (masked)
  int64_t x_ld;           // between rows of x (per-token, per-block) or between K rows (MN-major)
  int64_t x_batch;        // between the [rows, cols] matrices of a batch
  int64_t out_ld;
  int64_t out_batch;
  int64_t sf_ld;          // between K blocks (per-token, MN-major) or 128-row blocks (per-block)
  int64_t sf_batch;
  int32_t rows;           // M (per-token), N (per-block), K (MN-major)
  int32_t cols;           // K (per-token, per-block), MN (MN-major)
  int32_t sf_rows;        // per-token: scale rows written, rows .. sf_rows - 1 as zeros
  int32_t num_groups;
  float amax_floor;
  int32_t pow2;           // scales rounded up to powers of two
};

// The K-grouped kernel's argument (host mirror: dg::ops::KGroupedQuantParams in src/ops/quantize.h).
// One launch quantizes up to kMaxHostGroups groups whose counts come from the host (`ks`), or all
// groups of a device array (`ks_dev`); pointers are already offset to the launch's first group.
constexpr int kMaxHostGroups = 512;
struct KGroupedParams {
  const void* x;          // BF16 or FP32 [x_rows, mn]: the groups' rows one after another
  uint8_t* out;           // E4M3: [128 * out_blocks, mn] (MN-major) or each group's [mn, 128 * blocks]
  float* sf;              // one row of sf_ld scales per 128-row block
  const int32_t* ks_dev;  // the groups' row counts in device memory, or NULL: read ks
  int64_t x_ld;           // between rows of x
  int64_t out_ld;         // between rows of out (MN-major out)
  int64_t sf_ld;          // between K blocks of sf: align(mn, 4)
  int32_t x_rows;         // rows of x the groups may cover (running sums clamped to it)
  int32_t out_blocks;     // 128-row blocks of out that may be written (blocks past it are dropped)
  int32_t mn;
  int32_t num_groups;
  float amax_floor;
  int32_t pow2;           // scales rounded up to powers of two
  int32_t blocks_per_cta; // consecutive 128-row output blocks per CTA
  int32_t reserved;
  int32_t ks[kMaxHostGroups];
};

// Global accesses of 16 bytes (16-byte aligned) and fewer. The loads go through the read-only path
// and do not allocate in L1: every byte is read once.
DG_DEVICE void load16(const void* p, uint32_t (&w)[4]) {
  asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(w[0]), "=r"(w[1]), "=r"(w[2]), "=r"(w[3]) : "l"(p));
}
DG_DEVICE void store16(void* p, uint32_t a, uint32_t b, uint32_t c, uint32_t d) {
  asm volatile("st.global.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(a), "r"(b), "r"(c), "r"(d) : "memory");
}
DG_DEVICE void store8(void* p, uint32_t a, uint32_t b) {  // 8-byte aligned
  asm volatile("st.global.v2.u32 [%0], {%1, %2};" ::"l"(p), "r"(a), "r"(b) : "memory");
}
DG_DEVICE void store4(void* p, uint32_t a) {  // 4-byte aligned
  asm volatile("st.global.u32 [%0], %1;" ::"l"(p), "r"(a) : "memory");
}

// |x| as ordered bits.
DG_DEVICE uint32_t abs_bits(float x) { return __float_as_uint(x) & 0x7fffffffu; }

// The smallest power of two >= s for a finite positive normal s; inf and NaN are kept.
DG_DEVICE float pow2_ceil(float s) {
  uint32_t b = __float_as_uint(s);
  if ((b & 0x7f800000u) != 0x7f800000u && (b & 0x007fffffu) != 0u) b = (b + 0x007fffffu) & 0x7f800000u;
  return __uint_as_float(b);
}

// The group's scale from the bits of its amax. amax_floor is a positive normal float.
DG_DEVICE float scale_of(uint32_t amax_bits, float amax_floor, bool pow2) {
  const uint32_t b = max_of(amax_bits, __float_as_uint(amax_floor));
  const float s = __fdiv_rn(__uint_as_float(b), kE4m3Max);
  return pow2 ? pow2_ceil(s) : s;
}

// What the values are multiplied by: 1 / scale rounded to nearest (exact for powers of two).
DG_DEVICE float inverse_of(float scale) { return __frcp_rn(scale); }

// The UE8M0 code of a power-of-two scale: its FP32 exponent field (0xff for inf and NaN).
DG_DEVICE uint32_t ue8m0_of(float pow2_scale) { return (__float_as_uint(pow2_scale) >> 23) & 0xffu; }

// E4M3 codes of a * ia, b * ib, c * ic, d * id in one word, a's code in the lowest byte (lowest
// address).
DG_DEVICE uint32_t e4m3x4(float a, float b, float c, float d, float ia, float ib, float ic, float id) {
  uint16_t lo, hi;
  // cvt ... e4m3x2 d, x, y puts x's code in the upper byte.
  asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(lo) : "f"(__fmul_rn(b, ib)), "f"(__fmul_rn(a, ia)));
  asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(hi) : "f"(__fmul_rn(d, id)), "f"(__fmul_rn(c, ic)));
  return static_cast<uint32_t>(lo) | (static_cast<uint32_t>(hi) << 16);
}
// E4M3 codes of two values already multiplied by their inverse scale, lo's code in the low byte
// (e4m3x4 is this conversion after the products).
DG_DEVICE uint16_t e4m3x2(float lo, float hi) {
  uint16_t r;
  asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(r) : "f"(hi), "f"(lo));
  return r;
}
DG_DEVICE uint32_t e4m3x4(float a, float b, float c, float d, float inv) { return e4m3x4(a, b, c, d, inv, inv, inv, inv); }

// Maximum over the kLanesPerGroup lanes of a group (aligned runs of lanes in the warp).
DG_DEVICE uint32_t group_max(uint32_t v) {
#pragma unroll
  for (int d = kLanesPerGroup / 2; d > 0; d /= 2) v = max_of(v, __shfl_xor_sync(0xffffffffu, v, d));
  return v;
}

// Loads up to kElemsPerLane consecutive elements from `src` (element n < valid), zeros past them.
// kVec: all kElemsPerLane are valid and `src` is 16-byte aligned.
template <bool kFp32, bool kVec>
DG_DEVICE void load_lane(const void* src, int valid, float (&v)[kElemsPerLane]) {
  if constexpr (kVec && kFp32) {
    uint32_t w[kElemsPerLane / 4][4];
#pragma unroll
    for (int i = 0; i < kElemsPerLane / 4; ++i) load16(static_cast<const float*>(src) + 4 * i, w[i]);
#pragma unroll
    for (int i = 0; i < kElemsPerLane; ++i) v[i] = __uint_as_float(w[i / 4][i % 4]);
  } else if constexpr (kVec) {
    uint32_t w[kElemsPerLane / 8][4];
#pragma unroll
    for (int i = 0; i < kElemsPerLane / 8; ++i) load16(static_cast<const bf16*>(src) + 8 * i, w[i]);
#pragma unroll
    for (int i = 0; i < kElemsPerLane / 2; ++i) {  // BF16 pairs, the lower address in the low half
      v[2 * i] = __uint_as_float(w[i / 4][i % 4] << 16);
      v[2 * i + 1] = __uint_as_float(w[i / 4][i % 4] & 0xffff0000u);
    }
  } else {
#pragma unroll
    for (int i = 0; i < kElemsPerLane; ++i) {
      if (i < valid) v[i] = kFp32 ? static_cast<const float*>(src)[i] : bf16_to_float(static_cast<const bf16*>(src)[i]);
      else v[i] = 0.0f;
    }
  }
}

// Bits of the largest |v[i]|.
DG_DEVICE uint32_t lane_amax(const float (&v)[kElemsPerLane]) {
  uint32_t m = 0;
#pragma unroll
  for (int i = 0; i < kElemsPerLane; ++i) m = max_of(m, abs_bits(v[i]));
  return m;
}

// Quantizes v with `inv` and stores the codes of the first `valid` elements at dst (kVec: all
// kElemsPerLane of them, dst 16-byte aligned).
template <bool kVec>
DG_DEVICE void store_lane(uint8_t* dst, int valid, const float (&v)[kElemsPerLane], float inv) {
  uint32_t w[kElemsPerLane / 4];
#pragma unroll
  for (int i = 0; i < kElemsPerLane / 4; ++i) w[i] = e4m3x4(v[4 * i], v[4 * i + 1], v[4 * i + 2], v[4 * i + 3], inv);
  if constexpr (kVec) {
    store16(dst, w[0], w[1], w[2], w[3]);
  } else {
#pragma unroll
    for (int i = 0; i < kElemsPerLane; ++i)
      if (i < valid) dst[i] = static_cast<uint8_t>(w[i / 4] >> (8 * (i % 4)));
  }
}

// Zero codes for the first `valid` of kElemsPerLane bytes at dst.
template <bool kVec>
DG_DEVICE void store_zeros(uint8_t* dst, int valid) {
  if constexpr (kVec) {
    store16(dst, 0u, 0u, 0u, 0u);
  } else {
    for (int i = 0; i < valid && i < kElemsPerLane; ++i) dst[i] = 0;
  }
}

}  // namespace dg::quant
