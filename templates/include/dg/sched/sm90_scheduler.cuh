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
// GemmType selects how a tile maps to (group, rows, K range); Normal is one problem. The grouped types
// (M-grouped contiguous / masked, K-grouped) reuse the same walk and add a group lookup.
#pragma once
#include <dg/types.cuh>

namespace dg::sched {

enum class GemmType : int { kNormal = 0, kMGroupedContiguous = 1, kMGroupedMasked = 2, kKGrouped = 3 };

struct Tile {
  uint32_t m_block;  // tile row index (units of BLOCK_M)
  uint32_t n_block;  // tile column index (units of BLOCK_N)
  uint32_t group;    // problem index for grouped GEMMs, 0 otherwise
};

template <GemmType kType, uint32_t kBlockM, uint32_t kBlockN, uint32_t kCluster, bool kPairAlongN,
          uint32_t kSplitK = 1>
struct Sm90Scheduler {
  static_assert(kType == GemmType::kNormal, "only the Normal GEMM type is implemented so far");
  static_assert(kCluster == 1 || kCluster == 2, "clusters of 1 or 2 CTAs");
  static_assert(kSplitK == 1 || kCluster == 1, "split-K clusters do not pair tiles");
  static constexpr uint32_t kCtasPerUnit = kCluster * kSplitK;
  static constexpr uint32_t kPairM = (kCluster == 2 && !kPairAlongN) ? 2 : 1;
  static constexpr uint32_t kPairN = (kCluster == 2 && kPairAlongN) ? 2 : 1;

  uint32_t units_m, units_n, num_units;
  uint32_t band, along_n;
  uint32_t next_unit, step, rank;
  uint32_t split;  // this CTA's share of each unit's K blocks (split-K), else 0

  DG_DEVICE Sm90Scheduler(uint32_t m, uint32_t n, uint32_t band_, uint32_t along_n_) {
    const uint32_t m_blocks = ceil_div(m, kBlockM), n_blocks = ceil_div(n, kBlockN);
    units_m = ceil_div(m_blocks, kPairM);
    units_n = ceil_div(n_blocks, kPairN);
    num_units = units_m * units_n;
    band = band_ == 0 ? 1 : band_;
    along_n = along_n_;
    step = gridDim.x / kCtasPerUnit;
    next_unit = blockIdx.x / kCtasPerUnit;
    rank = blockIdx.x % kCluster;  // cluster dims are (kCtasPerUnit, 1, 1)
    split = blockIdx.x % kSplitK;
  }

  // K blocks [begin, end) of this CTA's share: sizes differ by at most one, none empty if
  // num_kb >= kSplitK (the host guarantees it).
  DG_DEVICE void k_range(uint32_t num_kb, uint32_t& begin, uint32_t& end) const {
    begin = split * num_kb / kSplitK;
    end = (split + 1) * num_kb / kSplitK;
  }

  // Next tile of this CTA; false when the CTA has no more work.
  DG_DEVICE bool next(Tile& t) {
    if (next_unit >= num_units) return false;
    const uint32_t u = next_unit;
    next_unit += step;
    uint32_t um, un;
    if (!along_n) {  // bands of `band` unit-rows; inside a band walk rows fastest
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
    t.m_block = um * kPairM + (kPairM == 2 ? rank : 0);
    t.n_block = un * kPairN + (kPairN == 2 ? rank : 0);
    t.group = 0;
    return true;
  }
};

}  // namespace dg::sched
