#include "ops/gemm_launch.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "jit/concurrent.h"
#include "jit/kernel_cache.h"
#include "ops/gemm_config_cache.h"
#include "ops/gemm_tuning.h"
#include "ops/gemm_util.h"
#include "runtime/device.h"
#include "runtime/status.h"

namespace dg::ops {

OperandCopies k_major_copies(GemmKind kind, int64_t m, int64_t n, int64_t k, void* workspace, OperandView* a,
                             OperandView* b) {
  OperandCopies copies;
  const bool copy_a = is_fp8(kind) && a->major == Major::kMN, copy_b = is_fp8(kind) && b->major == Major::kMN;
  if (!copy_a && !copy_b) return copies;
  const Fp8GemmWorkspace w = fp8_gemm_workspace(copy_a, copy_b, m, n, k);
  char* const base = static_cast<char*>(workspace);
  if (copy_a) {
    copies.params[copies.count++] = TransposeParams{a->data, a->ld, base, w.ld, k, m};
    *a = OperandView{base, w.ld, Major::kK};
  }
  if (copy_b) {
    void* const dst = base != nullptr ? base + w.offset_b : nullptr;
    copies.params[copies.count++] = TransposeParams{b->data, b->ld, dst, w.ld, k, n};
    *b = OperandView{dst, w.ld, Major::kK};
  }
  return copies;
}

dg_status run_copies(const dg_stream_s& stream, const OperandCopies& copies, bool prepare_only) {
  for (int i = 0; i < copies.count; ++i) DG_TRY(run_transpose(stream, copies.params[i], prepare_only));
  return DG_SUCCESS;
}

jit::KernelSpec gemm_scale_kernel_spec(dg_dtype d_dtype, bool has_c) {
  jit::KernelSpec spec;
  spec.template_name = "kernels/gemm_scale.cu.j2";
  spec.kernel_name = fmt::format("dg_gemm_scale_{}{}", d_dtype == DG_DTYPE_FLOAT32 ? "f32" : "bf16", has_c ? "_c" : "_zero");
  spec.context = codegen::Value::map({{"kernel_name", spec.kernel_name},
                                      {"dtype", d_dtype == DG_DTYPE_FLOAT32 ? "float" : "dg::bf16"},
                                      {"has_c", has_c ? "true" : "false"}});
  return spec;
}

dg_status run_gemm_scale(const dg_stream_s& stream, const GemmArgs& a, bool has_c, bool prepare_only) {
  // The grid: blocks of kThreads columns, at most kMaxColumnBlocks across (each block strides over
  // the rest of its row), one row of blocks per row of D up to the grid's y limit.
  constexpr int kThreads = 256, kMaxColumnBlocks = 8, kMaxGridY = 65535, kElementwiseScale = 1;
  const dg_dtype dt = a.shape.d_dtype;
  const jit::KernelKey key(jit::kFamilyElementwise, {kElementwiseScale, dt, has_c});
  const Kernel* kernel = nullptr;
  DG_TRY(jit::get_kernel(
      stream, key, [&](jit::KernelSpec* out) { *out = gemm_scale_kernel_spec(dt, has_c); return DG_SUCCESS; },
      &kernel));
  if (prepare_only) return DG_SUCCESS;
  void* d = a.d;
  const void* c = a.c;
  long long ldd = a.ldd, ldc = a.ldc;
  int m = static_cast<int>(a.shape.m), n = static_cast<int>(a.shape.n);
  float beta = a.beta;
  void* args[] = {&d, &c, &ldd, &ldc, &m, &n, &beta};
  LaunchConfig lc;
  lc.block[0] = kThreads;
  lc.grid[0] = static_cast<unsigned>(std::min<int64_t>(cdiv(a.shape.n, kThreads), kMaxColumnBlocks));
  lc.grid[1] = static_cast<unsigned>(std::min<int64_t>(a.shape.m, kMaxGridY));
  lc.pdl = config_of(stream).pdl;
  return launch(stream, *kernel, lc, args);
}

namespace {

// The fields every SM90 GEMM launch fills alike.
void fill_common(const GemmShape& s, const GemmConfig& c, Sm90GemmParams* p) {
  std::memset(p, 0, sizeof(*p));
  p->m = static_cast<uint32_t>(s.m);
  p->n = static_cast<uint32_t>(s.n);
  p->k = static_cast<uint32_t>(s.k);
  p->raster_band = static_cast<uint32_t>(c.raster_band);
  p->raster_along_n = c.raster_along_n ? 1u : 0u;
  // The scheduler's units: tiles, or tile pairs along the dimension a 2-CTA cluster shares. Rows of
  // tiles are the problem's (a grouped problem's walk covers every group's rows).
  const bool pair_m = c.cluster == 2 && !c.multicast_a, pair_n = c.cluster == 2 && c.multicast_a;
  p->walk = walk_divisors(cdiv(cdiv(s.m, c.block_m), pair_m ? 2 : 1), cdiv(cdiv(s.n, c.block_n), pair_n ? 2 : 1),
                          c.raster_band, c.raster_along_n);
}

LaunchConfig launch_config(const dg_stream_s& stream, const GemmShape& s, const GemmConfig& c) {
  LaunchConfig lc;
  lc.grid[0] = static_cast<unsigned>(c.grid);
  lc.block[0] = c.threads;
  // A count-adaptive kernel runs any of its tiles: the largest layout, the group table after any.
  unsigned smem = c.smem_bytes;
  for (const GemmAltTile& a : c.alts) smem = std::max(smem, a.smem_bytes);
  lc.smem_bytes = smem + group_table_bytes(s.type, s.num_groups);
  // Split-K's CTAs of one tile form its cluster.
  lc.cluster = static_cast<unsigned>(c.split_k > 1 ? c.split_k : c.cluster);
  lc.pdl = config_of(stream).pdl;
  return lc;
}

}  // namespace

dg_status run_sm90_gemm(const dg_stream_s& stream, const GemmShape& s, int num_sms, const GemmOverride& o,
                        bool prepare_only, Prologue prologue, Launcher launcher) {
  GemmConfig c;
  // On a config-cache miss only: the device's tuning table, else the heuristic with the device's
  // calibration of the cost model (gemm_tuning.h).
  auto choose = [&](const GemmShape& shape, int sms, const GemmOverride& over, GemmConfig* out) {
    return choose_tuned_gemm_config(stream, shape, sms, over, out);
  };
  DG_TRY(cached_config(stream, s, num_sms, o, choose, &c));
  const Kernel* kernel = nullptr;
  // The spec (strings, a template context) is built only on a cache miss: the warm path hashes the key.
  auto load_gemm = [&] {
    return jit::get_kernel(
        stream, gemm_kernel_key(s, c), [&](jit::KernelSpec* spec) { *spec = gemm_kernel_spec(s, c); return DG_SUCCESS; },
        &kernel);
  };
  // A prepare compiles the GEMM and the kernels before it at once; a call loads them in turn (its
  // warm path starts no thread).
  if (prepare_only) return jit::run_concurrently(load_gemm, [&] { return prologue(Phase::kLoad); });
  DG_TRY(load_gemm());
  DG_TRY(prologue(Phase::kLoad));
  DG_TRY(prologue(Phase::kRun));
  // cuTensorMapEncodeTiled needs the device's context current on this thread.
  ContextScope scope;
  DG_TRY(scope.enter(*stream.device));
  Sm90GemmParams p;
  fill_common(s, c, &p);
  return launcher(c, *kernel, &p, launch_config(stream, s, c));
}

}  // namespace dg::ops
