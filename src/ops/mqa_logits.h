// FP8 MQA logits of the DeepSeek-V3.2 indexer (docs/mqa_logits.md): the problems, the kernel
// configs, the template parameters of templates/kernels/mqa_logits.cu.j2 and the launches.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "dg.h"
#include "jit/kernel.h"
#include "runtime/stream.h"
#include "runtime/tma.h"

namespace dg::ops {

// Row stride (elements) of the logits buffers that dg_get_mqa_logits_layout recommends: rows start
// at 1024-byte boundaries. The kernels take any stride >= the row length that is a multiple of
// 16 bytes.
int64_t mqa_logits_row_stride(int64_t cols, dg_dtype dtype);

// Non-paged: everything the kernel choice and the launch need, read from the descriptors.
struct MqaLogitsArgs {
  int64_t s_q = 0, s_kv = 0;
  int heads = 0, head_dim = 0;
  dg_dtype logits_dtype = DG_DTYPE_FLOAT32;
  bool clean = true;
  int64_t max_seqlen_k = 0;  // > 0: the compressed layout, rows of max_seqlen_k columns from each ks
  const void* q = nullptr;      // [S_q * H, D] rows ld_q bytes apart
  int64_t ld_q = 0;
  const void* kv = nullptr;     // [S_kv, D] rows ld_kv bytes apart
  int64_t ld_kv = 0;
  const float* kv_sf = nullptr;  // [S_kv], 16-byte aligned
  const float* weights = nullptr;  // rows ld_weights elements apart (a multiple of 4), 16-byte aligned
  int64_t ld_weights = 0;
  const int32_t* ks = nullptr;
  const int32_t* ke = nullptr;
  void* logits = nullptr;
  int64_t ld_logits = 0;
};

// The template parameters (the kernel's identity).
struct MqaLogitsConfig {
  int heads = 64, head_dim = 128;
  int math_wg = 2;  // consumer warp-groups: 64 KV rows each per stage
  int stages = 6;
  bool bf16_out = false;
  bool compressed = false;  // the compressed layout (writes each token's keys only, never -inf)
  unsigned threads() const { return 128u * static_cast<unsigned>(math_wg + 1); }
  int block_q() const { return 128 / heads; }
  int block_kv() const { return 64 * math_wg; }
  unsigned smem_bytes() const;
};

MqaLogitsConfig choose_mqa_logits_config(int heads, int head_dim, dg_dtype logits_dtype, bool compressed = false);
// Parts per Q tile of the non-paged kernel (1 to 8): `tiles` Q tiles of at most `max_tile_blocks`
// KV blocks each, on `num_sms` persistent CTAs.
int mqa_logits_split(int64_t tiles, int64_t max_tile_blocks, int num_sms);
// Every configuration the non-paged entry point can choose (the compile tests build each).
std::vector<MqaLogitsConfig> all_mqa_logits_configs();

jit::KernelKey mqa_logits_kernel_key(const MqaLogitsConfig& c);
jit::KernelSpec mqa_logits_kernel_spec(const MqaLogitsConfig& c);

// Host mirror of dg::attention::MqaLogitsParams (templates/include/dg/attention/sm90_mqa_logits.cuh).
struct alignas(64) MqaLogitsParams {
  tma::Descriptor tma_q, tma_kv, tma_sf, tma_w;
  const int32_t* ks;
  const int32_t* ke;
  void* logits;
  int64_t ld_logits;
  uint32_t s_q, s_kv;
  uint32_t clean;
  uint32_t split;         // parts per Q tile
  uint32_t max_seqlen_k;  // compressed kernels: columns per row
};
static_assert(sizeof(MqaLogitsParams) == 576, "must match the device struct");
static_assert(offsetof(MqaLogitsParams, ks) == 512 && offsetof(MqaLogitsParams, logits) == 528 &&
                  offsetof(MqaLogitsParams, s_q) == 544 && offsetof(MqaLogitsParams, clean) == 552 &&
                  offsetof(MqaLogitsParams, max_seqlen_k) == 560,
              "must match the device struct");

// One launch on `stream` (none when S_q or S_kv is 0). With prepare_only the kernel is compiled and
// loaded and nothing runs.
dg_status run_mqa_logits(const dg_stream_s& stream, const MqaLogitsArgs& args, bool prepare_only);

// ---- paged (decoding) ----

// The schedule: int32 [num_sms + 1, 2] from the context lengths, on the stream (one CTA).
struct PagedMqaMetadataArgs {
  const int32_t* ctx = nullptr;  // [batch, cols], row stride ld_ctx elements
  int64_t batch = 0, ld_ctx = 1;
  int cols = 1;  // 1 (1-D lengths) or next_n (2-D)
  int num_sms = 0;
  int32_t* schedule = nullptr;
};
jit::KernelKey paged_mqa_metadata_kernel_key();
jit::KernelSpec paged_mqa_metadata_kernel_spec();
dg_status run_paged_mqa_metadata(const dg_stream_s& stream, const PagedMqaMetadataArgs& args, bool prepare_only);

struct PagedMqaLogitsArgs {
  int64_t batch = 0, num_blocks = 0, max_blocks = 0, max_context_len = 0;
  int next_n = 1, heads = 0, head_dim = 0;
  dg_dtype logits_dtype = DG_DTYPE_FLOAT32;
  bool clean = false, ctx_2d = false;
  int num_ctas = 0;              // the schedule's rows less one
  const void* q = nullptr;       // [B * next_n * H, D] rows ld_q bytes apart
  int64_t ld_q = 0;
  const void* kv_cache = nullptr;  // blocks block_stride bytes apart: 64 rows of D bytes, then 64 FP32 scales
  int64_t block_stride = 0;
  const float* weights = nullptr;  // rows ld_weights elements apart (a multiple of 4), 16-byte aligned
  int64_t ld_weights = 0;
  const int32_t* ctx = nullptr;
  int64_t ld_ctx = 1;
  const int32_t* block_table = nullptr;
  int64_t ld_block_table = 0;
  const int32_t* schedule = nullptr;
  void* logits = nullptr;
  int64_t ld_logits = 0;
};

struct PagedMqaLogitsConfig {
  int heads = 64, head_dim = 128, next_n = 1;
  int math_wg = 2;  // consumer warp-groups: one 64-key block each per stage
  int stages = 8;
  bool bf16_out = false;
  unsigned threads() const { return 128u * static_cast<unsigned>(math_wg + 1); }
  unsigned smem_bytes() const;
};

PagedMqaLogitsConfig choose_paged_mqa_logits_config(int heads, int head_dim, int next_n, dg_dtype logits_dtype);
// Every configuration the paged entry point can choose (the compile tests build each).
std::vector<PagedMqaLogitsConfig> all_paged_mqa_logits_configs();
jit::KernelKey paged_mqa_logits_kernel_key(const PagedMqaLogitsConfig& c);
jit::KernelSpec paged_mqa_logits_kernel_spec(const PagedMqaLogitsConfig& c);

// Host mirror of dg::attention::PagedMqaLogitsParams (templates/include/dg/attention/sm90_paged_mqa_logits.cuh).
struct alignas(64) PagedMqaLogitsParams {
  tma::Descriptor tma_q, tma_kv, tma_sf, tma_w;
  const int32_t* ctx;
  int64_t ld_ctx;
  const int32_t* block_table;
  int64_t ld_block_table;
  const int32_t* schedule;
  void* logits;
  int64_t ld_logits;
  uint32_t batch, max_blocks, max_context_len;
  uint32_t ctx_2d;
  uint32_t clean;
  uint32_t reserved[9];
};
static_assert(sizeof(PagedMqaLogitsParams) == 640, "must match the device struct");
static_assert(offsetof(PagedMqaLogitsParams, ctx) == 512 && offsetof(PagedMqaLogitsParams, schedule) == 544 &&
                  offsetof(PagedMqaLogitsParams, ld_logits) == 560 && offsetof(PagedMqaLogitsParams, batch) == 568 &&
                  offsetof(PagedMqaLogitsParams, clean) == 584,
              "must match the device struct");

// One launch of num_ctas CTAs on `stream` (none when there are no rows or columns). With
// prepare_only the kernel is compiled and loaded and nothing runs.
dg_status run_paged_mqa_logits(const dg_stream_s& stream, const PagedMqaLogitsArgs& args, bool prepare_only);

// Compiles and loads the paged logits kernel for `args` (its shape fields) and the metadata kernel,
// both at once.
dg_status prepare_paged_mqa(const dg_stream_s& stream, const PagedMqaLogitsArgs& args);

}  // namespace dg::ops
