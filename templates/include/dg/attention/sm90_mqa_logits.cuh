// The SM90 FP8 MQA logits kernel of the DeepSeek-V3.2 indexer (docs/mqa_logits.md):
//
//   logits[i, j] = kv_sf[j] * sum_h w[i, h] * relu(q[i, h, :] . kv[j, :])   for j in [ks[i], ke[i])
//
// Q tiles hold kBlockQ = 128 / H tokens, i.e. 128 (token, head) rows: a tile is the WGMMA's B
// operand (N = 128, K = D). A tile needs the KV rows [min ks, max ke) of its tokens (start rounded
// down to 64), in blocks of kBlockKv = 64 * kMathWG rows.
//
// Work: each tile is cut into `split` parts of equal numbers of its blocks (split chosen by the
// host, mqa_logits_split); persistent CTAs stride over the parts, tile by tile. Parts write
// disjoint columns, so no reduction is needed. With split 1 these are whole tiles; more parts
// fill the SMs when there are fewer tiles than SMs, and shorten the last round where the tiles
// leave it mostly empty (2048 long tiles on 132 SMs: 16 rounds for 15.5 of work).
//
// One producer thread walks the CTA's parts: per part it loads the Q tile and the tile's
// [kBlockQ, H] weights by TMA into one of two Q stages (with the ranges and the part's blocks, so
// the consumers read no global memory), then streams those KV blocks through a ring of kStages
// stages (rows, then their scales); with two Q stages the next part's Q and first blocks load
// while the current one computes. After the last part it publishes an end marker in the next Q
// stage. Each consumer warp-group takes 64 rows of a block as the WGMMA's A operand (M = 64), so a
// WGMMA computes q.kv for 64 keys x 128 (token, head) pairs; the thread then applies ReLU, the
// head weights (held in registers for the part) and the sum over heads (its own columns, then the
// four lanes of its quad), scales by kv_sf and stores. The summation order is fixed and
// independent of the split: results are bitwise reproducible.
//
// clean_logits: entries of a computed block outside their row's [ks, ke) are written -inf, and
// the producer warp-group's three idle warps write -inf over the columns of [0, S_kv) the tile does
// not scan, in parallel with the math (no second kernel; tiles strided over the CTAs, whoever
// computes their parts). Without it only the scanned blocks are written (entries outside [ks, ke)
// there hold values of no meaning, as in DeepGEMM).
//
// Compressed layout (kCompressed, DeepGEMM's max_seqlen_k > 0): row t holds key j at column
// j - ks[t], for ks[t] <= j < min(ke[t], ks[t] + max_seqlen_k): a range longer than max_seqlen_k
// is clipped to its first max_seqlen_k keys (the tile scans no further). Only those entries are
// written, never -inf (clean_logits does not apply); the rest of the row is left untouched. A
// separate instantiation, so the non-compressed kernel's code is unchanged.
//
// Shared memory (dynamic, 1024-byte aligned): [Q stages] [KV stages] [scale stages] [weight
// stages] [range stages] [barriers].
// Rows are D bytes (64 or 128) with the D-byte TMA swizzle, which the WGMMA descriptors mirror.
#pragma once
#include <dg/types.cuh>
#include <dg/ptx/common.cuh>
#include <dg/ptx/mbarrier.cuh>
#include <dg/ptx/tma.cuh>
#include <dg/ptx/wgmma.cuh>

