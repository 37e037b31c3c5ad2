// dg_tensor descriptors.
#include <memory>

#include "runtime/status.h"
#include "runtime/tensor.h"

extern "C" {

DG_API dg_status dg_tensor_create(dg_tensor** tensor, void* data, dg_dtype dtype, int32_t rank, const int64_t* sizes,
                                  const int64_t* strides) {
  DG_API_GUARD({
    if (tensor == nullptr) return dg::fail(DG_ERROR_INVALID_ARGUMENT, "tensor: out-pointer is NULL");
    if (dg::dtype_size(dtype) == 0)
      return dg::fail(DG_ERROR_INVALID_ARGUMENT, "dtype: {} is not a DG_DTYPE_* value", dtype);
    if (rank < 1 || rank > DG_MAX_RANK)
      return dg::fail(DG_ERROR_INVALID_ARGUMENT, "rank: {} is out of range (expected 1..{})", rank, DG_MAX_RANK);
    if (sizes == nullptr) return dg::fail(DG_ERROR_INVALID_ARGUMENT, "sizes: is NULL (expected {} sizes)", rank);
    // Every product and sum over sizes and strides that later checks form (element counts, the
    // byte extent, stride * element size) is checked here once, so a descriptor that exists never
    // makes them wrap.
    const int64_t elem = static_cast<int64_t>(dg::dtype_size(dtype));
    auto t = std::make_unique<dg_tensor_s>();
    t->data = data;
    t->dtype = dtype;
    t->rank = rank;
    // The product of the sizes with zeros read as ones bounds every product of sizes a check can
    // form, also in an empty tensor (whose element count alone would hide [2^62, 4, 0]); it is also
    // the contiguous stride of the next dimension out.
    int64_t running = 1;
    bool empty = false;
    for (int i = rank - 1; i >= 0; --i) {
      if (sizes[i] < 0) return dg::fail(DG_ERROR_INVALID_ARGUMENT, "sizes[{}]: {} is negative", i, sizes[i]);
      if (strides != nullptr && strides[i] < 0)
        return dg::fail(DG_ERROR_INVALID_ARGUMENT, "strides[{}]: {} is negative (expected >= 0)", i, strides[i]);
      t->sizes[i] = sizes[i];
      t->strides[i] = strides != nullptr ? strides[i] : running;
      if (__builtin_mul_overflow(running, sizes[i] > 0 ? sizes[i] : 1, &running))
        return dg::fail(DG_ERROR_INVALID_ARGUMENT,
                        "sizes: the product of the sizes overflows 64-bit arithmetic at sizes[{}] = {} (zero sizes "
                        "counted as 1)",
                        i, sizes[i]);
      empty = empty || sizes[i] == 0;
      int64_t stride_bytes = 0;
      if (__builtin_mul_overflow(t->strides[i], elem, &stride_bytes))
        return dg::fail(DG_ERROR_INVALID_ARGUMENT, "{}[{}]: a stride of {} elements of {} bytes overflows 64-bit arithmetic",
                        strides != nullptr ? "strides" : "sizes (contiguous strides)", i, t->strides[i], elem);
    }
    if (!empty) {
      // Bytes from the first element to one past the last: (sum (size - 1) * stride + 1) * elem.
      int64_t last = 0;
      for (int i = 0; i < rank; ++i) {
        int64_t step = 0;
        if (__builtin_mul_overflow(t->sizes[i] - 1, t->strides[i], &step) || __builtin_add_overflow(last, step, &last))
          return dg::fail(DG_ERROR_INVALID_ARGUMENT,
                          "strides: the extent of sizes[{}] = {} with stride {} overflows 64-bit arithmetic", i,
                          t->sizes[i], t->strides[i]);
      }
      int64_t bytes = 0;
      if (__builtin_add_overflow(last, 1, &last) || __builtin_mul_overflow(last, elem, &bytes))
        return dg::fail(DG_ERROR_INVALID_ARGUMENT,
                        "sizes: the tensor spans {} elements of {} bytes, which overflows 64-bit arithmetic", last,
                        elem);
    }
    *tensor = t.release();
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
