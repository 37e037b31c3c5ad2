#include "runtime/tma.h"

#include <cstring>
#include <memory>

#include "runtime/driver.h"
#include "runtime/status.h"

namespace dg::tma {
namespace {

// A map is a pure function of its arguments (it holds an address, not the memory's contents), so
// repeated calls with the same operands can reuse the last encoding instead of paying for
// cuTensorMapEncodeTiled again. Per thread, so the warm path takes no lock; direct-mapped with a
// full-key compare, so a collision costs one re-encode and never returns the wrong map.
struct EncodeKey {
  const void* base;
  uint64_t inner, outer, stride_bytes;
  uint64_t depth, depth_stride_bytes;  // 3-D maps; 0 and 0 for 2-D ones
  uint32_t dtype, box_inner, box_outer;
  uint16_t swizzle, fetch;
  bool operator==(const EncodeKey& o) const { return std::memcmp(this, &o, sizeof(*this)) == 0; }
};
static_assert(sizeof(EncodeKey) == 64, "no padding: keys compare with memcmp");

struct EncodeCache {
  // Enough for the operands of a few hundred distinct GEMM calls (a model's layers, each with its
  // own weights) at 192 bytes a slot; allocated on a thread's first encode.
  static constexpr size_t kSlots = 1024;
  struct Slot {
    Descriptor map;
    EncodeKey key;
    bool valid;
  };
  Slot slots[kSlots];

  static size_t index(const EncodeKey& k) {
    uint64_t h = reinterpret_cast<uintptr_t>(k.base) * 0x9E3779B97F4A7C15ull;
    for (uint64_t v : {k.inner, k.outer, k.stride_bytes, k.depth, k.depth_stride_bytes,
                       uint64_t(k.box_inner) << 32 | k.box_outer, uint64_t(k.dtype) << 32 | k.swizzle})
      h = (h ^ v) * 0xBF58476D1CE4E5B9ull;
    return static_cast<size_t>(h >> 32) % kSlots;
  }
};

EncodeCache& encode_cache() {
  thread_local std::unique_ptr<EncodeCache> cache;
  if (!cache) cache.reset(new EncodeCache());  // value-initialised: every slot invalid
  return *cache;
}

}  // namespace

CUtensorMapSwizzle swizzle_mode(uint32_t swizzle_bytes) {
  switch (swizzle_bytes) {
    case 128: return CU_TENSOR_MAP_SWIZZLE_128B;
    case 64: return CU_TENSOR_MAP_SWIZZLE_64B;
    case 32: return CU_TENSOR_MAP_SWIZZLE_32B;
    default: return CU_TENSOR_MAP_SWIZZLE_NONE;
  }
}

namespace {

// A 2-D map (rank 2; depth 1) or a 3-D map whose boxes are one matrix deep (rank 3).
dg_status encode(Descriptor* out, uint32_t rank, const void* base, CUtensorMapDataType dtype, uint32_t elem_bytes,
                 uint64_t inner, uint64_t outer, uint64_t row_stride, uint64_t depth, uint64_t depth_stride, uint32_t box_inner,
                 uint32_t box_outer, uint32_t swizzle_bytes, const char* what, L2Fetch fetch) {
  std::memset(out, 0, sizeof(*out));
  if (reinterpret_cast<uintptr_t>(base) % 16 != 0)
    return fail(DG_ERROR_INVALID_ARGUMENT, "{}: data pointer {} is not 16-byte aligned (TMA)", what, base);
  if ((row_stride * elem_bytes) % 16 != 0 && outer > 1)
    return fail(DG_ERROR_INVALID_ARGUMENT, "{}: row stride {} elements = {} bytes is not a multiple of 16 (TMA)", what,
                row_stride, row_stride * elem_bytes);
  if ((depth_stride * elem_bytes) % 16 != 0 && rank == 3)
    return fail(DG_ERROR_INVALID_ARGUMENT, "{}: matrix stride {} elements = {} bytes is not a multiple of 16 (TMA)",
                what, depth_stride, depth_stride * elem_bytes);
  cuuint64_t dims[3] = {inner, outer, depth};
  cuuint64_t strides[2] = {(outer > 1 ? row_stride : inner) * elem_bytes, depth_stride * elem_bytes};
  if (strides[0] % 16 != 0) strides[0] = (strides[0] + 15) / 16 * 16;  // a single row: any legal stride
  if (rank == 2) strides[1] = 0;
  if (rank == 3 && strides[1] == 0) strides[1] = strides[0] * outer;  // a single matrix: any legal stride
  const EncodeKey key{base,       inner,      outer, strides[0], rank == 3 ? depth : 0, strides[1],
                      static_cast<uint32_t>(dtype), box_inner, box_outer, static_cast<uint16_t>(swizzle_bytes),
                      static_cast<uint16_t>(fetch)};
  EncodeCache::Slot& slot = encode_cache().slots[EncodeCache::index(key)];
  if (slot.valid && slot.key == key) {
    *out = slot.map;
    return DG_SUCCESS;
  }
  cuuint32_t box[3] = {box_inner, box_outer, 1};
  cuuint32_t elem_strides[3] = {1, 1, 1};
  const CUresult r = driver::api().cuTensorMapEncodeTiled(
      reinterpret_cast<CUtensorMap*>(out), dtype, rank, const_cast<void*>(base), dims, strides, box, elem_strides,
      CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle_mode(swizzle_bytes),
      fetch == L2Fetch::kLine ? CU_TENSOR_MAP_L2_PROMOTION_L2_128B : CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
      CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) {
    driver::check(r, "cuTensorMapEncodeTiled");
    return fail(DG_ERROR_INVALID_ARGUMENT,
                "{}: cuTensorMapEncodeTiled rejected dims ({}, {}, {}), strides {} B, {} B, box ({}, {}), swizzle {} "
                "B: {}",
                what, inner, outer, depth, strides[0], strides[1], box_inner, box_outer, swizzle_bytes, last_error());
  }
  slot.map = *out;
  slot.key = key;
  slot.valid = true;
  return DG_SUCCESS;
}

}  // namespace

dg_status encode_2d(Descriptor* out, const void* base, CUtensorMapDataType dtype, uint32_t elem_bytes, uint64_t inner,
                    uint64_t outer, uint64_t row_stride, uint32_t box_inner, uint32_t box_outer,
                    uint32_t swizzle_bytes, const char* what, L2Fetch fetch) {
  return encode(out, 2, base, dtype, elem_bytes, inner, outer, row_stride, 1, 0, box_inner, box_outer, swizzle_bytes,
                what, fetch);
}

dg_status encode_3d(Descriptor* out, const void* base, CUtensorMapDataType dtype, uint32_t elem_bytes, uint64_t inner,
                    uint64_t outer, uint64_t row_stride, uint64_t depth, uint64_t matrix_stride, uint32_t box_inner,
                    uint32_t box_outer, uint32_t swizzle_bytes, const char* what, L2Fetch fetch) {
  return encode(out, 3, base, dtype, elem_bytes, inner, outer, row_stride, depth, matrix_stride, box_inner, box_outer,
                swizzle_bytes, what, fetch);
}

}  // namespace dg::tma
