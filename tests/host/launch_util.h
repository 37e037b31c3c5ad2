// What the launch tests share: device addresses that are never dereferenced, dg_tensor
// descriptors for a scope, the fake driver's view of an encoded TMA map, and the fake device's size.
#pragma once
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "dg.h"
#include "fake_driver/fake_cuda.h"
#include "ops/gemm.h"
#include "runtime/tma.h"

namespace dg::test {

constexpr int kSms = 132;  // the fake device's

inline int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Distinct, 256-byte aligned addresses 2^36 bytes apart that are never dereferenced.
inline void* fake_address(int i) { return reinterpret_cast<void*>(0x7f0000000000ull + (uint64_t(i) << 36)); }

// A dg_tensor for the scope; empty strides = contiguous.
struct Tensor {
  dg_tensor* t = nullptr;
  Tensor(void* data, dg_dtype dtype, std::vector<int64_t> sizes, std::vector<int64_t> strides = {}) {
    REQUIRE(dg_tensor_create(&t, data, dtype, int32_t(sizes.size()), sizes.data(),
                             strides.empty() ? nullptr : strides.data()) == DG_SUCCESS);
  }
  ~Tensor() { dg_tensor_destroy(t); }
  Tensor(const Tensor&) = delete;
  Tensor& operator=(const Tensor&) = delete;
};

// n / d as the kernels divide with a prepared divider (sched::FastDiv).
inline uint32_t fast_div_apply(const dg::ops::FastDiv& f, uint32_t n) {
  return static_cast<uint32_t>((((uint64_t(n) * f.mul) >> 32) + n) >> f.shift);
}

// The SM90 GEMM tile walk with the launch's divisors (sched::raster over WalkDivisors) against plain
// division: each unit of the units_m x units_n grid lands where bands of `band` lines put it, and
// per_slot divides by the grid's units.
inline void check_walk(const dg::ops::WalkDivisors& w, int64_t units_m, int64_t units_n, uint32_t band, bool along_n) {
  CAPTURE(units_m);
  CAPTURE(units_n);
  CAPTURE(band);
  CAPTURE(along_n);
  const uint32_t um_n = uint32_t(units_m), un_n = uint32_t(units_n), units = um_n * un_n;
  CHECK(w.per_slot.d == units);
  int bad = 0;
  for (uint32_t u = 0; u < units; ++u) {
    uint32_t rm, rn;  // raster() with plain division
    if (!along_n) {
      const uint32_t per = band * un_n, b = u / per, in = u % per, rows = std::min(band, um_n - b * band);
      rm = b * band + in % rows, rn = in / rows;
    } else {
      const uint32_t per = band * um_n, b = u / per, in = u % per, cols = std::min(band, un_n - b * band);
      rn = b * band + in % cols, rm = in / cols;
    }
    const uint32_t b = fast_div_apply(w.per_band, u), in = u - b * w.per_band.d;
    const dg::ops::FastDiv& l = b == w.last_band ? w.last : w.band;
    const uint32_t q = fast_div_apply(l, in), line = b * w.band.d + (in - q * l.d);
    const uint32_t fm = along_n ? q : line, fn = along_n ? line : q;
    if (fm != rm || fn != rn || fast_div_apply(w.per_slot, u + 3 * units) != 3) ++bad;
  }
  CHECK(bad == 0);
}

// The arguments the fake's cuTensorMapEncodeTiled stored in a descriptor.
inline fake_tensor_map map_of(const dg::tma::Descriptor& d) {
  fake_tensor_map m;
  std::memcpy(&m, &d, sizeof(m));
  REQUIRE(m.magic == FAKE_TENSOR_MAP_MAGIC);
  return m;
}

}  // namespace dg::test
