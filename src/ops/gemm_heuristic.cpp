// The SM90 GEMM config heuristic: legality of a (tile, pipeline, cluster, promotion, split-K)
// candidate, the shared-memory budget, the cost model that ranks the candidates (its parameters:
// gemm_cost_model.h; docs/cost_model.md), and the grid and rasterisation of the chosen one.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

#include "ops/gemm.h"
#include "ops/gemm_cost_model.h"
#include "ops/gemm_tuning.h"
#include "ops/gemm_util.h"
#include "runtime/status.h"

namespace dg::ops {
namespace {

constexpr unsigned kSmemBudget = 232448;  // 227 KiB, sm_90
// A K block is 128 bytes of each operand row (128 FP8 or 64 BF16 elements).
constexpr int kBlockKBytes = 128;
// The 1D2D kernels' SFB ring (mirrors Sm90GemmTraits::kSfbSlots and kSmemSfbSlot): 2 slots of 32 K
// blocks' two FP32 scalars.
constexpr unsigned kSfbSlots = 2, kSfbSlotBytes = 2 * 32 * 4;
// With fewer stages than this beside a whole-tile D staging buffer, the heuristic stages D in strips;
// below it the cost model charges each missing stage.
constexpr int kFewStages = 4;
constexpr int kWholeTileMinStages = 3;  // whole_tile_over_strips: the depth it was measured at
// 32-row tiles (Sm90GemmTraits::kHalfM) at M <= 32: dense and per-head FP8 1D2D, and BF16 with
// K-major A (its box then holds 32 rows of 128 bytes). A WGMMA computes 64 rows, so the tile's tensor
// time is a 64-row tile's; its A loads are half.
constexpr int kHalfTileM = 32;
// Registers: a consumer thread's budget with two / one math warp-groups, and what it needs beside
// its accumulators (addresses, scales).
constexpr int kRegsTwoWarpGroups = 232, kRegsOneWarpGroup = 255, kRegsBesideAccumulators = 40;
// Stage caps: small M streams B, so deeper pipelines keep more bytes in flight per CTA (measured up
// to 22 stages); large M keeps the cap it was tuned with.
constexpr int kMaxStagesSmallM = 32, kMaxStagesLargeM = 12;
// A candidate must beat the best so far by this factor to replace it: near-ties keep the earlier,
// simpler config (single CTAs, whole-tile promotion first).
constexpr double kTieMargin = 0.995;
constexpr double kFlopsPerMac = 2.0;
constexpr double kMicrosecondsPerSecond = 1e6;

// One point of the search: the tile, its warp-groups, the cluster, the FP8 promotion and split-K.
struct Candidate {
  int bm = 0, bn = 0, math_wg = 1, cluster = 1;
  bool mc_a = false;    // a 2-CTA cluster shares A (pairs along N); else B
  bool overlap = false;
  int split = 1;        // promotion column slices
  int split_k = 1;
};

// Mirrors dg::epilogue::strip_elems; the strips of `s` also divide strip_divisor(s).
int strip_elems(const GemmShape& s, int block_n) {
  const int ob = out_bytes(s);
  const int64_t divisor = strip_divisor(s);
  for (int bytes : {128, 64, 32})
    if (block_n % (bytes / ob) == 0 && divisor % (bytes / ob) == 0) return bytes / ob;
  return 16 / ob;
}

// Registers a consumer thread needs for its accumulators (+ ~40 for addresses and scales).
int accumulator_regs(const GemmShape& s, int block_m, int block_n, int math_wg, bool overlap, int split) {
  const int m_iters = std::max(block_m / math_wg / 64, 1);  // a 32-row tile computes 64 rows
  const int acc = m_iters * block_n / 2;
  if (!is_fp8(s.kind)) return acc;
  return acc + (overlap ? 2 : 1) * acc / split;
}

// FP8 tiles whose two 64-row m-iterations per warp-group are issued and promoted as two units.
bool promotes_rows(int bm, int math_wg, bool overlap, int split) {
  return bm / math_wg == 128 && split == 2 && !overlap;
}

// Clusters of `split_k` CTAs that can be resident at once. Clusters do not span a GPC (16-18 SMs on an
// H100), so clusters of 4 and 8 leave the odd SMs of each GPC idle: assume 16 usable SMs per GPC.
int64_t resident_clusters(int num_sms, int split_k) {
  if (split_k <= 2) return num_sms / split_k;
  return int64_t(num_sms / 16) * (16 / split_k);
}

// Why a fused epilogue cannot run on candidate `c`; nullptr when it can (or there is none).
const char* illegal_epilogue(const GemmShape& s, const Candidate& c) {
  if (!s.epilogue.active()) return nullptr;
  if (c.split_k != 1) return "fused epilogues do not split K (split_k 1)";
  if (s.epilogue.act == Activation::kSwiGlu && c.bn != 2 * kSwiGluBlock)
    return "SwiGLU needs block_n 256 (one block of 128 gate and 128 up columns per tile)";
  if (s.epilogue.scales != DScales::kNone && out_cols(s, c.bn) % kScaleBlock != 0)
    return "an FP8 D needs whole 128-column scale groups per tile (block_n 128 or 256; 256 with SwiGLU)";
  return nullptr;
}

// The problems 32-row tiles can run (kHalfTileM).
bool half_tiles_apply(const GemmShape& s) {
  const bool dense_or_heads = s.type == GemmType::kNormal || s.type == GemmType::kBatched;
  const bool kind = s.kind == GemmKind::kFp8_1D2D || (s.kind == GemmKind::kBf16 && s.major_a == Major::kK);
  return dense_or_heads && kind && !s.epilogue.active();
}

// Why candidate `c` cannot run `s`; nullptr when it can.
const char* illegal(const GemmShape& s, const Candidate& c) {
  const int bm = c.bm, bn = c.bn, math_wg = c.math_wg, cluster = c.cluster, split = c.split, split_k = c.split_k;
  const bool mc_a = c.mc_a, overlap = c.overlap;
  if (bm != kHalfTileM && bm != 64 && bm != 128 && bm != 256) return "block_m must be 32, 64, 128 or 256";
  if (math_wg != 1 && math_wg != 2) return "math warp-groups must be 1 or 2";
  if (bm == kHalfTileM) {
    if (!half_tiles_apply(s))
      return "block_m 32 is for dense and per-head FP8 GEMMs of the 1D2D recipe, and BF16 ones with K-major A, "
             "without a fused or head-split epilogue";
    if (math_wg != 1 || cluster != 1 || split_k != 1) return "block_m 32 runs one math warp-group, cluster 1, split_k 1";
  } else if (bm / math_wg != 64 && bm / math_wg != 128) {
    return "block_m / math warp-groups must be 64 or 128";
  }
  if (bn < 8 || bn > 256 || bn % 8 != 0) return "block_n must be a multiple of 8 in [8, 256]";
  if (s.d_dtype == DG_DTYPE_BFLOAT16 && bn % 16 != 0 && !s.transpose_d)
    return "block_n must be a multiple of 16 for a BF16 D";
  if (s.transpose_d && (bm / math_wg) % 64 != 0) return "a transposed D needs 64 or 128 rows per math warp-group";
  if (s.transpose_d && cluster != 1) return "a transposed D runs single CTAs (cluster 1)";
  if (s.major_b == Major::kMN && bn % 64 != 0) return "block_n must be a multiple of 64 when B is MN-major";
  if (is_fp8(s.kind) && (s.major_a != Major::kK || s.major_b != Major::kK)) return "FP8 needs K-major A and B";
  if (s.kind == GemmKind::kFp8_1D1D && s.d_dtype != DG_DTYPE_FLOAT32) return "the 1D1D recipe writes FP32 D";
  if (s.kind == GemmKind::kFp8_1D2D && 128 % bn != 0 && bn > 128 + (bn & -bn))
    return "with the 1D2D recipe a block_n above 128 must be 144, 160 or 192 (at most two 128-row SFB blocks)";
  if ((overlap || split != 1) && !is_fp8(s.kind)) return "promotion overlap and split are FP8 options";
  if (split != 1 && split != 2 && split != 4) return "promotion split must be 1, 2 or 4";
  if (bn % split != 0 || (bn / split) % 8 != 0) return "block_n / promotion split must be a multiple of 8";
  const int regs = accumulator_regs(s, bm, bn, math_wg, overlap, split) + kRegsBesideAccumulators;
  if (regs > (math_wg == 2 ? kRegsTwoWarpGroups : kRegsOneWarpGroup)) return "the accumulators do not fit in registers";
  if (cluster != 1 && cluster != 2) return "cluster must be 1 or 2";
  if (split_k != 1 && split_k != 2 && split_k != 4 && split_k != 8) return "split_k must be 1, 2, 4 or 8";
  if (split_k > 1 && cluster != 1) return "split_k needs cluster 1 (its cluster is the split)";
  if (split_k > 1 && cdiv(s.k, kBlockKBytes / elem_bytes(s.kind)) < split_k) return "split_k exceeds the number of K blocks";
  if (s.type == GemmType::kKGrouped) {
    if (s.kind == GemmKind::kFp8_1D2D) return "K-grouped FP8 GEMMs use the 1D1D recipe";
    if (s.d_dtype != DG_DTYPE_FLOAT32) return "K-grouped GEMMs write FP32 D";
    if (split_k != 1) return "K-grouped GEMMs do not split K";
    if (cluster != 1) return "K-grouped GEMMs run single CTAs (cluster 1)";
  }
  if ((s.type == GemmType::kBatched || s.type == GemmType::kBatchReduced) && split_k != 1)
    return "batched GEMMs do not split K across a cluster (split_k 1)";
  if (is_m_grouped(s.type)) {
    if (split_k != 1 && !(s.type == GemmType::kMGroupedMasked && split_k == 2))
      return "contiguous M-grouped GEMMs do not split K (masked ones split their last round with split_k 2)";
    // The split tail's consumers keep a partial tile's bookkeeping live: straddling 1D2D tiles need
    // their SFB boundaries at compile time to stay in registers.
    if (split_k == 2 && s.kind == GemmKind::kFp8_1D2D && 128 % bn != 0 && sfb_boundaries(s.n, bn) == 0)
      return "the masked split tail needs block_n with few SFB boundaries over N (e.g. 128, 160 or 192)";
    if (cluster == 2 && mc_a) return "M-grouped CTA pairs share B (pairs along M: multicast_a 0)";
    if (s.type != GemmType::kMGroupedMasked && bm != 128)
      return "contiguous M-grouped GEMMs use block_m 128 (the groups' row alignment)";
    if (s.type == GemmType::kMGroupedMasked && s.m % bm != 0) return "block_m must divide max_m (masked)";
  }
  if (const char* why = illegal_epilogue(s, c)) return why;
  if (cluster == 2) {
    if (mc_a && (bm / 2) % (s.major_a == Major::kMN ? 64 : 8) != 0) return "block_m / 2 cannot be multicast";
    if (!mc_a && (bn / 2) % (s.major_b == Major::kMN ? 64 : 8) != 0) return "block_n / 2 cannot be multicast";
  }
  return nullptr;
}

// Grouped problems whose tiles are capped at 192 columns (see tiles()), never masked decoding (at
// most 64 rows per group: one row of tiles per group, weights streamed once, where 64x256 ran G = 32
// faster than the narrow tiles). FP8: all but the contiguous form with per-row indices and batched
// calls, whose tile counts the host knows. BF16: masked calls of at most kCapMaxGroups groups of at
// least kCapMinRows expected rows (the measured regime). At five fixed counts (0.72-1.30 x expected,
// every group the same) of G 1, 2, 4 and 6 on three expert shapes (H200), 128x192 (split tail at
// G <= 4) against the uncapped choice (128x224-256): mean time 0.81-0.99x on ten of twelve sets, 1.01
// and 1.07x on the others; 0.993 -> 1.046 of DeepGEMM over the 60 rows
// (bench/models/h200/masked-bf16-192-cap.json). At G 32, 230 rows (the hint) dg_tune kept 256.
bool grouped_cap(const GemmShape& s) {
  constexpr int64_t kDecodeRows = 64;
  constexpr int64_t kCapMaxGroups = 8, kCapMinRows = 256;
  const bool masked = s.type == GemmType::kMGroupedMasked;
  if (masked && s.expected_m > 0 && s.expected_m <= kDecodeRows) return false;
  if (!is_fp8(s.kind)) return masked && s.num_groups <= kCapMaxGroups && s.expected_m >= kCapMinRows;
  return s.type != GemmType::kNormal && s.type != GemmType::kMGroupedContiguous && s.type != GemmType::kBatched;
}

// The regime of estimate_small_m_us: at most two 64-row blocks of M (grouped problems: many tiles
// that each read their own B, the large-M model's regime).
bool small_m(const GemmShape& s) { return s.type == GemmType::kNormal && s.m <= 128; }

// Large-M FP8 1D2D tiles stage their whole D tile even where rotating strips would fit a stage more,
// as long as three stages fit beside it (fp8_whole_tile_staging); masked calls, measured only with
// the strips, keep them.
bool whole_tile_over_strips(const GemmShape& s) {
  return s.kind == GemmKind::kFp8_1D2D && !small_m(s) && s.type != GemmType::kMGroupedMasked;
}

int max_stages(const GemmShape& s, int bm, int bn, int d_bufs, int split_k) {
  const unsigned budget = kSmemBudget - group_table_bytes(s.type, s.num_groups);
  int stages = 0;
  while (gemm_smem_bytes(s, bm, bn, stages + 1, d_bufs, split_k) <= budget) ++stages;
  return stages;
}

// Masked and psum groups: the rows of a group vary around the expected_m hint, so a tile of bm rows
// covers a group in ceil(m / bm) blocks for counts m spread over [kSpreadLow, kSpreadHigh] x
// expected_m (as DeepGEMM's tests and bench/peer_bench.py draw them: 0.7-1.3 of a mean, the hint
// 1.2 of it). Counting ceil(expected_m / bm) instead priced 64-row tiles at hint 76 as two blocks per
// group where the counts needed 1.5, and picked 128-row tiles 15-19% slower on an H200
// (bench/models/h200/masked-decode-tiles.json).
constexpr double kSpreadLow = 0.6, kSpreadHigh = 1.1;

// sum over m = 1..x of ceil(m / bm)
int64_t ceil_div_prefix_sum(int64_t x, int64_t bm) {
  const int64_t q = x / bm, r = x % bm;
  return bm * q * (q + 1) / 2 + r * (q + 1);
}

// The mean of ceil(m / bm) over the spread of counts around expected_m.
double mean_blocks_per_group(int64_t expected_m, int64_t max_rows, int bm) {
  const auto [lo, hi] = count_spread(expected_m, max_rows);
  return double(ceil_div_prefix_sum(hi, bm) - ceil_div_prefix_sum(lo - 1, bm)) / double(hi - lo + 1);
}

// Rows of tiles of bm rows the problem is expected to have: the whole M of a dense or contiguous
// problem (groups padded to 128), M per group for K-grouped and batched problems, and for psum and
// masked groups the mean over counts spread around expected_m (above).
int64_t expected_m_blocks(const GemmShape& s, int bm) {
  if (s.type == GemmType::kNormal || s.type == GemmType::kMGroupedContiguous || s.type == GemmType::kBatchReduced)
    return cdiv(s.m, bm);
  if (s.type == GemmType::kKGrouped || s.type == GemmType::kBatched)
    return s.num_groups * cdiv(s.m, bm);  // each group's (batch's) [M, N] tiles
  if (s.row_blocks > 0) return s.row_blocks;
  // A masked group holds at most max_m (s.m) rows; a psum group's rows are bounded by all of A's.
  const double blocks = double(s.num_groups) * mean_blocks_per_group(std::max<int64_t>(s.expected_m, 1), s.m, bm);
  return std::max<int64_t>(static_cast<int64_t>(std::ceil(blocks)), 1);
}

// The mean of f(blocks) over the rows of tiles of bm rows a problem has: f(expected_m_blocks) where
// the host knows the count, and for masked and psum problems the mean over the spread of group
// counts (above), not f at the mean count: with few groups the counts do not average out, and a
// tile whose count of units sits near a multiple of the slots takes an extra round on part of the
// spread (G 1, hint 1228, N 4096, 128x144 tiles: 2 rounds at the mean count, 2.3 over the spread;
// it ran 1.6x slower than 128x160 on an H200). One group's blocks are counted exactly; the sum over
// G > 1 groups is taken as normal, its mean and variance G times one group's (a 5-point
// Gauss-Hermite rule).
template <class F>
double mean_over_counts(const GemmShape& s, int bm, F f) {
  if (!uses_group_table(s.type) || s.row_blocks > 0) return f(expected_m_blocks(s, bm));
  const auto [lo, hi] = count_spread(std::max<int64_t>(s.expected_m, 1), s.m);
  const double counts = double(hi - lo + 1);
  double one = 0, mean = 0, sq = 0;  // one group: E[f], E[blocks], E[blocks^2]
  for (int64_t b = cdiv(lo, bm); b <= cdiv(hi, bm); ++b) {
    const double p = double(std::min(hi, b * bm) - std::max(lo, (b - 1) * bm + 1) + 1) / counts;
    one += p * f(b);
    mean += p * double(b);
    sq += p * double(b) * double(b);
  }
  if (s.num_groups == 1) return one;
  constexpr double kNodes[] = {0.0, 1.3556261799742659, -1.3556261799742659, 2.8569700138728056, -2.8569700138728056};
  constexpr double kWeights[] = {0.5333333333333333, 0.2220759220056126, 0.2220759220056126, 0.0112574113277207,
                                 0.0112574113277207};
  const double g = double(s.num_groups), sd = std::sqrt(g * std::max(sq - mean * mean, 0.0));
  double e = 0;
  for (int i = 0; i < 5; ++i) e += kWeights[i] * f(std::llround(g * mean + kNodes[i] * sd));
  return e;
}

// Units of a problem with `blocks` blocks of rows: row units pair `pm` blocks, `unit_cols` per row.
int64_t units_of(int64_t blocks, int pm, int64_t unit_cols) {
  return cdiv(std::max<int64_t>(blocks, 1), pm) * unit_cols;
}

// Rounds of `slots` units the problem takes (mean_over_counts).
double expected_rounds(const GemmShape& s, int bm, int pm, int64_t unit_cols, int64_t slots) {
  return mean_over_counts(s, bm, [&](int64_t blocks) { return double(cdiv(units_of(blocks, pm, unit_cols), slots)); });
}

// Seconds of a masked split tail's tiles over `ctas` CTAs (in pairs), as the kernel walks them: whole
// tiles in full rounds, then a last round that is at most half full split along K over the pairs
// (each CTA the longer half of the K blocks, then the pair's exchange), else whole.
double split_tail_s(const GemmShape& s, int bm, int64_t unit_cols, int64_t ctas, double t_tile, double t_split) {
  return mean_over_counts(s, bm, [&](int64_t blocks) {
    const int64_t units = units_of(blocks, 1, unit_cols), full = units / ctas, last = units % ctas;
    if (last == 0) return double(full) * t_tile;
    return last <= ctas / 2 ? double(full) * t_tile + t_split : double(full + 1) * t_tile;
  });
}

// Cost of FP8 promotion in the table of `p`: overlapped or after, 1, 2 or 4 column slices.
double promotion_cost(const PromotionCost& p, bool overlap, int split) {
  const int slot = split == 1 ? 0 : split == 2 ? 1 : 2;
  return overlap ? p.overlapped[slot] : p.after[slot];
}

// Whether `model` prices candidate `c` of `s` as a BF16 small-M pair sharing B (SmallMCost::
// bf16_pair_read_rate); the heuristic then considers such pairs unasked.
bool modelled_pair(const Sm90CostModel& model, const GemmShape& s, const Candidate& c) {
  return c.cluster == 2 && !c.mc_a && small_m(s) && s.kind == GemmKind::kBf16 && model.small_m.bf16_pair_read_rate > 0;
}

// Small M (at most two 64-row blocks, i.e. M <= 128): every B tile is read once and the time is set
// by how fast each CTA's TMA pipeline turns over, not by tensor cores or L2 reuse. Per K block a CTA
// needs at least a floor, its shared-memory fill (the A box of block_m rows, plus the B box; 128 bytes
// per row for both dtypes; the model charges a partial last row block, whose box holds only its rows
// rounded up to 8, as a whole one), and the load latency spread over the stages in
// flight: small block_n tiles give more CTAs but each streams only a few bytes per turnaround, large
// ones leave SMs idle, and deep pipelines pay. The large-M model mispredicted this regime (it chose
// multicast pairs and small tiles: 0.72x cuBLASLt at M = 1).
//
// Split-K (a cluster of split_k CTAs per tile, one tile per CTA) divides each CTA's K blocks and
// pays a cluster barrier and a DSMEM reduction of the partial tile.
double estimate_small_m_us(const Sm90CostModel& model, const GemmShape& s, const Candidate& c, int stages,
                           int num_sms) {
  const SmallMCost& m = model.small_m;
  const int eb = elem_bytes(s.kind), bk = kBlockKBytes / eb;
  const int64_t mb = cdiv(s.m, c.bm), nb = cdiv(s.n, c.bn);
  const int pm = c.cluster == 2 && !c.mc_a ? 2 : 1, pn = c.cluster == 2 && c.mc_a ? 2 : 1;
  const int64_t slots = c.split_k > 1 ? resident_clusters(num_sms, c.split_k) : num_sms / c.cluster;
  const int64_t rounds = cdiv(cdiv(mb, pm) * cdiv(nb, pn), slots);
  const int64_t kbs = cdiv(cdiv(s.k, bk), c.split_k);
  const double peak = is_fp8(s.kind) ? model.fp8_flops_per_sm : model.bf16_flops_per_sm;
  const double promo = is_fp8(s.kind) ? promotion_cost(m.promotion, c.overlap, c.split) : 1.0;
  // A modelled B-multicast pair reads each B box from L2 once for both of its CTAs.
  const bool shared_b = modelled_pair(model, s, c);
  const double fill = (c.bm + (shared_b ? c.bn / 2.0 : double(c.bn))) * bk * eb;
  const double fill_rate = m.smem_fill_bytes_per_s * (shared_b ? m.bf16_pair_read_rate : 1.0);
  const double t_kb = std::max({m.min_k_block_s, fill / fill_rate,
                                kFlopsPerMac * std::max(c.bm, 64) * c.bn * bk / peak * promo * m.tensor_time_factor,
                                m.load_latency_s / stages});
  double t_epi = m.epilogue_s + (s.accumulate ? double(c.bm) * c.bn * out_bytes(s) / m.reduce_add_bytes_per_s : 0.0);
  if (c.split_k > 1)
    t_epi += model.split_k_reduce_s + double(std::min<int64_t>(c.bm, s.m)) * c.bn * 4 / m.split_k_bytes_per_s;
  double t = double(rounds) * (double(kbs) * t_kb + t_epi);
  if (shared_b) t += m.bf16_pair_fixed_s;
  else if (c.cluster == 2) t *= m.pair_factor;
  return (t + m.launch_s) * kMicrosecondsPerSecond;
}

// The FP8 promotion factor of a large-M tile: the schedule's table entry, then the shapes whose own
// measurements moved it (gemm_cost_model.cpp says which).
double large_m_promotion(const LargeMCost& m, const GemmShape& s, const Candidate& c) {
  if (!is_fp8(s.kind)) return (1.0 + m.bf16_per_column / c.bn) / (1.0 + m.bf16_per_column / 128);
  double promo = promotion_cost(m.promotion, c.overlap, c.split);
  if (c.overlap && c.split == 2 && c.bn == 192) promo = m.promotion_192_two_slices;
  if (promotes_rows(c.bm, c.math_wg, c.overlap, c.split)) promo = m.promotion_row_units;
  if (s.type == GemmType::kMGroupedContiguous && !c.overlap && c.split == 2 && c.bn == 256)
    promo = m.promotion_contiguous_256;
  // 1D2D tiles straddling SFB rows get a K loop per boundary value (up to four), priced by how many.
  const bool straddles = s.kind == GemmKind::kFp8_1D2D && 128 % c.bn != 0;
  const uint32_t bounds = straddles ? sfb_boundaries(s.n, c.bn) : 0;
  if (!c.overlap && c.split == 1 && bounds != 0)
    promo = __builtin_popcount(bounds) <= 2 ? m.promotion_few_boundaries : m.promotion_compiled_boundaries;
  // Boundaries too varied to compile: each gcd(block_n, 128)-column unit selects its SFB row in every
  // promotion.
  if (straddles && bounds == 0) promo *= m.promotion_any_boundary;
  // 1D1D (a scale per column of B): the per-K-block cost outside the per-element work (scale loads,
  // barrier and WGMMA waits) is shared by the tile's columns.
  if (s.kind == GemmKind::kFp8_1D1D && !c.overlap && c.split == 1)
    promo = m.promotion_1d1d_base + m.promotion_1d1d_per_column / c.bn;
  if (c.bn < 128) promo *= m.narrow_tile_factor;
  return promo;
}

// Seconds per K block of one CTA: the slowest of tensor work, operand delivery into the SM and
// WGMMA's shared-memory reads.
double large_m_k_block_s(const Sm90CostModel& model, const GemmShape& s, const Candidate& c, int stages) {
  const LargeMCost& m = model.large_m;
  const bool fp8 = is_fp8(s.kind);
  const int eb = elem_bytes(s.kind), bk = kBlockKBytes / eb;
  const double flops = kFlopsPerMac * c.bm * c.bn * bk;
  const double peak = fp8 ? model.fp8_flops_per_sm : model.bf16_flops_per_sm;
  // A multicast half still lands in both CTAs' shared memory.
  const double sm_bytes = double(c.bm + c.bn) * bk * eb;
  // A is re-read for every column slice; row units read it once per K block.
  const double a_reads = promotes_rows(c.bm, c.math_wg, c.overlap, c.split) ? 1.0 : double(c.split);
  const double rows_per_wg = double(c.bm) / c.math_wg;
  const double smem_reads =
      double(c.math_wg) * (a_reads * rows_per_wg + double(c.bn) * (rows_per_wg / 64)) * m.wgmma_read_row_bytes;
  const double bf16_fill = s.row_blocks > 0 && m.sm_fill_bytes_per_s_bf16_known_total > 0
                               ? m.sm_fill_bytes_per_s_bf16_known_total
                               : m.sm_fill_bytes_per_s_bf16;
  double t_kb = std::max({flops / peak * large_m_promotion(m, s, c),
                          sm_bytes / (fp8 ? m.sm_fill_bytes_per_s_fp8 : bf16_fill),
                          smem_reads / m.smem_read_bytes_per_s});
  if (stages < kFewStages) t_kb *= 1.0 + m.few_stages_penalty * (kFewStages - stages);
  if (s.kind == GemmKind::kFp8_1D1D && stages < kFewStages + 1) t_kb *= m.fp8_1d1d_four_stages;
  return t_kb;
}

// Seconds of one tile's epilogue: TMA stores (or reduce-adds) of D in strips.
double large_m_epilogue_s(const LargeMCost& m, const GemmShape& s, const Candidate& c, int d_bufs) {
  const int ob = out_bytes(s), cols = out_cols(s, c.bn);
  const int strip_bytes = strip_elems(s, cols) * ob;
  const bool fp32_reduce = s.accumulate && s.d_dtype == DG_DTYPE_FLOAT32;
  const double strip_cost = strip_bytes < 64                       ? m.narrow_strip_cost
                            : fp32_reduce && strip_bytes < 128 ? m.fp32_reduce_strip_cost
                                                               : 1.0;
  const double staging_cost = fp32_reduce && d_bufs > 0 ? m.fp32_reduce_rotating_cost : 1.0;
  return m.epilogue_s +
         double(c.bm) * cols * ob * (s.accumulate ? 2 : 1) / m.store_bytes_per_s * strip_cost * staging_cost;
}

// Rows the problem computes and B matrices it reads, for the DRAM floor.
double dram_floor_s(const Sm90CostModel& model, const GemmShape& s) {
  const int eb = elem_bytes(s.kind);
  const double rows = s.type == GemmType::kNormal || s.type == GemmType::kMGroupedContiguous ||
                              s.type == GemmType::kBatchReduced
                          ? double(s.m)
                      : s.type == GemmType::kKGrouped || s.type == GemmType::kBatched ? double(s.num_groups) * s.m
                                                      : double(s.num_groups) * std::max<int64_t>(s.expected_m, 1);
  const double b_mats = s.type == GemmType::kNormal ? 1.0 : double(s.num_groups);
  return (rows * s.k * eb + b_mats * s.n * s.k * eb + rows * out_n(s) * out_bytes(s) * (s.accumulate ? 2 : 1)) /
         model.dram_bytes_per_s;
}

// The p-norm of (t, floor): the larger of the two, raised as the smaller nears it.
double soft_max(double t, double floor, double p) {
  const double hi = std::max(t, floor), lo = std::min(t, floor);
  return hi * std::pow(1.0 + std::pow(lo / hi, p), 1.0 / p);
}

// Estimated microseconds of candidate `c` with `stages` stages and `d_bufs` epilogue strip buffers.
double estimate_us(const Sm90CostModel& model, const GemmShape& s, const Candidate& c, int stages, int d_bufs,
                   int num_sms) {
  if (small_m(s)) return estimate_small_m_us(model, s, c, stages, num_sms);
  const LargeMCost& m = model.large_m;
  const int bk = kBlockKBytes / elem_bytes(s.kind);
  const int64_t nb = cdiv(s.n, c.bn);
  const int pm = c.cluster == 2 && !c.mc_a ? 2 : 1, pn = c.cluster == 2 && c.mc_a ? 2 : 1;
  // Masked split tail: a persistent grid of CTA pairs; whole K blocks except in a short last round.
  const bool tail = s.type == GemmType::kMGroupedMasked && c.split_k == 2;
  const int64_t slots = tail ? num_sms / 2 * 2 : c.split_k > 1 ? resident_clusters(num_sms, c.split_k) : num_sms / c.cluster;
  const int64_t kbs = tail ? cdiv(s.k, bk) : cdiv(cdiv(s.k, bk), c.split_k);
  // Whole-tile staging in place of a deeper pipeline through rotating strips: priced as that
  // pipeline, with the gain measured against it (the tiles were calibrated with the strips).
  const int deeper = std::min(max_stages(s, c.bm, c.bn, 2, c.split_k), kMaxStagesLargeM);
  const bool for_strips = whole_tile_over_strips(s) && c.split_k == 1 && d_bufs == 0 &&
                          stages >= kWholeTileMinStages && stages < kFewStages && deeper > stages &&
                          kbs >= m.whole_tile_min_k_blocks;
  const double t_kb = for_strips ? large_m_k_block_s(model, s, c, deeper) * m.fp8_whole_tile_staging
                                 : large_m_k_block_s(model, s, c, stages);
  double t_epi = large_m_epilogue_s(m, s, c, d_bufs);
  if (s.kind == GemmKind::kFp8_1D1D && c.overlap) t_epi += m.fp8_1d1d_overlap_exposed * t_kb;
  const double t_reduce = model.split_k_reduce_s + double(c.bm) * c.bn * 4 / m.split_k_bytes_per_s;
  if (c.split_k > 1 && !tail) t_epi += t_reduce;
  const double t_tile = double(kbs) * t_kb + t_epi;
  double t = m.launch_s;
  if (tail) {
    const double t_split = double(cdiv(kbs, 2)) * t_kb + t_reduce + t_epi;
    const double factor = is_fp8(s.kind) ? m.masked_tail_factor_fp8 : m.masked_tail_factor_bf16;
    t += split_tail_s(s, c.bm, nb, slots, t_tile, t_split) * factor;
  } else {
    t += expected_rounds(s, c.bm, pm, cdiv(nb, pn), slots) * t_tile;
  }
  if (c.cluster == 2) t *= m.pair_factor;
  return soft_max(t, dram_floor_s(model, s), model.floor_sharpness) * kMicrosecondsPerSecond;
}

}  // namespace

bool stage_aligned(const GemmShape& s, const GemmConfig& c) {
  // The unrolled loop holds a K block per stage: deep rings (small-M tiles) would unroll too far.
  // Measured on an H100 against the run-time-stage loop, beside DeepGEMM: 1-4% faster on 128x192
  // tiles (dense M = 2048, contiguous); 256x128 row units (two 64-row WGMMA iterations per
  // warp-group) 0-4% slower at K = 1536, so they keep the run-time stage. Passing over the rest of
  // the ring after tiles that are not whole turns (so that any K could take the loop) cost 2-10%
  // on dense, up to 9% on K-grouped calls (less prefetch at each tile's end): not done.
  constexpr int kMaxUnrolledStages = 8;
  const int64_t num_kb = cdiv(s.k, c.block_k);
  return s.kind != GemmKind::kBf16 && s.type != GemmType::kKGrouped && c.split_k == 1 &&
         c.block_m / c.math_wg == 64 && c.stages <= kMaxUnrolledStages && num_kb > 0 && num_kb % c.stages == 0;
}

int compiled_k_blocks(const GemmShape& s, const GemmConfig& c) {
  // DeepGEMM compiles N and K into every kernel; libdg compiles K only where a tile has so few K blocks
  // that the run-time loop's set-up (accumulator zeroing, loop bounds, the leftover loop) is a visible
  // share of a tile (K <= 1024 FP8, <= 512 BF16): dense calls, and batches whose problems share one K.
  // The price: one kernel per count. Not 1D1D: its straight-line promotion of a per-column scale
  // spilled at 128x256 (two slices, four K blocks).
  constexpr int64_t kMaxCompiledKBlocks = 8;
  const int64_t num_kb = cdiv(s.k, c.block_k);
  const bool one_k_per_tile = s.type == GemmType::kNormal || s.type == GemmType::kBatched;
  return one_k_per_tile && s.kind != GemmKind::kFp8_1D1D && c.split_k == 1 && num_kb > 0 &&
                 num_kb <= kMaxCompiledKBlocks
             ? static_cast<int>(num_kb)
             : 0;
}

uint32_t sfb_boundaries(int64_t n, int block_n) {
  if (block_n <= 0 || 128 % block_n == 0) return 0;
  uint32_t mask = 0;
  // Tile starts repeat modulo 128 after 128 / gcd(block_n, 128) <= 16 tiles.
  for (int64_t j = 0; j < std::min<int64_t>(cdiv(n, block_n), 16); ++j) {
    const int64_t b = std::min<int64_t>(128 - (j * block_n) % 128, block_n);
    mask |= 1u << (b / 8 - 1);
  }
  return __builtin_popcount(mask) <= 4 ? mask : 0;
}

unsigned gemm_smem_bytes(const GemmShape& s, int bm, int bn, int stages, int d_bufs, int split_k) {
  const int eb = elem_bytes(s.kind), bk = kBlockKBytes / eb;
  const int cols = out_cols(s, bn), strip = strip_elems(s, cols);
  const int strips = d_bufs > 0 && d_bufs < cols / strip ? d_bufs : cols / strip;
  const unsigned a = bm * bk * eb, b = bn * bk * eb;
  const unsigned sfa = is_fp8(s.kind) ? static_cast<unsigned>(align_up(bm * 4, 128)) : 0;
  // 1D1D: per-column scales per stage (mirrors Sm90GemmTraits::kSmemSfb). 1D2D: the SFB ring after
  // the stages, its slots and two barriers per slot (kSfbSlots, kSmemSfbSlot).
  const unsigned sfb = s.kind == GemmKind::kFp8_1D1D ? static_cast<unsigned>(align_up(bn * 4, 128)) : 0;
  const unsigned sfb_ring = s.kind == GemmKind::kFp8_1D2D ? kSfbSlots * (kSfbSlotBytes + 16) : 0;
  const unsigned ring = stages * (a + b + sfa + sfb), barriers = stages * 16 + sfb_ring;
  // Nothing staged where skip_head_mid stores from registers (mirrors Sm90GemmTraits::kSmemD).
  const unsigned staging =
      direct_head_store(s) ? 0u : static_cast<unsigned>(int64_t(bm) * strip * strips * out_bytes(s));
  if (split_k > 1) {
    // The FP32 partial tile with padded rows (mirrors Sm90GemmTraits::kRedPitch) overlays the ring; a
    // masked split tail also stages its whole tiles' epilogue.
    const unsigned red_pitch = bn * 4 + ((bn * 4) % 64 == 0 ? 32 : 0);
    return (s.type == GemmType::kMGroupedMasked ? staging : 0u) +
           std::max(ring, static_cast<unsigned>(bm) * red_pitch) + barriers;
  }
  return staging + ring + barriers;
}

namespace {

bool has_override(const GemmOverride& o) {
  return o.block_m || o.block_n || o.stages || o.cluster || o.math_wg || o.multicast_a >= 0 || o.fp8_promotion ||
         o.promotion_slices || o.split_k;
}

// Each explicit value on its own, so that the message names the option.
dg_status check_overrides(const GemmShape& s, int num_sms, const GemmOverride& o) {
  if (o.block_m < 0 || o.block_n < 0 || o.stages < 0 || o.cluster < 0 || o.math_wg < 0 || o.multicast_a < -1 ||
      o.multicast_a > 1)
    return fail(DG_ERROR_INVALID_ARGUMENT,
                "options: block_m {}, block_n {}, num_stages {}, cluster {}, num_math_warpgroups {}, multicast_a {} "
                "(expected >= 0, multicast_a -1, 0 or 1)",
                o.block_m, o.block_n, o.stages, o.cluster, o.math_wg, o.multicast_a);
  if (o.block_m && o.block_m != kHalfTileM && o.block_m != 64 && o.block_m != 128 && o.block_m != 256)
    return fail(DG_ERROR_INVALID_ARGUMENT, "options.block_m: {} (expected 32, 64, 128 or 256)", o.block_m);
  if (o.block_n && (o.block_n % 8 != 0 || o.block_n > 256))
    return fail(DG_ERROR_INVALID_ARGUMENT, "options.block_n: {} (expected a multiple of 8 up to 256)", o.block_n);
  if (o.cluster > 2) return fail(DG_ERROR_INVALID_ARGUMENT, "options.cluster: {} (expected 1 or 2)", o.cluster);
  if (o.cluster == 2 && num_sms < 2)
    return fail(DG_ERROR_INVALID_ARGUMENT, "options.cluster: 2 needs at least 2 SMs (num_sms {})", num_sms);
  if (o.math_wg > 2) return fail(DG_ERROR_INVALID_ARGUMENT, "options.num_math_warpgroups: {} (expected 1 or 2)", o.math_wg);
  if (o.fp8_promotion < 0 || o.fp8_promotion > DG_FP8_PROMOTION_OVERLAP)
    return fail(DG_ERROR_INVALID_ARGUMENT,
                "options.fp8_promotion: {} (expected 0 = heuristic, DG_FP8_PROMOTION_AFTER (1) or _OVERLAP (2))",
                o.fp8_promotion);
  if (o.promotion_slices != 0 && o.promotion_slices != 1 && o.promotion_slices != 2 && o.promotion_slices != 4)
    return fail(DG_ERROR_INVALID_ARGUMENT, "options.fp8_promotion_slices: {} (expected 0 = heuristic, 1, 2 or 4)",
                o.promotion_slices);
  if (o.split_k != 0 && o.split_k != 1 && o.split_k != 2 && o.split_k != 4 && o.split_k != 8)
    return fail(DG_ERROR_INVALID_ARGUMENT, "options.split_k: {} (expected 0 = heuristic, 1, 2, 4 or 8)", o.split_k);
  const int64_t bk = kBlockKBytes / elem_bytes(s.kind), k_blocks = cdiv(s.k, bk);
  if (o.split_k > k_blocks)
    return fail(DG_ERROR_INVALID_ARGUMENT, "options.split_k: {} exceeds the {} K blocks of {} (expected at most that)",
                o.split_k, k_blocks, bk);
  if (o.split_k > 1 && o.cluster == 2)
    return fail(DG_ERROR_INVALID_ARGUMENT, "options.split_k: {} needs cluster 1 (options.cluster is 2)", o.split_k);
  if ((o.fp8_promotion || o.promotion_slices) && !is_fp8(s.kind))
    return fail(DG_ERROR_INVALID_ARGUMENT, "options.fp8_promotion / fp8_promotion_slices: FP8 GEMMs only (expected 0)");
  return DG_SUCCESS;
}

// Split-K for small dense M is chosen by a measured rule, not by the cost model (which mispredicted
// it both ways): over the tiles of one column of 64-row blocks (64x128 up to M = 64, 64x64 up to
// M = 128), the most CTAs per tile that keeps the grid within kMaxSplitGrid CTAs and at least
// kMinSplitK of K per CTA (7 FP8 K blocks). On an H100 (bench/models/h100/split-k-*): the best config
// at M = 1 on 5 of 6 DeepSeek shapes, 3-9% behind the best on 7168x2048; at M = 128 it splits only
// N = 576, where splitting won. FP8 at M 16-64 on an H200 (bench/models/h200/small-m-fp8*.json): two
// CTAs per 64x128 tile ran 3-26% behind unsplit tiles (64x64, or 32-row tiles up to M 32) at N 4096
// and 7168 (32 and 56 tiles), while four and eight ran ahead at N 2112 and 576 (17 and 5 tiles). BF16
// (bench/models/h200/small-m-bf16.json): at M 64 the same, two CTAs per 64x128 tile 3-18% behind the
// model's unsplit choice on four DeepSeek-V3 shapes; at M 16 and 32, with BF16 32-row tiles, two CTAs
// per 64x128 tile took 1.00-1.45x the heuristic's time (bench/models/h200/small-m-bf16-32rows.json).
// So up to M 64 a tile splits only over at least kMinWideSplit CTAs.
GemmOverride split_k_rule(const GemmShape& s, int num_sms, const GemmOverride& o) {
  constexpr int64_t kMaxSplitGrid = 112, kMinSplitK = 896, kWideTileMaxM = 64;
  constexpr int kMinWideSplit = 4;
  if (has_override(o) || s.m > 128 || s.type != GemmType::kNormal || s.epilogue.active()) return o;
  const int bn = s.m <= kWideTileMaxM ? 128 : 64;
  const int64_t tiles = cdiv(s.m, 64) * cdiv(s.n, bn);
  int sk = 1;
  for (int c : {2, 4, 8})
    if (tiles * c <= kMaxSplitGrid && s.k / c >= kMinSplitK && resident_clusters(num_sms, c) >= tiles) sk = c;
  if (s.m <= kWideTileMaxM && sk < kMinWideSplit) sk = 1;
  if (sk == 1) return o;
  GemmOverride split = o;
  split.block_m = 64, split.block_n = bn, split.cluster = 1, split.split_k = sk;
  return split;
}

// Masked calls without an explicit config: the split tail (split_k 2) as well, taken where the model
// prices it below the unsplit choice. Its kernel knows the counts and splits a last round that is at
// most half full; priced count by count over the spread (split_tail_s). On an H200 (G 1-6 of the
// masked suite, one process) the choice with it against the choice without: every group's count
// fixed at 0.72-1.30 x expected, 2-13% faster on 14 of 21 sets, within 1% on the others
// (bench/models/h200/masked-split-tail-counts.json); on independent draws of the counts BF16 +2.2%
// over 48 rows and FP8 +0.8% over the 24 of the sets it splits (masked-split-tail-draws*.json).
// Decoding (G 8-32, tiles the same at every count) never takes it.
GemmOverride split_tail_rule(const GemmShape& s, int num_sms, const GemmOverride& o) {
  if (s.type != GemmType::kMGroupedMasked || has_override(o) || num_sms < 2) return o;
  GemmOverride tail = o;
  tail.split_k = 2;
  return tail;
}

// Dense and batched calls without an explicit config over at least kPairMinRounds rounds of the
// persistent grid run CTA pairs instead of single CTAs, in one of two forms:
// - Batched tiles of one or two K blocks whose chosen tile covers N in an even number of columns of
//   tiles: pairs along N that share A (TMA multicast). Such tiles are bound by their loads and their D
//   stores, and over many rounds the CTAs of a static walk drift apart: the tiles that read the same
//   A rows run rounds apart, by which time D's stores have pushed those rows out of L2. On an H200
//   (einsum bhd, h 128, N 512, K 128, 128x256 tiles) single CTAs read 395-415 MB from DRAM at b 8192
//   against 285 MB of operands (a pair: 299-306 MB; cuBLASLt's kernel, in 1x2 clusters: 285 MB); the
//   pair ran 0.933, 0.977, 1.014, 1.032, 1.051x as fast at b 256, 1024, 2048, 4096, 8192 (8, 16, 31,
//   62 and 124 rounds; bench/models/h200/batched-pairs.json).
// - Otherwise, tiles of more K blocks of an MN-major B whose rows of tiles (per batch) are even in
//   number: pairs along M that share B. An MN-major B tile arrives as one TMA box per 64 of its
//   columns (four per stage at block_n 256, against one box of a K-major tile), and the pair halves
//   the boxes and the L2 reads of every SM. On an H200: einsum bhd at h 8 (K 1024, b 4096 / 8192)
//   1.4-2.1% faster than single CTAs forced in one process, 1.3-1.8% in builds alternated A B B A;
//   dense BF16 nn with the same 128x256 tile 1.2-1.9% faster at 31-62 rounds (N 24576 / 32768, K
//   1536 / 512), -0.3..+2.0% at 4-23 rounds, 7-23% slower with N 576 / 2112 (1-4 rounds)
//   (einsum-large-b-alts.json, dense-nn-pairs.json). With K-major B the same pairs gained nothing
//   measurable (einsum bhr, dense nt within -4..+2%; batched-pairs.json).
constexpr int64_t kPairMinRounds = 24;
constexpr int64_t kPairMaxKBlocks = 2;
// True, with the pair's override in `pair`, where the rule takes the pair of `best`'s tile.
bool pair_rule(const GemmShape& s, int num_sms, const GemmOverride& o, const GemmConfig& best, GemmOverride* pair) {
  const bool batched = s.type == GemmType::kBatched;
  // Batched calls always fix split_k 1 (batched_gemm_override): any other explicit field opts out.
  GemmOverride unsplit = o;
  if (unsplit.split_k == 1 && batched) unsplit.split_k = 0;
  if ((!batched && s.type != GemmType::kNormal) || has_override(unsplit) || num_sms < 2 || best.block_m == 0 ||
      best.cluster != 1 || best.split_k != 1)
    return false;
  const int64_t tiles_n = cdiv(s.n, best.block_n), row_tiles = cdiv(s.m, best.block_m);  // per batch
  const int64_t tiles = expected_m_blocks(s, best.block_m) * tiles_n, k_blocks = cdiv(s.k, best.block_k);
  const bool share_a = batched && k_blocks <= kPairMaxKBlocks && tiles_n % 2 == 0;
  const bool share_b = k_blocks > kPairMaxKBlocks && s.major_b == Major::kMN && row_tiles % 2 == 0;
  if (!(share_a || share_b) || tiles < kPairMinRounds * num_sms) return false;
  *pair = o;
  pair->block_m = best.block_m, pair->block_n = best.block_n, pair->cluster = 2, pair->multicast_a = share_a ? 1 : 0;
  return true;
}

// The search space, each dimension in the order that wins ties.
struct Tile {
  int bm, bn, math_wg;
};

std::vector<Tile> tiles(const GemmShape& s, const GemmOverride& o) {
  // block_m 256 (FP8 1D2D in 128-row promotion units) ran 2-4% faster than 128-row tiles at
  // M = 8192 and 0.2-3.7% at M = 4096 on the large DeepSeek shapes, mixed at M = 2048: a candidate
  // from M = 4096 (per batch for batched calls). BF16 never ran fastest with it (only by override).
  std::vector<int> bms = {64, 128};
  if ((s.type == GemmType::kNormal || s.type == GemmType::kBatched) && s.kind == GemmKind::kFp8_1D2D && s.m >= 4096)
    bms.push_back(256);
  // 32-row tiles load half the A rows of a 64-row tile, most of them past M at these sizes: on an
  // H200 at M 16 and 32, 9-25% faster than the best 64-row tile at 4096 x 7168 and 7168 x 16384
  // (bench/models/h200/small-m-fp8-32rows.json).
  if (half_tiles_apply(s) && s.m <= kHalfTileM) bms.push_back(kHalfTileM);
  if (s.type == GemmType::kMGroupedContiguous || s.type == GemmType::kMGroupedContiguousPsum) bms = {128};
  if (o.block_m) bms = {o.block_m};
  // Grouped calls whose tile count is a hint (FP8 psum, masked, K-grouped; BF16 masked with few
  // groups) cap tiles at 192 columns: with few rows per group the tile count, not the per-tile rate,
  // sets the time (FP8 128x256 ran masked G = 1-2, m ~ 1024, N = 6144 at 0.75x DeepGEMM's 128x192).
  // Fused SwiGLU and FP8 D tiles hold whole gate / up blocks and 128-column scale groups.
  const bool whole_groups = s.epilogue.act == Activation::kSwiGlu || s.epilogue.scales != DScales::kNone;
  // BF16 capped tiles step by 32 columns: the epilogue stores a BF16 tile in strips of the widest of
  // 64, 32 or 16 columns that divides block_n, and the model does not price the strips. Masked G 2,
  // N 7168, K 2048 (H200): 128x176 (eleven 16-column strips), which the model put 0.4% ahead of
  // 128x192, ran 15% behind it at 522 and 624 rows per group (bench/models/h200/masked-bf16-192-cap.json).
  const bool capped = grouped_cap(s), bf16_capped = capped && !is_fp8(s.kind);
  const int bn_min = s.epilogue.act == Activation::kSwiGlu ? 256 : whole_groups ? 128 : bf16_capped ? 32 : 16;
  const int bn_step = whole_groups ? 128 : bf16_capped ? 32 : 16;
  int bn_max = capped && !whole_groups ? 192 : 256;
  // Small M with at most kShortK of K: a tile's loads take about as long as its stores, and tiles of
  // at most 128 columns give each SM several, whose stores overlap the next tile's loads. On an H200
  // 128x256 and 64x256 ran 6-9% behind 64x128 at M 64 and 128, N 32768, K 512
  // (bench/models/h200/small-m-fp8.json), where the small-M model, which prices operand fill per SM
  // and no store traffic, ranks the wide tiles first.
  constexpr int64_t kShortK = 512;
  if (small_m(s) && s.k <= kShortK && !whole_groups) bn_max = std::min(bn_max, 128);
  std::vector<Tile> out;
  for (int bm : bms)
    for (int bn = o.block_n ? o.block_n : bn_min; bn <= (o.block_n ? o.block_n : bn_max); bn += bn_step)
      for (int wg : {1, 2})
        if (o.math_wg ? wg == o.math_wg : wg == (bm <= 64 ? 1 : 2)) out.push_back({bm, bn, wg});
  return out;
}

// (cluster, multicast_a) pairs. Multicast pairs never beat single CTAs in the H100 sweeps
// (gemm_cost_model.cpp, pair_factor): only an override of cluster or multicast_a (and pair_rule, for
// long runs of dense and batched tiles) asks for them, and they need tiles to pair up. A calibration
// that models BF16 small-M pairs (modelled_pair) offers the B-sharing pair of a tile whose two row
// blocks cover M.
std::vector<std::pair<int, bool>> clusters(const Sm90CostModel& model, const GemmShape& s, const GemmOverride& o,
                                           int num_sms, const Tile& t) {
  std::vector<std::pair<int, bool>> out;
  if (!o.cluster || o.cluster == 1) out.push_back({1, false});
  const Candidate b_pair{t.bm, t.bn, t.math_wg, 2, false};
  if (!o.cluster && o.multicast_a < 0 && num_sms >= 2 && cdiv(s.m, t.bm) == 2 && modelled_pair(model, s, b_pair))
    out.push_back({2, false});
  const bool pairs = (o.cluster == 2 || (!o.cluster && o.multicast_a >= 0)) && num_sms >= 2;
  for (int mca : {0, 1}) {
    if (!pairs || (o.multicast_a >= 0 && mca != o.multicast_a)) continue;
    if (!o.cluster && (mca ? cdiv(s.n, t.bn) : cdiv(s.m, t.bm)) < 2) continue;
    out.push_back({2, mca == 1});
  }
  return out;
}

// (overlap, slices) FP8 promotion schedules, best first: overlap with 1/2/4 slices, then after.
// Two slices pay for the 256-wide tile promoted after its WGMMAs (the warp-groups interleave their
// promotions), for row units, and for the 1D2D 192-wide tile with overlap (3% faster on all seven
// M = 4096 shapes); other sliced schedules lose to whole tiles, so only an override reaches them.
std::vector<std::pair<bool, int>> promotions(const GemmShape& s, const GemmOverride& o, const Tile& t) {
  if (!is_fp8(s.kind)) return {{false, 1}};
  std::vector<std::pair<bool, int>> out;
  for (bool overlap : {true, false})
    for (int split : {1, 2, 4}) {
      if (o.fp8_promotion && overlap != (o.fp8_promotion == DG_FP8_PROMOTION_OVERLAP)) continue;
      if (o.promotion_slices && split != o.promotion_slices) continue;
      const bool sliced_ok = split == 2 && (overlap ? s.kind == GemmKind::kFp8_1D2D && t.bn == 192
                                                    : t.bn == 256 || promotes_rows(t.bm, t.math_wg, overlap, split));
      if (!o.promotion_slices && split != 1 && !sliced_ok) continue;
      out.push_back({overlap, split});
    }
  return out;
}

// Split-K factor: the override's, else 1 (masked calls: split_tail_rule). Returns 0, with the
// reason, where the split cannot run.
int split_k_of(const GemmShape& s, const GemmOverride& o, int num_sms, const char** last_reason) {
  const int split_k = o.split_k ? o.split_k : 1;
  if (s.type == GemmType::kMGroupedMasked && split_k == 2 && num_sms < 2) {
    *last_reason = "the masked split tail runs CTA pairs: it needs options.num_sms >= 2";
    return 0;
  }
  return split_k;
}

// The pipeline depth and epilogue staging of `c`: as many stages as fit (capped), whole-tile D
// staging unless two rotating strips leave room for more stages (not for whole_tile_over_strips);
// an explicit stage count decides the staging itself. False (with the reason) when too few stages fit.
bool fit_stages(const GemmShape& s, const GemmOverride& o, const Candidate& c, int* stages, int* d_bufs,
                const char** reason) {
  const int cap = small_m(s) ? kMaxStagesSmallM : kMaxStagesLargeM;
  const int whole = max_stages(s, c.bm, c.bn, 0, c.split_k), rotating = max_stages(s, c.bm, c.bn, 2, c.split_k);
  // Split-K stages no D, but for a masked split tail's whole tiles; a transposed D stages the whole tile.
  const bool staged = (c.split_k == 1 || s.type == GemmType::kMGroupedMasked) && !s.transpose_d;
  *stages = std::min(whole, cap), *d_bufs = 0;
  if (staged && *stages < kFewStages && std::min(rotating, cap) > *stages &&
      !(whole_tile_over_strips(s) && *stages >= kWholeTileMinStages))
    *stages = std::min(rotating, cap), *d_bufs = 2;
  if (o.stages) {
    // The whole tile where it fits, else two rotating strips, else one strip buffer per warp-group.
    *d_bufs = staged && o.stages > whole ? (o.stages <= rotating ? 2 : 1) : 0;
    if (o.stages > max_stages(s, c.bm, c.bn, *d_bufs, c.split_k)) {
      *reason = "options.num_stages does not fit in shared memory";
      return false;
    }
    *stages = o.stages;
  }
  if (*stages < (o.stages ? 2 : 3)) {
    *reason = "too few pipeline stages fit in shared memory";
    return false;
  }
  return true;
}

// Calls visit(candidate, stages, d_bufs, estimate_us) for every legal candidate, in the order that
// wins ties; `reason` says why the last illegal one could not run.
template <class Visit>
void for_each_candidate(const Sm90CostModel& model, const GemmShape& s, int num_sms, const GemmOverride& o,
                        const char** reason, Visit visit) {
  const int sk = split_k_of(s, o, num_sms, reason);
  if (sk == 0) return;
  for (const Tile& t : tiles(s, o))
    for (const auto& [cluster, mc_a] : clusters(model, s, o, num_sms, t))
      for (const auto& [overlap, split] : promotions(s, o, t)) {
        const Candidate c{t.bm, t.bn, t.math_wg, cluster, mc_a, overlap, split, sk};
        if (const char* why = illegal(s, c)) {
          *reason = why;
          continue;
        }
        int stages = 0, d_bufs = 0;
        if (!fit_stages(s, o, c, &stages, &d_bufs, reason)) continue;
        visit(c, stages, d_bufs, estimate_us(model, s, c, stages, d_bufs, num_sms));
      }
}

// The template parameters of candidate `c` (finish_config adds the launch geometry).
GemmConfig config_of_candidate(const GemmShape& s, const Candidate& c, int stages, int d_bufs, double us) {
  GemmConfig g;
  g.block_m = c.bm, g.block_n = c.bn, g.block_k = kBlockKBytes / elem_bytes(s.kind);
  g.stages = stages, g.math_wg = c.math_wg, g.cluster = c.cluster, g.multicast_a = c.mc_a;
  g.overlap = c.overlap, g.promote_split = c.split, g.d_bufs = d_bufs, g.split_k = c.split_k;
  g.estimate_us = us;
  return g;
}

// The cheapest legal candidate by the cost model; block_m 0 when none is legal (`reason` says why).
GemmConfig cheapest(const Sm90CostModel& model, const GemmShape& s, int num_sms, const GemmOverride& o,
                    const char** reason) {
  GemmConfig best;
  for_each_candidate(model, s, num_sms, o, reason, [&](const Candidate& c, int stages, int d_bufs, double us) {
    if (best.block_m != 0 && us >= best.estimate_us * kTieMargin) return;
    best = config_of_candidate(s, c, stages, d_bufs, us);
  });
  return best;
}

// Raster bands: the tiles in flight at once reuse the fewest operand rows from L2. M-grouped
// problems read a different B per group: bands along M keep a band's few groups (their B tiles and A
// rows) in L2 while it walks N (contiguous BF16 G = 32, m ~ 256, N = 6144, K = 7168: 1695 us with
// bands of 8 along N, 1371 us with 16 along M).
// A band along N walks every row of the grid, and every band after the first reads all of A again;
// for a batch (GemmType::kBatched) those rows are every batch's, whose A far outgrows L2 where one
// problem's would not. Batched problems whose band along N outlasts the tiles in flight and whose A
// exceeds kBandRereadBytes take bands along M (einsum bhd, h 8, b 4096, N 4096, K 1024 on an H200:
// bands of 8 along N re-read all 64 MB of A, 202 MB read from DRAM against 134 MB of operands).
// Dense problems keep the footprint alone (not measured either way).
constexpr double kBandRereadBytes = 25e6;  // half of an H100's / H200's 50 MB L2
void choose_raster(const GemmShape& s, int64_t concurrent, int64_t units_m, int64_t units_n, int64_t pm, int64_t pn,
                   GemmConfig* c) {
  const double a_bytes = double(units_m) * pm * c->block_m * double(s.k) * elem_bytes(s.kind);
  const auto spills = [&](int along_n, int band) {
    return s.type == GemmType::kBatched && along_n && units_n > band && band * units_m > concurrent &&
           a_bytes > kBandRereadBytes;
  };
  double best_cost = 1e300;
  bool best_spills = true;
  for (int along_n = 0; along_n < (is_m_grouped(s.type) ? 1 : 2); ++along_n)
    for (int band : {4, 8, 16}) {
      const int64_t rows = std::min<int64_t>(along_n ? cdiv(concurrent, band) : band, units_m);
      const int64_t cols = std::min<int64_t>(along_n ? band : cdiv(concurrent, band), units_n);
      const double cost = double(rows) * pm * c->block_m + double(cols) * pn * c->block_n;
      const bool spill = spills(along_n, band);
      if ((best_spills && !spill) || (spill == best_spills && cost < best_cost - 1e-9))
        best_cost = cost, best_spills = spill, c->raster_band = band, c->raster_along_n = along_n;
    }
}

// The grid of the chosen tiles. A persistent grid whose last wave would be at least half full
// launches the fewest clusters that keep the wave count, so that every CTA computes the same number
// of units (+0.7-1.5% on 4096x{4096,7168,2112}xK); a nearly empty last wave is better kept
// (4096x24576x1536 FP8 lost 1.6% on 128 SMs instead of 132). Split-K grids are not persistent (a
// cluster of split_k CTAs per tile); masked and psum tiles are counted on the device, so every SM
// stays in the grid.
void finish_config(const GemmShape& s, int num_sms, GemmConfig* c) {
  const bool tail = s.type == GemmType::kMGroupedMasked && c->split_k == 2;  // launches CTA pairs
  const int pair = tail ? 2 : c->cluster;
  c->num_sms = num_sms / pair * pair;
  const int64_t pm = c->cluster == 2 && !c->multicast_a ? 2 : 1, pn = c->cluster == 2 && c->multicast_a ? 2 : 1;
  const int64_t units_m = cdiv(expected_m_blocks(s, c->block_m), pm), units_n = cdiv(cdiv(s.n, c->block_n), pn);
  const int64_t units = units_m * units_n;
  const int64_t slots = c->num_sms / c->cluster;
  const int64_t waves = cdiv(units, slots), last_wave = units - (waves - 1) * slots;
  const bool trim = c->split_k == 1 && waves > 1 && 2 * last_wave >= slots && !uses_group_table(s.type);
  const int64_t clusters = trim ? cdiv(units, waves) : uses_group_table(s.type) ? slots : std::min(slots, units);
  c->grid = static_cast<int>(tail ? c->num_sms : c->split_k > 1 ? units * c->split_k : clusters * c->cluster);
  choose_raster(s, trim ? clusters : slots, units_m, units_n, pm, pn, c);
  c->smem_bytes = gemm_smem_bytes(s, c->block_m, c->block_n, c->stages, c->d_bufs, c->split_k);
  c->threads = 128u * (c->math_wg + 1);
  c->d_strip = strip_elems(s, out_cols(s, c->block_n));
  if (s.kind == GemmKind::kFp8_1D2D) c->sfb_boundaries = sfb_boundaries(s.n, c->block_n);
  c->stage_aligned = stage_aligned(s, *c);
  c->k_blocks = compiled_k_blocks(s, *c);
}

// Count-adaptive tiles: a masked call's tile count is set by its groups' rows, which only the
// device knows, and with few groups the best width moves with them (G 1, N 4096, K 7168, BF16 on an
// H200: 128x192 split ran 61.5 us at 6 row blocks, 128x256 77.3 us against 93.5 at 7 and 128x160
// 101.7 us against 116.8 at 10; bench/models/h200/masked-bf16-split-widths.json). Such a call
// compiles up to kMaxAltTiles more widths into its kernel (GemmConfig::alts; all with the split
// tail), and every CTA runs the one its call's total of row blocks marks. Each is chosen in turn:
// the width whose tile, run at every total where the model prices it at least kAltMinStep below the
// tile run there so far, lowers the model's mean over the spread of counts the most, by at least
// kAltMinGain. At a known total the model counts the rounds of tiles over the SMs exactly, and with
// the per-total fill rate (sm_fill_bytes_per_s_bf16_known_total) ranks each total's widths within
// 0.4% of the best measured (worst 2.9%). With the mean over counts' prices a 10% step was needed
// (the cheaper width at every total ran rows 6-10% slower as well as 10-20% faster;
// bench/models/h200/masked-count-adaptive.json); with these a 5% step picks widths whose measured
// mean over the counts is within 0.3-2.2% of the best width's at every total on the three G 1 shapes
// (a 10% step left N 6144 with one tile, 4.7% slower; masked-bf16-split-widths.json). A B B A beside
// DeepGEMM, up to three widths ran 1.042x the two-width kernels (masked-bf16-three-widths.json).
// BF16 only: the FP8 kernel of two tiles ran its first tile 4-5% slower than that tile's kernel
// alone (the same instructions; stalls for instruction fetch per issue 0.23 -> 0.47), as much as its
// second tile gained where it ran (H200, G 1 and 2, N 4096: 128x160 with 128x192).
constexpr int64_t kAltMaxGroups = 8;
constexpr double kAltMinGain = 0.02, kAltMinStep = 0.05;
constexpr int kAltWidths[] = {128, 160, 192, 224, 256};

// The model's microseconds of `c` on `s` with r row blocks in all.
double cost_at_blocks(const Sm90CostModel& model, const GemmShape& s, const GemmConfig& c, int64_t r, int num_sms) {
  GemmShape at = s;
  at.row_blocks = std::max<int64_t>(r, 1);
  const Candidate cand{c.block_m, c.block_n, c.math_wg, c.cluster, c.multicast_a, c.overlap, c.promote_split, c.split_k};
  return estimate_us(model, at, cand, c.stages, c.d_bufs, num_sms);
}

bool alt_tiles_apply(const GemmShape& s, int num_sms, const GemmOverride& o, const GemmConfig& best) {
  return s.type == GemmType::kMGroupedMasked && s.kind == GemmKind::kBf16 && !has_override(o) && num_sms >= 2 &&
         s.num_groups <= kAltMaxGroups && !s.epilogue.active() && best.cluster == 1 && best.split_k == 2;
}

// The split-tail tile of width `bn` and block_m `bm` the model picks, or block_m 0 where none runs.
GemmConfig alt_candidate(const Sm90CostModel& model, const GemmShape& s, int num_sms, const GemmOverride& o, int bm,
                         int bn) {
  GemmOverride w = o;
  w.block_m = bm, w.block_n = bn, w.split_k = 2;
  const char* reason = nullptr;
  return cheapest(model, s, num_sms, w, &reason);
}

void alt_tile_rule(const Sm90CostModel& model, const GemmShape& s, int num_sms, const GemmOverride& o,
                   GemmConfig* best) {
  if (!alt_tiles_apply(s, num_sms, o, *best)) return;
  const auto price = [&](const GemmConfig& c, int64_t r) { return cost_at_blocks(model, s, c, r, num_sms); };
  // The price at each total of the tile the kernel runs there so far (the main tile's from kAltRowBlocks on).
  std::vector<double> at(kAltRowBlocks);
  for (int64_t r = 0; r < kAltRowBlocks; ++r) at[r] = price(*best, r);
  const auto now = [&](int64_t r) { return r < kAltRowBlocks ? at[r] : price(*best, r); };
  std::vector<int> widths_taken{best->block_n};
  for (int slot = 0; slot < kMaxAltTiles; ++slot) {
    // At r row blocks: the candidate where it is at least kAltMinStep cheaper, else the tile run now.
    const auto with = [&](const GemmConfig& a, int64_t r) {
      const double t = now(r);
      if (r >= kAltRowBlocks) return t;
      const double c = price(a, r);
      return c < t * (1.0 - kAltMinStep) ? c : t;
    };
    double lowest = mean_over_counts(s, best->block_m, now) * (1.0 - kAltMinGain);
    GemmConfig alt;
    for (int bn : kAltWidths) {
      if (std::find(widths_taken.begin(), widths_taken.end(), bn) != widths_taken.end()) continue;
      const GemmConfig c = alt_candidate(model, s, num_sms, o, best->block_m, bn);
      if (c.block_m == 0) continue;
      if (const double e = mean_over_counts(s, best->block_m, [&](int64_t r) { return with(c, r); }); e < lowest)
        lowest = e, alt = c;
    }
    if (alt.block_m == 0) return;
    finish_config(s, num_sms, &alt);
    GemmAltTile& t = best->alts[slot];
    t.block_n = alt.block_n, t.stages = alt.stages, t.promote_split = alt.promote_split, t.d_bufs = alt.d_bufs;
    t.d_strip = alt.d_strip, t.overlap = alt.overlap, t.stage_aligned = alt.stage_aligned;
    t.sfb_boundaries = alt.sfb_boundaries, t.smem_bytes = alt.smem_bytes;
    for (int64_t r = 1; r < kAltRowBlocks; ++r) {
      const double c = price(alt, r);
      if (c >= at[r] * (1.0 - kAltMinStep)) continue;
      for (GemmAltTile& other : best->alts) other.unmark(r);
      t.mark(r);
      at[r] = c;
    }
    widths_taken.push_back(alt.block_n);
    best->estimate_us = lowest;
  }
}

}  // namespace

CountSpread count_spread(int64_t expected_m, int64_t max_rows) {
  const int64_t cap = std::max<int64_t>(max_rows, 1);
  const int64_t lo = std::clamp<int64_t>(static_cast<int64_t>(kSpreadLow * double(expected_m)), 1, cap);
  const int64_t spread_hi = static_cast<int64_t>(kSpreadHigh * double(expected_m));
  return {lo, std::clamp<int64_t>(spread_hi, lo, cap)};
}

dg_status choose_gemm_config(const GemmShape& s, int num_sms, const GemmOverride& o, GemmConfig* out) {
  return choose_gemm_config(s, num_sms, o, hopper_cost_model(), out);
}

dg_status choose_gemm_config(const GemmShape& s, int num_sms, const GemmOverride& o, const Sm90CostModel& model,
                             GemmConfig* out) {
  if (o.num_sms < 0 || o.num_sms > num_sms)
    return fail(DG_ERROR_INVALID_ARGUMENT, "options.num_sms: {} (expected 0..{})", o.num_sms, num_sms);
  if (o.num_sms > 0) num_sms = o.num_sms;
  DG_TRY(check_overrides(s, num_sms, o));
  const char* reason = "no candidate";
  GemmConfig best;
  const GemmOverride split = split_k_rule(s, num_sms, o);
  if (split.split_k > 1 && !has_override(o)) best = cheapest(model, s, num_sms, split, &reason);
  if (best.block_m == 0) best = cheapest(model, s, num_sms, o, &reason);
  if (GemmOverride tail = split_tail_rule(s, num_sms, o); tail.split_k == 2 && best.block_m != 0) {
    // FP8: the split tail of the chosen tile only. The model prices a split more surely than it
    // ranks FP8 tiles of different widths: at G 1, N 4096 it put 128x192 split 7% ahead of 128x160
    // unsplit, which ran level with it over the counts (ahead on fixed counts, behind on drawn ones;
    // bench/models/h200/masked-split-tail-draws.json).
    if (is_fp8(s.kind)) tail.block_m = best.block_m, tail.block_n = best.block_n;
    const char* tail_reason = nullptr;
    const GemmConfig t = cheapest(model, s, num_sms, tail, &tail_reason);
    if (t.block_m != 0 && t.estimate_us < best.estimate_us * kTieMargin) best = t;
  }
  if (GemmOverride pair; pair_rule(s, num_sms, o, best, &pair)) {
    const char* pair_reason = nullptr;
    if (const GemmConfig p = cheapest(model, s, num_sms, pair, &pair_reason); p.block_m != 0) best = p;
  }
  if (best.block_m == 0) {
    if (has_override(o))
      return fail(DG_ERROR_INVALID_ARGUMENT, "options: the explicit kernel config cannot run this problem: {}", reason);
    return fail(DG_ERROR_UNSUPPORTED, "no SM90 GEMM config fits this problem: {}", reason);
  }
  alt_tile_rule(model, s, num_sms, o, &best);
  finish_config(s, num_sms, &best);
  *out = best;
  return DG_SUCCESS;
}

namespace {

// Configs that compile to the same kernel and launch alike.
bool same_config(const GemmConfig& a, const GemmConfig& b) {
  return a.block_m == b.block_m && a.block_n == b.block_n && a.stages == b.stages && a.math_wg == b.math_wg &&
         a.cluster == b.cluster && a.multicast_a == b.multicast_a && a.overlap == b.overlap &&
         a.promote_split == b.promote_split && a.d_bufs == b.d_bufs && a.split_k == b.split_k;
}

// Configs that cover the problem with the same tiles (they differ in pipeline or promotion only).
bool same_tiles(const GemmConfig& a, const GemmConfig& b) {
  return a.block_m == b.block_m && a.block_n == b.block_n && a.split_k == b.split_k;
}

}  // namespace

bool has_config_override(const GemmOverride& o) { return has_override(o); }

// Candidate counts from which rank_gemm_configs times a CTA pair where no other slot holds one.
constexpr int kPairSlotMinCount = 5;

dg_status rank_gemm_configs(const GemmShape& s, int num_sms, const GemmOverride& o, const Sm90CostModel& model,
                            int count, std::vector<GemmConfig>* out) {
  GemmConfig first;
  DG_TRY(choose_gemm_config(s, num_sms, o, model, &first));
  if (o.num_sms > 0) num_sms = o.num_sms;
  // Every legal candidate of the search choose_gemm_config runs (the split-K rule's too), cheapest
  // first; a stable sort keeps the search order among equal estimates.
  std::vector<GemmConfig> all;
  const char* reason = "no candidate";
  auto keep = [&](const Candidate& c, int stages, int d_bufs, double us) {
    all.push_back(config_of_candidate(s, c, stages, d_bufs, us));
  };
  const GemmOverride split = split_k_rule(s, num_sms, o);
  if (split.split_k > 1 && !has_override(o)) for_each_candidate(model, s, num_sms, split, &reason, keep);
  for_each_candidate(model, s, num_sms, o, &reason, keep);
  if (const GemmOverride tail = split_tail_rule(s, num_sms, o); tail.split_k == 2)
    for_each_candidate(model, s, num_sms, tail, &reason, keep);
  // CTA pairs (TMA multicast) are searched at large M only on request, the model pricing them level
  // at best; as variants of ranked tiles they are timed where the count reaches them.
  if (!small_m(s) && o.cluster == 0) {
    GemmOverride pairs = o;
    pairs.cluster = 2;
    for_each_candidate(model, s, num_sms, pairs, &reason, keep);
  }
  std::stable_sort(all.begin(), all.end(),
                   [](const GemmConfig& a, const GemmConfig& b) { return a.estimate_us < b.estimate_us; });
  // Other tiles first, then the other pipelines and promotions of tiles already ranked: a tile's
  // width sets the rounds of tiles over the SMs, where the model's misses are the largest (masked
  // FP8 at G 1-4, N 4096 on an H200: 128x160, ranked fifth, ran 14-19% faster than the first choice),
  // while variants of one tile measured within a few percent of each other.
  std::vector<GemmConfig> ranked = {first};
  for (const bool new_tiles : {true, false})
    for (GemmConfig& c : all) {
      if (static_cast<int>(ranked.size()) >= count) break;
      bool seen = false, tiles_seen = false;
      for (const GemmConfig& r : ranked) {
        seen = seen || same_config(r, c);
        tiles_seen = tiles_seen || same_tiles(r, c);
      }
      if (seen || (new_tiles && tiles_seen)) continue;
      finish_config(s, num_sms, &c);
      ranked.push_back(c);
    }
  // The variants that rank pairs come after every tile (24-32 places at large M, past the counts
  // dg_tune takes): from kPairSlotMinCount candidates on, the last goes to the cheapest pair.
  const auto is_pair = [](const GemmConfig& c) { return c.cluster == 2; };
  if (count >= kPairSlotMinCount && std::none_of(ranked.begin(), ranked.end(), is_pair)) {
    const auto pair = std::find_if(all.begin(), all.end(), is_pair);
    if (pair != all.end()) {
      GemmConfig c = *pair;
      finish_config(s, num_sms, &c);
      if (static_cast<int>(ranked.size()) >= count) ranked.back() = c;
      else ranked.push_back(c);
    }
  }
  *out = std::move(ranked);
  return DG_SUCCESS;
}

GemmOverride override_for(const GemmShape& s, const GemmConfig& c) {
  GemmOverride o;
  o.block_m = c.block_m, o.block_n = c.block_n, o.stages = c.stages, o.math_wg = c.math_wg;
  o.cluster = c.cluster;
  o.multicast_a = c.cluster == 2 ? (c.multicast_a ? 1 : 0) : -1;
  if (is_fp8(s.kind)) {
    o.fp8_promotion = c.overlap ? DG_FP8_PROMOTION_OVERLAP : DG_FP8_PROMOTION_AFTER;
    o.promotion_slices = c.promote_split;
  }
  o.split_k = c.split_k;
  o.kernel = DG_GEMM_KERNEL_TILED;
  return o;
}

dg_status choose_entry_config(const GemmShape& s, int num_sms, const GemmOverride& entry, const GemmOverride& o,
                              const Sm90CostModel& model, GemmConfig* out) {
  GemmOverride forced = entry;
  forced.num_sms = o.num_sms;
  GemmConfig c;
  DG_TRY(choose_gemm_config(s, num_sms, forced, model, &c));
  // Only a count-adaptive choice (masked BF16, few groups) differs from its tile forced.
  GemmConfig heuristic;
  if (s.type == GemmType::kMGroupedMasked && choose_gemm_config(s, num_sms, o, model, &heuristic) == DG_SUCCESS &&
      heuristic.alt_tiles() != 0 && same_config(heuristic, c))
    c = heuristic;
  *out = c;
  return DG_SUCCESS;
}

}  // namespace dg::ops
