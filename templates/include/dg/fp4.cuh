// NVFP4 helpers: E2M1 (4-bit float: 1 sign, 2 exponent, 1 mantissa bit; magnitudes 0, 0.5, 1, 1.5,
// 2, 3, 4, 6) packed two per byte (low nibble = even element), and E4M3 block scales.
//
// SM90 has no FP4 conversion instruction. There we decode with byte permutes (PRMT) into int8
// values that are twice the E2M1 value (so they are integers: 0, 1, 2, 3, 4, 6, 8, 12) and take dot
// products with dp4a: exact int32 sums, scaled by 1/4 afterwards. SM100 has cvt.rn.f16x2.e2m1x2.
#pragma once
#include "dg/types.cuh"

namespace dg::fp4 {

// Byte permute: output byte i is byte sel[4i+2:4i] of {hi:lo} (0-3 from lo, 4-7 from hi); when
// sel bit 4i+3 is set the output byte is the selected byte's sign bit replicated instead.
DG_DEVICE uint32_t prmt(uint32_t lo, uint32_t hi, uint32_t sel) {
  uint32_t d;
  asm("prmt.b32 %0, %1, %2, %3;" : "=r"(d) : "r"(lo), "r"(hi), "r"(sel));
  return d;
}

// acc + sum of the four int8 x int8 products of a and b.
DG_DEVICE int32_t dp4a(uint32_t a, uint32_t b, int32_t acc) {
  int32_t d;
  asm("dp4a.s32.s32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(acc));
  return d;
}

// 2 * |e2m1| for the magnitude code eem = 0..7, one byte each: 0 1 2 3 | 4 6 8 12.
constexpr uint32_t kMag2Lo = 0x03020100u;
constexpr uint32_t kMag2Hi = 0x0C080604u;
// The same values negated (int8): 0 -1 -2 -3 | -4 -6 -8 -12.
constexpr uint32_t kNeg2Lo = 0xFDFEFF00u;
constexpr uint32_t kNeg2Hi = 0xF4F8FAFCu;

// Four E2M1 codes (the low 16 bits of `nibbles`, code i in bits 4i..4i+3) -> four int8 values
// 2 * e2m1, signed. Used for the reused vector, where a few extra operations do not matter.
DG_DEVICE uint32_t e2m1x4_to_s8x4_times2(uint32_t nibbles) {
  const uint32_t mag = nibbles & 0x7777u;
  const uint32_t pos = prmt(kMag2Lo, kMag2Hi, mag);
  const uint32_t neg = prmt(kNeg2Lo, kNeg2Hi, mag);
  // byte i from `neg` (index i + 4) when code i has its sign bit (bit 3) set.
  const uint32_t sel = 0x3210u | ((nibbles >> 1) & 0x4444u);
  return prmt(pos, neg, sel);
}

// The low word of the magnitude table, for the hot loop: kMag2Lo as a value ptxas cannot prove
// uniform (%laneid >> 5 is 0). PRMT's first operand must be a general register; a literal table
// word is kept in a uniform register and copied into a general one before most PRMTs (20 copies
// per 32 lookups measured), which costs an issue slot each. Call once, outside the loop.
DG_DEVICE uint32_t mag2_table_lo() {
  uint32_t lane;
  asm("mov.u32 %0, %%laneid;" : "=r"(lane));
  return kMag2Lo + (lane >> 5);
}

// For the streamed matrix: one 32-bit word of eight E2M1 codes times eight int8 values of the
// vector (b_lo: elements 0-3, b_hi: elements 4-7, each 2 * e2m1) accumulated into two int32 sums:
// acc_pos takes the products of the non-negative codes and acc_neg those of the negative ones, so
// that the dot product is acc_pos - acc_neg (times 1/4). The selector's bit 3 (the code's sign)
// makes PRMT return 0 for negative codes, so no masking is needed: 7 ALU operations + 4 dp4a.
// `table_lo` is kMag2Lo, best from mag2_table_lo().
DG_DEVICE void e2m1x8_dot_s8(uint32_t w, uint32_t b_lo, uint32_t b_hi, uint32_t table_lo, int32_t& acc_pos,
                             int32_t& acc_neg) {
  const uint32_t wx = w ^ 0x88888888u;
  acc_pos = dp4a(prmt(table_lo, kMag2Hi, w), b_lo, acc_pos);
  acc_neg = dp4a(prmt(table_lo, kMag2Hi, wx), b_lo, acc_neg);
  acc_pos = dp4a(prmt(table_lo, kMag2Hi, w >> 16), b_hi, acc_pos);
  acc_neg = dp4a(prmt(table_lo, kMag2Hi, wx >> 16), b_hi, acc_neg);
}

// Two E4M3 codes (the low 16 bits, low byte first) -> two floats, exactly (every E4M3 value is an
// FP16 value). cvt.f16x2.e4m3x2 exists from sm_89 on. The codes come in a 32-bit register, as
// loaded by ld.u16 into one.
DG_DEVICE void e4m3x2_to_float2(uint32_t codes, float& lo, float& hi) {
  uint32_t h2;
  asm("{\n .reg .b16 c, u;\n mov.b32 {c, u}, %1;\n cvt.rn.f16x2.e4m3x2 %0, c;\n}" : "=r"(h2) : "r"(codes));
  asm("{\n .reg .b16 l, h;\n mov.b32 {l, h}, %2;\n cvt.f32.f16 %0, l;\n cvt.f32.f16 %1, h;\n}"
      : "=f"(lo), "=f"(hi) : "r"(h2));
}

DG_DEVICE float e4m3_to_float(uint8_t code) {
  float lo, hi;
  e4m3x2_to_float2(code, lo, hi);
  return lo;
}

#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ >= 1000)
// SM100: hardware E2M1 -> f16x2. One word of eight codes -> four f16x2 (h[i] holds the two codes
// of byte i, the low nibble in the low half).
DG_DEVICE void e2m1x8_to_f16x2x4(uint32_t w, uint32_t (&h)[4]) {
  asm("{\n .reg .b8 b0, b1, b2, b3;\n mov.b32 {b0, b1, b2, b3}, %4;\n"
      " cvt.rn.f16x2.e2m1x2 %0, b0;\n cvt.rn.f16x2.e2m1x2 %1, b1;\n"
      " cvt.rn.f16x2.e2m1x2 %2, b2;\n cvt.rn.f16x2.e2m1x2 %3, b3;\n}"
      : "=r"(h[0]), "=r"(h[1]), "=r"(h[2]), "=r"(h[3]) : "r"(w));
}
#endif

// d = a * b + c on f16x2.
DG_DEVICE uint32_t hfma2(uint32_t a, uint32_t b, uint32_t c) {
  uint32_t d;
  asm("fma.rn.f16x2 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
  return d;
}

// The two halves of an f16x2 as floats, summed.
DG_DEVICE float f16x2_sum(uint32_t h2) {
  float lo, hi;
  asm("{\n .reg .b16 l, h;\n mov.b32 {l, h}, %2;\n cvt.f32.f16 %0, l;\n cvt.f32.f16 %1, h;\n}"
      : "=f"(lo), "=f"(hi) : "r"(h2));
  return lo + hi;
}

}  // namespace dg::fp4
