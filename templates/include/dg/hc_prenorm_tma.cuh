// The hyper-connection pre-norm GEMM's streaming kernel (templates/kernels/hc_prenorm_gemm_tma.cu.j2),
// for A and B whose rows TMA can address (16-byte aligned base and row stride). The arithmetic is
// dg/hc_prenorm.cuh's, chunk for chunk (compute(), store_outputs()); what differs is how A arrives.
//
// The kernel reads A once and is bound by DRAM: it has to keep enough bytes in flight per SM. One
// producer warp streams stages of 64 k (two chunks) through a ring of kStages shared-memory slots
// with TMA: A's box is [kRows rows, 64 k] BF16 (one 128-byte row per row of A), B's two boxes are
// [8 * kNTiles rows, 32 k] FP32; both use the 128-byte swizzle, so that the fragment reads below
// touch every bank once per 128 bytes. kMathWarps consumer warps own 16 * kMTiles rows each and read
// their fragments from the slot (lane (g, t) the 16-byte unit 4h + t of rows g and g + 8 for chunk
// h, and units 2t, 2t + 1 of B's row 8j + g: the k order of dg/hc_prenorm.cuh), then free the slot.
// TMA zero-fills what lies past M, N and K, so the loop has no bounds checks; a split whose chunk
// count is odd ends on a stage whose second chunk belongs to the next split, which is skipped.
//
// Without clusters the grid is persistent: at most as many CTAs as the SMs hold at once, each
// walking (row tile, split) work items, so that the ring keeps streaming across items (the next
// item's stages load while the math warps store the last one's sums) and no CTA start leaves an
// SM's memory pipe idle. With kCluster > 1 (unsplit calls and small M, where the work items are
// fewer than the CTAs the GPU holds) the kCluster CTAs of a cluster share one work item: each
// streams a contiguous share of the split's stages, and rank 0 adds the others' partial sums (read
// from their shared memory, in rank order, so results do not depend on timing) before it stores.
#pragma once
#include <dg/hc_prenorm.cuh>
#include <dg/ptx/tma.cuh>

namespace dg::hc {

constexpr int kStageK = 2 * kChunk;  // k per stage: one 128-byte BF16 row of A
constexpr int kSwizzleBytes = 128;
constexpr int kSwizzleAtom = 1024;   // the 128-byte swizzle repeats every 8 rows of 128 bytes

// Host mirror: dg::ops::HcPrenormTmaParams.
struct TmaParams {
  TmaDescriptor a_map;  // BF16 [M, K], box [kStageK, kRows]
  TmaDescriptor b_map;  // FP32 [N, K], box [kChunk, 8 * kNTiles]
  float* d;
  float* s;
  int64_t d_split, d_row;  // elements
  int64_t s_split, s_row;  // elements
  int32_t m, n, k;
  int32_t chunks_per_split;
  int32_t splits;
};

template <int kNTiles, int kMTiles, int kMathWarps, int kStages, int kCluster>
struct TmaTraits {
  static constexpr int kRows = kMathWarps * 16 * kMTiles;
  static constexpr int kMathThreads = kMathWarps * 32;
  static constexpr int kThreads = kMathThreads + 32;  // one producer warp
  static constexpr uint32_t kABytes = kRows * kSwizzleBytes;
  static constexpr uint32_t kBHalfBytes = 8 * kNTiles * kSwizzleBytes;  // one chunk of B
  static constexpr uint32_t kStageBytes = kABytes + 2 * kBHalfBytes;
  // Slack to align the ring to the swizzle atom, the ring, then full and empty barriers.
  static constexpr uint32_t kSmemBytes = kSwizzleAtom + kStages * kStageBytes + 2 * kStages * 8;
  // Per math thread, the values rank 0 gathers from the other CTAs of a cluster.
  static constexpr int kReduceValues = kMTiles * kNTiles * 4 + kMTiles * 2;
  static_assert(kRows <= 256 && 8 * kNTiles <= 256, "a TMA box has at most 256 rows");
  static_assert(kABytes % kSwizzleAtom == 0 && kBHalfBytes % kSwizzleAtom == 0, "boxes start on swizzle atoms");
  static_assert(kCluster == 1 || uint32_t(kReduceValues) * kMathThreads * 4 <= kStages * kStageBytes,
                "the cluster reduction reuses the ring");
};

DG_DEVICE void lds128(uint32_t addr, uint32_t (&r)[4]) {
  asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr));
}

