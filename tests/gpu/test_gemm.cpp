// SM90 dense GEMMs through the public API against a double-precision CPU reference (on the
// dequantised inputs for FP8): every layout, both D dtypes, with and without C (separate and
// aliased), alpha/beta != 1, M in {1, 17, 128, 129, 4096}, N and K tails, the DeepSeek shapes
// (sampled), poisoned outputs, early exits and argument errors. FP8 operands that are MN-major in
// memory go through a poisoned workspace, whose K-major copies are checked byte by byte, also when
// the call is replayed from a CUDA graph.
#include <dlfcn.h>
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "dg.h"
#include "gpu_fixture.h"
#include "host_numerics.h"
#include "runtime/device.h"
#include "runtime/driver.h"

namespace {

using dg::test::bf2f;
using dg::test::calc_diff;
using dg::test::e4m3_to_f;
using dg::test::f2bf;
using dg::test::f_to_e4m3;

// ---------------------------------------------------------------- device helpers
using Gpu = dg::test::Gpu;
using Buf = dg::test::DeviceBuffer;
using dg::test::Tensor;

enum Layout { NT = 0, NN = 1, TN = 2, TT = 3 };
const char* layout_name(int l) { return l == NT ? "nt" : l == NN ? "nn" : l == TN ? "tn" : "tt"; }

// One GEMM problem: logical A [M, K], B [N, K] (floats already rounded to the operand format).
struct Case {
  bool fp8 = false;
  int recipe = DG_FP8_RECIPE_1D2D;
  int layout = NT;
  int64_t m = 0, n = 0, k = 0;
  dg_dtype d_dtype = DG_DTYPE_BFLOAT16;
  int c_mode = 0;  // 0: no C, 1: separate C, 2: C aliased to D
  float alpha = 1.f, beta = 1.f;
  int samples = 0;  // > 0: check this many random entries only
  int block_m = 0, block_n = 0, stages = 0, promotion = 0, slices = 0, split_k = 0;  // explicit config (0: heuristic)
  int kernel = DG_GEMM_KERNEL_AUTO;  // dg_gemm_options.kernel
  int cluster = 0, multicast_a = -1;  // dg_gemm_options (0 / -1: heuristic)
  bool nt_views = false;  // call the nt entry point on [M, K] / [N, K] views of the layout's memory
  bool graph = false;     // also capture the (warm) call in a CUDA graph and check its replay
};

std::string describe(const Case& c) {
  char buf[320];
  std::snprintf(buf, sizeof buf,
                "%s%s %s%s m=%lld n=%lld k=%lld d=%s c=%d alpha=%g beta=%g kernel=%s block %dx%d stages=%d promo=%d/%d split_k=%d "
                "cluster=%d multicast_a=%d%s",
                c.fp8 ? "fp8" : "bf16", c.fp8 ? (c.recipe == DG_FP8_RECIPE_1D1D ? "-1d1d" : "-1d2d") : "",
                layout_name(c.layout), c.nt_views ? " memory through nt views" : "", (long long)c.m, (long long)c.n,
                (long long)c.k,
                c.d_dtype == DG_DTYPE_FLOAT32 ? "f32" : "bf16", c.c_mode, c.alpha, c.beta,
                c.kernel == DG_GEMM_KERNEL_SKINNY ? "skinny" : c.kernel == DG_GEMM_KERNEL_TILED ? "tiled" : "auto",
                c.block_m, c.block_n,
                c.stages, c.promotion, c.slices, c.split_k, c.cluster, c.multicast_a, c.graph ? " (graph replay)" : "");
  return buf;
}

// The workspace after an FP8 call: each MN-major operand's K-major copy ([MN, K] rows align(K, 16)
// bytes apart; A's first, B's at the next multiple of 256 bytes) holds the transposed bytes, and
// the rows' padding and the guard bytes around the workspace are still poison (0xff).
void check_copies(Buf& ws, size_t guard, size_t ws_bytes, bool copy_a, bool copy_b, const std::vector<uint8_t>& a_mem,
                  int64_t lda, const std::vector<uint8_t>& b_mem, int64_t ldb, int64_t M, int64_t N, int64_t K) {
  const std::vector<uint8_t> mem = ws.download<uint8_t>();
  const int64_t ld = (K + 15) / 16 * 16;
  std::vector<bool> copied(mem.size(), false);
  int64_t wrong = 0, stray = 0;
  auto check = [&](size_t base, const std::vector<uint8_t>& src, int64_t ld_src, int64_t rows) {
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t k = 0; k < K; ++k) {
        const size_t at = base + size_t(r * ld + k);
        wrong += mem[at] != src[size_t(k * ld_src + r)];
        copied[at] = true;
      }
  };
  const size_t off_b = copy_a ? size_t((M * ld + 255) / 256 * 256) : 0;
  if (copy_a) check(guard, a_mem, lda, M);
  if (copy_b) check(guard + off_b, b_mem, ldb, N);
  for (size_t i = 0; i < mem.size(); ++i) stray += !copied[i] && mem[i] != 0xff;
  INFO("workspace of " << ws_bytes << " bytes");
  CHECK(wrong == 0);
  CHECK(stray == 0);
}

// Captures `call` on the test stream into a CUDA graph, launches the graph and waits for it. The
// graph API is not in libdg's driver table: it is looked up in the driver libdg loaded.
template <typename Call>
void replay_in_graph(Gpu& g, Call&& call) {
  void* cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  REQUIRE(cuda != nullptr);
  auto sym = [&](const char* name) {
    void* f = dlsym(cuda, name);
    REQUIRE_MESSAGE(f != nullptr, name);
    return f;
  };
  using Begin = CUresult (*)(CUstream, CUstreamCaptureMode);
  using End = CUresult (*)(CUstream, CUgraph*);
  using Instantiate = CUresult (*)(CUgraphExec*, CUgraph, unsigned long long);
  using GraphLaunch = CUresult (*)(CUgraphExec, CUstream);
  using ExecDestroy = CUresult (*)(CUgraphExec);
  using GraphDestroy = CUresult (*)(CUgraph);
  const auto begin = reinterpret_cast<Begin>(sym("cuStreamBeginCapture_v2"));
  const auto end = reinterpret_cast<End>(sym("cuStreamEndCapture"));
  const auto instantiate = reinterpret_cast<Instantiate>(sym("cuGraphInstantiateWithFlags"));
  const auto graph_launch = reinterpret_cast<GraphLaunch>(sym("cuGraphLaunch"));
  const auto exec_destroy = reinterpret_cast<ExecDestroy>(sym("cuGraphExecDestroy"));
  const auto graph_destroy = reinterpret_cast<GraphDestroy>(sym("cuGraphDestroy"));
  void* raw = nullptr;
  REQUIRE(dg_stream_get_cu_stream(g.stream, &raw) == DG_SUCCESS);
  const CUstream s = static_cast<CUstream>(raw);
  dg::ContextScope scope;
  REQUIRE(scope.enter(*g.device) == DG_SUCCESS);
  REQUIRE(begin(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL) == CUDA_SUCCESS);
  const dg_status st = call();
  const std::string err = st == DG_SUCCESS ? std::string() : std::string(dg_last_error());
  CUgraph graph = nullptr;
  REQUIRE(end(s, &graph) == CUDA_SUCCESS);
  REQUIRE_MESSAGE(st == DG_SUCCESS, "during capture: " << err);
  CUgraphExec exec = nullptr;
  REQUIRE(instantiate(&exec, graph, 0) == CUDA_SUCCESS);
  REQUIRE(graph_launch(exec, s) == CUDA_SUCCESS);
  REQUIRE(dg_stream_synchronize(g.stream) == DG_SUCCESS);
  exec_destroy(exec);
  graph_destroy(graph);
  dlclose(cuda);
}

