// Persistent tile scheduler for the SM90 GEMMs.
//
// Output tiles are visited in "units": with a 2-CTA cluster a unit is the pair of tiles the two CTAs
// compute together (adjacent along N when they share A through TMA multicast, along M when they share
// B), otherwise one tile. Units are walked in bands of `band` unit-rows (or unit-columns) so that the
// tiles running at the same time reuse each other's operands from L2. Cluster c handles units
// c, c + num_clusters, ... and CTA rank r of the cluster takes tile r of the unit. Both CTAs of a
// cluster always see the same sequence (a tile past the edge of the problem is still computed, on
// TMA zero fill, and its store is clipped), so their pipelines stay in lockstep for multicast.
//
// Split-K (kSplitK > 1, no multicast pair): a unit is one tile whose K blocks are divided among the
// kSplitK CTAs of a cluster; CTA rank r computes share r of them (see `k_range`).
//
// Split tail (masked type with kSplitK == 2, "kTail"): the grid stays persistent, launched as CTA
// pairs. The tiles are counted on the device; when the last round would be at most half full
// (0 < T mod CTAs <= pairs), each CTA first takes its whole tiles of the full rounds (u = CTA,
// CTA + CTAs, ...) and then pair p takes tail tile p, CTA rank r computing half r of its K blocks
// (Tile::split); the pair sums the halves through distributed shared memory. Otherwise every tile
// is whole and the walk is the persistent one. The last round then takes half the time.
//
// The GemmType says how a tile maps to its group and rows (the producer and the consumers of a CTA
// walk the same sequence, so both skip the same tiles):
//   kNormal                   one problem.
//   kMGroupedContiguous       rows of A/D concatenated over groups; `layout[row]` is the row's group
//                             (-1: padding). A 128-row block belongs to the group of its first row;
//                             a block whose first entry is not in [0, G) is skipped (D not written).
//                             Rows of a computed block whose entry differs are written as zeros.
//   kMGroupedContiguousPsum   rows concatenated; `layout[g]` is the end row of group g, which starts
//                             at the previous end aligned up to 128. Ends are read as a running
//                             maximum clamped to M, so bad values cannot overlap groups or leave M.
//   kMGroupedMasked           A/D are [G, max_m, .] flattened to rows; group g's first
//                             clamp(layout[g], 0, max_m) rows are valid.
// For the masked and psum types a table (rows and tile counts per group) is built in shared memory
// at kernel start (build_group_table) and each tile's group is a binary search in it; groups with
// no rows cost nothing, and the tiles of a group are walked in the same bands as a dense problem.
// Grouped GEMMs may pair CTAs along M (a 2-CTA cluster sharing B through multicast): a pair's two
// blocks belong to one group (table types), or, per-row layout, multicast only when both blocks'
// groups agree. A block with no group of its own still runs the pair's pipeline (the two CTAs
// release each other's stages) but is not stored (Tile::store).
//   kKGrouped                 G problems [M, N] over their own K slices (KGroupedScheduler): the
//                             host lists the non-empty groups of a launch in slots, and units are
//                             walked slot after slot, each slot's tiles in bands as a dense problem.
//   kBatched                  `num_groups` independent problems [M, N] (a batch), their operands and
//                             D 3-D maps: the walk's rows of blocks are every batch's blocks, batch
//                             after batch (walk.per_slot: blocks per batch, even with pairs along M,
//                             so that a pair never straddles two batches); Tile::group is the batch.
//   kBatchReduced             one [M, N] problem whose K is a batch of K ranges (D = sum over the
//                             batch): each tile is computed in `num_groups` splits of the K blocks,
//                             unit u being split u / tiles (walk.per_slot: tiles), and every split
//                             adds its partial tile into D; Tile::group is the split.
#pragma once
#include <dg/types.cuh>