DG_DEVICE void lds128(uint32_t addr, float* r) {
  asm volatile("ld.shared.v4.f32 {%0, %1, %2, %3}, [%4];" : "=f"(r[0]), "=f"(r[1]), "=f"(r[2]), "=f"(r[3]) : "r"(addr));
}

// Chunk h (0, 1) of the stage at `slot`: this lane's A and B fragments. rows: the warp's first row
// in the tile (a multiple of 16, so row % 8 = g for rows g and g + 8).
template <int kMTiles, int kNTiles, uint32_t kABytes, uint32_t kBHalfBytes>
DG_DEVICE void read_chunk(uint32_t slot, int h, int rows, int g, int t, AChunk<kMTiles>& a, BChunk<kNTiles>& b) {
  const uint32_t a_unit = uint32_t((4 * h + t) ^ g) * 16;
#pragma unroll
  for (int mt = 0; mt < kMTiles; ++mt)
#pragma unroll
    for (int hr = 0; hr < 2; ++hr)
      lds128(slot + uint32_t(rows + mt * 16 + hr * 8 + g) * kSwizzleBytes + a_unit, a.v[mt][hr]);
  const uint32_t b_base = slot + kABytes + h * kBHalfBytes;
  const uint32_t lo = uint32_t((2 * t) ^ g) * 16, hi = uint32_t((2 * t + 1) ^ g) * 16;
#pragma unroll
  for (int j = 0; j < kNTiles; ++j) {
    const uint32_t row = b_base + uint32_t(8 * j + g) * kSwizzleBytes;
    lds128(row + lo, b.v[j]);
    lds128(row + hi, b.v[j] + 4);
  }
}

// This CTA's share of one work item: `n_stages` stages from chunk `c_first` of row tile `tile`'s
// split `split`, whose chunks end at `c_end`.
struct Share {
  int tile, split, c_first, c_end, n_stages;
};

template <int kCluster>
DG_DEVICE Share share_of(const TmaParams& p, int tile, int split, uint32_t rank) {
  const int total_chunks = (p.k + kChunk - 1) / kChunk;
  const int c_begin = min(split * p.chunks_per_split, total_chunks);
  const int c_end = min(c_begin + p.chunks_per_split, total_chunks);
  const int split_stages = (c_end - c_begin + 1) / 2;
  const int per_rank = (split_stages + kCluster - 1) / kCluster;
  const int st_begin = min(int(rank) * per_rank, split_stages);
  const int n_stages = min(st_begin + per_rank, split_stages) - st_begin;
  return {tile, split, c_begin + 2 * st_begin, c_end, n_stages};
}

// The producer: one thread issues the share's stages, each into the next slot of the ring once the
// math warps have freed it; `it` counts the stages through the ring over the CTA's work items. A
// streams through L2 once (evict first); B stays.
template <class T, int kStages>
DG_DEVICE void produce(const TmaParams& p, uint8_t* ring, ptx::Mbarrier* full, ptx::Mbarrier* empty, const Share& w,
                       uint32_t& it) {
  for (int s = 0; s < w.n_stages; ++s, ++it) {
    const uint32_t slot = it % kStages;
    if (it >= uint32_t(kStages)) ptx::mbar_wait(&empty[slot], ((it / kStages) - 1) & 1);
    uint8_t* dst = ring + slot * T::kStageBytes;
    const int k0 = (w.c_first + 2 * s) * kChunk;
    ptx::mbar_arrive_expect_tx(&full[slot], T::kStageBytes);
    ptx::tma_load_2d(&p.a_map, &full[slot], dst, k0, w.tile * T::kRows, ptx::kCacheEvictFirst);
    ptx::tma_load_2d(&p.b_map, &full[slot], dst + T::kABytes, k0, 0);
    ptx::tma_load_2d(&p.b_map, &full[slot], dst + T::kABytes + T::kBHalfBytes, k0 + kChunk, 0);
  }
}

