#include "ops/mqa_logits.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

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
  // Mirrors MqaLogitsTraits: Q tile, KV stages, scale stages, 2 barriers per stage + 2 for the Q tile.
  const unsigned q = 128u * head_dim, kv = 64u * math_wg * head_dim, sf = 64u * math_wg * 4;
  return q + stages * (kv + sf) + (2 * stages + 2) * 8;
}

MqaLogitsConfig choose_mqa_logits_config(int heads, int head_dim, dg_dtype logits_dtype) {
  MqaLogitsConfig c;
  c.heads = heads;
  c.head_dim = head_dim;
  c.bf16_out = logits_dtype == DG_DTYPE_BFLOAT16;
  // Two consumer warp-groups (128 KV rows a stage) and six stages: 118 KB of shared memory for
  // D = 128, so the producer stays a few blocks ahead of the math.
  c.math_wg = 2;
  c.stages = 6;
  return c;
}

std::vector<MqaLogitsConfig> all_mqa_logits_configs() {
  std::vector<MqaLogitsConfig> out;
  for (int h : {32, 64})
    for (int d : {64, 128})
      for (dg_dtype t : {DG_DTYPE_FLOAT32, DG_DTYPE_BFLOAT16}) out.push_back(choose_mqa_logits_config(h, d, t));
  return out;
}

jit::KernelKey mqa_logits_kernel_key(const MqaLogitsConfig& c) {
  return jit::KernelKey(jit::kFamilyMqaLogits, {c.heads, c.head_dim, c.math_wg, c.stages, c.bf16_out});
}

jit::KernelSpec mqa_logits_kernel_spec(const MqaLogitsConfig& c) {
  jit::KernelSpec spec;
  spec.template_name = "kernels/mqa_logits.cu.j2";
  spec.kernel_name = fmt::format("dg_sm90_fp8_mqa_logits_h{}_d{}_w{}_s{}_{}", c.heads, c.head_dim, c.math_wg,
                                 c.stages, c.bf16_out ? "bf16" : "f32");
  spec.context = codegen::Value::map({{"kernel_name", spec.kernel_name},
                                      {"heads", c.heads},
                                      {"head_dim", c.head_dim},
                                      {"math_wg", c.math_wg},
                                      {"stages", c.stages},
                                      {"out_type", c.bf16_out ? "dg::bf16" : "float"},
                                      {"smem_bytes", static_cast<int64_t>(c.smem_bytes())}});
  return spec;
}

dg_status run_mqa_logits(const dg_stream_s& stream, const MqaLogitsArgs& a, bool prepare_only) {
  const Device& dev = *stream.device;
  if (dev.cc_major != 9)
    return fail(DG_ERROR_UNSUPPORTED, "stream: device {} is sm_{}{}; dg_fp8_mqa_logits runs on SM90 (sm_90a) only",
                dev.name, dev.cc_major, dev.cc_minor);
  int num_sms = 0;
  DG_TRY(num_sms_of(stream, &num_sms));
  const MqaLogitsConfig c = choose_mqa_logits_config(a.heads, a.head_dim, a.logits_dtype);
  if (!prepare_only && (a.s_q == 0 || a.s_kv == 0)) return DG_SUCCESS;
  const jit::Kernel* kernel = nullptr;
  DG_TRY(dev.kernels->get(
      mqa_logits_kernel_key(c),
      [&](jit::KernelSpec* spec) {
        *spec = mqa_logits_kernel_spec(c);
        return DG_SUCCESS;
      },
      config_of(stream), &kernel));
  if (prepare_only) return DG_SUCCESS;

  ContextScope scope;
  DG_TRY(scope.enter(dev));
  MqaLogitsParams p;
  std::memset(&p, 0, sizeof(p));
  const uint32_t d = static_cast<uint32_t>(a.head_dim);
  DG_TRY(tma::encode_2d(&p.tma_q, a.q, CU_TENSOR_MAP_DATA_TYPE_UINT8, 1, d, a.s_q * a.heads, a.ld_q, d, 128, d, "q"));
  DG_TRY(tma::encode_2d(&p.tma_kv, a.kv, CU_TENSOR_MAP_DATA_TYPE_UINT8, 1, d, a.s_kv, a.ld_kv, d,
                        static_cast<uint32_t>(c.block_kv()), d, "kv"));
  DG_TRY(tma::encode_2d(&p.tma_sf, a.kv_sf, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 4, a.s_kv, 1, a.s_kv,
                        static_cast<uint32_t>(c.block_kv()), 1, 0, "kv_sf"));
  p.weights = a.weights;
  p.ld_weights = a.ld_weights;
  p.ks = a.ks;
  p.ke = a.ke;
  p.logits = a.logits;
  p.ld_logits = a.ld_logits;
  p.s_q = static_cast<uint32_t>(a.s_q);
  p.s_kv = static_cast<uint32_t>(a.s_kv);
  p.clean = a.clean ? 1u : 0u;

  LaunchConfig lc;
  // Persistent: at most one CTA per SM, each striding over the Q tiles.
  const int64_t tiles = (a.s_q + c.block_q() - 1) / c.block_q();
  lc.grid[0] = static_cast<unsigned>(std::min<int64_t>(tiles, num_sms));
  lc.block[0] = c.threads();
  lc.smem_bytes = c.smem_bytes();
  lc.pdl = config_of(stream).pdl;
  void* args[] = {&p};
  return launch(stream, *kernel, lc, args);
}

}  // namespace dg::ops
