// The L2 flush of timing loops (templates/kernels/l2_flush.cu.j2): a read of a buffer larger than
// L2, which leaves L2 holding clean lines, as bench/peer_bench.py's flush does. A flush that writes
// (a memset) leaves up to one L2 of dirty lines whose write-back the next timed call pays.
#pragma once
#include <cstddef>

#include "dg.h"
#include "jit/kernel.h"
#include "runtime/stream.h"

namespace dg::ops {

jit::KernelSpec l2_flush_kernel_spec();

// Reads `bytes` (a multiple of 16) at `buffer` (16-byte aligned, zeroed by the caller) on the
// stream; `sink` is a device word the kernel never writes while the buffer stays zero.
dg_status run_l2_flush(const dg_stream_s& stream, const void* buffer, size_t bytes, void* sink);

}  // namespace dg::ops