double run_case(Gpu& g, const Case& cs, std::mt19937& rng) {
  const int64_t M = cs.m, N = cs.n, K = cs.k;
  std::normal_distribution<float> nd(0.f, 1.f);
  const bool a_t = cs.layout == TN || cs.layout == TT, b_t = cs.layout == NN || cs.layout == TN;
  // Storage: a is [M, K] or [K, M]; b is [N, K] or [K, N]; MN-major rows padded to 16 bytes.
  const int64_t eb = cs.fp8 ? 1 : 2, pad = 16 / eb;
  const int64_t lda = a_t ? (M + pad - 1) / pad * pad : K, ldb = b_t ? (N + pad - 1) / pad * pad : K;
  const int64_t a_rows = a_t ? K : M, b_rows = b_t ? K : N;
  std::vector<float> A(M * K), B(N * K);  // logical, dequantised
  std::vector<uint8_t> a_mem(a_rows * lda * eb + 16, 0), b_mem(b_rows * ldb * eb + 16, 0);
  const int64_t sf_k = (K + 127) / 128, ld_sfa = (M + 3) / 4 * 4;
  std::vector<float> sfa(ld_sfa * sf_k + 4, 0.f), sfb;
  int64_t ld_sfb = 0;
  auto put = [&](std::vector<uint8_t>& mem, int64_t off, float v) -> float {
    if (!cs.fp8) {
      const uint16_t h = f2bf(v);
      std::memcpy(&mem[off * 2], &h, 2);
      return bf2f(h);
    }
    const uint8_t q = f_to_e4m3(v);
    mem[off] = q;
    return e4m3_to_f(q);
  };
  if (!cs.fp8) {
    for (int64_t i = 0; i < M; ++i)
      for (int64_t k = 0; k < K; ++k) A[i * K + k] = put(a_mem, a_t ? k * lda + i : i * lda + k, nd(rng));
    for (int64_t j = 0; j < N; ++j)
      for (int64_t k = 0; k < K; ++k) B[j * K + k] = put(b_mem, b_t ? k * ldb + j : j * ldb + k, nd(rng));
  } else {
    // A per token x 128 K; B per 128x128 block (1D2D) or per token (1D1D).
    std::vector<float> ra(M * K), rb(N * K);
    for (auto& v : ra) v = nd(rng);
    for (auto& v : rb) v = nd(rng);
    for (int64_t i = 0; i < M; ++i)
      for (int64_t kb = 0; kb < sf_k; ++kb) {
        float amax = 1e-4f;
        for (int64_t k = kb * 128; k < std::min(K, kb * 128 + 128); ++k) amax = std::max(amax, std::fabs(ra[i * K + k]));
        const float s = amax / 448.f;
        sfa[kb * ld_sfa + i] = s;
        for (int64_t k = kb * 128; k < std::min(K, kb * 128 + 128); ++k)
          A[i * K + k] = put(a_mem, a_t ? k * lda + i : i * lda + k, ra[i * K + k] / s) * s;
      }
    if (cs.recipe == DG_FP8_RECIPE_1D1D) {
      ld_sfb = (N + 3) / 4 * 4;
      sfb.assign(ld_sfb * sf_k + 4, 0.f);
      for (int64_t j = 0; j < N; ++j)
        for (int64_t kb = 0; kb < sf_k; ++kb) {
          float amax = 1e-4f;
          for (int64_t k = kb * 128; k < std::min(K, kb * 128 + 128); ++k) amax = std::max(amax, std::fabs(rb[j * K + k]));
          const float s = amax / 448.f;
          sfb[kb * ld_sfb + j] = s;
          for (int64_t k = kb * 128; k < std::min(K, kb * 128 + 128); ++k)
            B[j * K + k] = put(b_mem, b_t ? k * ldb + j : j * ldb + k, rb[j * K + k] / s) * s;
        }
    } else {
      const int64_t nb = (N + 127) / 128;
      ld_sfb = sf_k;
      sfb.assign(nb * sf_k + 4, 0.f);
      for (int64_t jb = 0; jb < nb; ++jb)
        for (int64_t kb = 0; kb < sf_k; ++kb) {
          float amax = 1e-4f;
          for (int64_t j = jb * 128; j < std::min(N, jb * 128 + 128); ++j)
            for (int64_t k = kb * 128; k < std::min(K, kb * 128 + 128); ++k) amax = std::max(amax, std::fabs(rb[j * K + k]));
          const float s = amax / 448.f;
          sfb[jb * sf_k + kb] = s;
          for (int64_t j = jb * 128; j < std::min(N, jb * 128 + 128); ++j)
            for (int64_t k = kb * 128; k < std::min(K, kb * 128 + 128); ++k)
              B[j * K + k] = put(b_mem, b_t ? k * ldb + j : j * ldb + k, rb[j * K + k] / s) * s;
        }
    }
  }
  // D (and C): row-major, row stride padded to 16 bytes.
  const int64_t db = cs.d_dtype == DG_DTYPE_FLOAT32 ? 4 : 2, ldd = (N + 16 / db - 1) / (16 / db) * (16 / db);
  std::vector<uint8_t> c_mem(M * ldd * db + 16), d_mem(M * ldd * db + 16);
  std::vector<double> C(M * N, 0.0);
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      const float v = nd(rng) * 4.f;
      if (db == 4) {
        std::memcpy(&c_mem[(i * ldd + j) * 4], &v, 4);
        C[i * N + j] = v;
      } else {
        const uint16_t h = f2bf(v);
        std::memcpy(&c_mem[(i * ldd + j) * 2], &h, 2);
        C[i * N + j] = bf2f(h);
      }
    }
  // Poison D (NaN) unless it holds C.
  if (cs.c_mode == 2) d_mem = c_mem;
  else if (db == 4) for (size_t i = 0; i + 4 <= d_mem.size(); i += 4) { uint32_t p = 0x7fc00001u; std::memcpy(&d_mem[i], &p, 4); }
  else for (size_t i = 0; i + 2 <= d_mem.size(); i += 2) { uint16_t p = 0x7fc1; std::memcpy(&d_mem[i], &p, 2); }
  const std::vector<uint8_t> d_init = d_mem;

  Buf ga(g.device, a_mem.size()), gb(g.device, b_mem.size()), gd(g.device, d_mem.size()), gc(g.device, c_mem.size());
  Buf gsa(g.device, sfa.size() * 4), gsb(g.device, std::max<size_t>(sfb.size(), 1) * 4);
  ga.upload(a_mem.data(), a_mem.size());
  gb.upload(b_mem.data(), b_mem.size());
  gd.upload(d_mem.data(), d_mem.size());
  gc.upload(c_mem.data(), c_mem.size());
  gsa.upload(sfa.data(), sfa.size() * 4);
  if (!sfb.empty()) gsb.upload(sfb.data(), sfb.size() * 4);

  const dg_dtype ab = cs.fp8 ? DG_DTYPE_FLOAT8_E4M3 : DG_DTYPE_BFLOAT16;
  // nt_views: the [M, K] / [N, K] views of [K, M] / [K, N] memory.
  Tensor ta(ga.data(), ab, a_t && cs.nt_views ? std::vector<int64_t>{M, K} : std::vector<int64_t>{a_rows, a_t ? M : K},
            a_t && cs.nt_views ? std::vector<int64_t>{1, lda} : std::vector<int64_t>{lda, 1});
  Tensor tb(gb.data(), ab, b_t && cs.nt_views ? std::vector<int64_t>{N, K} : std::vector<int64_t>{b_rows, b_t ? N : K},
            b_t && cs.nt_views ? std::vector<int64_t>{1, ldb} : std::vector<int64_t>{ldb, 1});
  Tensor td(gd.data(), cs.d_dtype, {M, N}, {ldd, 1});
  Tensor tc(cs.c_mode == 2 ? gd.data() : gc.data(), cs.d_dtype, {M, N}, {ldd, 1});
  // Scales are transposed together with their data (as the entry point's layout names it).
  const bool sfa_t = a_t && !cs.nt_views, sfb_t = b_t && !cs.nt_views;
  Tensor tsa(gsa.data(), DG_DTYPE_FLOAT32, sfa_t ? std::vector<int64_t>{sf_k, M} : std::vector<int64_t>{M, sf_k},
             sfa_t ? std::vector<int64_t>{ld_sfa, 1} : std::vector<int64_t>{1, ld_sfa});
  const bool sfb_token = cs.recipe == DG_FP8_RECIPE_1D1D;
  const int64_t sfb_rows = sfb_token ? N : (N + 127) / 128;
  std::vector<int64_t> sfb_strides = sfb_token ? std::vector<int64_t>{1, ld_sfb} : std::vector<int64_t>{sf_k, 1};
  if (sfb_t) std::swap(sfb_strides[0], sfb_strides[1]);
  Tensor tsb(gsb.data(), DG_DTYPE_FLOAT32, sfb_t ? std::vector<int64_t>{sf_k, sfb_rows} : std::vector<int64_t>{sfb_rows, sf_k},
             sfb_strides);
  // FP8 reads the MN-major operands ([K, MN] memory, rows padded: never K-contiguous for K > 1) from
  // K-major copies in the workspace, given here between poisoned guard bytes.
  const bool copy_a = cs.fp8 && a_t, copy_b = cs.fp8 && b_t;
  size_t ws_bytes = 0;
  if (copy_a || copy_b) {
    const int32_t mem_layout = copy_a ? (copy_b ? DG_GEMM_LAYOUT_TN : DG_GEMM_LAYOUT_TT) : DG_GEMM_LAYOUT_NN;
    REQUIRE(dg_fp8_gemm_workspace_size(mem_layout, M, N, K, &ws_bytes) == DG_SUCCESS);
  }
  constexpr size_t kGuard = 256;
  Buf gws(g.device, ws_bytes + 2 * kGuard);
  gws.poison();
  dg_gemm_options o = DG_GEMM_OPTIONS_INIT;
  o.recipe = cs.recipe;
  o.alpha = cs.alpha;
  o.beta = cs.beta;
  o.block_m = cs.block_m;
  o.block_n = cs.block_n;
  o.num_stages = cs.stages;
  o.fp8_promotion = cs.promotion;
  o.fp8_promotion_slices = cs.slices;
  o.split_k = cs.split_k;
  o.kernel = cs.kernel;
  o.cluster = cs.cluster;
  o.multicast_a = cs.multicast_a;
  if (ws_bytes > 0) {
    o.workspace = static_cast<char*>(gws.data()) + kGuard;
    o.workspace_size = ws_bytes;
  }
  const dg_tensor* c = cs.c_mode ? tc.t : nullptr;
  auto call = [&]() -> dg_status {
    if (!cs.fp8) {
      auto f = cs.layout == NT ? dg_bf16_gemm_nt : cs.layout == NN ? dg_bf16_gemm_nn : cs.layout == TN ? dg_bf16_gemm_tn : dg_bf16_gemm_tt;
      return f(g.stream, ta.t, tb.t, td.t, c, &o);
    }
    auto f = cs.nt_views || cs.layout == NT ? dg_fp8_gemm_nt
             : cs.layout == NN              ? dg_fp8_gemm_nn
             : cs.layout == TN              ? dg_fp8_gemm_tn
                                            : dg_fp8_gemm_tt;
    return f(g.stream, ta.t, tsa.t, tb.t, tsb.t, td.t, c, &o);
  };
  const dg_status st = call();
  const std::string err = st == DG_SUCCESS ? std::string() : std::string(dg_last_error());
  INFO(describe(cs) << ": " << err);
  REQUIRE(st == DG_SUCCESS);
  REQUIRE(dg_stream_synchronize(g.stream) == DG_SUCCESS);
  if (ws_bytes > 0) check_copies(gws, kGuard, ws_bytes, copy_a, copy_b, a_mem, lda, b_mem, ldb, M, N, K);
  if (cs.graph) {
    // The warm call again, captured and replayed over freshly poisoned D and workspace.
    gd.upload(d_init.data(), d_init.size());
    gws.poison();
    replay_in_graph(g, call);
    if (ws_bytes > 0) check_copies(gws, kGuard, ws_bytes, copy_a, copy_b, a_mem, lda, b_mem, ldb, M, N, K);
  }
  gd.download(d_mem.data(), d_mem.size());

  auto out_at = [&](int64_t i, int64_t j) -> double {
    if (db == 4) { float v; std::memcpy(&v, &d_mem[(i * ldd + j) * 4], 4); return v; }
    uint16_t h; std::memcpy(&h, &d_mem[(i * ldd + j) * 2], 2); return bf2f(h);
  };
  auto ref_at = [&](int64_t i, int64_t j) -> double {
    double acc = 0;
    for (int64_t k = 0; k < K; ++k) acc += double(A[i * K + k]) * B[j * K + k];
    return cs.alpha * acc + (cs.c_mode ? cs.beta * C[i * N + j] : 0.0);
  };
  std::vector<double> ref, out;
  if (cs.samples > 0) {
    std::uniform_int_distribution<int64_t> ri(0, M - 1), rj(0, N - 1);
    for (int s = 0; s < cs.samples; ++s) {
      const int64_t i = ri(rng), j = rj(rng);
      ref.push_back(ref_at(i, j));
      out.push_back(out_at(i, j));
    }
  } else {
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        ref.push_back(ref_at(i, j));
        out.push_back(out_at(i, j));
      }
  }
  return calc_diff(ref, out);
}

