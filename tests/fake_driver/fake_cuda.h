// Control interface of the fake CUDA driver (fake_cuda.cpp): a libcuda.so.1 for machines without a
// GPU that lets libdg's whole host path run (device query, JIT load, TMA encoding, launch) and
// records what reached the driver. Tests dlopen the same library libdg loaded and call these.
#pragma once
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

// How the fake encodes a CUtensorMap: the arguments of cuTensorMapEncodeTiled, readable by tests.
typedef struct {
  uint32_t magic;  // kFakeTensorMapMagic
  uint32_t dtype;  // CUtensorMapDataType
  uint32_t rank;
  uint32_t swizzle;  // CUtensorMapSwizzle
  uint64_t address;
  uint64_t dims[2];
  uint64_t stride1;  // bytes between rows (dimension 1)
  uint32_t box[2];
  uint32_t l2_promotion;
  uint32_t oob_fill;
  uint64_t dim2;     // rank 3: the third dimension and the bytes between its entries
  uint64_t stride2;
  uint32_t box2;
  uint8_t pad[44];
} fake_tensor_map;

#define FAKE_TENSOR_MAP_MAGIC 0x7e4504d1u

typedef struct {
  uint64_t encodes;      // cuTensorMapEncodeTiled calls that succeeded
  uint64_t launches;     // cuLaunchKernelEx calls that succeeded
  uint64_t module_loads; // cuModuleLoadData calls that succeeded
} fake_cuda_counters;

typedef struct {
  const char* kernel;  // the name cuModuleGetFunction was asked for
  unsigned grid[3], block[3], smem_bytes;
  unsigned cluster[3];  // 0 when no cluster attribute was given
  int pdl;              // programmatic stream serialization requested
} fake_cuda_launch;

// Called inside every cuLaunchKernelEx with the launch and its kernel arguments (valid only during
// the call). NULL removes the hook.
typedef void (*fake_cuda_launch_hook)(const fake_cuda_launch* launch, void** args, void* user);

void fake_cuda_set_launch_hook(fake_cuda_launch_hook hook, void* user);
void fake_cuda_get_counters(fake_cuda_counters* out);

#ifdef __cplusplus
}
#endif
