// dg_tensor descriptors and the argument checks every entry point shares. Each check names the
// argument in its message, gives the value found and the value expected.
#pragma once
#include <cstdint>
#include <initializer_list>
#include <string>

#include "dg.h"

struct dg_tensor_s {
  void* data = nullptr;
  dg_dtype dtype = 0;
  int rank = 0;
  int64_t sizes[DG_MAX_RANK] = {};
  int64_t strides[DG_MAX_RANK] = {};
};

namespace dg {

size_t dtype_size(dg_dtype dtype);
const char* dtype_name(dg_dtype dtype);

// "[4096, 7168] strides [7168, 1] bfloat16"
std::string describe(const dg_tensor_s& t);
// dg_tensor_create rejects descriptors for which these overflow, so on a created tensor they, and
// stride * element size, never wrap.
int64_t numel(const dg_tensor_s& t);
// Bytes from the first to one past the last element addressed (0 for an empty tensor).
int64_t extent_bytes(const dg_tensor_s& t);

// Non-NULL descriptor; `arg` is the C parameter name.
dg_status check_tensor(const dg_tensor_s* t, const char* arg);
dg_status check_dtype(const dg_tensor_s& t, const char* arg, std::initializer_list<dg_dtype> allowed);
dg_status check_rank(const dg_tensor_s& t, const char* arg, std::initializer_list<int> allowed);
// sizes[dim] == expected; `what` says what the size means ("K of a", "N").
dg_status check_size(const dg_tensor_s& t, const char* arg, int dim, int64_t expected, const char* what);
// Data pointer aligned to `bytes`.
dg_status check_alignment(const dg_tensor_s& t, const char* arg, size_t bytes);
// For outputs: no two elements share memory. Taking the dimensions of size > 1 by increasing
// stride, each stride must exceed the offset of the last element the smaller ones reach (so a
// stride of 0, or a batch stride inside a row's span, is refused). This also refuses the rare
// interleaved layouts that do not overlap (sizes [3, 2] strides [2, 3]); no entry point needs one.
dg_status check_no_overlap(const dg_tensor_s& t, const char* arg);

}  // namespace dg