namespace dg::sched {

enum class GemmType : int {
  kNormal = 0,
  kMGroupedContiguous = 1,
  kMGroupedMasked = 2,
  kKGrouped = 3,
  kMGroupedContiguousPsum = 4,
  kBatched = 5,
  kBatchReduced = 6,
};

DG_HOST_DEVICE constexpr bool is_batched(GemmType t) { return t == GemmType::kBatched || t == GemmType::kBatchReduced; }

// Row alignment of the groups of the contiguous layouts (dg_get_mk_alignment_for_contiguous_layout).
constexpr uint32_t kMkAlignment = 128;

DG_HOST_DEVICE constexpr bool uses_group_table(GemmType t) {
  return t == GemmType::kMGroupedMasked || t == GemmType::kMGroupedContiguousPsum;
}

// Bytes of the group table for G groups: tile prefix sums [G + 1], first rows [G], valid rows [G].
DG_HOST_DEVICE constexpr uint32_t group_table_bytes(uint32_t num_groups) {
  return ((3 * num_groups + 1) * 4 + 15) / 16 * 16;
}

struct Tile {
  uint32_t m0;        // first row of the tile in A's (and D's) rows
  uint32_t m_local0;  // first row of the tile inside its group (masked: the SFA row); m0 otherwise
  uint32_t n_block;   // tile column index (units of BLOCK_N)
  uint32_t group;     // problem index for grouped GEMMs, 0 otherwise
  uint32_t rows;      // leading rows of the tile that belong to its group (BLOCK_M when all do)
  bool per_row;       // contiguous layout: the last row left the group, check each row's entry
  bool store;         // the tile is written (false: computed only to keep a CTA pair in step)
  bool multicast;     // a CTA pair loads B once for both (both tiles read the same B tile)
  bool split = false; // split tail: this CTA computes half of the tile's K blocks (its cluster rank's)
  uint32_t k_blocks = 0;  // K-grouped: the slot's K blocks (other types: k_range)
  uint32_t sf_kb0 = 0;    // K-grouped: the slot's first K block in SFA / SFB
};

// The groups of one K-grouped launch (kernel parameter space). Slot s is the s-th non-empty group:
// its A and B maps cover only that group's [MN, k_g] matrices, so the K loop starts at 0 and TMA
// clips to the group; `group` indexes D's groups.
constexpr uint32_t kMaxKGroupSlots = 32;
struct alignas(64) KGroupedSlots {
  TmaDescriptor tma_a[kMaxKGroupSlots];
  TmaDescriptor tma_b[kMaxKGroupSlots];
  uint32_t group[kMaxKGroupSlots];
  uint32_t num_kb[kMaxKGroupSlots];
  uint32_t sf_kb0[kMaxKGroupSlots];
  uint32_t num_slots;
};
static_assert(sizeof(KGroupedSlots) == 8640, "the host mirrors this layout (src/ops/gemm.h)");

// Maps unit u of a units_m x units_n grid to its coordinates, walking bands of `band` unit-rows
// (rows fastest inside a band) or unit-columns. Grids fixed for the launch use the overload below,
// whose divisors the host prepares.
DG_DEVICE void raster(uint32_t u, uint32_t units_m, uint32_t units_n, uint32_t band, uint32_t along_n, uint32_t& um,
                      uint32_t& un) {
  if (!along_n) {
    const uint32_t per_band = band * units_n;
    const uint32_t b = u / per_band, in = u % per_band;
    const uint32_t rows = min_of(band, units_m - b * band);
    um = b * band + in % rows;
    un = in / rows;
  } else {
    const uint32_t per_band = band * units_m;
    const uint32_t b = u / per_band, in = u % per_band;
    const uint32_t cols = min_of(band, units_n - b * band);
    un = b * band + in % cols;
    um = in / cols;
  }
}

// Division by a divisor fixed for the launch: a multiply-high, an add and a shift (the round-up method
// of Granlund and Montgomery; mul and shift come from the host, src/ops/gemm.cpp fast_div). A 32-bit
// `/` by a run-time value compiles to ~20 instructions around a MUFU.RCP; the walks below divide twice
// per tile in every consumer thread. Exact for every 32-bit n.
struct FastDiv {
  uint32_t d, mul, shift;
  DG_DEVICE uint32_t div(uint32_t n) const {
    return static_cast<uint32_t>((static_cast<uint64_t>(__umulhi(n, mul)) + n) >> shift);
  }
};

// The divisors of a walk over a grid fixed for the launch (dense, per-row contiguous and K-grouped;
// the table types' grids change with the group and use raster()). Kernel parameter; host mirror in
// src/ops/gemm.h.
struct WalkDivisors {
  FastDiv per_band;    // units per band (band x the units across it)
  FastDiv band;        // lines (unit-rows, or unit-columns along N) of a full band
  FastDiv last;        // lines of the last band
  uint32_t last_band;  // the last band's index
  FastDiv per_slot;    // K-grouped: units per group slot; batched: blocks of rows per batch;
                       // batch-reduced: units per split (last: outside the kernel parameters' first line)
};
static_assert(sizeof(WalkDivisors) == 52, "the host mirrors this layout (src/ops/gemm.h)");

// raster() with the divisors of the launch.
DG_DEVICE void raster(uint32_t u, const WalkDivisors& w, uint32_t along_n, uint32_t& um, uint32_t& un) {
  const uint32_t b = w.per_band.div(u), in = u - b * w.per_band.d;
  const FastDiv& l = b == w.last_band ? w.last : w.band;
  const uint32_t q = l.div(in), line = b * w.band.d + (in - q * l.d);
  um = along_n ? q : line;
  un = along_n ? line : q;
}

// Builds the group table of the masked / psum types with one warp (all 32 lanes call it).
// table: prefix[G + 1] (tiles before group g), first[G] (group g's first row), rows[G].
// masked: first = g * max_m, rows = clamp(layout[g], 0, max_m).
// psum: end'_g = min(max(0, layout[0..g]), M), first_g = min(align(end'_{g-1}, 128), M),
//       rows_g = max(end'_g - first_g, 0).
template <GemmType kType, uint32_t kBlockM, uint32_t kPairM = 1>
DG_DEVICE void build_group_table(uint32_t* table, const int32_t* layout, uint32_t num_groups, uint32_t group_rows,
                                 uint32_t n_units) {
  static_assert(uses_group_table(kType), "the table serves the masked and psum types");
  uint32_t* prefix = table;
  uint32_t* first = table + num_groups + 1;
  uint32_t* rows = first + num_groups;
  const uint32_t lane = threadIdx.x % 32;
  uint32_t tile_carry = 0, end_carry = 0;  // tiles and running end before this chunk
  if (lane == 0) prefix[0] = 0;
  for (uint32_t base = 0; base < num_groups; base += 32) {
    const uint32_t g = base + lane;
    const int32_t raw = g < num_groups ? layout[g] : 0;
    uint32_t f, r;
    if constexpr (kType == GemmType::kMGroupedMasked) {
      f = g * group_rows;
      r = raw < 0 ? 0u : min_of(static_cast<uint32_t>(raw), group_rows);
    } else {
      // Running maximum of the clamped ends (inclusive scan), then each group's start from its
      // predecessor's end.
      uint32_t e = raw < 0 ? 0u : min_of(static_cast<uint32_t>(raw), group_rows);
      e = max_of(e, end_carry);
#pragma unroll
      for (uint32_t d = 1; d < 32; d *= 2) {
        const uint32_t o = __shfl_up_sync(0xffffffffu, e, d);
        if (lane >= d) e = max_of(e, o);
      }
      uint32_t prev = __shfl_up_sync(0xffffffffu, e, 1);
      if (lane == 0) prev = end_carry;
      f = min_of((prev + kMkAlignment - 1) / kMkAlignment * kMkAlignment, group_rows);
      r = e > f ? e - f : 0u;
      end_carry = __shfl_sync(0xffffffffu, e, 31);
    }
    uint32_t tiles = g < num_groups ? ceil_div(ceil_div(r, kBlockM), kPairM) * n_units : 0u;
#pragma unroll
    for (uint32_t d = 1; d < 32; d *= 2) {
      const uint32_t o = __shfl_up_sync(0xffffffffu, tiles, d);
      if (lane >= d) tiles += o;
    }
    if (g < num_groups) {
      prefix[g + 1] = tile_carry + tiles;
      first[g] = f;
      rows[g] = r;
    }
    tile_carry += __shfl_sync(0xffffffffu, tiles, 31);
  }
}

// K-grouped walk: every slot has the same units_m x units_n tiles; unit u is tile u % per_slot of
// slot u / per_slot, so the CTAs running at once mostly share a group's A and B in L2.
template <uint32_t kBlockM>
struct KGroupedScheduler {
  const KGroupedSlots* slots;
  const WalkDivisors* walk;
  uint32_t num_units, along_n, next_unit, step;

