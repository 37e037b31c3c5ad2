// Scaling-factor layout transforms (docs/layout.md): the layout math, shared with the GEMMs,
// and the launches of templates/kernels/layout.cu.j2.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>

#include "jit/kernel.h"
#include "runtime/stream.h"
#include "runtime/tensor.h"

namespace dg::ops {

enum class LayoutOp : int { kTranspose = 0, kPackUe8m0 = 1, kKGroupedPackUe8m0 = 2 };

// Sizes, strides and bytes of the MN-major TMA-aligned output for scales of logical shape
// [groups?, mn, sf_k] (rank 2 or 3). For kPackUe8m0 the last size becomes ceil(sf_k / 4).
// DG_ERROR_INVALID_ARGUMENT naming `arg` when the layout's size overflows 64-bit arithmetic.
struct SfLayout {
  int rank = 0;
  int64_t sizes[3] = {};
  int64_t strides[3] = {};
  size_t bytes = 0;
};
dg_status mn_major_tma_aligned_layout(LayoutOp op, int rank, const int64_t* sizes, const char* arg, SfLayout* out);

// True when `t` already has that layout in memory: the same sizes, and the same strides along every
// dimension of more than one entry (any strides when `t` is empty).
bool has_layout(const dg_tensor_s& t, const SfLayout& layout);

// The transpose kernels' tile width for `out_cols` output columns: a power of two, at most 32 (the
// tile has 1024 outputs, so narrow outputs take taller tiles).
int layout_tile_cols(int64_t out_cols);
// The kernel's specification; the compile tests enumerate it without a device.
jit::KernelSpec layout_kernel_spec(LayoutOp op, bool input_mn_major, int tile_cols);

// Copies FP32 `in` ([G?, rows, sf_k], any strides) into `out` (validated against the layout),
// reading input row i / row_div for output row i (row_div > 1 broadcasts per-block scales).
dg_status run_layout_transform(const dg_stream_s& stream, LayoutOp op, const dg_tensor_s& in, const dg_tensor_s& out,
                               int64_t out_mn, int row_div);

// What dg_transform_sf_into_required_layout does for `sf`, the scales of an [mn, k] operand
// (docs/layout.md#transform-sf-into-required-layout): nothing (`is_input`), or a transform into `layout`.
struct SfTransformPlan {
  bool is_input = false;
  LayoutOp op = LayoutOp::kTranspose;
  dg_dtype dtype = DG_DTYPE_FLOAT32;
  SfLayout layout;
  int64_t out_mn = 0;
  int row_div = 1;
};
dg_status plan_sf_transform(const dg_tensor_s& sf, int64_t mn, int64_t k, int gran_mn, int gran_k, int num_groups,
                            int arch_major, bool disable_ue8m0_cast, SfTransformPlan* plan);

// K-grouped UE8M0 packing (dg_get_k_grouped_mn_major_tma_aligned_packed_ue8m0_tensor): FP32 scales
// [sum(ks) / 128, mn], one row per 128-wide K block, the groups' blocks concatenated, packed four
// rows to an int32 word per group: INT32 [P, mn] with strides (align(mn, 4), 1), where P is the sum
// over groups of ceil(ks[g] / 512). `ks` were checked (each >= 0 and a multiple of 128).
constexpr int64_t kKGroupedSfGranK = 128;
dg_status k_grouped_packed_layout(int64_t mn, const int64_t* ks, int64_t num_groups, SfLayout* out);

// The kernel argument: host mirror of dg::k_grouped_sf::Params (templates/include/dg/k_grouped_sf.cuh).
constexpr int kKGroupedPackMaxGroups = 128;
constexpr int kKGroupedPackThreadsX = 64;
constexpr int kKGroupedPackRowsPerBlock = 4;
struct KGroupedPackParams {
  const float* sf;
  uint32_t* out;
  int64_t sf_ld;
  int64_t sf_mn_stride;
  int64_t out_ld;
  int32_t mn;
  int32_t num_groups;
  int32_t sf_row[kKGroupedPackMaxGroups + 1];
  int32_t packed_row[kKGroupedPackMaxGroups + 1];
};
static_assert(offsetof(KGroupedPackParams, mn) == 40 && offsetof(KGroupedPackParams, sf_row) == 48 &&
                  offsetof(KGroupedPackParams, packed_row) == 48 + 4 * (kKGroupedPackMaxGroups + 1) &&
                  sizeof(KGroupedPackParams) == 1080,
              "must match the device struct");

jit::KernelSpec k_grouped_pack_kernel_spec(int vec);

// One launch of the K-grouped packer: its argument and grid (block kKGroupedPackThreadsX x
// kKGroupedPackRowsPerBlock).
struct KGroupedPackLaunch {
  KGroupedPackParams params;
  unsigned grid[2];
};
// Columns per thread: 4 (16-byte accesses) where stride 1 along MN, MN % 4 == 0, 16-byte aligned
// scale rows and unpadded output rows allow it, else 1.
int k_grouped_pack_vec(const void* sf, int64_t sf_ld, int64_t sf_mn_stride, int64_t mn, int64_t out_ld);
// Calls `each` with the launches that pack scales at `sf` (rows sf_ld elements apart, MN columns
// sf_mn_stride apart) into `out` (rows out_ld words apart): one per kKGroupedPackMaxGroups groups,
// those with no output rows left out. Stops at, and returns, the first failure of `each`.
dg_status for_each_k_grouped_pack_launch(const float* sf, int64_t sf_ld, int64_t sf_mn_stride, int64_t mn, uint32_t* out,
                                         int64_t out_ld, const int64_t* ks, int64_t num_groups, int vec,
                                         const std::function<dg_status(const KGroupedPackLaunch&)>& each);

// Packs `sf` (checked: FLOAT32 [sum(ks) / 128, mn], any strides) into `out` (checked against
// k_grouped_packed_layout).
dg_status run_k_grouped_pack(const dg_stream_s& stream, const dg_tensor_s& sf, const int64_t* ks, int64_t num_groups,
                             const dg_tensor_s& out);

// Reorders `groups` matrices of 2 * half rows (row_bytes each, rows packed; matrices group_stride
// bytes apart in src and dst alike) so that blocks of `block` rows alternate between the first half
// and the second: dst block 2j is src block j, dst block 2j + 1 is src block j + half / block
// (the SwiGLU epilogue's gate / up interleaving). half % block == 0. Copies on the stream.
struct RowBlockInterleave {
  const void* src = nullptr;
  void* dst = nullptr;
  int64_t groups = 0, half = 0, block = 0, row_bytes = 0;
  int64_t src_group_stride = 0, dst_group_stride = 0;  // bytes
};
dg_status run_row_block_interleave(const dg_stream_s& stream, const RowBlockInterleave& r);

}  // namespace dg::ops