namespace dg::attention {

// Kernel argument (by value, __grid_constant__). The host mirrors it (src/ops/mqa_logits.h).
struct alignas(64) MqaLogitsParams {
  TmaDescriptor tma_q;   // (D, S_q * H) e4m3, box (D, 128), swizzle D bytes
  TmaDescriptor tma_kv;  // (D, S_kv) e4m3, box (D, kBlockKv), swizzle D bytes
  TmaDescriptor tma_sf;  // (S_kv, 1) fp32, box (kBlockKv, 1)
  TmaDescriptor tma_w;   // weights (H, S_q) fp32, rows ld_weights elements apart, box (H, kBlockQ)
  const int32_t* ks;     // [S_q]
  const int32_t* ke;     // [S_q]
  void* logits;          // [S_q, S_kv] OutT, row stride ld_logits elements (16-byte multiple)
  int64_t ld_logits;
  uint32_t s_q, s_kv;
  uint32_t clean;
  uint32_t split;         // parts per tile (>= 1)
  uint32_t max_seqlen_k;  // kCompressed: columns per row (>= 1)
};
static_assert(sizeof(MqaLogitsParams) == 576, "the host mirrors this layout (src/ops/mqa_logits.h)");

template <uint32_t kHeads_, uint32_t kHeadDim_, uint32_t kMathWG_, uint32_t kStages_, typename OutT_,
          bool kCompressed_>
struct MqaLogitsTraits {
  using OutT = OutT_;
  static constexpr uint32_t kHeads = kHeads_, kHeadDim = kHeadDim_, kMathWG = kMathWG_, kStages = kStages_;
  static constexpr bool kCompressed = kCompressed_;  // rows of max_seqlen_k columns from each token's ks
  static constexpr uint32_t kBlockQ = 128 / kHeads;  // tokens per tile
  static constexpr uint32_t kBlockKv = 64 * kMathWG;  // KV rows per stage
  static constexpr uint32_t kThreads = 128 * (kMathWG + 1);
  static constexpr uint32_t kSmemQ = 128 * kHeadDim;
  static constexpr uint32_t kSmemKv = kBlockKv * kHeadDim;
  static constexpr uint32_t kSmemSf = kBlockKv * 4;
  static constexpr uint32_t kQStages = 2;  // the next tile's Q loads while the current one computes
  static constexpr uint32_t kSmemW = 128 * 4;       // the tile's [kBlockQ, H] weights
  static constexpr uint32_t kSmemInfo = 128;        // the tile's ranges (TileRange)
  static constexpr uint32_t kOffQ = 0;
  static constexpr uint32_t kOffKv = kOffQ + kQStages * kSmemQ;
  static constexpr uint32_t kOffSf = kOffKv + kStages * kSmemKv;
  static constexpr uint32_t kOffW = kOffSf + kStages * kSmemSf;
  static constexpr uint32_t kOffInfo = kOffW + kQStages * kSmemW;
  static constexpr uint32_t kOffBar = kOffInfo + kQStages * kSmemInfo;
  static constexpr uint32_t kSmemBytes = kOffBar + (2 * kStages + 2 * kQStages) * 8;
  // Registers: the producer warp-group drops to 40 (32 beside four consumer warp-groups, whose
  // 640 threads launch with 96 each); the consumers share the rest of the launch pool.
  static constexpr uint32_t kProducerRegs = kMathWG == 4 ? 32 : 40;
  static constexpr uint32_t kMathRegs = ptx::consumer_regs(128 * kMathWG, kProducerRegs);

