// Small PTX wrappers shared by the SM90 kernels: thread election, register reallocation, fences,
// named barriers, cluster helpers and programmatic dependent launch.
#pragma once
#include <dg/types.cuh>

namespace dg::ptx {

DG_DEVICE uint32_t lane_id() { uint32_t r; asm volatile("mov.u32 %0, %%laneid;" : "=r"(r)); return r; }

DG_DEVICE uint32_t warp_id_in_block() { return threadIdx.x / 32u; }

// Pins a value's computation before this point: ptxas does not move it past the (volatile) barrier
// wait that follows. Used for WGMMA descriptors, which it would otherwise compute between the WGMMA
// fence and the first WGMMA, where the arithmetic delays the issue.
DG_DEVICE void pin(uint64_t& v) { asm volatile("" : "+l"(v)); }

// Warp index made uniform so that the compiler can branch on it without divergence.
DG_DEVICE uint32_t warp_uniform(uint32_t v) { return __shfl_sync(0xffffffffu, v, 0); }

// One thread of a fully converged warp returns true.
DG_DEVICE bool elect_one() {
  uint32_t pred = 0;
  asm volatile(
      "{\n .reg .b32 rx;\n .reg .pred px;\n"
      " elect.sync rx|px, %1;\n"
      " @px mov.s32 %0, 1;\n}"
      : "+r"(pred) : "r"(0xffffffffu));
  return pred != 0;
}

// Registers each of `consumers` threads can claim with setmaxnreg.inc after the 128 producer threads
// dropped to `producer_regs`: a CTA keeps the pool it was launched with, threads x the per-thread
// count that __launch_bounds__(threads, 1) lets ptxas take (65536 / threads, a multiple of 8, at
// most 248 here), and an inc the pool cannot satisfy never returns.
DG_HOST_DEVICE constexpr uint32_t consumer_regs(uint32_t consumers, uint32_t producer_regs, uint32_t cap = 232) {
  const uint32_t threads = consumers + 128;
  const uint32_t launch = (65536 / threads / 8 * 8 < 248 ? 65536 / threads / 8 * 8 : 248);
  const uint32_t share = (launch * threads - 128 * producer_regs) / consumers / 8 * 8;
  return share < cap ? share : cap;
}

template <uint32_t kRegs> DG_DEVICE void setmaxnreg_inc() {
  static_assert(kRegs % 8 == 0 && kRegs >= 24 && kRegs <= 256, "setmaxnreg: 24..256, multiple of 8");
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" :: "n"(kRegs));
}
template <uint32_t kRegs> DG_DEVICE void setmaxnreg_dec() {
  static_assert(kRegs % 8 == 0 && kRegs >= 24 && kRegs <= 256, "setmaxnreg: 24..256, multiple of 8");
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" :: "n"(kRegs));
}

// Orders this thread's generic-proxy shared-memory writes before later async-proxy (TMA, WGMMA) reads.
DG_DEVICE void fence_proxy_async_shared() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }
DG_DEVICE void fence_proxy_async_global() { asm volatile("fence.proxy.async.global;\n" ::: "memory"); }
DG_DEVICE void fence_proxy_async() { asm volatile("fence.proxy.async;\n" ::: "memory"); }
// Makes mbarrier.init visible to the async proxy and to the other CTAs of the cluster.
DG_DEVICE void fence_barrier_init() { asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory"); }

// Named barrier over `threads` threads (a multiple of 32); id 0 is __syncthreads'.
DG_DEVICE void named_barrier_sync(uint32_t id, uint32_t threads) {
  asm volatile("bar.sync %0, %1;\n" :: "r"(id), "r"(threads) : "memory");
}
DG_DEVICE void named_barrier_arrive(uint32_t id, uint32_t threads) {
  asm volatile("bar.arrive %0, %1;\n" :: "r"(id), "r"(threads) : "memory");
}

// ---- clusters ----
DG_DEVICE uint32_t cluster_ctarank() { uint32_t r; asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r)); return r; }
DG_DEVICE uint32_t cluster_nctarank() { uint32_t r; asm volatile("mov.u32 %0, %%cluster_nctarank;" : "=r"(r)); return r; }
DG_DEVICE void cluster_arrive_relaxed() { asm volatile("barrier.cluster.arrive.relaxed.aligned;\n" ::: "memory"); }
DG_DEVICE void cluster_arrive() { asm volatile("barrier.cluster.arrive.release.aligned;\n" ::: "memory"); }
DG_DEVICE void cluster_wait() { asm volatile("barrier.cluster.wait.acquire.aligned;\n" ::: "memory"); }
DG_DEVICE void cluster_sync() { cluster_arrive(); cluster_wait(); }

// The compiler's intrinsic, not inline PTX: the compiler folds it into the shared-window offset the
// pointer came from. Behind an opaque cvta it must build each 64-bit generic address first, two
// uniform adds apiece (~60 instructions in a 13-stage kernel's barrier setup).
DG_DEVICE uint32_t smem_addr(const void* p) { return static_cast<uint32_t>(__cvta_generic_to_shared(p)); }

// Address of the same shared-memory location in CTA `rank` of this cluster.
DG_DEVICE uint32_t map_shared_rank(uint32_t addr, uint32_t rank) {
  uint32_t r;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(r) : "r"(addr), "r"(rank));
  return r;
}

// Four floats from shared memory of any CTA of the cluster (address from map_shared_rank).
DG_DEVICE f32x4 ld_shared_cluster_v4(uint32_t addr) {
  f32x4 v;
  asm volatile("ld.shared::cluster.v4.f32 {%0, %1, %2, %3}, [%4];\n"
               : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
               : "r"(addr)
               : "memory");
  return v;
}

// One float from shared memory of any CTA of the cluster (address from map_shared_rank).
DG_DEVICE float ld_shared_cluster_f32(uint32_t addr) {
  float v;
  asm volatile("ld.shared::cluster.f32 %0, [%1];\n" : "=f"(v) : "r"(addr) : "memory");
  return v;
}

// ---- programmatic dependent launch ----
DG_DEVICE void grid_dependency_wait() { asm volatile("griddepcontrol.wait;\n" ::: "memory"); }
DG_DEVICE void grid_dependency_launch() { asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory"); }

// ---- global loads that bypass L1 allocation hints ----
DG_DEVICE float ldg_nc(const float* p) {
  float v;
  asm volatile("ld.global.nc.L1::no_allocate.f32 %0, [%1];\n" : "=f"(v) : "l"(p));
  return v;
}

}  // namespace dg::ptx
