// dg_gemm_options across its versions and the FP8 GEMMs' workspace, without a GPU: the values and
// argument checks of dg_fp8_gemm_workspace_size, and the calls' workspace checks on an offline
// stream (they fail in validation, so nothing is compiled or launched).
#include <doctest/doctest.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "dg.h"

namespace {

void expect_error(dg_status status, dg_status expected, const std::vector<std::string>& needles) {
  const std::string msg = dg_last_error();
  CHECK_MESSAGE(status == expected, dg_status_string(status), " ", msg);
  for (const std::string& n : needles) CHECK_MESSAGE(msg.find(n) != std::string::npos, "message: ", msg, " lacks: ", n);
}

struct Tensor {
  dg_tensor* t = nullptr;
  Tensor(uintptr_t data, dg_dtype dtype, std::vector<int64_t> sizes, std::vector<int64_t> strides) {
    REQUIRE(dg_tensor_create(&t, reinterpret_cast<void*>(data), dtype, static_cast<int32_t>(sizes.size()),
                             sizes.data(), strides.data()) == DG_SUCCESS);
  }
  ~Tensor() { dg_tensor_destroy(t); }
};

size_t workspace_size(int32_t layout, int64_t m, int64_t n, int64_t k) {
  size_t bytes = 12345;
  REQUIRE_MESSAGE(dg_fp8_gemm_workspace_size(layout, m, n, k, &bytes) == DG_SUCCESS, dg_last_error());
  return bytes;
}

}  // namespace

TEST_CASE("dg_fp8_gemm_workspace_size: K-major copies of the MN-major operands, 256-byte aligned") {
  // m = 129, n = 336, k = 400: rows of align(400, 16) = 400 bytes; a's copy 51600 -> 51712 bytes.
  CHECK(workspace_size(DG_GEMM_LAYOUT_NT, 129, 336, 400) == 0);
  CHECK(workspace_size(DG_GEMM_LAYOUT_NN, 129, 336, 400) == 134400);
  CHECK(workspace_size(DG_GEMM_LAYOUT_TT, 129, 336, 400) == 51712);
  CHECK(workspace_size(DG_GEMM_LAYOUT_TN, 129, 336, 400) == 51712 + 134400);
  // K tail: rows padded to 16 bytes (1000 -> 1008); n = 17: 17136 -> 17152.
  CHECK(workspace_size(DG_GEMM_LAYOUT_NN, 5, 17, 1000) == 17152);
  // A single row counts (if padded, it is not contiguous along K and is copied).
  CHECK(workspace_size(DG_GEMM_LAYOUT_TN, 1, 17, 1000) == 1024 + 17152);
  CHECK(workspace_size(DG_GEMM_LAYOUT_NN, 5, 1, 1000) == 1024);
  CHECK(workspace_size(DG_GEMM_LAYOUT_TT, 3, 8, 1) == 256);  // K = 1: rows of 16 bytes
  // Nothing to multiply, nothing to copy.
  CHECK(workspace_size(DG_GEMM_LAYOUT_TN, 0, 336, 400) == 0);
  CHECK(workspace_size(DG_GEMM_LAYOUT_TN, 129, 336, 0) == 0);
  const int64_t big = (int64_t(1) << 31) - 1;
  CHECK(workspace_size(DG_GEMM_LAYOUT_TT, big, 1, big) == size_t(big) * size_t(big + 1));

  size_t bytes = 0;
  expect_error(dg_fp8_gemm_workspace_size(DG_GEMM_LAYOUT_NN, 1, 2, 3, nullptr), DG_ERROR_INVALID_ARGUMENT, {"bytes:"});
  expect_error(dg_fp8_gemm_workspace_size(4, 1, 2, 3, &bytes), DG_ERROR_INVALID_ARGUMENT,
               {"layout: 4", "DG_GEMM_LAYOUT_NT..TT"});
  expect_error(dg_fp8_gemm_workspace_size(-1, 1, 2, 3, &bytes), DG_ERROR_INVALID_ARGUMENT, {"layout: -1"});
  expect_error(dg_fp8_gemm_workspace_size(DG_GEMM_LAYOUT_TN, -1, 2, 3, &bytes), DG_ERROR_INVALID_ARGUMENT,
               {"m, n, k: -1, 2, 3", "[0, 2^31)"});
  expect_error(dg_fp8_gemm_workspace_size(DG_GEMM_LAYOUT_TN, 1, 2, big + 1, &bytes), DG_ERROR_INVALID_ARGUMENT,
               {"m, n, k:"});
}