  DG_DEVICE KGroupedScheduler(uint32_t along_n_, const WalkDivisors* walk_, const KGroupedSlots* slots_) {
    slots = slots_;
    walk = walk_;
    num_units = walk->per_slot.d * slots->num_slots;
    along_n = along_n_;
    step = gridDim.x;
    next_unit = blockIdx.x;
  }

  // The K range is per tile (Tile::k_blocks).
  DG_DEVICE void k_range(uint32_t, uint32_t& begin, uint32_t& end) const { begin = end = 0; }

  DG_DEVICE bool next(Tile& t) {
    if (next_unit >= num_units) return false;
    const uint32_t u = next_unit, s = walk->per_slot.div(u);
    next_unit += step;
    uint32_t um, un;
    raster(u - s * walk->per_slot.d, *walk, along_n, um, un);
    t.m0 = t.m_local0 = um * kBlockM;
    t.n_block = un;
    t.group = s;
    t.rows = kBlockM;
    t.per_row = false;
    t.store = true;
    t.multicast = true;
    t.k_blocks = slots->num_kb[s];
    t.sf_kb0 = slots->sf_kb0[s];
    return true;
  }
};

template <GemmType kType, uint32_t kBlockM, uint32_t kBlockN, uint32_t kCluster, bool kPairAlongN,
          uint32_t kSplitK = 1>
struct Sm90Scheduler {
  static_assert(kType != GemmType::kKGrouped, "the K-grouped type has its own walk");
  static_assert(kCluster == 1 || kCluster == 2, "clusters of 1 or 2 CTAs");
  static_assert(kSplitK == 1 || kCluster == 1, "split-K clusters do not pair tiles");
  static_assert(!is_batched(kType) || kSplitK == 1, "batched GEMMs do not split K across a cluster");
  static_assert(kType == GemmType::kNormal || is_batched(kType) || ((kSplitK == 1 || (kSplitK == 2 && kType == GemmType::kMGroupedMasked)) &&
                                                (kCluster == 1 || !kPairAlongN)),
                "grouped GEMMs pair CTAs along M only (sharing B); of them only masked ones split (the tail, by 2)");
  static_assert(kType == GemmType::kNormal || kType == GemmType::kMGroupedMasked || is_batched(kType) ||
                    kBlockM == kMkAlignment,
                "contiguous layouts use 128-row blocks, one group each");
  static constexpr bool kTable = uses_group_table(kType);
  static constexpr bool kTail = kTable && kSplitK == 2;  // the split tail (above)
  static constexpr uint32_t kCtasPerUnit = kTail ? 1 : kCluster * kSplitK;
  static constexpr uint32_t kPairM = (kCluster == 2 && !kPairAlongN) ? 2 : 1;
  static constexpr uint32_t kPairN = (kCluster == 2 && kPairAlongN) ? 2 : 1;

