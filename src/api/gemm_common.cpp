#include "api/gemm_common.h"

#include <cstddef>
#include <string>

#include <fmt/format.h>

#include "ops/gemm_util.h"
#include "ops/transpose.h"
#include "runtime/options.h"
#include "runtime/status.h"

namespace dg::api {

using ops::Major;

dg_status read_options(const dg_gemm_options* options, dg_gemm_options* out) {
  // The oldest dg_gemm_options a caller may pass ends at num_sms.
  constexpr size_t kOldestSize = offsetof(dg_gemm_options, fp8_promotion);
  DG_TRY(dg::read_options(options, dg_gemm_options DG_GEMM_OPTIONS_INIT, kOldestSize, "options",
                          "DG_GEMM_OPTIONS_INIT", out));
  if (out->recipe != DG_FP8_RECIPE_1D2D && out->recipe != DG_FP8_RECIPE_1D1D)
    return dg::fail(DG_ERROR_INVALID_ARGUMENT, "options.recipe: {} (expected DG_FP8_RECIPE_1D2D (0) or _1D1D (1))",
                    out->recipe);
  if (out->kernel < DG_GEMM_KERNEL_AUTO || out->kernel > DG_GEMM_KERNEL_SKINNY)
    return dg::fail(DG_ERROR_INVALID_ARGUMENT,
                    "options.kernel: {} (expected DG_GEMM_KERNEL_AUTO (0), _TILED (1) or _SKINNY (2))", out->kernel);
  // The config heuristic checks each override's legal values; here only the range every one of
  // them shares, so that nothing downstream (cache keys, loop bounds) sees a negative or huge value.
  const struct {
    const char* name;
    int32_t value, lo, hi;
  } fields[] = {{"options.block_m", out->block_m, 0, 256},
                {"options.block_n", out->block_n, 0, 256},
                {"options.num_stages", out->num_stages, 0, 64},
                {"options.cluster", out->cluster, 0, 2},
                {"options.multicast_a", out->multicast_a, -1, 1},
                {"options.num_math_warpgroups", out->num_math_warpgroups, 0, 2},
                {"options.num_sms", out->num_sms, 0, 1024},
                {"options.fp8_promotion", out->fp8_promotion, 0, DG_FP8_PROMOTION_OVERLAP},
                {"options.fp8_promotion_slices", out->fp8_promotion_slices, 0, 4},
                {"options.split_k", out->split_k, 0, 8}};
  for (const auto& f : fields)
    if (f.value < f.lo || f.value > f.hi)
      return dg::fail(DG_ERROR_INVALID_ARGUMENT, "{}: {} is out of range (expected {}..{}{})", f.name, f.value, f.lo,
                      f.hi, f.lo == 0 ? ", 0 = heuristic" : ", -1 = heuristic");
  return DG_SUCCESS;
}

ops::GemmOverride override_of(const dg_gemm_options& o) {
  ops::GemmOverride r;
  r.block_m = o.block_m;
  r.block_n = o.block_n;
  r.stages = o.num_stages;
  r.cluster = o.cluster;
  r.multicast_a = o.multicast_a;
  r.math_wg = o.num_math_warpgroups;
  r.num_sms = o.num_sms;
  r.fp8_promotion = o.fp8_promotion;
  r.promotion_slices = o.fp8_promotion_slices;
  r.split_k = o.split_k;
  r.kernel = o.kernel;
  return r;
}

// Picks the memory order of an operand view for TMA: K-major (stride 1 along K, rows 16-byte
// multiples apart) preferred, else MN-major. `ld` receives the stride between TMA rows. FP8 GEMMs
// take the same MN-major operands and read them through K-major copies (check_workspace).
dg_status operand_major(const dg_tensor_s& t, const View& v, const char* arg, const char* view_name, bool fp8,
                        Major* major, int64_t* ld) {
  const int64_t eb = static_cast<int64_t>(dg::dtype_size(t.dtype));
  if (reinterpret_cast<uintptr_t>(t.data) % 16 != 0)
    return dg::fail(DG_ERROR_INVALID_ARGUMENT, "{}: data pointer {} is not 16-byte aligned (TMA)", arg, t.data);
  const bool k_major = v.stride_cols == 1 || v.cols == 1;
  const bool k_ok = k_major && (v.rows == 1 || ((v.stride_rows * eb) % 16 == 0 && v.stride_rows >= v.cols));
  if (k_ok) {
    *major = Major::kK;
    *ld = v.rows == 1 ? v.cols : v.stride_rows;
    return DG_SUCCESS;
  }
  const bool mn_major = v.stride_rows == 1 || v.rows == 1;
  const bool mn_ok = mn_major && (v.cols == 1 || ((v.stride_cols * eb) % 16 == 0 && v.stride_cols >= v.rows));
  if (mn_ok) {
    *major = Major::kMN;
    *ld = v.cols == 1 ? v.rows : v.stride_cols;
    return DG_SUCCESS;
  }
  if (fp8) {
    if (mn_major || k_major)
      return dg::fail(DG_ERROR_UNSUPPORTED,
                      "{}: FP8 GEMMs on SM90 need {} K-major in memory (stride 1 along K, rows a multiple of 16 "
                      "bytes apart) or MN-major (stride 1 along M/N, K rows a multiple of 16 bytes apart; copied "
                      "K-major through options.workspace); got {}",
                      arg, view_name, dg::describe(t));
    return dg::fail(DG_ERROR_INVALID_ARGUMENT, "{}: neither stride of {} is 1; shape {}", arg, view_name,
                    dg::describe(t));
  }
  if (!k_major && !mn_major)
    return dg::fail(DG_ERROR_INVALID_ARGUMENT,
                    "{}: neither stride of {} is 1 (expected a K-major or an MN-major matrix); shape {}", arg,
                    view_name, dg::describe(t));
  return dg::fail(DG_ERROR_INVALID_ARGUMENT,
                  "{}: {} has stride 1 but its other stride is not a multiple of 16 bytes covering the matrix, as "
                  "TMA requires (K % 8 == 0 for K-major BF16, M or N % 8 == 0 for MN-major); shape {}",
                  arg, view_name, dg::describe(t));
}


// Per-token scales [rows, sf_k] as a view: MN-major TMA-aligned (stride 1 along rows, a multiple of
// 4 elements >= rows along K blocks).
dg_status check_token_scales(const dg_tensor_s& t, bool transposed, const char* arg, int64_t rows, int64_t sf_k,
                             int64_t* ld) {
  DG_TRY(dg::check_rank(t, arg, {2}));
  DG_TRY(dg::check_dtype(t, arg, {DG_DTYPE_FLOAT32}));
  if (t.data == nullptr) return dg::fail(DG_ERROR_INVALID_ARGUMENT, "{}: data is NULL", arg);
  const View v = view_of(t, transposed);
  if (v.rows != rows || v.cols != sf_k)
    return dg::fail(DG_ERROR_INVALID_ARGUMENT, "{}: view is [{}, {}] (expected [{}, ceil(K / 128) = {}]); shape {}", arg,
                    v.rows, v.cols, rows, sf_k, dg::describe(t));
  const int64_t col_stride = sf_k == 1 ? (rows + 3) / 4 * 4 : v.stride_cols;
  if (!(v.stride_rows == 1 || rows == 1) || col_stride % 4 != 0 || col_stride < rows ||
      reinterpret_cast<uintptr_t>(t.data) % 16 != 0)
    return dg::fail(DG_ERROR_INVALID_ARGUMENT,
                    "{}: per-token scales must be MN-major and TMA-aligned: strides (1, align({}, 4) = {}) and a "
                    "16-byte aligned base (dg_transform_sf_into_required_layout produces that layout); got {}",
                    arg, rows, (rows + 3) / 4 * 4, dg::describe(t));
  *ld = col_stride;
  return DG_SUCCESS;
}

// SM90 FP8 WGMMA reads K-major operands only: an FP8 call reads each MN-major operand from a K-major
// copy that it makes in options.workspace first (ops::fp8_gemm_workspace's layout).
dg_status check_workspace(const dg_gemm_options& o, const ops::GemmShape& s, const char* a_name,
                          const char* b_name) {
  const bool copy_a = s.major_a == Major::kMN, copy_b = s.major_b == Major::kMN;
  if (!copy_a && !copy_b) return DG_SUCCESS;
  const size_t need = ops::fp8_gemm_workspace(copy_a, copy_b, s.m, s.n, s.k).bytes;
  const char* copies = copy_a && copy_b ? "copies of a and b" : copy_a ? "copy of a" : "copy of b";
  if (o.workspace == nullptr) {
    const std::string what = copy_a && copy_b ? fmt::format("a, b: {} and {} are", a_name, b_name)
                                              : fmt::format("{}: {} is", copy_a ? "a" : "b", copy_a ? a_name : b_name);
    return dg::fail(DG_ERROR_UNSUPPORTED,
                    "{} MN-major in memory; SM90 FP8 GEMMs read K-major operands, so the call needs options.workspace "
                    "for the K-major {}: {} bytes, 256-byte aligned (dg_fp8_gemm_workspace_size computes it)",
                    what, copies, need);
  }
  if (o.workspace_size < need)
    return dg::fail(DG_ERROR_INVALID_ARGUMENT,
                    "options.workspace_size: {} bytes, but the call needs {} for the K-major {} "
                    "(dg_fp8_gemm_workspace_size computes it)",
                    o.workspace_size, need, copies);
  if (reinterpret_cast<uintptr_t>(o.workspace) % 256 != 0)
    return dg::fail(DG_ERROR_INVALID_ARGUMENT,
                    "options.workspace: {} is not 256-byte aligned (expected a 256-byte aligned buffer of {} bytes for "
                    "the K-major {}; dg_fp8_gemm_workspace_size computes the size)",
                    o.workspace, need, copies);
  return DG_SUCCESS;
}

// An INT32 vector of `size` entries, stride 1, non-NULL where it has entries.
dg_status check_int_vector(const dg_tensor_s& t, const char* arg, int64_t size, const char* what) {
  DG_TRY(dg::check_rank(t, arg, {1}));
  DG_TRY(dg::check_dtype(t, arg, {DG_DTYPE_INT32}));
  if (t.sizes[0] != size)
    return dg::fail(DG_ERROR_INVALID_ARGUMENT, "{}: has {} entries (expected {} = {}); shape {}", arg, t.sizes[0], size,
                    what, dg::describe(t));
  if (size > 1 && t.strides[0] != 1)
    return dg::fail(DG_ERROR_INVALID_ARGUMENT, "{}: must be contiguous (stride 1); got {}", arg, dg::describe(t));
  if (size > 0 && t.data == nullptr) return dg::fail(DG_ERROR_INVALID_ARGUMENT, "{}: data is NULL", arg);
  if (reinterpret_cast<uintptr_t>(t.data) % 4 != 0)
    return dg::fail(DG_ERROR_INVALID_ARGUMENT, "{}: data pointer {} is not 4-byte aligned", arg, t.data);
  return DG_SUCCESS;
}

dg_status check_ks(const int64_t* ks, int64_t num_groups, int64_t* total) {
  if (num_groups < 1 || num_groups > INT32_MAX)
    return dg::fail(DG_ERROR_INVALID_ARGUMENT, "num_groups: {} (expected 1 .. 2^31 - 1)", num_groups);
  if (ks == nullptr) return dg::fail(DG_ERROR_INVALID_ARGUMENT, "ks: NULL (expected num_groups = {} entries)", num_groups);
  constexpr int64_t kAlignment = ops::kMkAlignment;
  int64_t sum = 0;
  for (int64_t g = 0; g < num_groups; ++g) {
    if (ks[g] < 0 || ks[g] % kAlignment != 0)
      return dg::fail(DG_ERROR_INVALID_ARGUMENT,
                      "ks[{}]: {} (expected >= 0 and a multiple of {}, dg_get_mk_alignment_for_contiguous_layout())", g,
                      ks[g], kAlignment);
    sum += ks[g];
    if (sum > INT32_MAX)
      return dg::fail(DG_ERROR_UNSUPPORTED, "ks: the sum of the first {} entries is {} (expected below 2^31)", g + 1, sum);
  }
  *total = sum;
  return DG_SUCCESS;
}

}  // namespace dg::api
