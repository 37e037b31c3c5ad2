// Scalar types for device code compiled by NVRTC without any CUDA toolkit header.
// Storage types are plain structs; conversions go through PTX cvt so that rounding matches the
// hardware (round-to-nearest-even) on every target.
#pragma once

#if defined(__CUDACC_RTC__)
typedef signed char int8_t;
typedef unsigned char uint8_t;
typedef short int16_t;
typedef unsigned short uint16_t;
typedef int int32_t;
typedef unsigned int uint32_t;
typedef long long int64_t;
typedef unsigned long long uint64_t;
typedef unsigned long size_t;  // as NVRTC 13's builtin header declares it (LP64)
#else
// Compiled by nvcc (standalone harnesses): the toolkit's headers already define these.
#include <stddef.h>
#include <stdint.h>
#endif
static_assert(sizeof(void*) == 8, "64-bit device code only");

#define DG_DEVICE __device__ __forceinline__
#define DG_HOST_DEVICE __host__ __device__ __forceinline__

namespace dg {

struct alignas(2) bf16 { uint16_t bits; };
struct alignas(4) bf16x2 { uint32_t bits; };
struct alignas(2) half { uint16_t bits; };
struct alignas(4) halfx2 { uint32_t bits; };
struct alignas(1) fp8_e4m3 { uint8_t bits; };
struct alignas(1) fp8_e5m2 { uint8_t bits; };

// A CUtensorMap as the driver encodes it (128 opaque bytes, 64-byte aligned). Kernels take it as
// `const __grid_constant__ TmaDescriptor` so its address is in parameter space, as TMA requires.
struct alignas(64) TmaDescriptor { uint64_t opaque[16]; };

DG_DEVICE float bf16_to_float(bf16 v) { return __uint_as_float(static_cast<uint32_t>(v.bits) << 16); }

DG_DEVICE bf16 float_to_bf16(float f) {
  uint16_t r;
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(r) : "f"(f));
  return bf16{r};
}

// Packs (lo, hi) so that `lo` lands in the low 16 bits, i.e. at the lower address in memory.
DG_DEVICE bf16x2 float2_to_bf16x2(float lo, float hi) {
  uint32_t r;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  return bf16x2{r};
}

DG_DEVICE float half_to_float(half v) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(v.bits));
  return f;
}

DG_DEVICE half float_to_half(float f) {
  uint16_t r;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(r) : "f"(f));
  return half{r};
}

DG_DEVICE float fp8_e4m3_to_float(fp8_e4m3 v) {
  uint16_t h2;  // cvt to f16x2 exists for e4m3x2; take the low half
  asm("{\n .reg .b32 t;\n cvt.rn.f16x2.e4m3x2 t, %1;\n mov.b32 {%0, _}, t;\n}" : "=h"(h2) : "h"(static_cast<uint16_t>(v.bits)));
  return half_to_float(half{h2});
}

template <typename T> DG_HOST_DEVICE constexpr T ceil_div(T a, T b) { return (a + b - 1) / b; }
template <typename T> DG_HOST_DEVICE constexpr T min_of(T a, T b) { return a < b ? a : b; }
template <typename T> DG_HOST_DEVICE constexpr T max_of(T a, T b) { return a < b ? b : a; }

struct alignas(8) f32x2 { float x, y; };
struct alignas(16) f32x4 { float x, y, z, w; };
struct alignas(8) u32x2 { uint32_t x, y; };
template <typename T> DG_HOST_DEVICE constexpr T align_up(T a, T b) { return ceil_div(a, b) * b; }

}  // namespace dg