void check_case(Gpu& g, const Case& cs, std::mt19937& rng) {
  const double diff = run_case(g, cs, rng);
  const double thr = cs.fp8 ? 1e-3 : 1e-5;
  INFO(describe(cs) << " calc_diff " << diff);
  CHECK(diff < thr);
}

}  // namespace

TEST_CASE("sm90 bf16 gemm: layouts, outputs, C, alpha/beta, tails") {
  Gpu g;
  if (!g.sm90()) return;
  std::mt19937 rng(1234);
  for (int64_t m : {1, 17, 128, 129})
    for (int lay = 0; lay < 4; ++lay)
      for (dg_dtype d : {DG_DTYPE_BFLOAT16, DG_DTYPE_FLOAT32})
        for (int c_mode : {0, 1, 2}) {
          Case cs;
          cs.layout = lay, cs.m = m, cs.n = 336, cs.k = 264, cs.d_dtype = d, cs.c_mode = c_mode;
          cs.alpha = c_mode == 1 ? 1.5f : 1.f;
          cs.beta = c_mode == 1 ? 0.5f : 1.f;
          check_case(g, cs, rng);
        }
  for (int lay = 0; lay < 4; ++lay) {
    Case cs;
    cs.layout = lay, cs.m = 4096, cs.n = 320, cs.k = 200, cs.c_mode = lay == 3 ? 2 : 0;
    check_case(g, cs, rng);
  }
}