  uint32_t units_m, units_n, num_units;
  uint32_t band, along_n;
  const WalkDivisors* walk;  // the non-table types' walk
  uint32_t next_unit, step, rank;
  uint32_t split;  // this CTA's share of each unit's K blocks (split-K, split tail), else 0
  uint32_t whole_units;  // split tail: units [0, whole_units) are whole tiles, the rest split
  static constexpr uint32_t kNoUnit = 0xffffffffu;  // split tail: the pair's tail tile was taken
  // Grouped types.
  const int32_t* layout;
  const uint32_t* table;  // masked / psum: the group table in shared memory
  uint32_t num_groups;
  uint32_t m_total;       // contiguous: rows of A and D
  uint32_t num_splits;    // batch-reduced: the splits of every tile's K blocks
  // Contiguous (per-row layout): the entries of the first rows of the next unit's blocks and of
  // the last row of this CTA's block, loaded one unit ahead so that their latency overlaps the
  // current tile.
  int32_t pf_first[kPairM], pf_last;

  // m, n: the problem (contiguous: m = rows of A; masked: max_m; batched: the batches' blocks of
  // rows). walk_: the divisors of the units_m x units_n walk (not read by the table types).
  // Batch-reduced: num_groups_ is the splits.
  DG_DEVICE Sm90Scheduler(uint32_t m, uint32_t n, uint32_t band_, uint32_t along_n_, const WalkDivisors* walk_,
                          const int32_t* layout_ = nullptr, uint32_t num_groups_ = 0, const uint32_t* table_ = nullptr) {
    const uint32_t m_blocks = ceil_div(m, kBlockM), n_blocks = ceil_div(n, kBlockN);
    units_m = ceil_div(m_blocks, kPairM);
    units_n = ceil_div(n_blocks, kPairN);
    band = band_ == 0 ? 1 : band_;
    along_n = along_n_;
    walk = walk_;
    step = gridDim.x / kCtasPerUnit;
    next_unit = blockIdx.x / kCtasPerUnit;
    rank = blockIdx.x % kCluster;  // cluster dims are (kCtasPerUnit, 1, 1)
    split = blockIdx.x % kSplitK;
    layout = layout_;
    table = table_;
    num_groups = num_groups_;
    m_total = m;
    if constexpr (kTable) {
      num_units = table[num_groups];
      whole_units = num_units;
      if constexpr (kTail) {
        // Split only a last round that would be at most half full; the pairs' ranks are blockIdx.x % 2.
        const uint32_t last = num_units % gridDim.x;
        if (last != 0 && last <= gridDim.x / 2) whole_units = num_units - last;
      }
    } else {
      num_units = units_m * units_n;
    }
    num_splits = kType == GemmType::kBatchReduced ? num_groups_ : 1u;
    num_units *= num_splits;
    if constexpr (kType == GemmType::kMGroupedContiguous) prefetch(next_unit);
  }

