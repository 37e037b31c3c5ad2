// The skinny GEMM: D[M,N] = alpha * A[M,K] . B[N,K]^T (+ beta * C) for few tokens (M <= 32), where
// the work is reading B once. BF16, or FP8 with the 1D2D / 1D1D scales promoted every 128 K.
//
// Work: a CTA owns 16 rows of B (n0 .. n0 + 15) and, with kSplit > 1, a share of K: the kSplit CTAs
// of a cluster split each row's 128-byte "units" between their kWarps warps, interleaved (warp w of
// rank r takes units r * kWarps + w, + kSplit * kWarps, ...), so that a CTA's warps read neighbouring
// stretches of the same rows. A warp takes kUnroll units per round, all loads of the round in flight
// before the first MMA (this, and many warps per SM, is what keeps HBM busy).
//
// Tensor cores through mma.sync, with B as the 16-row operand and the tokens as the 8-column one
// (m16n8k16 BF16 / m16n8k32 E4M3, kTokenTiles of them per K step). The dot product does not care
// in which order K is summed, so each lane loads 16 contiguous bytes per row (one vector load) and
// uses its four 32-bit words as the K groups q and q + 4 of two MMAs; the tokens' 16 bytes at the same
// K offsets feed the same two MMAs (dg/ptx/mma.cuh has the fragment layout). Per unit a lane loads
// 2 x 16 bytes of each of its rows g, g + 8 and of each token row.
// FP8: each unit is one 128-K scale block; its MMAs go into fresh partial sums promoted into the
// accumulators with sfa[token, kb] * sfb[row or row block, kb] in FP32. SM90 has no FP8 mma.sync in
// hardware: ptxas turns each m16n8k32 E4M3 MMA into F2FP conversions (two values each) and two FP16
// HMMAs, 49 + 8 instructions per unit at one token tile, 65 + 16 at two: the likely limit of the FP8
// kernel past 8 tokens, where BF16 keeps its rate and FP8 does not. On an H100, converting with
// integer operations instead was 2-11% slower, and issuing the next unit's loads before this unit's
// MMAs 3-9% slower (geometric means over the DeepSeek shapes).
//
// Reduction: the warps' partial tiles through shared memory, then (kSplit > 1) the cluster's through
// distributed shared memory, each rank writing a share of the 16 x M outputs. Deterministic.
#pragma once
#include <dg/types.cuh>
#include <dg/ptx/common.cuh>
#include <dg/ptx/mma.cuh>
#include <dg/gemm/kind.cuh>

namespace dg::gemm {

// Kernel argument (by value, __grid_constant__); the host mirrors it (src/ops/skinny_gemm.h).
struct SkinnyGemmParams {
  const void* a;  // [M, K] K-major, lda elements between rows
  const void* b;  // [N, K] K-major, ldb elements between rows
  void* d;        // [M, N], ldd
  const void* c;  // [M, N], ldc; read when kHasC (may alias d)
  const float* sfa;  // FP8: sfa[kb * ld_sfa + m]
  const float* sfb;  // FP8: sfb[r * sfb_stride_n + kb * sfb_stride_k], r = n / 128 (1D2D) or n (1D1D)
  int64_t lda, ldb, ldd, ldc, ld_sfa, sfb_stride_n, sfb_stride_k;
  uint32_t m, n, k;
  float alpha, beta;
};

template <Kind kKind_, typename OutT_, bool kHasC_, uint32_t kTokenTiles_, uint32_t kWarps_, uint32_t kSplit_,
          uint32_t kUnroll_>
struct SkinnyGemmTraits {
  static constexpr Kind kKind = kKind_;
  using OutT = OutT_;
  static constexpr bool kHasC = kHasC_;
  static constexpr uint32_t kTokenTiles = kTokenTiles_, kWarps = kWarps_, kSplit = kSplit_, kUnroll = kUnroll_;
  static constexpr bool kFp8 = kKind != Kind::kBf16;
  static constexpr uint32_t kElem = kFp8 ? 1 : 2;
  static constexpr uint32_t kTokens = 8 * kTokenTiles;
  static constexpr uint32_t kThreads = 32 * kWarps;
  // Resident CTAs per SM the registers must allow, so that the grid the host sizes for one wave is
  // resident at once: 16 warps (<= 128 registers per thread), 12 for FP8 with 4 token tiles (which
  // would spill at 128). The host mirrors it (skinny_ctas_per_sm).
  static constexpr uint32_t kMinBlocks = (kFp8 && kTokenTiles == 4 ? 12 : 16) / kWarps;
  static_assert(kTokenTiles >= 1 && kTokenTiles <= 4, "1 to 4 tiles of 8 tokens");
  static_assert(kWarps >= 1 && kWarps <= 16, "1 to 16 warps");
  static_assert(kSplit == 1 || kSplit == 2 || kSplit == 4 || kSplit == 8, "split over 1, 2, 4 or 8 CTAs");
  static_assert(kUnroll >= 1 && kUnroll <= 8, "1 to 8 units in flight per warp");
};

namespace skinny {

struct alignas(16) Chunk {
  uint32_t w[4];
};

// B is read once: no L1 allocation. A and the scales are read by every CTA: cached.
DG_DEVICE Chunk load_streamed(const uint8_t* p) {
  Chunk c;
  asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(c.w[0]), "=r"(c.w[1]), "=r"(c.w[2]), "=r"(c.w[3])
               : "l"(p));
  return c;
}
DG_DEVICE Chunk load_cached(const uint8_t* p) {
  Chunk c;
  asm volatile("ld.global.nc.v4.u32 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(c.w[0]), "=r"(c.w[1]), "=r"(c.w[2]), "=r"(c.w[3])
               : "l"(p));
  return c;
}

DG_DEVICE float load_out(const float* p) { return *p; }
DG_DEVICE float load_out(const bf16* p) { return bf16_to_float(*p); }
DG_DEVICE void store_out(float* p, float v) { *p = v; }
DG_DEVICE void store_out(bf16* p, float v) { *p = float_to_bf16(v); }

}  // namespace skinny

