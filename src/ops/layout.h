// Scaling-factor layout transforms (spec: DeepGEMM §2): the layout math, shared with the GEMMs,
// and the launches of templates/kernels/layout.cu.j2.
#pragma once
#include <cstdint>

#include "jit/kernel.h"
#include "runtime/stream.h"
#include "runtime/tensor.h"

namespace dg::ops {

enum class LayoutOp : int { kTranspose = 0, kPackUe8m0 = 1 };

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

// True when `t` already has exactly that layout (padding rows excluded from the check).
bool has_layout(const dg_tensor_s& t, const SfLayout& layout);

// The kernel's specification; the compile tests enumerate it without a device.
jit::KernelSpec layout_kernel_spec(LayoutOp op, bool input_mn_major);

// Copies FP32 `in` ([G?, rows, sf_k], any strides) into `out` (validated against the layout),
// reading input row i / row_div for output row i (row_div > 1 broadcasts per-block scales).
dg_status run_layout_transform(const dg_stream_s& stream, LayoutOp op, const dg_tensor_s& in, const dg_tensor_s& out,
                               int64_t out_mn, int row_div);

// What dg_transform_sf_into_required_layout does for `sf`, the scales of an [mn, k] operand
// (spec §2.2): nothing (`is_input`), or a transform into `layout`.
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

}  // namespace dg::ops
