// The hyper-connection pre-norm GEMM's device code (templates/kernels/hc_prenorm_gemm.cu.j2 holds
// the entry point): BF16 A [M, K] times FP32 B [N, K] (N <= 32) into FP32 D [splits, M, N], with
// each row's sum of squares of A into S [splits, M]: split s covers the chunks (32 k each)
// [s * cps, (s + 1) * cps).
//
// The work is bound by reading A once: per element of A it does N multiply-adds, more than FP32
// FMA units keep up with at DRAM speed for N = 24, so the products run on tensor cores as TF32
// mma.sync m16n8k8 (BF16 -> TF32 is exact; B is rounded to nearest TF32). Each warp owns
// 16 * M_TILES rows and walks every chunk of its split; a block of WARPS warps shares the chunks
// of B (loaded through L1, the same lines for every warp). Nothing goes through shared memory.
//
// K order inside a chunk is free (the sum does not care), so each lane loads 16 contiguous bytes
// of a row: lane (g, t) = (lane / 4, lane % 4) holds A[row g][8t .. 8t+7] and the same for row
// g + 8, and B[n = 8j + g][8t .. 8t+7] per tile j of 8 columns. MMA step s (0..3) gives k-slot t
// the element 8t + 2s and k-slot t + 4 the element 8t + 2s + 1, for A and B alike.
// A is loaded STAGES chunks ahead (registers), B one chunk ahead; a partial last chunk of K is
// loaded element by element with zeros past K. Rows past M and columns past N read the last valid
// row (never stored), so the main loop has no bounds checks.
//
// Numerics: A exact in TF32; B rounded to nearest TF32 (relative error <= 2^-11); products and
// sums in FP32 on the tensor cores, chunk partials accumulated in FP32 in the MMA's registers.
// Squares of BF16 are exact in FP32; S sums them with FP32 FMAs per lane and an FP32 reduction
// over the four lanes of a row.
#pragma once
#include <dg/ptx/common.cuh>

namespace dg::hc {

constexpr int kChunk = 32;    // k per chunk: 4 MMA steps of 8
constexpr int kPerLane = 8;   // k per lane per chunk

// Host mirror: dg::ops::HcPrenormParams.
struct Params {
  const uint16_t* a;  // BF16 bits
  const float* b;
  float* d;
  float* s;
  int64_t lda, ldb;          // elements between rows
  int64_t d_split, d_row;    // elements
  int64_t s_split, s_row;    // elements
  int32_t m, n, k;
  int32_t chunks_per_split;
};

DG_DEVICE void load_a16(const uint16_t* p, uint32_t (&r)[4]) {
  asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "l"(p));
}

DG_DEVICE void load_b16(const float* p, float* r) {
  asm volatile("ld.global.nc.v4.f32 {%0, %1, %2, %3}, [%4];" : "=f"(r[0]), "=f"(r[1]), "=f"(r[2]), "=f"(r[3]) : "l"(p));
}

DG_DEVICE uint32_t load_u16(const uint16_t* p) {
  uint16_t v;
  asm volatile("ld.global.nc.u16 %0, [%1];" : "=h"(v) : "l"(p));
  return v;
}

DG_DEVICE float load_f32(const float* p) {
  float v;
  asm volatile("ld.global.nc.f32 %0, [%1];" : "=f"(v) : "l"(p));
  return v;
}

// Eight BF16 at p (k0 = the k of the first). kGuard: zeros where k >= limit (the partial last
// chunk); without it all eight are inside K. kVec: one 16-byte load where all eight are inside K.
template <bool kVec, bool kGuard>
DG_DEVICE void load_a8(const uint16_t* p, int k0, int limit, uint32_t (&r)[4]) {
  if (kVec && (!kGuard || k0 + kPerLane <= limit)) {
    load_a16(p, r);
    return;
  }
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const uint32_t lo = !kGuard || k0 + 2 * i < limit ? load_u16(p + 2 * i) : 0u;
    const uint32_t hi = !kGuard || k0 + 2 * i + 1 < limit ? load_u16(p + 2 * i + 1) : 0u;
    r[i] = lo | (hi << 16);
  }
}

