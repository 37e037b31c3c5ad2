// Argument checks shared by the GEMM entry points (libdg's kernels and the cuBLASLt baseline):
// a 2-D operand seen through the transpose its layout name implies, and row-major outputs.
#pragma once
#include <cstdint>
#include <utility>

#include "runtime/tensor.h"

namespace dg::api {

// A 2-D tensor seen as [rows, cols] through an optional transpose.
struct View {
  int64_t rows = 0, cols = 0;
  int64_t stride_rows = 0, stride_cols = 0;
};

inline View view_of(const dg_tensor_s& t, bool transposed) {
  View v{t.sizes[0], t.sizes[1], t.strides[0], t.strides[1]};
  if (transposed) {
    std::swap(v.rows, v.cols);
    std::swap(v.stride_rows, v.stride_cols);
  }
  return v;
}

// C or D: rank 2, [m, n], stride 1 along N and rows that do not overlap. With `tma`, also what a
// TMA store needs: a 16-byte aligned base and rows a multiple of 16 bytes apart.
dg_status check_row_major_output(const dg_tensor_s& t, const char* arg, int64_t m, int64_t n, bool tma);

}  // namespace dg::api
