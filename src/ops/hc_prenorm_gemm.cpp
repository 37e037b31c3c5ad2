#include "ops/hc_prenorm_gemm.h"

#include <algorithm>

#include "jit/kernel_cache.h"
#include "runtime/device.h"
#include "runtime/launch.h"
#include "runtime/status.h"

namespace dg::ops {
namespace {

constexpr int kTileN = 8;
constexpr int kTileM = 16;
constexpr int kMaxMTiles = 2;
constexpr int kBlocksPerSmWanted = 2;
constexpr int kMaxNTilesWideM = 3;

int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace

HcPrenormConfig choose_hc_prenorm_config(int64_t m, int n, int splits, bool vec, int num_sms) {
  HcPrenormConfig c;
  c.n_tiles = static_cast<int>(std::clamp<int64_t>(cdiv(n, kTileN), 1, kHcMaxN / kTileN));
  c.vec = vec;
  const int64_t wide_blocks = cdiv(m, int64_t(kHcWarps) * kMaxMTiles * kTileM) * std::max(splits, 1);
  // Four column tiles with two row tiles would spill registers (measured with ptxas -v).
  const bool room = c.n_tiles <= kMaxNTilesWideM;
  c.m_tiles = room && wide_blocks >= int64_t(kBlocksPerSmWanted) * std::max(num_sms, 1) ? kMaxMTiles : 1;
  c.stages = hc_prenorm_stages(c.m_tiles);
  return c;
}

std::vector<HcPrenormConfig> all_hc_prenorm_configs() {
  std::vector<HcPrenormConfig> out;
  for (int n_tiles = 1; n_tiles <= kHcMaxN / kTileN; ++n_tiles)
    for (int m_tiles = 1; m_tiles <= (n_tiles <= kMaxNTilesWideM ? kMaxMTiles : 1); ++m_tiles)
      for (bool vec : {true, false}) {
        HcPrenormConfig c;
        c.n_tiles = n_tiles;
        c.m_tiles = m_tiles;
        c.stages = hc_prenorm_stages(m_tiles);
        c.vec = vec;
        out.push_back(c);
      }
  return out;
}

jit::KernelKey hc_prenorm_kernel_key(const HcPrenormConfig& c) {
  return jit::KernelKey(jit::kFamilyHcPrenorm, {c.n_tiles, c.m_tiles, c.warps, c.stages, c.vec ? 1 : 0});
}

jit::KernelSpec hc_prenorm_kernel_spec(const HcPrenormConfig& c) {
  jit::KernelSpec spec;
  spec.template_name = "kernels/hc_prenorm_gemm.cu.j2";
  spec.kernel_name = "dg_hc_prenorm_gemm";
  spec.context = codegen::Value::map({{"kernel_name", spec.kernel_name},
                                      {"n_tiles", c.n_tiles},
                                      {"m_tiles", c.m_tiles},
                                      {"warps", c.warps},
                                      {"stages", c.stages},
                                      {"vec", c.vec ? 1 : 0}});
  return spec;
}

int32_t hc_prenorm_chunks_per_split(int64_t k, int splits) {
  const int64_t chunks = cdiv(k, kHcChunk);
  return static_cast<int32_t>(std::max<int64_t>(1, cdiv(chunks, std::max(splits, 1))));
}

dg_status run_hc_prenorm_gemm(const dg_stream_s& stream, const HcPrenormParams& p, int splits, bool vec) {
  if (p.m == 0) return DG_SUCCESS;
  const Device& dev = *stream.device;
  if (dev.cc_major < 9)
    return fail(DG_ERROR_UNSUPPORTED, "stream: device {} is sm_{}{}; dg_tf32_hc_prenorm_gemm needs sm_90 or newer",
                dev.name, dev.cc_major, dev.cc_minor);
  int sms = 0;
  DG_TRY(num_sms_of(stream, &sms));
  const HcPrenormConfig c = choose_hc_prenorm_config(p.m, p.n, splits, vec, sms);
  const Kernel* kernel = nullptr;
  DG_TRY(jit::get_kernel(stream, hc_prenorm_kernel_key(c),
                         [&](jit::KernelSpec* spec) {
                           *spec = hc_prenorm_kernel_spec(c);
                           return DG_SUCCESS;
                         },
                         &kernel));
  HcPrenormParams arg = p;
  void* args[] = {&arg};
  LaunchConfig lc;
  lc.grid[0] = static_cast<unsigned>(cdiv(p.m, c.block_m()));
  lc.grid[1] = static_cast<unsigned>(splits);
  lc.block[0] = static_cast<unsigned>(c.warps * 32);
  lc.pdl = config_of(stream).pdl;
  return launch(stream, *kernel, lc, args);
}

}  // namespace dg::ops
