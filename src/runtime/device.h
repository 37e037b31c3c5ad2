// One CUDA device as libdg uses it: the primary context, properties read once, and a slot for the
// kernel cache that every stream on the device shares.
#pragma once
#include <cuda.h>

#include <memory>
#include <mutex>
#include <string>

#include "dg.h"

namespace dg {

// Per-device state that a higher layer attaches to a Device (the JIT's kernel cache,
// jit::kernel_cache): runtime/ only owns it, so that it lives and dies with the device.
class DeviceSlot {
 public:
  virtual ~DeviceSlot() = default;
};

struct Device {
  int ordinal = 0;
  CUdevice handle = 0;
  CUcontext context = nullptr;  // primary context, retained for the process lifetime
  std::string name;
  int cc_major = 0, cc_minor = 0;
  int sm_count = 0;
  int max_smem_optin = 0;   // bytes of shared memory one block may opt in to
  int l2_bytes = 0;
  int clock_khz = 0;        // peak SM clock
  int memory_clock_khz = 0;
  int memory_bus_bits = 0;
  std::string arch;         // NVRTC target: "sm_90a", "sm_100a"; "" when unsupported
  bool offline = false;     // a description only (dg_stream_create_offline): compiles, never runs
  // Filled once by jit::kernel_cache(device), on the device's first kernel.
  std::once_flag kernels_once;
  std::unique_ptr<DeviceSlot> kernels;
  ~Device();
};

// The device with this ordinal, initialised on first use (thread-safe, lives until exit).
// DG_ERROR_NO_DEVICE without a driver or for an ordinal out of range.
dg_status get_device(int ordinal, Device** device);

// A device that is only described (architecture, SM count and, when `name` is not empty, the
// GPU's name as the driver reports it), for compiling kernels ahead of time on machines without a
// GPU. One per (major, minor, sm_count, name), living until exit.
dg_status get_offline_device(int cc_major, int cc_minor, int sm_count, const std::string& name, Device** device);

// Makes the device's primary context current for the scope, restoring the previous one.
class ContextScope {
 public:
  ContextScope() = default;
  ContextScope(const ContextScope&) = delete;
  ContextScope& operator=(const ContextScope&) = delete;
  ~ContextScope();
  dg_status enter(const Device& device);

 private:
  bool pushed_ = false;
};

}  // namespace dg
