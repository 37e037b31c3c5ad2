#include "runtime/tma.h"

#include <cstring>

#include "runtime/driver.h"
#include "runtime/status.h"

namespace dg::tma {

CUtensorMapSwizzle swizzle_mode(uint32_t swizzle_bytes) {
  switch (swizzle_bytes) {
    case 128: return CU_TENSOR_MAP_SWIZZLE_128B;
    case 64: return CU_TENSOR_MAP_SWIZZLE_64B;
    case 32: return CU_TENSOR_MAP_SWIZZLE_32B;
    default: return CU_TENSOR_MAP_SWIZZLE_NONE;
  }
}

dg_status encode_2d(Descriptor* out, const void* base, CUtensorMapDataType dtype, uint32_t elem_bytes, uint64_t inner,
                    uint64_t outer, uint64_t row_stride, uint32_t box_inner, uint32_t box_outer,
                    uint32_t swizzle_bytes, const char* what) {
  std::memset(out, 0, sizeof(*out));
  if (reinterpret_cast<uintptr_t>(base) % 16 != 0)
    return fail(DG_ERROR_INVALID_ARGUMENT, "{}: data pointer {} is not 16-byte aligned (TMA)", what, base);
  if ((row_stride * elem_bytes) % 16 != 0 && outer > 1)
    return fail(DG_ERROR_INVALID_ARGUMENT, "{}: row stride {} elements = {} bytes is not a multiple of 16 (TMA)", what,
                row_stride, row_stride * elem_bytes);
  cuuint64_t dims[2] = {inner, outer};
  cuuint64_t strides[1] = {(outer > 1 ? row_stride : inner) * elem_bytes};
  if (strides[0] % 16 != 0) strides[0] = (strides[0] + 15) / 16 * 16;  // a single row: any legal stride
  cuuint32_t box[2] = {box_inner, box_outer};
  cuuint32_t elem_strides[2] = {1, 1};
  const CUresult r = driver::api().cuTensorMapEncodeTiled(
      reinterpret_cast<CUtensorMap*>(out), dtype, 2, const_cast<void*>(base), dims, strides, box, elem_strides,
      CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle_mode(swizzle_bytes), CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
      CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) {
    driver::check(r, "cuTensorMapEncodeTiled");
    return fail(DG_ERROR_INVALID_ARGUMENT,
                "{}: cuTensorMapEncodeTiled rejected dims ({}, {}), row stride {} B, box ({}, {}), swizzle {} B: {}",
                what, inner, outer, strides[0], box_inner, box_outer, swizzle_bytes, last_error());
  }
  return DG_SUCCESS;
}

}  // namespace dg::tma