  static_assert(kHeads == 32 || kHeads == 64, "H: 32 or 64 (128 / H tokens per tile)");
  static_assert(kHeadDim == 64 || kHeadDim == 128, "D: 64 or 128 (rows of one swizzle span)");
  static_assert(kMathWG >= 1 && kMathWG <= 4, "1 to 4 consumer warp-groups (a stage of <= 256 rows)");
  static_assert(kStages >= 2, "at least two stages");
  static_assert(kOffKv % 1024 == 0 && kSmemKv % 1024 == 0, "swizzled tiles start at 1024-byte boundaries");
  static_assert(kSmemBytes <= 232448, "shared memory budget (227 KiB)");
};

// K-major operand tile of D-byte rows: 8-row core groups 8 * D bytes apart, D-byte swizzle, the
// K step (32 e4m3) advancing the start address inside the swizzle span.
template <uint32_t kHeadDim>
DG_DEVICE uint64_t operand_desc(uint32_t addr, uint32_t kk) {
  constexpr uint32_t kSwizzleMode = kHeadDim == 128 ? 1 : 2;  // 128-byte or 64-byte swizzle
  return ptx::advance_smem_desc(ptx::make_smem_desc(addr, 0, 8 * kHeadDim, kSwizzleMode), kk * 32);
}

DG_DEVICE uint32_t clamp_u32(int32_t v, uint32_t lo, uint32_t hi) {
  return v < static_cast<int32_t>(lo) ? lo : (static_cast<uint32_t>(v) > hi ? hi : static_cast<uint32_t>(v));
}

template <typename OutT> DG_DEVICE OutT out_value(float v);
template <> DG_DEVICE float out_value<float>(float v) { return v; }
template <> DG_DEVICE bf16 out_value<bf16>(float v) { return float_to_bf16(v); }

// Writes -inf to columns [a, b) of `row` (16-byte aligned): 16-byte stores from the first aligned
// column, scalar edges. Threads `tid` of `count`.
template <typename OutT>
DG_DEVICE void fill_neg_inf(OutT* row, uint32_t a, uint32_t b, uint32_t tid, uint32_t count) {
  constexpr uint32_t kVec = 16 / sizeof(OutT);
  if (a >= b) return;
  const OutT ninf = out_value<OutT>(-__int_as_float(0x7f800000));
  const uint32_t va = min_of(align_up(a, kVec), b), vb = max_of(va, b / kVec * kVec);
  for (uint32_t c = a + tid; c < va; c += count) row[c] = ninf;
  for (uint32_t c = vb + tid; c < b; c += count) row[c] = ninf;
  // 16 bytes of -inf patterns, stored as raw bits.
  const float bits = __uint_as_float(sizeof(OutT) == 4 ? 0xff800000u : 0xff80ff80u);
  const f32x4 v{bits, bits, bits, bits};
  for (uint32_t c = va + tid * kVec; c < vb; c += count * kVec) *reinterpret_cast<f32x4*>(row + c) = v;
}

// Sums a quad's partial results and spreads them over its lanes. `part` holds this lane's partial
// sums of kValues results (pr = 0 .. kValues - 1); the quad's four lanes (a WGMMA row's column
// owners) hold the other partials. Each shuffle round sends half of what a lane holds and keeps
// the half its partner sends, so the quad spends kValues / 2 + kValues / 4 shuffles (a butterfly
// on every result would spend 2 kValues) and lane `quad` ends with the whole results
// pr = quad + 4 n in `sum[n]`. With kValues = 2, lanes q and q ^ 2 both end with result q % 2.
// Every result is ((p0 + p1) + (p2 + p3)) with lanes paired the same way: bitwise reproducible.
template <uint32_t kValues>
DG_DEVICE void quad_reduce_scatter(const float (&part)[kValues], float (&sum)[kValues >= 4 ? kValues / 4 : 1],
                                   uint32_t quad) {
  static_assert(kValues == 2 || kValues % 4 == 0, "2 or a multiple of 4 results");
  const bool odd = (quad & 1) != 0, high = (quad & 2) != 0;
  float half[kValues / 2];  // result 2 m + (quad & 1), summed over lanes quad and quad ^ 1
#pragma unroll
  for (uint32_t m = 0; m < kValues / 2; ++m) {
    const float keep = odd ? part[2 * m + 1] : part[2 * m], send = odd ? part[2 * m] : part[2 * m + 1];
    half[m] = keep + __shfl_xor_sync(0xffffffffu, send, 1);
  }
  if constexpr (kValues == 2) {
    sum[0] = half[0] + __shfl_xor_sync(0xffffffffu, half[0], 2);
  } else {
#pragma unroll
    for (uint32_t n = 0; n < kValues / 4; ++n) {
      const float keep = high ? half[2 * n + 1] : half[2 * n], send = high ? half[2 * n] : half[2 * n + 1];
      sum[n] = keep + __shfl_xor_sync(0xffffffffu, send, 2);
    }
  }
}

// The weighted ReLU head sums of one 64-key WGMMA tile whose columns are kTokens tokens x kHeads
// heads: part[h * kTokens + t] = sum over this thread's columns of token t of relu(acc) * w, for
// its row h (0: lane / 4, 1: lane / 4 + 8). w[g] holds the weights of the thread's two columns in
// column group g. The quad's partials are then summed by quad_reduce_scatter.
template <uint32_t kTokens, uint32_t kHeads, uint32_t kAcc>
DG_DEVICE void weighted_relu_sums(const float (&acc)[kAcc], const float (&w)[kTokens * kHeads / 8][2],
                                  float (&part)[2 * kTokens]) {
  static_assert(kAcc == kTokens * kHeads / 2, "one accumulator tile of kTokens x kHeads columns");
#pragma unroll
  for (uint32_t h = 0; h < 2; ++h)
#pragma unroll
    for (uint32_t t = 0; t < kTokens; ++t) {
      float s = 0.f;
#pragma unroll
      for (uint32_t g = t * (kHeads / 8); g < (t + 1) * (kHeads / 8); ++g) {
        s += fmaxf(acc[g * 4 + 2 * h], 0.f) * w[g][0];
        s += fmaxf(acc[g * 4 + 2 * h + 1], 0.f) * w[g][1];
      }
      part[h * kTokens + t] = s;
    }
}

// The KV range a tile of tokens [q0, q0 + kBlockQ) needs: its tokens' [ks, ke) clipped to
// [0, S_kv) (kCompressed: and ke to ks + max_seqlen_k), the start rounded down to 64 rows, in blocks
// of kBlockKv rows.
template <uint32_t kBlockQ, uint32_t kBlockKv, bool kCompressed>
struct TileRange {
  uint32_t ks[kBlockQ], ke[kBlockQ];
  uint32_t kv_lo = 0, num_blocks = 0;
  TileRange() = default;
  DG_DEVICE TileRange(const MqaLogitsParams& p, uint32_t q0) {
    uint32_t lo = p.s_kv, hi = 0;
#pragma unroll
    for (uint32_t t = 0; t < kBlockQ; ++t) {
      ks[t] = ke[t] = 0;
      if (q0 + t < p.s_q) {
        ks[t] = clamp_u32(p.ks[q0 + t], 0, p.s_kv);
        ke[t] = clamp_u32(p.ke[q0 + t], ks[t], p.s_kv);
        if constexpr (kCompressed) ke[t] = ks[t] + min_of(ke[t] - ks[t], p.max_seqlen_k);
        if (ke[t] > ks[t]) lo = min_of(lo, ks[t]), hi = max_of(hi, ke[t]);
      }
    }
    if (hi > lo) {
      kv_lo = lo / 64 * 64;
      num_blocks = ceil_div(hi - kv_lo, kBlockKv);
    }
  }
};

// What the producer publishes with a Q stage: the tile, its ranges and the blocks [first, end) of
// it that the part holds; tile == kEndOfRun marks the end of the CTA's parts.
template <uint32_t kBlockQ, uint32_t kBlockKv, bool kCompressed>
struct TileWork {
  static constexpr uint32_t kEndOfRun = 0xffffffffu;
  TileRange<kBlockQ, kBlockKv, kCompressed> range;
  uint32_t tile, first, end;
};

template <class T>
DG_DEVICE void mqa_logits_body(const MqaLogitsParams& p) {
  using OutT = typename T::OutT;
  constexpr uint32_t kStages = T::kStages, kQStages = T::kQStages, kBlockQ = T::kBlockQ, kBlockKv = T::kBlockKv,
                     kHeads = T::kHeads;
  constexpr uint32_t kGroups = 128 / 8;  // 8-column groups of the accumulator
  using Range = TileRange<kBlockQ, kBlockKv, T::kCompressed>;
  using Work = TileWork<kBlockQ, kBlockKv, T::kCompressed>;
  static_assert(sizeof(Work) <= T::kSmemInfo, "a tile's work fits its slot");
  extern __shared__ __align__(1024) uint8_t smem[];

  const uint32_t smem_base = ptx::smem_addr(smem);
  ptx::Mbarrier* full = reinterpret_cast<ptx::Mbarrier*>(smem + T::kOffBar);
  ptx::Mbarrier* empty = full + kStages;
  ptx::Mbarrier* q_full = full + 2 * kStages;
  ptx::Mbarrier* q_empty = q_full + kQStages;
  const uint32_t full_addr = smem_base + T::kOffBar, empty_addr = full_addr + kStages * 8;
  const uint32_t q_full_addr = full_addr + 2 * kStages * 8, q_empty_addr = q_full_addr + kQStages * 8;
  const uint32_t warp = ptx::warp_uniform(threadIdx.x / 32), lane = ptx::lane_id(), wg = warp / 4;
  const uint32_t num_tiles = ceil_div(p.s_q, kBlockQ);

  if (threadIdx.x == T::kMathWG * 128) {
    ptx::tma_prefetch_descriptor(&p.tma_q);
    ptx::tma_prefetch_descriptor(&p.tma_kv);
    ptx::tma_prefetch_descriptor(&p.tma_sf);
    ptx::tma_prefetch_descriptor(&p.tma_w);
#pragma unroll
    for (uint32_t s = 0; s < kStages; ++s) {
      ptx::mbar_init(&full[s], 1);
      ptx::mbar_init(&empty[s], T::kMathWG * 128);  // one arrival per consumer thread
    }
#pragma unroll
    for (uint32_t s = 0; s < kQStages; ++s) {
      ptx::mbar_init(&q_full[s], 1);
      ptx::mbar_init(&q_empty[s], T::kMathWG * 128);
    }
    ptx::fence_barrier_init();
  }
  __syncthreads();
  // Programmatic dependent launch: everything above overlaps the previous kernel's tail.
  ptx::grid_dependency_wait();

  if (wg == T::kMathWG) {
    // ------------------------------------------------------------------ producer warp-group
    ptx::setmaxnreg_dec<T::kProducerRegs>();
    if (warp == T::kMathWG * 4) {
      if (ptx::elect_one()) {
        uint32_t stage = 0, phase = 0, q_iter = 0;
        const uint32_t num_parts = num_tiles * p.split;
#pragma unroll 1
        for (uint32_t part = blockIdx.x; part < num_parts; part += gridDim.x) {
          const uint32_t tile = part / p.split, j = part % p.split, q0 = tile * kBlockQ;
          Work work;
          work.range = Range(p, q0);
          work.tile = tile;
          work.first = work.range.num_blocks * j / p.split;
          work.end = work.range.num_blocks * (j + 1) / p.split;
          if (work.first >= work.end) continue;
          // A Q stage is refilled once every consumer warp is done with its previous part; the
          // part's work goes with it (written before the arrive, whose release publishes it).
          const uint32_t qs = q_iter % kQStages, qp = (q_iter / kQStages) & 1;
          ++q_iter;
          ptx::mbar_wait(q_empty_addr + qs * 8, qp ^ 1);
          *reinterpret_cast<Work*>(smem + T::kOffInfo + qs * T::kSmemInfo) = work;
          ptx::mbar_arrive_expect_tx(&q_full[qs], T::kSmemQ + T::kSmemW);
          ptx::tma_load_2d(&p.tma_q, &q_full[qs], smem + T::kOffQ + qs * T::kSmemQ, 0,
                           static_cast<int32_t>(q0 * kHeads));
          ptx::tma_load_2d(&p.tma_w, &q_full[qs], smem + T::kOffW + qs * T::kSmemW, 0, static_cast<int32_t>(q0));
#pragma unroll 1
          for (uint32_t b = work.first; b < work.end; ++b) {
            ptx::mbar_wait(empty_addr + stage * 8, phase ^ 1);
            ptx::mbar_arrive_expect_tx(&full[stage], T::kSmemKv + T::kSmemSf);
            const int32_t row = static_cast<int32_t>(work.range.kv_lo + b * kBlockKv);
            ptx::tma_load_2d(&p.tma_kv, &full[stage], smem + T::kOffKv + stage * T::kSmemKv, 0, row);
            ptx::tma_load_2d(&p.tma_sf, &full[stage], smem + T::kOffSf + stage * T::kSmemSf, row, 0);
            if (++stage == kStages) stage = 0, phase ^= 1;
          }
        }
        // The end of the run: a Q stage without data whose work says so.
        const uint32_t qs = q_iter % kQStages, qp = (q_iter / kQStages) & 1;
        ptx::mbar_wait(q_empty_addr + qs * 8, qp ^ 1);
        reinterpret_cast<Work*>(smem + T::kOffInfo + qs * T::kSmemInfo)->tile = Work::kEndOfRun;
        ptx::mbar_arrive(q_full_addr + qs * 8);
      }
      __syncwarp();
    } else if (!T::kCompressed && p.clean) {
      // Columns outside each tile's scanned blocks: -inf for every token of the tile.
      const uint32_t tid = threadIdx.x - (T::kMathWG * 128 + 32);
#pragma unroll 1
      for (uint32_t tile = blockIdx.x; tile < num_tiles; tile += gridDim.x) {
        const uint32_t q0 = tile * kBlockQ;
        const Range range(p, q0);
        const uint32_t cov_lo = range.num_blocks ? range.kv_lo : 0;
        const uint32_t cov_hi = range.num_blocks ? min_of(range.kv_lo + range.num_blocks * kBlockKv, p.s_kv) : 0;
#pragma unroll 1
        for (uint32_t t = 0; t < kBlockQ && q0 + t < p.s_q; ++t) {
          OutT* row = static_cast<OutT*>(p.logits) + static_cast<int64_t>(q0 + t) * p.ld_logits;
          fill_neg_inf(row, 0, cov_lo, tid, 96);
          fill_neg_inf(row, cov_hi, p.s_kv, tid, 96);
        }
      }
    }
    return;
  }

  // -------------------------------------------------------------------- consumer warp-groups
  ptx::setmaxnreg_inc<T::kMathRegs>();
  const uint32_t warp_in_wg = warp % 4, quad = lane % 4;
  // This thread's two KV rows of each 64-row block: r0 and r0 + 8.
  const uint32_t r0 = warp_in_wg * 16 + lane / 4;
  // A block gives each quad kValues results, pr = h * kBlockQ + t for row r0 + 8 h and token t;
  // lane `quad` stores results pr = quad + 4 n (quad_reduce_scatter).
  constexpr uint32_t kValues = 2 * kBlockQ, kOwn = kValues / 4;
  OutT* const out = static_cast<OutT*>(p.logits);
  const OutT ninf = out_value<OutT>(-__int_as_float(0x7f800000));
  float acc[64];
  uint32_t stage = 0, phase = 0;
#pragma unroll 1
  for (uint32_t q_iter = 0;; ++q_iter) {
    const uint32_t qs = q_iter % kQStages, qp = (q_iter / kQStages) & 1;
    ptx::mbar_wait(q_full_addr + qs * 8, qp);
    const Work& work = *reinterpret_cast<const Work*>(smem + T::kOffInfo + qs * T::kSmemInfo);
    if (work.tile == Work::kEndOfRun) break;
    const uint32_t q0 = work.tile * kBlockQ, first = work.first, end = work.end;
    const Range& range = work.range;
    const uint32_t kv_lo = range.kv_lo;
    const uint32_t q_addr = smem_base + T::kOffQ + qs * T::kSmemQ;
    // This thread's accumulator columns are (token, head) pairs 8 g + 2 quad + e: their weights
    // (the tile's [kBlockQ, H] block, zeros past S_q).
    const float* wt = reinterpret_cast<const float*>(smem + T::kOffW + qs * T::kSmemW);
    float w[kGroups][2];
#pragma unroll
    for (uint32_t g = 0; g < kGroups; ++g) {
      const float2 pair = *reinterpret_cast<const float2*>(wt + g * 8 + quad * 2);
      w[g][0] = pair.x;
      w[g][1] = pair.y;
    }
    // The results this lane stores, relative to the tile's first scanned column: the key offset
    // in a block, its row of logits, the columns it may write, [0, lim) (none past S_q or S_kv),
    // and with clean_logits the token's [ks, ke) as [lo, hi). Compressed: the row starts at key
    // ks and the columns written are the token's keys, [lo, lim) (none past S_q: ks = ke there).
    uint32_t col[kOwn];
    OutT* dst[kOwn];
    int32_t lim[kOwn], lo[kOwn], hi[kOwn];
#pragma unroll
    for (uint32_t n = 0; n < kOwn; ++n) {
      const uint32_t pr = quad + 4 * n, h = pr / kBlockQ, t = pr % kBlockQ;
      col[n] = wg * 64 + r0 + 8 * h;
      const int32_t first = static_cast<int32_t>(kv_lo + col[n]);
      if constexpr (T::kCompressed) {
        dst[n] = out + static_cast<int64_t>(q0 + t) * p.ld_logits + (first - static_cast<int32_t>(range.ks[t]));
        lo[n] = static_cast<int32_t>(range.ks[t]) - first;
        lim[n] = static_cast<int32_t>(range.ke[t]) - first;
      } else {
        dst[n] = out + static_cast<int64_t>(q0 + t) * p.ld_logits + first;
        lim[n] = q0 + t < p.s_q ? static_cast<int32_t>(p.s_kv) - first : 0;
        lo[n] = p.clean ? static_cast<int32_t>(range.ks[t]) - first : -0x7fffffff - 1;
        hi[n] = p.clean ? static_cast<int32_t>(range.ke[t]) - first : 0x7fffffff;
      }
    }

#pragma unroll 1
    for (uint32_t b = first; b < end; ++b) {
      // The WGMMA descriptors are computed before the barrier wait (ptx::pin).
      uint64_t kv_desc = operand_desc<T::kHeadDim>(smem_base + T::kOffKv + stage * T::kSmemKv + wg * 64 * T::kHeadDim, 0);
      uint64_t q_desc = operand_desc<T::kHeadDim>(q_addr, 0);
      ptx::pin(kv_desc);
      ptx::pin(q_desc);
      ptx::mbar_wait(full_addr + stage * 8, phase);
      const float* sf = reinterpret_cast<const float*>(smem + T::kOffSf + stage * T::kSmemSf);
      float sf_key[kOwn];
#pragma unroll
      for (uint32_t n = 0; n < kOwn; ++n) sf_key[n] = sf[col[n]];
#pragma unroll
      for (uint32_t r = 0; r < 64; ++r) ptx::fence_operand(acc[r]);
      ptx::wgmma_fence();
#pragma unroll
      for (uint32_t kk = 0; kk < T::kHeadDim / 32; ++kk)
        ptx::WgmmaE4m3<128>::mma(ptx::advance_smem_desc(kv_desc, kk * 32), ptx::advance_smem_desc(q_desc, kk * 32), acc,
                                 kk > 0);
      ptx::wgmma_commit();
      ptx::wgmma_wait<0>();
#pragma unroll
      for (uint32_t r = 0; r < 64; ++r) ptx::fence_operand(acc[r]);
      // Every thread arrives: an arrival releases the arriving thread's own reads only (the
      // scales above; __syncwarp and an arrival by lane 0 order the others' in the memory model,
      // but ptxas drops the warp barrier of a converged warp and racecheck cannot see it).
      ptx::mbar_arrive(empty_addr + stage * 8);
      if (++stage == kStages) stage = 0, phase ^= 1;

      // Weighted ReLU sum over the heads of each token: this thread's columns, then its quad's.
      float part[kValues];
      weighted_relu_sums<kBlockQ, kHeads>(acc, w, part);
      float sum[kOwn];
      quad_reduce_scatter(part, sum, quad);
      const int32_t j = static_cast<int32_t>(b * kBlockKv);
#pragma unroll
      for (uint32_t n = 0; n < kOwn; ++n) {
        if constexpr (T::kCompressed) {
          if (j >= lo[n] && j < lim[n]) dst[n][j] = out_value<OutT>(sum[n] * sf_key[n]);
        } else {
          if (j < lim[n]) dst[n][j] = j < lo[n] || j >= hi[n] ? ninf : out_value<OutT>(sum[n] * sf_key[n]);
        }
      }
    }
    // The Q tile's last WGMMA has completed (wait<0> above) and its weights and ranges are in
    // registers: the producer may replace the stage (and the work it writes with plain stores).
    // Every thread arrives, as on `empty`.
    ptx::mbar_arrive(q_empty_addr + qs * 8);
  }
}

}  // namespace dg::attention
