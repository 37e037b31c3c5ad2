// The cuBLASLt baseline (docs/gemm.md#the-cublaslt-baseline): one cublasLtMatmul computing D = alpha * A'·B'ᵀ + beta * C
// in row-major terms, where A' is [M, K] and B' is [N, K] (the nt/nn/tn/tt entry points reduce to
// this by transposing views). libcublasLt is loaded with dlopen on first use; <cublasLt.h> is only
// read for types at build time, so libdg needs no cuBLAS to load or to run anything else.
//
// Plan/execute split: the descriptors and the heuristic's algorithm are built once per problem
// shape (a small in-process cache keyed on the integer parameters), so a warm call costs one map
// lookup and one cublasLtMatmul.
#pragma once
#include <cstddef>
#include <cstdint>

#include "dg.h"

struct dg_stream_s;

namespace dg::cublaslt {

// A' [M, K] and B' [N, K] with their element strides (one of each pair is 1, checked by the
// caller); D and C are row-major [M, N] with row strides ldd/ldc.
struct Problem {
  dg_dtype ab_dtype = 0;  // DG_DTYPE_BFLOAT16 or DG_DTYPE_FLOAT8_E4M3
  dg_dtype d_dtype = 0;   // DG_DTYPE_BFLOAT16 or DG_DTYPE_FLOAT32; C has the same dtype
  int64_t m = 0, n = 0, k = 0;
  const void* a = nullptr;
  int64_t a_stride_m = 0, a_stride_k = 0;
  const void* b = nullptr;
  int64_t b_stride_n = 0, b_stride_k = 0;
  void* d = nullptr;
  int64_t ldd = 0;
  const void* c = nullptr;  // nullptr: no C term
  int64_t ldc = 0;
  float alpha = 1.0f;
  float beta = 0.0f;  // only read when c != nullptr
  void* workspace = nullptr;
  size_t workspace_size = 0;
};

// Loads libcublasLt (libcublasLt.so.13, then libcublasLt.so) once. DG_ERROR_UNSUPPORTED with the
// reason when it cannot be loaded or lacks a symbol; the same result on every later call.
dg_status load();

// "cuBLASLt 130100" once loaded, else "".
const char* version_string();

// Runs the problem on `stream` (m, n > 0 already checked by the caller; k == 0 handled here:
// D := beta * C, or zeros without C).
dg_status run(const dg_stream_s& stream, const Problem& problem);

// 32 MiB, as DeepGEMM allocates for its cuBLASLt handle.
constexpr size_t kRecommendedWorkspace = size_t(32) << 20;

}  // namespace dg::cublaslt
