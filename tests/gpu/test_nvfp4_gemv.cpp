// dg_nvfp4_gemv against a CPU reference that decodes E2M1 and E4M3 exactly and sums in double;
// random codes over all 16 values, random E4M3 scales (no NaN codes), output poisoned first.
#include <doctest/doctest.h>

#include <dlfcn.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "dg.h"
#include "host_numerics.h"
#include "runtime/device.h"
#include "runtime/driver.h"

namespace {

using dg::test::e4m3_to_f;

double e2m1(int c) {
  static const double v[8] = {0, 0.5, 1, 1.5, 2, 3, 4, 6};
  return (c & 8 ? -1 : 1) * v[c & 7];
}
double half_to_double(uint16_t h) {
  const int e = (h >> 10) & 31, m = h & 1023;
  const double v = e == 0 ? std::ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : std::ldexp(1 + m / 1024.0, e - 15);
  return h & 0x8000 ? -v : v;
}

// The driver's virtual memory management, which the library does not use, resolved as the
// library resolves its own entry points: cuGetProcAddress from the loaded libcuda.so.1, CUDA 12.0 ABI.
struct Vmm {
  decltype(&::cuMemGetAllocationGranularity) granularity = nullptr;
  decltype(&::cuMemAddressReserve) reserve = nullptr;
  decltype(&::cuMemAddressFree) address_free = nullptr;
  decltype(&::cuMemCreate) create = nullptr;
  decltype(&::cuMemRelease) release = nullptr;
  decltype(&::cuMemMap) map = nullptr;
  decltype(&::cuMemUnmap) unmap = nullptr;
  decltype(&::cuMemSetAccess) set_access = nullptr;
};

const Vmm& vmm() {
  static const Vmm v = [] {
    Vmm r;
    void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);  // loaded by get_device
    REQUIRE(lib != nullptr);
    using GetProc = CUresult (*)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);
    auto get_proc = reinterpret_cast<GetProc>(dlsym(lib, "cuGetProcAddress_v2"));
    REQUIRE(reinterpret_cast<void*>(get_proc) != nullptr);
    auto resolve = [&](const char* name, auto& fn) {
      void* p = nullptr;
      CUdriverProcAddressQueryResult found{};
      CAPTURE(name);
      REQUIRE(get_proc(name, &p, 12000, CU_GET_PROC_ADDRESS_DEFAULT, &found) == CUDA_SUCCESS);
      REQUIRE(p != nullptr);
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(p);
    };
    resolve("cuMemGetAllocationGranularity", r.granularity);
    resolve("cuMemAddressReserve", r.reserve);
    resolve("cuMemAddressFree", r.address_free);
    resolve("cuMemCreate", r.create);
    resolve("cuMemRelease", r.release);
    resolve("cuMemMap", r.map);
    resolve("cuMemUnmap", r.unmap);
    resolve("cuMemSetAccess", r.set_access);
    dlclose(lib);  // drops the reference this dlopen took; the library keeps its own
    return r;
  }();
  return v;
}

// Device memory for one operand. Plain: cuMemAlloc. Guarded: the bytes end exactly where a mapping
// ends, and the next granule of the virtual range is reserved but never mapped, so that a kernel
// reading or writing one byte past the operand faults, with or without a sanitizer.
struct DeviceBuffer {
  CUdeviceptr ptr = 0;
  CUdeviceptr base = 0;  // guarded: the reservation, `reserved` bytes of which `mapped` are mapped
  size_t reserved = 0, mapped = 0;
  CUmemGenericAllocationHandle handle = 0;