TEST_CASE("sm90 fp8 gemm: 1D2D and 1D1D, outputs, C, alpha/beta, tails") {
  Gpu g;
  if (!g.sm90()) return;
  std::mt19937 rng(99);
  for (int64_t m : {1, 17, 128, 129, 4096})
    for (dg_dtype d : {DG_DTYPE_BFLOAT16, DG_DTYPE_FLOAT32})
      for (int c_mode : {0, 1, 2}) {
        if (m == 4096 && c_mode == 1) continue;
        Case cs;
        cs.fp8 = true, cs.m = m, cs.n = 336, cs.k = 400, cs.d_dtype = d, cs.c_mode = c_mode;
        cs.alpha = c_mode == 1 ? 0.75f : 1.f;
        cs.beta = c_mode == 1 ? 2.f : 1.f;
        if (m == 4096) cs.samples = 4096;
        check_case(g, cs, rng);
        if (d == DG_DTYPE_FLOAT32) {
          cs.recipe = DG_FP8_RECIPE_1D1D;
          check_case(g, cs, rng);
        }
      }
  // N past a 128-row SFB boundary inside a block (block N not dividing 128) is exercised by the
  // heuristic's choices for these N.
  for (int64_t n : {144, 160, 400, 1040}) {
    Case cs;
    cs.fp8 = true, cs.m = 256, cs.n = n, cs.k = 1024;
    check_case(g, cs, rng);
  }
  // Every block N whose tiles straddle SFB rows, forced, over N = 1040 (tile starts at every offset
  // within a 128-column block that the width allows: the K loop is specialised per boundary for 96,
  // 160 and 192, which take <= 4 boundaries, and selects at run time for 112 and 144, which take 8),
  // with both promotion modes and column slices; K with a tail.
  for (int bn : {96, 112, 144, 160, 192})
    for (int promo : {DG_FP8_PROMOTION_AFTER, DG_FP8_PROMOTION_OVERLAP})
      for (int slices : {1, 2}) {
        if (promo == DG_FP8_PROMOTION_OVERLAP && bn > 128) continue;  // registers: AFTER only above 128
        Case cs;
        cs.fp8 = true, cs.m = 256, cs.n = 1040, cs.k = 1040;
        cs.block_n = bn, cs.promotion = promo, cs.slices = slices;
        check_case(g, cs, rng);
      }
  // 256x128 tiles promoted in row units (the heuristic's tile for the large shapes from M = 4096):
  // partial M, N and K tiles, both outputs, with and without C, and a 128-column SFB block per tile.
  for (int64_t m : {300, 8192})
    for (int c_mode : {0, 2}) {
      Case cs;
      cs.fp8 = true, cs.m = m, cs.n = m == 300 ? 336 : 1024, cs.k = m == 300 ? 1040 : 2048, cs.c_mode = c_mode;
      cs.d_dtype = c_mode ? DG_DTYPE_FLOAT32 : DG_DTYPE_BFLOAT16;
      cs.block_m = 256, cs.block_n = 128, cs.promotion = DG_FP8_PROMOTION_AFTER, cs.slices = 2;
      if (m == 8192) cs.samples = 4096;
      check_case(g, cs, rng);
    }
  // K over two full SFB windows of 32 K blocks and a partial third (71 K blocks, the last of them
  // partial), with CTAs that take several tiles, so that the SFB ring's slots and phases carry over
  // from tile to tile: the heuristic's tile, one slice promoted after, two slices overlapped.
  for (int variant = 0; variant < 3; ++variant) {
    Case cs;
    cs.fp8 = true, cs.m = 3000, cs.n = 1040, cs.k = 8976, cs.samples = 4096;
    if (variant == 1) cs.block_m = 128, cs.block_n = 192, cs.promotion = DG_FP8_PROMOTION_AFTER, cs.slices = 1;
    if (variant == 2) cs.block_m = 128, cs.block_n = 128, cs.promotion = DG_FP8_PROMOTION_OVERLAP, cs.slices = 2;
    check_case(g, cs, rng);
  }
  // N whose tiles take at most 4 boundaries for 112 and 144 (specialised K loops; 144 is the
  // heuristic's tile for N = 576), one of them with a partial last tile.
  for (int64_t n : {448, 576, 530}) {
    Case cs;
    cs.fp8 = true, cs.m = 256, cs.n = n, cs.k = 1040;
    cs.block_n = n == 448 ? 112 : 144;
    check_case(g, cs, rng);
  }
}

// 32-row tiles (the heuristic's from M <= 32): each WGMMA computes 64 rows, of which rows 32-63 come
// from whatever shared memory follows the A tile and must never reach D. M within one tile, at its
// edge and over several tiles; N and K tails; a tile width straddling SFB rows; both outputs, with C.
TEST_CASE("sm90 fp8 gemm: 32-row tiles store their 32 rows only") {
  Gpu g;
  if (!g.sm90()) return;
  std::mt19937 rng(32);
  for (int64_t m : {1, 17, 32, 33, 100})
    for (int bn : {64, 128, 144}) {
      Case cs;
      cs.fp8 = true, cs.m = m, cs.n = 336, cs.k = 1040, cs.block_m = 32, cs.block_n = bn;
      cs.d_dtype = bn == 128 ? DG_DTYPE_FLOAT32 : DG_DTYPE_BFLOAT16;
      cs.c_mode = bn == 128 ? 2 : 0;
      check_case(g, cs, rng);
    }
  // Promoted after the WGMMAs, and one K block (a single stage in use).
  for (int64_t k : {128, 2048}) {
    Case cs;
    cs.fp8 = true, cs.m = 20, cs.n = 200, cs.k = k, cs.block_m = 32, cs.block_n = 96;
    cs.promotion = DG_FP8_PROMOTION_AFTER;
    check_case(g, cs, rng);
  }
}

// BF16 32-row tiles (K-major A: nt and nn, B K-major and MN-major): the same rows past the tile
// must never reach D; a K tail, both outputs, with C; one K block.
TEST_CASE("sm90 bf16 gemm: 32-row tiles store their 32 rows only") {
  Gpu g;
  if (!g.sm90()) return;
  std::mt19937 rng(33);
  for (int64_t m : {1, 17, 32, 33, 100})
    for (int layout : {NT, NN})
      for (int bn : {64, 128}) {
        Case cs;
        cs.layout = layout, cs.m = m, cs.n = 320, cs.k = 1000, cs.block_m = 32, cs.block_n = bn;
        cs.d_dtype = bn == 128 ? DG_DTYPE_FLOAT32 : DG_DTYPE_BFLOAT16;
        cs.c_mode = bn == 128 ? 2 : 0;
        check_case(g, cs, rng);
      }
  Case one;
  one.m = 9, one.n = 128, one.k = 40, one.block_m = 32, one.block_n = 64;
  check_case(g, one, rng);
}

