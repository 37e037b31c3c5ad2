// Argument validation of dg_cublaslt_gemm_*, without a GPU: every bad input gives its status and a
// message naming the argument before anything touches the driver or cuBLASLt.
#include <doctest/doctest.h>

#include <cstring>
#include <vector>

#include "dg.h"
#include "runtime/device.h"
#include "runtime/stream.h"

namespace {

void expect(dg_status got, dg_status want, const char* needle) {
  CHECK_MESSAGE(got == want, dg_status_string(got), " ", dg_last_error());
  CHECK_MESSAGE(std::strstr(dg_last_error(), needle) != nullptr, "message: ", dg_last_error(), " lacks: ", needle);
}

struct T {
  dg_tensor* t = nullptr;
  T(void* data, dg_dtype dtype, std::vector<int64_t> sizes, std::vector<int64_t> strides = {}) {
    REQUIRE(dg_tensor_create(&t, data, dtype, static_cast<int32_t>(sizes.size()), sizes.data(),
                             strides.empty() ? nullptr : strides.data()) == DG_SUCCESS);
  }
  ~T() { dg_tensor_destroy(t); }
  operator const dg_tensor*() const { return t; }
};

// A stream handle that validation may look at; nothing here reaches the device.
struct FakeStream {
  dg::Device device;
  dg_stream_s stream;
  FakeStream() {
    device.sm_count = 132;
    device.name = "fake";
    stream.device = &device;
  }
};

void* ptr(uintptr_t v) { return reinterpret_cast<void*>(v); }

}  // namespace

TEST_CASE("cublaslt: workspace size and options macro") {
  CHECK(dg_cublaslt_workspace_size() == size_t(32) << 20);
  const dg_cublaslt_options o = DG_CUBLASLT_OPTIONS_INIT;
  CHECK(o.struct_size == sizeof(dg_cublaslt_options));
  CHECK(o.alpha == 1.0f);
  CHECK(o.beta == 1.0f);
  CHECK(o.workspace == nullptr);
  CHECK(o.workspace_size == 0);
}

