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

// How many clusters of `config.cluster` CTAs of `kernel` (with config's block and shared memory)
// the device runs at once (cuOccupancyMaxActiveClusters). A cluster's CTAs share one GPC, so this
// can be fewer than the SMs' CTA slots over the cluster size. Memoised per kernel and launch shape
// (the warm path does not reach the driver); 0 where the driver gives no answer.
dg_status max_active_clusters(const dg_stream_s& stream, const Kernel& kernel, const LaunchConfig& config,
                              int* out);

}  // namespace dg
