#include "runtime/tensor.h"

#include <fmt/format.h>

#include <cstdint>
#include <utility>

#include "runtime/status.h"

namespace dg {

size_t dtype_size(dg_dtype dtype) {
  switch (dtype) {
    case DG_DTYPE_FLOAT32: case DG_DTYPE_INT32: case DG_DTYPE_UE8M0X4: return 4;
    case DG_DTYPE_FLOAT16: case DG_DTYPE_BFLOAT16: return 2;
    case DG_DTYPE_FLOAT8_E4M3: case DG_DTYPE_FLOAT8_E5M2: case DG_DTYPE_FLOAT4_E2M1X2: case DG_DTYPE_UINT8: return 1;
    default: return 0;
  }
}

const char* dtype_name(dg_dtype dtype) {
  switch (dtype) {
    case DG_DTYPE_FLOAT32: return "float32";
    case DG_DTYPE_FLOAT16: return "float16";
    case DG_DTYPE_BFLOAT16: return "bfloat16";
    case DG_DTYPE_FLOAT8_E4M3: return "float8_e4m3";
    case DG_DTYPE_FLOAT8_E5M2: return "float8_e5m2";
    case DG_DTYPE_INT32: return "int32";
    case DG_DTYPE_FLOAT4_E2M1X2: return "float4_e2m1x2";
    case DG_DTYPE_UE8M0X4: return "ue8m0x4";
    case DG_DTYPE_UINT8: return "uint8";
    default: return "unknown";
  }
}

std::string describe(const dg_tensor_s& t) {
  std::string sizes, strides;
  for (int i = 0; i < t.rank; ++i) {
    sizes += fmt::format("{}{}", i ? ", " : "", t.sizes[i]);
    strides += fmt::format("{}{}", i ? ", " : "", t.strides[i]);
  }
  return fmt::format("[{}] strides [{}] {}", sizes, strides, dtype_name(t.dtype));
}

int64_t numel(const dg_tensor_s& t) {
  int64_t n = 1;
  for (int i = 0; i < t.rank; ++i) n *= t.sizes[i];
  return n;
}

int64_t extent_bytes(const dg_tensor_s& t) {
  if (numel(t) == 0) return 0;
  int64_t last = 0;
  for (int i = 0; i < t.rank; ++i) last += (t.sizes[i] - 1) * t.strides[i];
  return (last + 1) * static_cast<int64_t>(dtype_size(t.dtype));
}

dg_status check_tensor(const dg_tensor_s* t, const char* arg) {
  if (t == nullptr) return fail(DG_ERROR_INVALID_ARGUMENT, "{}: is NULL (expected a dg_tensor)", arg);
  return DG_SUCCESS;
}

dg_status check_dtype(const dg_tensor_s& t, const char* arg, std::initializer_list<dg_dtype> allowed) {
  std::string names;
  for (dg_dtype d : allowed) {
    if (d == t.dtype) return DG_SUCCESS;
    names += fmt::format("{}{}", names.empty() ? "" : " or ", dtype_name(d));
  }
  return fail(DG_ERROR_INVALID_ARGUMENT, "{}: dtype is {} (expected {})", arg, dtype_name(t.dtype), names);
}

dg_status check_rank(const dg_tensor_s& t, const char* arg, std::initializer_list<int> allowed) {
  std::string ranks;
  for (int r : allowed) {
    if (r == t.rank) return DG_SUCCESS;
    ranks += fmt::format("{}{}", ranks.empty() ? "" : " or ", r);
  }
  return fail(DG_ERROR_INVALID_ARGUMENT, "{}: rank is {} (expected {}); shape {}", arg, t.rank, ranks, describe(t));
}

dg_status check_size(const dg_tensor_s& t, const char* arg, int dim, int64_t expected, const char* what) {
  if (t.sizes[dim] == expected) return DG_SUCCESS;
  return fail(DG_ERROR_INVALID_ARGUMENT, "{}: size({}) is {} but {} is {}; shape {}", arg, dim, t.sizes[dim], what,
              expected, describe(t));
}

dg_status check_alignment(const dg_tensor_s& t, const char* arg, size_t bytes) {
  if (reinterpret_cast<uintptr_t>(t.data) % bytes == 0) return DG_SUCCESS;
  return fail(DG_ERROR_INVALID_ARGUMENT, "{}: data pointer {} is not {}-byte aligned", arg, t.data, bytes);
}

dg_status check_no_overlap(const dg_tensor_s& t, const char* arg) {
  if (numel(t) <= 1) return DG_SUCCESS;
  int dims[DG_MAX_RANK];
  int n = 0;
  for (int i = 0; i < t.rank; ++i)
    if (t.sizes[i] > 1) dims[n++] = i;
  // By stride, an insertion sort of at most DG_MAX_RANK entries (std::sort here trips GCC 12's
  // -Warray-bounds: its 16-element insertion threshold exceeds the array).
  for (int k = 1; k < n; ++k)
    for (int j = k; j > 0 && t.strides[dims[j]] < t.strides[dims[j - 1]]; --j) std::swap(dims[j], dims[j - 1]);
  // dg_tensor_create checked that the sum of (size - 1) * stride over all dimensions fits in int64.
  int64_t reach = 0;  // offset of the farthest element the dimensions so far address
  for (int k = 0; k < n; ++k) {
    const int d = dims[k];
    if (t.strides[d] <= reach) {
      if (k == 0)
        return fail(DG_ERROR_INVALID_ARGUMENT,
                    "{}: is written but its elements overlap: dimension {} has {} elements and stride 0; shape {}",
                    arg, d, t.sizes[d], describe(t));
      return fail(DG_ERROR_INVALID_ARGUMENT,
                  "{}: is written but its elements overlap: stride {} of dimension {} (size {}) lands within the "
                  "{} elements that the dimensions of smaller stride span (expected a stride above {}); shape {}",
                  arg, t.strides[d], d, t.sizes[d], reach + 1, reach, describe(t));
    }
    reach += (t.sizes[d] - 1) * t.strides[d];
  }
  return DG_SUCCESS;
}

}  // namespace dg