TEST_CASE("dg_gemm_options: every older struct size is read; the 0.4 workspace fields are checked by name") {
  dg_stream* stream = nullptr;
  REQUIRE(dg_stream_create_offline(&stream, 9, 0, 132, nullptr) == DG_SUCCESS);
  const int64_t m = 64, n = 64, k = 256;
  // nn: b is [K, N] contiguous, MN-major: its K-major copy needs n * k = 16384 bytes.
  Tensor a(0x10000, DG_DTYPE_FLOAT8_E4M3, {m, k}, {k, 1});
  Tensor b(0x20000, DG_DTYPE_FLOAT8_E4M3, {k, n}, {n, 1});
  Tensor sfa(0x30000, DG_DTYPE_FLOAT32, {m, 2}, {1, m});
  Tensor sfb(0x40000, DG_DTYPE_FLOAT32, {2, 1}, {1, 2});  // the [ceil(N/128), ceil(K/128)] view, transposed
  Tensor sfb_nt(0x40000, DG_DTYPE_FLOAT32, {1, 2}, {2, 1});
  Tensor d(0x50000, DG_DTYPE_BFLOAT16, {m, n}, {n, 1});
  Tensor a_t(0x10000, DG_DTYPE_FLOAT8_E4M3, {k, m}, {m, 1});
  Tensor sfa_t(0x30000, DG_DTYPE_FLOAT32, {2, m}, {m, 1});

  dg_gemm_options o = DG_GEMM_OPTIONS_INIT;
  CHECK(o.workspace == nullptr);
  CHECK(o.workspace_size == 0);
  o.workspace = reinterpret_cast<void*>(0x60000);
  o.workspace_size = 1;  // too small: reaching this check means the struct was read to its end
  expect_error(dg_fp8_gemm_nn(stream, a.t, sfa.t, b.t, sfb.t, d.t, nullptr, &o), DG_ERROR_INVALID_ARGUMENT,
               {"options.workspace_size: 1 bytes", "needs 16384 for the K-major copy of b", "dg_fp8_gemm_workspace_size"});
  // Structs of 0.1 (ends at num_sms), 0.2 (fp8_promotion_slices) and 0.3 (split_k) are accepted and
  // lack the workspace: the call asks for one, naming the operand.
  for (size_t size : {offsetof(dg_gemm_options, fp8_promotion), offsetof(dg_gemm_options, split_k),
                      offsetof(dg_gemm_options, workspace)}) {
    CAPTURE(size);
    o.struct_size = size;
    expect_error(dg_fp8_gemm_nn(stream, a.t, sfa.t, b.t, sfb.t, d.t, nullptr, &o), DG_ERROR_UNSUPPORTED,
                 {"b: bᵀ (b is [K, N]) is MN-major", "options.workspace", "16384 bytes", "dg_fp8_gemm_workspace_size"});
  }
  o.struct_size = 8;
  expect_error(dg_fp8_gemm_nn(stream, a.t, sfa.t, b.t, sfb.t, d.t, nullptr, &o), DG_ERROR_INVALID_ARGUMENT,
               {"options: struct_size 8", "DG_GEMM_OPTIONS_INIT"});
  // Both operands MN-major (tn), no workspace: 64 * 256 bytes for each copy.
  expect_error(dg_fp8_gemm_tn(stream, a_t.t, sfa_t.t, b.t, sfb.t, d.t, nullptr, nullptr), DG_ERROR_UNSUPPORTED,
               {"a, b: aᵀ (a is [K, M]) and bᵀ (b is [K, N]) are MN-major", "copies of a and b", "32768 bytes"});
  // Large enough but misaligned.
  o = DG_GEMM_OPTIONS_INIT;
  o.workspace = reinterpret_cast<void*>(0x60080);
  o.workspace_size = 1 << 20;
  expect_error(dg_fp8_gemm_tt(stream, a_t.t, sfa_t.t, a.t, sfb_nt.t, d.t, nullptr, &o), DG_ERROR_INVALID_ARGUMENT,
               {"options.workspace: 0x60080 is not 256-byte aligned", "copy of a", "16384 bytes"});
  // A stride that is neither layout's keeps its error.
  Tensor b_odd(0x20000, DG_DTYPE_FLOAT8_E4M3, {k, n}, {n + 8, 1});
  expect_error(dg_fp8_gemm_nn(stream, a.t, sfa.t, b_odd.t, sfb.t, d.t, nullptr, &o), DG_ERROR_UNSUPPORTED,
               {"b: FP8 GEMMs on SM90 need", "MN-major"});
  dg_stream_destroy(stream);
}