template <bool kVec, bool kGuard>
DG_DEVICE void load_b8(const float* p, int k0, int limit, float (&r)[8]) {
  if (kVec && (!kGuard || k0 + kPerLane <= limit)) {
    load_b16(p, r);
    load_b16(p + 4, r + 4);
    return;
  }
#pragma unroll
  for (int i = 0; i < 8; ++i) r[i] = !kGuard || k0 + i < limit ? load_f32(p + i) : 0.0f;
}

DG_DEVICE uint32_t to_tf32(float x) {
  uint32_t r;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x));
  return r;
}

DG_DEVICE void mma_tf32(float (&acc)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};"
      : "+f"(acc[0]), "+f"(acc[1]), "+f"(acc[2]), "+f"(acc[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

struct Full { static constexpr bool value = false; };    // every k of the chunk is inside K
struct Guarded { static constexpr bool value = true; };  // the partial last chunk

template <int kMTiles> struct AChunk { uint32_t v[kMTiles][2][4]; };  // 8 BF16 of rows g, g + 8 per tile
template <int kNTiles> struct BChunk { float v[kNTiles][8]; };         // 8 floats of row 8j + g

// One chunk: 4 MMA steps per (row tile, column tile), and the squares of this lane's A elements.
template <int kMTiles, int kNTiles>
DG_DEVICE void compute(const AChunk<kMTiles>& a, const BChunk<kNTiles>& b, float (&acc)[kMTiles][kNTiles][4],
                       float (&sq)[kMTiles][2]) {
#pragma unroll
  for (int step = 0; step < 4; ++step) {
    // B's k-slots t and t + 4 of this step, rounded to TF32 where they are used.
    uint32_t b0[kNTiles], b1[kNTiles];
#pragma unroll
    for (int j = 0; j < kNTiles; ++j) {
      b0[j] = to_tf32(b.v[j][2 * step]);
      b1[j] = to_tf32(b.v[j][2 * step + 1]);
    }
#pragma unroll
    for (int mt = 0; mt < kMTiles; ++mt) {
      // BF16 pair (2s, 2s + 1) of rows g and g + 8: the bits of the FP32 (= TF32) values.
      const uint32_t w0 = a.v[mt][0][step], w1 = a.v[mt][1][step];
      const uint32_t frag[4] = {w0 << 16, w1 << 16, w0 & 0xffff0000u, w1 & 0xffff0000u};
      sq[mt][0] = fmaf(__uint_as_float(frag[0]), __uint_as_float(frag[0]), sq[mt][0]);
      sq[mt][0] = fmaf(__uint_as_float(frag[2]), __uint_as_float(frag[2]), sq[mt][0]);
      sq[mt][1] = fmaf(__uint_as_float(frag[1]), __uint_as_float(frag[1]), sq[mt][1]);
      sq[mt][1] = fmaf(__uint_as_float(frag[3]), __uint_as_float(frag[3]), sq[mt][1]);
#pragma unroll
      for (int j = 0; j < kNTiles; ++j) mma_tf32(acc[mt][j], frag, b0[j], b1[j]);
    }
  }
}

// The epilogue of both kernels: the row sums of squares (the four lanes of a row group hold
// disjoint k) and this warp's D rows, rows and columns past M and N left out. d and s point at the
// split's matrices; row0 is the warp's first row.
template <int kMTiles, int kNTiles>
DG_DEVICE void store_outputs(float* d, float* s, int64_t d_row, int64_t s_row, int m, int n, int row0,
                             const float (&acc)[kMTiles][kNTiles][4], float (&sq)[kMTiles][2]) {
  const int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
#pragma unroll
  for (int mt = 0; mt < kMTiles; ++mt)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      sq[mt][h] += __shfl_xor_sync(0xffffffffu, sq[mt][h], 1);
      sq[mt][h] += __shfl_xor_sync(0xffffffffu, sq[mt][h], 2);
    }
#pragma unroll
  for (int mt = 0; mt < kMTiles; ++mt)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int row = row0 + mt * 16 + h * 8 + g;
      if (row >= m) continue;
      if (t == 0) s[row * s_row] = sq[mt][h];
#pragma unroll
      for (int j = 0; j < kNTiles; ++j)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const int col = 8 * j + 2 * t + e;
          if (col < n) d[row * d_row + col] = acc[mt][j][2 * h + e];
        }
    }
}

