// Peers that live only in dg-bench: cuBLASLt's own block-scaled FP8 GEMM (1x128 activations,
// 128x128 weights: CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F / BLK128x128_32F, cuBLASLt 12.9+ on
// Hopper), reached through the bench's own dlopen of libcublasLt; and NVML device information.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "json.h"

namespace dgb {

// D[M, N] (BF16, row-major, ld = N) = (A ⊙ sfa) · (B ⊙ sfb)ᵀ with A [M, K] and B [N, K] E4M3
// K-major. Scale layouts as cuBLASLt wants them:
//   sfa: FP32, element (i, kb) at kb * M + i                      (M-major, 1 x 128)
//   sfb: FP32, element (nb, kb) at nb * align(ceil(K/128), 4) + kb (128 x 128)
class BlockScaledFp8 {
 public:
  BlockScaledFp8();
  ~BlockScaledFp8();
  // false with the reason when the library or the scale modes are missing.
  bool load(std::string* why);
  std::string version() const;
  // Builds descriptors and asks the heuristic for M, N, K (pointers only for alignment). false
  // with the reason when cuBLASLt offers no algorithm: the peer is then reported absent.
  bool prepare(int64_t m, int64_t n, int64_t k, void* workspace, size_t workspace_size, std::string* why);
  // Enqueues one GEMM; "" on success.
  std::string run(const void* a, const float* sfa, const void* b, const float* sfb, void* d, void* stream);

  static int64_t sfb_ld(int64_t k) { return ((k + 127) / 128 + 3) / 4 * 4; }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Device facts from NVML (dlopen'ed libnvidia-ml.so.1) keyed by PCI bus id: driver version,
// current and max clocks, power limit, temperature. An empty object when NVML is missing.
Json nvml_info(const std::string& pci_bus_id);

}  // namespace dgb
