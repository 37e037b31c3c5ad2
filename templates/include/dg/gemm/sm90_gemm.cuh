// The SM90 dense GEMM: persistent, warp-specialised, TMA + WGMMA.
//
//   D[M,N] = alpha * A[M,K] . B[N,K]^T          (Kind::kBf16; A/B K- or MN-major)
//   D[M,N] = alpha * sum_kb sfa[m,kb] sfb[n/128,kb] (A.B^T)_kb   (kFp8_1D2D; K-major e4m3)
//   D[M,N] (+)= alpha * sum_kb sfa[m,kb] sfb[n,kb] (A.B^T)_kb    (kFp8_1D1D; K-major e4m3)
// With kReduceAdd the epilogue adds into D with a TMA reduce-add (C pre-loaded into D by the host).
// M-grouped GEMMs (kType kMGrouped*; BF16 or 1D2D) run the same pipeline over the tiles of every
// group: D[rows of g] = alpha * A[rows of g] . B[g]^T, B and SFB offset by the group, the group of
// each tile from the scheduler (sched/sm90_scheduler.cuh), rows outside the group zeroed in the
// epilogue. K-grouped GEMMs (kKGrouped; BF16 or 1D1D, FP32 D) compute D[g] (+)= alpha * A_g . B_g^T
// for the groups of a second kernel parameter (sched::KGroupedSlots): each group's A and B have
// their own TMA maps, SFA/SFB are offset by the group's first K block, D is a 3-D map [G, M, N].
// Batched GEMMs (docs/einsum.md) read A and B through 3-D maps (K, rows, batch): kBatched (BF16 or
// FP8 1D2D) computes D[z] = alpha * A[z] . B[z]^T for every batch z (D a 3-D map too, the scheduler's
// tiles carry the batch; FP8: SFA's 2-D map has ceil(K/128) rows per batch, SFB is offset by the batch
// as by an M-grouped group); kBatchReduced (BF16) computes D (+)= alpha * sum_z A[z] . B[z]^T, its K
// loop walking the (batch, K block) pairs of a split of them, each split adding its partial tile into FP32 D.
// kTransposeD (kBatched, BF16): the host swapped the operands of a per-head product of few rows
// (D_z^T = B_z . A_z^T, docs/einsum.md#few-rows-per-head); the tile's rows are D's columns and the
// epilogue stores it transposed (epilogue::TransposedStore).
//
// Thread block: kMathWG consumer warp-groups (threads [0, 128*kMathWG)) issue WGMMA on their
// kWgM = BLOCK_M / kMathWG rows of the tile; the last warp-group is the producer, one elected thread
// of which issues every TMA load into a ring of kStages shared-memory stages guarded by full/empty
// mbarriers; in 1D2D GEMMs its second warp fills a ring of SFB scalars of its own (SfbRing). With a
// 2-CTA cluster the two CTAs compute tiles that share A (pair along N) or B (pair
// along M); a shared A is loaded half by each CTA, a shared B whole by rank 0, multicast to both, and
// the consumers of both CTAs release a stage of either CTA.
//
// Split-K (kSplitK > 1, for few tiles and long K): the kSplitK CTAs of a cluster compute the same tile
// over disjoint K ranges; each leaves its FP32 partial tile in its shared memory, and after a cluster
// barrier each CTA sums a 1/kSplitK share of the tile's rows across the cluster (DSMEM reads) and
// writes it to D. One tile per CTA (the grid is not persistent); no workspace, deterministic.
// Masked GEMMs with kSplitK == 2 split only a last round that would be at most half full, over CTA
// pairs (the "split tail", sched/sm90_scheduler.cuh): the grid stays persistent and the whole tiles
// take the usual epilogue; the one split tile of a pair, the last of both CTAs, is reduced as above.
//
// Shared memory (dynamic, 1024-byte aligned):
//   [D staging: BLOCK_M x BLOCK_N OutT or rotating strips; none with split-K]
//   [A stages] [B stages] [SFA stages] [SFB stages (1D1D)] [SFB ring (1D2D)] [barriers]
// Split-K writes its FP32 partial tile over the stages (and past them where the ring is smaller).
// A/B tiles use the 128-byte swizzle: K-major tiles are rows of BLOCK_K (128 bytes), MN-major tiles
// (BF16 only) are column chunks of 64 MN elements x BLOCK_K rows.
#pragma once
#include <dg/types.cuh>
#include <dg/ptx/common.cuh>
#include <dg/ptx/mbarrier.cuh>
#include <dg/ptx/tma.cuh>
#include <dg/ptx/wgmma.cuh>
#include <dg/gemm/kind.cuh>
#include <dg/sched/sm90_scheduler.cuh>
#include <dg/epilogue/sm90_fused.cuh>
#include <dg/epilogue/sm90_store.cuh>

namespace dg::gemm {

enum class Major : int { kK = 0, kMN = 1 };

template <bool kCond, class A, class B> struct Select { using type = A; };
template <class A, class B> struct Select<false, A, B> { using type = B; };

// Kernel argument (passed by value as a __grid_constant__ parameter). The host mirrors this layout.
// The scalars every warp reads before its first tile (the problem and the tile walk) share one
// 64-byte line of the constant bank, right after the maps (the parameter space starts 64-byte
// aligned): the load of m, n and k at the kernel's start brings them all, so the walk costs no
// further constant-cache miss before the first TMA load (which a launch of one tile per CTA waits on).
struct alignas(64) Sm90GemmParams {
  TmaDescriptor tma_a;    // K-major: dims (K, M) box (BLOCK_K, rows); MN-major: dims (M, K) box (64, BLOCK_K)
  TmaDescriptor tma_b;    // same for B with N
  TmaDescriptor tma_d;    // dims (N, M), box (strip, BLOCK_M / kMathWG)
  TmaDescriptor tma_sfa;  // FP8: dims (align(M,4), ceil(K/128)), box (BLOCK_M, 1), fp32
  TmaDescriptor tma_sfb;  // 1D1D: dims (align(N,4), ceil(K/128)), box (BLOCK_N, 1), fp32
  TmaDescriptor tma_a_tail;  // as tma_a with a shorter box: kATailBox (BLOCK_K, align8(M % BLOCK_M)) for the
                             // last row block; kAHalfBox (BLOCK_K, BLOCK_M / 2) for a half-empty group tile
  uint32_t m, n, k;       // batched: m spans every batch's blocks of rows (batches x blocks x BLOCK_M)
  uint32_t raster_along_n;   // 0: bands of unit-rows, 1: bands of unit-columns
  sched::WalkDivisors walk;  // the tile walk's divisors (dense, per-row contiguous, K-grouped)
  uint32_t raster_band;      // units per raster band (>= 1)
  float alpha;
  uint32_t sfb_rows;      // 1D2D: ceil(N / 128)
  const float* sfb;       // 1D2D: SFB[nb][kb] = sfb[nb * sfb_stride_n + kb * sfb_stride_k]
  int64_t sfb_stride_n;
  int64_t sfb_stride_k;
  const int32_t* grouped_layout;  // M-grouped: per-row groups (contiguous), group ends (psum), rows (masked)
  uint32_t num_groups;   // grouped: the groups; batched: the batches; batch-reduced: the K splits
  uint32_t group_rows;   // M-grouped: rows of A (contiguous), max_m (masked); batch-reduced: the batches
  void* d;        // split-K: D written with plain stores, row stride ldd elements
  int64_t ldd;
  int64_t sfb_stride_g;  // M-grouped 1D2D: elements between the groups' SFB blocks
  epilogue::FusedParams fused;  // bias and FP8 D's scales (fused epilogues)
};

static_assert(sizeof(Sm90GemmParams) == 960, "the host mirrors this layout (src/ops/gemm.h)");

// A count-adaptive masked kernel's second parameter: for each of its other tiles, that tile's B and
// D maps and the totals of row blocks (over the groups, ceil(rows / BLOCK_M) each) at which the
// kernel runs it (no total marked twice; a tile the kernel lacks marks none).
constexpr uint32_t kAltRowBlocks = 256, kMaxAltTiles = 2;
struct alignas(64) Sm90GemmAltTileParams {
  TmaDescriptor tma_b, tma_d;
  uint64_t rows[kAltRowBlocks / 64];
};
struct Sm90GemmAltParams {
  Sm90GemmAltTileParams tile[kMaxAltTiles];
};
static_assert(sizeof(Sm90GemmAltParams) == 640, "the host mirrors this layout (src/ops/gemm.h)");

template <Kind kKind_, Major kMajorA_, Major kMajorB_, typename OutT_, bool kReduceAdd_, uint32_t kBlockM_,
          uint32_t kBlockN_, uint32_t kStages_, uint32_t kMathWG_, uint32_t kCluster_, bool kPairAlongN_,
          bool kOverlapPromotion_ = true, uint32_t kPromoteSplit_ = 1, uint32_t kDBufs_ = 0,
          uint32_t kSplitK_ = 1, sched::GemmType kType_ = sched::GemmType::kNormal, uint32_t kSfbBoundaries_ = 0,
          bool kStageAligned_ = false, epilogue::Activation kAct_ = epilogue::Activation::kNone,
          epilogue::Bias kBias_ = epilogue::Bias::kNone, epilogue::Scales kScales_ = epilogue::Scales::kNone,
          uint32_t kHeadLeft_ = 0, uint32_t kHeadMid_ = 0, uint32_t kHeadRight_ = 0, uint32_t kKBlocks_ = 0,
          bool kTransposeD_ = false>
struct Sm90GemmTraits {
  static constexpr Kind kKind = kKind_;
  static constexpr Major kMajorA = kMajorA_, kMajorB = kMajorB_;
  using OutT = OutT_;
  static constexpr bool kReduceAdd = kReduceAdd_;
  static constexpr uint32_t kBlockM = kBlockM_, kBlockN = kBlockN_, kStages = kStages_, kMathWG = kMathWG_;
  static constexpr uint32_t kCluster = kCluster_;
  static constexpr bool kPairAlongN = kPairAlongN_;
  static constexpr sched::GemmType kType = kType_;
  static constexpr uint32_t kSplitK = kSplitK_;
  static constexpr uint32_t kClusterDims = kSplitK > 1 ? kSplitK : kCluster;  // CTAs per cluster
  static constexpr bool kTail = kSplitK == 2 && kType == sched::GemmType::kMGroupedMasked;  // split tail

