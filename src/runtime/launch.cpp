#include "runtime/launch.h"

#include <map>
#include <mutex>
#include <tuple>

#include "runtime/driver.h"
#include "runtime/kernel.h"
#include "runtime/status.h"
#include "runtime/stream.h"

namespace dg {

namespace {

// With the device's context current: lets `kernel` take config's dynamic shared memory. Raising the
// limit is needed once per larger value; racing threads both set it, harmlessly.
dg_status allow_smem(const Device& device, const Kernel& kernel, const LaunchConfig& config) {
  if (config.smem_bytes > static_cast<unsigned>(device.max_smem_optin))
    return fail(DG_ERROR_INTERNAL, "kernel {} asks for {} bytes of shared memory; device {} allows {}", kernel.name,
                config.smem_bytes, device.name, device.max_smem_optin);
  if (config.smem_bytes > kernel.smem_allowed.load(std::memory_order_relaxed)) {
    DG_CU(cuFuncSetAttribute(kernel.function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                             static_cast<int>(config.smem_bytes)));
    kernel.smem_allowed.store(config.smem_bytes, std::memory_order_relaxed);
  }
  return DG_SUCCESS;
}

// The driver's form of a launch; `config.attrs` points into this object (not copyable).
struct DriverLaunch {
  CUlaunchAttribute attrs[2]{};
  CUlaunchConfig config{};

  DriverLaunch(const LaunchConfig& c, CUstream stream) {
    unsigned n = 0;
    if (c.cluster > 1) {
      attrs[n].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
      attrs[n].value.clusterDim.x = c.cluster;
      attrs[n].value.clusterDim.y = 1;
      attrs[n].value.clusterDim.z = 1;
      ++n;
    }
    if (c.pdl) {
      attrs[n].id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
      attrs[n].value.programmaticStreamSerializationAllowed = 1;
      ++n;
    }
    config.gridDimX = c.grid[0];
    config.gridDimY = c.grid[1];
    config.gridDimZ = c.grid[2];
    config.blockDimX = c.block[0];
    config.blockDimY = c.block[1];
    config.blockDimZ = c.block[2];
    config.sharedMemBytes = c.smem_bytes;
    config.hStream = stream;
    config.attrs = n ? attrs : nullptr;
    config.numAttrs = n;
  }
  DriverLaunch(const DriverLaunch&) = delete;
  DriverLaunch& operator=(const DriverLaunch&) = delete;
};

}  // namespace

dg_status launch(const dg_stream_s& stream, const Kernel& kernel, const LaunchConfig& config, void** args) {
  const Device& device = *stream.device;
  ContextScope scope;
  DG_TRY(scope.enter(device));
  DG_TRY(allow_smem(device, kernel, config));
  const DriverLaunch cu(config, stream.handle);
  const CUresult r = driver::api().cuLaunchKernelEx(&cu.config, kernel.function, args, nullptr);
  if (r != CUDA_SUCCESS) {
    driver::check(r, "cuLaunchKernelEx");
    return fail(DG_ERROR_CUDA, "launching {} (grid {}x{}x{}, block {}, smem {} B, cluster {}): {}", kernel.name,
                config.grid[0], config.grid[1], config.grid[2], config.block[0], config.smem_bytes, config.cluster,
                last_error());
  }
  return DG_SUCCESS;
}

dg_status max_active_clusters(const dg_stream_s& stream, const Kernel& kernel, const LaunchConfig& config,
                              int* out) {
  using Key = std::tuple<CUfunction, unsigned, unsigned, unsigned>;
  static std::mutex mu;
  static std::map<Key, int> known;  // one entry per clustered kernel and shape a process launches
  const Key key{kernel.function, config.cluster, config.smem_bytes, config.block[0] * config.block[1] * config.block[2]};
  {
    std::lock_guard<std::mutex> lock(mu);
    const auto it = known.find(key);
    if (it != known.end()) {
      *out = it->second;
      return DG_SUCCESS;
    }
  }
  const Device& device = *stream.device;
  ContextScope scope;
  DG_TRY(scope.enter(device));
  DG_TRY(allow_smem(device, kernel, config));
  LaunchConfig cluster_only = config;
  cluster_only.pdl = false;
  const DriverLaunch cu(cluster_only, stream.handle);
  int clusters = 0;
  DG_CU(cuOccupancyMaxActiveClusters(&clusters, kernel.function, &cu.config));
  {
    std::lock_guard<std::mutex> lock(mu);
    known[key] = clusters;
  }
  *out = clusters;
  return DG_SUCCESS;
}

}  // namespace dg
