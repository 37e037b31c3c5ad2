// FP8 quantization (templates/kernels/quantize.cu.j2, templates/include/dg/quant.cuh): the
// problem, the kernel variant it needs and its launch. docs/quantization.md has the numerics.
#pragma once
#include <cstddef>
#include <cstdint>

#include "jit/kernel.h"
#include "runtime/stream.h"

namespace dg::ops {

enum class QuantOp : int { kPerToken = 0, kPerBlock = 1, kMnMajor = 2, kKGrouped = 3 };
// Which rows of a per-token problem are quantized (dg.h: the dg_quantize_fp8_per_token_* calls).
enum class QuantGrouping : int { kNone = 0, kIndices = 1, kPsum = 2, kMasked = 3 };

// The kernel argument: host mirror of dg::quant::Params (templates/include/dg/quant.cuh).
struct QuantParams {
  const void* x;
  void* out;
  void* sf;
  const int32_t* groups;
  int64_t x_ld;
  int64_t x_batch;
  int64_t out_ld;
  int64_t out_batch;
  int64_t sf_ld;
  int64_t sf_batch;
  int32_t rows;
  int32_t cols;
  int32_t sf_rows;
  int32_t num_groups;
  float amax_floor;
  int32_t pow2;
};
static_assert(sizeof(QuantParams) == 104 && offsetof(QuantParams, x_ld) == 32 && offsetof(QuantParams, rows) == 80 &&
                  offsetof(QuantParams, amax_floor) == 96,
              "must match the device struct");

// The K-grouped kernel's argument: host mirror of dg::quant::KGroupedParams (dg/quant.cuh).
constexpr int kQuantMaxHostGroups = 512;  // host counts per launch; more groups take several launches
struct KGroupedQuantParams {
  const void* x;
  void* out;
  float* sf;
  const int32_t* ks_dev;
  int64_t x_ld;
  int64_t out_ld;
  int64_t sf_ld;
  int32_t x_rows;
  int32_t out_blocks;
  int32_t mn;
  int32_t num_groups;
  float amax_floor;
  int32_t pow2;
  int32_t blocks_per_cta;  // set by run_quantize_k_grouped
  int32_t reserved;
  int32_t ks[kQuantMaxHostGroups];
};
static_assert(sizeof(KGroupedQuantParams) == 88 + 4 * kQuantMaxHostGroups && offsetof(KGroupedQuantParams, x_rows) == 56 &&
                  offsetof(KGroupedQuantParams, blocks_per_cta) == 80 && offsetof(KGroupedQuantParams, ks) == 88,
              "must match the device struct");
// K-grouped: a CTA takes up to this many consecutive output blocks (its group scan is paid once),
// fewer when the grid would then give the device fewer than kQuantKGroupedCtasPerSm CTAs per SM.
constexpr int kQuantMaxBlocksPerCta = 8;
constexpr int kQuantKGroupedCtasPerSm = 4;

constexpr int kQuantThreads = 256;                      // every variant's block
constexpr int kQuantGroup = 128;                        // elements per scale
constexpr int kQuantRowsPerCta = kQuantThreads / 32;    // per-token: one row per warp
constexpr int kQuantColsPerCta = 32 * 16;               // per-token: a warp's columns (16 per lane)
constexpr int kQuantVecElems = 16;                      // 16-byte variants: axis a multiple of 16
constexpr float kQuantDefaultAmaxFloor = 1e-4f;         // docs/quantization.md
constexpr int kQuantMaxMaskedGroups = 1024;              // masked: the groups' table in shared memory
constexpr int kQuantMaskedCtasPerSm = 4;                 // masked: the grid walking the valid rows
// The kernels' family key: kFamilyElementwise with this first parameter (1 is the GEMM scale pass).
constexpr int64_t kElementwiseQuantize = 2;

struct QuantVariant {
  QuantOp op = QuantOp::kPerToken;
  bool fp32 = false;  // input FP32, else BF16
  bool vec = false;   // 16-byte accesses
  QuantGrouping grouping = QuantGrouping::kNone;
  bool packed = false;  // per-token: UE8M0 codes packed four to an int32
  bool transpose = false;  // K-grouped: codes K-major per group (the nt GEMM's a / b), else MN-major
};

// The kernel's specification; the compile tests enumerate it without a device.
jit::KernelSpec quantize_kernel_spec(const QuantVariant& v);

// Every variant there is (the compile tests render and compile them all).
int quantize_variants(QuantVariant* out, int capacity);

// Whether the 16-byte variant applies: x and out 16-byte aligned, their strides (elements, `esize`
// bytes for x) 16-byte multiples, and `axis` (the quantized rows' length) a multiple of 16.
bool quantize_vec_ok(const void* x, size_t esize, const int64_t* x_strides, int nx, const void* out,
                     const int64_t* out_strides, int nout, int64_t axis);

// The launch grid of a problem: per-token [batch] x rows x cols (rows including the scales'
// padding rows), per-block [batch] x rows x cols, MN-major K rows x MN columns, K-grouped output
// CTAs along the output's 128-row blocks (`rows`) x MN columns. Masked per-token
// problems (`masked`) get one dimension: at most num_sms * kQuantMaskedCtasPerSm blocks, fewer
// when the largest possible work (every row valid) needs fewer.
void quantize_grid(QuantOp op, int64_t batch, int64_t rows, int64_t cols, bool masked, int num_sms, unsigned grid[3]);

// Largest problem the kernels' 32-bit sizes and grid take: DG_ERROR_UNSUPPORTED naming `arg`.
dg_status check_quantize_limits(QuantOp op, int64_t batch, int64_t rows, int64_t cols, const char* arg);

// Loads the variant's kernel and, unless the grid is empty, launches it on the stream.
dg_status run_quantize(const dg_stream_s& stream, const QuantVariant& v, const QuantParams& p, int64_t batch);

// The K-grouped variant (v.op kKGrouped): one launch over p.out_blocks 128-row blocks x ceil(p.mn /
// 128) column chunks, p.blocks_per_cta (set here from the stream's SM count) blocks per CTA.
// K-grouped: output blocks per CTA for a problem of out_blocks x MN on num_sms SMs.
int k_grouped_blocks_per_cta(int64_t out_blocks, int64_t mn, int num_sms);

dg_status run_quantize_k_grouped(const dg_stream_s& stream, const QuantVariant& v, const KGroupedQuantParams& p);

}  // namespace dg::ops