// The stage-aligned K loop (K blocks a whole number of turns of the ring, which the consumers' loop
// unrolls): every ring depth it takes (2-8 stages), one and several turns per tile, a partial last K
// block, both recipes and promotion modes, whole and sliced partials, CTA pairs, C, and several
// tiles per CTA (each must start at stage 0 again).
TEST_CASE("sm90 fp8 gemm: stage-aligned K loops, every ring depth") {
  Gpu g;
  if (!g.sm90()) return;
  std::mt19937 rng(2311);
  for (int stages = 2; stages <= 8; ++stages)
    for (int turns : {1, 3}) {
      Case cs;
      cs.fp8 = true, cs.m = 1000, cs.n = 520, cs.k = stages * turns * 128 - (turns == 3 ? 48 : 0);
      cs.block_m = 128, cs.block_n = stages <= 6 ? 128 : 64, cs.stages = stages;  // what the ring fits
      cs.promotion = stages % 2 ? DG_FP8_PROMOTION_AFTER : DG_FP8_PROMOTION_OVERLAP;
      cs.recipe = turns == 3 && stages % 3 == 0 ? DG_FP8_RECIPE_1D1D : DG_FP8_RECIPE_1D2D;
      cs.d_dtype = cs.recipe == DG_FP8_RECIPE_1D1D ? DG_DTYPE_FLOAT32 : DG_DTYPE_BFLOAT16;
      cs.c_mode = stages % 3 == 1 ? 2 : 0;
      check_case(g, cs, rng);
    }
  // Tiles of more K blocks than a window of the SFB ring (32 K blocks; whole ring turns, 30 at 3, 5
  // and 6 stages, 28 at 7), whose consumers read the scalars once per turn: the slots turn inside a
  // tile and carry over to the CTA's next tile (more tiles than SMs). Sampled outputs.
  for (int stages = 2; stages <= 8; ++stages) {
    Case cs;
    cs.fp8 = true, cs.m = 2000, cs.n = 1100, cs.k = stages * 13 * 128 - (stages % 2 ? 48 : 0);
    cs.block_m = 128, cs.block_n = stages <= 6 ? 128 : 64, cs.stages = stages;
    cs.promotion = stages % 2 ? DG_FP8_PROMOTION_OVERLAP : DG_FP8_PROMOTION_AFTER;
    cs.samples = 3000;
    check_case(g, cs, rng);
  }
  // The heuristic's aligned tiles: 128x192 in two slices overlapped (straddling SFB rows), one slice
  // promoted after, and CTA pairs sharing B.
  for (int variant = 0; variant < 3; ++variant) {
    Case cs;
    cs.fp8 = true, cs.m = 700, cs.n = 1040, cs.k = variant == 1 ? 36 * 128 : 2048;  // 36: two SFB windows
    cs.block_m = 128, cs.block_n = 192, cs.stages = 4;
    cs.promotion = variant == 0 ? DG_FP8_PROMOTION_OVERLAP : DG_FP8_PROMOTION_AFTER;
    cs.slices = variant == 0 ? 2 : 1;
    if (variant == 2) cs.cluster = 2, cs.multicast_a = 0;
    check_case(g, cs, rng);
  }
}

// The skinny kernel (few tokens), forced: every token-tile count and the tails around them, N with a
// partial 16-row tile, K with a partial 128-byte unit (and shorter than one), each recipe and
// output, C separate and aliased, every split; and the tiled kernel forced where AUTO picks skinny.
TEST_CASE("skinny gemm: token counts, tails, recipes, C, splits") {
  Gpu g;
  if (!g.sm90()) return;
  std::mt19937 rng(4242);
  for (int64_t m : {1, 2, 7, 8, 9, 16, 17, 24, 31, 32})
    for (int kind = 0; kind < 3; ++kind) {
      Case cs;
      cs.kernel = DG_GEMM_KERNEL_SKINNY;
      cs.fp8 = kind > 0;
      cs.recipe = kind == 2 ? DG_FP8_RECIPE_1D1D : DG_FP8_RECIPE_1D2D;
      cs.m = m, cs.n = m % 2 ? 200 : 336, cs.k = cs.fp8 ? 400 : 264;
      cs.d_dtype = kind == 2 || m % 3 == 0 ? DG_DTYPE_FLOAT32 : DG_DTYPE_BFLOAT16;
      cs.c_mode = static_cast<int>(m % 3);
      cs.alpha = cs.c_mode == 1 ? 1.25f : 1.f;
      cs.beta = cs.c_mode == 1 ? -0.5f : 1.f;
      check_case(g, cs, rng);
    }
  for (int kind = 0; kind < 3; ++kind)
    for (int64_t k : {16, 48, 1040, 4112}) {
      Case cs;
      cs.kernel = DG_GEMM_KERNEL_SKINNY;
      cs.fp8 = kind > 0;
      cs.recipe = kind == 2 ? DG_FP8_RECIPE_1D1D : DG_FP8_RECIPE_1D2D;
      cs.d_dtype = kind == 2 ? DG_DTYPE_FLOAT32 : DG_DTYPE_BFLOAT16;
      cs.m = 5, cs.n = 264, cs.k = k;
      check_case(g, cs, rng);
      for (int split : {2, 4, 8})
        for (int unroll : {1, 3}) {
          if (k * (cs.fp8 ? 1 : 2) < 128 * split) continue;
          cs.split_k = split, cs.stages = unroll;
          check_case(g, cs, rng);
        }
    }
  // DeepSeek decode shapes through AUTO (skinny), against the tiled kernel forced.
  for (int64_t m : {1, 16})
    for (bool fp8 : {false, true})
      for (int kernel : {DG_GEMM_KERNEL_AUTO, DG_GEMM_KERNEL_TILED}) {
        Case cs;
        cs.fp8 = fp8, cs.m = m, cs.n = 2112, cs.k = 7168, cs.kernel = kernel, cs.samples = 2048;
        check_case(g, cs, rng);
        cs.n = 576, cs.k = 7168, cs.c_mode = 2;
        check_case(g, cs, rng);
      }
}

TEST_CASE("sm90 fp8 gemm: MN-major operands through the workspace (nn, tn, tt, nt views)") {
  Gpu g;
  if (!g.sm90()) return;
  std::mt19937 rng(2026);
  // Both recipes (1D1D writes FP32), both D dtypes, C separate and aliased, M of one row and a tail,
  // N not a multiple of 128, K not a multiple of 128.
  for (int lay : {NN, TN, TT})
    for (int64_t m : {1, 129})
      for (dg_dtype d : {DG_DTYPE_BFLOAT16, DG_DTYPE_FLOAT32})
        for (int c_mode : {0, 1, 2}) {
          Case cs;
          cs.fp8 = true, cs.layout = lay, cs.m = m, cs.n = 336, cs.k = 400, cs.d_dtype = d, cs.c_mode = c_mode;
          cs.alpha = c_mode == 1 ? 0.75f : 1.f;
          cs.beta = c_mode == 1 ? 2.f : 1.f;
          check_case(g, cs, rng);
          if (d == DG_DTYPE_FLOAT32) {
            cs.recipe = DG_FP8_RECIPE_1D1D;
            check_case(g, cs, rng);
          }
        }
  // K of one block, N below a tile; K not a multiple of 16 (padded copy rows) where both operands are
  // copied (tn: a K-major operand needs 16-byte rows in memory, TMA's rule); and larger problems
  // (sampled): several tiles per transpose block, the weight-gradient shape (tn, 1D1D, FP32 +=).
  for (int lay : {NN, TN, TT})
    for (int64_t k : {208, 80}) {
      Case cs;
      cs.fp8 = true, cs.layout = lay, cs.m = 77, cs.n = 40, cs.k = lay == TN ? k - 8 : k;
      check_case(g, cs, rng);
    }
  {
    Case cs;
    cs.fp8 = true, cs.layout = NN, cs.m = 4096, cs.n = 576, cs.k = 7168, cs.samples = 4096;
    check_case(g, cs, rng);
  }
  {
    Case cs;
    cs.fp8 = true, cs.recipe = DG_FP8_RECIPE_1D1D, cs.layout = TN, cs.m = 2112, cs.n = 1024, cs.k = 4096;
    cs.d_dtype = DG_DTYPE_FLOAT32, cs.c_mode = 2, cs.samples = 4096;
    check_case(g, cs, rng);
  }
  // The nt entry point on MN-major views of [K, M] and/or [K, N] memory.
  for (int lay : {NN, TN, TT})
    for (int recipe : {DG_FP8_RECIPE_1D2D, DG_FP8_RECIPE_1D1D}) {
      Case cs;
      cs.fp8 = true, cs.recipe = recipe, cs.layout = lay, cs.nt_views = true, cs.m = 129, cs.n = 336, cs.k = 400;
      cs.d_dtype = recipe == DG_FP8_RECIPE_1D1D ? DG_DTYPE_FLOAT32 : DG_DTYPE_BFLOAT16;
      cs.c_mode = 1, cs.alpha = 0.75f, cs.beta = 2.f;
      check_case(g, cs, rng);
    }
}

