// Host utilities and the scaling-factor layout entry points.
#include "api/gemm_common.h"
#include "ops/gemm_util.h"
#include "ops/layout.h"
#include "runtime/checked.h"
#include "runtime/options.h"
#include "runtime/status.h"

namespace {

using dg::ops::LayoutOp;

dg_status check_shape_args(int32_t rank, const int64_t* sizes) {
  if (rank != 2 && rank != 3)
    return dg::fail(DG_ERROR_INVALID_ARGUMENT, "rank: {} (expected 2 for [MN, SF_K] or 3 for [G, MN, SF_K])", rank);
  if (sizes == nullptr) return dg::fail(DG_ERROR_INVALID_ARGUMENT, "sizes: is NULL (expected {} sizes)", rank);
  for (int i = 0; i < rank; ++i)
    if (sizes[i] < 0) return dg::fail(DG_ERROR_INVALID_ARGUMENT, "sizes[{}]: {} is negative", i, sizes[i]);
  return DG_SUCCESS;
}

dg_status query_layout(LayoutOp op, int32_t rank, const int64_t* sizes, int64_t* out_sizes, int64_t* out_strides,
                       size_t* out_bytes) {
  DG_TRY(check_shape_args(rank, sizes));
  dg::ops::SfLayout l;
  DG_TRY(dg::ops::mn_major_tma_aligned_layout(op, rank, sizes, "sizes", &l));
  for (int i = 0; i < rank; ++i) {
    if (out_sizes) out_sizes[i] = l.sizes[i];
    if (out_strides) out_strides[i] = l.strides[i];
  }
  if (out_bytes) *out_bytes = l.bytes;
  return DG_SUCCESS;
}

dg_status check_sf_input(const dg_tensor_s* sf, const char* arg) {
  DG_TRY(dg::check_tensor(sf, arg));
  DG_TRY(dg::check_dtype(*sf, arg, {DG_DTYPE_FLOAT32}));
  DG_TRY(dg::check_rank(*sf, arg, {2, 3}));
  return dg::check_alignment(*sf, arg, 4);
}

dg_status check_out(const dg_tensor_s* out, std::initializer_list<dg_dtype> dtypes) {
  DG_TRY(dg::check_tensor(out, "out"));
  DG_TRY(dg::check_dtype(*out, "out", dtypes));
  return dg::check_alignment(*out, "out", 16);
}

dg_status run(dg_stream* stream, LayoutOp op, const dg_tensor* sf, const dg_tensor* out, int64_t out_mn, int row_div) {
  DG_TRY(dg::check_stream(stream, "stream"));
  return dg::ops::run_layout_transform(*stream, op, *sf, *out, out_mn, row_div);
}

dg_status plan_transform(const dg_stream* stream, const dg_tensor* sf, int64_t mn, int64_t k,
                         const dg_sf_recipe* recipe, dg::ops::SfTransformPlan* plan) {
  DG_TRY(dg::check_tensor(sf, "sf"));
  if (recipe == nullptr) return dg::fail(DG_ERROR_INVALID_ARGUMENT, "recipe: is NULL (use DG_SF_RECIPE_INIT)");
  dg_sf_recipe r;
  DG_TRY(dg::read_options(recipe, dg_sf_recipe DG_SF_RECIPE_INIT, sizeof(dg_sf_recipe), "recipe", "DG_SF_RECIPE_INIT", &r));
  recipe = &r;
  int arch = recipe->arch_major;
  if (arch == 0) {
    DG_TRY(dg::check_stream(stream, "stream (needed because recipe.arch_major is 0)"));
    arch = stream->device->cc_major;
  }
  if (arch != 9 && arch != 10)
    return dg::fail(DG_ERROR_UNSUPPORTED, "recipe.arch_major: {} (expected 9 for SM90 or 10 for SM100)", arch);
  return dg::ops::plan_sf_transform(*sf, mn, k, recipe->gran_mn, recipe->gran_k, recipe->num_groups, arch,
                                    recipe->disable_ue8m0_cast != 0, plan);
}

// The K-grouped packer's host ks and, when given, ks_tensor; the scales' K blocks in *sf_rows.
dg_status check_k_grouped_ks(const int64_t* ks, int64_t num_groups, const dg_tensor* ks_tensor, int64_t* sf_rows) {
  int64_t total_k = 0;
  DG_TRY(dg::api::check_ks(ks, num_groups, &total_k));
  if (ks_tensor != nullptr)
    DG_TRY(dg::api::check_int_vector(*ks_tensor, "ks_tensor", num_groups, "num_groups, one K per group"));
  *sf_rows = total_k / dg::ops::kKGroupedSfGranK;
  return DG_SUCCESS;
}

}  // namespace