  // K blocks [begin, end) of this CTA's share: sizes differ by at most one, none empty if
  // num_kb >= kSplitK (the host guarantees it). A split tail sets them per tile (`tile_k_range`).
  DG_DEVICE void k_range(uint32_t num_kb, uint32_t& begin, uint32_t& end) const {
    begin = split * num_kb / kSplitK;
    end = (split + 1) * num_kb / kSplitK;
  }
  // Split tail: whether this CTA's pair takes a split tile.
  DG_DEVICE bool pair_has_tail() const { return whole_units + blockIdx.x / 2 < num_units; }
  // Batch-reduced: the tile's split (Tile::group) of the K blocks.
  DG_DEVICE void tile_k_range(const Tile& t, uint32_t num_kb, uint32_t& begin, uint32_t& end) const {
    if constexpr (kType == GemmType::kBatchReduced) {
      begin = t.group * num_kb / num_splits;
      end = (t.group + 1) * num_kb / num_splits;
      return;
    }
    begin = t.split ? split * num_kb / 2 : 0;
    end = t.split ? (split + 1) * num_kb / 2 : num_kb;
  }

  DG_DEVICE void prefetch(uint32_t u) {
    if (u < num_units) {
      uint32_t um, un;
      raster(u, *walk, along_n, um, un);
#pragma unroll
      for (uint32_t i = 0; i < kPairM; ++i) {
        const uint32_t m0 = (um * kPairM + i) * kBlockM;
        pf_first[i] = m0 < m_total ? layout[m0] : -1;
      }
      const uint32_t own = (um * kPairM + (kPairM == 2 ? rank : 0)) * kBlockM;
      pf_last = own < m_total ? layout[min_of(own + kBlockM, m_total) - 1] : -1;
    }
  }