  explicit DeviceBuffer(size_t bytes) { REQUIRE(dg::driver::api().cuMemAlloc(&ptr, bytes ? bytes : 1) == CUDA_SUCCESS); }
  DeviceBuffer(size_t bytes, const dg::Device& device) {
    const Vmm& v = vmm();
    CUmemAllocationProp prop{};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = static_cast<int>(device.handle);
    size_t granule = 0;
    REQUIRE(v.granularity(&granule, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM) == CUDA_SUCCESS);
    mapped = (std::max<size_t>(bytes, 1) + granule - 1) / granule * granule;
    reserved = mapped + granule;
    REQUIRE(v.reserve(&base, reserved, 0, 0, 0) == CUDA_SUCCESS);
    REQUIRE(v.create(&handle, mapped, &prop, 0) == CUDA_SUCCESS);
    REQUIRE(v.map(base, mapped, 0, handle, 0) == CUDA_SUCCESS);
    CUmemAccessDesc access{};
    access.location = prop.location;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    REQUIRE(v.set_access(base, mapped, &access, 1) == CUDA_SUCCESS);
    ptr = base + mapped - bytes;
  }
  ~DeviceBuffer() {
    if (base == 0) {
      dg::driver::api().cuMemFree(ptr);
      return;
    }
    const Vmm& v = vmm();
    if (handle != 0) v.unmap(base, mapped);  // fails harmlessly where the constructor stopped before mapping
    if (handle != 0) v.release(handle);
    v.address_free(base, reserved);
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  void* get() const { return reinterpret_cast<void*>(ptr); }
};

struct Fixture {
  dg::Device* device = nullptr;
  dg::ContextScope scope;
  dg_stream* stream = nullptr;
  Fixture() {
    REQUIRE(dg::get_device(0, &device) == DG_SUCCESS);
    REQUIRE(scope.enter(*device) == DG_SUCCESS);
    REQUIRE(dg_stream_create(&stream, 0, nullptr, DG_STREAM_CREATE, nullptr) == DG_SUCCESS);
  }
  ~Fixture() { dg_stream_destroy(stream); }
};

dg_tensor* tensor(void* data, dg_dtype dtype, int rank, std::vector<int64_t> sizes, std::vector<int64_t> strides) {
  dg_tensor* t = nullptr;
  REQUIRE(dg_tensor_create(&t, data, dtype, rank, sizes.data(), strides.data()) == DG_SUCCESS);
  return t;
}

struct Case {
  int M, K, L;
  int np = 128;      // rows of b / sfb (only row 0 is read)
  bool pad = false;  // padded row / batch strides (descriptor strides, not the packed layout)
  bool guard = false;  // every operand ends at the end of a mapping (DeviceBuffer's guarded form)
  dg_nvfp4_gemv_options options = DG_NVFP4_GEMV_OPTIONS_INIT;
};

void run_case(Fixture& f, const Case& cs, std::mt19937_64& rng) {
  const int M = cs.M, K = cs.K, L = cs.L;
  CAPTURE(M);
  CAPTURE(K);
  CAPTURE(L);
  CAPTURE(cs.pad);
  CAPTURE(cs.guard);
  const int64_t a_sm = K / 2 + (cs.pad ? 32 : 0), a_sl = M * a_sm + (cs.pad ? 64 : 0);
  const int64_t s_sm = K / 16 + (cs.pad ? 6 : 0), s_sl = M * s_sm + (cs.pad ? 16 : 0);
  const int64_t b_sl = int64_t(cs.np) * (K / 2 + (cs.pad ? 16 : 0)), sb_sl = int64_t(cs.np) * (K / 16 + (cs.pad ? 2 : 0));
  const int64_t c_sl = M + (cs.pad ? 5 : 0);
  std::vector<uint8_t> ha(a_sl * L), hsa(s_sl * L), hb(b_sl * L), hsb(sb_sl * L);
  for (auto& x : ha) x = static_cast<uint8_t>(rng());
  for (auto& x : hb) x = static_cast<uint8_t>(rng());
  auto scale = [&] {  // E4M3 with exponent 0..8 (subnormals included), random sign: no NaN, no FP16 overflow
    const uint64_t r = rng();
    return static_cast<uint8_t>(((r >> 12) & 1) << 7 | (r % 9) << 3 | ((r >> 8) & 7));
  };
  for (auto& x : hsa) x = scale();
  for (auto& x : hsb) x = scale();

  // Guarded: each buffer holds its operand from the first to the last byte a view of it covers
  // (no padding after the last row of the last batch), and that byte ends the mapping.
  auto span = [&](int64_t rows, int64_t row_stride, int64_t batch_stride, int64_t row_bytes) {
    return static_cast<size_t>((L - 1) * batch_stride + (rows - 1) * row_stride + row_bytes);
  };
  const size_t a_bytes = cs.guard ? span(M, a_sm, a_sl, K / 2) : ha.size();
  const size_t sa_bytes = cs.guard ? span(M, s_sm, s_sl, K / 16) : hsa.size();
  const size_t b_bytes = cs.guard ? span(cs.np, b_sl / cs.np, b_sl, K / 2) : hb.size();
  const size_t sb_bytes = cs.guard ? span(cs.np, sb_sl / cs.np, sb_sl, K / 16) : hsb.size();
  const size_t c_bytes = cs.guard ? span(M, 1, c_sl, 1) * 2 : size_t(c_sl) * L * 2;
  auto alloc = [&](size_t bytes) {
    return cs.guard ? std::make_unique<DeviceBuffer>(bytes, *f.device) : std::make_unique<DeviceBuffer>(bytes);
  };
  auto da = alloc(a_bytes), dsa = alloc(sa_bytes), db = alloc(b_bytes), dsb = alloc(sb_bytes), dc = alloc(c_bytes);
  const auto& api = dg::driver::api();
  REQUIRE(api.cuMemcpyHtoD(da->ptr, ha.data(), a_bytes) == CUDA_SUCCESS);
  REQUIRE(api.cuMemcpyHtoD(dsa->ptr, hsa.data(), sa_bytes) == CUDA_SUCCESS);
  REQUIRE(api.cuMemcpyHtoD(db->ptr, hb.data(), b_bytes) == CUDA_SUCCESS);
  REQUIRE(api.cuMemcpyHtoD(dsb->ptr, hsb.data(), sb_bytes) == CUDA_SUCCESS);

  dg_tensor* a = tensor(da->get(), DG_DTYPE_FLOAT4_E2M1X2, 3, {M, K / 2, L}, {a_sm, 1, a_sl});
  dg_tensor* sfa = tensor(dsa->get(), DG_DTYPE_FLOAT8_E4M3, 3, {M, K / 16, L}, {s_sm, 1, s_sl});
  dg_tensor* b = tensor(db->get(), DG_DTYPE_FLOAT4_E2M1X2, 3, {cs.np, K / 2, L}, {b_sl / cs.np, 1, b_sl});
  dg_tensor* sfb = tensor(dsb->get(), DG_DTYPE_FLOAT8_E4M3, 3, {cs.np, K / 16, L}, {sb_sl / cs.np, 1, sb_sl});
  dg_tensor* c = tensor(dc->get(), DG_DTYPE_FLOAT16, 3, {M, 1, L}, {1, 1, c_sl});

  std::vector<double> ref(size_t(M) * L);
  std::vector<double> bv(K);
  for (int l = 0; l < L; ++l) {
    for (int k = 0; k < K; ++k)
      bv[k] = e2m1((hb[l * b_sl + k / 2] >> (4 * (k & 1))) & 15) * e4m3_to_f(hsb[l * sb_sl + k / 16]);
    for (int m = 0; m < M; ++m) {
      double acc = 0;
      for (int k = 0; k < K; ++k)
        acc += e2m1((ha[l * a_sl + m * a_sm + k / 2] >> (4 * (k & 1))) & 15) *
               e4m3_to_f(hsa[l * s_sl + m * s_sm + k / 16]) * bv[k];
      ref[size_t(l) * M + m] = acc;
    }
  }

  for (uint16_t poison : {uint16_t(0xFFFF), uint16_t(0x7E7E)}) {
    std::vector<uint16_t> hc(c_sl * L, poison);
    REQUIRE(api.cuMemcpyHtoD(dc->ptr, hc.data(), c_bytes) == CUDA_SUCCESS);
    // Legacy-stream copies do not order with the test's non-blocking stream.
    REQUIRE(api.cuCtxSynchronize() == CUDA_SUCCESS);
    const dg_status s = dg_nvfp4_gemv(f.stream, a, sfa, b, sfb, c, &cs.options);
    REQUIRE_MESSAGE(s == DG_SUCCESS, std::string(dg_last_error()));
    REQUIRE(dg_stream_synchronize(f.stream) == DG_SUCCESS);
    REQUIRE(api.cuMemcpyDtoH(hc.data(), dc->ptr, c_bytes) == CUDA_SUCCESS);
    int bad = 0;
    for (int l = 0; l < L; ++l) {
      for (int m = 0; m < M; ++m) {
        const double r = ref[size_t(l) * M + m], o = half_to_double(hc[l * c_sl + m]);
        if (!(std::fabs(o - r) <= 1e-3 + 1e-3 * std::fabs(r)) && bad++ < 5) {
          CAPTURE(m);
          CAPTURE(l);
          CHECK(o == doctest::Approx(r));
        }
      }
      for (int64_t i = M; i < c_sl; ++i) CHECK(hc[l * c_sl + i] == poison);  // padding untouched (or not copied)
    }
    CHECK(bad == 0);
  }
  for (dg_tensor* t : {a, sfa, b, sfb, c}) dg_tensor_destroy(t);
}

}  // namespace