TEST_CASE("sm90 fp8 gemm: a warm call with operand copies replays from a CUDA graph" * doctest::test_suite("quick")) {
  Gpu g;
  if (!g.sm90()) return;
  std::mt19937 rng(31);
  // The pre-pass, both transposes and the GEMM in one graph; and a 1D1D tt (one transpose, += into D).
  Case cs;
  cs.fp8 = true, cs.layout = TN, cs.m = 129, cs.n = 336, cs.k = 400, cs.c_mode = 1, cs.alpha = 0.75f, cs.beta = 2.f;
  cs.graph = true;
  check_case(g, cs, rng);
  Case tt;
  tt.fp8 = true, tt.recipe = DG_FP8_RECIPE_1D1D, tt.layout = TT, tt.m = 256, tt.n = 200, tt.k = 1008;
  tt.d_dtype = DG_DTYPE_FLOAT32, tt.c_mode = 2, tt.graph = true;
  check_case(g, tt, rng);
}

TEST_CASE("sm90 gemm: epilogue strips rotating through two buffers or one") {
  Gpu g;
  if (!g.sm90()) return;
  std::mt19937 rng(7);
  // Stage counts that fit only beside a strip-staged D (the whole 128 x block_n tile does not):
  // strips of 64 (BF16 D) or 32 (FP32 D) columns, and of 16 columns for block N 240; N and K tails;
  // plain stores and reduce-add (C aliased to D), alpha/beta.
  for (int bn : {256, 240})
    for (dg_dtype d : {DG_DTYPE_BFLOAT16, DG_DTYPE_FLOAT32})
      for (int c_mode : {0, 1, 2}) {
        Case cs;
        cs.m = 300, cs.n = 600, cs.k = 264, cs.d_dtype = d, cs.c_mode = c_mode;
        cs.alpha = c_mode == 1 ? 1.5f : 1.f;
        cs.beta = c_mode == 1 ? 0.5f : 1.f;
        cs.block_m = 128, cs.block_n = bn, cs.stages = 4;
        check_case(g, cs, rng);
      }
  for (int recipe : {DG_FP8_RECIPE_1D2D, DG_FP8_RECIPE_1D1D})
    for (int c_mode : {0, 2}) {
      Case cs;
      cs.fp8 = true, cs.recipe = recipe, cs.m = 300, cs.n = 600, cs.k = 400, cs.c_mode = c_mode;
      cs.d_dtype = recipe == DG_FP8_RECIPE_1D1D ? DG_DTYPE_FLOAT32 : DG_DTYPE_BFLOAT16;
      cs.block_m = 128, cs.block_n = 256, cs.stages = recipe == DG_FP8_RECIPE_1D1D ? 3 : 4;
      cs.promotion = DG_FP8_PROMOTION_AFTER, cs.slices = 2;
      check_case(g, cs, rng);
    }
  // One strip buffer per warp-group (FP8 128x128 with 6 stages: two strips are the whole tile):
  // every strip waits for the previous strip's store; both promotion modes, tails, C aliased to D.
  for (int promotion : {DG_FP8_PROMOTION_AFTER, DG_FP8_PROMOTION_OVERLAP})
    for (int c_mode : {0, 2}) {
      Case cs;
      cs.fp8 = true, cs.m = 300, cs.n = 600, cs.k = 1040, cs.c_mode = c_mode;
      cs.block_m = 128, cs.block_n = 128, cs.stages = 6, cs.promotion = promotion;
      check_case(g, cs, rng);
    }
}

TEST_CASE("sm90 gemm: split-K clusters reduce through distributed shared memory") {
  Gpu g;
  if (!g.sm90()) return;
  std::mt19937 rng(11);
  // 2, 4 and 8 CTAs per tile; K blocks not divisible by the split (uneven shares, K tail); M of one row,
  // a partial 64-row block and two blocks; N tails (a last chunk of fewer than 4 columns); both D
  // dtypes; C separate (pre-scaled D, then added) and aliased; alpha != 1.
  for (int sk : {2, 4, 8})
    for (int64_t m : {1, 77, 128})
      for (dg_dtype d : {DG_DTYPE_BFLOAT16, DG_DTYPE_FLOAT32})
        for (int c_mode : {0, 1, 2}) {
          Case cs;
          cs.m = m, cs.n = d == DG_DTYPE_FLOAT32 ? 202 : 208, cs.k = 1000, cs.d_dtype = d, cs.c_mode = c_mode;
          cs.alpha = c_mode == 1 ? 1.5f : 0.5f;
          cs.beta = c_mode == 1 ? 0.5f : 1.f;
          cs.split_k = sk;
          check_case(g, cs, rng);
        }
  for (int recipe : {DG_FP8_RECIPE_1D2D, DG_FP8_RECIPE_1D1D})
    for (int sk : {2, 4, 8})
      for (int64_t m : {1, 128}) {
        Case cs;
        cs.fp8 = true, cs.recipe = recipe, cs.m = m, cs.n = 336, cs.k = 1200, cs.c_mode = recipe == DG_FP8_RECIPE_1D1D ? 2 : 0;
        cs.d_dtype = recipe == DG_FP8_RECIPE_1D1D ? DG_DTYPE_FLOAT32 : DG_DTYPE_BFLOAT16;
        cs.split_k = sk;
        check_case(g, cs, rng);
      }
  // Two consumer warp-groups on 128-row tiles, several clusters per row and column of tiles (M and N
  // tails): the partial tile overlays the stage ring, inside it (5 stages of 128x192 FP8) and past
  // its end (2 stages of 128x256 BF16), so one warp-group's partial must not land on a stage the
  // other is still reading.
  for (int bn : {144, 192}) {
    Case cs;
    cs.fp8 = true, cs.m = 300, cs.n = 600, cs.k = 1808, cs.block_m = 128, cs.block_n = bn, cs.split_k = 4;
    check_case(g, cs, rng);
  }
  for (dg_dtype d : {DG_DTYPE_BFLOAT16, DG_DTYPE_FLOAT32}) {
    Case cs;
    cs.m = 300, cs.n = 600, cs.k = 1000, cs.d_dtype = d, cs.c_mode = 2, cs.block_m = 128, cs.block_n = 256;
    cs.stages = 2, cs.split_k = 2;
    check_case(g, cs, rng);
  }
  {
    Case cs;
    cs.fp8 = true, cs.recipe = DG_FP8_RECIPE_1D1D, cs.m = 300, cs.n = 600, cs.k = 1008, cs.c_mode = 2;
    cs.d_dtype = DG_DTYPE_FLOAT32, cs.block_m = 128, cs.block_n = 128, cs.split_k = 2;
    check_case(g, cs, rng);
  }
}

// The quick suite's dense GEMMs: each kernel variant once, on small shapes with M, N and K tails.
// BF16 (MN-major operands loaded by TMA directly): every layout, both D dtypes, no C, C separate
// with alpha/beta, C aliased to D.
TEST_CASE("quick: dense BF16 GEMMs in every layout" * doctest::test_suite("quick")) {
  Gpu g;
  if (!g.sm90()) return;
  std::mt19937 rng(17);
  for (int lay = 0; lay < 4; ++lay) {
    Case cs;
    cs.layout = lay, cs.m = 129, cs.n = 200, cs.k = 264;
    cs.d_dtype = lay % 2 ? DG_DTYPE_FLOAT32 : DG_DTYPE_BFLOAT16;
    cs.c_mode = lay % 3;
    cs.alpha = cs.c_mode == 1 ? 1.5f : 1.f;
    cs.beta = cs.c_mode == 1 ? 0.5f : 1.f;
    check_case(g, cs, rng);
  }
}