  static constexpr bool kFp8 = kKind != Kind::kBf16;
  static constexpr uint32_t kElem = kFp8 ? 1 : 2;
  static constexpr uint32_t kBlockK = 128 / kElem;
  static constexpr uint32_t kWgM = kBlockM / kMathWG;
  // 32-row tiles (M <= 32, dense or per-head: FP8 1D2D, BF16 with K-major A): A's box (and
  // SFA) hold 32 rows, but a WGMMA always computes 64: its rows 32-63 read the next 4 KB of shared
  // memory (the next stage's A, or the first stage's B after the last A) and land in warps 2-3 of
  // the warp-group, which store nothing. Half the A bytes per K block of a 64-row tile, where A's
  // loads are mostly rows past M.
  static constexpr bool kHalfM = kWgM == 32;
  static constexpr uint32_t kMIters = kHalfM ? 1 : kWgM / 64;
  static constexpr uint32_t kThreads = 128 * (kMathWG + 1);
  static constexpr bool kMcA = kCluster == 2 && kPairAlongN;   // A shared by the CTA pair
  static constexpr bool kMcB = kCluster == 2 && !kPairAlongN;  // B shared by the CTA pair
  static constexpr bool kOverlapPromotion = kFp8 && kOverlapPromotion_;
  // FP8: the WGMMA partials cover BLOCK_N / kPromoteSplit columns at a time (fewer registers for
  // wide tiles: each K block is issued and promoted in kPromoteSplit column slices).
  static constexpr uint32_t kPromoteSplit = kFp8 ? kPromoteSplit_ : 1;
  // FP8 with two m-iterations per warp-group and two units without overlap: the units are the
  // m-iterations (rows), not column slices (192 accumulator registers either way; full-width
  // WGMMAs ran 256x128 tiles ~12% faster on an H100).
  static constexpr bool kPromoteRows = kFp8 && kMIters == 2 && kPromoteSplit == 2 && !kOverlapPromotion;
  static constexpr bool kSfbStraddle = kKind == Kind::kFp8_1D2D && (128 % kBlockN != 0);
  // Straddling tiles: the columns [0, b) of a tile use the first SFB row, b = min(128 - n0 % 128,
  // BLOCK_N), a multiple of 8. Bit b / 8 - 1 is set for each b the problem's tiles take (the host
  // computes the set from N); with a set, the K loop is compiled once per b instead of selecting
  // each column unit's scale at run time (SfbUnits). 0: run-time selection.
  static constexpr uint32_t kSfbBoundaries = kSfbBoundaries_;
  // FP8: every tile's K blocks are a whole number of turns of the stage ring (the host checks it:
  // ops::stage_aligned), so each tile starts at stage 0 and the consumers' K loop, unrolled over
  // the ring, addresses every stage's tiles, scales and barriers at constant offsets: no stage
  // arithmetic per K block (the uniform ops a run-time stage costs were most of the per-warp
  // instruction gap to DeepGEMM's loop, whose K is a compile-time constant).
  static constexpr bool kStageAligned = kFp8 && kStageAligned_;
  // Dense (or batched) problems with few K blocks: their count compiled in (0: p.k's at run time), so
  // that the consumers' K loop is straight-line code with constant bounds (no zeroing of the
  // accumulators ahead of the first promotion, no leftover loop). One kernel per count (src/ops: compiled_k_blocks).
  static constexpr uint32_t kKBlocks = kKBlocks_;

  static constexpr uint32_t kSmemA = kBlockM * kBlockK * kElem;
  static constexpr uint32_t kSmemB = kBlockN * kBlockK * kElem;
  static constexpr uint32_t kSmemSfa = kFp8 ? align_up<uint32_t>(kBlockM * 4, 128) : 0;
  // 1D1D: the tile's BLOCK_N per-column scales, per stage (TMA). 1D2D: the SFB ring below instead.
  static constexpr uint32_t kSmemSfb = kKind == Kind::kFp8_1D1D ? align_up<uint32_t>(kBlockN * 4, 128) : 0;
  // 1D2D: the (at most two) SFB scalars per K block of the tile's 128-column blocks come through a
  // ring of their own, filled by a second producer warp for windows of kSfbWindow K blocks ahead of
  // the consumers (sfb_ring_fill): the stages' barriers wait for TMA alone. (A cp.async copy of the
  // scalars beside each stage, which the stage's barrier also waited for, cost 1-2% on an H200.)
  static constexpr bool kSfbRing = kKind == Kind::kFp8_1D2D;
  // The ring's filler (sfb_ring_fill) multiplies the scalars by alpha: the promotion applies it, and
  // the epilogue spends no multiply per output element (128 per thread of a 256x128 tile).
  static constexpr bool kAlphaInSfb = kSfbRing;
  // A slot holds up to kSfbSlotKb K blocks (the host mirrors its bytes: kSfbSlotBytes). Stage-aligned
  // loops use windows of whole ring turns (30 K blocks for 3, 5 or 6 stages), so that a turn's K
  // blocks lie in one window and the consumers read them, wait and release once per turn.
  static constexpr uint32_t kSfbSlotKb = 32, kSfbSlots = 2;
  static constexpr uint32_t kSfbWindow = kStageAligned ? kStages * (kSfbSlotKb / kStages) : kSfbSlotKb;
  static constexpr uint32_t kSmemSfbSlot = 2 * kSfbSlotKb * 4;  // [row][K block of the window], FP32
  static constexpr uint32_t kTxBytes = kSmemA + kSmemB + (kFp8 ? kBlockM * 4 : 0) +
                                       (kKind == Kind::kFp8_1D1D ? kBlockN * 4 : 0);
  // A dense call's (a batched call's: every batch's) partial last row block loads K-major A through a
  // box of its own rows rounded up to 8 (p.tma_a_tail), not through a full box whose rows past M TMA
  // fills with zeros: with that fill BF16 64-row tiles at M 80 ran 1.7x slower than at M 128 on an
  // H200 (docs/gemm.md#kernels), and the zero rows cost L2 reads as real ones do. The WGMMA's rows
  // past the box read stale shared memory, as kHalfM's do, and are never stored.
  static constexpr bool kATailBox =
      (kType == sched::GemmType::kNormal || kType == sched::GemmType::kBatched) && kMajorA == Major::kK && !kMcA;
  // Masked and psum groups: a tile of at most half its rows in its group (decoding's few tokens per
  // expert) loads A through a box of BLOCK_M / 2 rows (p.tma_a_tail): the rows past the group are
  // in bounds but never stored, and their loads were up to half of A's reads.
  static constexpr bool kAHalfBox = (kType == sched::GemmType::kMGroupedMasked ||
                                     kType == sched::GemmType::kMGroupedContiguousPsum) &&
                                    kMajorA == Major::kK && !kMcA && kBlockM >= 64;
  static constexpr bool kKGrouped = kType == sched::GemmType::kKGrouped;
  static constexpr bool kBatched = kType == sched::GemmType::kBatched;
  static constexpr bool kBatchReduced = kType == sched::GemmType::kBatchReduced;
  static constexpr bool kMGrouped = kType != sched::GemmType::kNormal && !kKGrouped && !sched::is_batched(kType);
  static constexpr bool k3dD = kKGrouped || kBatched;  // D's map is 3-D: (N, M, group or batch)
  // Fused epilogue (bias, SwiGLU, FP8 D): D's tile has Fused::kOutN columns.
  using Fused = epilogue::Fused<kAct_, kBias_, kScales_, kMIters, kBlockN>;
  static constexpr uint32_t kOutN = Fused::kOutN;
  // D staging: each consumer warp-group's strip buffers (the whole tile, or kDBufs_ rotating strips).
  // skip_head_mid (kHeadLeft_ + kHeadRight_ > 0): the store maps GEMM columns to D's head columns.
  static constexpr bool kHeadSplit = kHeadLeft_ + kHeadRight_ > 0;
  using Columns = typename Select<kHeadSplit, epilogue::HeadColumns<OutT, kHeadLeft_, kHeadMid_, kHeadRight_>,
                                  epilogue::IdentityColumns>::type;
  // Head parts narrower than a 32-byte strip: the tile is stored from registers, nothing staged.
  static constexpr bool kDirectStore = Columns::kDirect;
  // Per-head products of few rows run with their operands swapped (the host's swap_operands, docs/einsum.md):
  // the tile's rows are D's columns, and the epilogue stores each block transposed.
  static constexpr bool kTransposeD = kTransposeD_;
  using Store = typename Select<kTransposeD, epilogue::TransposedStore<kWgM, kBlockN>,
                                epilogue::WarpgroupStore<OutT, kWgM, kOutN, kReduceAdd, kDBufs_, k3dD, Columns>>::type;
  // Split-K partial tile (FP32): rows padded to an odd multiple of 32 bytes mod 128, so that the
  // 8 rows x 32 bytes a warp stores at once fall in distinct bank groups.
  // It overlays the stage ring: a split-K CTA computes one tile (a split tail's is its last), so the
  // ring is idle once its last K block is consumed, and the stages keep the whole budget.
  static constexpr uint32_t kRedPitch = kBlockN * 4 + ((kBlockN * 4) % 64 == 0 ? 32 : 0);
  static constexpr uint32_t kSmemRed = kSplitK > 1 ? kBlockM * kRedPitch : 0;
  static constexpr uint32_t kSmemD = (kSplitK > 1 && !kTail) || kDirectStore ? 0 : kMathWG * Store::kSmemBytes;
  static constexpr uint32_t kOffA = kSmemD;
  static constexpr uint32_t kOffB = kOffA + kStages * kSmemA;
  static constexpr uint32_t kOffSfa = kOffB + kStages * kSmemB;
  static constexpr uint32_t kOffSfb = kOffSfa + kStages * kSmemSfa;
  static constexpr uint32_t kOffRed = kSmemD;  // the partial tile (split-K), over the ring
  static constexpr uint32_t kOffSfbRing = align_up<uint32_t>(max_of(kOffSfb + kStages * kSmemSfb, kOffRed + kSmemRed), 16);
  static constexpr uint32_t kOffBar = align_up<uint32_t>(kOffSfbRing + (kSfbRing ? kSfbSlots * kSmemSfbSlot : 0), 8);
  // Barriers: each stage's full and empty; then (SFB ring) each slot's full and empty.
  static constexpr uint32_t kSmemBytes = kOffBar + kStages * 2 * 8 + (kSfbRing ? kSfbSlots * 2 * 8 : 0);