TEST_CASE("nvfp4_gemv: matches the double reference") {
  Fixture f;
  std::mt19937_64 rng(20251122);
  std::vector<Case> cases = {{128, 256, 1}, {2432, 4608, 2}, {7168, 16384, 1}, {4096, 7168, 8}, {7168, 2048, 4}};
  const int ks[] = {256, 1024, 7168, 2080, 4608};
  for (int M : {1, 7, 1000})
    for (int L : {1, 2, 3, 4, 8}) cases.push_back({M, ks[L % 5], L, M == 1 ? 1 : 128, M == 7});
  cases.push_back({1000, 0, 2});              // K = 0: c = 0
  cases.push_back({300, 65536 + 2048, 2, 3});  // the large-K loop shape
  for (const Case& cs : cases) run_case(f, cs, rng);
}

// The quick suite's GEMV: a batch with M, K and L tails, padded strides, one row, and overrides.
TEST_CASE("quick: nvfp4_gemv" * doctest::test_suite("quick")) {
  Fixture f;
  std::mt19937_64 rng(99);
  for (const Case& cs : {Case{1000, 2080, 3}, Case{7, 4608, 2, 128, true}, Case{1, 256, 1, 1}}) run_case(f, cs, rng);
  Case tuned{513, 4096, 3};
  tuned.options.threads_per_row = 8;
  tuned.options.rows_per_round = 3;
  run_case(f, tuned, rng);
}

