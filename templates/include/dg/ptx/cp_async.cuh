// Small asynchronous global-to-shared copies (cp.async, non-bulk) whose completion an mbarrier tracks:
// for values too small or too scattered for TMA (the 1D2D recipe's per-stage SFB scalars).
#pragma once
#include <dg/ptx/common.cuh>

namespace dg::ptx {

// Copies 4 bytes (both addresses 4-byte aligned) into shared memory, asynchronously.
DG_DEVICE void cp_async_4(uint32_t dst_smem, const void* src) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" :: "r"(dst_smem), "l"(src) : "memory");
}

// One arrival on the barrier once every cp.async this thread issued before has landed. The arrival
// is counted in the barrier's expected count (.noinc), like any other arriving thread.
DG_DEVICE void cp_async_mbar_arrive(uint32_t bar_addr) {
  asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" :: "r"(bar_addr) : "memory");
}

}  // namespace dg::ptx