// The whole kernel for one block: warps split the block's rows, walk the split's chunks.
template <int kNTiles, int kMTiles, int kWarps, int kStages, bool kVec>
DG_DEVICE void run(const Params& p) {
  static_assert(kStages % 2 == 0, "B's double buffer follows the parity of the A stage");
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int g = lane / 4, t = lane % 4;
  const int row0 = (blockIdx.x * kWarps + warp) * kMTiles * 16;
  const int split = blockIdx.y;
  const int total_chunks = (p.k + kChunk - 1) / kChunk;
  const int full_chunks = p.k / kChunk;
  const int c_begin = min(split * p.chunks_per_split, total_chunks);
  const int c_end = min(c_begin + p.chunks_per_split, total_chunks);
  const int n_full = max(0, min(c_end, full_chunks) - c_begin);

  const uint16_t* a_row[kMTiles][2];
#pragma unroll
  for (int mt = 0; mt < kMTiles; ++mt)
#pragma unroll
    for (int h = 0; h < 2; ++h)
      a_row[mt][h] = p.a + min(row0 + mt * 16 + h * 8 + g, p.m - 1) * p.lda + kPerLane * t;
  const float* b_row[kNTiles];
#pragma unroll
  for (int j = 0; j < kNTiles; ++j) b_row[j] = p.b + min(8 * j + g, p.n - 1) * p.ldb + kPerLane * t;

  float acc[kMTiles][kNTiles][4] = {};
  float sq[kMTiles][2] = {};
  // Chunk `chunk`'s loads; guard is Full or Guarded (the partial last chunk of K).
  auto load_a = [&](AChunk<kMTiles>& dst, int chunk, auto guard) {
    const int k0 = chunk * kChunk + kPerLane * t;
#pragma unroll
    for (int mt = 0; mt < kMTiles; ++mt)
#pragma unroll
      for (int h = 0; h < 2; ++h)
        load_a8<kVec, decltype(guard)::value>(a_row[mt][h] + chunk * kChunk, k0, p.k, dst.v[mt][h]);
  };
  auto load_b = [&](BChunk<kNTiles>& dst, int chunk, auto guard) {
    const int k0 = chunk * kChunk + kPerLane * t;
#pragma unroll
    for (int j = 0; j < kNTiles; ++j)
      load_b8<kVec, decltype(guard)::value>(b_row[j] + chunk * kChunk, k0, p.k, dst.v[j]);
  };
  const Full full;

  // PDL: A and B may be written by the previous kernel; dependents wait for this grid themselves.
  ptx::grid_dependency_wait();
  ptx::grid_dependency_launch();

  AChunk<kMTiles> abuf[kStages];
  BChunk<kNTiles> bbuf[2];
#pragma unroll
  for (int s = 0; s < kStages; ++s)
    if (s < n_full) load_a(abuf[s], c_begin + s, full);
  if (n_full > 0) load_b(bbuf[0], c_begin, full);
  for (int base = 0; base < n_full; base += kStages) {
#pragma unroll
    for (int s = 0; s < kStages; ++s) {
      const int i = base + s;
      if (i < n_full) {
        if (i + 1 < n_full) load_b(bbuf[(s + 1) % 2], c_begin + i + 1, full);
        compute(abuf[s], bbuf[s % 2], acc, sq);
        if (i + kStages < n_full) load_a(abuf[s], c_begin + i + kStages, full);
      }
    }
  }
  if (c_end > c_begin + n_full) {  // the partial last chunk of K (its loads check every element)
    AChunk<kMTiles> at;
    BChunk<kNTiles> bt;
    load_a(at, c_end - 1, Guarded{});
    load_b(bt, c_end - 1, Guarded{});
    compute(at, bt, acc, sq);
  }

  store_outputs(p.d + split * p.d_split, p.s + split * p.s_split, p.d_row, p.s_row, p.m, p.n, row0, acc, sq);
}

}  // namespace dg::hc