template <class T>
DG_DEVICE void skinny_gemm_body(const SkinnyGemmParams& p) {
  using OutT = typename T::OutT;
  constexpr uint32_t kMT = T::kTokenTiles, kW = T::kWarps, kS = T::kSplit, kU = T::kUnroll;
  constexpr uint32_t kTokens = T::kTokens, kElem = T::kElem;
  // Per-warp partial tiles [token][row]; red[0] then holds the CTA's sum.
  __shared__ float red[kW][kTokens][16];

  const uint32_t warp = ptx::warp_uniform(threadIdx.x / 32), lane = ptx::lane_id();
  const uint32_t g = lane / 4, q = lane % 4;
  const uint32_t rank = kS > 1 ? ptx::cluster_ctarank() : 0;
  const uint32_t n0 = (blockIdx.x / kS) * 16;
  const uint32_t row_bytes = p.k * kElem;  // a multiple of 16 (the host checks)
  const uint32_t units = (row_bytes + 127) / 128;

  // This lane's rows of B (g, g + 8) and of A (token g of each tile), clamped into the matrices;
  // loads for rows past the edges are predicated off (zeros: their results are never stored).
  const uint32_t r_lo = n0 + g, r_hi = n0 + g + 8;
  const bool lo_ok = r_lo < p.n, hi_ok = r_hi < p.n;
  const uint8_t* const b_lo =
      static_cast<const uint8_t*>(p.b) + int64_t(min_of(r_lo, p.n - 1)) * p.ldb * kElem + q * 16;
  const uint8_t* const b_hi =
      static_cast<const uint8_t*>(p.b) + int64_t(min_of(r_hi, p.n - 1)) * p.ldb * kElem + q * 16;
  const uint8_t* a_row[kMT];
  bool a_ok[kMT];
#pragma unroll
  for (uint32_t j = 0; j < kMT; ++j) {
    const uint32_t t = 8 * j + g;
    a_ok[j] = t < p.m;
    a_row[j] = static_cast<const uint8_t*>(p.a) + int64_t(min_of(t, p.m - 1)) * p.lda * kElem + q * 16;
  }
  // FP8: the scales of this lane's accumulator columns (tokens 2q, 2q + 1 of each tile) and rows.
  uint32_t sfa_col[kMT][2];
  const float* sfb_lo = nullptr;
  const float* sfb_hi = nullptr;
  if constexpr (T::kFp8) {
#pragma unroll
    for (uint32_t j = 0; j < kMT; ++j)
#pragma unroll
      for (uint32_t c = 0; c < 2; ++c) sfa_col[j][c] = min_of(8 * j + 2 * q + c, p.m - 1);
    if constexpr (T::kKind == Kind::kFp8_1D2D) {
      sfb_lo = sfb_hi = p.sfb + int64_t(n0 / 128) * p.sfb_stride_n;  // 16 rows never straddle a 128-row block
    } else {
      sfb_lo = p.sfb + int64_t(min_of(r_lo, p.n - 1)) * p.sfb_stride_n;
      sfb_hi = p.sfb + int64_t(min_of(r_hi, p.n - 1)) * p.sfb_stride_n;
    }
  }

  float acc[kMT][4];
#pragma unroll
  for (uint32_t j = 0; j < kMT; ++j)
#pragma unroll
    for (uint32_t c = 0; c < 4; ++c) acc[j][c] = 0.f;

  // PDL: operands may come from the previous kernel. Dependents wait for this grid themselves.
  ptx::grid_dependency_wait();
  ptx::grid_dependency_launch();

  const uint32_t step = kS * kW;
  for (uint32_t u0 = rank * kW + warp; u0 < units; u0 += step * kU) {
    skinny::Chunk bl[kU][2], bh[kU][2], at[kU][kMT][2];
    float sa[kU][kMT][2], sb[kU][2];
#pragma unroll
    for (uint32_t v = 0; v < kU; ++v) {
      const uint32_t u = u0 + v * step;
#pragma unroll
      for (uint32_t h = 0; h < 2; ++h) {
        const uint32_t off = u * 128 + h * 64;
        const bool in = off + q * 16 < row_bytes;  // false for every unit past the row
        bl[v][h] = in && lo_ok ? skinny::load_streamed(b_lo + off) : skinny::Chunk{};
        bh[v][h] = in && hi_ok ? skinny::load_streamed(b_hi + off) : skinny::Chunk{};
#pragma unroll
        for (uint32_t j = 0; j < kMT; ++j) at[v][j][h] = in && a_ok[j] ? skinny::load_cached(a_row[j] + off) : skinny::Chunk{};
      }
      if constexpr (T::kFp8) {
        const uint32_t kb = min_of(u, units - 1);
#pragma unroll
        for (uint32_t j = 0; j < kMT; ++j)
#pragma unroll
          for (uint32_t c = 0; c < 2; ++c) sa[v][j][c] = p.sfa[int64_t(kb) * p.ld_sfa + sfa_col[j][c]];
        sb[v][0] = sfb_lo[int64_t(kb) * p.sfb_stride_k];
        sb[v][1] = T::kKind == Kind::kFp8_1D2D ? sb[v][0] : sfb_hi[int64_t(kb) * p.sfb_stride_k];
      }
    }
#pragma unroll
    for (uint32_t v = 0; v < kU; ++v) {
      if (u0 + v * step >= units) break;
      float part[kMT][4];
      float (&sum)[kMT][4] = T::kFp8 ? part : acc;
      if constexpr (T::kFp8) {
#pragma unroll
        for (uint32_t j = 0; j < kMT; ++j)
#pragma unroll
          for (uint32_t c = 0; c < 4; ++c) part[j][c] = 0.f;
      }
#pragma unroll
      for (uint32_t h = 0; h < 2; ++h)
#pragma unroll
        for (uint32_t i = 0; i < 2; ++i) {
          const uint32_t fa[4] = {bl[v][h].w[2 * i], bh[v][h].w[2 * i], bl[v][h].w[2 * i + 1], bh[v][h].w[2 * i + 1]};
#pragma unroll
          for (uint32_t j = 0; j < kMT; ++j) {
            const uint32_t fb[2] = {at[v][j][h].w[2 * i], at[v][j][h].w[2 * i + 1]};
            if constexpr (T::kFp8) ptx::mma_e4m3_m16n8k32(sum[j], fa, fb);
            else ptx::mma_bf16_m16n8k16(sum[j], fa, fb);
          }
        }
      if constexpr (T::kFp8) {
#pragma unroll
        for (uint32_t j = 0; j < kMT; ++j) {
          acc[j][0] += part[j][0] * (sa[v][j][0] * sb[v][0]);
          acc[j][1] += part[j][1] * (sa[v][j][1] * sb[v][0]);
          acc[j][2] += part[j][2] * (sa[v][j][0] * sb[v][1]);
          acc[j][3] += part[j][3] * (sa[v][j][1] * sb[v][1]);
        }
      }
    }
  }

  // ---- reduction and epilogue
#pragma unroll
  for (uint32_t j = 0; j < kMT; ++j)
#pragma unroll
    for (uint32_t c = 0; c < 4; ++c) red[warp][8 * j + 2 * q + (c & 1)][g + 8 * (c >> 1)] = acc[j][c];
  __syncthreads();
  for (uint32_t e = threadIdx.x; e < kTokens * 16; e += T::kThreads) {
    float s = 0.f;
#pragma unroll
    for (uint32_t w = 0; w < kW; ++w) s += red[w][e / 16][e % 16];
    red[0][e / 16][e % 16] = s;
  }
  if constexpr (kS > 1) ptx::cluster_sync();
  else __syncthreads();

  OutT* const d = static_cast<OutT*>(p.d);
  const OutT* const c = static_cast<const OutT*>(p.c);
  const uint32_t outputs = min_of(p.m, kTokens) * 16;
  for (uint32_t e = rank * T::kThreads + threadIdx.x; e < outputs; e += kS * T::kThreads) {
    const uint32_t t = e / 16, n = n0 + e % 16;
    float s;
    if constexpr (kS > 1) {
      const uint32_t addr = ptx::smem_addr(&red[0][t][e % 16]);
      s = 0.f;
#pragma unroll
      for (uint32_t r = 0; r < kS; ++r) s += ptx::ld_shared_cluster_f32(ptx::map_shared_rank(addr, r));
    } else {
      s = red[0][t][e % 16];
    }
    if (n < p.n) {
      float v = p.alpha * s;
      if constexpr (T::kHasC) v += p.beta * skinny::load_out(c + int64_t(t) * p.ldc + n);
      skinny::store_out(d + int64_t(t) * p.ldd + n, v);
    }
  }
  // No CTA may leave while a peer still reads its shared memory.
  if constexpr (kS > 1) ptx::cluster_sync();
}

}  // namespace dg::gemm
