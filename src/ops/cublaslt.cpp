#include "ops/cublaslt.h"

#include <cublasLt.h>  // types and prototypes only; the library is reached through dlopen
#include <dlfcn.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "runtime/device.h"
#include "runtime/driver.h"
#include "runtime/log.h"
#include "runtime/status.h"
#include "runtime/stream.h"
#include "runtime/tensor.h"

namespace dg::cublaslt {
namespace {

#define DG_CUBLASLT_FUNCTIONS(X)                                                                     \
  X(cublasLtCreate) X(cublasLtDestroy) X(cublasLtGetVersion) X(cublasLtGetStatusName)                 \
  X(cublasLtMatmulDescCreate) X(cublasLtMatmulDescDestroy) X(cublasLtMatmulDescSetAttribute)          \
  X(cublasLtMatrixLayoutCreate) X(cublasLtMatrixLayoutDestroy) X(cublasLtMatmulPreferenceCreate)      \
  X(cublasLtMatmulPreferenceDestroy) X(cublasLtMatmulPreferenceSetAttribute)                          \
  X(cublasLtMatmulAlgoGetHeuristic) X(cublasLtMatmul) X(cublasLtMatrixTransformDescCreate)            \
  X(cublasLtMatrixTransformDescDestroy) X(cublasLtMatrixTransformDescSetAttribute)                    \
  X(cublasLtMatrixTransform)

struct Lib {
#define DG_CUBLASLT_MEMBER(name) decltype(&::name) name = nullptr;
  DG_CUBLASLT_FUNCTIONS(DG_CUBLASLT_MEMBER)
#undef DG_CUBLASLT_MEMBER
  void* handle = nullptr;
  std::string version;
};

struct LoadState {
  std::once_flag once;
  dg_status status = DG_SUCCESS;
  std::string reason;
  Lib lib;
};

LoadState& load_state() {
  static LoadState* state = new LoadState();  // never destroyed: the library stays loaded
  return *state;
}

const Lib& lib() { return load_state().lib; }

dg_status do_load(LoadState& s) {
  const char* names[] = {"libcublasLt.so.13", "libcublasLt.so"};
  std::string errors;
  for (const char* name : names) {
    s.lib.handle = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (s.lib.handle != nullptr) break;
    const char* e = dlerror();
    errors += std::string(errors.empty() ? "" : "; ") + (e ? e : name);
  }
  if (s.lib.handle == nullptr) {
    s.reason = "cuBLASLt cannot be loaded (" + errors + "); install libcublas (CUDA 13) or add it to LD_LIBRARY_PATH";
    return DG_ERROR_UNSUPPORTED;
  }
#define DG_CUBLASLT_RESOLVE(name)                                                                  \
  s.lib.name = reinterpret_cast<decltype(&::name)>(dlsym(s.lib.handle, #name));                    \
  if (s.lib.name == nullptr) {                                                                     \
    s.reason = "cuBLASLt was loaded but lacks the symbol " #name " (too old a libcublasLt?)";      \
    return DG_ERROR_UNSUPPORTED;                                                                   \
  }
  DG_CUBLASLT_FUNCTIONS(DG_CUBLASLT_RESOLVE)
#undef DG_CUBLASLT_RESOLVE
  s.lib.version = "cuBLASLt " + std::to_string(s.lib.cublasLtGetVersion());
  return DG_SUCCESS;
}

dg_status check(cublasStatus_t status, const char* what) {
  if (status == CUBLAS_STATUS_SUCCESS) return DG_SUCCESS;
  const char* name = lib().cublasLtGetStatusName ? lib().cublasLtGetStatusName(status) : "?";
  dg_status code = DG_ERROR_CUDA;
  if (status == CUBLAS_STATUS_NOT_SUPPORTED || status == CUBLAS_STATUS_ARCH_MISMATCH) code = DG_ERROR_UNSUPPORTED;
  if (status == CUBLAS_STATUS_INVALID_VALUE) code = DG_ERROR_INVALID_ARGUMENT;
  if (status == CUBLAS_STATUS_ALLOC_FAILED) code = DG_ERROR_OUT_OF_MEMORY;
  return fail(code, "{}: {} ({})", what, name, static_cast<int>(status));
}

#define DG_LT(call) DG_TRY(check(lib().call, #call))

// One cuBLASLt handle per device, created in the device's primary context.
dg_status handle_for(const Device& device, cublasLtHandle_t* out) {
  static std::mutex mutex;
  static std::unordered_map<int, cublasLtHandle_t>* handles = new std::unordered_map<int, cublasLtHandle_t>();
  std::lock_guard<std::mutex> lock(mutex);
  auto it = handles->find(device.ordinal);
  if (it != handles->end()) {
    *out = it->second;
    return DG_SUCCESS;
  }
  cublasLtHandle_t handle = nullptr;
  DG_LT(cublasLtCreate(&handle));
  handles->emplace(device.ordinal, handle);
  *out = handle;
  return DG_SUCCESS;
}

cudaDataType_t cuda_type(dg_dtype dtype) {
  switch (dtype) {
    case DG_DTYPE_BFLOAT16: return CUDA_R_16BF;
    case DG_DTYPE_FLOAT8_E4M3: return CUDA_R_8F_E4M3;
    case DG_DTYPE_FLOAT32: return CUDA_R_32F;
    default: return CUDA_R_32F;
  }
}

// Largest power of two (capped at 256) dividing the address: what the heuristic may assume.
uint32_t alignment_of(const void* p) {
  uint32_t a = 256;
  const auto v = reinterpret_cast<uintptr_t>(p);
  while (a > 1 && (v % a) != 0) a >>= 1;
  return a;
}

// Everything that decides the descriptors and the algorithm: pointers only through their alignment.
struct PlanKey {
  int64_t v[20] = {};
  bool operator==(const PlanKey& o) const { return std::memcmp(v, o.v, sizeof(v)) == 0; }
};
struct PlanKeyHash {
  size_t operator()(const PlanKey& k) const {
    uint64_t h = 1469598103934665603ull;
    for (int64_t x : k.v) {
      h ^= static_cast<uint64_t>(x);
      h *= 1099511628211ull;
      h ^= h >> 29;
    }
    return static_cast<size_t>(h);
  }
};

// Descriptors and algorithm of one problem shape. Read-only once built, so shared by threads.
struct Plan {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t layout_a = nullptr, layout_b = nullptr, layout_c = nullptr, layout_d = nullptr;
  cublasLtMatmulAlgo_t algo{};
  size_t workspace_needed = 0;
  ~Plan() {
    if (!lib().cublasLtMatmulDescDestroy) return;
    if (layout_a) lib().cublasLtMatrixLayoutDestroy(layout_a);
    if (layout_b) lib().cublasLtMatrixLayoutDestroy(layout_b);
    if (layout_c) lib().cublasLtMatrixLayoutDestroy(layout_c);
    if (layout_d) lib().cublasLtMatrixLayoutDestroy(layout_d);
    if (desc) lib().cublasLtMatmulDescDestroy(desc);
  }
};

// cuBLASLt is column-major: it computes Dᵀ[N, M] = B'[N, K] · A'ᵀ[K, M], so its "A" is our B' and its
// "B" is our A'. A K-major B' is a column-major K x N matrix used transposed; an N-major one is an
// N x K matrix used as is; likewise for A'.
struct Mapping {
  cublasOperation_t trans_a, trans_b;
  uint64_t a_rows, a_cols, b_rows, b_cols;
  int64_t lda, ldb;
};

Mapping map_problem(const Problem& p) {
  Mapping m{};
  // A dimension of size 1 has an arbitrary stride: prefer the K-major reading (the only one FP8
  // supports) and make the leading dimension legal.
  const bool b_k_major = p.b_stride_k == 1 && (p.b_stride_n != 1 || p.n == 1 || p.k != 1);
  const bool a_k_major = p.a_stride_k == 1 && (p.a_stride_m != 1 || p.m == 1 || p.k != 1);
  if (b_k_major) {
    m.trans_a = CUBLAS_OP_T;
    m.a_rows = p.k, m.a_cols = p.n;
    m.lda = p.n == 1 ? std::max<int64_t>(p.b_stride_n, p.k) : p.b_stride_n;
  } else {
    m.trans_a = CUBLAS_OP_N;
    m.a_rows = p.n, m.a_cols = p.k;
    m.lda = p.k == 1 ? std::max<int64_t>(p.b_stride_k, p.n) : p.b_stride_k;
  }
  if (a_k_major) {
    m.trans_b = CUBLAS_OP_N;
    m.b_rows = p.k, m.b_cols = p.m;
    m.ldb = p.m == 1 ? std::max<int64_t>(p.a_stride_m, p.k) : p.a_stride_m;
  } else {
    m.trans_b = CUBLAS_OP_T;
    m.b_rows = p.m, m.b_cols = p.k;
    m.ldb = p.k == 1 ? std::max<int64_t>(p.a_stride_k, p.m) : p.a_stride_k;
  }
  return m;
}

int64_t leading_dim_of_d(int64_t ld, int64_t n, int64_t m) { return m == 1 ? std::max(ld, n) : ld; }

dg_status build_plan(cublasLtHandle_t handle, const Problem& p, const Mapping& mp, int sm_target, Plan* plan) {
  const bool fp8 = p.ab_dtype == DG_DTYPE_FLOAT8_E4M3;
  // 32F_FAST_TF32 as DeepGEMM (only FP32 operands would be affected); FP8 needs plain 32F
  // (docs/gemm.md#the-cublaslt-baseline).
  const cublasComputeType_t compute = fp8 ? CUBLAS_COMPUTE_32F : CUBLAS_COMPUTE_32F_FAST_TF32;
  const cudaDataType_t scale_type = CUDA_R_32F;
  DG_LT(cublasLtMatmulDescCreate(&plan->desc, compute, scale_type));
  DG_LT(cublasLtMatmulDescSetAttribute(plan->desc, CUBLASLT_MATMUL_DESC_TRANSA, &mp.trans_a, sizeof(mp.trans_a)));
  DG_LT(cublasLtMatmulDescSetAttribute(plan->desc, CUBLASLT_MATMUL_DESC_TRANSB, &mp.trans_b, sizeof(mp.trans_b)));
  const int32_t sms = sm_target;
  DG_LT(cublasLtMatmulDescSetAttribute(plan->desc, CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET, &sms, sizeof(sms)));
  if (fp8) {
    const int8_t fast_accum = 0;
    DG_LT(cublasLtMatmulDescSetAttribute(plan->desc, CUBLASLT_MATMUL_DESC_FAST_ACCUM, &fast_accum, sizeof(fast_accum)));
  }
  const cudaDataType_t ab = cuda_type(p.ab_dtype), dt = cuda_type(p.d_dtype);
  DG_LT(cublasLtMatrixLayoutCreate(&plan->layout_a, ab, mp.a_rows, mp.a_cols, mp.lda));
  DG_LT(cublasLtMatrixLayoutCreate(&plan->layout_b, ab, mp.b_rows, mp.b_cols, mp.ldb));
  DG_LT(cublasLtMatrixLayoutCreate(&plan->layout_d, dt, p.n, p.m, leading_dim_of_d(p.ldd, p.n, p.m)));
  const int64_t ldc = p.c ? leading_dim_of_d(p.ldc, p.n, p.m) : leading_dim_of_d(p.ldd, p.n, p.m);
  DG_LT(cublasLtMatrixLayoutCreate(&plan->layout_c, dt, p.n, p.m, ldc));

  cublasLtMatmulPreference_t pref = nullptr;
  DG_LT(cublasLtMatmulPreferenceCreate(&pref));
  std::unique_ptr<void, void (*)(void*)> pref_guard(
      pref, [](void* x) { lib().cublasLtMatmulPreferenceDestroy(static_cast<cublasLtMatmulPreference_t>(x)); });
  const uint64_t ws = p.workspace_size;
  DG_LT(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws)));
  const uint32_t schemes = CUBLASLT_REDUCTION_SCHEME_NONE | CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE;
  DG_LT(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, &schemes,
                                             sizeof(schemes)));
  const uint32_t align_a = alignment_of(p.b), align_b = alignment_of(p.a), align_d = alignment_of(p.d);
  const uint32_t align_c = p.c ? alignment_of(p.c) : align_d;
  DG_LT(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &align_a, sizeof(align_a)));
  DG_LT(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &align_b, sizeof(align_b)));
  DG_LT(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &align_c, sizeof(align_c)));
  DG_LT(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &align_d, sizeof(align_d)));

  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  const cublasStatus_t st = lib().cublasLtMatmulAlgoGetHeuristic(handle, plan->desc, plan->layout_a, plan->layout_b,
                                                                 plan->layout_c, plan->layout_d, pref, 1, &result,
                                                                 &found);
  if (st == CUBLAS_STATUS_NOT_SUPPORTED || (st == CUBLAS_STATUS_SUCCESS && found == 0))
    return fail(DG_ERROR_UNSUPPORTED,
                "cuBLASLt has no algorithm for {} x {} -> {} with M={} N={} K={} (a {}-major, b {}-major, "
                "alignments a={} b={} d={} bytes, workspace {} bytes){}",
                dtype_name(p.ab_dtype), dtype_name(p.ab_dtype), dtype_name(p.d_dtype), p.m, p.n, p.k,
                mp.trans_b == CUBLAS_OP_N ? "K" : "M", mp.trans_a == CUBLAS_OP_T ? "K" : "N", align_b, align_a, align_d,
                p.workspace_size,
                p.ab_dtype == DG_DTYPE_FLOAT8_E4M3 ? " (FP8 needs 16-byte aligned operands and strides)" : "");
  DG_TRY(check(st, "cublasLtMatmulAlgoGetHeuristic"));
  plan->algo = result.algo;
  plan->workspace_needed = result.workspaceSize;
  return DG_SUCCESS;
}

