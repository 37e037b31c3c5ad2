#include "ops/layout.h"

#include <algorithm>

#include "jit/kernel_cache.h"
#include "runtime/checked.h"
#include "runtime/device.h"
#include "runtime/driver.h"
#include "runtime/launch.h"
#include "runtime/status.h"

namespace dg::ops {
namespace {

// The transpose kernels' tiles (layout.cu.j2): 1024 outputs each, up to kMaxTileCols columns wide.
constexpr int kTileOutputs = 1024;
constexpr int kMaxTileCols = 32;
constexpr int kLayoutThreads = 256;

const char* op_name(LayoutOp op) { return op == LayoutOp::kPackUe8m0 ? "pack_ue8m0" : "transpose"; }

}  // namespace

dg_status mn_major_tma_aligned_layout(LayoutOp op, int rank, const int64_t* sizes, const char* arg, SfLayout* out) {
  SfLayout l;
  l.rank = rank;
  const int64_t groups = rank == 3 ? sizes[0] : 1;
  const int64_t mn = sizes[rank - 2];
  const int64_t cols = op == LayoutOp::kPackUe8m0 ? ceil_div(sizes[rank - 1], 4) : sizes[rank - 1];
  int64_t aligned_mn = 0, group_elems = 0, elems = 0, bytes = 0;
  DG_TRY(checked_align(mn, 4, &aligned_mn, arg));  // 16 bytes of 4-byte elements
  DG_TRY(checked_mul(aligned_mn, cols, &group_elems, arg));
  DG_TRY(checked_mul(groups, group_elems, &elems, arg));
  DG_TRY(checked_mul(elems, 4, &bytes, arg));
  l.sizes[rank - 2] = mn;
  l.sizes[rank - 1] = cols;
  l.strides[rank - 2] = 1;
  l.strides[rank - 1] = aligned_mn;
  if (rank == 3) {
    l.sizes[0] = groups;
    l.strides[0] = group_elems;
  }
  l.bytes = static_cast<size_t>(bytes);
  *out = l;
  return DG_SUCCESS;
}

bool has_layout(const dg_tensor_s& t, const SfLayout& layout) {
  if (t.rank != layout.rank) return false;
  bool empty = false;
  for (int i = 0; i < t.rank; ++i) {
    if (t.sizes[i] != layout.sizes[i]) return false;
    empty = empty || t.sizes[i] == 0;
  }
  for (int i = 0; i < t.rank && !empty; ++i)  // an empty tensor addresses nothing: any strides
    if (t.sizes[i] > 1 && t.strides[i] != layout.strides[i]) return false;
  return true;
}

int layout_tile_cols(int64_t out_cols) {
  int cols = 1;
  while (cols < out_cols && cols < kMaxTileCols) cols *= 2;
  return cols;
}

jit::KernelSpec layout_kernel_spec(LayoutOp op, bool input_mn_major, int tile_cols) {
  jit::KernelSpec spec;
  spec.template_name = "kernels/layout.cu.j2";
  spec.kernel_name = fmt::format("dg_{}_fp32{}_c{}", op_name(op), input_mn_major ? "_from_mn_major" : "", tile_cols);
  spec.context = codegen::Value::map({{"kernel_name", spec.kernel_name},
                                      {"op", op_name(op)},
                                      {"input_mn_major", input_mn_major},
                                      {"tile_cols", static_cast<int64_t>(tile_cols)}});
  return spec;
}

dg_status run_layout_transform(const dg_stream_s& stream, LayoutOp op, const dg_tensor_s& in, const dg_tensor_s& out,
                               int64_t out_mn, int row_div) {
  const int r = in.rank;
  const int64_t groups = r == 3 ? in.sizes[0] : 1;
  const int64_t sf_k = in.sizes[r - 1];
  const int64_t out_sizes[3] = {groups, out_mn, sf_k};
  SfLayout want;
  DG_TRY(mn_major_tma_aligned_layout(op, r, r == 3 ? out_sizes : out_sizes + 1, "sf", &want));
  if (!has_layout(out, want)) {
    dg_tensor_s expected = out;
    for (int i = 0; i < r; ++i) {
      expected.sizes[i] = want.sizes[i];
      expected.strides[i] = want.strides[i];
    }
    return fail(DG_ERROR_INVALID_ARGUMENT, "out: has shape {} (expected {}; see the *_layout query functions)",
                describe(out), describe(expected));
  }
  if (groups == 0 || out_mn == 0 || want.sizes[r - 1] == 0) return DG_SUCCESS;
  if (in.data == nullptr) return fail(DG_ERROR_INVALID_ARGUMENT, "sf: data is NULL");
  if (out.data == nullptr) return fail(DG_ERROR_INVALID_ARGUMENT, "out: data is NULL");
  if (out_mn > INT32_MAX || sf_k > INT32_MAX || groups > 65535)
    return fail(DG_ERROR_UNSUPPORTED, "sf: shape {} is too large for the layout kernel", describe(in));

  const bool input_mn_major = in.sizes[r - 2] > 1 && in.strides[r - 2] == 1 && in.strides[r - 1] != 1;
  const int tile_cols = layout_tile_cols(want.sizes[r - 1]);
  const int tile_mn = kTileOutputs / tile_cols;
  const jit::KernelKey key(jit::kFamilyLayout, {static_cast<int64_t>(op), input_mn_major, tile_cols});
  const Kernel* kernel = nullptr;
  DG_TRY(jit::get_kernel(stream, key, [&](jit::KernelSpec* spec) {
    *spec = layout_kernel_spec(op, input_mn_major, tile_cols);
    return DG_SUCCESS;
  }, &kernel));

  const void* in_ptr = in.data;
  void* out_ptr = out.data;
  int mn_arg = static_cast<int>(out_mn), sf_k_arg = static_cast<int>(sf_k);
  int out_cols = static_cast<int>(want.sizes[r - 1]);
  int aligned_mn = static_cast<int>(want.strides[r - 1]);
  long long in_stride_g = r == 3 ? in.strides[0] : 0, in_stride_mn = in.strides[r - 2], in_stride_k = in.strides[r - 1];
  long long out_stride_g = r == 3 ? want.strides[0] : 0;
  void* args[] = {&in_ptr, &out_ptr, &mn_arg, &sf_k_arg, &out_cols, &aligned_mn, &row_div,
                  &in_stride_g, &in_stride_mn, &in_stride_k, &out_stride_g};
  LaunchConfig lc;
  lc.grid[0] = static_cast<unsigned>(ceil_div(aligned_mn, tile_mn));
  lc.grid[1] = static_cast<unsigned>(ceil_div(out_cols, tile_cols));
  lc.grid[2] = static_cast<unsigned>(groups);
  lc.block[0] = kLayoutThreads;
  lc.pdl = config_of(stream).pdl;
  return launch(stream, *kernel, lc, args);
}

dg_status plan_sf_transform(const dg_tensor_s& sf, int64_t mn, int64_t k, int gran_mn, int gran_k, int num_groups,
                            int arch_major, bool disable_ue8m0_cast, SfTransformPlan* plan) {
  if (gran_mn != 1 && gran_mn != 128)
    return fail(DG_ERROR_INVALID_ARGUMENT, "recipe.gran_mn: {} (expected 1 or 128)", gran_mn);
  if (gran_k != 32 && gran_k != 128)
    return fail(DG_ERROR_INVALID_ARGUMENT, "recipe.gran_k: {} (expected 32 or 128)", gran_k);
  if (num_groups < 0) return fail(DG_ERROR_INVALID_ARGUMENT, "recipe.num_groups: {} is negative", num_groups);
  if (mn < 0 || k < 0) return fail(DG_ERROR_INVALID_ARGUMENT, "mn, k: {}, {} (expected >= 0)", mn, k);
  const int want_rank = num_groups > 0 ? 3 : 2;
  if (sf.rank != want_rank)
    return fail(DG_ERROR_INVALID_ARGUMENT, "sf: rank {} but recipe.num_groups = {} needs rank {}; shape {}", sf.rank,
                num_groups, want_rank, describe(sf));
  if (num_groups > 0) DG_TRY(check_size(sf, "sf", 0, num_groups, "recipe.num_groups"));
  const bool packed = sf.dtype == DG_DTYPE_INT32 || sf.dtype == DG_DTYPE_UE8M0X4;
  if (!packed && sf.dtype != DG_DTYPE_FLOAT32)
    return fail(DG_ERROR_INVALID_ARGUMENT, "sf: dtype is {} (expected float32, or int32 packed UE8M0 on SM100)",
                dtype_name(sf.dtype));
  const int64_t sf_rows = ceil_div(mn, gran_mn);
  const int64_t sf_k = ceil_div(k, gran_k);
  DG_TRY(check_size(sf, "sf", want_rank - 2, sf_rows, "ceil(mn / gran_mn)"));
  DG_TRY(check_size(sf, "sf", want_rank - 1, packed ? ceil_div(sf_k, 4) : sf_k,
                    packed ? "ceil(k / (4 * gran_k))" : "ceil(k / gran_k)"));
  *plan = SfTransformPlan{};
  const int64_t* sizes = sf.sizes;
  if (!packed && (arch_major == 9 || disable_ue8m0_cast) && gran_mn == 1) {
    DG_TRY(mn_major_tma_aligned_layout(LayoutOp::kTranspose, sf.rank, sizes, "sf", &plan->layout));
    plan->is_input = has_layout(sf, plan->layout);
    plan->out_mn = mn;
    return DG_SUCCESS;
  }
  if (!packed && arch_major == 9 && gran_mn == 128) {
    // Per-block scales are read directly by the GEMM: contiguous K-major or MN-major, packed groups.
    const int r = sf.rank;
    const bool k_major = sf.strides[r - 1] == 1 || sf.sizes[r - 1] == 1;
    const bool mn_major = sf.strides[r - 2] == 1 || sf.sizes[r - 2] == 1;
    const bool inner_ok = (k_major && (sf.strides[r - 2] == sf.sizes[r - 1] || sf.sizes[r - 2] == 1)) ||
                          (mn_major && (sf.strides[r - 1] == sf.sizes[r - 2] || sf.sizes[r - 1] == 1));
    const bool groups_ok = r == 2 || sf.sizes[0] <= 1 || sf.strides[0] == sf.sizes[1] * sf.sizes[2];
    if (!inner_ok || !groups_ok)
      return fail(DG_ERROR_INVALID_ARGUMENT,
                  "sf: per-block scales must be contiguous K-major or MN-major (groups packed); got {}", describe(sf));
    plan->is_input = true;
    plan->layout.rank = r;
    for (int i = 0; i < r; ++i) {
      plan->layout.sizes[i] = sf.sizes[i];
      plan->layout.strides[i] = sf.strides[i];
    }
    plan->layout.bytes = static_cast<size_t>(extent_bytes(sf));
    return DG_SUCCESS;
  }
  if (!packed && arch_major == 10) {
    int64_t out_sizes[3] = {num_groups, mn, sf_k};
    plan->op = LayoutOp::kPackUe8m0;
    plan->dtype = DG_DTYPE_INT32;
    DG_TRY(mn_major_tma_aligned_layout(LayoutOp::kPackUe8m0, sf.rank, num_groups > 0 ? out_sizes : out_sizes + 1,
                                       "mn, k", &plan->layout));
    plan->out_mn = mn;
    plan->row_div = gran_mn;
    return DG_SUCCESS;
  }
  if (packed && arch_major == 10 && gran_mn == 1) {
    plan->dtype = DG_DTYPE_INT32;
    int64_t out_sizes[3] = {num_groups, mn, sf_k};
    DG_TRY(mn_major_tma_aligned_layout(LayoutOp::kPackUe8m0, sf.rank, num_groups > 0 ? out_sizes : out_sizes + 1,
                                       "mn, k", &plan->layout));
    if (!has_layout(sf, plan->layout))
      return fail(DG_ERROR_INVALID_ARGUMENT, "sf: packed UE8M0 scales must already be MN-major TMA-aligned; got {}",
                  describe(sf));
    // Only checked, as DeepGEMM does, which then returns sf itself: its own strides are the answer.
    plan->is_input = true;
    for (int i = 0; i < sf.rank; ++i) plan->layout.strides[i] = sf.strides[i];
    return DG_SUCCESS;
  }
  return fail(DG_ERROR_UNSUPPORTED, "sf: no transform for dtype {} with recipe (gran_mn {}, gran_k {}) on SM{}0",
              dtype_name(sf.dtype), gran_mn, gran_k, arch_major);
}

dg_status k_grouped_packed_layout(int64_t mn, const int64_t* ks, int64_t num_groups, SfLayout* out) {
  int64_t rows = 0, aligned_mn = 0, elems = 0;
  for (int64_t g = 0; g < num_groups; ++g) DG_TRY(checked_add(rows, ceil_div(ks[g], 4 * kKGroupedSfGranK), &rows, "ks"));
  DG_TRY(checked_align(mn, 4, &aligned_mn, "mn"));  // rows of 4-byte words start 16-byte aligned (TMA)
  DG_TRY(checked_mul(rows, aligned_mn, &elems, "mn"));
  DG_TRY(checked_mul(elems, 4, &elems, "mn"));
  SfLayout l;
  l.rank = 2;
  l.sizes[0] = rows;
  l.sizes[1] = mn;
  l.strides[0] = aligned_mn;
  l.strides[1] = 1;
  l.bytes = static_cast<size_t>(elems);
  *out = l;
  return DG_SUCCESS;
}

jit::KernelSpec k_grouped_pack_kernel_spec(int vec) {
  jit::KernelSpec spec;
  spec.template_name = "kernels/layout.cu.j2";
  spec.kernel_name = fmt::format("dg_k_grouped_pack_ue8m0_fp32_v{}", vec);
  spec.context = codegen::Value::map({{"kernel_name", spec.kernel_name}, {"op", "k_grouped_pack_ue8m0"}, {"vec", vec}});
  return spec;
}

int k_grouped_pack_vec(const void* sf, int64_t sf_ld, int64_t sf_mn_stride, int64_t mn, int64_t out_ld) {
  const bool vec4 = (sf_mn_stride == 1 || mn == 1) && mn % 4 == 0 && sf_ld % 4 == 0 &&
                    reinterpret_cast<uintptr_t>(sf) % 16 == 0 && out_ld == mn;
  return vec4 ? 4 : 1;
}

dg_status for_each_k_grouped_pack_launch(const float* sf, int64_t sf_ld, int64_t sf_mn_stride, int64_t mn, uint32_t* out,
                                         int64_t out_ld, const int64_t* ks, int64_t num_groups, int vec,
                                         const std::function<dg_status(const KGroupedPackLaunch&)>& each) {
  KGroupedPackLaunch l;
  l.grid[1] = static_cast<unsigned>(std::min<int64_t>(ceil_div(out_ld, kKGroupedPackThreadsX * vec), 65535));
  int64_t sf_row = 0, packed_row = 0;  // where the next launch's groups start
  for (int64_t g0 = 0; g0 < num_groups; g0 += kKGroupedPackMaxGroups) {
    KGroupedPackParams& p = l.params;
    p = KGroupedPackParams{};
    p.num_groups = static_cast<int32_t>(std::min<int64_t>(num_groups - g0, kKGroupedPackMaxGroups));
    p.sf = sf + sf_row * sf_ld;
    p.out = out + packed_row * out_ld;
    p.sf_ld = sf_ld;
    p.sf_mn_stride = sf_mn_stride;
    p.out_ld = out_ld;
    p.mn = static_cast<int32_t>(mn);
    for (int g = 0; g < p.num_groups; ++g) {
      const int64_t blocks = ks[g0 + g] / kKGroupedSfGranK;
      p.sf_row[g + 1] = p.sf_row[g] + static_cast<int32_t>(blocks);
      p.packed_row[g + 1] = p.packed_row[g] + static_cast<int32_t>(ceil_div(blocks, 4));
    }
    sf_row += p.sf_row[p.num_groups];
    packed_row += p.packed_row[p.num_groups];
    if (p.packed_row[p.num_groups] == 0) continue;
    l.grid[0] = static_cast<unsigned>(ceil_div(p.packed_row[p.num_groups], kKGroupedPackRowsPerBlock));
    DG_TRY(each(l));
  }
  return DG_SUCCESS;
}

dg_status run_k_grouped_pack(const dg_stream_s& stream, const dg_tensor_s& sf, const int64_t* ks, int64_t num_groups,
                             const dg_tensor_s& out) {
  const int64_t mn = sf.sizes[1];
  if (mn == 0 || out.sizes[0] == 0) return DG_SUCCESS;
  if (sf.data == nullptr) return fail(DG_ERROR_INVALID_ARGUMENT, "sf: data is NULL");
  if (out.data == nullptr) return fail(DG_ERROR_INVALID_ARGUMENT, "out: data is NULL");
  if (mn > INT32_MAX - 3)
    return fail(DG_ERROR_UNSUPPORTED, "sf: MN = {} (the packing kernel takes MN up to 2^31 - 4)", mn);
  const int64_t sf_ld = sf.sizes[0] > 1 ? sf.strides[0] : 0, mn_stride = sf.strides[1];
  const int64_t out_ld = out.sizes[0] > 1 ? out.strides[0] : ceil_div(mn, 4) * 4;
  const int vec = k_grouped_pack_vec(sf.data, sf_ld, mn_stride, mn, out_ld);
  const Kernel* kernel = nullptr;
  DG_TRY(jit::get_kernel(stream,
      jit::KernelKey(jit::kFamilyLayout, {static_cast<int64_t>(LayoutOp::kKGroupedPackUe8m0), vec}),
      [&](jit::KernelSpec* spec) { *spec = k_grouped_pack_kernel_spec(vec); return DG_SUCCESS; },
      &kernel));
  LaunchConfig lc;
  lc.block[0] = kKGroupedPackThreadsX;
  lc.block[1] = kKGroupedPackRowsPerBlock;
  lc.pdl = config_of(stream).pdl;
  return for_each_k_grouped_pack_launch(
      static_cast<const float*>(sf.data), sf_ld, mn_stride, mn, static_cast<uint32_t*>(out.data), out_ld, ks,
      num_groups, vec, [&](const KGroupedPackLaunch& l) {
        KGroupedPackParams p = l.params;
        void* args[] = {&p};
        lc.grid[0] = l.grid[0];
        lc.grid[1] = l.grid[1];
        return launch(stream, *kernel, lc, args);
      });
}

dg_status run_row_block_interleave(const dg_stream_s& stream, const RowBlockInterleave& r) {
  ContextScope scope;
  DG_TRY(scope.enter(*stream.device));
  const int64_t block_bytes = r.block * r.row_bytes, blocks = r.half / r.block;
  const auto* src = static_cast<const char*>(r.src);
  auto* dst = static_cast<char*>(r.dst);
  for (int64_t g = 0; g < r.groups; ++g)
    for (int64_t j = 0; j < 2 * blocks; ++j) {
      // dst block j: src block j / 2 of the first half (even j) or of the second (odd j).
      const int64_t from = (j % 2) * blocks + j / 2;
      const char* s = src + g * r.src_group_stride + from * block_bytes;
      char* d = dst + g * r.dst_group_stride + j * block_bytes;
      DG_CU(cuMemcpyAsync(reinterpret_cast<CUdeviceptr>(d), reinterpret_cast<CUdeviceptr>(s),
                          static_cast<size_t>(block_bytes), stream.handle));
    }
  return DG_SUCCESS;
}

}  // namespace dg::ops
