// mbarrier wrappers (64-bit barriers in shared memory) for the TMA/WGMMA stage ring.
#pragma once
#include <dg/ptx/common.cuh>

namespace dg::ptx {

struct alignas(8) Mbarrier { uint64_t state; };

DG_DEVICE void mbar_init(Mbarrier* bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" :: "r"(smem_addr(bar)), "r"(count) : "memory");
}

// The hot loops address barriers by their shared-window address (`bar_addr`, from smem_addr once)
// so that no generic-to-shared conversion is recomputed per use.
DG_DEVICE void mbar_arrive(uint32_t bar_addr) {
  asm volatile("mbarrier.arrive.release.cta.shared::cta.b64 _, [%0];\n" :: "r"(bar_addr) : "memory");
}
DG_DEVICE void mbar_arrive(Mbarrier* bar) { mbar_arrive(smem_addr(bar)); }

DG_DEVICE void mbar_arrive_count(Mbarrier* bar, uint32_t count) {
  asm volatile("mbarrier.arrive.release.cta.shared::cta.b64 _, [%0], %1;\n" :: "r"(smem_addr(bar)), "r"(count) : "memory");
}

// Arrive on the barrier at the same offset in CTA `rank` of the cluster (rank may be our own).
DG_DEVICE void mbar_arrive_cluster(uint32_t bar_addr, uint32_t rank) {
  uint32_t remote = map_shared_rank(bar_addr, rank);
  // Default semantics (release, CTA scope), as the stage ring needs no cluster-wide ordering of this
  // thread's own memory operations; .release.cluster here costs a fence per K block.
  asm volatile("mbarrier.arrive.shared::cluster.b64 _, [%0];\n" :: "r"(remote) : "memory");
}
DG_DEVICE void mbar_arrive_cluster(Mbarrier* bar, uint32_t rank) { mbar_arrive_cluster(smem_addr(bar), rank); }

// One arrival that also announces `bytes` of transaction (TMA) traffic for the current phase.
DG_DEVICE void mbar_arrive_expect_tx(Mbarrier* bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.release.cta.shared::cta.b64 _, [%0], %1;\n"
               :: "r"(smem_addr(bar)), "r"(bytes) : "memory");
}

DG_DEVICE void mbar_expect_tx(Mbarrier* bar, uint32_t bytes) {
  asm volatile("mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [%0], %1;\n" :: "r"(smem_addr(bar)), "r"(bytes) : "memory");
}

DG_DEVICE bool mbar_try_wait(Mbarrier* bar, uint32_t parity) {
  uint32_t ok;
  asm volatile(
      "{\n .reg .pred p;\n"
      " mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
      " selp.u32 %0, 1, 0, p;\n}"
      : "=r"(ok) : "r"(smem_addr(bar)), "r"(parity) : "memory");
  return ok != 0;
}

// Blocks until the phase with parity `parity` has completed. The first test is outside the retry
// loop, so ptxas may schedule it ahead of independent work and hide its latency.
DG_DEVICE void mbar_wait(uint32_t bar_addr, uint32_t parity) {
  asm volatile(
      "{\n .reg .pred p;\n"
      " mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n"
      " @p bra DG_MBAR_DONE_%=;\n"
      "DG_MBAR_WAIT_%=:\n"
      " mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n"
      " @!p bra DG_MBAR_WAIT_%=;\n"
      "DG_MBAR_DONE_%=:\n}"
      :: "r"(bar_addr), "r"(parity) : "memory");
}
DG_DEVICE void mbar_wait(Mbarrier* bar, uint32_t parity) { mbar_wait(smem_addr(bar), parity); }

// One non-blocking test of the phase (test_wait never suspends the thread, unlike try_wait): a loop
// asks early, while it still has work, and waits at the point of use only if the test failed.
DG_DEVICE bool mbar_test(uint32_t bar_addr, uint32_t parity) {
  uint32_t ok;
  asm volatile(
      "{\n .reg .pred p;\n"
      " mbarrier.test_wait.parity.shared::cta.b64 p, [%1], %2;\n"
      " selp.u32 %0, 1, 0, p;\n}"
      : "=r"(ok) : "r"(bar_addr), "r"(parity) : "memory");
  return ok != 0;
}

// Same, with the acquire at cluster scope (a peer CTA's writes are then visible).
DG_DEVICE void mbar_wait_cluster(Mbarrier* bar, uint32_t parity) {
  asm volatile(
      "{\n .reg .pred p;\n"
      "DG_MBAR_WAITC_%=:\n"
      " mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [%0], %1;\n"
      " @!p bra DG_MBAR_WAITC_%=;\n}"
      :: "r"(smem_addr(bar)), "r"(parity) : "memory");
}

}  // namespace dg::ptx
