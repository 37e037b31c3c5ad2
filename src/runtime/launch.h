// Launching a JIT-compiled kernel with cuLaunchKernelEx. Launch attributes are owned by the call
// (no shared static state), so concurrent launches from several threads are safe.
#pragma once
#include <cstdint>

#include "dg.h"

struct dg_stream_s;

namespace dg {

struct Kernel;

struct LaunchConfig {
  unsigned grid[3] = {1, 1, 1};
  unsigned block[3] = {1, 1, 1};
  unsigned smem_bytes = 0;  // dynamic shared memory; raised on the function when above 48 KiB
  unsigned cluster = 1;     // CTAs per cluster along x (TMA multicast pairs)
  bool pdl = false;         // programmatic stream serialisation
};

// Launches `kernel` on `stream` in the device's primary context. `args` are pointers to the
// host-side values of the kernel's parameters, in order.
dg_status launch(const dg_stream_s& stream, const Kernel& kernel, const LaunchConfig& config,
                 void** args);

}  // namespace dg