  using Sched = typename Select<kKGrouped, sched::KGroupedScheduler<kBlockM>,
                                sched::Sm90Scheduler<kType, kBlockM, kBlockN, kCluster, kPairAlongN, kSplitK>>::type;

  static_assert((kBlockM % 64 == 0 && kWgM % 64 == 0 && kMIters >= 1 && kMIters <= 2) || kHalfM,
                "BLOCK_M / math WGs: 64 or 128 rows per WG, or a 32-row tile");
  static_assert(!kHalfM || (kMathWG == 1 && kSplitK == 1 && kCluster == 1 && !Fused::kActive && !kHeadSplit &&
                            (kType == sched::GemmType::kNormal || kType == sched::GemmType::kBatched) &&
                            (kKind == Kind::kFp8_1D2D || (kKind == Kind::kBf16 && kMajorA == Major::kK))),
                "32-row tiles: dense or per-head, FP8 1D2D or BF16 with K-major A; one warp-group, no split-K, "
                "CTA pair, fused or head-split epilogue");
  static_assert(kBlockN % 8 == 0 && kBlockN >= 8 && kBlockN <= 256, "BLOCK_N: multiple of 8 in [8, 256]");
  static_assert(kMathWG == 1 || kMathWG == 2, "1 or 2 consumer warp-groups");
  static_assert(!kFp8 || (kMajorA == Major::kK && kMajorB == Major::kK), "FP8 WGMMA needs K-major A and B");
  static_assert(kMajorB == Major::kK || kBlockN % 64 == 0, "MN-major B needs BLOCK_N % 64 == 0");
  static_assert(!kMcA || (kBlockM / 2) % (kMajorA == Major::kMN ? 64 : 8) == 0, "A multicast halves");
  static_assert(!kMcB || (kBlockN / 2) % (kMajorB == Major::kMN ? 64 : 8) == 0, "B multicast halves");
  static_assert(!kSfbStraddle || kBlockN <= 128 + (kBlockN & (~kBlockN + 1)), "a tile may straddle at most two SFB rows");
  static_assert(!kStageAligned || (kSplitK == 1 && kType != sched::GemmType::kKGrouped && kStages <= 8),
                "stage-aligned K loop: one CTA per tile over the same K blocks, at most 8 stages unrolled");
  static_assert(kSfbBoundaries == 0 || (kSfbStraddle && kSfbBoundaries < (1u << 16)), "SFB boundaries: 1D2D straddling tiles, b <= 128");
  static_assert(kKBlocks == 0 || ((kType == sched::GemmType::kNormal || kBatched) && kSplitK == 1),
                "compiled K blocks: dense or batched GEMMs whose CTAs each take a tile's every K block");
  static_assert(kKind != Kind::kFp8_1D1D || sizeof(OutT) == 4, "1D1D writes FP32");
  static_assert(kSmemBytes <= 232448, "shared memory budget (227 KiB)");
  static_assert(kStages >= 2, "at least 2 stages");
  static_assert(kPromoteSplit == 1 || kPromoteSplit == 2 || kPromoteSplit == 4, "promotion split 1, 2 or 4");
  static_assert((kBlockN / kPromoteSplit) % 8 == 0 && kBlockN % kPromoteSplit == 0, "column slices of 8");
  static_assert(kSplitK == 1 || kSplitK == 2 || kSplitK == 4 || kSplitK == 8, "split-K over 1, 2, 4 or 8 CTAs");
  static_assert(kSplitK == 1 || kCluster == 1, "split-K clusters do not multicast");
  static_assert(!kMGrouped || kSplitK == 1 || kTail, "M-grouped GEMMs split only the masked tail, by 2");
  static_assert(!kTail || !kSfbStraddle || kSfbBoundaries != 0,
                "split tail: straddling 1D2D tiles need their SFB boundaries at compile time (registers)");
  static_assert(!kMGrouped || (kKind != Kind::kFp8_1D1D && !kReduceAdd), "M-grouped GEMMs: BF16 or FP8 1D2D, D written");
  static_assert(!kKGrouped || (kKind != Kind::kFp8_1D2D && sizeof(OutT) == 4 && kCluster == 1 && kSplitK == 1),
                "K-grouped GEMMs: BF16 or FP8 1D1D into FP32 D, no CTA pairs or split-K");
  static_assert(!Fused::kActive || (kSplitK == 1 && !kKGrouped && !kReduceAdd),
                "fused epilogues: dense or M-grouped, D written (no C), no split-K");
  static_assert((kScales_ != epilogue::Scales::kNone) == (sizeof(OutT) == 1), "an FP8 D comes with its scales");
  static_assert(!sched::is_batched(kType) ||
                    ((kKind == Kind::kBf16 || (kBatched && kKind == Kind::kFp8_1D2D)) && kSplitK == 1 && !Fused::kActive),
                "batched GEMMs: BF16 (or FP8 1D2D per batch), no split-K, no fused epilogue");
  static_assert(!kBatchReduced || (sizeof(OutT) == 4 && kReduceAdd), "batch-reduced GEMMs add into FP32 D");
  static_assert(!kTransposeD || (kBatched && kKind == Kind::kBf16 && sizeof(OutT) == 2 && !kReduceAdd && !kHalfM &&
                                 kDBufs_ == 0 && kCluster == 1 && !Fused::kActive && !kHeadSplit),
                "a transposed D: per-head BF16 GEMMs into BF16 D, 64-row blocks per warp-group, whole-tile staging, "
                "single CTAs, no fused or head-split epilogue");
  static_assert(!kHeadSplit || (kSplitK == 1 && !k3dD && !Fused::kSwiGlu),
                "skip_head_mid stores whole tiles of GEMM columns (no split-K, 3-D D or SwiGLU)");
};

// The scale the epilogue applies to the accumulators: alpha, or none where the promotion applied it.
template <class T> DG_DEVICE auto output_scale(const Sm90GemmParams& p) {
  if constexpr (T::kAlphaInSfb) return epilogue::UnitScale{};
  else return p.alpha;
}

// Split-K: CTA rank r of the cluster takes share r of the tile's 4-column chunks (the first `rows`
// rows of the tile), sums each over every CTA's partial tile at `red` (DSMEM), scales by alpha (unless
// the promotion did: output_scale) and writes it to D (with kReduceAdd: adds it to D); rows from
// `valid` on are written as zeros (a masked group's rows past its count, as the whole tiles' epilogue
// does). Consumer threads only, after the cluster barrier that publishes the partials.
template <class T>
DG_DEVICE void split_k_reduce_store(const Sm90GemmParams& p, const uint8_t* red, uint32_t m0, uint32_t n0,
                                    uint32_t rows, uint32_t valid) {
  using OutT = typename T::OutT;
  constexpr uint32_t kChunksPerRow = T::kBlockN / 4;
  const uint32_t cols = min_of(T::kBlockN, p.n - n0);
  const uint32_t total = rows * kChunksPerRow, rank = ptx::cluster_ctarank();
  const uint32_t begin = rank * total / T::kSplitK, end = (rank + 1) * total / T::kSplitK;
  const uint32_t base = ptx::smem_addr(red);
  uint32_t peer[T::kSplitK];
#pragma unroll
  for (uint32_t r = 0; r < T::kSplitK; ++r) peer[r] = ptx::map_shared_rank(base, r);
  OutT* d = static_cast<OutT*>(p.d);
  for (uint32_t c = begin + threadIdx.x; c < end; c += T::kMathWG * 128) {
    const uint32_t row = c / kChunksPerRow, col = (c % kChunksPerRow) * 4;
    if (col >= cols) continue;
    const uint32_t off = row * T::kRedPitch + col * 4;
    float v[4] = {0.f, 0.f, 0.f, 0.f};
    if (row < valid) {
#pragma unroll
      for (uint32_t r = 0; r < T::kSplitK; ++r) {
        const f32x4 x = ptx::ld_shared_cluster_v4(peer[r] + off);
        v[0] += x.x, v[1] += x.y, v[2] += x.z, v[3] += x.w;
      }
    }
    OutT* out = d + static_cast<int64_t>(m0 + row) * p.ldd + (n0 + col);
    if (cols - col >= 4) {
      float o[4];
#pragma unroll
      for (uint32_t j = 0; j < 4; ++j) o[j] = v[j] * output_scale<T>(p);
      if constexpr (sizeof(OutT) == 4) {
        if constexpr (T::kReduceAdd) {
          const f32x4 old = *reinterpret_cast<const f32x4*>(out);
          o[0] += old.x, o[1] += old.y, o[2] += old.z, o[3] += old.w;
        }
        *reinterpret_cast<f32x4*>(out) = f32x4{o[0], o[1], o[2], o[3]};
      } else {
        if constexpr (T::kReduceAdd) {
          const u32x2 old = *reinterpret_cast<const u32x2*>(out);
          o[0] += __uint_as_float(old.x << 16), o[1] += __uint_as_float(old.x & 0xffff0000u);
          o[2] += __uint_as_float(old.y << 16), o[3] += __uint_as_float(old.y & 0xffff0000u);
        }
        *reinterpret_cast<u32x2*>(out) = u32x2{float2_to_bf16x2(o[0], o[1]).bits, float2_to_bf16x2(o[2], o[3]).bits};
      }
    } else {
#pragma unroll
      for (uint32_t j = 0; j < 3; ++j) {
        if (j >= cols - col) break;
        float o = v[j] * output_scale<T>(p);
        if constexpr (sizeof(OutT) == 4) {
          if constexpr (T::kReduceAdd) o += out[j];
          out[j] = o;
        } else {
          if constexpr (T::kReduceAdd) o += bf16_to_float(out[j]);
          out[j] = float_to_bf16(o);
        }
      }
    }
  }
}

// M-grouped GEMMs: whether row r of tile t belongs to the tile's group (not past a masked group's
// count or a psum group's end; a contiguous row whose entry is the group).
DG_DEVICE bool row_in_group(const sched::Tile& t, const int32_t* layout, uint32_t m_total, uint32_t r) {
  if (t.per_row) return t.m0 + r < m_total && layout[t.m0 + r] == static_cast<int32_t>(t.group);
  return r < t.rows;
}

// M-grouped GEMMs: zeroes this thread's accumulator rows that do not belong to the tile's group.
template <class T, class Acc>
DG_DEVICE void zero_foreign_rows(Acc& acc, const sched::Tile& t, const int32_t* layout, uint32_t m_total,
                                 uint32_t row0) {
  constexpr uint32_t kAcc = T::kBlockN / 2;
#pragma unroll
  for (uint32_t i = 0; i < T::kMIters; ++i)
#pragma unroll
    for (uint32_t h = 0; h < 2; ++h) {
      const uint32_t r = row0 + i * 64 + h * 8;  // this thread's row in the tile
      if (!row_in_group(t, layout, m_total, r)) {
#pragma unroll
        for (uint32_t c = 0; c < kAcc; c += 4) acc[i][c + 2 * h] = acc[i][c + 2 * h + 1] = 0.f;
      }
    }
}

// The fused epilogue of this thread's rows (row0: its first row in the tile). Rows that are not
// the output's (past M, or outside the tile's group) get FP8 scales of 0; the scale layout's rows
// are the masked group's own (m_local0), else A's.
template <class T, class Acc>
DG_DEVICE void fused_epilogue(Acc& acc, const Sm90GemmParams& p, const sched::Tile& t, uint32_t n0, uint32_t row0) {
  bool valid[T::kMIters][2];
#pragma unroll
  for (uint32_t i = 0; i < T::kMIters; ++i)
#pragma unroll
    for (uint32_t h = 0; h < 2; ++h) {
      const uint32_t r = row0 + i * 64 + h * 8;
      if constexpr (T::kMGrouped) valid[i][h] = row_in_group(t, p.grouped_layout, p.group_rows, r);
      else valid[i][h] = t.m0 + r < p.m;
    }
  T::Fused::run(acc, T::kAlphaInSfb ? 1.0f : p.alpha, p.fused, n0, p.n, valid, t.m_local0 + row0, t.group);
}

// ---------------------------------------------------------------------------------------------
// Producer: loads one operand tile (rows [row0, row0 + rows) of BLOCK_MN, all of BLOCK_K) of a stage.
// k3D: the map is 3-D and z its third coordinate (the batch).
template <Major kMajor, uint32_t kElem, bool kMulticast, bool k3D = false>
DG_DEVICE void load_operand(const TmaDescriptor* desc, ptx::Mbarrier* bar, uint8_t* tile, uint32_t tile_row0,
                            uint32_t rows, uint32_t g_row0, uint32_t k0, uint16_t mask, uint32_t z = 0) {
  constexpr uint32_t kBlockK = 128 / kElem;
  auto box = [&](uint8_t* dst, uint32_t c0, uint32_t c1) {
    if constexpr (k3D && kMulticast) ptx::tma_load_3d_multicast(desc, bar, dst, c0, c1, z, mask);
    else if constexpr (k3D) ptx::tma_load_3d(desc, bar, dst, c0, c1, z);
    else if constexpr (kMulticast) ptx::tma_load_2d_multicast(desc, bar, dst, c0, c1, mask);
    else ptx::tma_load_2d(desc, bar, dst, c0, c1);
  };
  if constexpr (kMajor == Major::kK) {
    box(tile + tile_row0 * 128, k0, g_row0 + tile_row0);
  } else {
    for (uint32_t c = tile_row0 / 64; c < (tile_row0 + rows) / 64; ++c) box(tile + c * (kBlockK * 128), g_row0 + c * 64, k0);
  }
}

// A compile-time uint32_t that converts to its value (the boundary of with_boundary).
template <uint32_t V> struct U32Constant {
  DG_DEVICE constexpr operator uint32_t() const { return V; }
};

// Calls f(U32Constant<b>{}) for the run-time b, which must be one of the boundaries in kMask (bit
// i: b = 8 (i + 1)); the last candidate is taken without a test.
constexpr uint32_t lowest_bit_index(uint32_t x) {
  uint32_t i = 0;
  while ((x & 1u) == 0) x >>= 1, ++i;
  return i;
}
template <uint32_t kMask, class F>
DG_DEVICE void with_boundary(uint32_t b, F&& f) {
  constexpr uint32_t kLow = kMask & (~kMask + 1);
  constexpr uint32_t kV = 8 * (lowest_bit_index(kLow) + 1);
  if constexpr (kMask == kLow) f(U32Constant<kV>{});
  else if (b == kV) f(U32Constant<kV>{});
  else with_boundary<kMask & ~kLow>(b, f);
}

// A tile's SFB boundary taken at run time (boundaries too varied to compile a K loop each). Tile
// starts are multiples of gcd(BLOCK_N, 128), so the boundary is too: groups come in units of that
// many columns that share one choice, and the promotion selects the scale once per unit (the
// compiler's predicate per 8-column group cost a test and two selects per group and K block).
template <uint32_t kBlockN>
struct SfbUnits {
  static constexpr uint32_t kUnitCols = epilogue::gcd_of(kBlockN, 128u);
  bool second[kBlockN / kUnitCols];  // the unit takes the second SFB row
  DG_DEVICE explicit SfbUnits(uint32_t boundary) {
#pragma unroll
    for (uint32_t u = 0; u < kBlockN / kUnitCols; ++u) second[u] = u * kUnitCols >= boundary;
  }
};

// The scale of 8-column group g: `first` left of the boundary, else `second`.
template <class Boundary>
DG_DEVICE float sfb_pick(float first, float second, Boundary boundary, uint32_t g) {
  return g * 8 < boundary ? first : second;
}
template <uint32_t kBlockN>
DG_DEVICE float sfb_pick(float first, float second, const SfbUnits<kBlockN>& units, uint32_t g) {
  return units.second[g * 8 / SfbUnits<kBlockN>::kUnitCols] ? second : first;
}

// 1D2D SFB ring (Traits::kSfbRing): slot i holds the scalars of one window of kSfbWindow K blocks of
// a tile, [first 128-column block's, second's] (the second: the block a straddling tile reaches, the
// first again otherwise), at kOffSfbRing + i * kSmemSfbSlot. Its barriers follow the stages': the
// slots' full barriers (the filling warp's 32 lanes arrive), then their empty ones (every consumer
// thread arrives once it has read its last scalar of the window).
template <class T>
struct SfbRing {
  uint32_t full0, empty0;  // shared-window addresses of slot 0's barriers
  DG_DEVICE explicit SfbRing(uint32_t full_addr)
      : full0(full_addr + 2 * T::kStages * 8), empty0(full0 + T::kSfbSlots * 8) {}
  DG_DEVICE static float* slot_data(uint8_t* smem, uint32_t slot) {
    return reinterpret_cast<float*>(smem + T::kOffSfbRing + slot * T::kSmemSfbSlot);
  }
};

// The second producer warp: fills the SFB ring for every tile the consumers will run, window by
// window, in their order (its own copy of the tile walk). Scalars past a tile's last K block repeat
// it (never read). All 32 lanes.
template <class T, class Sched>
DG_DEVICE void sfb_ring_fill(const Sm90GemmParams& p, Sched sched, uint32_t num_kb, uint8_t* smem,
                             uint32_t full_addr, uint32_t lane) {
  const SfbRing<T> ring(full_addr);
  uint32_t kb_begin, kb_end;
  sched.k_range(num_kb, kb_begin, kb_end);
  uint32_t slot = 0, phase = 0;
  sched::Tile t;
  while (sched.next(t)) {
    if constexpr (T::kTail) sched.tile_k_range(t, num_kb, kb_begin, kb_end);
    const uint32_t n0 = t.n_block * T::kBlockN;
    const uint32_t row0 = min_of(n0 / 128, p.sfb_rows - 1), row1 = min_of((n0 + T::kBlockN - 1) / 128, p.sfb_rows - 1);
    const float* first = p.sfb + t.group * p.sfb_stride_g + row0 * p.sfb_stride_n;
    const float* second = p.sfb + t.group * p.sfb_stride_g + row1 * p.sfb_stride_n;
    for (uint32_t w0 = kb_begin; w0 < kb_end; w0 += T::kSfbWindow) {
      ptx::mbar_wait(ring.empty0 + slot * 8, phase ^ 1);
      float* dst = SfbRing<T>::slot_data(smem, slot);
      for (uint32_t i = lane; i < T::kSfbWindow; i += 32) {
        const int64_t kb = min_of(w0 + i, kb_end - 1);
        const float v0 = __ldg(first + kb * p.sfb_stride_k) * p.alpha;
        dst[i] = v0;
        dst[T::kSfbWindow + i] = T::kSfbStraddle ? __ldg(second + kb * p.sfb_stride_k) * p.alpha : v0;
      }
      ptx::mbar_arrive(ring.full0 + slot * 8);
      if (++slot == T::kSfbSlots) slot = 0, phase ^= 1;
    }
  }
}

// WGMMA descriptor of a stage's operand tile, and the byte offset inside it of sub-row `row0` (a
// multiple of 64) at K step `kk`: one add per WGMMA (ptx::advance_smem_desc).
template <Major kMajor, uint32_t kBlockK>
DG_DEVICE uint64_t tile_desc(uint32_t tile_addr) {
  // K-major: rows of 128 bytes, 8-row core groups 1024 bytes apart. MN-major: 64-element MN chunks
  // of kBlockK rows each (LBO between chunks), 8-row K groups 1024 bytes apart.
  return ptx::make_smem_desc(tile_addr, kMajor == Major::kK ? 0 : kBlockK * 128, 1024, 1);
}
template <Major kMajor, uint32_t kBlockK>
DG_DEVICE uint32_t operand_offset(uint32_t row0, uint32_t kk) {
  // K-major: a K step is 32 bytes inside the swizzle atom; MN-major: 16 rows of 128 bytes.
  return kMajor == Major::kK ? row0 * 128 + kk * 32 : (row0 / 64) * (kBlockK * 128) + kk * 16 * 128;
}

// Rows of A a tile's row block m0 counts from: a batch's (batched), else the problem's.
template <class T>
DG_DEVICE uint32_t a_rows(const Sm90GemmParams& p) {
  return T::kBatched ? p.group_rows : p.m;
}

// The tile a count-adaptive masked kernel runs: 1 + i for alt.tile[i] where it marks the total of
// the groups' row blocks of BLOCK_M rows (each group's count clamped to [0, max_m], as the group
// table reads it), else 0 (the main tile). Every thread reads the few counts itself (uniform loads;
// the host allows at most 8 groups), so the choice needs no barrier and every CTA makes the same one.
template <class T>
DG_DEVICE uint32_t alt_tile(const Sm90GemmParams& p, const Sm90GemmAltParams& alt) {
  ptx::grid_dependency_wait();  // the counts may be the previous kernel's output
  uint32_t blocks = 0;
  for (uint32_t g = 0; g < p.num_groups; ++g) {
    const int32_t rows = p.grouped_layout[g];
    blocks += ceil_div(static_cast<uint32_t>(rows < 0 ? 0 : min_of(static_cast<uint32_t>(rows), p.group_rows)), T::kBlockM);
  }
  if (blocks >= kAltRowBlocks) return 0;
  for (uint32_t i = 0; i < kMaxAltTiles; ++i)
    if ((alt.tile[i].rows[blocks / 64] >> (blocks % 64)) & 1u) return i + 1;
  return 0;
}

// kg: the K-grouped launch's groups (kKGrouped only, else nullptr). map_b / map_d: B's and D's maps
// where they are not p's (a count-adaptive kernel's second tile).
template <class T>
DG_DEVICE void sm90_gemm_body(const Sm90GemmParams& p, const sched::KGroupedSlots* kg = nullptr,
                              const TmaDescriptor* map_b = nullptr, const TmaDescriptor* map_d = nullptr) {
  if (map_b == nullptr) map_b = &p.tma_b;
  if (map_d == nullptr) map_d = &p.tma_d;
  using OutT = typename T::OutT;
  constexpr uint32_t kStages = T::kStages, kBlockM = T::kBlockM, kBlockN = T::kBlockN, kBlockK = T::kBlockK;
  constexpr uint32_t kAcc = kBlockN / 2;
  extern __shared__ __align__(1024) uint8_t smem[];

  ptx::Mbarrier* full = reinterpret_cast<ptx::Mbarrier*>(smem + T::kOffBar);
  // Shared-window addresses for the loops (stage s's tiles and barriers at fixed strides from these).
  const uint32_t smem_base = ptx::smem_addr(smem);
  const uint32_t full_addr = smem_base + T::kOffBar, empty_addr = full_addr + kStages * 8;
  ptx::Mbarrier* empty = full + kStages;
  const uint32_t warp = ptx::warp_uniform(threadIdx.x / 32);
  const uint32_t lane = ptx::lane_id();
  const uint32_t wg = warp / 4;

  if (threadIdx.x == T::kMathWG * 128) {
    ptx::tma_prefetch_descriptor(&p.tma_a);
    ptx::tma_prefetch_descriptor(map_b);
    ptx::tma_prefetch_descriptor(map_d);
    if constexpr (T::kFp8) ptx::tma_prefetch_descriptor(&p.tma_sfa);
    if constexpr (T::kKind == Kind::kFp8_1D1D) ptx::tma_prefetch_descriptor(&p.tma_sfb);
    // The short A box where the host encoded one (gemm.cpp encode_maps): always for half boxes, for
    // a dense call's last row block where M leaves one.
    if constexpr (T::kAHalfBox) ptx::tma_prefetch_descriptor(&p.tma_a_tail);
    if constexpr (T::kATailBox) {
      const uint32_t rem = a_rows<T>(p) % kBlockM;
      if (rem != 0 && align_up(rem, 8u) < kBlockM) ptx::tma_prefetch_descriptor(&p.tma_a_tail);
    }
    if constexpr (T::kKGrouped) {
      for (uint32_t s = 0; s < kg->num_slots; ++s) {
        ptx::tma_prefetch_descriptor(&kg->tma_a[s]);
        ptx::tma_prefetch_descriptor(&kg->tma_b[s]);
      }
    }
#pragma unroll
    for (uint32_t s = 0; s < kStages; ++s) {
      // The producer's arrival with the TMA byte count.
      ptx::mbar_init(&full[s], 1);
      // Every consumer thread of this CTA, and one lane of each consumer warp of the peer (release).
      ptx::mbar_init(&empty[s], T::kMathWG * 128 + (T::kCluster - 1) * T::kMathWG * 4);
    }
    if constexpr (T::kSfbRing) {
      for (uint32_t i = 0; i < T::kSfbSlots; ++i) {
        ptx::mbar_init(&empty[kStages + i], 32);                     // the slots' full barriers
        ptx::mbar_init(&empty[kStages + T::kSfbSlots + i], T::kMathWG * 128);  // their empty ones
      }
    }
    ptx::fence_barrier_init();
  }
  // A split tail's pair shares no barriers; its one DSMEM exchange has cluster barriers of its own
  // (the two at the start and end of every pair cost 2% of a two-round FP8 call).
  if constexpr (T::kClusterDims > 1 && !T::kTail) ptx::cluster_sync();
  else __syncthreads();
  // Programmatic dependent launch: everything above overlaps the previous kernel's tail.
  ptx::grid_dependency_wait();

  // Batch-reduced: p.k is one batch's K and p.group_rows the batches; K blocks run batch after batch.
  const uint32_t num_kb_batch = T::kKBlocks != 0 ? T::kKBlocks : ceil_div(p.k, kBlockK);
  const uint32_t num_kb = T::kBatchReduced ? num_kb_batch * p.group_rows : num_kb_batch;
  // Masked / psum groups: the table of rows and tiles per group, after the barriers (the host
  // adds its bytes to the launch's shared memory). Built once per CTA from device-side counts.
  uint32_t* const table = reinterpret_cast<uint32_t*>(smem + T::kSmemBytes);
  if constexpr (sched::uses_group_table(T::kType)) {
    if (warp == 0)
      sched::build_group_table<T::kType, kBlockM, T::Sched::kPairM>(table, p.grouped_layout, p.num_groups,
                                                                    p.group_rows, ceil_div(p.n, kBlockN));
    __syncthreads();
  }

  auto make_sched = [&]() {
    if constexpr (T::kKGrouped) return typename T::Sched(p.raster_along_n, &p.walk, kg);
    else return typename T::Sched(p.m, p.n, p.raster_band, p.raster_along_n, &p.walk, p.grouped_layout, p.num_groups, table);
  };

  if (wg == T::kMathWG) {
    // ------------------------------------------------------------------ producer
    ptx::setmaxnreg_dec<40>();
    if (warp == T::kMathWG * 4 && ptx::elect_one()) {
      auto sched = make_sched();
      const uint32_t rank = T::kCluster > 1 ? ptx::cluster_ctarank() : 0;
      uint32_t kb_begin, kb_end;
      sched.k_range(num_kb, kb_begin, kb_end);
      uint32_t stage = 0, phase = 0;
      sched::Tile t;
      while (sched.next(t)) {
        const uint32_t m0 = t.m0, n0 = t.n_block * kBlockN;
        if constexpr (T::kTail || T::kBatchReduced) sched.tile_k_range(t, num_kb, kb_begin, kb_end);
        // Batched: the batch z of the operands' 3-D maps, and (batch-reduced) the K block kz inside
        // it, stepped along with kb.
        uint32_t z = T::kBatched ? t.group : 0u, kz = kb_begin;
        if constexpr (T::kBatchReduced) {
          z = kb_begin / num_kb_batch;
          kz = kb_begin - z * num_kb_batch;
        }
        // K-grouped: the slot's own maps of A and B, its K blocks, its first K block in SFA / SFB.
        const TmaDescriptor* tma_a = &p.tma_a;
        const TmaDescriptor* tma_b = map_b;
        uint32_t sf_kb0 = 0;
        if constexpr (T::kKGrouped) {
          tma_a = &kg->tma_a[t.group];
          tma_b = &kg->tma_b[t.group];
          kb_end = t.k_blocks;
          sf_kb0 = t.sf_kb0;
        }
        // Grouped B is [G * N, K] (K-major) or [G * K, N] (MN-major) in memory: the group selects
        // the rows or the K offset of its matrix. SFA of masked groups (batches): [G * sf_k] K blocks of
        // max_m (the batch's) rows.
        const uint32_t b_group = T::kMGrouped ? t.group : 0;
        const uint32_t b_mn0 = T::kMajorB == Major::kK ? b_group * p.n + n0 : n0;
        const uint32_t b_k0 = T::kMajorB == Major::kK ? 0 : b_group * p.k;
        const uint32_t sfa_kb0 =
            T::kType == sched::GemmType::kMGroupedMasked || T::kBatched ? t.group * num_kb : sf_kb0;
        const TmaDescriptor* a_map = tma_a;
        uint32_t tx_bytes = T::kTxBytes;
        if constexpr (T::kATailBox) {
          const uint32_t rows = a_rows<T>(p);
          const uint32_t box_rows = m0 < rows ? align_up(rows - m0, 8u) : kBlockM;
          if (box_rows < kBlockM) {
            a_map = &p.tma_a_tail;
            tx_bytes -= (kBlockM - box_rows) * kBlockK * T::kElem;
          }
        }
        if constexpr (T::kAHalfBox) {
          if (t.rows <= kBlockM / 2) {
            a_map = &p.tma_a_tail;
            tx_bytes -= kBlockM / 2 * kBlockK * T::kElem;
          }
        }
        // Not unrolled: one thread issues a few TMAs per K block, and unrolled copies' precomputed
        // coordinates would not fit under the producer's 40-register cap.
#pragma unroll 1
        for (uint32_t kb = kb_begin; kb < kb_end; ++kb) {
          ptx::mbar_wait(empty_addr + stage * 8, phase ^ 1);
          ptx::Mbarrier* bar = &full[stage];
          ptx::mbar_arrive_expect_tx(bar, tx_bytes);
          const uint32_t k0 = (T::kBatchReduced ? kz : kb) * kBlockK;
          uint8_t* a = smem + T::kOffA + stage * T::kSmemA;
          uint8_t* b = smem + T::kOffB + stage * T::kSmemB;
          constexpr bool k3 = sched::is_batched(T::kType);
          if constexpr (T::kMcA) load_operand<T::kMajorA, T::kElem, true, k3>(tma_a, bar, a, rank * (kBlockM / 2), kBlockM / 2, m0, k0, 0x3, z);
          else load_operand<T::kMajorA, T::kElem, false, k3>(a_map, bar, a, 0, kBlockM, m0, k0, 0, z);
          if constexpr (T::kMcB) {
            // Rank 0 multicasts the whole B tile (as two half boxes): the pairs ran M-grouped FP8 0.7%
            // faster than with each CTA multicasting a half (H200, bench/models/h200/grouped-pairs-rank0.json).
            // A grouped pair whose tiles read different B tiles loads both halves itself.
            if (t.multicast) {
              if (rank == 0) {
                load_operand<T::kMajorB, T::kElem, true, k3>(tma_b, bar, b, 0, kBlockN / 2, b_mn0, b_k0 + k0, 0x3, z);
                load_operand<T::kMajorB, T::kElem, true, k3>(tma_b, bar, b, kBlockN / 2, kBlockN / 2, b_mn0, b_k0 + k0, 0x3, z);
              }
            } else {
              load_operand<T::kMajorB, T::kElem, false, k3>(tma_b, bar, b, 0, kBlockN / 2, b_mn0, b_k0 + k0, 0, z);
              load_operand<T::kMajorB, T::kElem, false, k3>(tma_b, bar, b, kBlockN / 2, kBlockN / 2, b_mn0, b_k0 + k0, 0, z);
            }
          } else {
            load_operand<T::kMajorB, T::kElem, false, k3>(tma_b, bar, b, 0, kBlockN, b_mn0, b_k0 + k0, 0, z);
          }
          if constexpr (T::kBatchReduced) {
            if (++kz == num_kb_batch) kz = 0, ++z;
          }
          if constexpr (T::kFp8) ptx::tma_load_2d(&p.tma_sfa, bar, smem + T::kOffSfa + stage * T::kSmemSfa, t.m_local0, sfa_kb0 + kb);
          if constexpr (T::kKind == Kind::kFp8_1D1D)
            ptx::tma_load_2d(&p.tma_sfb, bar, smem + T::kOffSfb + stage * T::kSmemSfb, n0, sf_kb0 + kb);
          if (++stage == kStages) { stage = 0; phase ^= 1; }
        }
      }
    }
    if constexpr (T::kSfbRing) {
      if (warp == T::kMathWG * 4 + 1) sfb_ring_fill<T>(p, make_sched(), num_kb, smem, full_addr, lane);
    }
    __syncwarp();  // the elected lane rejoins its warp before the aligned cluster barriers
    // Split-K: the consumers' barrier that publishes the partial tiles counts every thread of the cluster.
    // Split tail: only pairs with a split tile meet there; both CTAs count the same tiles, so the whole
    // cluster takes the same branch.
    if constexpr (T::kSplitK > 1) {
      if (!T::kTail || make_sched().pair_has_tail()) {
        ptx::cluster_arrive();
        ptx::cluster_wait();
      }
    }
  } else {
    // ------------------------------------------------------------------ consumers
    if constexpr (T::kMathWG == 2) ptx::setmaxnreg_inc<232>();
    auto sched = make_sched();
    uint32_t kb_begin, kb_end;
    sched.k_range(num_kb, kb_begin, kb_end);
    const uint32_t wg_row0 = wg * T::kWgM;  // this warp-group's first row in the tile
    const uint32_t warp_in_wg = warp % 4;
    uint32_t stage = 0, phase = 0;
    [[maybe_unused]] uint32_t sfb_slot = 0, sfb_phase = 0;  // the SFB ring's (1D2D)
    [[maybe_unused]] const SfbRing<T> sfb_ring(full_addr);
    [[maybe_unused]] const uint32_t peer = T::kCluster == 2 ? ptx::cluster_ctarank() ^ 1 : 0;  // the pair's other CTA
    // Split-K: this CTA computes a tile partially (one tile, or a split tail's last: `t` below keeps it).
    bool split_tile = false;

    // Frees a stage. Every thread arrives on this CTA's barrier (one instruction per warp, as for
    // lane 0 alone): an arrival releases the arriving thread's own reads only, and every lane reads
    // the stage's scale scalars before the producer overwrites them (racecheck flagged lane-0-only
    // arrivals once a CTA's tiles reused the ring). The peer of a
    // pair multicasts only A or B here, read by WGMMA alone: one lane per warp tells it. (One
    // arrival per warp after __syncwarp, DeepGEMM's protocol, still draws those racecheck reports
    // and measured no faster on an H200.)
    auto release = [&](uint32_t s) {
      ptx::mbar_arrive(empty_addr + s * 8);
      if constexpr (T::kCluster == 2) {
        if (lane == 0) ptx::mbar_arrive_cluster(empty_addr + s * 8, peer);
      }
    };
    auto advance = [&]() { if (++stage == kStages) { stage = 0; phase ^= 1; } };

    float acc[T::kMIters][kAcc];
    sched::Tile t;
    while (sched.next(t)) {
      const uint32_t m0 = t.m0, n0 = t.n_block * kBlockN;
      if constexpr (T::kKGrouped) kb_end = t.k_blocks;
      if constexpr (T::kTail || T::kBatchReduced) sched.tile_k_range(t, num_kb, kb_begin, kb_end);

      if constexpr (!T::kFp8) {
        // ---------------- BF16: accumulate straight into acc, one K block of WGMMAs in flight.
        uint32_t prev = 0;
        if (kb_begin == kb_end) {
#pragma unroll
          for (uint32_t i = 0; i < T::kMIters; ++i)
#pragma unroll
            for (uint32_t r = 0; r < kAcc; ++r) acc[i][r] = 0.f;
        }
        for (uint32_t kb = kb_begin; kb < kb_end; ++kb) {
          uint64_t desc_a = tile_desc<T::kMajorA, kBlockK>(smem_base + T::kOffA + stage * T::kSmemA);
          uint64_t desc_b = tile_desc<T::kMajorB, kBlockK>(smem_base + T::kOffB + stage * T::kSmemB);
          ptx::pin(desc_a);
          ptx::pin(desc_b);
          ptx::mbar_wait(full_addr + stage * 8, phase);
#pragma unroll
          for (uint32_t i = 0; i < T::kMIters; ++i)
#pragma unroll
            for (uint32_t r = 0; r < kAcc; ++r) ptx::fence_operand(acc[i][r]);
          ptx::wgmma_fence();
#pragma unroll
          for (uint32_t kk = 0; kk < kBlockK / 16; ++kk) {
            const uint64_t db = ptx::advance_smem_desc(desc_b, operand_offset<T::kMajorB, kBlockK>(0, kk));
#pragma unroll
            for (uint32_t i = 0; i < T::kMIters; ++i) {
              const uint64_t da = ptx::advance_smem_desc(desc_a, operand_offset<T::kMajorA, kBlockK>(wg_row0 + i * 64, kk));
              ptx::WgmmaBf16<kBlockN>::template mma<static_cast<int>(T::kMajorA), static_cast<int>(T::kMajorB)>(
                  da, db, acc[i], kb > kb_begin || kk > 0);
            }
          }
          ptx::wgmma_commit();
#pragma unroll
          for (uint32_t i = 0; i < T::kMIters; ++i)
#pragma unroll
            for (uint32_t r = 0; r < kAcc; ++r) ptx::fence_operand(acc[i][r]);
          if (kb > kb_begin) {
            ptx::wgmma_wait<1>();
            release(prev);
          }
          prev = stage;
          advance();
        }
        ptx::wgmma_wait<0>();
        if (kb_end > kb_begin) release(prev);
#pragma unroll
        for (uint32_t i = 0; i < T::kMIters; ++i)
#pragma unroll
          for (uint32_t r = 0; r < kAcc; ++r) ptx::fence_operand(acc[i][r]);
      } else {
        // ---------------- FP8: per 128-K block, fresh WGMMA partials promoted into acc with the scales.
        // Work unit = (K block, column slice); with overlap, unit j+1's WGMMAs (into the other partial
        // buffer) run while unit j is promoted.
        // Row units (two 64-row WGMMA iterations per warp-group, split 2, as BLOCK_M 256 has): unit h
        // is m-iteration h over the whole BLOCK_N, so every WGMMA is BLOCK_N wide and A is read once
        // per K block; otherwise unit h is column slice h of every m-iteration.
        constexpr bool kRows = T::kPromoteRows;
        constexpr uint32_t kSplit = T::kPromoteSplit;
        constexpr uint32_t kSubN = kRows ? kBlockN : kBlockN / kSplit;
        constexpr uint32_t kSubAcc = kSubN / 2;
        constexpr uint32_t kUnitM = kRows ? 1 : T::kMIters;  // m-iterations per unit
        constexpr uint32_t kBufs = T::kOverlapPromotion ? 2 : 1;
        float part[kBufs][kUnitM][kSubAcc];
#pragma unroll
        for (uint32_t i = 0; i < T::kMIters; ++i)
#pragma unroll
          for (uint32_t r = 0; r < kAcc; ++r) acc[i][r] = 0.f;

        // 1D2D: the SFB scalars of K block kb (the tile's one or two 128-column blocks) from the SFB
        // ring, waiting for each window's slot at its first K block and freeing it after its last;
        // columns [0, boundary) use the first.
        const uint32_t boundary = T::kKind == Kind::kFp8_1D2D ? min_of(128 - n0 % 128, kBlockN) : kBlockN;
        auto load_sfb = [&](uint32_t kb, float& s0, float& s1) {
          if constexpr (T::kSfbRing) {
            const uint32_t i = (kb - kb_begin) % T::kSfbWindow;
            if (i == 0) ptx::mbar_wait(sfb_ring.full0 + sfb_slot * 8, sfb_phase);
            const float* v = SfbRing<T>::slot_data(smem, sfb_slot);
            s0 = v[i];
            s1 = T::kSfbStraddle ? v[T::kSfbWindow + i] : s0;
            if (i == T::kSfbWindow - 1 || kb + 1 == kb_end) {
              ptx::mbar_arrive(sfb_ring.empty0 + sfb_slot * 8);
              if (++sfb_slot == T::kSfbSlots) sfb_slot = 0, sfb_phase ^= 1;
            }
          }
        };

        // Descriptors of stage 0's A rows of this warp-group and of its B tile.
        const uint64_t desc_a0 = ptx::advance_smem_desc(tile_desc<Major::kK, kBlockK>(smem_base + T::kOffA), wg_row0 * 128);
        const uint64_t desc_b0 = tile_desc<Major::kK, kBlockK>(smem_base + T::kOffB);

        // Issues column slice h of the K block in stage s into part[buf] (waits for the stage first,
        // unless an earlier test found it full).
        auto issue = [&](uint32_t buf, uint32_t s, uint32_t h, bool full = false) {
          // Descriptors before the barrier wait (ptx::pin): 2% fewer cycles on 128x256 FP8 tiles (H100).
          // One add each from the ring's first stage (a constant with a compile-time stage).
          // 1D2D: the stage's offset in 16-byte units, one multiply-add (256x128 row units ran 1.0-1.2%
          // fewer SM cycles, H100); 1D1D (K-grouped) keeps the byte offset: its loop, 1% shorter the
          // other way, ran 1% more cycles.
          uint64_t desc_a, desc_b;
          if constexpr (T::kKind == Kind::kFp8_1D2D) {
            desc_a = ptx::advance_smem_desc_units(desc_a0, s * (T::kSmemA / 16));
            desc_b = ptx::advance_smem_desc_units(desc_b0, s * (T::kSmemB / 16));
          } else {
            desc_a = ptx::advance_smem_desc(desc_a0, s * T::kSmemA);
            desc_b = ptx::advance_smem_desc(desc_b0, s * T::kSmemB);
          }
          ptx::pin(desc_a);
          ptx::pin(desc_b);
          if (h == 0 && !full) ptx::mbar_wait(full_addr + s * 8, phase);
#pragma unroll
          for (uint32_t u = 0; u < kUnitM; ++u)
#pragma unroll
            for (uint32_t r = 0; r < kSubAcc; ++r) ptx::fence_operand(part[buf][u][r]);
          ptx::wgmma_fence();
#pragma unroll
          for (uint32_t kk = 0; kk < kBlockK / 32; ++kk) {
            const uint64_t db = ptx::advance_smem_desc(desc_b, operand_offset<Major::kK, kBlockK>(kRows ? 0 : h * kSubN, kk));
#pragma unroll
            for (uint32_t u = 0; u < kUnitM; ++u) {
              const uint32_t i = kRows ? h : u;
              const uint64_t da = ptx::advance_smem_desc(desc_a, operand_offset<Major::kK, kBlockK>(i * 64, kk));
              ptx::WgmmaE4m3<kSubN>::mma(da, db, part[buf][u], kk > 0);
            }
          }
          // part[buf] is next read by promote, whose fence follows the wait (no fence needed here).
          ptx::wgmma_commit();
        };

        // Promotes part[buf] (column slice h of the K block in stage s) into acc; the last slice
        // frees the stage once its scales are read.
        // This thread's two rows of SFA for the K block in stage s (read while its WGMMAs run).
        auto load_sfa = [&](uint32_t s, float (&sa)[T::kMIters][2]) {
          const float* sfa = reinterpret_cast<const float*>(smem + T::kOffSfa + s * T::kSmemSfa);
#pragma unroll
          for (uint32_t i = 0; i < T::kMIters; ++i) {
            // 32-row tiles: warps 2-3 hold the rows past the tile; they read rows of it instead.
            const uint32_t row = wg_row0 + i * 64 + warp_in_wg * 16 + lane / 4;
            const uint32_t r = T::kHalfM ? row % 32 : row;
            sa[i][0] = sfa[r];
            sa[i][1] = sfa[r + 8];
          }
        };

        auto promote = [&](uint32_t buf, uint32_t s, uint32_t h, float sb0, float sb1,
                           const float (&sa)[T::kMIters][2], const auto& bnd) {
#pragma unroll
          for (uint32_t u = 0; u < kUnitM; ++u)
#pragma unroll
            for (uint32_t r = 0; r < kSubAcc; ++r) ptx::fence_operand(part[buf][u][r]);
          const uint32_t g0 = kRows ? 0 : h * (kSubN / 8);  // the unit's first 8-column group
          if constexpr (T::kKind == Kind::kFp8_1D1D) {
            const float* sfb = reinterpret_cast<const float*>(smem + T::kOffSfb + s * T::kSmemSfb);
            f32x2 sb[kSubN / 8];
#pragma unroll
            for (uint32_t g = 0; g < kSubN / 8; ++g)
              sb[g] = *reinterpret_cast<const f32x2*>(&sfb[g0 * 8 + g * 8 + (lane % 4) * 2]);
            if (h == kSplit - 1) release(s);
#pragma unroll
            for (uint32_t u = 0; u < kUnitM; ++u)
#pragma unroll
              for (uint32_t g = 0; g < kSubN / 8; ++g) {
                const uint32_t i = kRows ? h : u, G = g0 + g;
                acc[i][G * 4 + 0] += sa[i][0] * sb[g].x * part[buf][u][g * 4 + 0];
                acc[i][G * 4 + 1] += sa[i][0] * sb[g].y * part[buf][u][g * 4 + 1];
                acc[i][G * 4 + 2] += sa[i][1] * sb[g].x * part[buf][u][g * 4 + 2];
                acc[i][G * 4 + 3] += sa[i][1] * sb[g].y * part[buf][u][g * 4 + 3];
              }
          } else {
            if (h == kSplit - 1) release(s);
#pragma unroll
            for (uint32_t u = 0; u < kUnitM; ++u) {
              const uint32_t i = kRows ? h : u;
              const float lo0 = sa[i][0] * sb0, hi0 = sa[i][1] * sb0;
              float lo1 = lo0, hi1 = hi0;
              if constexpr (T::kSfbStraddle) { lo1 = sa[i][0] * sb1; hi1 = sa[i][1] * sb1; }
#pragma unroll
              for (uint32_t g = 0; g < kSubN / 8; ++g) {
                const uint32_t G = g0 + g;
                const float lo = T::kSfbStraddle ? sfb_pick(lo0, lo1, bnd, G) : lo0;
                const float hi = T::kSfbStraddle ? sfb_pick(hi0, hi1, bnd, G) : hi0;
                acc[i][G * 4 + 0] += lo * part[buf][u][g * 4 + 0];
                acc[i][G * 4 + 1] += lo * part[buf][u][g * 4 + 1];
                acc[i][G * 4 + 2] += hi * part[buf][u][g * 4 + 2];
                acc[i][G * 4 + 3] += hi * part[buf][u][g * 4 + 3];
              }
            }
          }
        };

        // Straight-line groups of whole K blocks: nothing is in flight across loop iterations, so
        // ptxas keeps the WGMMAs asynchronous; without overlap a group holds two K blocks, so that
        // the second's barrier test is issued during the first's promotion. The next group's first
        // stage is tested (without waiting) once the group's last WGMMAs are issued, so that the
        // loop head does not wait on a fresh test (ptxas cannot hoist it across the back edge):
        // 128x256 FP8 tiles ran ~2% fewer SM cycles (H100). Leftover K blocks go one at a time.
        // Stage-aligned tiles: a group is one turn of the ring, starting at stage 0.
        constexpr uint32_t kGroup = T::kStageAligned      ? kStages * kSplit
                                    : T::kOverlapPromotion ? (kSplit >= 4 ? kSplit : 4)
                                                           : 2 * kSplit;  // units
        constexpr uint32_t kKbPerGroup = kGroup / kSplit;
        // 1D2D, stage-aligned loops: the SFB scalars of a group's kKbPerGroup K blocks (a turn of
        // the ring, from kb, the `pos`-th of its window) at once, with one wait and one release. Read
        // per K block they cost about 10 of the loop's ~140 instructions per warp, which the two
        // warp-groups' warps on an SM sub-partition issue in turn: masked FP8 ran 0.7-0.9% faster
        // (H200). Groups of two K blocks (the other loops) ran 0.5-1% slower read this way.
        constexpr bool kSfbPerGroup = T::kSfbRing && T::kStageAligned;
        static_assert(!kSfbPerGroup || T::kSfbWindow % kKbPerGroup == 0, "SFB windows of whole groups");
        auto load_sfb_group = [&](uint32_t kb, uint32_t pos, float (&s0)[kKbPerGroup], float (&s1)[kKbPerGroup]) {
          if constexpr (kSfbPerGroup) {
            if (pos == 0) ptx::mbar_wait(sfb_ring.full0 + sfb_slot * 8, sfb_phase);
            const float* v = SfbRing<T>::slot_data(smem, sfb_slot) + pos;
#pragma unroll
            for (uint32_t q = 0; q < kKbPerGroup; ++q) {
              s0[q] = v[q];
              s1[q] = T::kSfbStraddle ? v[T::kSfbWindow + q] : s0[q];
            }
            if (pos + kKbPerGroup == T::kSfbWindow || kb + kKbPerGroup == kb_end) {
              ptx::mbar_arrive(sfb_ring.empty0 + sfb_slot * 8);
              if (++sfb_slot == T::kSfbSlots) sfb_slot = 0, sfb_phase ^= 1;
            }
          }
        };
        auto k_loop = [&](auto bnd) {
          uint32_t kb = kb_begin;
          bool next_full = false;  // the stage of this group's first K block passed the early test
          [[maybe_unused]] uint32_t sfb_pos = 0;  // 1D2D: the group's first K block in its SFB window
          // Compiled K blocks: every group straight-line (the first promotion then adds to a known zero).
#pragma unroll(T::kKBlocks != 0 ? T::kKBlocks : 1)
          for (; kb + kKbPerGroup <= kb_end; kb += kKbPerGroup) {
            if constexpr (T::kStageAligned) stage = 0;  // already so: stated for the compiler's constants
            float sb0[kKbPerGroup], sb1[kKbPerGroup];
            float sa[kKbPerGroup][T::kMIters][2];
            uint32_t st[kKbPerGroup];
#pragma unroll
            for (uint32_t j = 0; j < kGroup; ++j) {
              const uint32_t q = j / kSplit, h = j % kSplit;
              if (h == 0) st[q] = stage;
              issue(j % kBufs, st[q], h, j == 0 && next_full);
              if (kSfbPerGroup && j == 0) {
                load_sfb_group(kb, sfb_pos, sb0, sb1);
                sfb_pos = sfb_pos + kKbPerGroup == T::kSfbWindow ? 0 : sfb_pos + kKbPerGroup;
              }
              if (h == 0) {
                load_sfa(st[q], sa[q]);
                if constexpr (!kSfbPerGroup) load_sfb(kb + q, sb0[q], sb1[q]);
              }
              if (h == kSplit - 1) advance();
              if (j == kGroup - 1) next_full = ptx::mbar_test(full_addr + stage * 8, phase);
              if constexpr (T::kOverlapPromotion) {
                if (j >= 1) {
                  const uint32_t pq = (j - 1) / kSplit;
                  ptx::wgmma_wait<1>();
                  promote((j - 1) % 2, st[pq], (j - 1) % kSplit, sb0[pq], sb1[pq], sa[pq], bnd);
                }
              } else {
                ptx::wgmma_wait<0>();
                promote(0, st[q], h, sb0[q], sb1[q], sa[q], bnd);
              }
            }
            if constexpr (T::kOverlapPromotion) {
              ptx::wgmma_wait<0>();
              promote((kGroup - 1) % 2, st[kKbPerGroup - 1], kSplit - 1, sb0[kKbPerGroup - 1], sb1[kKbPerGroup - 1],
                      sa[kKbPerGroup - 1], bnd);
            }
          }
          if constexpr (!T::kStageAligned) {  // stage-aligned tiles leave no K blocks over
            for (; kb < kb_end; ++kb) {
              float s0 = 0.f, s1 = 0.f, sa[T::kMIters][2];
              const uint32_t s = stage;
#pragma unroll
              for (uint32_t h = 0; h < kSplit; ++h) {
                issue(0, s, h);
                if (h == 0) {
                  load_sfa(s, sa);
                  load_sfb(kb, s0, s1);
                }
                if (h == kSplit - 1) advance();
                ptx::wgmma_wait<0>();
                promote(0, s, h, s0, s1, sa, bnd);
              }
            }
          }
        };
        // Which 8-column groups take the second SFB row is fixed per tile; where the tiles' boundaries
        // take few values, each gets its own K loop so that the choice is made at compile time
        // instead of a select per group and K block in the promotion. (A 2-CTA pair's tile past the
        // last column may take any of them: it is computed but never stored.)
        if constexpr (T::kSfbBoundaries != 0) with_boundary<T::kSfbBoundaries>(boundary, k_loop);
        else if constexpr (T::kSfbStraddle) k_loop(SfbUnits<kBlockN>(boundary));
        else k_loop(boundary);
      }

      // ---------------- epilogue
      if (T::kSplitK > 1 && (!T::kTail || t.split)) {
        // The partial tile (unscaled) goes to this CTA's shared memory in the fragment layout's rows,
        // over the stage ring: once every consumer warp's WGMMAs have completed (wgmma_wait<0> above)
        // no stage is read again, and every load the producer issued has landed (each was waited on).
        // (Barrier 1 + kMathWG: the epilogue's strips use 1 + wg, which a split tail's warp-group may
        // still be in for its previous tile while the other reaches this one.)
        ptx::named_barrier_sync(1 + T::kMathWG, T::kMathWG * 128);
#pragma unroll
        for (uint32_t i = 0; i < T::kMIters; ++i)
#pragma unroll
          for (uint32_t g = 0; g < kBlockN / 8; ++g) {
            const uint32_t row = wg_row0 + i * 64 + warp_in_wg * 16 + lane / 4, col = g * 8 + (lane % 4) * 2;
            uint8_t* dst = smem + T::kOffRed + row * T::kRedPitch + col * 4;
            *reinterpret_cast<f32x2*>(dst) = f32x2{acc[i][g * 4 + 0], acc[i][g * 4 + 1]};
            *reinterpret_cast<f32x2*>(dst + 8 * T::kRedPitch) = f32x2{acc[i][g * 4 + 2], acc[i][g * 4 + 3]};
          }
        split_tile = true;
      } else {
        if constexpr (T::kMGrouped) {
          if (!t.store) continue;  // a pair's block with no group: computed, not written
          if (t.per_row || t.rows < kBlockM)
            zero_foreign_rows<T>(acc, t, p.grouped_layout, p.group_rows, wg_row0 + warp_in_wg * 16 + lane / 4);
        }
        if constexpr (T::Fused::kActive) fused_epilogue<T>(acc, p, t, n0, wg_row0 + warp_in_wg * 16 + lane / 4);
        // The fused epilogue applied alpha; so did the promotion where the SFB ring carries it.
        const auto alpha = [&] {
          if constexpr (T::Fused::kActive) return epilogue::UnitScale{};
          else return output_scale<T>(p);
        }();
        const int32_t d_group = T::kKGrouped ? static_cast<int32_t>(kg->group[t.group]) : T::kBatched ? static_cast<int32_t>(t.group) : 0;
        if constexpr (T::kDirectStore)
          epilogue::direct_store<typename T::OutT, T::kWgM, T::kOutN, typename T::Columns>(
              acc, alpha, p.d, p.ldd, p.m, p.n, m0 + wg_row0, t.n_block * T::kOutN);
        else
          T::Store::run(acc, alpha, smem + wg * T::Store::kSmemBytes, map_d,
                        static_cast<int32_t>(t.n_block * T::kOutN), static_cast<int32_t>(m0 + wg_row0), 1 + wg, d_group);
      }
    }
    if constexpr (T::kSplitK == 1 || T::kTail) T::Store::drain();
    if constexpr (T::kSplitK > 1) {
      // Every CTA's partial tile is in its shared memory once the whole cluster (producers included,
      // above) has passed this barrier; the final barrier below keeps the partials alive until read.
      // A split tail's tile lies in one group (max_m is a multiple of BLOCK_M): all its rows are
      // written, those past the group's count as zeros.
      if (!T::kTail || sched.pair_has_tail()) {
        ptx::cluster_arrive();
        ptx::cluster_wait();
        if (split_tile) {
          const uint32_t rows = min_of(kBlockM, p.m - t.m0);
          split_k_reduce_store<T>(p, smem + T::kOffRed, t.m0, t.n_block * kBlockN, T::kTail ? kBlockM : rows,
                                  T::kTail ? t.rows : rows);
        }
      }
    }
  }

  if constexpr (T::kClusterDims > 1) {
    // No CTA may leave while its peer can still arrive on its barriers, multicast into it or read its
    // partial tile (a split tail: only pairs that split one meet here).
    if (!T::kTail || make_sched().pair_has_tail()) {
      ptx::cluster_arrive();
      ptx::cluster_wait();
    }
  }
}

}  // namespace dg::gemm
