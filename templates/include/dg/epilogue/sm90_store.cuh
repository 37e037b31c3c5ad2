// SM90 GEMM epilogue: one consumer warp-group writes its WG_M x BLOCK_N accumulator block (WGMMA
// fragment layout) into swizzled shared memory (stmatrix for BF16, 8-byte stores for FP32) and one
// of its threads sends it to global memory with TMA, as plain stores or as reduce-add (accumulation
// into D). The smem block is split into column strips of kStrip elements, one TMA box each; the strip
// width in bytes is the swizzle width (128/64/32 B) or 16 B without swizzle.
#pragma once
#include <dg/ptx/common.cuh>
#include <dg/ptx/stmatrix.cuh>
#include <dg/ptx/tma.cuh>

namespace dg::epilogue {

// Byte offset -> swizzled byte offset for a buffer whose base is 1024-byte aligned.
template <uint32_t kSwizzleBytes> DG_DEVICE constexpr uint32_t swizzle(uint32_t off) {
  return kSwizzleBytes >= 32 ? (off ^ (((off >> 7) & (kSwizzleBytes / 16 - 1)) << 4)) : off;
}

template <typename OutT> struct OutTraits;
template <> struct OutTraits<bf16> { static constexpr uint32_t kBytes = 2; };
template <> struct OutTraits<float> { static constexpr uint32_t kBytes = 4; };

// Largest strip width (elements) with strip bytes in {128, 64, 32, 16} dividing block_n.
template <typename OutT> DG_HOST_DEVICE constexpr uint32_t strip_elems(uint32_t block_n) {
  constexpr uint32_t b = OutTraits<OutT>::kBytes;
  return block_n % (128 / b) == 0 ? 128 / b : block_n % (64 / b) == 0 ? 64 / b : block_n % (32 / b) == 0 ? 32 / b : 16 / b;
}

template <typename OutT, uint32_t kWgM, uint32_t kBlockN, bool kReduceAdd>
struct WarpgroupStore {
  static constexpr uint32_t kBytes = OutTraits<OutT>::kBytes;
  static constexpr uint32_t kStrip = strip_elems<OutT>(kBlockN);
  static constexpr uint32_t kStripBytes = kStrip * kBytes;
  static constexpr uint32_t kSwizzle = kStripBytes >= 32 ? kStripBytes : 0;
  static constexpr uint32_t kNumStrips = kBlockN / kStrip;
  static constexpr uint32_t kMIters = kWgM / 64;
  static constexpr uint32_t kSmemBytes = kWgM * kBlockN * kBytes;
  static_assert(kBlockN % 8 == 0 && kWgM % 64 == 0, "");
  static_assert(!(sizeof(OutT) == 2) || kBlockN % 16 == 0, "BF16 output needs BLOCK_N % 16 == 0 (stmatrix x4)");

  // acc[i][.] is the WGMMA m64nN fragment of rows i*64.. of this warp-group's block.
  // smem: this warp-group's 1024-byte aligned staging buffer. bar_id: named barrier of the warp-group.
  template <typename AccArray>
  DG_DEVICE static void run(const AccArray& acc, float alpha, uint8_t* smem, const TmaDescriptor* desc, int32_t col0,
                            int32_t row0, uint32_t bar_id) {
    const uint32_t tid = threadIdx.x % 128, warp = tid / 32, lane = tid % 32;
    const uint32_t base = ptx::smem_addr(smem);
    // The previous tile's TMA store must have finished reading the buffer.
    if (tid < kNumStrips) ptx::tma_store_wait_read<0>();
    ptx::named_barrier_sync(bar_id, 128);

#pragma unroll
    for (uint32_t i = 0; i < kMIters; ++i) {
      if constexpr (kBytes == 2) {
        const uint32_t row = i * 64 + warp * 16 + (lane % 8) + ((lane / 8) & 1) * 8;
#pragma unroll
        for (uint32_t j = 0; j < kBlockN / 16; ++j) {
          const uint32_t col = j * 16 + (lane / 16) * 8;
          const uint32_t off = (col / kStrip) * (kWgM * kStripBytes) + row * kStripBytes + (col % kStrip) * 2;
          const float* a = &acc[i][j * 8];
          ptx::stmatrix_x4(base + swizzle<kSwizzle>(off), float2_to_bf16x2(a[0] * alpha, a[1] * alpha).bits,
                           float2_to_bf16x2(a[2] * alpha, a[3] * alpha).bits,
                           float2_to_bf16x2(a[4] * alpha, a[5] * alpha).bits,
                           float2_to_bf16x2(a[6] * alpha, a[7] * alpha).bits);
        }
      } else {
        const uint32_t row = i * 64 + warp * 16 + lane / 4;
#pragma unroll
        for (uint32_t g = 0; g < kBlockN / 8; ++g) {
          const uint32_t col = g * 8 + (lane % 4) * 2;
          const uint32_t off = (col / kStrip) * (kWgM * kStripBytes) + row * kStripBytes + (col % kStrip) * 4;
          ptx::st_shared_v2(base + swizzle<kSwizzle>(off), acc[i][g * 4 + 0] * alpha, acc[i][g * 4 + 1] * alpha);
          ptx::st_shared_v2(base + swizzle<kSwizzle>(off + 8 * kStripBytes), acc[i][g * 4 + 2] * alpha,
                            acc[i][g * 4 + 3] * alpha);
        }
      }
    }
    ptx::fence_proxy_async_shared();
    ptx::named_barrier_sync(bar_id, 128);
    // One thread per strip issues its box (spread over the warp-group's lanes).
    if (tid < kNumStrips) {
      const uint8_t* src = smem + tid * (kWgM * kStripBytes);
      const int32_t c = col0 + static_cast<int32_t>(tid * kStrip);
      if constexpr (kReduceAdd) ptx::tma_reduce_add_2d(desc, src, c, row0);
      else ptx::tma_store_2d(desc, src, c, row0);
      ptx::tma_store_commit();
    }
  }

  // Before the kernel exits: the stores must have read shared memory.
  DG_DEVICE static void drain() {
    if (threadIdx.x % 128 < kNumStrips) ptx::tma_store_wait<0>();
  }
};

}  // namespace dg::epilogue
