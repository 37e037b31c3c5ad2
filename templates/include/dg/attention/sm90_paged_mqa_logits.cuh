// The SM90 FP8 paged MQA logits kernel of the DeepSeek-V3.2 indexer in decoding
// (docs/mqa_logits.md#paged-decoding, #schedule):
//
//   logits[b * next_n + j, t] = sf(b, t) * sum_h w[b * next_n + j, h] * relu(q[b, j, h, :] . kv(b, t, :))
//
// for the keys t of sequence b, which live in 64-key cache blocks: key t is slot t % 64 of physical
// block block_table[b, t / 64]; a block holds 64 rows of D E4M3 values, then their 64 FP32 scales.
// Row j of sequence b is valid up to ctx[b] - next_n + j + 1 (1-D context lengths) or ctx[b, j]
// (2-D); a sequence's length is its longest row, clipped to max_context_len and to the block
// table's capacity.
//
// Work: the schedule (dg_get_paged_mqa_logits_metadata) gives each CTA a run of 256-key segments,
// sequence by sequence. One producer warp walks it: per sequence it loads the Q tile (the
// next_n * H (token, head) rows of the sequence, the WGMMA's B operand, N = next_n * H) and the
// sequence's weights into a ring of two Q stages, and publishes with them the sequence's blocks
// in the run and its rows' context ends (SequenceWork); then it gathers those blocks, kMathWG per
// stage of the KV ring (values by a 3-D TMA map over the cache, scales by a 2-D one), reading the
// block table 32 entries at a time (one per lane). After the run it publishes an end marker. Each
// consumer warp-group takes one block of a stage as the WGMMA's A operand (M = 64 keys). The
// consumers read no global memory (a context-length read at each new sequence would stall them a
// memory latency while loaded stages wait); the producer issues a sequence's first block-table
// read before its context-length read, so the two latencies overlap. The epilogue is
// the non-paged kernel's: ReLU, head weights held in registers per sequence, the sum over heads
// in a fixed order (bitwise reproducible), the key scale.
//
// Writes stay inside [0, max_context_len). clean_logits: computed entries past their row's end are
// written -inf, and the producer warp-group's three idle warps write -inf past each sequence's
// computed blocks for a share of the rows (rows split evenly over the CTAs). Without it, entries
// past a row's end hold values of no meaning.
#pragma once
#include <dg/attention/sm90_mqa_logits.cuh>

namespace dg::attention {

// Kernel argument (by value, __grid_constant__). The host mirrors it (src/ops/mqa_logits.h).
struct alignas(64) PagedMqaLogitsParams {
  TmaDescriptor tma_q;   // (D, B * next_n * H) e4m3, box (D, next_n * H), swizzle D bytes
  TmaDescriptor tma_kv;  // (D, 64, num_blocks) e4m3 with the cache's block stride, box (D, 64, 1), swizzle D
  TmaDescriptor tma_sf;  // (64, num_blocks) fp32 from the first block's scales, box (64, 1)
  TmaDescriptor tma_w;   // weights (H, B * next_n) fp32, box (H, next_n)
  const int32_t* ctx;  // [B] or [B, next_n], row stride ld_ctx elements
  int64_t ld_ctx;
  const int32_t* block_table;  // [B, max_blocks], row stride ld_block_table elements
  int64_t ld_block_table;
  const int32_t* schedule;  // [num CTAs + 1, 2]
  void* logits;             // [B * next_n, max_context_len] OutT, row stride ld_logits elements
  int64_t ld_logits;
  uint32_t batch, max_blocks, max_context_len;
  uint32_t ctx_2d;  // context lengths per row ([B, next_n]) rather than per sequence
  uint32_t clean;
  uint32_t reserved[9];
};
static_assert(sizeof(PagedMqaLogitsParams) == 640, "the host mirrors this layout (src/ops/mqa_logits.h)");

template <uint32_t kHeads_, uint32_t kHeadDim_, uint32_t kNextN_, uint32_t kMathWG_, uint32_t kStages_,
          typename OutT_>
struct PagedMqaLogitsTraits {
  using OutT = OutT_;
  static constexpr uint32_t kHeads = kHeads_, kHeadDim = kHeadDim_, kNextN = kNextN_, kMathWG = kMathWG_,
                            kStages = kStages_;
  static constexpr uint32_t kN = kNextN * kHeads;  // (token, head) rows of a Q tile: the WGMMA's N
  static constexpr uint32_t kBlockKv = 64;         // keys per cache block
  static constexpr uint32_t kQStages = 2;
  static constexpr uint32_t kThreads = 128 * (kMathWG + 1);
  static constexpr uint32_t kSmemQ = kN * kHeadDim;
  static constexpr uint32_t kSmemKv = kBlockKv * kHeadDim;  // one block's values
  static constexpr uint32_t kSmemSf = kBlockKv * 4;         // one block's scales
  static constexpr uint32_t kSmemW = kNextN * kHeads * 4;    // the sequence's weights
  static constexpr uint32_t kOffQ = 0;
  static constexpr uint32_t kOffKv = kOffQ + kQStages * kSmemQ;
  static constexpr uint32_t kOffSf = kOffKv + kStages * kMathWG * kSmemKv;
  static constexpr uint32_t kOffW = kOffSf + kStages * kMathWG * kSmemSf;
  static constexpr uint32_t kOffWork = kOffW + kQStages * kSmemW;  // a SequenceWork per Q stage
  static constexpr uint32_t kOffBar = kOffWork + kQStages * 32;
  static constexpr uint32_t kSmemBytes = kOffBar + (2 * kStages + 2 * kQStages) * 8;
  // Registers: the producer warp-group drops to 40 (32 beside four consumer warp-groups, whose
  // 640 threads launch with 96 each); the consumers share the rest of the launch pool.
  static constexpr uint32_t kProducerRegs = kMathWG == 4 ? 32 : 40;
  static constexpr uint32_t kMathRegs = ptx::consumer_regs(128 * kMathWG, kProducerRegs);

