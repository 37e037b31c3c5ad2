// What the GPU tests share: a stream on device 0, device buffers in its primary context, and RAII
// tensor descriptors. Failures are doctest REQUIREs.
#pragma once
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "dg.h"
#include "runtime/device.h"
#include "runtime/driver.h"

namespace dg::test {

struct Gpu {
  dg::Device* device = nullptr;
  dg_stream* stream = nullptr;
  Gpu() {
    REQUIRE(dg::get_device(0, &device) == DG_SUCCESS);
    REQUIRE(dg_stream_create(&stream, 0, nullptr, DG_STREAM_CREATE, nullptr) == DG_SUCCESS);
  }
  ~Gpu() { dg_stream_destroy(stream); }
  Gpu(const Gpu&) = delete;
  Gpu& operator=(const Gpu&) = delete;
  bool sm90() const { return device->cc_major == 9; }
};

// Device memory (at least 256 bytes, so even empty tensors get a valid aligned pointer).
class DeviceBuffer {
 public:
  DeviceBuffer(const dg::Device* device, size_t bytes) : device_(device), bytes_(bytes) {
    dg::ContextScope scope;
    REQUIRE(scope.enter(*device_) == DG_SUCCESS);
    REQUIRE(dg::driver::api().cuMemAlloc(&ptr_, bytes < 256 ? 256 : bytes) == CUDA_SUCCESS);
  }
  ~DeviceBuffer() {
    dg::ContextScope scope;
    if (scope.enter(*device_) == DG_SUCCESS) dg::driver::api().cuMemFree(ptr_);
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  void* data() const { return reinterpret_cast<void*>(ptr_); }
  size_t bytes() const { return bytes_; }
  void upload(const void* src, size_t n) {
    dg::ContextScope scope;
    REQUIRE(scope.enter(*device_) == DG_SUCCESS);
    REQUIRE(dg::driver::api().cuMemcpyHtoD(ptr_, src, n) == CUDA_SUCCESS);
    // The copy runs on the legacy stream, which does not order with the tests' non-blocking
    // streams: finish it before any kernel reads the buffer.
    REQUIRE(dg::driver::api().cuCtxSynchronize() == CUDA_SUCCESS);
  }
  // Waits for all work on the device first.
  void download(void* dst, size_t n) {
    dg::ContextScope scope;
    REQUIRE(scope.enter(*device_) == DG_SUCCESS);
    REQUIRE(dg::driver::api().cuCtxSynchronize() == CUDA_SUCCESS);
    REQUIRE(dg::driver::api().cuMemcpyDtoH(dst, ptr_, n) == CUDA_SUCCESS);
  }
  // Fills every byte with `value` (0xff: NaN for floats), so unwritten outputs show.
  void poison(unsigned char value = 0xff) {
    dg::ContextScope scope;
    REQUIRE(scope.enter(*device_) == DG_SUCCESS);
    REQUIRE(dg::driver::api().cuMemsetD8(ptr_, value, bytes_) == CUDA_SUCCESS);
    REQUIRE(dg::driver::api().cuCtxSynchronize() == CUDA_SUCCESS);  // as in upload()
  }
  template <typename T> void upload(const std::vector<T>& host) { upload(host.data(), host.size() * sizeof(T)); }
  // The first n elements of 4 bytes (FP32) or 2 bytes (BF16, FP16) as 32-bit words, 2-byte ones
  // zero-extended: one bit-exact view of an output of either width.
  std::vector<uint32_t> download_words(size_t n, size_t elem_bytes) {
    std::vector<uint32_t> out(n);
    if (elem_bytes == 4) {
      download(out.data(), n * 4);
    } else {
      std::vector<uint16_t> half(n);
      download(half.data(), n * 2);
      std::copy(half.begin(), half.end(), out.begin());
    }
    return out;
  }
  template <typename T> std::vector<T> download() {
    std::vector<T> host(bytes_ / sizeof(T));
    download(host.data(), host.size() * sizeof(T));
    return host;
  }

 private:
  const dg::Device* device_;
  CUdeviceptr ptr_ = 0;
  size_t bytes_;
};

// A dg_tensor for the scope; empty strides = contiguous.
struct Tensor {
  dg_tensor* t = nullptr;
  Tensor(void* data, dg_dtype dtype, std::vector<int64_t> sizes, std::vector<int64_t> strides = {}) {
    REQUIRE(dg_tensor_create(&t, data, dtype, static_cast<int32_t>(sizes.size()), sizes.data(),
                             strides.empty() ? nullptr : strides.data()) == DG_SUCCESS);
  }
  ~Tensor() { dg_tensor_destroy(t); }
  Tensor(const Tensor&) = delete;
  Tensor& operator=(const Tensor&) = delete;
};

}  // namespace dg::test