// D := beta * C (C given), or D := 0: the K == 0 early exit (docs/gemm.md#the-c-term-and-early-exits).
dg_status run_k_zero(cublasLtHandle_t handle, CUstream stream, const Problem& p) {
  const size_t esize = p.d_dtype == DG_DTYPE_FLOAT32 ? 4 : 2;
  if (p.c == nullptr) {
    const auto base = reinterpret_cast<CUdeviceptr>(p.d);
    if (p.ldd == p.n || p.m == 1) {
      const size_t count = static_cast<size_t>(p.m) * static_cast<size_t>(p.n);
      if (esize == 4) DG_CU(cuMemsetD32Async(base, 0, count, stream));
      else DG_CU(cuMemsetD16Async(base, 0, count, stream));
    } else {
      for (int64_t row = 0; row < p.m; ++row) {
        const CUdeviceptr ptr = base + static_cast<CUdeviceptr>(row * p.ldd * static_cast<int64_t>(esize));
        if (esize == 4) DG_CU(cuMemsetD32Async(ptr, 0, p.n, stream));
        else DG_CU(cuMemsetD16Async(ptr, 0, p.n, stream));
      }
    }
    return DG_SUCCESS;
  }
  if (p.c == p.d && p.beta == 1.0f) return DG_SUCCESS;
  const cudaDataType_t dt = cuda_type(p.d_dtype);
  cublasLtMatrixTransformDesc_t desc = nullptr;
  DG_LT(cublasLtMatrixTransformDescCreate(&desc, CUDA_R_32F));
  std::unique_ptr<void, void (*)(void*)> desc_guard(
      desc, [](void* x) { lib().cublasLtMatrixTransformDescDestroy(static_cast<cublasLtMatrixTransformDesc_t>(x)); });
  cublasLtMatrixLayout_t lc = nullptr, ld = nullptr;
  DG_LT(cublasLtMatrixLayoutCreate(&lc, dt, p.n, p.m, leading_dim_of_d(p.ldc, p.n, p.m)));
  std::unique_ptr<void, void (*)(void*)> lc_guard(
      lc, [](void* x) { lib().cublasLtMatrixLayoutDestroy(static_cast<cublasLtMatrixLayout_t>(x)); });
  DG_LT(cublasLtMatrixLayoutCreate(&ld, dt, p.n, p.m, leading_dim_of_d(p.ldd, p.n, p.m)));
  std::unique_ptr<void, void (*)(void*)> ld_guard(
      ld, [](void* x) { lib().cublasLtMatrixLayoutDestroy(static_cast<cublasLtMatrixLayout_t>(x)); });
  const float zero = 0.0f;
  DG_LT(cublasLtMatrixTransform(handle, desc, &p.beta, p.c, lc, &zero, nullptr, nullptr, p.d, ld,
                                reinterpret_cast<cudaStream_t>(stream)));
  return DG_SUCCESS;
}

