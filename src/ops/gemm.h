// SM90 GEMMs (docs/gemm.md, docs/m_grouped_gemm.md, docs/k_grouped_gemm.md): the problem, the
// config heuristic (gemm_heuristic.cpp; its cost model: gemm_cost_model.h, docs/cost_model.md), the
// kernel's template parameters (gemm_kernel.cpp, templates/kernels/sm90_gemm.cu.j2), the one launch
// path (gemm_launch.h) and the calls on it (gemm.cpp: dense and M-grouped; k_grouped_gemm.cpp). The
// per-problem config cache is gemm_config_cache.h.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "dg.h"
#include "jit/kernel.h"
#include "runtime/tma.h"
#include "runtime/stream.h"

namespace dg::ops {

enum class GemmKind : int { kBf16 = 0, kFp8_1D2D = 1, kFp8_1D1D = 2 };
constexpr int kNumGemmKinds = 3;
enum class Major : int { kK = 0, kMN = 1 };
// Mirrors dg::sched::GemmType (templates/include/dg/sched/sm90_scheduler.cuh).
enum class GemmType : int {
  kNormal = 0,
  kMGroupedContiguous = 1,
  kMGroupedMasked = 2,
  kKGrouped = 3,
  kMGroupedContiguousPsum = 4,
  kBatched = 5,       // batched_gemm.h: D[z] = A[z] . B[z]^T over a batch of problems
  kBatchReduced = 6,  // batched_gemm.h: D += sum_z A[z] . B[z]^T
};
constexpr int kNumGemmTypes = 7;
const char* gemm_type_enumerator(GemmType t);
inline bool is_m_grouped(GemmType t) {
  return t == GemmType::kMGroupedContiguous || t == GemmType::kMGroupedMasked ||
         t == GemmType::kMGroupedContiguousPsum;
}
// Masked / psum groups keep a table of 3 G + 1 words in shared memory (sched::group_table_bytes).
inline bool uses_group_table(GemmType t) {
  return t == GemmType::kMGroupedMasked || t == GemmType::kMGroupedContiguousPsum;
}
inline unsigned group_table_bytes(GemmType t, int64_t num_groups) {
  return uses_group_table(t) ? static_cast<unsigned>(((3 * num_groups + 1) * 4 + 15) / 16 * 16) : 0u;
}
// Groups a masked / psum call may have (the table must leave room for the pipeline).
constexpr int64_t kMaxTableGroups = 1024;

// The recipe's names: the templates' dg::gemm::Kind enumerator ("kFp8_1D2D") and the short form in
// kernel names ("fp8_1d2d").
const char* kind_enumerator(GemmKind k);
const char* kind_short_name(GemmKind k);

// A fused epilogue (docs/gemm_epilogues.md; mirrors dg::epilogue in
// templates/include/dg/epilogue/sm90_fused.cuh): a per-column bias, SwiGLU over interleaved gate /
// up columns (D has n / 2 columns), and an FP8 D with its per-(row, 128 columns) scales.
enum class Activation : int { kNone = 0, kSwiGlu = 1 };
enum class BiasType : int { kNone = 0, kBf16 = 1, kFp32 = 2 };
enum class DScales : int { kNone = 0, kFp32 = 1, kPackedUe8m0 = 2 };
// skip_head_mid (docs/skip_head_mid.md) is a store of its own: the GEMM's columns are heads of
// head_left + head_right, D's heads head_left + head_mid + head_right wide, the middle columns
// never written (all 0: D's columns are the GEMM's).
struct GemmEpilogue {
  Activation act = Activation::kNone;
  BiasType bias = BiasType::kNone;
  DScales scales = DScales::kNone;  // set exactly when D is FLOAT8_E4M3
  int64_t head_left = 0, head_mid = 0, head_right = 0;
  bool head_split() const { return head_left + head_right > 0; }
  bool active() const {
    return act != Activation::kNone || bias != BiasType::kNone || scales != DScales::kNone || head_split();
  }
};
// Rows of B that SwiGLU interleaves: blocks of 128 gate rows, then the matching 128 up rows.
constexpr int64_t kSwiGluBlock = 128;

// Everything the kernel choice depends on (no pointers).
struct GemmShape {
  GemmKind kind = GemmKind::kBf16;
  int64_t m = 0, n = 0, k = 0;
  Major major_a = Major::kK, major_b = Major::kK;
  dg_dtype d_dtype = DG_DTYPE_BFLOAT16;
  bool accumulate = false;  // the epilogue adds into D (TMA reduce-add)
  // M-grouped GEMMs: m is the rows of A (contiguous) or max_m (masked); B holds num_groups
  // matrices; expected_m is the rows per group the heuristic plans for.
  // K-grouped GEMMs: [m, n] per group, k the mean K of the num_groups non-empty groups.
  GemmType type = GemmType::kNormal;
  int64_t num_groups = 1;
  int64_t expected_m = 0;
  GemmEpilogue epilogue;  // n counts the GEMM's columns (SwiGLU: gate and up)
  // Batched per-head products of few rows run with their operands swapped (batched_gemm.cpp): the
  // kernel's [m, n] tile is D's [n, m] block, stored transposed (BF16 D, single CTAs, no rotation).
  bool transpose_d = false;
  // Pricing only (never set by a call): a masked problem's row blocks in all, known, in place of
  // the spread of counts around expected_m (the count-adaptive tile's choice per total).
  int64_t row_blocks = 0;
};

// Masked calls: totals of row blocks (sum over groups of ceil(rows / block_m)) the count-adaptive
// tile's table covers; a larger total runs the main tile.
constexpr int kAltRowBlocks = 256;

// Masked calls of few groups: up to two more tile widths in the same kernel, each run instead of the
// main one at the totals of row blocks it marks, where the groups' rows, read on the device, make it
// the cheapest (docs/m_grouped_gemm.md#count-adaptive-tiles). block_n 0: none. block_m, warp-groups
// and the split tail are the main tile's; no two tiles mark the same total.
constexpr int kMaxAltTiles = 2;
struct GemmAltTile {
  int block_n = 0, stages = 0, promote_split = 1, d_bufs = 0, d_strip = 0;
  bool overlap = false, stage_aligned = false;
  uint32_t sfb_boundaries = 0;
  unsigned smem_bytes = 0;
  // Bit r of word r / 64: the alternative runs a call of r row blocks in all (r < kAltRowBlocks).
  uint64_t rows[kAltRowBlocks / 64] = {};
  bool runs(int64_t r) const { return r >= 0 && r < kAltRowBlocks && ((rows[r / 64] >> (r % 64)) & 1u); }
  void mark(int64_t r) { rows[r / 64] |= uint64_t{1} << (r % 64); }
  void unmark(int64_t r) { rows[r / 64] &= ~(uint64_t{1} << (r % 64)); }
};

// A kernel configuration: the template parameters plus launch geometry.
struct GemmConfig {
  int block_m = 0, block_n = 0, block_k = 0;
  int stages = 0;
  int math_wg = 0;          // consumer warp-groups (1 or 2)
  int cluster = 1;          // 1 or 2 CTAs
  bool multicast_a = false; // cluster 2: the pair shares A (tiles adjacent along N); else shares B
  bool overlap = false;     // FP8: promote K block j while block j+1's WGMMAs run
  int promote_split = 1;    // FP8: WGMMA partials cover block_n / promote_split columns
  int num_sms = 0;          // SMs the persistent grid may use
  int grid = 0;             // CTAs launched
  int raster_band = 1;
  bool raster_along_n = false;
  unsigned smem_bytes = 0;
  unsigned threads = 0;
  int d_strip = 0;          // epilogue TMA box width (elements)
  int d_bufs = 0;           // epilogue strip buffers per warp-group; 0 stages the whole tile
  int split_k = 1;          // CTAs (one cluster) sharing each tile's K blocks; > 1 needs cluster 1
  uint32_t sfb_boundaries = 0;  // FP8 1D2D, tiles straddling SFB rows: see sfb_boundaries()
  // FP8: every tile's K blocks fill the stage ring a whole number of times (stage_aligned()), so the
  // consumers' K loop is unrolled over the ring and addresses every stage at a constant offset.
  bool stage_aligned = false;
  // Dense or batched calls with few K blocks: their count, compiled into the kernel (compiled_k_blocks()); 0 =
  // the kernel reads K at run time.
  int k_blocks = 0;
  double estimate_us = 0;   // the heuristic's cost estimate
  // Masked: the count-adaptive tiles, filled from the first (alts[0].block_n 0: none).
  GemmAltTile alts[kMaxAltTiles];
  int alt_tiles() const {
    int n = 0;
    while (n < kMaxAltTiles && alts[n].block_n != 0) ++n;
    return n;
  }
  // The tile a count-adaptive kernel runs at r row blocks in all: 1 + i for alts[i], else 0 (main).
  int tile_at(int64_t r) const {
    for (int i = 0; i < kMaxAltTiles; ++i)
      if (alts[i].runs(r)) return i + 1;
    return 0;
  }
};

// The config of `c`'s count-adaptive tile `i` (c.alts[i]): c with that tile's fields, alts cleared.
GemmConfig alt_config(const GemmConfig& c, int i);

// Caller overrides (dg_gemm_options); 0 (or -1 for multicast_a) = heuristic.
struct GemmOverride {
  int block_m = 0, block_n = 0, stages = 0, cluster = 0, multicast_a = -1, math_wg = 0, num_sms = 0;
  int fp8_promotion = 0;     // DG_FP8_PROMOTION_*; 0 = heuristic
  int promotion_slices = 0;  // 1, 2 or 4; 0 = heuristic
  int split_k = 0;           // 1, 2, 4 or 8; 0 = heuristic
  int kernel = 0;            // DG_GEMM_KERNEL_*; 0 = heuristic
};

// Shared memory the kernel uses (mirrors Sm90GemmTraits::kSmemBytes); d_bufs as in GemmConfig.
unsigned gemm_smem_bytes(const GemmShape& s, int block_m, int block_n, int stages, int d_bufs = 0, int split_k = 1);

// Whether a config's consumers run the ring-unrolled K loop (GemmConfig::stage_aligned): FP8, one
// 64-row WGMMA iteration per warp-group, one CTA per tile over all of K, the same K blocks for every
// tile, a whole number of ring turns of at most 8 stages.
bool stage_aligned(const GemmShape& s, const GemmConfig& c);

// The K blocks a dense (or batched) call's kernel compiles in (GemmConfig::k_blocks): the problem's, where they are
// few (at most 8) and every CTA takes a tile's every K block; else 0.
int compiled_k_blocks(const GemmShape& s, const GemmConfig& c);

// FP8 1D2D with block_n not dividing 128: the set of column boundaries b = min(128 - n0 % 128, block_n)
// (bit b / 8 - 1) over the tiles of an N-column problem, for which the kernel compiles one K loop
// each; 0 where the tiles do not straddle SFB rows or take more than 4 boundaries (selected at run time).
uint32_t sfb_boundaries(int64_t n, int block_n);

// Picks the config for `s` on `num_sms` SMs; DG_ERROR_INVALID_ARGUMENT naming the option when an
// override is illegal, DG_ERROR_UNSUPPORTED when nothing fits.
dg_status choose_gemm_config(const GemmShape& s, int num_sms, const GemmOverride& o, GemmConfig* out);
// The same, ranking candidates with `model` (choose_gemm_config above uses the Hopper calibration).
struct Sm90CostModel;
dg_status choose_gemm_config(const GemmShape& s, int num_sms, const GemmOverride& o, const Sm90CostModel& model,
                             GemmConfig* out);

// The counts [lo, hi] the heuristic takes a masked or psum group's rows to spread over around the
// expected_m hint, none above max_rows (dg_tune times masked problems over them).
struct CountSpread {
  int64_t lo, hi;
};
CountSpread count_spread(int64_t expected_m, int64_t max_rows);

jit::KernelKey gemm_kernel_key(const GemmShape& s, const GemmConfig& c);
jit::KernelSpec gemm_kernel_spec(const GemmShape& s, const GemmConfig& c);
std::string describe(const GemmShape& s, const GemmConfig& c);

// A problem with its memory: operands as [MN, K] views (row = MN index).
struct GemmArgs {
  GemmShape shape;
  const void* a = nullptr;
  int64_t lda = 0;   // K-major: elements between rows of A; MN-major: between K rows
  const void* b = nullptr;
  int64_t ldb = 0;
  void* d = nullptr;
  int64_t ldd = 0;
  const void* c = nullptr;  // nullptr: no C term
  int64_t ldc = 0;
  float alpha = 1.0f, beta = 1.0f;
  const float* sfa = nullptr;  // FP8: sfa[kb * ld_sfa + m]
  int64_t ld_sfa = 0;
  const float* sfb = nullptr;  // 1D2D: sfb[nb * sfb_stride_n + kb * sfb_stride_k]; 1D1D: sfb[kb * ld_sfb + n]
  int64_t sfb_stride_n = 0, sfb_stride_k = 0, ld_sfb = 0;
  void* workspace = nullptr;  // FP8 with an MN-major operand: room for its K-major copy (fp8_gemm_workspace)
  const int32_t* grouped_layout = nullptr;  // M-grouped: row groups, group ends or masked rows (device)
  int64_t sfb_stride_g = 0;                 // M-grouped 1D2D: elements between groups' SFB blocks
  // Fused epilogue (shape.epilogue): the bias [n], and an FP8 D's scales
  // d_sf[group * d_sf_batch + column_group * d_sf_ld + row] (packed: words of four column groups).
  const void* bias = nullptr;
  void* d_sf = nullptr;
  int64_t d_sf_ld = 0, d_sf_batch = 0;
  float amax_floor = 0.0f;
  bool pow2_scales = false;
};

// Host mirrors of dg::sched::FastDiv and WalkDivisors (templates/include/dg/sched/sm90_scheduler.cuh):
// n / d == (umulhi(n, mul) + n) >> shift for every 32-bit n.
struct FastDiv {
  uint32_t d, mul, shift;
};
struct WalkDivisors {
  FastDiv per_band, band, last;
  uint32_t last_band;
  FastDiv per_slot;
};
static_assert(sizeof(WalkDivisors) == 52 && offsetof(WalkDivisors, per_slot) == 40, "must match the device struct");

// The divider of d (>= 1).
FastDiv fast_div(uint32_t d);
// The divisors of the persistent walk over a units_m x units_n grid in bands of `band` unit-rows
// (unit-columns with along_n); per_slot (K-grouped) is the grid's units.
WalkDivisors walk_divisors(int64_t units_m, int64_t units_n, int band, bool along_n);

// Host mirror of dg::epilogue::FusedParams (templates/include/dg/epilogue/sm90_fused.cuh).
struct FusedParams {
  const void* bias;
  void* sf;
  int64_t sf_ld;
  int64_t sf_batch;
  uint32_t sf_rows;
  uint32_t sf_groups;
  float amax_floor;
  uint32_t pow2;
};
static_assert(sizeof(FusedParams) == 48, "must match the device struct");

// The kernel argument: host mirror of dg::gemm::Sm90GemmParams (templates/include/dg/gemm/sm90_gemm.cuh).
struct alignas(64) Sm90GemmParams {
  tma::Descriptor tma_a, tma_b, tma_d, tma_sfa, tma_sfb;
  tma::Descriptor tma_a_tail;  // dense K-major A's partial last row block (encode_maps)
  uint32_t m, n, k;
  uint32_t raster_along_n;
  WalkDivisors walk;
  uint32_t raster_band;
  float alpha;
  uint32_t sfb_rows;
  const float* sfb;
  int64_t sfb_stride_n;
  int64_t sfb_stride_k;
  const int32_t* grouped_layout;
  uint32_t num_groups;  // batched: the batches; batch-reduced: the K splits
  uint32_t group_rows;
  void* d;
  int64_t ldd;
  int64_t sfb_stride_g;
  FusedParams fused;
};
static_assert(sizeof(Sm90GemmParams) == 960, "must match the device struct");

// The second kernel parameter of a count-adaptive masked launch (GemmConfig::alts): host mirror of
// dg::gemm::Sm90GemmAltParams.
struct alignas(64) Sm90GemmAltTileParams {
  tma::Descriptor tma_b, tma_d;  // the alternative tile's B and D maps
  uint64_t rows[kAltRowBlocks / 64];
};
struct Sm90GemmAltParams {
  Sm90GemmAltTileParams tile[kMaxAltTiles];  // unused tiles: zeros (no totals marked)
};
static_assert(sizeof(Sm90GemmAltParams) == 640, "must match the device struct");
static_assert(offsetof(Sm90GemmParams, m) == 768 && offsetof(Sm90GemmParams, raster_along_n) == 780 &&
                  offsetof(Sm90GemmParams, walk) == 784 && offsetof(Sm90GemmParams, raster_band) == 836 &&
                  offsetof(Sm90GemmParams, alpha) == 840 && offsetof(Sm90GemmParams, sfb) == 848 &&
                  offsetof(Sm90GemmParams, grouped_layout) == 872 && offsetof(Sm90GemmParams, d) == 888 &&
                  offsetof(Sm90GemmParams, sfb_stride_g) == 904 && offsetof(Sm90GemmParams, fused) == 912,
              "must match the device struct");

// A dense or M-grouped GEMM (docs/gemm.md#the-c-term-and-early-exits): with K = 0 only D := beta * C;
// else the skinny kernel or the SM90 kernel, after the D := beta * C pre-pass and the K-major copies of
// MN-major FP8 operands. The API has checked the arguments: m, n > 0 and below 2^31. With
// prepare_only the kernels are compiled and loaded and nothing runs.
dg_status run_gemm(const dg_stream_s& stream, const GemmArgs& args, const GemmOverride& o, bool prepare_only);

// The elementwise D := beta * C / D := 0 kernel's spec (for the compile tests).
jit::KernelSpec gemm_scale_kernel_spec(dg_dtype d_dtype, bool has_c);

// D := beta * C (has_c) or D := 0 over args.shape's [m, n] (rows ldd / ldc apart), on the stream.
dg_status run_gemm_scale(const dg_stream_s& stream, const GemmArgs& args, bool has_c, bool prepare_only);

// ---------------------------------------------------------------------------------------------
// K-grouped GEMMs (docs/k_grouped_gemm.md): D[g] = alpha * A_g . B_g^T (+ beta * C[g]) for G groups
// that share M and N, each over its own K slice of k_g columns (k_g % 128 == 0).

// Host mirror of dg::sched::KGroupedSlots (templates/include/dg/sched/sm90_scheduler.cuh): the
// non-empty groups of one launch, each with its own A and B maps.
constexpr int kMaxKGroupSlots = 32;
struct alignas(64) KGroupedSlots {
  tma::Descriptor tma_a[kMaxKGroupSlots];
  tma::Descriptor tma_b[kMaxKGroupSlots];
  uint32_t group[kMaxKGroupSlots];
  uint32_t num_kb[kMaxKGroupSlots];
  uint32_t sf_kb0[kMaxKGroupSlots];
  uint32_t num_slots;
};
static_assert(sizeof(KGroupedSlots) == 8640 && offsetof(KGroupedSlots, group) == 8192 &&
                  offsetof(KGroupedSlots, num_slots) == 8576,
              "must match the device struct");

// How each group's [MN, k_g] operand sits in memory (K offsets in elements, koff_g = sum of k_h, h < g).
enum class KGroupedOperand : int {
  kFlat = 0,     // K-major, groups packed: group g's rows of k_g elements start at element MN * koff_g
  kKMajor = 1,   // one [MN, K] K-major matrix, rows ld apart: group g is columns [koff_g, koff_g + k_g)
  kMNMajor = 2,  // one [K, MN] matrix (MN-major), rows ld apart: group g is rows [koff_g, koff_g + k_g)
};

struct KGroupedArgs {
  GemmKind kind = GemmKind::kBf16;  // kBf16 or kFp8_1D1D
  int64_t m = 0, n = 0;
  const int64_t* ks = nullptr;      // host, num_groups entries
  int64_t num_groups = 0;
  const void* a = nullptr;
  KGroupedOperand a_layout = KGroupedOperand::kFlat;
  int64_t lda = 0;                  // kKMajor / kMNMajor: elements between rows
  const void* b = nullptr;
  KGroupedOperand b_layout = KGroupedOperand::kFlat;
  int64_t ldb = 0;
  const float* sfa = nullptr;       // FP8: [sum k_g / 128] K blocks of ld_sfa scales (M of them used)
  int64_t ld_sfa = 0;
  const float* sfb = nullptr;
  int64_t ld_sfb = 0;
  float* d = nullptr;               // [G, M, N] FP32, contiguous
  const float* c = nullptr;         // nullptr or [G, M, N] FP32, contiguous (may be d)
  float alpha = 1.0f, beta = 1.0f;
  void* workspace = nullptr;        // FP8 with kMNMajor operands: their K-major copies (fp8_gemm_workspace)
};

// With prepare_only: compiles and loads the kernels the call would use (the pointers are not read).
dg_status run_k_grouped_gemm(const dg_stream_s& stream, const KGroupedArgs& args, const GemmOverride& o,
                             bool prepare_only);

}  // namespace dg::ops
