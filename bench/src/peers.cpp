#include "peers.h"

#include <cublasLt.h>  // types only: the library is loaded with dlopen
#include <dlfcn.h>

#include <string>

namespace dgb {

#define DGB_LT_FUNCTIONS(X)                                                                          \
  X(cublasLtCreate) X(cublasLtGetVersion) X(cublasLtGetStatusName) X(cublasLtMatmulDescCreate)        \
  X(cublasLtMatmulDescDestroy) X(cublasLtMatmulDescSetAttribute) X(cublasLtMatrixLayoutCreate)        \
  X(cublasLtMatrixLayoutDestroy) X(cublasLtMatmulPreferenceCreate) X(cublasLtMatmulPreferenceDestroy) \
  X(cublasLtMatmulPreferenceSetAttribute) X(cublasLtMatmulAlgoGetHeuristic) X(cublasLtMatmul)

struct BlockScaledFp8::Impl {
#define DGB_LT_MEMBER(name) decltype(&::name) name = nullptr;
  DGB_LT_FUNCTIONS(DGB_LT_MEMBER)
#undef DGB_LT_MEMBER
  void* lib = nullptr;
  cublasLtHandle_t handle = nullptr;
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t la = nullptr, lb = nullptr, ld = nullptr;
  cublasLtMatmulAlgo_t algo{};
  void* workspace = nullptr;
  size_t workspace_size = 0;

