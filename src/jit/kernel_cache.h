// The per-device kernel cache: memory (KernelKey -> loaded Kernel), backed by the disk cache.
// Thread-safe; under contention each key is compiled once while the other callers wait for it.
#pragma once
#include <atomic>
#include <functional>

#include "jit/kernel.h"
#include "jit/once_map.h"
#include "runtime/config.h"
#include "runtime/device.h"
#include "runtime/stream.h"

namespace dg::jit {

// Builds the KernelSpec for a key; called only on a memory-cache miss.
using SpecBuilder = std::function<dg_status(KernelSpec* spec)>;

class KernelCache : public DeviceSlot {
 public:
  explicit KernelCache(Device& device);
  ~KernelCache();

  // The loaded kernel for `key`: memory hit, else disk hit (cuModuleLoadData), else render +
  // compile + store on disk + load. `config` chooses the compiler, cache dir and diagnostics.
  dg_status get(const KernelKey& key, const SpecBuilder& build, const Config& config, const Kernel** kernel);

 private:
  struct KeyHash {
    size_t operator()(const KernelKey& k) const { return static_cast<size_t>(k.hash()); }
  };
  dg_status build(const SpecBuilder& builder, const Config& config, Kernel* out);

  Device& device_;
  OnceMap<KernelKey, Kernel, KeyHash> kernels_;
};

// The kernel cache of `device`, created on first use (thread-safe; lives as long as the device).
KernelCache& kernel_cache(Device& device);

// The kernel for `key` on the stream's device, compiled with the stream's config on a miss.
dg_status get_kernel(const dg_stream_s& stream, const KernelKey& key, const SpecBuilder& build, const Kernel** kernel);

// Process-wide counters behind dg_jit_get_stats.
struct Stats {
  std::atomic<int64_t> compiled{0};
  std::atomic<int64_t> loaded_from_disk{0};
  std::atomic<int64_t> memory_hits{0};
};
Stats& stats();

}  // namespace dg::jit