extern "C" {

DG_API dg_status dg_get_tma_aligned_size(int64_t x, size_t element_size, int64_t* aligned) {
  if (aligned == nullptr) return dg::fail(DG_ERROR_INVALID_ARGUMENT, "aligned: out-pointer is NULL");
  if (element_size == 0 || element_size > 16 || 16 % element_size != 0)
    return dg::fail(DG_ERROR_INVALID_ARGUMENT, "element_size: {} does not divide 16 (expected 1, 2, 4, 8 or 16)",
                    element_size);
  if (x < 0) return dg::fail(DG_ERROR_INVALID_ARGUMENT, "x: {} is negative", x);
  return dg::checked_align(x, static_cast<int64_t>(16 / element_size), aligned, "x");
}

DG_API int32_t dg_get_mk_alignment_for_contiguous_layout(void) { return static_cast<int32_t>(dg::ops::kMkAlignment); }

DG_API dg_status dg_get_mn_major_tma_aligned_tensor_layout(int32_t rank, const int64_t* sizes, int64_t* out_sizes,
                                                           int64_t* out_strides, size_t* out_bytes) {
  return query_layout(LayoutOp::kTranspose, rank, sizes, out_sizes, out_strides, out_bytes);
}

DG_API dg_status dg_get_mn_major_tma_aligned_packed_ue8m0_tensor_layout(int32_t rank, const int64_t* sizes,
                                                                        int64_t* out_sizes, int64_t* out_strides,
                                                                        size_t* out_bytes) {
  return query_layout(LayoutOp::kPackUe8m0, rank, sizes, out_sizes, out_strides, out_bytes);
}

DG_API dg_status dg_get_mn_major_tma_aligned_tensor(dg_stream* stream, const dg_tensor* sf, const dg_tensor* out) {
  DG_API_GUARD({
    DG_TRY(check_sf_input(sf, "sf"));
    DG_TRY(check_out(out, {DG_DTYPE_FLOAT32}));
    return run(stream, LayoutOp::kTranspose, sf, out, sf->sizes[sf->rank - 2], 1);
  })
}

DG_API dg_status dg_get_mn_major_tma_aligned_packed_ue8m0_tensor(dg_stream* stream, const dg_tensor* sf,
                                                                 const dg_tensor* out) {
  DG_API_GUARD({
    DG_TRY(check_sf_input(sf, "sf"));
    DG_TRY(check_out(out, {DG_DTYPE_UE8M0X4, DG_DTYPE_INT32}));
    return run(stream, LayoutOp::kPackUe8m0, sf, out, sf->sizes[sf->rank - 2], 1);
  })
}

DG_API dg_status dg_get_k_grouped_mn_major_tma_aligned_packed_ue8m0_tensor_layout(int64_t mn, const int64_t* ks,
                                                                                  int64_t num_groups,
                                                                                  int64_t* out_sizes,
                                                                                  int64_t* out_strides,
                                                                                  size_t* out_bytes) {
  DG_API_GUARD({
    if (mn < 0) return dg::fail(DG_ERROR_INVALID_ARGUMENT, "mn: {} is negative", mn);
    int64_t sf_rows = 0;
    DG_TRY(check_k_grouped_ks(ks, num_groups, nullptr, &sf_rows));
    dg::ops::SfLayout l;
    DG_TRY(dg::ops::k_grouped_packed_layout(mn, ks, num_groups, &l));
    for (int i = 0; i < 2; ++i) {
      if (out_sizes) out_sizes[i] = l.sizes[i];
      if (out_strides) out_strides[i] = l.strides[i];
    }
    if (out_bytes) *out_bytes = l.bytes;
    return DG_SUCCESS;
  })
}

DG_API dg_status dg_get_k_grouped_mn_major_tma_aligned_packed_ue8m0_tensor(dg_stream* stream, const dg_tensor* sf,
                                                                           const int64_t* ks, int64_t num_groups,
                                                                           const dg_tensor* ks_tensor,
                                                                           const dg_tensor* out) {
  DG_API_GUARD({
    DG_TRY(dg::check_stream(stream, "stream"));
    DG_TRY(dg::check_tensor(sf, "sf"));
    if (ks_tensor != nullptr) DG_TRY(dg::check_tensor(ks_tensor, "ks_tensor"));
    DG_TRY(dg::check_tensor(out, "out"));
    DG_TRY(dg::check_dtype(*sf, "sf", {DG_DTYPE_FLOAT32}));
    DG_TRY(dg::check_rank(*sf, "sf", {2}));
    DG_TRY(dg::check_alignment(*sf, "sf", 4));
    int64_t sf_rows = 0;
    DG_TRY(check_k_grouped_ks(ks, num_groups, ks_tensor, &sf_rows));
    if (sf->sizes[0] != sf_rows)
      return dg::fail(DG_ERROR_INVALID_ARGUMENT,
                      "sf: has {} rows of K blocks but sum(ks) / 128 = {} (expected [sum(ks) / 128, MN]); shape {}",
                      sf->sizes[0], sf_rows, dg::describe(*sf));
    dg::ops::SfLayout want;
    DG_TRY(dg::ops::k_grouped_packed_layout(sf->sizes[1], ks, num_groups, &want));
    DG_TRY(check_out(out, {DG_DTYPE_INT32, DG_DTYPE_UE8M0X4}));
    if (!dg::ops::has_layout(*out, want))
      return dg::fail(DG_ERROR_INVALID_ARGUMENT,
                      "out: has shape {} (expected [{}, {}] strides [{}, 1]; see "
                      "dg_get_k_grouped_mn_major_tma_aligned_packed_ue8m0_tensor_layout)",
                      dg::describe(*out), want.sizes[0], want.sizes[1], want.strides[0]);
    return dg::ops::run_k_grouped_pack(*stream, *sf, ks, num_groups, *out);
  })
}

DG_API dg_status dg_transform_sf_layout(const dg_stream* stream, const dg_tensor* sf, int64_t mn, int64_t k,
                                        const dg_sf_recipe* recipe, int32_t* out_is_input, dg_dtype* out_dtype,
                                        int64_t* out_sizes, int64_t* out_strides, size_t* out_bytes) {
  DG_API_GUARD({
    dg::ops::SfTransformPlan plan;
    DG_TRY(plan_transform(stream, sf, mn, k, recipe, &plan));
    if (out_is_input) *out_is_input = plan.is_input;
    if (out_dtype) *out_dtype = plan.is_input ? sf->dtype : plan.dtype;
    for (int i = 0; i < plan.layout.rank; ++i) {
      if (out_sizes) out_sizes[i] = plan.layout.sizes[i];
      if (out_strides) out_strides[i] = plan.layout.strides[i];
    }
    if (out_bytes) *out_bytes = plan.layout.bytes;
    return DG_SUCCESS;
  })
}

DG_API dg_status dg_transform_sf_into_required_layout(dg_stream* stream, const dg_tensor* sf, int64_t mn, int64_t k,
                                                      const dg_sf_recipe* recipe, const dg_tensor* out) {
  DG_API_GUARD({
    dg::ops::SfTransformPlan plan;
    DG_TRY(plan_transform(stream, sf, mn, k, recipe, &plan));
    if (plan.is_input) return DG_SUCCESS;
    DG_TRY(dg::check_stream(stream, "stream"));
    DG_TRY(check_out(out, {plan.dtype, plan.dtype == DG_DTYPE_INT32 ? DG_DTYPE_UE8M0X4 : plan.dtype}));
    return dg::ops::run_layout_transform(*stream, plan.op, *sf, *out, plan.out_mn, plan.row_div);
  })
}

}  // extern "C"