  std::string status(cublasStatus_t s, const char* what) const {
    return std::string(what) + ": " + (cublasLtGetStatusName ? cublasLtGetStatusName(s) : "?") + " (" +
           std::to_string(static_cast<int>(s)) + ")";
  }
  void release() {
    if (la) cublasLtMatrixLayoutDestroy(la);
    if (lb) cublasLtMatrixLayoutDestroy(lb);
    if (ld) cublasLtMatrixLayoutDestroy(ld);
    if (desc) cublasLtMatmulDescDestroy(desc);
    la = lb = ld = nullptr;
    desc = nullptr;
  }
};

BlockScaledFp8::BlockScaledFp8() : impl_(new Impl) {}
BlockScaledFp8::~BlockScaledFp8() {
  if (impl_->lib) impl_->release();
}

bool BlockScaledFp8::load(std::string* why) {
  Impl& I = *impl_;
  if (I.handle) return true;
#if !defined(CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F) && (CUBLAS_VERSION < 120900)
  *why = "built against a cuBLASLt header without VEC128_32F / BLK128x128_32F scale modes (needs 12.9+)";
  return false;
#endif
  for (const char* name : {"libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so"}) {
    I.lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (I.lib) break;
  }
  if (!I.lib) {
    *why = "libcublasLt cannot be loaded";
    return false;
  }
#define DGB_LT_RESOLVE(name)                                                   \
  I.name = reinterpret_cast<decltype(&::name)>(dlsym(I.lib, #name));           \
  if (!I.name) {                                                               \
    *why = "libcublasLt lacks " #name;                                         \
    return false;                                                              \
  }
  DGB_LT_FUNCTIONS(DGB_LT_RESOLVE)
#undef DGB_LT_RESOLVE
  if (I.cublasLtGetVersion() < 120900) {
    *why = "cuBLASLt " + std::to_string(I.cublasLtGetVersion()) + " predates block-scaled FP8 (needs 12.9+)";
    return false;
  }
  const cublasStatus_t s = I.cublasLtCreate(&I.handle);
  if (s != CUBLAS_STATUS_SUCCESS) {
    *why = I.status(s, "cublasLtCreate");
    I.handle = nullptr;
    return false;
  }
  return true;
}

std::string BlockScaledFp8::version() const {
  return impl_->cublasLtGetVersion ? std::to_string(impl_->cublasLtGetVersion()) : "";
}

bool BlockScaledFp8::prepare(int64_t m, int64_t n, int64_t k, void* workspace, size_t workspace_size,
                             std::string* why) {
  Impl& I = *impl_;
  I.release();
  I.workspace = workspace;
  I.workspace_size = workspace_size;
#define DGB_LT_TRY(call)                        \
  do {                                          \
    const cublasStatus_t s_ = I.call;           \
    if (s_ != CUBLAS_STATUS_SUCCESS) {          \
      *why = I.status(s_, #call);               \
      return false;                             \
    }                                           \
  } while (0)
  // Column-major view, operands swapped: cuBLASLt A = our B (weights, 128x128 scales) as a K x N
  // matrix used transposed; cuBLASLt B = our A (activations, 1x128 scales) as K x M.
  DGB_LT_TRY(cublasLtMatmulDescCreate(&I.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  const cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
  DGB_LT_TRY(cublasLtMatmulDescSetAttribute(I.desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta)));
  DGB_LT_TRY(cublasLtMatmulDescSetAttribute(I.desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof(tb)));
  const int32_t mode_a = CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F, mode_b = CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F;
  DGB_LT_TRY(cublasLtMatmulDescSetAttribute(I.desc, CUBLASLT_MATMUL_DESC_A_SCALE_MODE, &mode_a, sizeof(mode_a)));
  DGB_LT_TRY(cublasLtMatmulDescSetAttribute(I.desc, CUBLASLT_MATMUL_DESC_B_SCALE_MODE, &mode_b, sizeof(mode_b)));
  const int8_t fast = 0;
  DGB_LT_TRY(cublasLtMatmulDescSetAttribute(I.desc, CUBLASLT_MATMUL_DESC_FAST_ACCUM, &fast, sizeof(fast)));
  DGB_LT_TRY(cublasLtMatrixLayoutCreate(&I.la, CUDA_R_8F_E4M3, k, n, k));
  DGB_LT_TRY(cublasLtMatrixLayoutCreate(&I.lb, CUDA_R_8F_E4M3, k, m, k));
  DGB_LT_TRY(cublasLtMatrixLayoutCreate(&I.ld, CUDA_R_16BF, n, m, n));
  // The heuristic validates the scale pointers of a block-scaled descriptor: give it a valid
  // device address (the workspace) until run() sets the real ones.
  const void* placeholder = I.workspace;
  DGB_LT_TRY(cublasLtMatmulDescSetAttribute(I.desc, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &placeholder, sizeof(placeholder)));
  DGB_LT_TRY(cublasLtMatmulDescSetAttribute(I.desc, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &placeholder, sizeof(placeholder)));
  cublasLtMatmulPreference_t pref = nullptr;
  DGB_LT_TRY(cublasLtMatmulPreferenceCreate(&pref));
  const uint64_t ws = workspace_size;
  I.cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws));
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  const cublasStatus_t s =
      I.cublasLtMatmulAlgoGetHeuristic(I.handle, I.desc, I.la, I.lb, I.ld, I.ld, pref, 1, &result, &found);
  I.cublasLtMatmulPreferenceDestroy(pref);
  if (s != CUBLAS_STATUS_SUCCESS || found == 0) {
    *why = s != CUBLAS_STATUS_SUCCESS ? I.status(s, "cublasLtMatmulAlgoGetHeuristic")
                                      : "cuBLASLt offers no block-scaled FP8 algorithm for this shape/device";
    return false;
  }
  I.algo = result.algo;
  return true;
#undef DGB_LT_TRY
}

std::string BlockScaledFp8::run(const void* a, const float* sfa, const void* b, const float* sfb, void* d,
                                void* stream) {
  Impl& I = *impl_;
  const void* pa = sfb;  // cuBLASLt's A is our B
  const void* pb = sfa;
  cublasStatus_t s = I.cublasLtMatmulDescSetAttribute(I.desc, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &pa, sizeof(pa));
  if (s == CUBLAS_STATUS_SUCCESS)
    s = I.cublasLtMatmulDescSetAttribute(I.desc, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &pb, sizeof(pb));
  if (s != CUBLAS_STATUS_SUCCESS) return I.status(s, "cublasLtMatmulDescSetAttribute(scale pointers)");
  const float alpha = 1.0f, beta = 0.0f;
  s = I.cublasLtMatmul(I.handle, I.desc, &alpha, b, I.la, a, I.lb, &beta, d, I.ld, d, I.ld, &I.algo, I.workspace,
                       I.workspace_size, static_cast<cudaStream_t>(stream));
  return s == CUBLAS_STATUS_SUCCESS ? "" : I.status(s, "cublasLtMatmul");
}

// ---- NVML ------------------------------------------------------------------------------------

namespace {
using nvmlReturn = int;
using nvmlDevice = void*;
}  // namespace

Json nvml_info(const std::string& pci_bus_id) {
  Json out = Json::object();
  void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) return out;
  auto sym = [&](const char* n) { return dlsym(lib, n); };
  auto init = reinterpret_cast<nvmlReturn (*)()>(sym("nvmlInit_v2"));
  auto by_bus = reinterpret_cast<nvmlReturn (*)(const char*, nvmlDevice*)>(sym("nvmlDeviceGetHandleByPciBusId_v2"));
  auto driver = reinterpret_cast<nvmlReturn (*)(char*, unsigned)>(sym("nvmlSystemGetDriverVersion"));
  auto clock = reinterpret_cast<nvmlReturn (*)(nvmlDevice, int, unsigned*)>(sym("nvmlDeviceGetClockInfo"));
  auto max_clock = reinterpret_cast<nvmlReturn (*)(nvmlDevice, int, unsigned*)>(sym("nvmlDeviceGetMaxClockInfo"));
  auto power_limit = reinterpret_cast<nvmlReturn (*)(nvmlDevice, unsigned*)>(sym("nvmlDeviceGetEnforcedPowerLimit"));
  auto temperature = reinterpret_cast<nvmlReturn (*)(nvmlDevice, int, unsigned*)>(sym("nvmlDeviceGetTemperature"));
  auto shutdown = reinterpret_cast<nvmlReturn (*)()>(sym("nvmlShutdown"));
  if (!init || init() != 0) return out;
  char buf[96] = {};
  if (driver && driver(buf, sizeof(buf)) == 0) out["driver_version"] = std::string(buf);
  nvmlDevice dev = nullptr;
  if (by_bus && by_bus(pci_bus_id.c_str(), &dev) == 0) {
    unsigned v = 0;
    // nvmlClockType_t: 0 graphics, 1 SM, 2 memory.
    if (clock && clock(dev, 1, &v) == 0) out["sm_clock_mhz_now"] = static_cast<int64_t>(v);
    if (clock && clock(dev, 2, &v) == 0) out["mem_clock_mhz_now"] = static_cast<int64_t>(v);
    if (max_clock && max_clock(dev, 1, &v) == 0) out["sm_clock_mhz_max"] = static_cast<int64_t>(v);
    if (max_clock && max_clock(dev, 2, &v) == 0) out["mem_clock_mhz_max"] = static_cast<int64_t>(v);
    if (power_limit && power_limit(dev, &v) == 0) out["power_limit_w"] = v / 1000.0;
    if (temperature && temperature(dev, 0, &v) == 0) out["temperature_c"] = static_cast<int64_t>(v);
  }
  if (shutdown) shutdown();
  return out;
}

}  // namespace dgb