// FP8, both recipes: every layout (MN-major operands through the workspace's transposes).
TEST_CASE("quick: dense FP8 GEMMs in every layout and recipe" * doctest::test_suite("quick")) {
  Gpu g;
  if (!g.sm90()) return;
  std::mt19937 rng(18);
  for (int lay = 0; lay < 4; ++lay)
    for (int recipe : {DG_FP8_RECIPE_1D2D, DG_FP8_RECIPE_1D1D}) {
      Case cs;
      cs.fp8 = true, cs.recipe = recipe, cs.layout = lay, cs.m = 129, cs.n = 200, cs.k = 400;
      cs.d_dtype = recipe == DG_FP8_RECIPE_1D1D ? DG_DTYPE_FLOAT32 : DG_DTYPE_BFLOAT16;
      cs.c_mode = recipe == DG_FP8_RECIPE_1D1D ? 2 : lay % 2;
      cs.alpha = cs.c_mode == 1 ? 0.75f : 1.f;
      cs.beta = cs.c_mode == 1 ? 2.f : 1.f;
      check_case(g, cs, rng);
    }
}

// The skinny kernel: BF16 and both FP8 recipes, whole and split along K.
TEST_CASE("quick: skinny GEMMs" * doctest::test_suite("quick")) {
  Gpu g;
  if (!g.sm90()) return;
  std::mt19937 rng(19);
  for (int kind = 0; kind < 3; ++kind)
    for (int split : {0, 2}) {
      Case cs;
      cs.kernel = DG_GEMM_KERNEL_SKINNY;
      cs.fp8 = kind > 0;
      cs.recipe = kind == 2 ? DG_FP8_RECIPE_1D1D : DG_FP8_RECIPE_1D2D;
      cs.d_dtype = kind == 2 ? DG_DTYPE_FLOAT32 : DG_DTYPE_BFLOAT16;
      cs.m = 9, cs.n = 200, cs.k = cs.fp8 ? 400 : 264, cs.c_mode = kind, cs.split_k = split;
      check_case(g, cs, rng);
    }
}

// Tiled kernel features: split-K clusters reducing through distributed shared memory (BF16 and
// FP8), a CTA pair multicasting A, epilogue strips (block N 240) with C aliased to D.
TEST_CASE("quick: split-K clusters and CTA pairs and epilogue strips" * doctest::test_suite("quick")) {
  Gpu g;
  if (!g.sm90()) return;
  std::mt19937 rng(20);
  {
    Case cs;
    cs.m = 77, cs.n = 208, cs.k = 1000, cs.c_mode = 1, cs.alpha = 1.5f, cs.beta = 0.5f, cs.split_k = 2;
    check_case(g, cs, rng);
  }
  {
    Case cs;
    cs.fp8 = true, cs.m = 1, cs.n = 336, cs.k = 1200, cs.split_k = 4;
    check_case(g, cs, rng);
  }
  {
    Case cs;
    cs.fp8 = true, cs.m = 300, cs.n = 336, cs.k = 400, cs.cluster = 2, cs.multicast_a = 1;
    check_case(g, cs, rng);
  }
  {
    Case cs;
    cs.m = 300, cs.n = 600, cs.k = 264, cs.c_mode = 2, cs.block_m = 128, cs.block_n = 240, cs.stages = 4;
    check_case(g, cs, rng);
  }
  // BF16 pairs along M sharing B, as the H200 heuristic takes them at M 65-128: the second CTA's rows
  // partly past M, N and K tails, both majors of A and of B.
  for (int layout : {NT, NN, TN}) {
    Case cs;
    cs.layout = layout, cs.m = 100, cs.n = 232, cs.k = 1000, cs.c_mode = 1, cs.block_m = 64, cs.block_n = 128;
    cs.cluster = 2, cs.multicast_a = 0;
    check_case(g, cs, rng);
  }
}

TEST_CASE("sm90 gemm: DeepSeek shapes (sampled reference)") {
  Gpu g;
  if (!g.sm90()) return;
  std::mt19937 rng(7);
  const int64_t nk[7][2] = {{2112, 7168}, {576, 7168}, {24576, 1536}, {32768, 512},
                            {7168, 16384}, {4096, 7168}, {7168, 2048}};
  for (auto& p : nk)
    for (bool fp8 : {false, true}) {
      Case cs;
      cs.fp8 = fp8, cs.m = 128, cs.n = p[0], cs.k = p[1], cs.samples = 2048;
      check_case(g, cs, rng);
    }
}

TEST_CASE("sm90 gemm: early exits" * doctest::test_suite("quick")) {
  Gpu g;
  if (!g.sm90()) return;
  const int64_t M = 33, N = 64;
  std::vector<float> c(M * N), d(M * N, -7.f);
  for (size_t i = 0; i < c.size(); ++i) c[i] = static_cast<float>(i % 13) - 6.f;
  Buf gc(g.device, c.size() * 4), gd(g.device, d.size() * 4), dummy(g.device, 1024);
  gc.upload(c.data(), c.size() * 4);
  Tensor ta(dummy.data(), DG_DTYPE_BFLOAT16, {M, 0}, {8, 1});
  Tensor tb(dummy.data(), DG_DTYPE_BFLOAT16, {N, 0}, {8, 1});
  Tensor td(gd.data(), DG_DTYPE_FLOAT32, {M, N}, {N, 1});
  Tensor tc(gc.data(), DG_DTYPE_FLOAT32, {M, N}, {N, 1});
  dg_gemm_options o = DG_GEMM_OPTIONS_INIT;
  o.beta = 0.5f;
  // K == 0 with C: D = beta * C.
  gd.upload(d.data(), d.size() * 4);
  REQUIRE(dg_bf16_gemm_nt(g.stream, ta.t, tb.t, td.t, tc.t, &o) == DG_SUCCESS);
  gd.download(d.data(), d.size() * 4);
  for (size_t i = 0; i < d.size(); ++i) CHECK(d[i] == 0.5f * c[i]);
  // K == 0 without C: zeros.
  REQUIRE(dg_bf16_gemm_nt(g.stream, ta.t, tb.t, td.t, nullptr, &o) == DG_SUCCESS);
  gd.download(d.data(), d.size() * 4);
  for (float v : d) CHECK(v == 0.f);
  // M == 0: nothing is written.
  std::vector<float> mark(M * N, 3.f);
  gd.upload(mark.data(), mark.size() * 4);
  Tensor ta0(dummy.data(), DG_DTYPE_BFLOAT16, {0, 64}, {64, 1});
  Tensor tb0(dummy.data(), DG_DTYPE_BFLOAT16, {N, 64}, {0, 1});
  Tensor td0(gd.data(), DG_DTYPE_FLOAT32, {0, N}, {N, 1});
  REQUIRE(dg_bf16_gemm_nt(g.stream, ta0.t, tb0.t, td0.t, nullptr, nullptr) == DG_SUCCESS);
  gd.download(d.data(), d.size() * 4);
  for (float v : d) CHECK(v == 3.f);
}