// Every operand ends where its mapping ends, an unmapped granule after it: a load (or store) past
// any of them faults without a sanitizer. One row, one batch and several; M, K and L tails; padded
// strides; the large-K loop with one batch and two; the cross-warp row sums (K 16384); overrides.
TEST_CASE("nvfp4_gemv: operands ending at an unmapped page" * doctest::test_suite("quick")) {
  Fixture f;
  std::mt19937_64 rng(48);
  auto guarded = [](int M, int K, int L, bool pad, auto set) {
    Case cs{M, K, L, 1, pad};
    cs.guard = true;
    set(cs.options);
    return cs;
  };
  auto none = [](dg_nvfp4_gemv_options&) {};
  const Case cases[] = {
      guarded(1, 256, 1, false, none),
      guarded(1, 256, 3, true, none),
      guarded(7, 4608, 2, true, none),
      guarded(1000, 2080, 3, false, none),
      guarded(2000, 256, 1, true, none),
      guarded(33, 16384, 2, false, none),
      guarded(5, 65536 + 2048, 1, false, none),
      guarded(17, 65536 + 2048, 2, true, none),
      guarded(1000, 2048, 3, true, [](dg_nvfp4_gemv_options& o) { o.vector_bytes = 8; }),
      guarded(513, 4096, 3, false, [](dg_nvfp4_gemv_options& o) { o.threads_per_row = 8; o.rows_per_round = 3; }),
      guarded(100, 64, 5, true, [](dg_nvfp4_gemv_options& o) { o.threads_per_row = 1; o.row_groups = 64; }),
      guarded(999, 7168, 2, false, [](dg_nvfp4_gemv_options& o) { o.prefetch = -1; o.grid_blocks = 7; }),
  };
  for (const Case& cs : cases) run_case(f, cs, rng);
}

TEST_CASE("nvfp4_gemv: option overrides") {
  Fixture f;
  std::mt19937_64 rng(7);
  auto with = [](int M, int K, int L, auto set) {
    Case cs{M, K, L};
    set(cs.options);
    return cs;
  };
  run_case(f, with(1000, 2048, 3, [](dg_nvfp4_gemv_options& o) { o.vector_bytes = 8; }), rng);
  run_case(f, with(1000, 4608, 3, [](dg_nvfp4_gemv_options& o) { o.threads_per_row = 32; o.chunks_per_thread = 1; }), rng);
  run_case(f, with(999, 7168, 2, [](dg_nvfp4_gemv_options& o) { o.prefetch = -1; o.cache_hint = 2; o.grid_blocks = 7; }), rng);
  run_case(f, with(513, 4096, 3, [](dg_nvfp4_gemv_options& o) { o.threads_per_row = 8; o.rows_per_round = 3; o.cache_hint = 3; }), rng);
  run_case(f, with(100, 64, 5, [](dg_nvfp4_gemv_options& o) { o.threads_per_row = 1; o.row_groups = 64; o.cache_hint = 1; }), rng);
}

