#include "ops/transpose.h"

#include "jit/kernel_cache.h"
#include "runtime/launch.h"
#include "runtime/status.h"

namespace dg::ops {
namespace {

int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace

jit::KernelSpec transpose_kernel_spec() {
  jit::KernelSpec spec;
  spec.template_name = "kernels/transpose.cu.j2";
  spec.kernel_name = "dg_byte_transpose";
  spec.context = codegen::Value::map({{"kernel_name", spec.kernel_name}});
  return spec;
}

unsigned transpose_grid(int64_t rows, int64_t cols, int num_sms) {
  const int64_t tiles = cdiv(rows, kTransposeTile) * cdiv(cols, kTransposeTile);
  const int64_t rounds = cdiv(tiles, int64_t(num_sms) * kTransposeBlocksPerSm);
  return static_cast<unsigned>(cdiv(tiles, rounds));
}

dg_status run_transpose(const dg_stream_s& stream, const TransposeParams& p, bool prepare_only) {
  const Kernel* kernel = nullptr;
  DG_TRY(jit::get_kernel(stream,
      jit::KernelKey(jit::kFamilyTranspose, {}),
      [](jit::KernelSpec* spec) { *spec = transpose_kernel_spec(); return DG_SUCCESS; }, &kernel));
  if (prepare_only || p.rows == 0 || p.cols == 0) return DG_SUCCESS;
  int num_sms = 0;
  DG_TRY(num_sms_of(stream, &num_sms));
  TransposeParams arg = p;
  void* args[] = {&arg};
  LaunchConfig lc;
  lc.grid[0] = transpose_grid(p.rows, p.cols, num_sms);
  lc.block[0] = kTransposeThreads;
  lc.pdl = config_of(stream).pdl;
  return launch(stream, *kernel, lc, args);
}

Fp8GemmWorkspace fp8_gemm_workspace(bool copy_a, bool copy_b, int64_t m, int64_t n, int64_t k) {
  auto align = [](int64_t x, int64_t a) { return cdiv(x, a) * a; };
  Fp8GemmWorkspace w;
  w.ld = align(k, 16);
  w.offset_b = copy_a ? static_cast<size_t>(align(m * w.ld, 256)) : 0;
  w.bytes = w.offset_b + (copy_b ? static_cast<size_t>(align(n * w.ld, 256)) : 0);
  return w;
}

}  // namespace dg::ops
