// What the launch tests share: device addresses that are never dereferenced, dg_tensor
// descriptors for a scope, the fake driver's view of an encoded TMA map, and the fake device's size.
#pragma once
#include <doctest/doctest.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "dg.h"
#include "fake_driver/fake_cuda.h"
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

// The arguments the fake's cuTensorMapEncodeTiled stored in a descriptor.
inline fake_tensor_map map_of(const dg::tma::Descriptor& d) {
  fake_tensor_map m;
  std::memcpy(&m, &d, sizeof(m));
  REQUIRE(m.magic == FAKE_TENSOR_MAP_MAGIC);
  return m;
}

}  // namespace dg::test