TEST_CASE("nvfp4_gemv: invalid arguments name the argument" * doctest::test_suite("quick")) {
  Fixture f;
  DeviceBuffer buf(1 << 20);
  // Zeros: the one valid call below reads the operands (compute-sanitizer's initcheck).
  REQUIRE(dg::driver::api().cuMemsetD8(buf.ptr, 0, 1 << 20) == CUDA_SUCCESS);
  REQUIRE(dg::driver::api().cuCtxSynchronize() == CUDA_SUCCESS);  // the legacy stream: finish before the call
  char* p = static_cast<char*>(buf.get());
  const int M = 64, K = 256, L = 2;
  dg_tensor* a = tensor(p, DG_DTYPE_FLOAT4_E2M1X2, 3, {M, K / 2, L}, {K / 2, 1, M * K / 2});
  dg_tensor* sfa = tensor(p, DG_DTYPE_FLOAT8_E4M3, 3, {M, K / 16, L}, {K / 16, 1, M * K / 16});
  dg_tensor* b = tensor(p, DG_DTYPE_FLOAT4_E2M1X2, 3, {1, K / 2, L}, {K / 2, 1, K / 2});
  dg_tensor* sfb = tensor(p, DG_DTYPE_FLOAT8_E4M3, 3, {1, K / 16, L}, {K / 16, 1, K / 16});
  dg_tensor* c = tensor(p, DG_DTYPE_FLOAT16, 3, {M, 1, L}, {1, 1, M});
  auto expect = [](dg_status s, dg_status want, const char* needle) {
    CHECK(s == want);
    const std::string msg = dg_last_error();
    CAPTURE(msg);
    CHECK(msg.find(needle) != std::string::npos);
  };
  CHECK(dg_nvfp4_gemv(f.stream, a, sfa, b, sfb, c, nullptr) == DG_SUCCESS);
  expect(dg_nvfp4_gemv(f.stream, nullptr, sfa, b, sfb, c, nullptr), DG_ERROR_INVALID_ARGUMENT, "a");
  expect(dg_nvfp4_gemv(f.stream, a, sfa, b, sfb, a, nullptr), DG_ERROR_INVALID_ARGUMENT, "c");   // dtype
  expect(dg_nvfp4_gemv(f.stream, a, a, b, sfb, c, nullptr), DG_ERROR_INVALID_ARGUMENT, "sfa");   // dtype
  expect(dg_nvfp4_gemv(f.stream, a, sfa, sfb, sfb, c, nullptr), DG_ERROR_INVALID_ARGUMENT, "b"); // dtype
  dg_tensor* a_k = tensor(p, DG_DTYPE_FLOAT4_E2M1X2, 3, {M, 24, L}, {24, 1, M * 24});          // K = 48
  expect(dg_nvfp4_gemv(f.stream, a_k, sfa, b, sfb, c, nullptr), DG_ERROR_INVALID_ARGUMENT, "multiple of 32");
  dg_tensor* sfa_bad = tensor(p, DG_DTYPE_FLOAT8_E4M3, 3, {M, K / 32, L}, {K / 32, 1, M * K / 32});
  expect(dg_nvfp4_gemv(f.stream, a, sfa_bad, b, sfb, c, nullptr), DG_ERROR_INVALID_ARGUMENT, "sfa");
  dg_tensor* c_bad = tensor(p, DG_DTYPE_FLOAT16, 3, {M + 1, 1, L}, {1, 1, M + 1});
  expect(dg_nvfp4_gemv(f.stream, a, sfa, b, sfb, c_bad, nullptr), DG_ERROR_INVALID_ARGUMENT, "c");
  dg_tensor* a_mis = tensor(p + 4, DG_DTYPE_FLOAT4_E2M1X2, 3, {M, K / 2, L}, {K / 2, 1, M * K / 2});
  expect(dg_nvfp4_gemv(f.stream, a_mis, sfa, b, sfb, c, nullptr), DG_ERROR_INVALID_ARGUMENT, "a: data pointer");
  dg_tensor* b_str = tensor(p, DG_DTYPE_FLOAT4_E2M1X2, 3, {1, K / 2, L}, {K, 2, K});
  expect(dg_nvfp4_gemv(f.stream, a, sfa, b_str, sfb, c, nullptr), DG_ERROR_INVALID_ARGUMENT, "b: stride");
  dg_nvfp4_gemv_options o = DG_NVFP4_GEMV_OPTIONS_INIT;
  o.threads_per_row = 48;
  expect(dg_nvfp4_gemv(f.stream, a, sfa, b, sfb, c, &o), DG_ERROR_INVALID_ARGUMENT, "options.threads_per_row");
  o = DG_NVFP4_GEMV_OPTIONS_INIT;
  o.struct_size = 4;
  expect(dg_nvfp4_gemv(f.stream, a, sfa, b, sfb, c, &o), DG_ERROR_INVALID_ARGUMENT, "options");
  for (dg_tensor* t : {a, sfa, b, sfb, c, a_k, sfa_bad, c_bad, a_mis, b_str}) dg_tensor_destroy(t);
}