// The math warps: the share's stages into acc and sq, each slot freed once read. The two chunks of
// a stage go into separate sums (added at the end), so that their MMAs form two independent chains:
// where a split is a few stages long, the stages land faster than one chain of dependent MMAs
// consumes them. The second chunk of a split's last stage, when it is the next split's, enters as
// zeros, so that the two chunks' instructions interleave in one straight-line body.
template <class T, int kStages, int kMTiles, int kNTiles>
DG_DEVICE void consume(uint32_t ring_addr, ptx::Mbarrier* full, ptx::Mbarrier* empty, const Share& w, int rows,
                       uint32_t& it, float (&acc)[kMTiles][kNTiles][4], float (&sq)[kMTiles][2]) {
  const int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  float acc1[kMTiles][kNTiles][4] = {};
  float sq1[kMTiles][2] = {};
  for (int s = 0; s < w.n_stages; ++s, ++it) {
    const uint32_t slot = it % kStages;
    ptx::mbar_wait(&full[slot], (it / kStages) & 1);
    const uint32_t at = ring_addr + slot * T::kStageBytes;
    const bool second = w.c_first + 2 * s + 1 < w.c_end;  // else the chunk is the next split's
    AChunk<kMTiles> a0, a1;
    BChunk<kNTiles> b0, b1;
    read_chunk<kMTiles, kNTiles, T::kABytes, T::kBHalfBytes>(at, 0, rows, g, t, a0, b0);
    read_chunk<kMTiles, kNTiles, T::kABytes, T::kBHalfBytes>(at, 1, rows, g, t, a1, b1);
    if (!second) {  // zero products and squares (B too: 0 * inf would not be zero)
      a1 = AChunk<kMTiles>{};
      b1 = BChunk<kNTiles>{};
    }
    compute(a0, b0, acc, sq);
    compute(a1, b1, acc1, sq1);
    ptx::mbar_arrive(&empty[slot]);
  }
#pragma unroll
  for (int mt = 0; mt < kMTiles; ++mt) {
#pragma unroll
    for (int j = 0; j < kNTiles; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[mt][j][e] += acc1[mt][j][e];
#pragma unroll
    for (int h = 0; h < 2; ++h) sq[mt][h] += sq1[mt][h];
  }
}

// Cluster CTAs of rank > 0 leave their partial sums in their ring; rank 0 adds them in rank order.
// Every thread of every CTA of the cluster calls this (the cluster barriers count them all).
template <class T, int kMTiles, int kNTiles, int kCluster>
DG_DEVICE void cluster_reduce(uint8_t* ring, bool math, uint32_t rank, float (&acc)[kMTiles][kNTiles][4],
                              float (&sq)[kMTiles][2]) {
  float* red = reinterpret_cast<float*>(ring);  // [value][math thread]
  const int tid = threadIdx.x;
  __syncthreads();  // every slot was read and every TMA load landed: the ring is free
  if (math && rank != 0) {
    int v = 0;
#pragma unroll
    for (int mt = 0; mt < kMTiles; ++mt) {
#pragma unroll
      for (int j = 0; j < kNTiles; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) red[(v++) * T::kMathThreads + tid] = acc[mt][j][e];
#pragma unroll
      for (int h = 0; h < 2; ++h) red[(v++) * T::kMathThreads + tid] = sq[mt][h];
    }
  }
  ptx::cluster_sync();  // the partials are visible cluster-wide
  if (math && rank == 0) {
    const uint32_t mine = ptx::smem_addr(red + tid);
#pragma unroll 1
    for (uint32_t r = 1; r < kCluster; ++r) {
      const uint32_t peer = ptx::map_shared_rank(mine, r);
      int v = 0;
#pragma unroll
      for (int mt = 0; mt < kMTiles; ++mt) {
#pragma unroll
        for (int j = 0; j < kNTiles; ++j)
#pragma unroll
          for (int e = 0; e < 4; ++e) acc[mt][j][e] += ptx::ld_shared_cluster_f32(peer + (v++) * T::kMathThreads * 4);
#pragma unroll
        for (int h = 0; h < 2; ++h) sq[mt][h] += ptx::ld_shared_cluster_f32(peer + (v++) * T::kMathThreads * 4);
      }
    }
  }
  ptx::cluster_sync();  // rank 0 has read them: the other CTAs may exit
}

// Work items are (row tile, split) pairs. With clusters, each cluster takes one: (blockIdx.x /
// kCluster, blockIdx.y), rank r the r-th share of the split's stages. Without, the grid is
// persistent (at most the CTAs the SMs hold at once) and CTA i takes items i, i + gridDim.x, ...
// in tile-fastest order (CTAs at work together read the same split of B), so that the producer
// streams the next item's stages while the math warps store the last one's sums.
template <int kNTiles, int kMTiles, int kMathWarps, int kStages, int kCluster>
DG_DEVICE void run_tma(const TmaParams& p) {
  using T = TmaTraits<kNTiles, kMTiles, kMathWarps, kStages, kCluster>;
  extern __shared__ __align__(1024) uint8_t hc_smem[];
  const uint32_t raw = ptx::smem_addr(hc_smem);
  uint8_t* ring = hc_smem + (kSwizzleAtom - raw % kSwizzleAtom) % kSwizzleAtom;
  const uint32_t ring_addr = ptx::smem_addr(ring);
  auto* full = reinterpret_cast<ptx::Mbarrier*>(ring + kStages * T::kStageBytes);
  auto* empty = full + kStages;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const bool math = warp < kMathWarps;
  const uint32_t rank = kCluster > 1 ? ptx::cluster_ctarank() : 0;

  if (threadIdx.x == 0) {
#pragma unroll
    for (int i = 0; i < kStages; ++i) {
      ptx::mbar_init(&full[i], 1);
      ptx::mbar_init(&empty[i], T::kMathThreads);
    }
    ptx::fence_barrier_init();
  }
  __syncthreads();
  // PDL: A and B may be written by the previous kernel; dependents wait for this grid themselves.
  ptx::grid_dependency_wait();
  ptx::grid_dependency_launch();
  if (!math && lane == 0) {
    ptx::tma_prefetch_descriptor(&p.a_map);
    ptx::tma_prefetch_descriptor(&p.b_map);
  }

  const int tiles = (p.m + T::kRows - 1) / T::kRows;
  const int rows = warp * 16 * kMTiles;  // the warp's first row in the tile
  const int64_t items = kCluster > 1 ? 1 : int64_t(tiles) * p.splits;
  uint32_t it = 0;  // stages through the ring so far
  for (int64_t item = kCluster > 1 ? 0 : blockIdx.x; item < items; item += kCluster > 1 ? 1 : gridDim.x) {
    const int tile = kCluster > 1 ? int(blockIdx.x / kCluster) : int(item % tiles);
    const int split = kCluster > 1 ? int(blockIdx.y) : int(item / tiles);
    const Share w = share_of<kCluster>(p, tile, split, rank);
    float acc[kMTiles][kNTiles][4] = {};
    float sq[kMTiles][2] = {};
    if (!math) {
      if (lane == 0) produce<T, kStages>(p, ring, full, empty, w, it);
      __syncwarp();
    } else {
      consume<T, kStages>(ring_addr, full, empty, w, rows, it, acc, sq);
    }
    if constexpr (kCluster > 1) {
      cluster_reduce<T, kMTiles, kNTiles, kCluster>(ring, math, rank, acc, sq);
      if (rank != 0) return;
    }
    if (math)
      store_outputs(p.d + split * p.d_split, p.s + split * p.s_split, p.d_row, p.s_row, p.m, p.n,
                    tile * T::kRows + rows, acc, sq);
  }
}

}  // namespace dg::hc