TEST_CASE("sm90 gemm: bad arguments name the argument") {
  Gpu g;
  if (!g.sm90()) return;
  Buf buf(g.device, 1 << 20);
  auto msg = [] { return std::string(dg_last_error()); };
  Tensor a(buf.data(), DG_DTYPE_BFLOAT16, {64, 128}, {128, 1});
  Tensor b(buf.data(), DG_DTYPE_BFLOAT16, {64, 128}, {128, 1});
  Tensor bk(buf.data(), DG_DTYPE_BFLOAT16, {64, 96}, {96, 1});
  Tensor d(buf.data(), DG_DTYPE_BFLOAT16, {64, 64}, {64, 1});
  Tensor dcol(buf.data(), DG_DTYPE_BFLOAT16, {64, 64}, {1, 64});
  Tensor a_f32(buf.data(), DG_DTYPE_FLOAT32, {64, 128}, {128, 1});
  CHECK(dg_bf16_gemm_nt(g.stream, a.t, bk.t, d.t, nullptr, nullptr) == DG_ERROR_INVALID_ARGUMENT);
  CHECK(msg().find("b:") == 0);
  CHECK(dg_bf16_gemm_nt(g.stream, a_f32.t, b.t, d.t, nullptr, nullptr) == DG_ERROR_INVALID_ARGUMENT);
  CHECK(msg().find("a:") == 0);
  CHECK(dg_bf16_gemm_nt(g.stream, a.t, b.t, dcol.t, nullptr, nullptr) == DG_ERROR_INVALID_ARGUMENT);
  CHECK(msg().find("d:") == 0);
  CHECK(dg_bf16_gemm_nt(nullptr, a.t, b.t, d.t, nullptr, nullptr) == DG_ERROR_INVALID_ARGUMENT);
  dg_gemm_options o = DG_GEMM_OPTIONS_INIT;
  o.struct_size = 8;
  CHECK(dg_bf16_gemm_nt(g.stream, a.t, b.t, d.t, nullptr, &o) == DG_ERROR_INVALID_ARGUMENT);
  CHECK(msg().find("options") == 0);
  o = DG_GEMM_OPTIONS_INIT;
  o.block_m = 96;
  CHECK(dg_bf16_gemm_nt(g.stream, a.t, b.t, d.t, nullptr, &o) == DG_ERROR_INVALID_ARGUMENT);
  CHECK(msg().find("options.block_m") != std::string::npos);
  // FP8: operands K-major in memory, or MN-major through a workspace; scales in the required layouts.
  Tensor a8(buf.data(), DG_DTYPE_FLOAT8_E4M3, {64, 128}, {128, 1});
  Tensor b8_mn(buf.data(), DG_DTYPE_FLOAT8_E4M3, {128, 64}, {64, 1});  // nn: [K, N] contiguous
  Tensor b8(buf.data(), DG_DTYPE_FLOAT8_E4M3, {64, 128}, {128, 1});
  Tensor sfa(buf.data(), DG_DTYPE_FLOAT32, {64, 1}, {1, 64});
  Tensor sfa_bad(buf.data(), DG_DTYPE_FLOAT32, {64, 1}, {1, 1});
  Tensor sfa_rowmajor(buf.data(), DG_DTYPE_FLOAT32, {64, 2}, {2, 1});
  Tensor sfb(buf.data(), DG_DTYPE_FLOAT32, {1, 1}, {1, 1});
  Tensor sfb_nn(buf.data(), DG_DTYPE_FLOAT32, {1, 1}, {1, 1});
  Tensor a8_k256(buf.data(), DG_DTYPE_FLOAT8_E4M3, {64, 256}, {256, 1});
  Tensor b8_k256(buf.data(), DG_DTYPE_FLOAT8_E4M3, {64, 256}, {256, 1});
  Tensor sfb2(buf.data(), DG_DTYPE_FLOAT32, {1, 2}, {2, 1});
  // An MN-major operand needs a workspace for its K-major copy (64 x 128 bytes here).
  CHECK(dg_fp8_gemm_nn(g.stream, a8.t, sfa.t, b8_mn.t, sfb_nn.t, d.t, nullptr, nullptr) == DG_ERROR_UNSUPPORTED);
  CHECK(msg().find("b:") == 0);
  CHECK(msg().find("8192 bytes") != std::string::npos);
  CHECK(msg().find("dg_fp8_gemm_workspace_size") != std::string::npos);
  Buf ws(g.device, 1 << 16);
  o = DG_GEMM_OPTIONS_INIT;
  o.workspace = ws.data();
  o.workspace_size = 8191;
  CHECK(dg_fp8_gemm_nn(g.stream, a8.t, sfa.t, b8_mn.t, sfb_nn.t, d.t, nullptr, &o) == DG_ERROR_INVALID_ARGUMENT);
  CHECK(msg().find("options.workspace_size:") == 0);
  o.workspace = static_cast<char*>(ws.data()) + 64;
  o.workspace_size = 8192;
  CHECK(dg_fp8_gemm_nn(g.stream, a8.t, sfa.t, b8_mn.t, sfb_nn.t, d.t, nullptr, &o) == DG_ERROR_INVALID_ARGUMENT);
  CHECK(msg().find("options.workspace:") == 0);
  Tensor b8_odd(buf.data(), DG_DTYPE_FLOAT8_E4M3, {128, 64}, {72, 1});  // K rows not 16-byte multiples apart
  CHECK(dg_fp8_gemm_nn(g.stream, a8.t, sfa.t, b8_odd.t, sfb_nn.t, d.t, nullptr, &o) == DG_ERROR_UNSUPPORTED);
  CHECK(msg().find("b:") == 0);
  // Only MN-major operands are copied: a K-major one must have 16-byte rows itself (K = 72 here).
  Tensor a8_k72(buf.data(), DG_DTYPE_FLOAT8_E4M3, {64, 72}, {72, 1});
  Tensor b8_mn_k72(buf.data(), DG_DTYPE_FLOAT8_E4M3, {72, 64}, {64, 1});
  CHECK(dg_fp8_gemm_nn(g.stream, a8_k72.t, sfa.t, b8_mn_k72.t, sfb_nn.t, d.t, nullptr, &o) == DG_ERROR_UNSUPPORTED);
  CHECK(msg().find("a:") == 0);
  CHECK(msg().find("rows a multiple of 16 bytes apart") != std::string::npos);
  CHECK(dg_fp8_gemm_nt(g.stream, a8_k256.t, sfa_rowmajor.t, b8_k256.t, sfb2.t, d.t, nullptr, nullptr) ==
        DG_ERROR_INVALID_ARGUMENT);
  CHECK(msg().find("sfa:") == 0);
  CHECK(dg_fp8_gemm_nt(g.stream, a8.t, sfa.t, b8.t, sfb2.t, d.t, nullptr, nullptr) == DG_ERROR_INVALID_ARGUMENT);
  CHECK(msg().find("sfb:") == 0);
  o = DG_GEMM_OPTIONS_INIT;
  o.recipe = DG_FP8_RECIPE_1D1D;
  CHECK(dg_fp8_gemm_nt(g.stream, a8.t, sfa.t, b8.t, sfb.t, d.t, nullptr, &o) == DG_ERROR_UNSUPPORTED);
  CHECK(msg().find("d:") == 0);
  (void)sfa_bad;
  // Prepare: compiles and loads without launching.
  CHECK(dg_gemm_prepare(g.stream, DG_DTYPE_BFLOAT16, DG_GEMM_LAYOUT_NT, 4096, 7168, 2048, DG_DTYPE_BFLOAT16, 0,
                        nullptr) == DG_SUCCESS);
  for (int32_t layout : {DG_GEMM_LAYOUT_NN, DG_GEMM_LAYOUT_TN, DG_GEMM_LAYOUT_TT})
    CHECK(dg_gemm_prepare(g.stream, DG_DTYPE_FLOAT8_E4M3, layout, 128, 128, 128, DG_DTYPE_BFLOAT16, 0, nullptr) ==
          DG_SUCCESS);
}
