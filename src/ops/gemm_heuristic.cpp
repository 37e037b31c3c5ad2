// The SM90 GEMM config heuristic: legality of a (tile, pipeline, cluster, promotion, split-K)
// candidate, the shared-memory budget, the H100 cost models that rank the candidates, and the
// grid and rasterisation of the chosen one.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "ops/gemm.h"
#include "ops/gemm_util.h"
#include "runtime/status.h"

namespace dg::ops {
namespace {

constexpr unsigned kSmemBudget = 232448;  // 227 KiB, sm_90
// With fewer stages than this beside a whole-tile D staging buffer, the heuristic stages D in strips.
constexpr int kRotateBelowStages = 4;
// Split-K's fixed cost per tile (two cluster barriers, the DSMEM reduction's latency), microseconds:
// not fitted. Split-K is chosen by a measured rule (choose_gemm_config); this only shapes the
// estimate when options.split_k forces it.
constexpr double kSplitKReduceUs = 1.5;

// Mirrors dg::epilogue::strip_elems.
int strip_elems(int ob, int block_n) {
  if (block_n % (128 / ob) == 0) return 128 / ob;
  if (block_n % (64 / ob) == 0) return 64 / ob;
  if (block_n % (32 / ob) == 0) return 32 / ob;
  return 16 / ob;
}

// Registers a consumer thread needs for its accumulators (+ ~40 for addresses and scales).
int accumulator_regs(const GemmShape& s, int block_m, int block_n, int math_wg, bool overlap, int split) {
  const int m_iters = block_m / math_wg / 64;
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

// Why (block_m, block_n, math_wg, cluster, multicast_a, overlap, split, split_k) cannot run `s`;
// nullptr when it can.
const char* illegal(const GemmShape& s, int bm, int bn, int math_wg, int cluster, bool mc_a, bool overlap, int split,
                    int split_k) {
  if (bm != 64 && bm != 128 && bm != 256) return "block_m must be 64, 128 or 256";
  if (math_wg != 1 && math_wg != 2) return "math warp-groups must be 1 or 2";
  if (bm / math_wg != 64 && bm / math_wg != 128) return "block_m / math warp-groups must be 64 or 128";
  if (bn < 8 || bn > 256 || bn % 8 != 0) return "block_n must be a multiple of 8 in [8, 256]";
  if (s.d_dtype == DG_DTYPE_BFLOAT16 && bn % 16 != 0) return "block_n must be a multiple of 16 for a BF16 D";
  if (s.major_b == Major::kMN && bn % 64 != 0) return "block_n must be a multiple of 64 when B is MN-major";
  if (is_fp8(s.kind) && (s.major_a != Major::kK || s.major_b != Major::kK)) return "FP8 needs K-major A and B";
  if (s.kind == GemmKind::kFp8_1D1D && s.d_dtype != DG_DTYPE_FLOAT32) return "the 1D1D recipe writes FP32 D";
  if (s.kind == GemmKind::kFp8_1D2D && 128 % bn != 0 && bn > 128 + (bn & -bn))
    return "with the 1D2D recipe a block_n above 128 must be 144, 160 or 192 (at most two 128-row SFB blocks)";
  if ((overlap || split != 1) && !is_fp8(s.kind)) return "promotion overlap and split are FP8 options";
  if (split != 1 && split != 2 && split != 4) return "promotion split must be 1, 2 or 4";
  if (bn % split != 0 || (bn / split) % 8 != 0) return "block_n / promotion split must be a multiple of 8";
  const int regs = accumulator_regs(s, bm, bn, math_wg, overlap, split) + 40;
  if (regs > (math_wg == 2 ? 232 : 255)) return "the accumulators do not fit in registers";
  if (cluster != 1 && cluster != 2) return "cluster must be 1 or 2";
  if (split_k != 1 && split_k != 2 && split_k != 4 && split_k != 8) return "split_k must be 1, 2, 4 or 8";
  if (split_k > 1 && cluster != 1) return "split_k needs cluster 1 (its cluster is the split)";
  if (split_k > 1 && cdiv(s.k, 128 / elem_bytes(s.kind)) < split_k) return "split_k exceeds the number of K blocks";
  if (s.type == GemmType::kKGrouped) {
    if (s.kind == GemmKind::kFp8_1D2D) return "K-grouped FP8 GEMMs use the 1D1D recipe";
    if (s.d_dtype != DG_DTYPE_FLOAT32) return "K-grouped GEMMs write FP32 D";
    if (split_k != 1) return "K-grouped GEMMs do not split K";
    if (cluster != 1) return "K-grouped GEMMs run single CTAs (cluster 1)";
  }
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
  if (cluster == 2) {
    if (mc_a && (bm / 2) % (s.major_a == Major::kMN ? 64 : 8) != 0) return "block_m / 2 cannot be multicast";
    if (!mc_a && (bn / 2) % (s.major_b == Major::kMN ? 64 : 8) != 0) return "block_n / 2 cannot be multicast";
  }
  return nullptr;
}

// FP8 grouped problems whose tiles are capped at 192 columns (see choose_gemm_config): all but the
// contiguous form with per-row indices, the one whose tile count the host knows.
bool fp8_grouped_cap(const GemmShape& s) {
  return is_fp8(s.kind) && s.type != GemmType::kNormal && s.type != GemmType::kMGroupedContiguous;
}

// The regime of estimate_small_m_us: at most two 64-row blocks of M (grouped problems: many tiles
// that each read their own B, the large-M model's regime).
bool small_m(const GemmShape& s) { return s.type == GemmType::kNormal && s.m <= 128; }

int max_stages(const GemmShape& s, int bm, int bn, int d_bufs, int split_k) {
  const unsigned budget = kSmemBudget - group_table_bytes(s.type, s.num_groups);
  int stages = 0;
  while (gemm_smem_bytes(s, bm, bn, stages + 1, d_bufs, split_k) <= budget) ++stages;
  return stages;
}

// Rows of tiles of bm rows the problem is expected to have: the whole M of a dense or contiguous
// problem (groups padded to 128), expected_m per group for psum and masked groups, M per group for
// K-grouped problems.
int64_t expected_m_blocks(const GemmShape& s, int bm) {
  if (s.type == GemmType::kNormal || s.type == GemmType::kMGroupedContiguous) return cdiv(s.m, bm);
  if (s.type == GemmType::kKGrouped) return s.num_groups * cdiv(s.m, bm);  // each group's [M, N] tiles
  return s.num_groups * cdiv(std::max<int64_t>(s.expected_m, 1), bm);
}

// Small M (at most two 64-row blocks, i.e. M <= 128): every B tile is read once and the time is set
// by how fast each CTA's TMA pipeline turns over, not by tensor cores or L2 reuse. Per K block a CTA
// needs at least ~0.10 us (a measured floor), its shared-memory fill (the whole A box,
// out-of-bounds rows included, plus the B box; 128 bytes per row for both dtypes) at ~100 GB/s per
// SM, and ~0.6 us of load latency spread over the stages in flight: small block_n tiles give more
// CTAs but each streams only a few bytes per turnaround, large ones leave SMs idle, and deep
// pipelines pay. A 2-CTA cluster only couples two pipelines here (B is streamed once either way):
// ~7% slower. Fitted on an H100 to a sweep of 1974 (shape, config) runs of the 14 DeepSeek small-M
// BF16/FP8 shapes (block_m 64/128, block_n 16..256, 4..22 stages, cluster 1/2); the large-M model
// below mispredicted these (it chose multicast pairs and small tiles: 0.72x cuBLASLt at M = 1).
//
// Split-K (a cluster of split_k CTAs per tile, one tile per CTA) divides each CTA's K blocks and
// pays a cluster barrier and a DSMEM reduction of the partial tile.
double estimate_small_m_us(const GemmShape& s, int bm, int bn, int cluster, bool mc_a, bool overlap, int split,
                           int stages, int num_sms, int split_k) {
  const bool fp8 = is_fp8(s.kind);
  const int eb = elem_bytes(s.kind), bk = 128 / eb;
  const int64_t mb = cdiv(s.m, bm), nb = cdiv(s.n, bn);
  const int pm = cluster == 2 && !mc_a ? 2 : 1, pn = cluster == 2 && mc_a ? 2 : 1;
  const int64_t slots = split_k > 1 ? resident_clusters(num_sms, split_k) : num_sms / cluster;
  const int64_t rounds = cdiv(cdiv(mb, pm) * cdiv(nb, pn), slots);
  const int64_t kbs = cdiv(cdiv(s.k, bk), split_k);
  const double peak = fp8 ? 11.0e12 : 5.9e12;
  double promo = 1.0;
  if (fp8) {
    if (overlap) promo = split == 1 ? 1.05 : split == 2 ? 1.6 : 1.5;
    else promo = split == 1 ? 1.6 : split == 2 ? 1.18 : 1.3;
  }
  const double fill = double(bm + bn) * bk * eb;
  const double t_kb = std::max({0.10e-6, fill / 101e9, 2.0 * bm * bn * bk / peak * promo * 1.25, 0.6e-6 / stages});
  double t_epi = 0.8e-6 + (s.accumulate ? double(bm) * bn * out_bytes(s) / 60e9 : 0.0);
  if (split_k > 1) t_epi += kSplitKReduceUs * 1e-6 + double(std::min<int64_t>(bm, s.m)) * bn * 4 / 100e9;
  double t = double(rounds) * (double(kbs) * t_kb + t_epi);
  if (cluster == 2) t *= 1.07;
  return (t + 12e-6) * 1e6;
}

// Estimated microseconds (cost model calibrated on an H100: compute and SM-delivery bounds per
// K block, wave quantisation over persistent rounds, an epilogue term and a DRAM floor).
double estimate_us(const GemmShape& s, int bm, int bn, int math_wg, int cluster, bool mc_a, bool overlap, int split,
                   int stages, int d_bufs, int num_sms, int split_k) {
  if (small_m(s)) return estimate_small_m_us(s, bm, bn, cluster, mc_a, overlap, split, stages, num_sms, split_k);
  const bool fp8 = is_fp8(s.kind);
  const int eb = elem_bytes(s.kind), bk = 128 / eb;
  const int64_t mb = expected_m_blocks(s, bm), nb = cdiv(s.n, bn);
  const int pm = cluster == 2 && !mc_a ? 2 : 1, pn = cluster == 2 && mc_a ? 2 : 1;
  const int64_t units = cdiv(mb, pm) * cdiv(nb, pn);
  // Masked split tail: a persistent grid of CTA pairs; whole K blocks except in a short last round.
  const bool tail = s.type == GemmType::kMGroupedMasked && split_k == 2;
  const int64_t slots = tail ? num_sms / 2 * 2 : split_k > 1 ? resident_clusters(num_sms, split_k) : num_sms / cluster;
  const int64_t rounds = cdiv(units, slots);
  const int64_t kbs = tail ? cdiv(s.k, bk) : cdiv(cdiv(s.k, bk), split_k);
  const double peak = fp8 ? 11.0e12 : 5.9e12;  // sustained FLOP/s per SM
  // FP8 promotion cost (calibrated on an H100 against 128x128 with overlap): without overlap one
  // warp-group's promotion stalls its WGMMAs unless column slices let the two groups interleave;
  // overlap with slices re-reads A from shared memory.
  double promo = 1.0;
  if (fp8) {
    // Overlapped 192-wide tiles in two 96-column slices cost 1.12 (promotion sweeps of
    // bench/models/h100); other sliced tiles re-read A per slice for less work and cost more.
    if (overlap) promo = split == 1 ? 1.05 : split == 2 ? (bn == 192 ? 1.12 : 1.6) : 1.25;
    else promo = split == 1 ? 1.3 : split == 2 ? 1.18 : 1.3;
    // 256x128 in row units (sm90_gemm.cuh kPromoteRows) ran 2-4% faster than the overlapped 128x192
    // tiles on five of the seven DeepSeek shapes at M = 8192 (H100, bench/peer_bench.py dense).
    if (promotes_rows(bm, math_wg, overlap, split)) promo = 1.08;
    // M-grouped contiguous (per-row indices): 128x256 tiles promoted after their WGMMAs in two slices
    // ran 2-9% faster than the overlapped 128x192 tiles on the eight contiguous FP8 sets where this
    // picks them (H100, bench/peer_bench.py contiguous --alt, same process; mean of two runs with the
    // two contenders in either order), where the dense calibration ranks them the other way.
    if (s.type == GemmType::kMGroupedContiguous && !overlap && split == 2 && bn == 256) promo = 1.13;
    // 1D2D tiles straddling two SFB rows get a K loop per boundary (no per-group selects,
    // sm90_gemm.cuh): measured ~10% faster for 128x160 and 128x192 (2026-11-23); only 128x192 (2
    // boundaries) then beat the wider and overlapped tiles, so only the cost of <= 2 is lowered.
    const uint32_t bounds = s.kind == GemmKind::kFp8_1D2D && 128 % bn != 0 ? sfb_boundaries(s.n, bn) : 0;
    if (!overlap && split == 1 && bounds != 0 && __builtin_popcount(bounds) <= 2) promo = 1.15;
    // 1D1D (a scale per column of B): whole tiles promoted after their WGMMAs ran the six K-grouped
    // sets 4-15% faster at 128x192 than 128x128 overlapped, 0-13% at 128x160 (H100, bench/peer_bench.py
    // k-grouped with forced configs), where the 1D2D constants had ranked 128x128 first. The per-K-block
    // cost of promotion outside the per-element work (scale loads, barrier and WGMMA waits) is
    // shared by the tile's columns.
    if (s.kind == GemmKind::kFp8_1D1D && !overlap && split == 1) promo = 1.06 + 16.0 / bn;
    // Tiles narrower than 128 columns ran ~12% slower than these bounds predict (H100, 2026-11-23).
    if (bn < 128) promo *= 1.12;
  } else {
    // Wider BF16 tiles issue fewer instructions and move fewer bytes per FLOP; at the same number of
    // rounds 128x256 beat 128x160-224 by 3-8% on an H100 (2026-11-23).
    promo = (1.0 + 24.0 / bn) / (1.0 + 24.0 / 128);
  }
  const double flops = 2.0 * bm * bn * bk;
  // Operand bytes each SM receives per K block (a multicast half still lands in both CTAs' shared
  // memory). The L2 itself was not the limit: 128x144 tiles without multicast ran 4096x576x7168
  // at ~85 GB/s per SM (BF16), as fast as cuBLASLt, where an L2 bound that credited multicast had
  // predicted them 40% slower (H100, 2026-11-23).
  const double sm_bytes = double(bm + bn) * bk * eb;
  // WGMMA operand reads from shared memory (A is re-read for every column slice), ~128 B/clk.
  // Row units read A once per K block.
  const double a_reads = promotes_rows(bm, math_wg, overlap, split) ? 1.0 : double(split);
  const double smem_reads = double(math_wg) * (a_reads * (bm / math_wg) + double(bn) * (bm / math_wg / 64)) * 128;
  double t_kb = std::max({flops / peak * promo, sm_bytes / (fp8 ? 68e9 : 80e9), smem_reads / 150e9});
  if (stages < 4) t_kb *= 1.0 + 0.04 * (4 - stages);
  // 1D1D tiles with four stages ran 0.2-6% behind 128x160 with five: 128x192 on the six K-grouped
  // FP8 sets with K >= 2048 per group (H200, bench/models/h200).
  if (s.kind == GemmKind::kFp8_1D1D && stages < 5) t_kb *= 1.03;
  // The epilogue's TMA stores move strips of strip_elems columns; strips under 64 bytes (BF16
  // 128x240: 16 columns) cost about twice per byte (+~1 us per tile on an H100). FP32 reduce-adds
  // (D +=) cost more in 64-byte strips, and through two rotating strip buffers than with the whole
  // tile staged: K-grouped FP8 with C on an H200 (bench/models/h200), at K = 1024 per group 128x144
  // and 128x176 ran 14-18% behind 128x128 (whole tile), 128x160 and 128x192 (rotating) 4-6%; at
  // K >= 4096 128x160 ran from 2% ahead of 128x128 to 1% behind. Dense FP32 += calls share this
  // epilogue and these terms.
  const int strip_bytes = strip_elems(out_bytes(s), bn) * out_bytes(s);
  const bool fp32_reduce = s.accumulate && s.d_dtype == DG_DTYPE_FLOAT32;
  const double strip_cost = strip_bytes < 64 ? 2.0 : fp32_reduce && strip_bytes < 128 ? 1.5 : 1.0;
  const double staging_cost = fp32_reduce && d_bufs > 0 ? 1.4 : 1.0;
  double t_epi = 0.6e-6 + double(bm) * bn * out_bytes(s) * (s.accumulate ? 2 : 1) / 60e9 * strip_cost * staging_cost;
  // 1D1D promotion overlapped with the next K block's WGMMAs leaves the tile's last one exposed:
  // 128x128 overlapped ran 2-3% behind the same tiles promoted after their WGMMAs at K = 1024-2048
  // per group, from 1.6% ahead to 0.5% behind at K >= 4096 (the same runs).
  if (s.kind == GemmKind::kFp8_1D1D && overlap) t_epi += 0.3 * t_kb;
  const double t_reduce = kSplitKReduceUs * 1e-6 + double(bm) * bn * 4 / 100e9;
  if (split_k > 1 && !tail) t_epi += t_reduce;
  double t = double(rounds) * (double(kbs) * t_kb + t_epi) + 3e-6;
  // Split tail: a last round at most half full runs half of the K blocks per CTA, then a reduction.
  // The fill of the last round is known only on the device; with counts spread around the hint it is
  // at most half full about half of the time. At equal tiles and no split the variant ran 3.7% slower
  // (H100, FP8 128x160, two rounds; with a split last round 12.6% faster than single CTAs).
  if (tail) t = t * 1.04 - 0.5 * (double(kbs - cdiv(kbs, 2)) * t_kb - t_reduce);
  // Multicast pairs never beat the same tiles without them on the H100 (2026-11-23: equal within 1%
  // on the large shapes, 7-15% slower at N = 576 and 2112 where the pairs' pipelines run in
  // lockstep for a single round), so the heuristic considers them only when an override asks.
  // FP8 128x192 pairs (promoted after the WGMMAs, one slice) measured 0.86-1.02 of the heuristic's
  // single CTAs at M = 2048 / 4096 in one run. M-grouped contiguous pairs with a run-time stage
  // compile with the consumers' stage in vector registers (~219 R2UR in the SASS against ~20; the
  // per-row group reads reaching the producer's addresses tip ptxas). The stage-aligned K loop has
  // no run-time stage and compiles them clean (27 R2UR), yet DeepGEMM's own contiguous config
  // (128x192 pairs sharing B, one slice promoted after the WGMMAs) still ran 0.89-1.00 of the
  // heuristic's single CTAs on the contiguous FP8 sets and 0.70-1.04 on dense FP8 (Nsight Compute,
  // G = 4, N = 6144, K = 7168: 3.18M SM cycles against 3.10M single, DeepGEMM's pair 3.00M).
  if (cluster == 2) t *= 1.01;
  // Grouped problems read a B per group and the rows they compute.
  const double rows = s.type == GemmType::kNormal || s.type == GemmType::kMGroupedContiguous ? double(s.m)
                      : s.type == GemmType::kKGrouped ? double(s.num_groups) * s.m
                                                      : double(s.num_groups) * std::max<int64_t>(s.expected_m, 1);
  const double b_mats = s.type == GemmType::kNormal ? 1.0 : double(s.num_groups);
  const double dram = (rows * s.k * eb + b_mats * s.n * s.k * eb +
                       rows * s.n * out_bytes(s) * (s.accumulate ? 2 : 1)) / 2.8e12;
  return std::max(t, dram) * 1e6;
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
  const int eb = elem_bytes(s.kind), bk = 128 / eb;
  const int strip = strip_elems(out_bytes(s), bn);
  const int strips = d_bufs > 0 && d_bufs < bn / strip ? d_bufs : bn / strip;
  const unsigned a = bm * bk * eb, b = bn * bk * eb;
  const unsigned sfa = is_fp8(s.kind) ? static_cast<unsigned>(align_up(bm * 4, 128)) : 0;
  // 1D1D: per-column scales; 1D2D: the tile's two SFB scalars (mirrors Sm90GemmTraits::kSmemSfb).
  const unsigned sfb = s.kind == GemmKind::kFp8_1D1D ? static_cast<unsigned>(align_up(bn * 4, 128))
                       : s.kind == GemmKind::kFp8_1D2D ? 16 : 0;
  const unsigned ring = stages * (a + b + sfa + sfb), barriers = stages * 16;
  const unsigned staging = static_cast<unsigned>(int64_t(bm) * strip * strips * out_bytes(s));
  if (split_k > 1) {
    // The FP32 partial tile with padded rows (mirrors Sm90GemmTraits::kRedPitch) overlays the ring; a
    // masked split tail also stages its whole tiles' epilogue.
    const unsigned red_pitch = bn * 4 + ((bn * 4) % 64 == 0 ? 32 : 0);
    return (s.type == GemmType::kMGroupedMasked ? staging : 0u) +
           std::max(ring, static_cast<unsigned>(bm) * red_pitch) + barriers;
  }
  return staging + ring + barriers;
}

dg_status choose_gemm_config(const GemmShape& s, int num_sms, const GemmOverride& o, GemmConfig* out) {
  if (o.num_sms < 0 || o.num_sms > num_sms)
    return fail(DG_ERROR_INVALID_ARGUMENT, "options.num_sms: {} (expected 0..{})", o.num_sms, num_sms);
  if (o.num_sms > 0) num_sms = o.num_sms;
  if (o.block_m < 0 || o.block_n < 0 || o.stages < 0 || o.cluster < 0 || o.math_wg < 0 || o.multicast_a < -1 ||
      o.multicast_a > 1)
    return fail(DG_ERROR_INVALID_ARGUMENT,
                "options: block_m {}, block_n {}, num_stages {}, cluster {}, num_math_warpgroups {}, multicast_a {} "
                "(expected >= 0, multicast_a -1, 0 or 1)",
                o.block_m, o.block_n, o.stages, o.cluster, o.math_wg, o.multicast_a);
  // Validate explicit values on their own first, so that the message names the option.
  if (o.block_m && o.block_m != 64 && o.block_m != 128 && o.block_m != 256)
    return fail(DG_ERROR_INVALID_ARGUMENT, "options.block_m: {} (expected 64, 128 or 256)", o.block_m);
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
  if (o.split_k > cdiv(s.k, 128 / elem_bytes(s.kind)))
    return fail(DG_ERROR_INVALID_ARGUMENT, "options.split_k: {} exceeds the {} K blocks of {} (expected at most that)",
                o.split_k, cdiv(s.k, 128 / elem_bytes(s.kind)), 128 / elem_bytes(s.kind));
  if (o.split_k > 1 && o.cluster == 2)
    return fail(DG_ERROR_INVALID_ARGUMENT, "options.split_k: {} needs cluster 1 (options.cluster is 2)", o.split_k);
  if ((o.fp8_promotion || o.promotion_slices) && !is_fp8(s.kind))
    return fail(DG_ERROR_INVALID_ARGUMENT, "options.fp8_promotion / fp8_promotion_slices: FP8 GEMMs only (expected 0)");

  // Split-K is chosen by a measured rule, not by the cost model (which mispredicted it both ways):
  // over the tiles of one column of 64-row blocks (64x128 for M <= 64, 64x64 up to M = 128), the
  // most CTAs per tile (2, 4, 8) that keeps the grid at <= 112 CTAs and >= 896 of K (7 FP8 K
  // blocks) per CTA. On an H100 (the DeepSeek shapes, 10 configs each, bench/models/h100/split-k-*): at
  // M = 1 the best config on 5 of 6 shapes (FP8 N = 576: 14.9 -> 10.7 us; BF16 N = 4096: 36.4 ->
  // 27.0 us), 3-9% behind the best on 7168x2048; at M = 128 it splits only N = 576 (FP8 13.6 ->
  // 12.0 us, BF16 20.0 -> 13.2 us), where splitting won; split tiles lost on the other M = 128 shapes.
  const bool any_override = o.block_m || o.block_n || o.stages || o.cluster || o.math_wg || o.multicast_a >= 0 ||
                            o.fp8_promotion || o.promotion_slices || o.split_k;
  if (!any_override && s.m <= 128 && s.type == GemmType::kNormal) {
    const int bn = s.m <= 64 ? 128 : 64;
    const int64_t tiles = cdiv(s.m, 64) * cdiv(s.n, bn);
    int sk = 1;
    for (int c : {2, 4, 8})
      if (tiles * c <= 112 && s.k / c >= 896 && resident_clusters(num_sms, c) >= tiles) sk = c;
    if (sk > 1) {
      GemmOverride split = o;
      split.block_m = 64, split.block_n = bn, split.cluster = 1, split.split_k = sk;
      if (choose_gemm_config(s, num_sms, split, out) == DG_SUCCESS) return DG_SUCCESS;
    }
  }

  const bool fp8 = is_fp8(s.kind);
  // block_m 256 is legal for both dtypes; BF16 never ran fastest with it on an H100 (only by override).
  // FP8 1D2D 256x128 in row units ran 2-4% faster than the 128-row tiles at M = 8192, 0.2-3.7% faster
  // than 128x256 and 128x192 on the five large DeepSeek shapes at M = 4096 (H100, bench/peer_bench.py
  // dense, one process; the sweep bench/models/h100/tiles-m4096-fp8.json agrees) and mixed at
  // M = 2048 (-2% .. +6%): a candidate from M = 4096.
  std::vector<int> bms = {64, 128};
  if (s.type == GemmType::kNormal && s.kind == GemmKind::kFp8_1D2D && s.m >= 4096) bms.push_back(256);
  if (s.type == GemmType::kMGroupedContiguous || s.type == GemmType::kMGroupedContiguousPsum) bms = {128};
  if (o.block_m) bms = {o.block_m};
  std::vector<int> bns;
  // FP8 grouped: at most 192 columns. With few rows per group the tile count, not the per-tile
  // rate, sets the time: 128x256 tiles ran masked G = 1-2, m ~ 1024, N = 6144 at 0.75x DeepGEMM's
  // 128x192 on an H100 (bench/peer_bench.py), where the cost model had preferred them. Contiguous
  // problems with per-row indices are exempt: the host counts their tiles (psum and masked groups
  // are counted from the expected_m hint).
  const int bn_max = fp8_grouped_cap(s) ? 192 : 256;
  if (o.block_n) bns = {o.block_n};
  else
    for (int bn = 16; bn <= bn_max; bn += 16)
      bns.push_back(bn);

  GemmConfig best;
  double best_t = 0;
  const char* last_reason = "no candidate";
  auto consider = [&](int bm, int bn, int wg, int cl, int mca, int ov, int split, int sk) {
    if (const char* why = illegal(s, bm, bn, wg, cl, mca, ov, split, sk)) {
      last_reason = why;
      return;
    }
    // Small M streams B: deeper pipelines keep more bytes in flight per CTA (measured up to 22
    // stages); large M keeps the cap of 12 it was tuned with.
    const int cap = small_m(s) ? 32 : 12;
    int stages = std::min(max_stages(s, bm, bn, 0, sk), cap), d_bufs = 0;
    // Wide tiles: two rotating epilogue strips instead of the whole tile leave room for another
    // stage or two (128x256: 3 -> 4). Split-K stages no D, but for a masked split tail's whole tiles.
    const bool staged = sk == 1 || s.type == GemmType::kMGroupedMasked;  // whole tiles through the staging
    if (staged && stages < kRotateBelowStages && std::min(max_stages(s, bm, bn, 2, sk), cap) > stages) {
      stages = std::min(max_stages(s, bm, bn, 2, sk), cap);
      d_bufs = 2;
    }
    if (o.stages) {
      // The explicit stage count decides the staging: the whole tile where it fits, else two
      // rotating strips, else one strip buffer per warp-group (each strip waits for the last store).
      d_bufs = 0;
      if (staged && o.stages > max_stages(s, bm, bn, 0, sk))
        d_bufs = o.stages <= max_stages(s, bm, bn, 2, sk) ? 2 : 1;
      if (o.stages > max_stages(s, bm, bn, d_bufs, sk)) {
        last_reason = "options.num_stages does not fit in shared memory";
        return;
      }
      stages = o.stages;
    }
    if (stages < (o.stages ? 2 : 3)) {
      last_reason = "too few pipeline stages fit in shared memory";
      return;
    }
    const double t = estimate_us(s, bm, bn, wg, cl, mca, ov, split, stages, d_bufs, num_sms, sk);
    if (best.block_m == 0 || t < best_t * 0.995) {
      best_t = t;
      best = GemmConfig{};
      best.block_m = bm;
      best.block_n = bn;
      best.block_k = 128 / elem_bytes(s.kind);
      best.stages = stages;
      best.math_wg = wg;
      best.cluster = cl;
      best.multicast_a = mca;
      best.overlap = ov;
      best.promote_split = split;
      best.d_bufs = d_bufs;
      best.split_k = sk;
      best.estimate_us = t;
    }
  };
  for (int bm : bms)
    for (int bn : bns)
      for (int wg : {1, 2}) {
        if (o.math_wg && wg != o.math_wg) continue;
        if (!o.math_wg && wg != (bm == 64 ? 1 : 2)) continue;
        for (int cl : {1, 2}) {
          if (o.cluster && cl != o.cluster) continue;
          if (cl == 2 && num_sms < 2) continue;
          // Multicast pairs never beat single CTAs on the H100 (estimate_us): only an override of
          // cluster or multicast_a asks for them.
          if (cl == 2 && !o.cluster && o.multicast_a < 0) continue;
          for (int mca : {0, 1}) {
            if (cl == 1 && mca == 1) continue;
            if (cl == 2 && o.multicast_a >= 0 && mca != o.multicast_a) continue;
            // Multicast only pays with tiles to pair up.
            if (cl == 2 && !o.cluster && (mca ? cdiv(s.n, bn) : cdiv(s.m, bm)) < 2) continue;
            for (int variant = 0; variant < 6; ++variant) {
              // FP8 promotion variants, best first: overlap with whole/half/quarter slices, then none.
              static const int kOv[6] = {1, 1, 1, 0, 0, 0}, kSplit[6] = {1, 2, 4, 1, 2, 4};
              const int ov = kOv[variant], split = kSplit[variant];
              if (!fp8 && (ov || split != 1)) continue;
              if (o.fp8_promotion && ov != (o.fp8_promotion == DG_FP8_PROMOTION_OVERLAP)) continue;
              if (o.promotion_slices && split != o.promotion_slices) continue;
              // Measured on an H100: two slices pay for the 256-wide tile without overlap (two warp-
              // groups interleave their promotions) and for the 1D2D 192-wide tile with overlap (3%
              // faster than after-promotion on all seven M = 4096 shapes);
              // other sliced variants lose to the whole-tile ones, so only an override reaches them.
              const bool sliced_ok = split == 2 && (ov ? s.kind == GemmKind::kFp8_1D2D && bn == 192
                                                       : bn == 256 || promotes_rows(bm, wg, ov, split));
              if (fp8 && !o.promotion_slices && split != 1 && !sliced_ok) continue;
              // Masked problems may split their last round (split_k 2) where the estimate says it
              // pays (few rounds): single CTAs come first and keep ties (DRAM-bound calls).
              const bool tail_ok = !o.split_k && s.type == GemmType::kMGroupedMasked && num_sms >= 2;
              for (int sk : {1, 2, 4, 8}) {
                if (o.split_k && sk != o.split_k) continue;
                if (sk != (o.split_k ? o.split_k : 1) && !(tail_ok && sk == 2)) continue;
                if (sk == 2 && s.type == GemmType::kMGroupedMasked && num_sms < 2) {
                  last_reason = "the masked split tail runs CTA pairs: it needs options.num_sms >= 2";
                  continue;
                }
                consider(bm, bn, wg, cl, mca, ov, split, sk);
              }
            }
          }
        }
      }
  if (best.block_m == 0) {
    if (o.block_m || o.block_n || o.stages || o.cluster || o.math_wg || o.multicast_a >= 0 || o.fp8_promotion ||
        o.promotion_slices || o.split_k)
      return fail(DG_ERROR_INVALID_ARGUMENT, "options: the explicit kernel config cannot run this problem: {}",
                  last_reason);
    return fail(DG_ERROR_UNSUPPORTED, "no SM90 GEMM config fits this problem: {}", last_reason);
  }
  // A masked split tail launches CTA pairs: an even grid.
  const bool tail = s.type == GemmType::kMGroupedMasked && best.split_k == 2;
  const int pair = tail ? 2 : best.cluster;
  best.num_sms = num_sms / pair * pair;
  const int64_t pm = best.cluster == 2 && !best.multicast_a ? 2 : 1, pn = best.cluster == 2 && best.multicast_a ? 2 : 1;
  // Grouped problems: the expected tiles (masked and psum counts live on the device; the grid stays
  // persistent over whatever they turn out to be).
  const int64_t units_m = cdiv(expected_m_blocks(s, best.block_m), pm), units_n = cdiv(cdiv(s.n, best.block_n), pn);
  const int64_t units = units_m * units_n;
  // Split-K grids are not persistent: a cluster of split_k CTAs per tile. A persistent grid whose last
  // wave would be at least half full launches the fewest clusters that keep the wave count, so that
  // every CTA computes the same number of units (as DeepGEMM does). On an H100 (interleaved A/B runs):
  // +0.7-1.5% on 4096x{4096,7168,2112}xK; a nearly empty last wave is better kept:
  // 4096x24576x1536 FP8 (31 full waves + 4 tiles) lost 1.6% on 128 SMs instead of 132.
  const int64_t slots = best.num_sms / best.cluster;
  const int64_t waves = cdiv(units, slots), last_wave = units - (waves - 1) * slots;
  const bool trim = best.split_k == 1 && waves > 1 && 2 * last_wave >= slots && !uses_group_table(s.type);
  // Masked / psum tiles are counted on the device: every SM stays in the grid.
  const int64_t clusters = trim ? cdiv(units, waves) : uses_group_table(s.type) ? slots : std::min(slots, units);
  best.grid = static_cast<int>(tail ? best.num_sms : best.split_k > 1 ? units * best.split_k : clusters * best.cluster);
  // Raster bands: the tiles in flight at once reuse the fewest operand rows from L2.
  const int64_t concurrent = trim ? clusters : slots;
  double best_cost = 1e300;
  // M-grouped problems read a different B per group: bands along M keep a band's few groups (their
  // B tiles and A rows) in L2 while it walks N, where bands along N visit every group's B in every
  // band. On an H100, contiguous BF16 G = 32 (m ~ 256), N = 6144, K = 7168 ran in 1695 us with bands
  // of 8 along N after an L2 flush and 1371 us with 16 along M (DeepGEMM 1510 us, same process).
  for (int along_n = 0; along_n < (is_m_grouped(s.type) ? 1 : 2); ++along_n)
    for (int band : {4, 8, 16}) {
      int64_t rows = along_n ? cdiv(concurrent, band) : band, cols = along_n ? band : cdiv(concurrent, band);
      rows = std::min(rows, units_m);
      cols = std::min(cols, units_n);
      const double cost = double(rows) * pm * best.block_m + double(cols) * pn * best.block_n;
      if (cost < best_cost - 1e-9) {
        best_cost = cost;
        best.raster_band = band;
        best.raster_along_n = along_n;
      }
    }
  best.smem_bytes = gemm_smem_bytes(s, best.block_m, best.block_n, best.stages, best.d_bufs, best.split_k);
  best.threads = 128u * (best.math_wg + 1);
  best.d_strip = strip_elems(out_bytes(s), best.block_n);
  if (s.kind == GemmKind::kFp8_1D2D) best.sfb_boundaries = sfb_boundaries(s.n, best.block_n);
  best.stage_aligned = stage_aligned(s, best);
  *out = best;
  return DG_SUCCESS;
}

}  // namespace dg::ops