TEST_CASE("cublaslt: argument validation names the argument") {
  FakeStream fs;
  dg_stream* s = &fs.stream;
  T a(ptr(0x10000), DG_DTYPE_BFLOAT16, {128, 256});
  T b(ptr(0x20000), DG_DTYPE_BFLOAT16, {64, 256});
  T d(ptr(0x30000), DG_DTYPE_BFLOAT16, {128, 64});

  expect(dg_cublaslt_gemm_nt(nullptr, a, b, d, nullptr, nullptr), DG_ERROR_INVALID_ARGUMENT, "stream");
  expect(dg_cublaslt_gemm_nt(s, nullptr, b, d, nullptr, nullptr), DG_ERROR_INVALID_ARGUMENT, "a:");
  expect(dg_cublaslt_gemm_nt(s, a, nullptr, d, nullptr, nullptr), DG_ERROR_INVALID_ARGUMENT, "b:");
  expect(dg_cublaslt_gemm_nt(s, a, b, nullptr, nullptr, nullptr), DG_ERROR_INVALID_ARGUMENT, "d:");

  dg_cublaslt_options small = DG_CUBLASLT_OPTIONS_INIT;
  small.struct_size = 8;
  expect(dg_cublaslt_gemm_nt(s, a, b, d, nullptr, &small), DG_ERROR_INVALID_ARGUMENT, "struct_size");
  dg_cublaslt_options ws = DG_CUBLASLT_OPTIONS_INIT;
  ws.workspace_size = 1024;
  expect(dg_cublaslt_gemm_nt(s, a, b, d, nullptr, &ws), DG_ERROR_INVALID_ARGUMENT, "workspace");
  ws.workspace = ptr(0x40010);
  expect(dg_cublaslt_gemm_nt(s, a, b, d, nullptr, &ws), DG_ERROR_INVALID_ARGUMENT, "256-byte");

  T a_f32(ptr(0x10000), DG_DTYPE_FLOAT32, {128, 256});
  expect(dg_cublaslt_gemm_nt(s, a_f32, b, d, nullptr, nullptr), DG_ERROR_INVALID_ARGUMENT, "a: dtype");
  T b_fp8(ptr(0x20000), DG_DTYPE_FLOAT8_E4M3, {64, 256});
  expect(dg_cublaslt_gemm_nt(s, a, b_fp8, d, nullptr, nullptr), DG_ERROR_INVALID_ARGUMENT, "b: dtype");
  T d_fp8(ptr(0x30000), DG_DTYPE_FLOAT8_E4M3, {128, 64});
  expect(dg_cublaslt_gemm_nt(s, a, b, d_fp8, nullptr, nullptr), DG_ERROR_INVALID_ARGUMENT, "d: dtype");
  T a3(ptr(0x10000), DG_DTYPE_BFLOAT16, {1, 128, 256});
  expect(dg_cublaslt_gemm_nt(s, a3, b, d, nullptr, nullptr), DG_ERROR_INVALID_ARGUMENT, "a: rank");

  T b_k(ptr(0x20000), DG_DTYPE_BFLOAT16, {64, 255});
  expect(dg_cublaslt_gemm_nt(s, a, b_k, d, nullptr, nullptr), DG_ERROR_INVALID_ARGUMENT, "b: K is 255");
  T d_m(ptr(0x30000), DG_DTYPE_BFLOAT16, {127, 64});
  expect(dg_cublaslt_gemm_nt(s, a, b, d_m, nullptr, nullptr), DG_ERROR_INVALID_ARGUMENT, "d: size(0)");
  T d_col(ptr(0x30000), DG_DTYPE_BFLOAT16, {128, 64}, {1, 128});
  expect(dg_cublaslt_gemm_nt(s, a, b, d_col, nullptr, nullptr), DG_ERROR_INVALID_ARGUMENT, "row-major");
  T a_strided(ptr(0x10000), DG_DTYPE_BFLOAT16, {128, 256}, {512, 2});
  expect(dg_cublaslt_gemm_nt(s, a_strided, b, d, nullptr, nullptr), DG_ERROR_INVALID_ARGUMENT, "neither stride");
  T a_overlap(ptr(0x10000), DG_DTYPE_BFLOAT16, {128, 256}, {100, 1});
  expect(dg_cublaslt_gemm_nt(s, a_overlap, b, d, nullptr, nullptr), DG_ERROR_INVALID_ARGUMENT, "overlap");

  T c_f32(ptr(0x50000), DG_DTYPE_FLOAT32, {128, 64});
  expect(dg_cublaslt_gemm_nt(s, a, b, d, c_f32, nullptr), DG_ERROR_INVALID_ARGUMENT, "c: dtype");
  T c_alias(ptr(0x30000), DG_DTYPE_BFLOAT16, {128, 64}, {128, 1});
  expect(dg_cublaslt_gemm_nt(s, a, b, d, c_alias, nullptr), DG_ERROR_INVALID_ARGUMENT, "aliases d");

  // FP8 is K-major only in cuBLASLt: an MN-major operand is unsupported, named.
  T af(ptr(0x10000), DG_DTYPE_FLOAT8_E4M3, {128, 256});
  T bf_nn(ptr(0x20000), DG_DTYPE_FLOAT8_E4M3, {256, 64});  // nn: b is [K, N], N-major
  expect(dg_cublaslt_gemm_nn(s, af, bf_nn, d, nullptr, nullptr), DG_ERROR_UNSUPPORTED, "K-major");

  // Layout aliases read the transposed views: tn takes a [K, M] and b [K, N].
  T a_t(ptr(0x10000), DG_DTYPE_BFLOAT16, {256, 128});
  T b_t(ptr(0x20000), DG_DTYPE_BFLOAT16, {256, 65});
  expect(dg_cublaslt_gemm_tn(s, a_t, b_t, d, nullptr, nullptr), DG_ERROR_INVALID_ARGUMENT, "d: size(1)");

  // M == 0: nothing to do, success without touching the device.
  T a0(ptr(0x10000), DG_DTYPE_BFLOAT16, {0, 256});
  T d0(ptr(0x30000), DG_DTYPE_BFLOAT16, {0, 64});
  CHECK(dg_cublaslt_gemm_nt(s, a0, b, d0, nullptr, nullptr) == DG_SUCCESS);
}
