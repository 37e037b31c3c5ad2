#include "ops/mqa_logits.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "jit/concurrent.h"
#include "jit/kernel_cache.h"
#include "runtime/device.h"
#include "runtime/launch.h"
#include "runtime/status.h"
#include "runtime/tensor.h"

namespace dg::ops {

int64_t mqa_logits_row_stride(int64_t cols, dg_dtype dtype) {
  const int64_t per_1k = 1024 / static_cast<int64_t>(dtype_size(dtype));
  return (cols + per_1k - 1) / per_1k * per_1k;
}

unsigned MqaLogitsConfig::smem_bytes() const {
  // Mirrors MqaLogitsTraits: two Q stages, the KV and scale stages, two weight and range stages,
  // 2 barriers per stage and per Q stage.
  const unsigned q = 128u * head_dim, kv = 64u * math_wg * head_dim, sf = 64u * math_wg * 4;
  return 2 * q + stages * (kv + sf) + 2 * (512 + 128) + (2 * stages + 4) * 8;
}

int mqa_logits_split(int64_t tiles, int64_t max_tile_blocks, int num_sms) {
  // The part count whose rounds of num_sms parts are fullest (parts counted as equal: the tiles'
  // block counts are on the device), the smallest within half a percent of the best: each part
  // reloads its Q tile and restarts the KV stream. At most 8 parts, none under 8 blocks.
  const int max_split = static_cast<int>(std::clamp<int64_t>(max_tile_blocks / 8, 1, 8));
  const auto fill = [&](int s) {
    const int64_t parts = tiles * s, rounds = (parts + num_sms - 1) / num_sms;
    return static_cast<double>(parts) / static_cast<double>(rounds * num_sms);
  };
  double best = 0;
  for (int s = 1; s <= max_split; ++s) best = std::max(best, fill(s));
  int split = 1;
  while (fill(split) < best - 0.005) ++split;
  return split;
}

MqaLogitsConfig choose_mqa_logits_config(int heads, int head_dim, dg_dtype logits_dtype, bool compressed) {
  MqaLogitsConfig c;
  c.heads = heads;
  c.head_dim = head_dim;
  c.bf16_out = logits_dtype == DG_DTYPE_BFLOAT16;
  c.compressed = compressed;
  // Four consumer warp-groups (256 KV rows a stage): while one sums its block over the heads, the
  // others keep the tensor cores busy (two warp-groups ran 0.88x as fast on the H100). Three
  // stages (131 KB for D = 128) measured the same as four or five.
  c.math_wg = 4;
  c.stages = 3;
  return c;
}

std::vector<MqaLogitsConfig> all_mqa_logits_configs() {
  std::vector<MqaLogitsConfig> out;
  for (int h : {32, 64})
    for (int d : {64, 128})
      for (dg_dtype t : {DG_DTYPE_FLOAT32, DG_DTYPE_BFLOAT16})
        for (bool compressed : {false, true}) out.push_back(choose_mqa_logits_config(h, d, t, compressed));
  return out;
}

jit::KernelKey mqa_logits_kernel_key(const MqaLogitsConfig& c) {
  return jit::KernelKey(jit::kFamilyMqaLogits, {c.heads, c.head_dim, c.math_wg, c.stages, c.bf16_out, c.compressed});
}

jit::KernelSpec mqa_logits_kernel_spec(const MqaLogitsConfig& c) {
  jit::KernelSpec spec;
  spec.template_name = "kernels/mqa_logits.cu.j2";
  spec.kernel_name = fmt::format("dg_sm90_fp8_mqa_logits_h{}_d{}_w{}_s{}_{}{}", c.heads, c.head_dim, c.math_wg,
                                 c.stages, c.bf16_out ? "bf16" : "f32", c.compressed ? "_compressed" : "");
  spec.context = codegen::Value::map({{"kernel_name", spec.kernel_name},
                                      {"heads", c.heads},
                                      {"head_dim", c.head_dim},
                                      {"math_wg", c.math_wg},
                                      {"stages", c.stages},
                                      {"out_type", c.bf16_out ? "dg::bf16" : "float"},
                                      {"compressed", c.compressed ? "true" : "false"},
                                      {"smem_bytes", static_cast<int64_t>(c.smem_bytes())}});
  return spec;
}

namespace {

// Finds the kernel of `key` (built from spec_of() on a miss) and, unless only preparing, runs
// run(kernel) in the device's context (TMA encoding needs it current).
template <typename SpecOf, typename Run>
dg_status with_kernel(const dg_stream_s& stream, const jit::KernelKey& key, SpecOf&& spec_of, bool prepare_only,
                      Run&& run) {
  const Device& dev = *stream.device;
  const Kernel* kernel = nullptr;
  DG_TRY(jit::get_kernel(stream,
      key,
      [&](jit::KernelSpec* spec) {
        *spec = spec_of();
        return DG_SUCCESS;
      }, &kernel));
  if (prepare_only) return DG_SUCCESS;
  ContextScope scope;
  DG_TRY(scope.enter(dev));
  return run(*kernel);
}

// What both logits kernels do once their problem is checked: zero the launch parameters, let
// `encode` fill them (TMA maps and scalars), and launch `grid` CTAs of the config's block and
// shared memory.
template <typename Params, typename Config, typename Encode>
dg_status launch_logits_kernel(const dg_stream_s& stream, const Config& c, const jit::KernelKey& key,
                               jit::KernelSpec (*spec_of)(const Config&), bool prepare_only, int64_t grid,
                               Encode&& encode) {
  return with_kernel(
      stream, key, [&] { return spec_of(c); }, prepare_only,
      [&](const Kernel& kernel) {
        Params p;
        std::memset(&p, 0, sizeof(p));
        DG_TRY(encode(&p));
        LaunchConfig lc;
        lc.grid[0] = static_cast<unsigned>(grid);
        lc.block[0] = c.threads();
        lc.smem_bytes = c.smem_bytes();
        lc.pdl = config_of(stream).pdl;
        void* args[] = {&p};
        return launch(stream, kernel, lc, args);
      });
}

}  // namespace

dg_status run_mqa_logits(const dg_stream_s& stream, const MqaLogitsArgs& a, bool prepare_only) {
  const Device& dev = *stream.device;
  if (dev.cc_major != 9)
    return fail(DG_ERROR_UNSUPPORTED, "stream: device {} is sm_{}{}; dg_fp8_mqa_logits runs on SM90 (sm_90a) only",
                dev.name, dev.cc_major, dev.cc_minor);
  int num_sms = 0;
  DG_TRY(num_sms_of(stream, &num_sms));
  const MqaLogitsConfig c = choose_mqa_logits_config(a.heads, a.head_dim, a.logits_dtype, a.max_seqlen_k > 0);
  if (!prepare_only && (a.s_q == 0 || a.s_kv == 0)) return DG_SUCCESS;
  // Persistent: at most one CTA per SM, each striding over the parts of the Q tiles. A compressed
  // tile scans about max_seqlen_k keys when its tokens' ranges start close together.
  const int64_t tiles = (a.s_q + c.block_q() - 1) / c.block_q();
  const int64_t tile_keys = a.max_seqlen_k > 0 ? std::min(a.s_kv, a.max_seqlen_k) : a.s_kv;
  const int split = mqa_logits_split(tiles, (tile_keys + c.block_kv() - 1) / c.block_kv(), num_sms);
  return launch_logits_kernel<MqaLogitsParams>(
      stream, c, mqa_logits_kernel_key(c), mqa_logits_kernel_spec, prepare_only, std::min<int64_t>(tiles * split, num_sms),
      [&](MqaLogitsParams* p) {
        const uint32_t d = static_cast<uint32_t>(a.head_dim);
        DG_TRY(tma::encode_2d(&p->tma_q, a.q, CU_TENSOR_MAP_DATA_TYPE_UINT8, 1, d, a.s_q * a.heads, a.ld_q, d, 128,
                              d, "q"));
        DG_TRY(tma::encode_2d(&p->tma_kv, a.kv, CU_TENSOR_MAP_DATA_TYPE_UINT8, 1, d, a.s_kv, a.ld_kv, d,
                              static_cast<uint32_t>(c.block_kv()), d, "kv"));
        DG_TRY(tma::encode_2d(&p->tma_sf, a.kv_sf, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 4, a.s_kv, 1, a.s_kv,
                              static_cast<uint32_t>(c.block_kv()), 1, 0, "kv_sf"));
        // The tile's weights ride with its Q tile: rows of H floats, a box of 128 / H rows.
        DG_TRY(tma::encode_2d(&p->tma_w, a.weights, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 4,
                              static_cast<uint64_t>(a.heads), a.s_q, a.ld_weights, static_cast<uint32_t>(a.heads),
                              static_cast<uint32_t>(c.block_q()), 0, "weights"));
        p->ks = a.ks;
        p->ke = a.ke;
        p->logits = a.logits;
        p->ld_logits = a.ld_logits;
        p->s_q = static_cast<uint32_t>(a.s_q);
        p->s_kv = static_cast<uint32_t>(a.s_kv);
        p->clean = a.clean ? 1u : 0u;
        p->split = static_cast<uint32_t>(split);
        p->max_seqlen_k = static_cast<uint32_t>(a.max_seqlen_k);
        return DG_SUCCESS;
      });
}

// ---- paged (decoding) ----

jit::KernelKey paged_mqa_metadata_kernel_key() { return jit::KernelKey(jit::kFamilyPagedMqaMetadata, {1}); }

jit::KernelSpec paged_mqa_metadata_kernel_spec() {
  jit::KernelSpec spec;
  spec.template_name = "kernels/paged_mqa_metadata.cu.j2";
  spec.kernel_name = "dg_paged_mqa_logits_metadata";
  spec.context = codegen::Value::map({{"kernel_name", spec.kernel_name}});
  return spec;
}

dg_status run_paged_mqa_metadata(const dg_stream_s& stream, const PagedMqaMetadataArgs& a, bool prepare_only) {
  int device_sms = 0;  // the stream's SM cap is checked as for every launch
  DG_TRY(num_sms_of(stream, &device_sms));
  return with_kernel(
      stream, paged_mqa_metadata_kernel_key(), paged_mqa_metadata_kernel_spec, prepare_only,
      [&](const Kernel& kernel) {
        const int* ctx = a.ctx;
        long long batch = a.batch, ld = a.ld_ctx;
        int cols = a.cols, num_sms = a.num_sms;
        int* meta = a.schedule;
        LaunchConfig lc;
        lc.block[0] = 1024;
        lc.pdl = config_of(stream).pdl;
        void* args[] = {&ctx, &batch, &cols, &ld, &num_sms, &meta};
        return launch(stream, kernel, lc, args);
      });
}

unsigned PagedMqaLogitsConfig::smem_bytes() const {
  // Mirrors PagedMqaLogitsTraits: two Q stages, the KV and scale stages (math_wg blocks each),
  // two weight stages, two 32-byte sequence works, 2 barriers per stage and per Q stage.
  const unsigned q = static_cast<unsigned>(next_n * heads * head_dim), w = static_cast<unsigned>(next_n * heads * 4);
  const unsigned kv = 64u * head_dim * math_wg, sf = 256u * math_wg;
  return 2 * q + stages * (kv + sf) + 2 * w + 2 * 32 + (2 * stages + 4) * 8;
}

PagedMqaLogitsConfig choose_paged_mqa_logits_config(int heads, int head_dim, int next_n, dg_dtype logits_dtype) {
  PagedMqaLogitsConfig c;
  c.heads = heads;
  c.head_dim = head_dim;
  c.next_n = next_n;
  c.bf16_out = logits_dtype == DG_DTYPE_BFLOAT16;
  // Four consumer warp-groups (one 64-key block each per stage) and three stages: on the H100 this
  // beat two warp-groups with 3-8 stages by 1-3% (more stages in flight did not help: the cache
  // read is not short of requests); on an H200, 4-6 stages ran 0-6% slower and two warp-groups
  // with 8 stages 4-6% (bench/models/h200/paged-mqa-cache-reads.json). next_n = 4 (N = 256, 128
  // accumulators a thread) needs the registers of two warp-groups.
  c.math_wg = next_n <= 2 ? 4 : 2;
  c.stages = c.math_wg == 4 ? 3 : 4;
  while (c.smem_bytes() > 232448u) --c.stages;
  return c;
}

std::vector<PagedMqaLogitsConfig> all_paged_mqa_logits_configs() {
  std::vector<PagedMqaLogitsConfig> out;
  for (int h : {32, 64})
    for (int d : {64, 128})
      for (int n : {1, 2, 4})
        for (dg_dtype t : {DG_DTYPE_FLOAT32, DG_DTYPE_BFLOAT16})
          out.push_back(choose_paged_mqa_logits_config(h, d, n, t));
  return out;
}

jit::KernelKey paged_mqa_logits_kernel_key(const PagedMqaLogitsConfig& c) {
  return jit::KernelKey(jit::kFamilyPagedMqaLogits,
                        {c.heads, c.head_dim, c.next_n, c.math_wg, c.stages, c.bf16_out});
}

jit::KernelSpec paged_mqa_logits_kernel_spec(const PagedMqaLogitsConfig& c) {
  jit::KernelSpec spec;
  spec.template_name = "kernels/paged_mqa_logits.cu.j2";
  spec.kernel_name = fmt::format("dg_sm90_fp8_paged_mqa_logits_h{}_d{}_n{}_w{}_s{}_{}", c.heads, c.head_dim,
                                 c.next_n, c.math_wg, c.stages, c.bf16_out ? "bf16" : "f32");
  spec.context = codegen::Value::map({{"kernel_name", spec.kernel_name},
                                      {"heads", c.heads},
                                      {"head_dim", c.head_dim},
                                      {"next_n", c.next_n},
                                      {"math_wg", c.math_wg},
                                      {"stages", c.stages},
                                      {"out_type", c.bf16_out ? "dg::bf16" : "float"},
                                      {"smem_bytes", static_cast<int64_t>(c.smem_bytes())}});
  return spec;
}

dg_status run_paged_mqa_logits(const dg_stream_s& stream, const PagedMqaLogitsArgs& a, bool prepare_only) {
  const Device& dev = *stream.device;
  if (dev.cc_major != 9)
    return fail(DG_ERROR_UNSUPPORTED,
                "stream: device {} is sm_{}{}; dg_fp8_paged_mqa_logits runs on SM90 (sm_90a) only", dev.name,
                dev.cc_major, dev.cc_minor);
  int device_sms = 0;  // the stream's SM cap is checked as for every launch; the grid is the schedule's
  DG_TRY(num_sms_of(stream, &device_sms));
  const PagedMqaLogitsConfig c = choose_paged_mqa_logits_config(a.heads, a.head_dim, a.next_n, a.logits_dtype);
  if (!prepare_only && (a.batch == 0 || a.max_context_len == 0 || a.num_ctas == 0)) return DG_SUCCESS;
  return launch_logits_kernel<PagedMqaLogitsParams>(
      stream, c, paged_mqa_logits_kernel_key(c), paged_mqa_logits_kernel_spec, prepare_only, a.num_ctas,
      [&](PagedMqaLogitsParams* p) {
        const uint32_t d = static_cast<uint32_t>(a.head_dim), n = static_cast<uint32_t>(a.next_n * a.heads);
        DG_TRY(tma::encode_2d(&p->tma_q, a.q, CU_TENSOR_MAP_DATA_TYPE_UINT8, 1, d, a.batch * n, a.ld_q, d, n, d,
                              "q"));
        // Values: D-byte rows, 64 per block, blocks block_stride bytes apart; scales: the 64 FP32 after
        // a block's values, a row of 64 per block. Each block is read once, by one CTA: single lines
        // into L2 (docs/gemm.md#l2-fetch; line pairs ran 1.2-2.1% slower on an H200).
        const int64_t blocks = std::max<int64_t>(a.num_blocks, 1);
        DG_TRY(tma::encode_3d(&p->tma_kv, a.kv_cache, CU_TENSOR_MAP_DATA_TYPE_UINT8, 1, d, 64, d, blocks,
                              a.block_stride, d, 64, d, "kv_cache", tma::L2Fetch::kLine));
        DG_TRY(tma::encode_2d(&p->tma_sf, static_cast<const uint8_t*>(a.kv_cache) + 64 * a.head_dim,
                              CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 4, 64, blocks, a.block_stride / 4, 64, 1, 0,
                              "kv_cache scales", tma::L2Fetch::kLine));
        // A sequence's weights ride with its Q tile: rows of H floats, a box of next_n rows.
        DG_TRY(tma::encode_2d(&p->tma_w, a.weights, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 4,
                              static_cast<uint64_t>(a.heads), a.batch * a.next_n, a.ld_weights,
                              static_cast<uint32_t>(a.heads), static_cast<uint32_t>(a.next_n), 0, "weights"));
        p->ctx = a.ctx;
        p->ld_ctx = a.ld_ctx;
        p->block_table = a.block_table;
        p->ld_block_table = a.ld_block_table;
        p->schedule = a.schedule;
        p->logits = a.logits;
        p->ld_logits = a.ld_logits;
        p->batch = static_cast<uint32_t>(a.batch);
        p->max_blocks = static_cast<uint32_t>(a.max_blocks);
        p->max_context_len = static_cast<uint32_t>(a.max_context_len);
        p->ctx_2d = a.ctx_2d ? 1u : 0u;
        p->clean = a.clean ? 1u : 0u;
        return DG_SUCCESS;
      });
}

dg_status prepare_paged_mqa(const dg_stream_s& stream, const PagedMqaLogitsArgs& args) {
  return jit::run_concurrently([&] { return run_paged_mqa_logits(stream, args, true); },
                               [&] { return run_paged_mqa_metadata(stream, PagedMqaMetadataArgs{}, true); });
}

}  // namespace dg::ops
