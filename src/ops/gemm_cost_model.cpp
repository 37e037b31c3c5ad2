// Calibrations of the SM90 GEMM cost model (gemm_cost_model.h). Each value names what set it; the
// sweeps live in bench/models/<gpu>/ and ctests gemm_model and gemm_model_k_grouped check the
// model's regret against them.
#include "ops/gemm_cost_model.h"

namespace dg::ops {
namespace {

// Fitted on an H100 80GB (SXM, 132 SMs) unless a field says otherwise; the terms marked H200 were
// fitted on an H200 to K-grouped FP8 runs with forced configs (bench/models/h200).
const Sm90CostModel kHopper = {
    /*calibrated_on=*/"H100 80GB HBM3 (K-grouped FP8 terms: H200)",
    // Sustained WGMMA rates per SM that the large-M sweeps (bench/models/h100/tiles-*) fit best.
    /*fp8_flops_per_sm=*/11.0e12,
    /*bf16_flops_per_sm=*/5.9e12,
    // The DRAM floor: 2.8 TB/s, what the copy suite sustains of the H100's 3.35 TB/s peak.
    /*dram_bytes_per_s=*/2.8e12,
    // A candidate under the floor still slows as its own operand traffic nears it: masked FP8 G = 32,
    // m <= 64 (weights streamed once) ran 64x48 / 64x32 tiles, whose A re-reads ask 0.8-0.9 of the
    // floor's time of the SMs' fill, 10-20% behind 64x256 (0.4 of it) on an H200, where a hard max
    // rated them equal (bench/results/moe_layer.txt: the plain and the fused gate / up GEMM).
    /*floor_sharpness=*/4.0,
    // Two cluster barriers and the DSMEM reduction's latency; split-K is chosen by a measured rule,
    // so this only shapes estimates of forced split-K configs.
    /*split_k_reduce_s=*/1.5e-6,
    /*small_m=*/
    {
        // Fitted to 1974 (shape, config) runs of the 14 DeepSeek small-M BF16/FP8 shapes (block_m
        // 64/128, block_n 16..256, 4..22 stages, cluster 1/2; bench/models/h100/skinny-*, tiles-narrow-*).
        /*min_k_block_s=*/0.10e-6,
        /*smem_fill_bytes_per_s=*/101e9,
        /*load_latency_s=*/0.6e-6,
        /*tensor_time_factor=*/1.25,
        /*epilogue_s=*/0.8e-6,
        /*reduce_add_bytes_per_s=*/60e9,
        /*split_k_bytes_per_s=*/100e9,
        // Pairs only couple two pipelines here (B is streamed once either way): ~7% slower.
        /*pair_factor=*/1.07,
        // Not measured on the H100: pairs run at small M only on request.
        /*bf16_pair_read_rate=*/0.0,
        /*bf16_pair_fixed_s=*/0.0,
        /*launch_s=*/12e-6,
        // Fitted with the rest of the small-M model: at small M a promotion after the WGMMAs stalls a
        // pipeline that has little else to hide it behind, so "after" costs more than at large M.
        /*promotion=*/{{1.05, 1.6, 1.5}, {1.6, 1.18, 1.3}},
    },
    /*large_m=*/
    {
        // Operand bytes per SM: 128x144 BF16 tiles ran 4096x576x7168 at ~85 GB/s per SM, as fast as
        // cuBLASLt (bench/models/h100/tiles-m4096-*).
        /*sm_fill_bytes_per_s_fp8=*/68e9,
        /*sm_fill_bytes_per_s_bf16=*/80e9,
        /*sm_fill_bytes_per_s_bf16_known_total=*/0.0,
        // ~128 bytes per clock at the sustained clock.
        /*smem_read_bytes_per_s=*/150e9,
        /*wgmma_read_row_bytes=*/128,
        /*few_stages_penalty=*/0.04,
        /*epilogue_s=*/0.6e-6,
        /*store_bytes_per_s=*/60e9,
        // Strips under 64 bytes (BF16 128x240: 16 columns) cost about twice per byte (+~1 us a tile).
        /*narrow_strip_cost=*/2.0,
        // H200: K-grouped FP8 with C at K = 1024 per group, 128x144 / 128x176 (64-byte strips) ran
        // 14-18% behind 128x128 (whole tile staged), 128x160 / 128x192 (rotating strips) 4-6%.
        /*fp32_reduce_strip_cost=*/1.5,
        /*fp32_reduce_rotating_cost=*/1.4,
        /*split_k_bytes_per_s=*/100e9,
        /*launch_s=*/3e-6,
        // Multicast pairs measured level with unpaired tiles on large shapes and 7-15% slower at
        // N = 576 and 2112 (bench/models/h100/cluster-*, multicast-narrow-*): the heuristic only
        // considers them on request, and this keeps unpaired tiles ahead on ties.
        /*pair_factor=*/1.01,
        // The masked split-tail kernel on whole tiles (no split) against the same tiles unsplit: FP8
        // 128x160 3.7% slower (two rounds), 2.6-3.8% on an H200 (G 1, N 4096, K 7168, counts fixed over
        // the spread); BF16 128x128 0.7-0.9% there (bench/models/h200/masked-prefill-counts-alts.json).
        /*masked_tail_factor_fp8=*/1.04,
        /*masked_tail_factor_bf16=*/1.01,
        // Against 128x128 overlapped (bench/models/h100/promotion-*): without overlap one warp-group's
        // promotion stalls its WGMMAs unless column slices let the two groups interleave; overlap
        // with slices re-reads A from shared memory.
        /*promotion=*/{{1.05, 1.6, 1.25}, {1.3, 1.18, 1.3}},
        /*promotion_192_two_slices=*/1.12,
        // 256x128 in row units ran 2-4% faster than overlapped 128x192 on five of the seven DeepSeek
        // shapes at M = 8192 (bench/peer_bench.py dense).
        /*promotion_row_units=*/1.08,
        // Contiguous 128x256 after-promotion in two slices ran 2-9% faster than overlapped 128x192 on
        // the eight contiguous FP8 sets where it is picked (peer_bench.py contiguous --alt).
        /*promotion_contiguous_256=*/1.13,
        // A K loop per SFB boundary: ~10% faster for 128x160 and 128x192 (bench/models/h100/config-*-sfb).
        /*promotion_few_boundaries=*/1.15,
        // Not separated on the H100: the "after, one slice" factor.
        /*promotion_compiled_boundaries=*/1.3,
        // Not separated from the rest on the H100: the generic promotion's factors hold.
        /*promotion_any_boundary=*/1.0,
        // 1D1D after-promotion: whole tiles ran the six K-grouped sets 4-15% faster at 128x192 than
        // 128x128 overlapped, 0-13% at 128x160 (bench/models/h100/k-grouped-fp8-tiles.json).
        /*promotion_1d1d_base=*/1.06,
        /*promotion_1d1d_per_column=*/16.0,
        // FP8 tiles under 128 columns ran ~12% slower than the bounds predict (tiles-narrow-fp8-*).
        /*narrow_tile_factor=*/1.12,
        // At equal rounds BF16 128x256 beat 128x160-224 by 3-8% (tiles-m4096-bf16).
        /*bf16_per_column=*/24.0,
        // H200: 1D1D tiles with four stages ran 0.2-6% behind 128x160 with five on the six K-grouped
        // FP8 sets with K >= 2048 per group.
        /*fp8_1d1d_four_stages=*/1.03,
        // H200: 1D1D 128x128 overlapped ran 2-3% behind the same tiles promoted after at K = 1024-2048
        // per group (the last promotion of each tile is exposed).
        /*fp8_1d1d_overlap_exposed=*/0.3,
        // H200: 1D2D 128x256 with three stages and the whole tile staged ran 1-3% faster than with
        // four stages and two rotating strips on the nine contiguous FP8 sets and the MoE layer's
        // GEMMs (peer_bench.py contiguous --alt, calls interleaved; in a second run one set was 0.7%
        // slower). BF16 128x256 moved within 1.3% either way and keeps the rotating strips.
        /*fp8_whole_tile_staging=*/0.975,
        // ... at K 2048 and 7168 (16 and 56 K blocks); the H200 calibration sets where it stops.
        /*whole_tile_min_k_blocks=*/0,
    },
    // The skinny kernel beat the tiled one on every shape with B up to 59 MB, BF16 up to M = 16
    // (1.02-1.18x) and FP8 up to M = 8 (1.01-1.18x); FP8 at M = 12-16 (two token tiles) lost on 4 of
    // 7 shapes (0.81-0.98x), and with every split forced (skinny-fp8-split-m12-16.json.gz) still on
    // 3 of 6 (bench/models/h100/skinny-vs-tiled.json.gz, M = 1-16 over the 7 DeepSeek shapes).
    /*skinny_max_m_bf16=*/16,
    /*skinny_max_m_fp8=*/8,
};

// The H200: the Hopper calibration plus the terms measured on an H200 alone.
Sm90CostModel h200_calibration() {
  Sm90CostModel m = kHopper;
  m.calibrated_on =
      "H200 (small-M BF16 pairs and skinny range, 1D2D boundary selects and 128x192 promotion; "
      "else as the Hopper calibration)";
  // BF16 at M 128 is bound by the SMs' L2 reads (64x112 tiles at 7168 x 16384: ~10 TB/s). A CTA pair
  // along M sharing B through multicast reads 32% fewer bytes there and ran 18-23% faster, 4% at
  // 4096 x 7168 (25% fewer), 8-9% slower at 2112 x 7168 (64x32 tiles: 17% fewer) and 5-6% at
  // 7168 x 2048 (32 K blocks); bench/models/h200/small-m-pairs-{bf16,fp8}.json. FP8 pairs ran 0-28%
  // slower than the heuristic's single CTAs on all 14 rows at M 64 and 128: on request only. With
  // these values the pairs it picks took 0.71-0.89x the time of single CTAs at M 96 and 0.89-1.00x at
  // M 128 (7168 x 16384, 4096 x 7168, 8192 x 8192, 8192 x 28672; small-m-pairs-bf16-model.json).
  m.small_m.bf16_pair_read_rate = 0.9;
  m.small_m.bf16_pair_fixed_s = 2e-6;
  // 1D2D tiles whose SFB boundaries take too many values to compile a K loop each (128x144: eight
  // values over N = 2112) select each gcd(block_n, 128)-column unit's scale per K block. 128x144
  // after one slice ran 2112 x 7168 at M 1024 / 2048 3.5-5% slower than 128x160 (four values, a K
  // loop each) while computing 3.6% fewer columns (bench/models/h200/tiles-m2048-8192-fp8.json): 1.05
  // puts the estimates 3.5-3.7% apart. The dense H200 sweeps' regret is 1.004 / 1.016 with it.
  m.large_m.promotion_any_boundary = 1.05;
  // 128x160 promoted after in one slice (four boundary values, a K loop each) against the choices
  // at equal work: 5.5-7.6% behind 128x192 / 128x256 where it takes one round more (M 1024 28672 x
  // 4096, M 2048 7168 x 16384), 6% ahead of 128x128 at G 1, N 4096 masked where it takes one round
  // fewer (bench/models/h200/dense-fp8-n160.json, masked-prefill-tiles.json): both fit ~1.2 per K
  // block. Masked prefill regret 1.045 / 1.121 -> 1.031 / 1.121; the dense choices it moves at M 1024
  // (7168 x 16384, 7168 x 2048, 10240 x 8192) ran within 0.7% of the old ones.
  m.large_m.promotion_compiled_boundaries = 1.2;
  // 1D2D 128x192: promoted after its WGMMAs in one 192-wide slice (two boundary values, a K loop
  // each) instead of overlapped in two 96-column slices, whose WGMMAs each read A (ncu at masked G 32,
  // m 192, N 6144: shared pipe busy 83.5% of the cycles against DeepGEMM's 77.9% with one 192-wide
  // WGMMA). Same tile, one slice: 0-1.7% faster on the 11 M-grouped FP8 sets where the Hopper values
  // pick the overlapped tile, dense FP8 -0.6% to +1.6% on three shapes (bench/models/h200/
  // grouped-fp8-promotion.json, dense-fp8-promotion-192.json). 1.12 prices the one slice as the two
  // slices were priced, so that no tile choice moves (1.10 moved masked G 2 / G 4, N 4096 from 128x160
  // to 128x192: 11-12% slower); 1.16 puts the two slices behind it.
  m.large_m.promotion_few_boundaries = 1.12;
  m.large_m.promotion_192_two_slices = 1.16;
  // BF16 at M 12-16: the tiled kernel's 32-row tiles, loading A through a box of M's rows, ran
  // 0.89-0.98x the skinny kernel's time on five of the six eligible DeepSeek shapes (2112 x 7168:
  // 1.02-1.03x); at M 4-8 the skinny kernel stays ahead on the geometric mean, by 1-11% at N 576,
  // 2112 and K 512, 1-2.4% behind at 4096 x 7168 and 7168 x 2048 (bench/models/h200/skinny-vs-tiled-
  // bf16.json). FP8 keeps M <= 8: tiled at M 12-16 as on the H100, skinny 0.4-14.5% ahead at M 8
  // on the eligible shapes (skinny-vs-tiled-fp8.json).
  m.skinny_max_m_bf16 = 8;
  // 1D2D 256x128 tiles in 128-row units (three stages, each warp-group's two 64-row halves in turn)
  // ran 0.4-3.6% behind the faster of 128x192 (four stages, promoted after in one slice) and 128x256
  // (three stages, two slices) on all 15 dense rows at M 4096 and 8192 (DeepSeek-V3 and Llama N x K,
  // K 512-28672) where the Hopper values pick them; the measured gap fell by about one point per
  // point of the model's (bench/models/h200/dense-fp8-row-units.json). 1.11 hands those rows to the
  // other two tiles; the contiguous and masked choices do not move.
  m.large_m.promotion_row_units = 1.11;
  // At K 512 (4 K blocks) 128x256 with three stages and the whole tile staged ran 6-12% behind
  // 128x192 with four stages (dense M 2048-8192, 32768 x 512), where the deeper pipeline's price put
  // it ahead: tiles of fewer than 8 K blocks are priced at their own stages.
  m.large_m.whole_tile_min_k_blocks = 8;
  // BF16 split-tail tiles of 128-256 columns at counts fixed over the spread (G 1, 6-11 row blocks
  // of 128 on DeepSeek-V3's three expert shapes): their rounds take 41, 50, 59, 67 and 77 us at
  // N 4096, K 7168, nearly in proportion to the columns, where 80 GB/s of fill prices 128 and 160
  // columns 20% and 10% high; 95 GB/s ranks each total's widths within 0.4% of the best measured
  // (geometric mean; worst 2.9%: 192 at 9 row blocks, whose split round fills every SM) against
  // 1.8% / 11.8% (bench/models/h200/masked-bf16-split-widths.json). The mean over counts that picks
  // the main tile keeps 80 GB/s: 95 moved masked decoding and dense BF16 choices 1.2% slower
  // (bf16-fill-rate-ab.json).
  m.large_m.sm_fill_bytes_per_s_bf16_known_total = 95e9;
  return m;
}

const Sm90CostModel kH200 = h200_calibration();

}  // namespace

const Sm90CostModel& hopper_cost_model() { return kHopper; }

const Sm90CostModel& sm90_cost_model(std::string_view device_name) {
  // A GPU with its own sweeps (bench/models/<gpu>/) has its own calibration; the others share the
  // Hopper one. Per-device tuning tables are consulted before the model.
  if (device_name.find("H200") != std::string_view::npos) return kH200;
  return kHopper;
}

}  // namespace dg::ops
