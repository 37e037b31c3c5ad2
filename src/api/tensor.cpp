// dg_tensor descriptors.
#include <new>

#include "runtime/status.h"
#include "runtime/tensor.h"

extern "C" {

DG_API dg_status dg_tensor_create(dg_tensor** tensor, void* data, dg_dtype dtype, int32_t rank, const int64_t* sizes,
                                  const int64_t* strides) {
  DG_API_GUARD({
    if (tensor == nullptr) return dg::fail(DG_ERROR_INVALID_ARGUMENT, "tensor: out-pointer is NULL");
    *tensor = nullptr;
    if (dg::dtype_size(dtype) == 0)
      return dg::fail(DG_ERROR_INVALID_ARGUMENT, "dtype: {} is not a DG_DTYPE_* value", dtype);
    if (rank < 1 || rank > DG_MAX_RANK)
      return dg::fail(DG_ERROR_INVALID_ARGUMENT, "rank: {} is out of range (expected 1..{})", rank, DG_MAX_RANK);
    if (sizes == nullptr) return dg::fail(DG_ERROR_INVALID_ARGUMENT, "sizes: is NULL (expected {} sizes)", rank);
    auto t = new dg_tensor_s;
    t->data = data;
    t->dtype = dtype;
    t->rank = rank;
    int64_t running = 1;
    for (int i = rank - 1; i >= 0; --i) {
      if (sizes[i] < 0) {
        delete t;
        return dg::fail(DG_ERROR_INVALID_ARGUMENT, "sizes[{}]: {} is negative", i, sizes[i]);
      }
      if (strides != nullptr && strides[i] < 0) {
        delete t;
        return dg::fail(DG_ERROR_INVALID_ARGUMENT, "strides[{}]: {} is negative (expected >= 0)", i, strides[i]);
      }
      t->sizes[i] = sizes[i];
      t->strides[i] = strides != nullptr ? strides[i] : running;
      running *= sizes[i] > 0 ? sizes[i] : 1;
    }
    *tensor = t;
    return DG_SUCCESS;
  })
}

DG_API void dg_tensor_destroy(dg_tensor* tensor) { delete tensor; }

DG_API dg_status dg_tensor_set_data(dg_tensor* tensor, void* data) {
  DG_TRY(dg::check_tensor(tensor, "tensor"));
  tensor->data = data;
  return DG_SUCCESS;
}

DG_API dg_status dg_tensor_get(const dg_tensor* tensor, void** data, dg_dtype* dtype, int32_t* rank, int64_t* sizes,
                               int64_t* strides) {
  DG_TRY(dg::check_tensor(tensor, "tensor"));
  if (data) *data = tensor->data;
  if (dtype) *dtype = tensor->dtype;
  if (rank) *rank = tensor->rank;
  for (int i = 0; i < tensor->rank; ++i) {
    if (sizes) sizes[i] = tensor->sizes[i];
    if (strides) strides[i] = tensor->strides[i];
  }
  return DG_SUCCESS;
}

}  // extern "C"
