// A fake CUDA driver (built as libcuda.so.1) for machines without a GPU: one SM90 device with 132 SMs,
// contexts, modules that must be real cubins naming the requested kernel, TMA descriptors that
// record their arguments (fake_cuda.h) after the checks the real encoder makes, and launches that
// run no code but are checked against the device's limits and handed to a test hook. It serves
// libdg's resolve-by-name loader through cuGetProcAddress_v2, for every entry point libdg uses
// (runtime/driver.h): the ones libdg's host path needs are implemented below, memory and events
// (which would have to return device state) fail with CUDA_ERROR_NOT_SUPPORTED, the rest succeed and
// do nothing.
#include "fake_driver/fake_cuda.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <type_traits>
#include <vector>

#include "runtime/driver.h"

namespace {

constexpr int kSms = 132;
constexpr int kSmemOptin = 232448;
// cuOccupancyMaxActiveClusters as an H200 answers it (Nsight Compute's launch statistics): a
// cluster's CTAs share one GPC, so clusters of 4 and 8 fit fewer times than the SMs' CTA slots over
// the cluster size. Other shapes: the slots over the cluster size.
struct ClusterFit {
  int cluster, ctas_per_sm, clusters;
};
constexpr ClusterFit kH200ClusterFits[] = {{2, 1, 66}, {2, 2, 132}, {4, 2, 62}, {8, 2, 30}};
constexpr int kSmemPerSm = 233472;
constexpr int kSmemReservedPerBlock = 1024;
constexpr int kThreadsPerSm = 2048;

struct FakeFunction {
  std::string name;
};
struct FakeModule {
  std::string image;
  std::vector<std::unique_ptr<FakeFunction>> functions;
};

int g_primary_context;  // its address is the device's one context
thread_local std::vector<CUcontext> t_context_stack;

std::mutex g_mutex;
fake_cuda_counters g_counters;
fake_cuda_launch_hook g_hook;
void* g_hook_user;

// ELF64 size from the section header table, which nvcc and NVRTC place last.
size_t elf_size(const unsigned char* image) {
  uint64_t shoff;
  uint16_t shentsize, shnum;
  std::memcpy(&shoff, image + 0x28, 8);
  std::memcpy(&shentsize, image + 0x3A, 2);
  std::memcpy(&shnum, image + 0x3C, 2);
  return shoff + size_t(shentsize) * shnum;
}

CUresult init(unsigned) { return CUDA_SUCCESS; }
CUresult driver_get_version(int* v) {
  *v = 13000;
  return CUDA_SUCCESS;
}
CUresult get_error_name(CUresult e, const char** s) {
  *s = e == CUDA_SUCCESS ? "CUDA_SUCCESS" : "CUDA_ERROR_FAKE";
  return CUDA_SUCCESS;
}
CUresult get_error_string(CUresult e, const char** s) {
  *s = e == CUDA_SUCCESS ? "no error" : "rejected by the fake driver";
  return CUDA_SUCCESS;
}
CUresult device_get_count(int* n) {
  *n = 1;
  return CUDA_SUCCESS;
}
CUresult device_get(CUdevice* d, int ordinal) {
  if (ordinal != 0) return CUDA_ERROR_INVALID_DEVICE;
  *d = 0;
  return CUDA_SUCCESS;
}
CUresult device_get_name(char* name, int len, CUdevice) {
  std::snprintf(name, size_t(len), "%s", "fake SM90 device (libdg test driver)");
  return CUDA_SUCCESS;
}
CUresult device_get_attribute(int* v, CUdevice_attribute a, CUdevice) {
  switch (a) {
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *v = 9; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *v = 0; break;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *v = kSms; break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: *v = kSmemOptin; break;
    case CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE: *v = 50 << 20; break;
    case CU_DEVICE_ATTRIBUTE_CLOCK_RATE: *v = 1980000; break;
    case CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE: *v = 2619000; break;
    case CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH: *v = 5120; break;
    default: *v = 0; break;
  }
  return CUDA_SUCCESS;
}
CUresult primary_ctx_retain(CUcontext* c, CUdevice) {
  *c = reinterpret_cast<CUcontext>(&g_primary_context);
  return CUDA_SUCCESS;
}
CUresult ctx_get_current(CUcontext* c) {
  *c = t_context_stack.empty() ? nullptr : t_context_stack.back();
  return CUDA_SUCCESS;
}
CUresult ctx_set_current(CUcontext c) {
  if (t_context_stack.empty()) t_context_stack.push_back(c);
  else t_context_stack.back() = c;
  return CUDA_SUCCESS;
}
CUresult ctx_push_current(CUcontext c) {
  t_context_stack.push_back(c);
  return CUDA_SUCCESS;
}
CUresult ctx_pop_current(CUcontext* c) {
  if (t_context_stack.empty()) return CUDA_ERROR_INVALID_CONTEXT;
  if (c) *c = t_context_stack.back();
  t_context_stack.pop_back();
  return CUDA_SUCCESS;
}
bool has_context() { return !t_context_stack.empty() && t_context_stack.back() != nullptr; }

CUresult stream_create(CUstream* s, unsigned) {
  if (!has_context()) return CUDA_ERROR_INVALID_CONTEXT;
  *s = reinterpret_cast<CUstream>(new int(0));
  return CUDA_SUCCESS;
}
CUresult stream_destroy(CUstream s) {
  delete reinterpret_cast<int*>(s);
  return CUDA_SUCCESS;
}
CUresult stream_get_ctx(CUstream, CUcontext* c) {
  *c = reinterpret_cast<CUcontext>(&g_primary_context);
  return CUDA_SUCCESS;
}

CUresult module_load_data(CUmodule* m, const void* image) {
  if (!has_context()) return CUDA_ERROR_INVALID_CONTEXT;
  const auto* bytes = static_cast<const unsigned char*>(image);
  if (bytes == nullptr || std::memcmp(bytes, "\x7f" "ELF", 4) != 0) return CUDA_ERROR_INVALID_IMAGE;
  auto* module = new FakeModule();
  module->image.assign(reinterpret_cast<const char*>(bytes), elf_size(bytes));
  *m = reinterpret_cast<CUmodule>(module);
  std::lock_guard<std::mutex> lock(g_mutex);
  ++g_counters.module_loads;
  return CUDA_SUCCESS;
}
CUresult module_unload(CUmodule m) {
  delete reinterpret_cast<FakeModule*>(m);
  return CUDA_SUCCESS;
}
// The kernel must be in the image's symbol table: its name appears NUL-terminated in the ELF.
CUresult module_get_function(CUfunction* f, CUmodule m, const char* name) {
  auto* module = reinterpret_cast<FakeModule*>(m);
  const std::string needle = std::string(1, '\0') + name + std::string(1, '\0');
  if (module->image.find(needle) == std::string::npos) return CUDA_ERROR_NOT_FOUND;
  module->functions.push_back(std::make_unique<FakeFunction>(FakeFunction{name}));
  *f = reinterpret_cast<CUfunction>(module->functions.back().get());
  return CUDA_SUCCESS;
}
CUresult func_get_attribute(int* v, CUfunction_attribute, CUfunction) {
  *v = 0;
  return CUDA_SUCCESS;
}
CUresult func_set_attribute(CUfunction, CUfunction_attribute a, int v) {
  if (a == CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES && (v < 0 || v > kSmemOptin)) return CUDA_ERROR_INVALID_VALUE;
  return CUDA_SUCCESS;
}

// The checks the CUDA 13 documentation lists for a tiled map, for the ranks libdg encodes (1, 2).
CUresult tensor_map_encode_tiled(CUtensorMap* map, CUtensorMapDataType dtype, cuuint32_t rank, void* address,
                                 const cuuint64_t* dims, const cuuint64_t* strides, const cuuint32_t* box,
                                 const cuuint32_t* elem_strides, CUtensorMapInterleave interleave,
                                 CUtensorMapSwizzle swizzle, CUtensorMapL2promotion l2, CUtensorMapFloatOOBfill oob) {
  if (rank < 1 || rank > 3 || reinterpret_cast<uintptr_t>(address) % 16 != 0 ||
      reinterpret_cast<uintptr_t>(map) % 64 != 0 || interleave != CU_TENSOR_MAP_INTERLEAVE_NONE)
    return CUDA_ERROR_INVALID_VALUE;
  static const unsigned kBytes[] = {1, 2, 4, 4, 8, 8, 2, 4, 8, 2, 4, 4, 4};  // by CUtensorMapDataType
  if (dtype > CU_TENSOR_MAP_DATA_TYPE_TFLOAT32_FTZ) return CUDA_ERROR_INVALID_VALUE;
  const unsigned eb = kBytes[dtype];
  for (cuuint32_t i = 0; i < rank; ++i) {
    if (dims[i] == 0 || dims[i] > (uint64_t(1) << 32)) return CUDA_ERROR_INVALID_VALUE;
    if (box[i] == 0 || box[i] > 256 || elem_strides[i] == 0 || elem_strides[i] > 8) return CUDA_ERROR_INVALID_VALUE;
    if (i > 0 && (strides[i - 1] % 16 != 0 || strides[i - 1] >= (uint64_t(1) << 40))) return CUDA_ERROR_INVALID_VALUE;
  }
  if ((box[0] * eb) % 16 != 0) return CUDA_ERROR_INVALID_VALUE;
  const unsigned span = swizzle == CU_TENSOR_MAP_SWIZZLE_128B ? 128
                        : swizzle == CU_TENSOR_MAP_SWIZZLE_64B ? 64
                        : swizzle == CU_TENSOR_MAP_SWIZZLE_32B ? 32 : 0;
  if (span && box[0] * eb > span) return CUDA_ERROR_INVALID_VALUE;
  fake_tensor_map out{};
  out.magic = FAKE_TENSOR_MAP_MAGIC;
  out.dtype = dtype;
  out.rank = rank;
  out.swizzle = swizzle;
  out.address = reinterpret_cast<uintptr_t>(address);
  out.dims[0] = dims[0];
  out.dims[1] = rank > 1 ? dims[1] : 1;
  out.stride1 = rank > 1 ? strides[0] : 0;
  out.box[0] = box[0];
  out.box[1] = rank > 1 ? box[1] : 1;
  out.dim2 = rank > 2 ? dims[2] : 1;
  out.stride2 = rank > 2 ? strides[1] : 0;
  out.box2 = rank > 2 ? box[2] : 1;
  out.l2_promotion = l2;
  out.oob_fill = oob;
  static_assert(sizeof(fake_tensor_map) == sizeof(CUtensorMap), "a fake map fills a CUtensorMap");
  std::memcpy(map, &out, sizeof(out));
  std::lock_guard<std::mutex> lock(g_mutex);
  ++g_counters.encodes;
  return CUDA_SUCCESS;
}

// CTAs per SM by shared memory and threads (registers are not modelled), then the clusters that fit.
CUresult occupancy_max_active_clusters(int* clusters, CUfunction f, const CUlaunchConfig* c) {
  if (!has_context() || f == nullptr || c == nullptr || clusters == nullptr) return CUDA_ERROR_INVALID_VALUE;
  unsigned size = 1;
  for (unsigned i = 0; i < c->numAttrs; ++i)
    if (c->attrs[i].id == CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION)
      size = c->attrs[i].value.clusterDim.x * c->attrs[i].value.clusterDim.y * c->attrs[i].value.clusterDim.z;
  const unsigned threads = c->blockDimX * c->blockDimY * c->blockDimZ;
  if (size == 0 || size > 8 || threads == 0 || threads > 1024 || c->sharedMemBytes > unsigned(kSmemOptin))
    return CUDA_ERROR_INVALID_VALUE;
  const int per_sm = std::min(kSmemPerSm / int(c->sharedMemBytes + kSmemReservedPerBlock), kThreadsPerSm / int(threads));
  *clusters = per_sm * kSms / int(size);
  for (const ClusterFit& f : kH200ClusterFits)
    if (f.cluster == int(size) && f.ctas_per_sm == per_sm) *clusters = f.clusters;
  return CUDA_SUCCESS;
}

CUresult launch_kernel_ex(const CUlaunchConfig* c, CUfunction f, void** args, void** extra) {
  if (!has_context() || f == nullptr || extra != nullptr) return CUDA_ERROR_INVALID_VALUE;
  fake_cuda_launch l{};
  l.kernel = reinterpret_cast<FakeFunction*>(f)->name.c_str();
  l.grid[0] = c->gridDimX, l.grid[1] = c->gridDimY, l.grid[2] = c->gridDimZ;
  l.block[0] = c->blockDimX, l.block[1] = c->blockDimY, l.block[2] = c->blockDimZ;
  l.smem_bytes = c->sharedMemBytes;
  for (unsigned i = 0; i < c->numAttrs; ++i) {
    const CUlaunchAttribute& a = c->attrs[i];
    if (a.id == CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION) {
      l.cluster[0] = a.value.clusterDim.x, l.cluster[1] = a.value.clusterDim.y, l.cluster[2] = a.value.clusterDim.z;
    } else if (a.id == CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION) {
      l.pdl = a.value.programmaticStreamSerializationAllowed;
    }
  }
  const uint64_t threads = uint64_t(l.block[0]) * l.block[1] * l.block[2];
  if (l.grid[0] * l.grid[1] * l.grid[2] == 0 || threads == 0 || threads > 1024 || l.smem_bytes > kSmemOptin)
    return CUDA_ERROR_INVALID_VALUE;
  if (l.cluster[0] && (l.grid[0] % l.cluster[0] != 0 || l.cluster[0] * l.cluster[1] * l.cluster[2] > 8))
    return CUDA_ERROR_INVALID_CLUSTER_SIZE;
  std::lock_guard<std::mutex> lock(g_mutex);
  ++g_counters.launches;
  if (g_hook) g_hook(&l, args, g_hook_user);
  return CUDA_SUCCESS;
}

// Entry points without results are accepted and ignored; the ones below would need device memory.
template <typename F, CUresult kResult> struct Answer;
template <typename... Args, CUresult kResult> struct Answer<CUresult (*)(Args...), kResult> {
  static CUresult call(Args...) { return kResult; }
};

struct Entry {
  const char* name;
  void* fn;
};

template <typename F, typename Impl> void* checked(Impl* impl) {
  static_assert(std::is_same<F, Impl*>::value, "a fake entry point must have the driver's signature");
  return reinterpret_cast<void*>(impl);
}

#define FAKE(name, impl) {#name, checked<decltype(&::name)>(&impl)}
const Entry kImplemented[] = {
    FAKE(cuInit, init),
    FAKE(cuDriverGetVersion, driver_get_version),
    FAKE(cuGetErrorName, get_error_name),
    FAKE(cuGetErrorString, get_error_string),
    FAKE(cuDeviceGetCount, device_get_count),
    FAKE(cuDeviceGet, device_get),
    FAKE(cuDeviceGetName, device_get_name),
    FAKE(cuDeviceGetAttribute, device_get_attribute),
    FAKE(cuDevicePrimaryCtxRetain, primary_ctx_retain),
    FAKE(cuCtxGetCurrent, ctx_get_current),
    FAKE(cuCtxSetCurrent, ctx_set_current),
    FAKE(cuCtxPushCurrent, ctx_push_current),
    FAKE(cuCtxPopCurrent, ctx_pop_current),
    FAKE(cuStreamCreate, stream_create),
    FAKE(cuStreamDestroy, stream_destroy),
    FAKE(cuStreamGetCtx, stream_get_ctx),
    FAKE(cuModuleLoadData, module_load_data),
    FAKE(cuModuleUnload, module_unload),
    FAKE(cuModuleGetFunction, module_get_function),
    FAKE(cuFuncGetAttribute, func_get_attribute),
    FAKE(cuFuncSetAttribute, func_set_attribute),
    FAKE(cuTensorMapEncodeTiled, tensor_map_encode_tiled),
    FAKE(cuLaunchKernelEx, launch_kernel_ex),
    FAKE(cuOccupancyMaxActiveClusters, occupancy_max_active_clusters),
};
#undef FAKE

#define FAKE_REFUSE(name) {#name, reinterpret_cast<void*>(&Answer<decltype(&::name), CUDA_ERROR_NOT_SUPPORTED>::call)}
const Entry kRefused[] = {FAKE_REFUSE(cuMemAlloc), FAKE_REFUSE(cuMemGetInfo), FAKE_REFUSE(cuPointerGetAttribute),
                          FAKE_REFUSE(cuEventCreate), FAKE_REFUSE(cuEventElapsedTime)};
#undef FAKE_REFUSE

#define FAKE_ACCEPT(name) {#name, reinterpret_cast<void*>(&Answer<decltype(&::name), CUDA_SUCCESS>::call)},
const Entry kAccepted[] = {DG_DRIVER_FUNCTIONS(FAKE_ACCEPT)};
#undef FAKE_ACCEPT

}  // namespace

extern "C" {

__attribute__((visibility("default"))) CUresult cuGetProcAddress_v2(const char* symbol, void** fn, int, cuuint64_t,
                                                                    CUdriverProcAddressQueryResult* status) {
  *fn = nullptr;
  auto lookup = [&](const auto& table) {
    for (const Entry& e : table)
      if (*fn == nullptr && std::strcmp(e.name, symbol) == 0) *fn = e.fn;
  };
  lookup(kImplemented);
  lookup(kRefused);
  lookup(kAccepted);
  if (status) *status = *fn ? CU_GET_PROC_ADDRESS_SUCCESS : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  return *fn ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
}

__attribute__((visibility("default"))) void fake_cuda_set_launch_hook(fake_cuda_launch_hook hook, void* user) {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_hook = hook;
  g_hook_user = user;
}

__attribute__((visibility("default"))) void fake_cuda_get_counters(fake_cuda_counters* out) {
  std::lock_guard<std::mutex> lock(g_mutex);
  *out = g_counters;
}

}  // extern "C"
