#include "ops/quantize.h"

#include <algorithm>

#include "jit/kernel_cache.h"
#include "runtime/checked.h"
#include "runtime/launch.h"
#include "runtime/status.h"

namespace dg::ops {
namespace {

constexpr int64_t kMaxGridY = 65535;  // also the largest grid.z
constexpr int kAccessBytes = 16;

const char* op_name(QuantOp op) {
  switch (op) {
    case QuantOp::kPerBlock: return "per_block";
    case QuantOp::kMnMajor: return "mn_major";
    case QuantOp::kKGrouped: return "k_grouped";
    default: return "per_token";
  }
}

const char* grouping_name(QuantGrouping g) {
  switch (g) {
    case QuantGrouping::kIndices: return "indices";
    case QuantGrouping::kPsum: return "psum";
    case QuantGrouping::kMasked: return "masked";
    default: return "none";
  }
}

}  // namespace

jit::KernelSpec quantize_kernel_spec(const QuantVariant& v) {
  const bool per_token = v.op == QuantOp::kPerToken;
  jit::KernelSpec spec;
  spec.template_name = "kernels/quantize.cu.j2";
  const bool grouped = per_token && v.grouping != QuantGrouping::kNone;
  const bool transpose = v.op == QuantOp::kKGrouped && v.transpose;
  spec.kernel_name = fmt::format("dg_quantize_fp8_{}_{}{}{}{}{}", op_name(v.op), v.fp32 ? "f32" : "bf16",
                                 v.vec ? "_v16" : "_v1", grouped ? fmt::format("_{}", grouping_name(v.grouping)) : "",
                                 per_token && v.packed ? "_ue8m0x4" : "", transpose ? "_kmajor" : "");
  spec.context = codegen::Value::map({{"kernel_name", spec.kernel_name},
                                      {"op", op_name(v.op)},
                                      {"fp32", v.fp32},
                                      {"vec", v.vec},
                                      {"grouping", grouping_name(per_token ? v.grouping : QuantGrouping::kNone)},
                                      {"packed", per_token && v.packed},
                                      {"transpose", transpose}});
  return spec;
}

int quantize_variants(QuantVariant* out, int capacity) {
  int n = 0;
  auto add = [&](const QuantVariant& v) {
    if (n < capacity) out[n] = v;
    ++n;
  };
  for (bool fp32 : {false, true})
    for (bool vec : {false, true}) {
      for (int g = 0; g <= static_cast<int>(QuantGrouping::kMasked); ++g)
        for (bool packed : {false, true}) add({QuantOp::kPerToken, fp32, vec, static_cast<QuantGrouping>(g), packed});
      add({QuantOp::kPerBlock, fp32, vec, QuantGrouping::kNone, false});
      add({QuantOp::kMnMajor, fp32, vec, QuantGrouping::kNone, false});
      for (bool transpose : {false, true}) add({QuantOp::kKGrouped, fp32, vec, QuantGrouping::kNone, false, transpose});
    }
  return n;
}

bool quantize_vec_ok(const void* x, size_t esize, const int64_t* x_strides, int nx, const void* out,
                     const int64_t* out_strides, int nout, int64_t axis) {
  if (reinterpret_cast<uintptr_t>(x) % kAccessBytes != 0 || reinterpret_cast<uintptr_t>(out) % kAccessBytes != 0)
    return false;
  if (axis % kQuantVecElems != 0) return false;
  for (int i = 0; i < nx; ++i)
    if ((x_strides[i] * static_cast<int64_t>(esize)) % kAccessBytes != 0) return false;
  for (int i = 0; i < nout; ++i)
    if (out_strides[i] % kAccessBytes != 0) return false;
  return true;
}

void quantize_grid(QuantOp op, int64_t batch, int64_t rows, int64_t cols, bool masked, int num_sms, unsigned grid[3]) {
  switch (op) {
    case QuantOp::kPerToken:
      if (masked) {
        const int64_t warps = batch * rows * ceil_div(cols, int64_t{kQuantColsPerCta});
        grid[0] = static_cast<unsigned>(
            std::min<int64_t>(ceil_div(warps, int64_t{kQuantRowsPerCta}), int64_t{num_sms} * kQuantMaskedCtasPerSm));
        grid[1] = grid[2] = 1;
        return;
      }
      grid[0] = static_cast<unsigned>(ceil_div(rows, int64_t{kQuantRowsPerCta}));
      grid[1] = static_cast<unsigned>(ceil_div(cols, int64_t{kQuantColsPerCta}));
      grid[2] = static_cast<unsigned>(batch);
      return;
    case QuantOp::kPerBlock:
      grid[0] = static_cast<unsigned>(ceil_div(cols, int64_t{kQuantGroup}));
      grid[1] = static_cast<unsigned>(ceil_div(rows, int64_t{kQuantGroup}));
      grid[2] = static_cast<unsigned>(batch);
      return;
    case QuantOp::kMnMajor:
      grid[0] = static_cast<unsigned>(ceil_div(rows, int64_t{kQuantGroup}));
      grid[1] = static_cast<unsigned>(ceil_div(cols, int64_t{kQuantGroup}));
      grid[2] = 1;
      return;
    case QuantOp::kKGrouped:
      grid[0] = static_cast<unsigned>(rows);
      grid[1] = static_cast<unsigned>(ceil_div(cols, int64_t{kQuantGroup}));
      grid[2] = 1;
      return;
  }
}

dg_status check_quantize_limits(QuantOp op, int64_t batch, int64_t rows, int64_t cols, const char* arg) {
  const int64_t y_axis = op == QuantOp::kPerToken ? ceil_div(cols, int64_t{kQuantColsPerCta})
                                                  : op == QuantOp::kPerBlock ? ceil_div(rows, int64_t{kQuantGroup})
                                                                             : ceil_div(cols, int64_t{kQuantGroup});
  // Per-token rows are rounded up to 4 for the scales' padding.
  if (rows > INT32_MAX - 3 || cols > INT32_MAX || batch > kMaxGridY || y_axis > kMaxGridY)
    return fail(DG_ERROR_UNSUPPORTED, "{}: [{}, {}, {}] (batch, rows, columns) is too large for the {} quantization "
                "kernel (rows and columns below 2^31, batch and blocks along the second grid axis at most {})",
                arg, batch, rows, cols, op_name(op), kMaxGridY);
  return DG_SUCCESS;
}

dg_status run_quantize(const dg_stream_s& stream, const QuantVariant& v, const QuantParams& p, int64_t batch) {
  const bool masked = v.op == QuantOp::kPerToken && v.grouping == QuantGrouping::kMasked;
  int num_sms = 0;
  if (masked) DG_TRY(num_sms_of(stream, &num_sms));
  const jit::KernelKey key(jit::kFamilyElementwise,
                           {kElementwiseQuantize, static_cast<int64_t>(v.op), v.fp32, v.vec,
                            static_cast<int64_t>(v.grouping), v.packed});
  const Kernel* kernel = nullptr;
  DG_TRY(jit::get_kernel(
      stream, key, [&](jit::KernelSpec* spec) { *spec = quantize_kernel_spec(v); return DG_SUCCESS; }, &kernel));
  LaunchConfig lc;
  quantize_grid(v.op, batch, v.op == QuantOp::kPerToken && !masked ? p.sf_rows : p.rows, p.cols, masked, num_sms,
                lc.grid);
  if (lc.grid[0] == 0 || lc.grid[1] == 0 || lc.grid[2] == 0) return DG_SUCCESS;
  lc.block[0] = kQuantThreads;
  lc.pdl = config_of(stream).pdl;
  QuantParams arg = p;
  void* args[] = {&arg};
  return launch(stream, *kernel, lc, args);
}

int k_grouped_blocks_per_cta(int64_t out_blocks, int64_t mn, int num_sms) {
  const int64_t ctas = out_blocks * ceil_div(mn, int64_t{kQuantGroup});
  const int64_t want = int64_t{std::max(num_sms, 1)} * kQuantKGroupedCtasPerSm;
  return static_cast<int>(std::clamp<int64_t>(ctas / want, 1, kQuantMaxBlocksPerCta));
}

dg_status run_quantize_k_grouped(const dg_stream_s& stream, const QuantVariant& v, const KGroupedQuantParams& p) {
  int num_sms = 0;
  DG_TRY(num_sms_of(stream, &num_sms));
  const jit::KernelKey key(jit::kFamilyElementwise, {kElementwiseQuantize, static_cast<int64_t>(v.op), v.fp32, v.vec,
                                                     static_cast<int64_t>(v.grouping), v.packed, v.transpose});
  const Kernel* kernel = nullptr;
  DG_TRY(jit::get_kernel(
      stream, key, [&](jit::KernelSpec* spec) { *spec = quantize_kernel_spec(v); return DG_SUCCESS; }, &kernel));
  KGroupedQuantParams arg = p;
  arg.blocks_per_cta = k_grouped_blocks_per_cta(p.out_blocks, p.mn, num_sms);
  LaunchConfig lc;
  quantize_grid(QuantOp::kKGrouped, 1, ceil_div(int64_t{p.out_blocks}, int64_t{arg.blocks_per_cta}), p.mn, false, 0,
                lc.grid);
  if (lc.grid[0] == 0 || lc.grid[1] == 0) return DG_SUCCESS;
  lc.block[0] = kQuantThreads;
  lc.pdl = config_of(stream).pdl;
  void* args[] = {&arg};
  return launch(stream, *kernel, lc, args);
}

}  // namespace dg::ops