  // Tile u of a table type (masked / psum).
  DG_DEVICE void table_tile(uint32_t u, Tile& t) const {
    // The group whose tiles contain u: the last g with prefix[g] <= u.
    uint32_t lo = 0, hi = num_groups;
    while (hi - lo > 1) {
      const uint32_t mid = (lo + hi) / 2;
      if (table[mid] <= u) lo = mid;
      else hi = mid;
    }
    const uint32_t g = lo, first = table[num_groups + 1 + g], rows = table[2 * num_groups + 1 + g];
    uint32_t um, un;
    raster(u - table[g], ceil_div(ceil_div(rows, kBlockM), kPairM), units_n, band, along_n, um, un);
    t.m_local0 = (um * kPairM + (kPairM == 2 ? rank : 0)) * kBlockM;
    t.m0 = first + t.m_local0;
    t.n_block = un;
    t.group = g;
    t.store = t.m_local0 < rows;
    t.rows = t.store ? min_of(kBlockM, rows - t.m_local0) : 0u;
    t.per_row = false;
    t.multicast = true;
    if constexpr (kType == GemmType::kMGroupedContiguousPsum) t.m_local0 = t.m0;
  }

  // Next tile of this CTA; false when the CTA has no more work.
  DG_DEVICE bool next(Tile& t) {
    if constexpr (kTail) {
      // Whole tiles first, then the pair's tail tile (split) once. Written as one path with one exit:
      // with a second return path ptxas kept the consumers' stage and phase in vector registers, and
      // every WGMMA descriptor then crossed to uniform registers (R2UR) first: 20-28% slower.
      uint32_t u = next_unit;
      const bool split_now = u >= whole_units;
      if (split_now) u = next_unit == kNoUnit ? num_units : whole_units + blockIdx.x / 2;
      next_unit = split_now ? kNoUnit : next_unit + step;
      if (u >= num_units) return false;
      t.split = split_now;
      table_tile(u, t);
      return true;
    }
    while (next_unit < num_units) {
      const uint32_t u = next_unit;
      next_unit += step;
      uint32_t um, un;
      if constexpr (kTable) {
        table_tile(u, t);
        return true;
      } else {
        uint32_t split = 0, in = u;
        if constexpr (kType == GemmType::kBatchReduced) {
          split = walk->per_slot.div(u);
          in = u - split * walk->per_slot.d;
        }
        raster(in, *walk, along_n, um, un);
        t.m0 = (um * kPairM + (kPairM == 2 ? rank : 0)) * kBlockM;
        t.m_local0 = t.m0;
        t.n_block = un * kPairN + (kPairN == 2 ? rank : 0);
        t.group = split;
        if constexpr (kType == GemmType::kBatched) {
          const uint32_t block = t.m0 / kBlockM, batch = walk->per_slot.div(block);
          t.group = batch;
          t.m0 = t.m_local0 = (block - batch * walk->per_slot.d) * kBlockM;
        }
        t.rows = kBlockM;
        t.per_row = false;
        t.store = true;
        t.multicast = true;
        if constexpr (kType == GemmType::kMGroupedContiguous) {
          // Each block's group (-1: none); a block without one borrows its partner's, so that the pair
          // stays in step and may still share B.
          int32_t g[kPairM];
#pragma unroll
          for (uint32_t i = 0; i < kPairM; ++i)
            g[i] = pf_first[i] >= 0 && static_cast<uint32_t>(pf_first[i]) < num_groups ? pf_first[i] : -1;
          const int32_t last = pf_last;
          prefetch(next_unit);
          if constexpr (kPairM == 1) {
            if (g[0] < 0) continue;  // padding block: skipped
            t.group = static_cast<uint32_t>(g[0]);
          } else {
            if (g[0] < 0 && g[1] < 0) continue;  // both blocks padding: the pair skips the unit
            const int32_t e0 = g[0] >= 0 ? g[0] : g[1], e1 = g[1] >= 0 ? g[1] : g[0];
            t.store = (rank ? g[1] : g[0]) >= 0;
            t.group = static_cast<uint32_t>(rank ? e1 : e0);
            t.multicast = e0 == e1;
          }
          t.per_row = t.store && last != static_cast<int32_t>(t.group);
        }
        return true;
      }
    }
    return false;
  }
};

}  // namespace dg::sched
