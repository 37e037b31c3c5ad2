#include "ops/hc_prenorm_gemm.h"

#include <algorithm>
#include <mutex>
#include <set>
#include <string>

#include "jit/kernel_cache.h"
#include "runtime/device.h"
#include "runtime/launch.h"
#include "runtime/log.h"
#include "runtime/status.h"

namespace dg::ops {
namespace {

constexpr int kTileN = 8;
constexpr int kTileM = 16;
constexpr int kMaxMTiles = 2;
constexpr int kBlocksPerSmWanted = 2;
constexpr int kMaxNTilesWideM = 3;
// The streaming kernel.
constexpr unsigned kSwizzleBytes = 128;  // one row of every TMA box, A's and B's
constexpr unsigned kSwizzleAtom = 1024;  // the ring's alignment slack
constexpr unsigned kBarrierBytes = 8;
constexpr int kMaxStages = 8;
constexpr int kMinStages = 2;
// Shared memory of one CTA when two share an SM: (228 KiB - 2 x 1 KiB reserved per CTA) / 2.
constexpr unsigned kSmemPerCta = 115712;
constexpr int kMinStagesPerCta = 4;  // a cluster share shorter than this spends its time filling the ring
constexpr int kOneTileRows = 64;     // M up to this: one 64-row tile
// Small grids (a split call's few items, at most one CTA per SM): clusters of up to this many CTAs
// whose shares keep at least kMinStagesSmallGrid stages. At M 13-137 with 16 splits (7-28 stages
// per split) these ran up to 17% faster than the CTAs of four or more stages each (H200).
constexpr int kMaxClusterSmallGrid = 4;
constexpr int kMinStagesSmallGrid = 2;

int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

unsigned tma_smem_bytes(int rows, int n_tiles, int stages) {
  const unsigned stage = unsigned(rows) * kSwizzleBytes + 2u * 8u * unsigned(n_tiles) * kSwizzleBytes;
  return kSwizzleAtom + unsigned(stages) * (stage + 2u * kBarrierBytes);
}

int tma_stages(int rows, int n_tiles) {
  int s = kMaxStages;
  while (s > kMinStages && tma_smem_bytes(rows, n_tiles, s) > kSmemPerCta) --s;
  return s;
}

// Streaming kernel: the CTAs sharing each work item's K double while the doubled grid still runs in
// one round (two CTAs per SM) and each CTA keeps kMinStagesPerCta stages, or, up to
// kMaxClusterSmallGrid, while it still has at most one CTA per SM and each CTA kMinStagesSmallGrid.
int tma_cluster(int64_t items, int64_t stages_per_split, int num_sms) {
  const int64_t sms = std::max(num_sms, 1), resident = int64_t(kHcBlocksPerSm) * sms;
  auto may_double = [&](int64_t cluster) {
    const int64_t next = 2 * cluster;
    const bool round = items * next <= resident && stages_per_split >= next * kMinStagesPerCta;
    const bool small = next <= kMaxClusterSmallGrid && items * next <= sms &&
                       cdiv(stages_per_split, next) >= kMinStagesSmallGrid;
    return next <= kHcMaxCluster && (round || small);
  };
  int cluster = 1;
  while (may_double(cluster)) cluster *= 2;
  return cluster;
}

// Rows per tile: 128 (two 16-row MMA tiles per math warp, each read of B serving both), or 64 where M
// fits one tile or where a split call's 64-row items still number at most one per SM: the split's
// few stages then spread over more SMs (M 137 / 300 with 16 splits: 10-15% faster, H200).
int tma_m_tiles(int64_t m, int splits, int num_sms) {
  if (m <= kOneTileRows) return 1;
  if (splits > 1 && cdiv(m, kOneTileRows) * splits <= std::max(num_sms, 1)) return 1;
  return kMaxMTiles;
}

}  // namespace

void hc_prenorm_grid(const HcPrenormConfig& c, int64_t m, int splits, int num_sms, unsigned (&grid)[2]) {
  const int64_t tiles = cdiv(m, c.block_m());
  if (c.tma && c.cluster == 1) {
    const int64_t resident = int64_t(kHcBlocksPerSm) * std::max(num_sms, 1);
    grid[0] = static_cast<unsigned>(std::min(tiles * std::max(splits, 1), resident));
    grid[1] = 1;
    return;
  }
  grid[0] = static_cast<unsigned>(tiles * c.cluster);
  grid[1] = static_cast<unsigned>(splits);
}

unsigned HcPrenormConfig::smem_bytes() const { return tma ? tma_smem_bytes(block_m(), n_tiles, stages) : 0u; }

HcPrenormConfig choose_hc_prenorm_config(int64_t m, int n, int64_t k, int splits, bool vec, int num_sms) {
  HcPrenormConfig c;
  if (vec && k >= kHcStageK) {
    c.tma = true;
    c.n_tiles = static_cast<int>(std::clamp<int64_t>(cdiv(n, kTileN), 1, kHcMaxN / kTileN));
    c.m_tiles = tma_m_tiles(m, splits, num_sms);
    c.stages = tma_stages(c.block_m(), c.n_tiles);
    const int64_t items = cdiv(m, c.block_m()) * std::max(splits, 1);
    const int64_t stages_per_split = cdiv(hc_prenorm_chunks_per_split(k, splits), 2);
    c.cluster = tma_cluster(items, stages_per_split, num_sms);
    return c;
  }
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
    for (int m_tiles = 1; m_tiles <= kMaxMTiles; ++m_tiles)
      for (int cluster = 1; cluster <= kHcMaxCluster; cluster *= 2) {
        HcPrenormConfig c;
        c.tma = true;
        c.n_tiles = n_tiles;
        c.m_tiles = m_tiles;
        c.stages = tma_stages(c.block_m(), n_tiles);
        c.cluster = cluster;
        out.push_back(c);
      }
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
  return jit::KernelKey(jit::kFamilyHcPrenorm,
                        {c.tma ? 1 : 0, c.n_tiles, c.m_tiles, c.warps, c.stages, c.vec ? 1 : 0, c.cluster});
}

jit::KernelSpec hc_prenorm_kernel_spec(const HcPrenormConfig& c) {
  jit::KernelSpec spec;
  if (c.tma) {
    spec.template_name = "kernels/hc_prenorm_gemm_tma.cu.j2";
    spec.kernel_name = "dg_hc_prenorm_gemm_tma";
    spec.context = codegen::Value::map({{"kernel_name", spec.kernel_name},
                                        {"n_tiles", c.n_tiles},
                                        {"m_tiles", c.m_tiles},
                                        {"math_warps", c.warps},
                                        {"stages", c.stages},
                                        {"cluster", c.cluster},
                                        {"min_blocks", kHcBlocksPerSm},
                                        {"smem_bytes", static_cast<int64_t>(c.smem_bytes())}});
    return spec;
  }
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

namespace {

// DG_PRINT_CONFIGS: once per distinct (problem, choice), as the call runs once per layer and step.
void print_config(const dg_stream_s& stream, const HcPrenormParams& p, int splits, const HcPrenormConfig& c,
                  const LaunchConfig& lc) {
  if (!config_of(stream).print_configs && !config_of(stream).jit_debug) return;
  const std::string line = fmt::format(
      "hc_prenorm M={} N={} K={} splits={}: kernel={} rows={} n_tiles={} stages={} cluster={} grid={}x{} block={} "
      "smem={}",
      p.m, p.n, p.k, splits, c.tma ? "tma" : (c.vec ? "registers" : "registers-scalar"), c.block_m(), c.n_tiles,
      c.stages, c.cluster, lc.grid[0], lc.grid[1], c.threads(), c.smem_bytes());
  static std::mutex mu;
  static std::set<std::string> printed;
  {
    std::lock_guard<std::mutex> lock(mu);
    if (printed.size() > 4096) printed.clear();  // bounded: the shapes of one process are few
    if (!printed.insert(line).second) return;
  }
  log::warn("DG_PRINT_CONFIGS: {}", line);
}

dg_status launch_tma(const dg_stream_s& stream, const Kernel& kernel, const HcPrenormConfig& c,
                     const HcPrenormParams& p, int splits, LaunchConfig lc) {
  // cuTensorMapEncodeTiled needs the device's context current on this thread.
  ContextScope scope;
  DG_TRY(scope.enter(*stream.device));
  HcPrenormTmaParams arg{};
  // Each CTA streams its rows of A once: single-line L2 fetches (docs/gemm.md#l2-fetch), 3.9% faster
  // than line pairs over the hc-prenorm rows on an H200 (up to 14% at M 4096).
  DG_TRY(tma::encode_2d(&arg.a_map, p.a, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, uint64_t(p.k), uint64_t(p.m),
                        uint64_t(p.lda), kHcStageK, uint32_t(c.block_m()), kSwizzleBytes, "a", tma::L2Fetch::kLine));
  DG_TRY(tma::encode_2d(&arg.b_map, p.b, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 4, uint64_t(p.k), uint64_t(p.n),
                        uint64_t(p.ldb), kHcChunk, uint32_t(kTileN * c.n_tiles), kSwizzleBytes, "b"));
  arg.d = p.d;
  arg.s = p.s;
  arg.d_split = p.d_split;
  arg.d_row = p.d_row;
  arg.s_split = p.s_split;
  arg.s_row = p.s_row;
  arg.m = p.m;
  arg.n = p.n;
  arg.k = p.k;
  arg.chunks_per_split = p.chunks_per_split;
  arg.splits = splits;
  void* args[] = {&arg};
  return launch(stream, kernel, lc, args);
}

// The kernel of `c` (compiled on first use) and its launch shape.
dg_status prepare(const dg_stream_s& stream, const HcPrenormConfig& c, int64_t m, int splits, int sms,
                  const Kernel** kernel, LaunchConfig* lc) {
  unsigned grid[2] = {};
  hc_prenorm_grid(c, m, splits, sms, grid);
  DG_TRY(jit::get_kernel(stream, hc_prenorm_kernel_key(c),
                         [&](jit::KernelSpec* spec) {
                           *spec = hc_prenorm_kernel_spec(c);
                           return DG_SUCCESS;
                         },
                         kernel));
  lc->grid[0] = grid[0];
  lc->grid[1] = grid[1];
  lc->block[0] = c.threads();
  lc->smem_bytes = c.smem_bytes();
  lc->cluster = static_cast<unsigned>(c.cluster);
  return DG_SUCCESS;
}

}  // namespace

dg_status run_hc_prenorm_gemm(const dg_stream_s& stream, const HcPrenormParams& p, int splits, bool vec) {
  if (p.m == 0) return DG_SUCCESS;
  const Device& dev = *stream.device;
  if (dev.cc_major < 9)
    return fail(DG_ERROR_UNSUPPORTED, "stream: device {} is sm_{}{}; dg_tf32_hc_prenorm_gemm needs sm_90 or newer",
                dev.name, dev.cc_major, dev.cc_minor);
  int sms = 0;
  DG_TRY(num_sms_of(stream, &sms));
  HcPrenormConfig c = choose_hc_prenorm_config(p.m, p.n, p.k, splits, vec, sms);
  const Kernel* kernel = nullptr;
  LaunchConfig lc;
  DG_TRY(prepare(stream, c, p.m, splits, sms, &kernel, &lc));
  // The clusters were sized to run in one round of two CTAs per SM, but a cluster's CTAs share one
  // GPC: an H200 runs 62 clusters of 4 and 30 of 8 at once, not 66 and 33, and the clusters past
  // that run in a second round (M 8192, K 7168: 55.8 us with 64 clusters of 4, 37.7 us with 128
  // pairs). The cluster halves until the grid's clusters run at once.
  while (c.tma && c.cluster > 1) {
    int fit = 0;
    DG_TRY(max_active_clusters(stream, *kernel, lc, &fit));
    if (fit == 0 || int64_t(lc.grid[0]) / c.cluster * lc.grid[1] <= fit) break;
    c.cluster /= 2;
    DG_TRY(prepare(stream, c, p.m, splits, sms, &kernel, &lc));
  }
  print_config(stream, p, splits, c, lc);
  lc.pdl = config_of(stream).pdl;
  if (c.tma) return launch_tma(stream, *kernel, c, p, splits, lc);
  HcPrenormParams arg = p;
  void* args[] = {&arg};
  return launch(stream, *kernel, lc, args);
}

}  // namespace dg::ops
