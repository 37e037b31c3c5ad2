// K-grouped GEMMs (MoE weight gradient): the SM90 GEMM kernel with sched::GemmType::kKGrouped.
// Every non-empty group gets its own A and B TMA maps (groups differ in K, so in row length or in
// extent), passed to the kernel in a second parameter of up to kMaxKGroupSlots groups; larger
// calls are split into launches of that many groups (the groups write disjoint parts of D).
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "ops/gemm.h"
#include "ops/gemm_launch.h"
#include "ops/gemm_util.h"
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
      return tma::encode_2d(out, bytes + mn * koff * eb, dt, eb, k, mn, k, block_k, block_mn, kOperandSwizzle, what);
    case KGroupedOperand::kKMajor:
      return tma::encode_2d(out, bytes + koff * eb, dt, eb, k, mn, ld, block_k, block_mn, kOperandSwizzle, what);
    case KGroupedOperand::kMNMajor:
      return tma::encode_2d(out, bytes + koff * ld * eb, dt, eb, mn, k, ld, kMnMajorBox, block_k, kOperandSwizzle, what);
  }
  return fail(DG_ERROR_INTERNAL, "{}: unknown K-grouped operand layout", what);
}

// D as one [G * M, N] FP32 matrix, for the elementwise passes before the GEMM.
GemmArgs whole_d(const KGroupedArgs& args) {
  GemmArgs whole;
  whole.shape.m = args.num_groups * args.m;
  whole.shape.n = args.n;
  whole.shape.d_dtype = DG_DTYPE_FLOAT32;
  whole.d = args.d;
  whole.ldd = args.n;
  whole.c = args.c;
  whole.ldc = args.n;
  whole.beta = args.beta;
  return whole;
}

// An empty group's D is zero: its [M, N] block, one group after another.
dg_status zero_empty_groups(const dg_stream_s& stream, const KGroupedArgs& args, const GemmArgs& whole) {
  for (int64_t g = 0; g < args.num_groups; ++g) {
    if (args.ks[g] > 0) continue;
    GemmArgs block = whole;
    block.shape.m = args.m;
    block.d = args.d + g * args.m * args.n;
    block.c = nullptr;
    DG_TRY(run_gemm_scale(stream, block, false, false));
  }
  return DG_SUCCESS;
}

// The kernel's problem: [M, N] per group over the mean K of the non-empty groups (the heuristic's
// view; every group runs its own K blocks).
GemmShape kernel_shape(const KGroupedArgs& args, const std::vector<int64_t>& live, bool has_c) {
  GemmShape s;
  s.kind = args.kind;
  s.m = args.m;
  s.n = args.n;
  int64_t live_k = 0;
  for (int64_t g : live) live_k += args.ks[g];
  s.k = align_up(cdiv(live_k, static_cast<int64_t>(live.size())), kScaleBlock);
  s.major_a = args.a_layout == KGroupedOperand::kMNMajor ? Major::kMN : Major::kK;
  s.major_b = args.b_layout == KGroupedOperand::kMNMajor ? Major::kMN : Major::kK;
  s.d_dtype = DG_DTYPE_FLOAT32;
  // Without C the kernel stores D; with it D holds beta * C first (unless it already is C) and the
  // kernel adds into it.
  s.accumulate = has_c;
  s.type = GemmType::kKGrouped;
  s.num_groups = static_cast<int64_t>(live.size());
  return s;
}

// Every non-empty group's A and B maps, kMaxKGroupSlots groups per launch.
dg_status launch_slots(const dg_stream_s& stream, const KGroupedArgs& args, const GemmShape& s,
                       const std::vector<int64_t>& live, const std::vector<int64_t>& koff, const GemmConfig& c,
                       const Kernel& kernel, Sm90GemmParams* p, const LaunchConfig& lc) {
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
      slots.sf_kb0[i] = static_cast<uint32_t>(off / kScaleBlock);
    }
    slots.num_slots = static_cast<uint32_t>(count);
    void* kargs[] = {p, &slots};
    DG_TRY(launch(stream, kernel, lc, kargs));
  }
  return DG_SUCCESS;
}

