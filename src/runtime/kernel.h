// A loaded kernel: the module and function the driver returned for one compiled kernel. The JIT
// produces them (jit/kernel_cache.h); launch.h runs them.
#pragma once
#include <cuda.h>

#include <atomic>
#include <string>

namespace dg {

struct Kernel {
  CUmodule module = nullptr;
  CUfunction function = nullptr;
  std::string name;
  // Largest dynamic shared memory already allowed on `function`: 48 KiB less the kernel's static
  // shared memory until cuFuncSetAttribute raises it (once per larger value, not once per launch).
  mutable std::atomic<unsigned> smem_allowed{48 * 1024};
};

}  // namespace dg
