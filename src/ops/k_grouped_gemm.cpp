// K-grouped GEMMs (MoE weight gradient): the SM90 GEMM kernel with sched::GemmType::kKGrouped.
// Every non-empty group gets its own A and B TMA maps (groups differ in K, so in row length or in
// extent), passed to the kernel in a second parameter of up to kMaxKGroupSlots groups; larger
// calls are split into launches of that many groups (the groups write disjoint parts of D).
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "jit/concurrent.h"
#include "jit/kernel_cache.h"
#include "ops/gemm.h"
#include "ops/gemm_config_cache.h"
#include "ops/gemm_util.h"
#include "ops/transpose.h"
#include "runtime/device.h"
#include "runtime/launch.h"
#include "runtime/status.h"
#include "runtime/tma.h"

namespace dg::ops {
namespace {

// Group g's [MN, k_g] operand as a TMA map (K-major: dims (k_g, MN), box (block_k, block_mn);
// MN-major: dims (MN, k_g), box (64, block_k)), koff = the K columns of the groups before it.
dg_status encode_group_operand(tma::Descriptor* out, const void* base, KGroupedOperand layout, int64_t ld, int64_t mn,
                               int64_t koff, int64_t k, GemmKind kind, int block_mn, int block_k, const char* what) {
  const int eb = elem_bytes(kind);
  const CUtensorMapDataType dt = is_fp8(kind) ? CU_TENSOR_MAP_DATA_TYPE_UINT8 : CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
  const char* bytes = static_cast<const char*>(base);
  switch (layout) {
    case KGroupedOperand::kFlat:
      return tma::encode_2d(out, bytes + mn * koff * eb, dt, eb, k, mn, k, block_k, block_mn, 128, what);
    case KGroupedOperand::kKMajor:
      return tma::encode_2d(out, bytes + koff * eb, dt, eb, k, mn, ld, block_k, block_mn, 128, what);
    case KGroupedOperand::kMNMajor:
      return tma::encode_2d(out, bytes + koff * ld * eb, dt, eb, mn, k, ld, 64, block_k, 128, what);
  }
  return fail(DG_ERROR_INTERNAL, "{}: unknown K-grouped operand layout", what);
}

}  // namespace

dg_status run_k_grouped_gemm(const dg_stream_s& stream, const KGroupedArgs& in, const GemmOverride& o,
                             bool prepare_only) {
  KGroupedArgs args = in;  // the FP8 K-major copies replace MN-major operands
  if (args.m == 0 || args.n == 0 || args.num_groups == 0) return DG_SUCCESS;
  std::vector<int64_t> live, koff(static_cast<size_t>(args.num_groups));
  int64_t total_k = 0;
  for (int64_t g = 0; g < args.num_groups; ++g) {
    koff[static_cast<size_t>(g)] = total_k;
    total_k += args.ks[g];
    if (args.ks[g] > 0) live.push_back(g);
  }
  const bool has_c = args.c != nullptr && args.beta != 0.0f;
  // D as one [G * M, N] matrix for the elementwise pre-pass.
  GemmArgs whole;
  whole.shape.m = args.num_groups * args.m;
  whole.shape.n = args.n;
  whole.shape.d_dtype = DG_DTYPE_FLOAT32;
  whole.d = args.d;
  whole.ldd = args.n;
  whole.c = args.c;
  whole.ldc = args.n;
  whole.beta = args.beta;
  if (live.empty()) return run_gemm_scale(stream, whole, has_c, prepare_only);

  GemmShape s;
  s.kind = args.kind;
  s.m = args.m;
  s.n = args.n;
  int64_t live_k = 0;
  for (int64_t g : live) live_k += args.ks[g];
  s.k = align_up(cdiv(live_k, static_cast<int64_t>(live.size())), 128);
  s.major_a = args.a_layout == KGroupedOperand::kMNMajor ? Major::kMN : Major::kK;
  s.major_b = args.b_layout == KGroupedOperand::kMNMajor ? Major::kMN : Major::kK;
  s.d_dtype = DG_DTYPE_FLOAT32;
  // Without C the kernel stores D; with it D holds beta * C first (unless it already is C) and the
  // kernel adds into it.
  s.accumulate = has_c;
  s.type = GemmType::kKGrouped;
  s.num_groups = static_cast<int64_t>(live.size());

  // SM90 FP8 WGMMA reads K-major operands: MN-major ones are read from K-major copies.
  TransposeParams copies[2];
  int num_copies = 0;
  if (is_fp8(s.kind) && (s.major_a == Major::kMN || s.major_b == Major::kMN)) {
    const bool copy_a = s.major_a == Major::kMN, copy_b = s.major_b == Major::kMN;
    const Fp8GemmWorkspace w = fp8_gemm_workspace(copy_a, copy_b, s.m, s.n, total_k);
    char* const base = static_cast<char*>(args.workspace);
    if (copy_a) {
      copies[num_copies++] = TransposeParams{args.a, args.lda, base, w.ld, total_k, s.m};
      args.a = base, args.lda = w.ld, args.a_layout = KGroupedOperand::kKMajor;
      s.major_a = Major::kK;
    }
    if (copy_b) {
      void* const dst = base != nullptr ? base + w.offset_b : nullptr;
      copies[num_copies++] = TransposeParams{args.b, args.ldb, dst, w.ld, total_k, s.n};
      args.b = dst, args.ldb = w.ld, args.b_layout = KGroupedOperand::kKMajor;
      s.major_b = Major::kK;
    }
  }

  int num_sms = 0;
  DG_TRY(num_sms_of(stream, &num_sms));
  GemmConfig c;
  DG_TRY(cached_config(stream, s, num_sms, o, choose_gemm_config, &c));
  const jit::Kernel* kernel = nullptr;
  auto load_gemm = [&] {
    return stream.device->kernels->get(
        gemm_kernel_key(s, c), [&](jit::KernelSpec* spec) { *spec = gemm_kernel_spec(s, c); return DG_SUCCESS; },
        config_of(stream), &kernel);
  };
  const bool pre_pass = has_c && !(args.c == args.d && args.beta == 1.0f);
  const bool zero_empty = !has_c && live.size() < static_cast<size_t>(args.num_groups);
  auto load_others = [&]() -> dg_status {
    if (pre_pass || prepare_only) DG_TRY(run_gemm_scale(stream, whole, true, true));
    if (zero_empty || prepare_only) DG_TRY(run_gemm_scale(stream, whole, false, true));
    for (int i = 0; i < num_copies; ++i) DG_TRY(run_transpose(stream, copies[i], true));
    return DG_SUCCESS;
  };
  // A prepare compiles the GEMM and the kernels beside it at once; a call loads them in turn.
  if (prepare_only) return jit::run_concurrently(load_gemm, load_others);
  DG_TRY(load_gemm());
  DG_TRY(load_others());
  if (pre_pass) DG_TRY(run_gemm_scale(stream, whole, true, false));
  if (zero_empty) {
    // An empty group's D is zero: its [M, N] block, one group after another.
    for (int64_t g = 0; g < args.num_groups; ++g) {
      if (args.ks[g] > 0) continue;
      GemmArgs block = whole;
      block.shape.m = args.m;
      block.d = args.d + g * args.m * args.n;
      block.c = nullptr;
      DG_TRY(run_gemm_scale(stream, block, false, false));
    }
  }
  for (int i = 0; i < num_copies; ++i) DG_TRY(run_transpose(stream, copies[i], false));

  ContextScope scope;
  DG_TRY(scope.enter(*stream.device));
  Sm90GemmParams p;
  std::memset(&p, 0, sizeof(p));
  const uint32_t strip_bytes = static_cast<uint32_t>(c.d_strip * 4);
  DG_TRY(tma::encode_3d(&p.tma_d, args.d, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 4, s.n, s.m, s.n, args.num_groups, s.m * s.n,
                        c.d_strip, c.block_m / c.math_wg, strip_bytes >= 32 ? strip_bytes : 0, "d"));
  if (is_fp8(s.kind)) {
    DG_TRY(tma::encode_2d(&p.tma_sfa, args.sfa, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 4, align_up(s.m, 4), total_k / 128,
                          args.ld_sfa, c.block_m, 1, 0, "sfa"));
    DG_TRY(tma::encode_2d(&p.tma_sfb, args.sfb, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 4, align_up(s.n, 4), total_k / 128,
                          args.ld_sfb, c.block_n, 1, 0, "sfb"));
  }
  p.m = static_cast<uint32_t>(s.m);
  p.n = static_cast<uint32_t>(s.n);
  p.k = static_cast<uint32_t>(s.k);
  p.alpha = args.alpha;
  p.raster_band = static_cast<uint32_t>(c.raster_band);
  p.raster_along_n = c.raster_along_n ? 1u : 0u;
  p.walk = walk_divisors(cdiv(s.m, c.block_m), cdiv(s.n, c.block_n), c.raster_band, c.raster_along_n);
  p.num_groups = static_cast<uint32_t>(args.num_groups);

  LaunchConfig lc;
  lc.grid[0] = static_cast<unsigned>(c.grid);
  lc.block[0] = c.threads;
  lc.smem_bytes = c.smem_bytes;
  lc.pdl = config_of(stream).pdl;
  KGroupedSlots slots;
  for (size_t first = 0; first < live.size(); first += kMaxKGroupSlots) {
    std::memset(&slots, 0, sizeof(slots));
    const size_t count = std::min<size_t>(kMaxKGroupSlots, live.size() - first);
    for (size_t i = 0; i < count; ++i) {
      const int64_t g = live[first + i], k = args.ks[g], off = koff[static_cast<size_t>(g)];
      DG_TRY(encode_group_operand(&slots.tma_a[i], args.a, args.a_layout, args.lda, s.m, off, k, s.kind, c.block_m,
                                  c.block_k, "a"));
      DG_TRY(encode_group_operand(&slots.tma_b[i], args.b, args.b_layout, args.ldb, s.n, off, k, s.kind, c.block_n,
                                  c.block_k, "b"));
      slots.group[i] = static_cast<uint32_t>(g);
      slots.num_kb[i] = static_cast<uint32_t>(k / c.block_k);
      slots.sf_kb0[i] = static_cast<uint32_t>(off / 128);
    }
    slots.num_slots = static_cast<uint32_t>(count);
    void* kargs[] = {&p, &slots};
    DG_TRY(launch(stream, *kernel, lc, kargs));
  }
  return DG_SUCCESS;
}

}  // namespace dg::ops