  static_assert(kHeads == 32 || kHeads == 64, "H: 32 or 64");
  static_assert(kHeadDim == 64 || kHeadDim == 128, "D: 64 or 128 (rows of one swizzle span)");
  static_assert(kNextN == 1 || kNextN == 2 || kNextN == 4, "next_n: 1, 2 or 4");
  static_assert(kN <= 256, "WGMMA N <= 256");
  static_assert(kMathWG == 1 || kMathWG == 2 || kMathWG == 4, "1, 2 or 4 consumer warp-groups");
  static_assert(kStages >= 2, "at least two stages");
  static_assert(kSmemQ % 1024 == 0 && kSmemKv % 1024 == 0, "swizzled tiles start at 1024-byte boundaries");
  static_assert(kSmemBytes <= 232448, "shared memory budget (227 KiB)");
};

// The cache blocks are read once per call: they go first when L2 evicts, so the logits the
// consumers write stay in L2 (for the top-k that reads them next) instead of being written back
// while the cache streams in, which slowed the call by 6-7% at B 256 (docs/mqa_logits.md#kernels).
inline constexpr uint64_t kCacheReadOnce = ptx::kCacheEvictFirst;

// What the producer publishes with a Q stage: the blocks [first, end) of sequence b that the CTA
// computes and the end of each of its rows (context lengths clipped to the logits' columns);
// b == kEndOfRun marks the end of the CTA's run.
struct SequenceWork {
  static constexpr uint32_t kEndOfRun = 0xffffffffu;
  uint32_t b, first, end, reserved;
  uint32_t row_end[4];
};

// What a CTA needs of sequence b.
struct PagedSequence {
  uint32_t segments;  // ceil(longest row / 256), as the schedule counts them
  uint32_t blocks;    // blocks computed: ceil(length / 64), the length clipped as the header says
};

DG_DEVICE int32_t paged_length(const PagedMqaLogitsParams& p, uint32_t b, uint32_t next_n) {
  const int32_t* row = p.ctx + static_cast<int64_t>(b) * p.ld_ctx;
  int32_t len = row[0];
  if (p.ctx_2d)
    for (uint32_t j = 1; j < next_n; ++j) len = max(len, row[j]);
  return len;
}

DG_DEVICE PagedSequence paged_sequence(const PagedMqaLogitsParams& p, uint32_t b, uint32_t next_n) {
  const int32_t len = paged_length(p, b, next_n);
  PagedSequence s;
  s.segments = len > 0 ? ceil_div(static_cast<uint32_t>(len), 256u) : 0u;
  const uint32_t cap = min_of(p.max_context_len, p.max_blocks * 64u);
  s.blocks = ceil_div(clamp_u32(len, 0, cap), 64u);
  return s;
}

// Calls f(b, first, end) for each sequence of this CTA's run of the schedule, from schedule[cta] up
// to (not including) schedule[cta + 1], with the blocks [first, end) of the run's segments of it
// (none past the sequence's computed blocks; sequences without any are skipped). Bounded by the
// batch and each sequence's segments whatever the schedule holds. enter(b, first) runs before
// sequence b's context length is read: loads it issues overlap that read.
template <uint32_t kNextN, class Enter, class F>
DG_DEVICE void for_each_sequence(const PagedMqaLogitsParams& p, Enter&& enter, F&& f) {
  const int32_t* s = p.schedule + 2 * blockIdx.x;
  uint32_t b = static_cast<uint32_t>(max(s[0], 0)), seg = static_cast<uint32_t>(max(s[1], 0));
  const uint32_t b_end = static_cast<uint32_t>(max(s[2], 0)), seg_end = static_cast<uint32_t>(max(s[3], 0));
#pragma unroll 1
  for (; b < p.batch && (b < b_end || (b == b_end && seg < seg_end)); ++b, seg = 0) {
    enter(b, seg * 4);
    const PagedSequence sq = paged_sequence(p, b, kNextN);
    const uint32_t seg_hi = b < b_end ? sq.segments : min_of(seg_end, sq.segments);
    const uint32_t first = seg * 4, last = min_of(seg_hi * 4, sq.blocks);
    if (first < last) f(b, first, last);
  }
}

template <class T>
DG_DEVICE void paged_mqa_logits_body(const PagedMqaLogitsParams& p) {
  using OutT = typename T::OutT;
  constexpr uint32_t kStages = T::kStages, kMathWG = T::kMathWG, kHeads = T::kHeads, kNextN = T::kNextN;
  constexpr uint32_t kN = T::kN, kGroups = kN / 8, kQStages = T::kQStages;
  extern __shared__ __align__(1024) uint8_t smem[];

  const uint32_t smem_base = ptx::smem_addr(smem);
  ptx::Mbarrier* full = reinterpret_cast<ptx::Mbarrier*>(smem + T::kOffBar);
  ptx::Mbarrier* empty = full + kStages;
  ptx::Mbarrier* q_full = full + 2 * kStages;
  ptx::Mbarrier* q_empty = q_full + kQStages;
  const uint32_t full_addr = smem_base + T::kOffBar, empty_addr = full_addr + kStages * 8;
  const uint32_t q_full_addr = full_addr + 2 * kStages * 8, q_empty_addr = q_full_addr + kQStages * 8;
  const uint32_t warp = ptx::warp_uniform(threadIdx.x / 32), lane = ptx::lane_id(), wg = warp / 4;

  if (threadIdx.x == kMathWG * 128) {
    ptx::tma_prefetch_descriptor(&p.tma_q);
    ptx::tma_prefetch_descriptor(&p.tma_kv);
    ptx::tma_prefetch_descriptor(&p.tma_sf);
    ptx::tma_prefetch_descriptor(&p.tma_w);
#pragma unroll
    for (uint32_t s = 0; s < kStages; ++s) {
      ptx::mbar_init(&full[s], 1);
      ptx::mbar_init(&empty[s], kMathWG * 128);  // one arrival per consumer thread
    }
#pragma unroll
    for (uint32_t s = 0; s < kQStages; ++s) {
      ptx::mbar_init(&q_full[s], 1);
      ptx::mbar_init(&q_empty[s], kMathWG * 128);
    }
    ptx::fence_barrier_init();
  }
  __syncthreads();
  ptx::grid_dependency_wait();

  if (wg == kMathWG) {
    // ------------------------------------------------------------------ producer warp-group
    ptx::setmaxnreg_dec<T::kProducerRegs>();
    if (warp == kMathWG * 4) {
      // The whole warp walks the schedule: each lane holds one entry of a 32-block window of the
      // block table, so one load latency serves 32 blocks; lane 0 issues the barriers and copies.
      uint32_t stage = 0, phase = 0, q_iter = 0;
      uint32_t window_first = 0;
      int32_t window = 0;
      // Entries up to the table's width are readable; those past the sequence's blocks go unused.
      const auto load_window = [&](uint32_t b, uint32_t first) {
        window_first = first;
        const uint32_t i = first + lane;
        window = i < p.max_blocks ? p.block_table[static_cast<int64_t>(b) * p.ld_block_table + i] : 0;
      };
      // The Q stage of the next sequence (or the end marker) once the consumers released it.
      const auto next_q_stage = [&]() {
        const uint32_t qs = q_iter % kQStages, qp = (q_iter / kQStages) & 1;
        ++q_iter;
        if (lane == 0) ptx::mbar_wait(q_empty_addr + qs * 8, qp ^ 1);
        return qs;
      };
      for_each_sequence<kNextN>(
          p, load_window, [&](uint32_t b, uint32_t first, uint32_t end) {
            const uint32_t qs = next_q_stage();
            if (lane == 0) {
              SequenceWork work{b, first, end, 0, {0, 0, 0, 0}};
              const int32_t* ctx = p.ctx + static_cast<int64_t>(b) * p.ld_ctx;
#pragma unroll
              for (uint32_t j = 0; j < kNextN; ++j)
                work.row_end[j] = clamp_u32(p.ctx_2d ? ctx[j] : ctx[0] - static_cast<int32_t>(kNextN - 1 - j), 0,
                                            p.max_context_len);
              // Published by the arrive's release.
              *reinterpret_cast<SequenceWork*>(smem + T::kOffWork + qs * 32) = work;
              ptx::mbar_arrive_expect_tx(&q_full[qs], T::kSmemQ + T::kSmemW);
              ptx::tma_load_2d(&p.tma_q, &q_full[qs], smem + T::kOffQ + qs * T::kSmemQ, 0,
                               static_cast<int32_t>(b * kN));
              ptx::tma_load_2d(&p.tma_w, &q_full[qs], smem + T::kOffW + qs * T::kSmemW, 0,
                               static_cast<int32_t>(b * kNextN));
            }
#pragma unroll 1
            for (uint32_t f = first; f < end; f += kMathWG) {
              const uint32_t n = min_of(kMathWG, end - f);
              if (f + n > window_first + 32) load_window(b, f);
              int32_t blocks[kMathWG];
#pragma unroll
              for (uint32_t w = 0; w < kMathWG; ++w) blocks[w] = __shfl_sync(0xffffffffu, window, f - window_first + w);
              if (lane == 0) {
                ptx::mbar_wait(empty_addr + stage * 8, phase ^ 1);
                ptx::mbar_arrive_expect_tx(&full[stage], n * (T::kSmemKv + T::kSmemSf));
                for (uint32_t w = 0; w < n; ++w) {
                  const uint32_t slot = stage * kMathWG + w;
                  ptx::tma_load_3d(&p.tma_kv, &full[stage], smem + T::kOffKv + slot * T::kSmemKv, 0, 0, blocks[w],
                                   kCacheReadOnce);
                  ptx::tma_load_2d(&p.tma_sf, &full[stage], smem + T::kOffSf + slot * T::kSmemSf, 0, blocks[w],
                                   kCacheReadOnce);
                }
              }
              __syncwarp();
              if (++stage == kStages) stage = 0, phase ^= 1;
            }
          });
      // The end of the run: a Q stage without data whose work says so.
      const uint32_t qs = next_q_stage();
      if (lane == 0) {
        reinterpret_cast<SequenceWork*>(smem + T::kOffWork + qs * 32)->b = SequenceWork::kEndOfRun;
        ptx::mbar_arrive(q_full_addr + qs * 8);
      }
      __syncwarp();
    } else if (p.clean) {
      // -inf past each sequence's computed blocks, for this CTA's share of the rows.
      const uint32_t tid = threadIdx.x - (kMathWG * 128 + 32);
      const uint32_t rows = p.batch * kNextN;
      const uint32_t r0 = static_cast<uint32_t>(static_cast<uint64_t>(rows) * blockIdx.x / gridDim.x);
      const uint32_t r1 = static_cast<uint32_t>(static_cast<uint64_t>(rows) * (blockIdx.x + 1) / gridDim.x);
#pragma unroll 1
      for (uint32_t r = r0; r < r1; ++r) {
        const PagedSequence sq = paged_sequence(p, r / kNextN, kNextN);
        OutT* row = static_cast<OutT*>(p.logits) + static_cast<int64_t>(r) * p.ld_logits;
        fill_neg_inf(row, min_of(sq.blocks * 64u, p.max_context_len), p.max_context_len, tid, 96);
      }
    }
    return;
  }

  // -------------------------------------------------------------------- consumer warp-groups
  ptx::setmaxnreg_inc<T::kMathRegs>();
  const uint32_t warp_in_wg = warp % 4, quad = lane % 4;
  const uint32_t r0 = warp_in_wg * 16 + lane / 4;  // this thread's keys of a block: r0 and r0 + 8
  OutT* const out = static_cast<OutT*>(p.logits);
  const OutT ninf = out_value<OutT>(-__int_as_float(0x7f800000));
  // A block gives each quad kValues results, pr = hh * kNextN + j for key r0 + 8 hh and token j;
  // lane `quad` stores results pr = quad + 4 n (with next_n = 1, lanes 0 and 1 store one each).
  constexpr uint32_t kValues = 2 * kNextN, kOwn = kValues >= 4 ? kValues / 4 : 1;
  const bool stores = kValues >= 4 || quad < 2;
  uint32_t key[kOwn], token[kOwn];
#pragma unroll
  for (uint32_t n = 0; n < kOwn; ++n) {
    const uint32_t pr = kValues >= 4 ? quad + 4 * n : quad % 2;
    key[n] = r0 + 8 * (pr / kNextN);
    token[n] = pr % kNextN;
  }
  float acc[kN / 2];
  float w[kGroups][2];
  uint32_t stage = 0, phase = 0;
#pragma unroll 1
  for (uint32_t q_iter = 0;; ++q_iter) {
    const uint32_t qs = q_iter % kQStages, qp = (q_iter / kQStages) & 1;
    ptx::mbar_wait(q_full_addr + qs * 8, qp);
    const SequenceWork& work = *reinterpret_cast<const SequenceWork*>(smem + T::kOffWork + qs * 32);
    if (work.b == SequenceWork::kEndOfRun) break;
    const uint32_t b = work.b, first = work.first, end = work.end;
    uint32_t row_end[kOwn];  // the context length of each stored result's token
#pragma unroll
    for (uint32_t n = 0; n < kOwn; ++n) row_end[n] = work.row_end[token[n]];
    // This thread's accumulator columns are (token, head) pairs 8 g + 2 quad + e: their weights.
    const float* wt = reinterpret_cast<const float*>(smem + T::kOffW + qs * T::kSmemW);
#pragma unroll
    for (uint32_t g = 0; g < kGroups; ++g) {
      const float2 pair = *reinterpret_cast<const float2*>(wt + g * 8 + quad * 2);
      w[g][0] = pair.x;
      w[g][1] = pair.y;
    }
    const uint32_t q_addr = smem_base + T::kOffQ + qs * T::kSmemQ;
#pragma unroll 1
    for (uint32_t f = first; f < end; f += kMathWG) {
      const uint32_t block = f + wg;
      const uint32_t slot = stage * kMathWG + wg;
      // The WGMMA descriptors are computed before the barrier wait (ptx::pin).
      uint64_t kv_desc = operand_desc<T::kHeadDim>(smem_base + T::kOffKv + slot * T::kSmemKv, 0);
      uint64_t q_desc = operand_desc<T::kHeadDim>(q_addr, 0);
      ptx::pin(kv_desc);
      ptx::pin(q_desc);
      ptx::mbar_wait(full_addr + stage * 8, phase);
      float sf_key[kOwn];
      if (block < end) {
        const float* sf = reinterpret_cast<const float*>(smem + T::kOffSf + slot * T::kSmemSf);
#pragma unroll
        for (uint32_t n = 0; n < kOwn; ++n) sf_key[n] = sf[key[n]];
#pragma unroll
        for (uint32_t r = 0; r < kN / 2; ++r) ptx::fence_operand(acc[r]);
        ptx::wgmma_fence();
#pragma unroll
        for (uint32_t kk = 0; kk < T::kHeadDim / 32; ++kk)
          ptx::WgmmaE4m3<kN>::mma(ptx::advance_smem_desc(kv_desc, kk * 32), ptx::advance_smem_desc(q_desc, kk * 32),
                                  acc, kk > 0);
        ptx::wgmma_commit();
        ptx::wgmma_wait<0>();
#pragma unroll
        for (uint32_t r = 0; r < kN / 2; ++r) ptx::fence_operand(acc[r]);
      }
      // Every thread arrives: an arrival releases the arriving thread's own reads only
      // (sm90_mqa_logits.cuh says why one lane after __syncwarp is not enough for racecheck).
      ptx::mbar_arrive(empty_addr + stage * 8);
      if (++stage == kStages) stage = 0, phase ^= 1;
      if (block >= end) continue;

      // Weighted ReLU sum over the heads of each token: this thread's columns, then its quad's.
      float part[kValues];
      weighted_relu_sums<kNextN, kHeads>(acc, w, part);
      float sum[kOwn];
      quad_reduce_scatter(part, sum, quad);
#pragma unroll
      for (uint32_t n = 0; n < kOwn; ++n) {
        const uint32_t t = block * 64 + key[n];
        if (!stores || t >= p.max_context_len) continue;
        const bool masked = p.clean && t >= row_end[n];
        out[static_cast<int64_t>(b * kNextN + token[n]) * p.ld_logits + t] =
            masked ? ninf : out_value<OutT>(sum[n] * sf_key[n]);
      }
    }
    // The sequence's last WGMMA has completed (wait<0> above) and its weights and row ends are in
    // registers: the producer may replace the Q stage.
    ptx::mbar_arrive(q_empty_addr + qs * 8);  // every thread, as on `empty`
  }
}

}  // namespace dg::attention