struct PlanCache {
  std::mutex mutex;
  std::unordered_map<PlanKey, std::unique_ptr<Plan>, PlanKeyHash> plans;
};
PlanCache& plan_cache() {
  static PlanCache* cache = new PlanCache();  // leaked: plans outlive static destruction order issues
  return *cache;
}

}  // namespace

dg_status load() {
  LoadState& s = load_state();
  std::call_once(s.once, [&s] {
    s.status = do_load(s);
    if (s.status != DG_SUCCESS) log::info("{}", s.reason);
  });
  if (s.status != DG_SUCCESS) return fail(s.status, "{}", s.reason);
  return DG_SUCCESS;
}

const char* version_string() {
  LoadState& s = load_state();
  return s.status == DG_SUCCESS ? s.lib.version.c_str() : "";
}

dg_status run(const dg_stream_s& stream, const Problem& p) {
  DG_TRY(load());
  int sm_target = 0;
  DG_TRY(num_sms_of(stream, &sm_target));
  ContextScope scope;
  DG_TRY(scope.enter(*stream.device));
  cublasLtHandle_t handle = nullptr;
  DG_TRY(handle_for(*stream.device, &handle));
  if (p.k == 0) return run_k_zero(handle, stream.handle, p);

  const Mapping mp = map_problem(p);
  PlanKey key;
  int64_t* v = key.v;
  v[0] = stream.device->ordinal;
  v[1] = p.ab_dtype;
  v[2] = p.d_dtype;
  v[3] = p.m, v[4] = p.n, v[5] = p.k;
  v[6] = mp.trans_a, v[7] = mp.trans_b;
  v[8] = mp.lda, v[9] = mp.ldb;
  v[10] = p.ldd;
  v[11] = p.c ? p.ldc : -1;
  v[12] = sm_target;
  v[13] = static_cast<int64_t>(p.workspace_size);
  v[14] = alignment_of(p.a), v[15] = alignment_of(p.b), v[16] = alignment_of(p.d);
  v[17] = p.c ? alignment_of(p.c) : 0;

  const Plan* plan = nullptr;
  {
    PlanCache& cache = plan_cache();
    std::lock_guard<std::mutex> lock(cache.mutex);
    auto it = cache.plans.find(key);
    if (it != cache.plans.end()) plan = it->second.get();
  }
  if (plan == nullptr) {
    auto fresh = std::make_unique<Plan>();
    DG_TRY(build_plan(handle, p, mp, sm_target, fresh.get()));
    PlanCache& cache = plan_cache();
    std::lock_guard<std::mutex> lock(cache.mutex);
    auto inserted = cache.plans.emplace(key, std::move(fresh));  // a racing thread's plan is equivalent
    plan = inserted.first->second.get();
  }

  const float beta = p.c ? p.beta : 0.0f;
  const void* c = p.c ? p.c : p.d;
  DG_LT(cublasLtMatmul(handle, plan->desc, &p.alpha, p.b, plan->layout_a, p.a, plan->layout_b, &beta, c,
                       plan->layout_c, p.d, plan->layout_d, &plan->algo, p.workspace, p.workspace_size,
                       reinterpret_cast<cudaStream_t>(stream.handle)));
  return DG_SUCCESS;
}

}  // namespace dg::cublaslt
