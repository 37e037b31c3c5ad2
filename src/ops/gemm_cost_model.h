// The parameters of the SM90 GEMM cost model (gemm_heuristic.cpp ranks candidate configs with it;
// docs/cost_model.md explains the model). Every number the model uses is a named field here, and
// each calibration in gemm_cost_model.cpp says which measurements set it. A calibration belongs to
// a GPU: the heuristic asks for the one of the device it plans for.
#pragma once
#include <string_view>

namespace dg::ops {

// The cost of FP8 promotion (scales applied to each K block's partial sums on CUDA cores) as a
// factor on the tensor-core time of a K block, per schedule and number of column slices.
struct PromotionCost {
  double overlapped[3];  // promoted while the next K block's WGMMAs run; 1, 2 or 4 slices
  double after[3];       // promoted after the block's WGMMAs; 1, 2 or 4 slices
};

// At most two 64-row blocks of M (dense): every B tile is read once and a CTA's time is set by how
// fast its TMA pipeline turns over.
struct SmallMCost {
  double min_k_block_s;           // floor per K block
  double smem_fill_bytes_per_s;   // A and B boxes into one SM's shared memory
  double load_latency_s;          // a load's latency, spread over the stages in flight
  double tensor_time_factor;      // tensor-core time of a K block against the sustained rate
  double epilogue_s;              // per tile
  double reduce_add_bytes_per_s;  // D += through TMA reduce-adds
  double split_k_bytes_per_s;     // the split-K partial tile through distributed shared memory
  double pair_factor;             // a 2-CTA cluster couples two pipelines
  // BF16 CTA pairs along M that share B through multicast (0: not modelled; such pairs run only on
  // request and pay pair_factor): each B box is read from L2 once for both CTAs, at this share of
  // smem_fill_bytes_per_s, and a pair costs bf16_pair_fixed_s per call.
  double bf16_pair_read_rate;
  double bf16_pair_fixed_s;
  double launch_s;                // per call
  PromotionCost promotion;
};

// Larger problems: compute and operand-delivery bounds per K block, wave quantisation over the
// persistent rounds, an epilogue per tile and a DRAM floor.
struct LargeMCost {
  double sm_fill_bytes_per_s_fp8;   // operand bytes into one SM per second
  double sm_fill_bytes_per_s_bf16;
  // ... BF16 at a known total of row blocks (GemmShape::row_blocks: the count-adaptive rule's prices
  // of a masked call's tiles per total); 0: sm_fill_bytes_per_s_bf16
  double sm_fill_bytes_per_s_bf16_known_total;
  double smem_read_bytes_per_s;     // WGMMA operand reads from shared memory
  double wgmma_read_row_bytes;      // bytes WGMMA reads per operand row and K block
  double few_stages_penalty;        // per stage below kFewStages, on the K block
  double epilogue_s;                // per tile
  double store_bytes_per_s;         // D through the epilogue's TMA stores
  double narrow_strip_cost;         // strips under 64 bytes, per byte
  double fp32_reduce_strip_cost;    // FP32 reduce-adds in strips under 128 bytes, per byte
  double fp32_reduce_rotating_cost; // FP32 reduce-adds through rotating strip buffers
  double split_k_bytes_per_s;       // the split-K partial tile through distributed shared memory
  double launch_s;                  // per call
  double pair_factor;               // 2-CTA clusters against the same tiles unpaired
  double masked_tail_factor_fp8;    // a masked split-tail kernel against the same tiles unsplit
  double masked_tail_factor_bf16;
  PromotionCost promotion;
  double promotion_192_two_slices;  // 1D2D overlapped 192-wide tiles in two 96-column slices
  double promotion_row_units;       // 256-row tiles promoted in 128-row units
  double promotion_contiguous_256;  // M-grouped contiguous 128x256, after, two slices
  double promotion_few_boundaries;  // 1D2D tiles straddling at most two SFB rows, after, one slice
  double promotion_compiled_boundaries;  // as few_boundaries, three or four boundary values
  double promotion_any_boundary;    // 1D2D tiles whose SFB boundaries take too many values to compile
  double promotion_1d1d_base;       // 1D1D after, one slice: base + per_column / block_n
  double promotion_1d1d_per_column;
  double narrow_tile_factor;        // FP8 tiles under 128 columns
  double bf16_per_column;           // BF16 tiles: (1 + c / block_n) / (1 + c / 128)
  double fp8_1d1d_four_stages;      // 1D1D tiles with fewer than five stages, on the K block
  double fp8_1d1d_overlap_exposed;  // 1D1D overlapped: K blocks of each tile's exposed promotion
  double fp8_whole_tile_staging;    // 1D2D whole-tile D where rotating strips fit a stage more: on
                                    // the K block of that deeper pipeline
  int whole_tile_min_k_blocks;      // ... for tiles of at least this many K blocks (else: as staged)
};

struct Sm90CostModel {
  const char* calibrated_on;        // the GPU whose measurements set it
  double fp8_flops_per_sm;          // sustained tensor FLOP/s of one SM
  double bf16_flops_per_sm;
  double dram_bytes_per_s;          // the DRAM floor's rate
  double floor_sharpness;           // p of the p-norm joining a candidate's time and the DRAM floor
  double split_k_reduce_s;          // split-K's fixed cost per tile (not fitted; shapes forced configs)
  SmallMCost small_m;
  LargeMCost large_m;
  // Dense calls of at most this many rows run on the skinny kernel (skinny_gemm.cpp, which also
  // bounds B's bytes), the others on the tiled one.
  int skinny_max_m_bf16;
  int skinny_max_m_fp8;
};

// The calibration for a device named `device_name` ("NVIDIA H100 80GB HBM3", ...): the GPU's own
// where one exists, else the Hopper calibration.
const Sm90CostModel& sm90_cost_model(std::string_view device_name);

// The calibration every SM90 GPU falls back to.
const Sm90CostModel& hopper_cost_model();

}  // namespace dg::ops
