// TMA (cp.async.bulk.tensor) wrappers: tiled loads completing on an mbarrier (optionally multicast to
// the CTAs of a cluster), tiled stores and reduce-add stores from shared memory, bulk-group waits.
#pragma once
#include <dg/ptx/mbarrier.cuh>

namespace dg::ptx {

// L2 cache hints (createpolicy constants, as CUTLASS's CacheHintSm90).
enum : uint64_t {
  kCacheEvictNormal = 0x1000000000000000ull,
  kCacheEvictFirst = 0x12F0000000000000ull,
  kCacheEvictLast = 0x14F0000000000000ull,
};

DG_DEVICE void tma_prefetch_descriptor(const TmaDescriptor* desc) {
  asm volatile("prefetch.tensormap [%0];\n" :: "l"(reinterpret_cast<uint64_t>(desc)) : "memory");
}

DG_DEVICE void tma_load_2d(const TmaDescriptor* desc, Mbarrier* bar, void* smem, int32_t c0, int32_t c1,
                           uint64_t hint = kCacheEvictNormal) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint"
      " [%0], [%1, {%3, %4}], [%2], %5;\n"
      :: "r"(smem_addr(smem)), "l"(reinterpret_cast<uint64_t>(desc)), "r"(smem_addr(bar)), "r"(c0), "r"(c1),
         "l"(hint)
      : "memory");
}

DG_DEVICE void tma_load_3d(const TmaDescriptor* desc, Mbarrier* bar, void* smem, int32_t c0, int32_t c1,
                           int32_t c2, uint64_t hint = kCacheEvictNormal) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint"
      " [%0], [%1, {%3, %4, %5}], [%2], %6;\n"
      :: "r"(smem_addr(smem)), "l"(reinterpret_cast<uint64_t>(desc)), "r"(smem_addr(bar)), "r"(c0), "r"(c1),
         "r"(c2), "l"(hint)
      : "memory");
}

// Writes the box into the same smem offset of every CTA in `cta_mask` and completes `bytes` on the
// barrier at the same offset in each of them.
DG_DEVICE void tma_load_2d_multicast(const TmaDescriptor* desc, Mbarrier* bar, void* smem, int32_t c0,
                                     int32_t c1, uint16_t cta_mask, uint64_t hint = kCacheEvictNormal) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster.L2::cache_hint"
      " [%0], [%1, {%3, %4}], [%2], %5, %6;\n"
      :: "r"(smem_addr(smem)), "l"(reinterpret_cast<uint64_t>(desc)), "r"(smem_addr(bar)), "r"(c0), "r"(c1),
         "h"(cta_mask), "l"(hint)
      : "memory");
}

// tma_load_2d_multicast over a 3-D map (c2: the matrix).
DG_DEVICE void tma_load_3d_multicast(const TmaDescriptor* desc, Mbarrier* bar, void* smem, int32_t c0, int32_t c1,
                                     int32_t c2, uint16_t cta_mask, uint64_t hint = kCacheEvictNormal) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster.L2::cache_hint"
      " [%0], [%1, {%3, %4, %5}], [%2], %6, %7;\n"
      :: "r"(smem_addr(smem)), "l"(reinterpret_cast<uint64_t>(desc)), "r"(smem_addr(bar)), "r"(c0), "r"(c1),
         "r"(c2), "h"(cta_mask), "l"(hint)
      : "memory");
}

DG_DEVICE void tma_store_2d(const TmaDescriptor* desc, const void* smem, int32_t c0, int32_t c1) {
  asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%2, %3}], [%1];\n"
               :: "l"(reinterpret_cast<uint64_t>(desc)), "r"(smem_addr(smem)), "r"(c0), "r"(c1) : "memory");
}

DG_DEVICE void tma_store_3d(const TmaDescriptor* desc, const void* smem, int32_t c0, int32_t c1, int32_t c2) {
  asm volatile("cp.async.bulk.tensor.3d.global.shared::cta.bulk_group [%0, {%2, %3, %4}], [%1];\n"
               :: "l"(reinterpret_cast<uint64_t>(desc)), "r"(smem_addr(smem)), "r"(c0), "r"(c1), "r"(c2) : "memory");
}

// Element-wise global += smem over the box (element type from the descriptor: f32, f16, bf16...).
DG_DEVICE void tma_reduce_add_2d(const TmaDescriptor* desc, const void* smem, int32_t c0, int32_t c1) {
  asm volatile("cp.reduce.async.bulk.tensor.2d.global.shared::cta.add.tile.bulk_group [%0, {%2, %3}], [%1];\n"
               :: "l"(reinterpret_cast<uint64_t>(desc)), "r"(smem_addr(smem)), "r"(c0), "r"(c1) : "memory");
}

DG_DEVICE void tma_reduce_add_3d(const TmaDescriptor* desc, const void* smem, int32_t c0, int32_t c1, int32_t c2) {
  asm volatile("cp.reduce.async.bulk.tensor.3d.global.shared::cta.add.tile.bulk_group [%0, {%2, %3, %4}], [%1];\n"
               :: "l"(reinterpret_cast<uint64_t>(desc)), "r"(smem_addr(smem)), "r"(c0), "r"(c1), "r"(c2) : "memory");
}

DG_DEVICE void tma_store_commit() { asm volatile("cp.async.bulk.commit_group;\n" ::: "memory"); }

// Waits until at most N committed bulk groups are still reading their shared-memory source.
template <int N> DG_DEVICE void tma_store_wait_read() {
  asm volatile("cp.async.bulk.wait_group.read %0;\n" :: "n"(N) : "memory");
}
// Waits until at most N committed bulk groups are incomplete (writes done).
template <int N> DG_DEVICE void tma_store_wait() {
  asm volatile("cp.async.bulk.wait_group %0;\n" :: "n"(N) : "memory");
}

}  // namespace dg::ptx
