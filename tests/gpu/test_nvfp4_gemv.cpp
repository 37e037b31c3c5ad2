// dg_nvfp4_gemv against a CPU reference that decodes E2M1 and E4M3 exactly and sums in double;
// random codes over all 16 values, random E4M3 scales (no NaN codes), output poisoned first.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
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

struct DeviceBuffer {
  CUdeviceptr ptr = 0;
  explicit DeviceBuffer(size_t bytes) { REQUIRE(dg::driver::api().cuMemAlloc(&ptr, bytes ? bytes : 1) == CUDA_SUCCESS); }
  ~DeviceBuffer() { dg::driver::api().cuMemFree(ptr); }
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
  dg_nvfp4_gemv_options options = DG_NVFP4_GEMV_OPTIONS_INIT;
};

void run_case(Fixture& f, const Case& cs, std::mt19937_64& rng) {
  const int M = cs.M, K = cs.K, L = cs.L;
  CAPTURE(M);
  CAPTURE(K);
  CAPTURE(L);
  CAPTURE(cs.pad);
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

  DeviceBuffer da(ha.size()), dsa(hsa.size()), db(hb.size()), dsb(hsb.size()), dc(c_sl * L * 2);
  const auto& api = dg::driver::api();
  REQUIRE(api.cuMemcpyHtoD(da.ptr, ha.data(), ha.size()) == CUDA_SUCCESS);
  REQUIRE(api.cuMemcpyHtoD(dsa.ptr, hsa.data(), hsa.size()) == CUDA_SUCCESS);
  REQUIRE(api.cuMemcpyHtoD(db.ptr, hb.data(), hb.size()) == CUDA_SUCCESS);
  REQUIRE(api.cuMemcpyHtoD(dsb.ptr, hsb.data(), hsb.size()) == CUDA_SUCCESS);

  dg_tensor* a = tensor(da.get(), DG_DTYPE_FLOAT4_E2M1X2, 3, {M, K / 2, L}, {a_sm, 1, a_sl});
  dg_tensor* sfa = tensor(dsa.get(), DG_DTYPE_FLOAT8_E4M3, 3, {M, K / 16, L}, {s_sm, 1, s_sl});
  dg_tensor* b = tensor(db.get(), DG_DTYPE_FLOAT4_E2M1X2, 3, {cs.np, K / 2, L}, {b_sl / cs.np, 1, b_sl});
  dg_tensor* sfb = tensor(dsb.get(), DG_DTYPE_FLOAT8_E4M3, 3, {cs.np, K / 16, L}, {sb_sl / cs.np, 1, sb_sl});
  dg_tensor* c = tensor(dc.get(), DG_DTYPE_FLOAT16, 3, {M, 1, L}, {1, 1, c_sl});

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
    REQUIRE(api.cuMemcpyHtoD(dc.ptr, hc.data(), hc.size() * 2) == CUDA_SUCCESS);
    // Legacy-stream copies do not order with the test's non-blocking stream.
    REQUIRE(api.cuCtxSynchronize() == CUDA_SUCCESS);
    const dg_status s = dg_nvfp4_gemv(f.stream, a, sfa, b, sfb, c, &cs.options);
    REQUIRE_MESSAGE(s == DG_SUCCESS, std::string(dg_last_error()));
    REQUIRE(dg_stream_synchronize(f.stream) == DG_SUCCESS);
    REQUIRE(api.cuMemcpyDtoH(hc.data(), dc.ptr, hc.size() * 2) == CUDA_SUCCESS);
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
      for (int64_t i = M; i < c_sl; ++i) CHECK(hc[l * c_sl + i] == poison);  // padding untouched
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
