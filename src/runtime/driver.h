// The CUDA driver, reached through dlopen("libcuda.so.1") + cuGetProcAddress, resolved once and
// lazily. libdg links no driver library, so it loads, renders and compiles on machines with no
// GPU; only calls that need a device fail there, with DG_ERROR_NO_DEVICE.
#pragma once
#include <cuda.h>  // types and prototypes only, at build time

#include "dg.h"

namespace dg::driver {

// X(name): every driver entry point libdg uses. Function types come from cuda.h's prototypes;
// cuGetProcAddress resolves the ABI version that matches them (requested as CUDA 12.0).
#define DG_DRIVER_FUNCTIONS(X)                                                                    \
  X(cuInit) X(cuDriverGetVersion) X(cuGetErrorName) X(cuGetErrorString) X(cuDeviceGetCount)      \
  X(cuDeviceGet) X(cuDeviceGetAttribute) X(cuDeviceGetName) X(cuDevicePrimaryCtxRetain)           \
  X(cuDevicePrimaryCtxRelease) X(cuCtxGetCurrent) X(cuCtxSetCurrent) X(cuCtxPushCurrent)          \
  X(cuCtxPopCurrent) X(cuCtxSynchronize) X(cuStreamCreate) X(cuStreamDestroy)                     \
  X(cuStreamSynchronize) X(cuStreamGetCtx) X(cuModuleLoadData) X(cuModuleUnload)                  \
  X(cuModuleGetFunction) X(cuFuncSetAttribute) X(cuFuncGetAttribute) X(cuLaunchKernelEx)          \
  X(cuTensorMapEncodeTiled) X(cuMemAlloc) X(cuMemFree) X(cuMemsetD8) X(cuMemsetD8Async) X(cuMemsetD16Async)     \
  X(cuMemsetD32Async) X(cuMemcpyAsync) X(cuMemcpyHtoDAsync) X(cuMemcpyDtoHAsync) X(cuMemcpyHtoD) \
  X(cuMemcpyDtoH) X(cuEventCreate) X(cuEventDestroy) X(cuEventRecord) X(cuEventSynchronize)       \
  X(cuEventElapsedTime) X(cuPointerGetAttribute) X(cuMemGetInfo) X(cuOccupancyMaxActiveClusters)

// Until the driver is loaded (or when it cannot be), every entry points at a stub that returns
// CUDA_ERROR_NO_DEVICE, so a stray call becomes a status instead of a crash.
template <typename F> struct Stub;
template <typename... Args> struct Stub<CUresult (*)(Args...)> {
  static CUresult call(Args...) { return CUDA_ERROR_NO_DEVICE; }
};

struct Api {
#define DG_DRIVER_MEMBER(name) decltype(&::name) name = &Stub<decltype(&::name)>::call;
  DG_DRIVER_FUNCTIONS(DG_DRIVER_MEMBER)
#undef DG_DRIVER_MEMBER
  int version = 0;  // cuDriverGetVersion, e.g. 13000
};

// Loads and initialises the driver on first use (thread-safe). On failure returns
// DG_ERROR_NO_DEVICE with the reason (library missing, symbol missing, cuInit error), the same
// reason on every later call.
dg_status load(const Api** api);

// The loaded table; only valid after load() succeeded.
const Api& api();

// DG_SUCCESS for CUDA_SUCCESS, else DG_ERROR_CUDA (DG_ERROR_NO_DEVICE for no-device errors) with
// "<what>: CUDA_ERROR_NAME (description)".
dg_status check(CUresult result, const char* what);

}  // namespace dg::driver

// Calls a driver function through the table and returns a status from the enclosing function on
// failure: DG_CU(cuMemsetD8Async(ptr, 0, n, stream));
#define DG_CU(call) DG_TRY(::dg::driver::check(::dg::driver::api().call, #call))
