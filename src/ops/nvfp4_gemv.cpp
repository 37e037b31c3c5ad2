#include "ops/nvfp4_gemv.h"

#include <algorithm>
#include <cmath>
#include <mutex>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>

#include "jit/kernel_cache.h"
#include "runtime/device.h"
#include "runtime/driver.h"
#include "runtime/launch.h"
#include "runtime/log.h"
#include "runtime/status.h"

namespace dg::ops {
namespace {

constexpr int kMaxChunks = 4;       // NC the heuristic uses at most (registers: ~10 per chunk of b)
constexpr int kMaxThreadsRow = 512; // KT the heuristic uses at most
constexpr int kTargetThreads = 256;

bool valid_threads_per_row(int kt) {
  return kt == 1 || kt == 2 || kt == 4 || kt == 8 || kt == 16 || (kt >= 32 && kt <= 1024 && kt % 32 == 0);
}

const char* hint_cop(Nvfp4CacheHint h) {
  switch (h) {
    case Nvfp4CacheHint::kNc: return ".nc";
    case Nvfp4CacheHint::kStreaming: return ".cs";
    case Nvfp4CacheHint::kPrefetch256: return ".nc.L1::no_allocate.L2::256B";
    case Nvfp4CacheHint::kNoAllocate: break;
  }
  return ".nc.L1::no_allocate";
}

// (KT, NC) covering `nchunks` with the least waste; ties go to fewer chunks per thread (measured
// on H100: NC = 1 with 2 rows in flight is as fast as or faster than NC = 2..4), then fewer threads.
// Returns false when no pair within the limits covers K (the large-K loop shape then).
bool pick_cover(int nchunks, int* kt_out, int* nc_out) {
  double best = 1e30;
  bool found = false;
  for (int kt = 1; kt <= kMaxThreadsRow; kt = kt < 32 ? kt * 2 : kt + 32) {
    for (int nc = 1; nc <= kMaxChunks; ++nc) {
      const int cover = kt * nc;
      if (cover < nchunks) continue;
      const double waste = static_cast<double>(cover - nchunks) / cover;
      const double score = 4.0 * waste + 0.1 * std::log2(static_cast<double>(nc)) + (kt > 256 ? 0.05 : 0.0);
      if (score < best - 1e-9) {
        best = score;
        *kt_out = kt;
        *nc_out = nc;
        found = true;
      }
      break;  // a larger nc only adds waste for this kt
    }
  }
  return found;
}

}  // namespace

dg_status choose_nvfp4_gemv_config(int M, int K, int L, int max_vec, int arch, const Nvfp4GemvOverrides& o,
                                   Nvfp4GemvConfig* config) {
  Nvfp4GemvConfig c;
  c.arch = arch >= 100 ? 100 : 90;
  if (o.vec != 0 && o.vec != 8 && o.vec != 16)
    return fail(DG_ERROR_INVALID_ARGUMENT, "options.vector_bytes: {} (expected 0, 8 or 16)", o.vec);
  if (o.vec > max_vec)
    return fail(DG_ERROR_INVALID_ARGUMENT,
                "options.vector_bytes: {} but the pointers and strides of a/b allow {}-byte loads only", o.vec,
                max_vec);
  c.vec = o.vec ? o.vec : max_vec;
  const int nchunks = K / (2 * c.vec);

  int kt = 0, nc = 0;
  if (!pick_cover(std::max(nchunks, 1), &kt, &nc)) {
    kt = 256;  // large-K loop shape: segments of 256 * 2 chunks
    nc = 2;
  }
  if (o.threads_per_row != 0) {
    if (!valid_threads_per_row(o.threads_per_row))
      return fail(DG_ERROR_INVALID_ARGUMENT,
                  "options.threads_per_row: {} (expected 1, 2, 4, 8, 16 or a multiple of 32 up to 1024)",
                  o.threads_per_row);
    kt = o.threads_per_row;
  }
  if (o.chunks != 0) {
    if (o.chunks < 1 || o.chunks > 16)
      return fail(DG_ERROR_INVALID_ARGUMENT, "options.chunks_per_thread: {} (expected 1..16)", o.chunks);
    nc = o.chunks;
  } else if (o.threads_per_row != 0) {
    nc = std::clamp((std::max(nchunks, 1) + kt - 1) / kt, 1, kMaxChunks);
  }
  c.threads_per_row = kt;
  c.chunks = nc;
  c.loop_k = static_cast<int64_t>(kt) * nc < nchunks;
  c.exact = !c.loop_k && kt * nc == nchunks;

  c.rows = nc == 1 ? 2 : 1;
  if (o.rows != 0) {
    if (o.rows < 1 || o.rows > 8)
      return fail(DG_ERROR_INVALID_ARGUMENT, "options.rows_per_round: {} (expected 1..8)", o.rows);
    c.rows = o.rows;
  }
  c.row_groups = kt < kTargetThreads ? kTargetThreads / kt : 1;
  if (o.row_groups != 0) {
    if (o.row_groups < 1 || static_cast<int64_t>(o.row_groups) * kt > 1024 || (o.row_groups * kt) % 32 != 0)
      return fail(DG_ERROR_INVALID_ARGUMENT,
                  "options.row_groups: {} with threads_per_row {} (expected threads_per_row * row_groups a "
                  "multiple of 32 and at most 1024)",
                  o.row_groups, kt);
    c.row_groups = o.row_groups;
  }
  if (c.threads() % 32 != 0 || c.threads() > 1024)
    return fail(DG_ERROR_INVALID_ARGUMENT,
                "options.threads_per_row: {} gives {} threads per block (expected a multiple of 32, at most 1024; "
                "set options.row_groups)",
                kt, c.threads());
  if (o.prefetch < -1 || o.prefetch > 1)
    return fail(DG_ERROR_INVALID_ARGUMENT, "options.prefetch: {} (expected -1, 0 or 1)", o.prefetch);
  // One round ahead: on an H100 a deeper pipeline (pipe 2) and a deferred per-round barrier
  // (defer 16/32) are slower on the benchmark shapes; the barrier keeps a row's warps on the same
  // stretch of memory.
  c.pipe = o.prefetch >= 0 ? 1 : 0;
  c.defer = 1;
  if (o.hint < 0 || o.hint > 3)
    return fail(DG_ERROR_INVALID_ARGUMENT, "options.cache_hint: {} (expected 0..3)", o.hint);
  c.hint = static_cast<Nvfp4CacheHint>(o.hint);
  if (o.grid < 0) return fail(DG_ERROR_INVALID_ARGUMENT, "options.grid_blocks: {} is negative", o.grid);
  c.grid = o.grid;
  // One batch: the blocks take rounds round-robin and sweep the matrix together, front to back,
  // as a plain streaming read does (t_read / t_gemv 0.95-0.96 against 0.93-0.94 for contiguous
  // ranges on (7168, 16384, 1), H100). With several batches a block's round-robin rounds change
  // batch often, each change a reload and decode of b: contiguous ranges measured faster on
  // (7168, 2048, 4) (0.95-0.96 against 0.92-0.94).
  c.sweep = L == 1;
  (void)M;
  *config = c;
  return DG_SUCCESS;
}

std::vector<Nvfp4GemvConfig> all_nvfp4_gemv_heuristic_configs(int arch) {
  // The heuristic depends on K (and the vector width) and on L being 1 only: walk every K it can
  // tell apart, with one batch and with two.
  std::vector<Nvfp4GemvConfig> out;
  std::set<std::tuple<int, int, int, int, int, bool, bool, bool>> seen;
  for (int vec : {16, 8}) {
    const int limit = 2 * vec * kMaxThreadsRow * kMaxChunks + 2 * vec;  // one past the last non-loop K
    for (int L : {1, 2})
      for (int K = 0; K <= limit; K += 32) {
        Nvfp4GemvConfig c;
        if (choose_nvfp4_gemv_config(1, K, L, vec, arch, Nvfp4GemvOverrides{}, &c) != DG_SUCCESS) continue;
        const auto id =
            std::make_tuple(c.threads_per_row, c.row_groups, c.chunks, c.rows, c.vec, c.exact, c.loop_k, c.sweep);
        if (seen.insert(id).second) out.push_back(c);
      }
  }
  return out;
}

jit::KernelKey nvfp4_gemv_kernel_key(const Nvfp4GemvConfig& c) {
  return jit::KernelKey(jit::kFamilyNvfp4Gemv,
                        {c.arch, c.threads_per_row, c.row_groups, c.chunks, c.rows, c.vec, c.exact, c.loop_k,
                         c.pipe, c.defer, static_cast<int64_t>(c.hint), c.sweep});
}

jit::KernelSpec nvfp4_gemv_kernel_spec(const Nvfp4GemvConfig& c) {
  jit::KernelSpec spec;
  spec.template_name = "kernels/nvfp4_gemv.cu.j2";
  spec.kernel_name = "dg_nvfp4_gemv_kernel";
  const char* cop = hint_cop(c.hint);
  spec.context = codegen::Value::map({{"arch", c.arch},
                                      {"kt", c.threads_per_row},
                                      {"rg", c.row_groups},
                                      {"nc", c.chunks},
                                      {"rows", c.rows},
                                      {"vec", c.vec},
                                      {"exact", c.exact ? 1 : 0},
                                      {"pipe", c.pipe},
                                      {"defer", c.defer},
                                      {"loopk", c.loop_k ? 1 : 0},
                                      {"sweep", c.sweep ? 1 : 0},
                                      {"a_cop", cop},
                                      {"s_cop", cop},
                                      {"b_cop", ".nc"}});
  return spec;
}

int nvfp4_gemv_blocks_per_sm(int regs, int threads) {
  // 64K registers in 4 sub-partitions; a warp takes its registers in units of 256 (8 per thread).
  const int regs_per_warp = std::max(1, (regs * 32 + 255) / 256 * 256);
  const int warps_per_smsp = std::min(16, 16384 / regs_per_warp);
  const int warps = 4 * warps_per_smsp;
  const int warps_per_block = (threads + 31) / 32;
  return std::max(1, std::min({warps / warps_per_block, 2048 / threads, 32}));
}

int64_t nvfp4_gemv_grid(int64_t rounds, int64_t wave) {
  if (rounds <= 0 || wave <= 0) return 1;
  const int64_t longest = (rounds + wave - 1) / wave;
  return std::min(rounds, (rounds + longest - 1) / longest);
}

dg_status run_nvfp4_gemv(const dg_stream_s& stream, const Nvfp4GemvProblem& p, int max_vec,
                         const Nvfp4GemvOverrides& overrides) {
  if (p.M == 0 || p.L == 0) return DG_SUCCESS;
  const Device& dev = *stream.device;
  if (dev.cc_major < 9)
    return fail(DG_ERROR_UNSUPPORTED, "stream: device {} is sm_{}{}; dg_nvfp4_gemv needs sm_90 or newer", dev.name,
                dev.cc_major, dev.cc_minor);
  Nvfp4GemvConfig c;
  DG_TRY(choose_nvfp4_gemv_config(p.M, p.K, p.L, max_vec, dev.cc_major >= 10 ? 100 : 90, overrides, &c));
  // Every check comes before the kernel is asked for: a call that cannot launch compiles nothing.
  int sms = 0;
  DG_TRY(num_sms_of(stream, &sms));

  const Kernel* kernel = nullptr;
  DG_TRY(jit::get_kernel(stream,
      nvfp4_gemv_kernel_key(c),
      [&](jit::KernelSpec* spec) {
        *spec = nvfp4_gemv_kernel_spec(c);
        return DG_SUCCESS;
      }, &kernel));
  // The register count below needs a loaded kernel: an offline stream has compiled one and stops here.
  ContextScope scope;
  DG_TRY(scope.enter(dev));

  // Blocks per SM from the kernel's registers, read once per kernel.
  static std::mutex mu;
  static std::unordered_map<CUfunction, int> regs_of;
  int regs = 0;
  {
    std::lock_guard<std::mutex> lock(mu);
    auto it = regs_of.find(kernel->function);
    if (it != regs_of.end()) regs = it->second;
  }
  if (regs == 0) {
    DG_CU(cuFuncGetAttribute(&regs, CU_FUNC_ATTRIBUTE_NUM_REGS, kernel->function));
    std::lock_guard<std::mutex> lock(mu);
    regs_of[kernel->function] = regs;
  }
  const int64_t rounds_per_batch = (p.M + static_cast<int64_t>(c.row_groups) * c.rows - 1) /
                                   (static_cast<int64_t>(c.row_groups) * c.rows);
  const int64_t rounds = rounds_per_batch * p.L;
  const int64_t wave = static_cast<int64_t>(nvfp4_gemv_blocks_per_sm(regs, c.threads())) * sms;
  const int64_t grid = c.grid > 0 ? std::min<int64_t>(rounds, c.grid) : nvfp4_gemv_grid(rounds, wave);
  if (config_of(stream).print_configs || config_of(stream).jit_debug) {
    // Once per distinct (problem, choice): the GEMV is called per token, every call would flood the log.
    const std::string line = fmt::format(
        "nvfp4_gemv M={} K={} L={}: kt={} rg={} nc={} rows={} vec={} exact={} loopk={} pipe={} defer={} hint={} "
        "regs={} grid={} block={}",
        p.M, p.K, p.L, c.threads_per_row, c.row_groups, c.chunks, c.rows, c.vec, c.exact ? 1 : 0, c.loop_k ? 1 : 0,
        c.pipe, c.defer, static_cast<int>(c.hint), regs, grid, c.threads());
    static std::mutex print_mu;
    static std::set<std::string> printed;
    bool fresh = false;
    {
      std::lock_guard<std::mutex> lock(print_mu);
      if (printed.size() > 4096) printed.clear();  // bounded: the shapes of one process are few
      fresh = printed.insert(line).second;
    }
    if (fresh) log::warn("DG_PRINT_CONFIGS: {}", line);
  }

  const void* a = p.a;
  const void* sfa = p.sfa;
  const void* b = p.b;
  const void* sfb = p.sfb;
  void* out = p.c;
  int M = p.M, K = p.K, L = p.L;
  long long a_sm = p.a_sm, a_sl = p.a_sl, sfa_sm = p.sfa_sm, sfa_sl = p.sfa_sl, b_sl = p.b_sl, sfb_sl = p.sfb_sl,
            c_sm = p.c_sm, c_sl = p.c_sl;
  void* args[] = {&a, &sfa, &b, &sfb, &out, &M, &K, &L, &a_sm, &a_sl, &sfa_sm, &sfa_sl, &b_sl, &sfb_sl, &c_sm, &c_sl};
  LaunchConfig lc;
  lc.grid[0] = static_cast<unsigned>(grid);
  lc.block[0] = static_cast<unsigned>(c.threads());
  lc.pdl = config_of(stream).pdl;  // the kernel waits on griddepcontrol before its first global access
  return launch(stream, *kernel, lc, args);
}

}  // namespace dg::ops