// The maps every launch shares (D over [G, M, N], the scales over all K blocks) and the scalars.
dg_status encode_shared(const KGroupedArgs& args, const GemmShape& s, int64_t total_k, const GemmConfig& c,
                        Sm90GemmParams* p) {
  const uint32_t strip_bytes = static_cast<uint32_t>(c.d_strip * 4);
  DG_TRY(tma::encode_3d(&p->tma_d, args.d, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 4, s.n, s.m, s.n, args.num_groups,
                        s.m * s.n, c.d_strip, c.block_m / c.math_wg, strip_bytes >= 32 ? strip_bytes : 0, "d"));
  if (is_fp8(s.kind)) {
    DG_TRY(tma::encode_2d(&p->tma_sfa, args.sfa, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 4, align_up(s.m, kScaleRowAlign),
                          total_k / kScaleBlock, args.ld_sfa, c.block_m, 1, 0, "sfa"));
    DG_TRY(tma::encode_2d(&p->tma_sfb, args.sfb, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 4, align_up(s.n, kScaleRowAlign),
                          total_k / kScaleBlock, args.ld_sfb, c.block_n, 1, 0, "sfb"));
  }
  p->alpha = args.alpha;
  p->num_groups = static_cast<uint32_t>(args.num_groups);
  return DG_SUCCESS;
}

}  // namespace

dg_status run_k_grouped_gemm(const dg_stream_s& stream, const KGroupedArgs& in, const GemmOverride& o,
                             bool prepare_only) {
  KGroupedArgs args = in;  // the FP8 K-major copies replace MN-major operands
  std::vector<int64_t> live, koff(static_cast<size_t>(args.num_groups));
  int64_t total_k = 0;
  for (int64_t g = 0; g < args.num_groups; ++g) {
    koff[static_cast<size_t>(g)] = total_k;
    total_k += args.ks[g];
    if (args.ks[g] > 0) live.push_back(g);
  }
  const bool has_c = args.c != nullptr && args.beta != 0.0f;
  const GemmArgs whole = whole_d(args);
  if (live.empty()) return run_gemm_scale(stream, whole, has_c, prepare_only);

  GemmShape s = kernel_shape(args, live, has_c);
  OperandView a{args.a, args.lda, s.major_a}, b{args.b, args.ldb, s.major_b};
  const OperandCopies copies = k_major_copies(s.kind, s.m, s.n, total_k, args.workspace, &a, &b);
  if (a.major != s.major_a) args.a = a.data, args.lda = a.ld, args.a_layout = KGroupedOperand::kKMajor;
  if (b.major != s.major_b) args.b = b.data, args.ldb = b.ld, args.b_layout = KGroupedOperand::kKMajor;
  s.major_a = a.major, s.major_b = b.major;

  const bool pre_pass = has_c && !(args.c == args.d && args.beta == 1.0f);
  const bool zero_empty = !has_c && live.size() < static_cast<size_t>(args.num_groups);
  auto prologue = [&](Phase phase) -> dg_status {
    if (phase == Phase::kLoad) {
      // A prepare loads both passes: the call that follows may have C or empty groups.
      if (pre_pass || prepare_only) DG_TRY(run_gemm_scale(stream, whole, true, true));
      if (zero_empty || prepare_only) DG_TRY(run_gemm_scale(stream, whole, false, true));
      return run_copies(stream, copies, true);
    }
    if (pre_pass) DG_TRY(run_gemm_scale(stream, whole, true, false));
    if (zero_empty) DG_TRY(zero_empty_groups(stream, args, whole));
    return run_copies(stream, copies, false);
  };
  auto launcher = [&](const GemmConfig& c, const Kernel& kernel, Sm90GemmParams* p, const LaunchConfig& lc) {
    DG_TRY(encode_shared(args, s, total_k, c, p));
    return launch_slots(stream, args, s, live, koff, c, kernel, p, lc);
  };
  int num_sms = 0;
  DG_TRY(num_sms_of(stream, &num_sms));
  return run_sm90_gemm(stream, s, num_sms, o, prepare_only, prologue, launcher);
}

}  // namespace dg::ops
