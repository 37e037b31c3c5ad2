// TMA descriptors (CUtensorMap) encoded on the host with cuTensorMapEncodeTiled, for kernels that
// take them by value as `const __grid_constant__` parameters (dg::TmaDescriptor on the device).
#pragma once
#include <cuda.h>

#include <cstdint>

#include "dg.h"

namespace dg::tma {

// 128 opaque bytes, 64-byte aligned: the host twin of dg::TmaDescriptor in types.cuh.
struct alignas(64) Descriptor {
  uint64_t opaque[16];
};
static_assert(sizeof(Descriptor) == sizeof(CUtensorMap), "TMA descriptor size");

// How much a load's L2 miss fetches from DRAM. kPair: the 128-byte line and its neighbour (256
// bytes), which serves maps whose lines L2 keeps for other CTAs' loads; kLine: the line alone, for
// data read once (weights streamed by few rows of tokens), where the neighbour's early fetch crossed
// to the other L2 partition and cost L2 bandwidth (docs/gemm.md#l2-fetch).
enum class L2Fetch : uint16_t { kPair = 0, kLine = 1 };

// The swizzle (bytes) TMA applies inside each box row; 0 = none.
CUtensorMapSwizzle swizzle_mode(uint32_t swizzle_bytes);

// A 2-D tiled map over a matrix whose rows are `inner` elements long (contiguous) and `outer` rows
// apart by `row_stride` elements. Boxes are box_inner x box_outer elements; out-of-bounds loads
// read zeros and out-of-bounds stores are dropped. `what` names the operand in error messages.
// Encodings are memoised per thread on all of these arguments, so the warm path of a repeated
// call does not reach the driver.
dg_status encode_2d(Descriptor* out, const void* base, CUtensorMapDataType dtype, uint32_t elem_bytes, uint64_t inner,
                    uint64_t outer, uint64_t row_stride, uint32_t box_inner, uint32_t box_outer,
                    uint32_t swizzle_bytes, const char* what, L2Fetch fetch = L2Fetch::kPair);

// A 3-D map over `depth` such matrices, `matrix_stride` elements apart; boxes are one matrix deep
// (the third coordinate selects the matrix, and each matrix clips on its own).
dg_status encode_3d(Descriptor* out, const void* base, CUtensorMapDataType dtype, uint32_t elem_bytes, uint64_t inner,
                    uint64_t outer, uint64_t row_stride, uint64_t depth, uint64_t matrix_stride, uint32_t box_inner,
                    uint32_t box_outer, uint32_t swizzle_bytes, const char* what, L2Fetch fetch = L2Fetch::kPair);

}  // namespace dg::tma
