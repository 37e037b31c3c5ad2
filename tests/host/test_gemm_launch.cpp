// The SM90 GEMM entry points against the fake driver: for each layout, recipe and C mode, the launch
// that reaches the driver (kernel, grid, cluster, shared memory) is the config the heuristic chose,
// and the kernel argument carries the TMA maps and scalars of the kernel's contract
// (templates/include/dg/gemm/sm90_gemm.cuh). FP8 operands that are MN-major in memory are first
// transposed into the caller's workspace, and the GEMM's maps point at the copies. Also: early exits,
// the beta * C pre-pass, workspace errors, and the memoised TMA encodings of the warm path. No GPU:
// nothing runs, the arguments are checked.
#include <doctest/doctest.h>

#include <cstring>
#include <string>
#include <vector>

#include "dg.h"
#include "fake_driver.h"
#include "launch_util.h"
#include "ops/gemm.h"
#include "ops/transpose.h"

namespace {

using dg::ops::GemmConfig;
using dg::ops::GemmKind;
using dg::ops::GemmShape;
using dg::ops::Major;
using dg::ops::Sm90GemmParams;
using dg::ops::TransposeParams;
using namespace dg::test;  // fake_driver.h, launch_util.h

void check_map(const dg::tma::Descriptor& d, const char* what, const void* address, CUtensorMapDataType dtype,
               uint64_t inner, uint64_t outer, uint64_t stride_bytes, uint32_t box_inner, uint32_t box_outer,
               CUtensorMapSwizzle swizzle) {
  INFO("TMA map of ", what);
  const fake_tensor_map m = map_of(d);
  CHECK(m.address == reinterpret_cast<uintptr_t>(address));
  CHECK(m.dtype == dtype);
  CHECK(m.rank == 2);
  CHECK(m.dims[0] == inner);
  CHECK(m.dims[1] == outer);
  if (outer > 1) CHECK(m.stride1 == stride_bytes);
  CHECK(m.box[0] == box_inner);
  CHECK(m.box[1] == box_outer);
  CHECK(m.swizzle == swizzle);
}

struct Problem {
  GemmKind kind = GemmKind::kBf16;
  int64_t m = 0, n = 0, k = 0;
  bool a_t = false, b_t = false;  // memory is [K, M] / [K, N]
  bool as_nt = false;             // FP8: call the nt entry point on [M, K] / [N, K] views of that memory
  dg_dtype d_dtype = DG_DTYPE_BFLOAT16;
  enum { kNoC, kSeparateC, kAliasedC } c_mode = kNoC;
  float alpha = 1.0f, beta = 1.0f;
  dg_gemm_options options = DG_GEMM_OPTIONS_INIT;
};

// Calls the entry point for `p` and checks every launch it makes.
void run_and_check(FakeDriver& fake, Problem p) {
  CAPTURE(p.m);
  CAPTURE(p.n);
  CAPTURE(p.k);
  CAPTURE(p.a_t);
  CAPTURE(p.b_t);
  CAPTURE(int(p.kind));
  CAPTURE(int(p.c_mode));
  CAPTURE(p.as_nt);
  const bool fp8 = p.kind != GemmKind::kBf16;
  const dg_dtype ab = fp8 ? DG_DTYPE_FLOAT8_E4M3 : DG_DTYPE_BFLOAT16;
  const int64_t eb = fp8 ? 1 : 2, ob = p.d_dtype == DG_DTYPE_FLOAT32 ? 4 : 2;
  const int64_t sf_k = cdiv(p.k, 128), m4 = cdiv(p.m, 4) * 4, n4 = cdiv(p.n, 4) * 4;
  // Padded leading dimensions (16-byte multiples, as TMA needs), so strides are not mistaken for sizes.
  const int64_t lda = cdiv(p.a_t ? p.m : p.k, 64) * 64 + 64, ldb = cdiv(p.b_t ? p.n : p.k, 64) * 64 + 64;
  const int64_t ldd = cdiv(p.n, 8) * 8 + 32;
  void* const pa = fake_address(1);
  void* const pb = fake_address(2);
  void* const pd = fake_address(3);
  void* const pc = p.c_mode == Problem::kAliasedC ? pd : fake_address(4);
  void* const psfa = fake_address(5);
  void* const psfb = fake_address(6);
  // An operand as the entry point sees it: its memory, or a transposed view of [K, MN] memory (as_nt).
  auto sizes = [&](bool t, int64_t mn) { return t && !p.as_nt ? std::vector<int64_t>{p.k, mn} : std::vector<int64_t>{mn, p.k}; };
  auto strides = [&](bool t, int64_t ld) { return t && p.as_nt ? std::vector<int64_t>{1, ld} : std::vector<int64_t>{ld, 1}; };
  Tensor a(pa, ab, sizes(p.a_t, p.m), strides(p.a_t, lda));
  Tensor b(pb, ab, sizes(p.b_t, p.n), strides(p.b_t, ldb));
  Tensor d(pd, p.d_dtype, {p.m, p.n}, {ldd, 1});
  Tensor c(pc, p.d_dtype, {p.m, p.n}, {ldd, 1});
  // Scales: the [M, sf_k] / [N or N/128, sf_k] views, given transposed with their data for tn/tt/nn.
  const bool sfb_per_token = p.kind == GemmKind::kFp8_1D1D;
  const bool sfa_t = p.a_t && !p.as_nt, sfb_t = p.b_t && !p.as_nt;
  Tensor sfa(psfa, DG_DTYPE_FLOAT32, sfa_t ? std::vector<int64_t>{sf_k, p.m} : std::vector<int64_t>{p.m, sf_k},
             sfa_t ? std::vector<int64_t>{m4, 1} : std::vector<int64_t>{1, m4});
  const int64_t sfb_rows = sfb_per_token ? p.n : cdiv(p.n, 128);
  std::vector<int64_t> sfb_strides = sfb_per_token ? std::vector<int64_t>{1, n4} : std::vector<int64_t>{sf_k, 1};
  if (sfb_t) std::swap(sfb_strides[0], sfb_strides[1]);
  Tensor sfb(psfb, DG_DTYPE_FLOAT32, sfb_t ? std::vector<int64_t>{sf_k, sfb_rows} : std::vector<int64_t>{sfb_rows, sf_k},
             sfb_strides);
  // FP8 reads MN-major operands (here every [K, MN] one: its padded rows make even a single row
  // non-contiguous along K) from K-major copies in the workspace: rows align(K, 16) bytes apart, A's
  // copy first, B's at the next multiple of 256 bytes, as dg_fp8_gemm_workspace_size counts.
  const bool copy_a = fp8 && p.a_t, copy_b = fp8 && p.b_t;
  char* const ws = static_cast<char*>(fake_address(7));
  const int64_t ws_ld = cdiv(p.k, 16) * 16;
  const int64_t off_b = copy_a ? cdiv(p.m * ws_ld, 256) * 256 : 0;
  if (copy_a || copy_b) {
    const int32_t layout = p.a_t ? (p.b_t ? DG_GEMM_LAYOUT_TN : DG_GEMM_LAYOUT_TT) : DG_GEMM_LAYOUT_NN;
    REQUIRE(dg_fp8_gemm_workspace_size(layout, p.m, p.n, p.k, &p.options.workspace_size) == DG_SUCCESS);
    CHECK(p.options.workspace_size == size_t(off_b + (copy_b ? cdiv(p.n * ws_ld, 256) * 256 : 0)));
    p.options.workspace = ws;
  }
  p.options.alpha = p.alpha;
  p.options.beta = p.beta;
  p.options.recipe = p.kind == GemmKind::kFp8_1D1D ? DG_FP8_RECIPE_1D1D : DG_FP8_RECIPE_1D2D;
  const dg_tensor* cp = p.c_mode == Problem::kNoC ? nullptr : c.t;

  dg_stream* stream = nullptr;
  REQUIRE(dg_stream_create(&stream, 0, nullptr, DG_STREAM_CREATE, nullptr) == DG_SUCCESS);
  dg_status st;
  if (fp8) {
    auto* fn = p.as_nt ? dg_fp8_gemm_nt
               : p.a_t ? (p.b_t ? dg_fp8_gemm_tn : dg_fp8_gemm_tt)
                       : (p.b_t ? dg_fp8_gemm_nn : dg_fp8_gemm_nt);
    st = fn(stream, a.t, sfa.t, b.t, sfb.t, d.t, cp, &p.options);
  } else {
    auto* fn = p.a_t ? (p.b_t ? dg_bf16_gemm_tn : dg_bf16_gemm_tt) : (p.b_t ? dg_bf16_gemm_nn : dg_bf16_gemm_nt);
    st = fn(stream, a.t, b.t, d.t, cp, &p.options);
  }
  dg_stream_destroy(stream);
  REQUIRE_MESSAGE(st == DG_SUCCESS, std::string(dg_last_error()));
  std::vector<Launch> launches = fake.take();

  const bool has_c = p.c_mode != Problem::kNoC && p.beta != 0.0f;
  GemmShape s;
  s.kind = p.kind, s.m = p.m, s.n = p.n, s.k = p.k;
  s.major_a = p.a_t && !copy_a ? Major::kMN : Major::kK;
  s.major_b = p.b_t && !copy_b ? Major::kMN : Major::kK;
  s.d_dtype = p.d_dtype;
  s.accumulate = has_c;
  dg::ops::GemmOverride o;
  o.block_m = p.options.block_m, o.block_n = p.options.block_n, o.stages = p.options.num_stages;
  o.cluster = p.options.cluster, o.multicast_a = p.options.multicast_a, o.split_k = p.options.split_k;
  o.kernel = p.options.kernel;
  bool skinny = false;
  // The fake device is no H200: run_gemm plans with the Hopper calibration.
  const dg::ops::Sm90CostModel& hopper = dg::ops::hopper_cost_model();
  REQUIRE(dg::ops::use_skinny(s, o, false, hopper, &skinny) == DG_SUCCESS);
  // The skinny kernel adds beta * C itself; the tiled one reads C through D (the pre-pass) unless aliased with beta 1.
  const bool pre_pass = has_c && !skinny && !(p.c_mode == Problem::kAliasedC && p.beta == 1.0f);
  if (p.m == 0 || p.n == 0) {
    CHECK(launches.empty());
    return;
  }
  if (p.k == 0) {
    REQUIRE(launches.size() == 1);
    CHECK(launches[0].kernel.rfind("dg_gemm_scale_", 0) == 0);
    return;
  }
  // The pre-pass, the operand copies, then the GEMM.
  REQUIRE(launches.size() == size_t(pre_pass) + copy_a + copy_b + 1);
  size_t next = 0;
  if (pre_pass) CHECK(launches[next++].kernel.rfind("dg_gemm_scale_", 0) == 0);
  auto check_copy = [&](const Launch& t, const char* what, const void* src, int64_t ld_src, const void* dst, int64_t mn) {
    INFO("transpose of ", what);
    CHECK(t.kernel == dg::ops::transpose_kernel_spec().kernel_name);
    CHECK(t.config.grid[0] == dg::ops::transpose_grid(p.k, mn, kSms));
    CHECK((t.config.grid[1] == 1 && t.config.grid[2] == 1));
    CHECK(t.config.block[0] == unsigned(dg::ops::kTransposeThreads));
    CHECK(t.config.smem_bytes == 0);
    REQUIRE(t.params.size() == sizeof(TransposeParams));
    TransposeParams tp;
    std::memcpy(&tp, t.params.data(), sizeof(tp));
    // Source [K, MN] rows ld_src bytes apart -> destination [MN, K] rows ws_ld bytes apart.
    CHECK(tp.src == src);
    CHECK(tp.ld_src == ld_src);
    CHECK(tp.dst == dst);
    CHECK(tp.ld_dst == ws_ld);
    CHECK(tp.rows == p.k);
    CHECK(tp.cols == mn);
  };
  if (copy_a) check_copy(launches[next++], "a", pa, lda, ws, p.m);
  if (copy_b) check_copy(launches[next++], "b", pb, ldb, ws + off_b, p.n);
  const Launch& l = launches.back();

  if (skinny) {
    dg::ops::SkinnyConfig sc;
    REQUIRE(dg::ops::choose_skinny_config(s, kSms, o, &sc) == DG_SUCCESS);
    CAPTURE(dg::ops::describe(s, sc));
    CHECK(l.kernel == dg::ops::skinny_kernel_spec(s, sc).kernel_name);
    CHECK(l.config.grid[0] == unsigned(cdiv(p.n, 16) * sc.split));
    CHECK(sc.grid == int(cdiv(p.n, 16) * sc.split));
    CHECK(l.config.grid[1] == 1);
    CHECK(l.config.block[0] == unsigned(32 * sc.warps));
    CHECK(l.config.smem_bytes == 0);
    CHECK(l.config.cluster[0] == (sc.split > 1 ? unsigned(sc.split) : 0u));
    REQUIRE(l.params.size() == sizeof(dg::ops::SkinnyGemmParams));
    dg::ops::SkinnyGemmParams q;
    std::memcpy(&q, l.params.data(), sizeof(q));
    CHECK(q.a == (copy_a ? static_cast<const void*>(ws) : pa));
    CHECK(q.b == (copy_b ? static_cast<const void*>(ws + off_b) : pb));
    if (p.m > 1) CHECK(q.lda == (copy_a ? ws_ld : lda));  // a single row's stride is not read
    CHECK(q.ldb == (copy_b ? ws_ld : ldb));
    CHECK(q.d == pd);
    CHECK(q.ldd == (p.m > 1 ? ldd : p.n));
    CHECK(q.c == (has_c ? pc : nullptr));
    if (has_c) CHECK(q.ldc == (p.m > 1 ? ldd : p.n));
    if (fp8) {
      CHECK(q.sfa == psfa);
      CHECK(q.ld_sfa == m4);
      CHECK(q.sfb == psfb);
      if (sfb_per_token) CHECK((q.sfb_stride_n == 1 && q.sfb_stride_k == n4));
      else CHECK((q.sfb_stride_n == sf_k && q.sfb_stride_k == 1));
    }
    CHECK((q.m == p.m && q.n == p.n && q.k == p.k));
    CHECK(q.alpha == p.alpha);
    CHECK(q.beta == p.beta);
    return;
  }
  GemmConfig cfg;
  REQUIRE(dg::ops::choose_gemm_config(s, kSms, o, &cfg) == DG_SUCCESS);
  CAPTURE(dg::ops::describe(s, cfg));

  CHECK(l.kernel == dg::ops::gemm_kernel_spec(s, cfg).kernel_name);
  CHECK(l.config.grid[0] == unsigned(cfg.grid));
  CHECK(l.config.grid[1] == 1);
  CHECK(l.config.block[0] == cfg.threads);
  CHECK(l.config.smem_bytes == cfg.smem_bytes);
  const unsigned cluster = cfg.split_k > 1 ? unsigned(cfg.split_k) : cfg.cluster > 1 ? unsigned(cfg.cluster) : 0u;
  CHECK(l.config.cluster[0] == cluster);
  if (cfg.split_k > 1) {
    CHECK(cfg.grid == cdiv(p.m, cfg.block_m) * cdiv(p.n, cfg.block_n) * cfg.split_k);
  } else {
    // Persistent over the units (tile pairs for clusters): one cluster per unit up to every SM; with
    // several waves and a last one at least half full, the fewest clusters that keep the wave count.
    const int pm = cfg.cluster == 2 && !cfg.multicast_a ? 2 : 1, pn = cfg.cluster == 2 && cfg.multicast_a ? 2 : 1;
    const int64_t units = cdiv(cdiv(p.m, cfg.block_m), pm) * cdiv(cdiv(p.n, cfg.block_n), pn);
    const int64_t slots = kSms / cfg.cluster, waves = cdiv(units, slots);
    const bool trim = waves > 1 && 2 * (units - (waves - 1) * slots) >= slots;
    CHECK(cfg.grid % cfg.cluster == 0);
    CHECK(cfg.grid / cfg.cluster == (trim ? cdiv(units, waves) : std::min(slots, units)));
    CHECK(cdiv(units, cfg.grid / cfg.cluster) == waves);
  }

  REQUIRE(l.params.size() == sizeof(Sm90GemmParams));
  Sm90GemmParams q;
  std::memcpy(&q, l.params.data(), sizeof(q));
  const CUtensorMapDataType ab_type = fp8 ? CU_TENSOR_MAP_DATA_TYPE_UINT8 : CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
  const bool mc_a = cfg.cluster == 2 && cfg.multicast_a, mc_b = cfg.cluster == 2 && !cfg.multicast_a;
  const uint32_t bk = uint32_t(cfg.block_k);
  if (copy_a)
    check_map(q.tma_a, "a", ws, ab_type, p.k, p.m, ws_ld, bk, mc_a ? cfg.block_m / 2 : cfg.block_m,
              CU_TENSOR_MAP_SWIZZLE_128B);
  else if (!p.a_t)
    check_map(q.tma_a, "a", pa, ab_type, p.k, p.m, lda * eb, bk, mc_a ? cfg.block_m / 2 : cfg.block_m,
              CU_TENSOR_MAP_SWIZZLE_128B);
  else
    check_map(q.tma_a, "a", pa, ab_type, p.m, p.k, lda * eb, 64, bk, CU_TENSOR_MAP_SWIZZLE_128B);
  if (copy_b)
    check_map(q.tma_b, "b", ws + off_b, ab_type, p.k, p.n, ws_ld, bk, mc_b ? cfg.block_n / 2 : cfg.block_n,
              CU_TENSOR_MAP_SWIZZLE_128B);
  else if (!p.b_t)
    check_map(q.tma_b, "b", pb, ab_type, p.k, p.n, ldb * eb, bk, mc_b ? cfg.block_n / 2 : cfg.block_n,
              CU_TENSOR_MAP_SWIZZLE_128B);
  else
    check_map(q.tma_b, "b", pb, ab_type, p.n, p.k, ldb * eb, 64, bk, CU_TENSOR_MAP_SWIZZLE_128B);
  // At most 128 rows stream B: the operand maps fetch single lines into L2, the rest line pairs.
  const uint32_t fetch = p.m <= 128 ? CU_TENSOR_MAP_L2_PROMOTION_L2_128B : CU_TENSOR_MAP_L2_PROMOTION_L2_256B;
  CHECK((map_of(q.tma_a).l2_promotion == fetch && map_of(q.tma_b).l2_promotion == fetch));
  CHECK(map_of(q.tma_d).l2_promotion == uint32_t(CU_TENSOR_MAP_L2_PROMOTION_L2_256B));
  const uint32_t strip_bytes = uint32_t(cfg.d_strip * ob);
  check_map(q.tma_d, "d", pd, ob == 4 ? CU_TENSOR_MAP_DATA_TYPE_FLOAT32 : CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, p.n, p.m,
            ldd * ob, cfg.d_strip, cfg.block_m / cfg.math_wg,
            strip_bytes >= 128 ? CU_TENSOR_MAP_SWIZZLE_128B
            : strip_bytes >= 64 ? CU_TENSOR_MAP_SWIZZLE_64B
            : strip_bytes >= 32 ? CU_TENSOR_MAP_SWIZZLE_32B
                                : CU_TENSOR_MAP_SWIZZLE_NONE);
  if (fp8) {
    check_map(q.tma_sfa, "sfa", psfa, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, m4, sf_k, m4 * 4, cfg.block_m, 1,
              CU_TENSOR_MAP_SWIZZLE_NONE);
    CHECK(q.sfb == psfb);
    if (sfb_per_token)
      check_map(q.tma_sfb, "sfb", psfb, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, n4, sf_k, n4 * 4, cfg.block_n, 1,
                CU_TENSOR_MAP_SWIZZLE_NONE);
    else
      CHECK((q.sfb_stride_n == sf_k && q.sfb_stride_k == 1 && q.sfb_rows == cdiv(p.n, 128)));
  }
  CHECK(q.m == p.m);
  CHECK(q.n == p.n);
  CHECK(q.k == p.k);
  CHECK(q.alpha == p.alpha);
  CHECK(q.d == pd);
  CHECK(q.ldd == (p.m > 1 ? ldd : p.n));
  CHECK(q.grouped_layout == nullptr);
  CHECK((q.raster_band == 4 || q.raster_band == 8 || q.raster_band == 16));
  const int pm = cfg.cluster == 2 && !cfg.multicast_a ? 2 : 1, pn = cfg.cluster == 2 && cfg.multicast_a ? 2 : 1;
  check_walk(q.walk, cdiv(cdiv(p.m, cfg.block_m), pm), cdiv(cdiv(p.n, cfg.block_n), pn), q.raster_band,
             q.raster_along_n != 0);
}

}  // namespace

TEST_CASE("BF16 GEMMs with an MN-major B pair their CTAs (sharing B) over long runs of tiles") {
  // The heuristic's config for a dense BF16 problem; b_mn: B is MN-major (nn / tt).
  auto config = [](int64_t m, int64_t n, int64_t k, bool b_mn, dg::ops::GemmOverride o = {}) {
    GemmShape s;
    s.kind = GemmKind::kBf16, s.m = m, s.n = n, s.k = k;
    s.major_b = b_mn ? Major::kMN : Major::kK;
    GemmConfig c;
    REQUIRE(dg::ops::choose_gemm_config(s, kSms, o, &c) == DG_SUCCESS);
    CAPTURE(dg::ops::describe(s, c));
    return c;
  };
  // 8192 x 32768 x 512 and 8192 x 24576 x 1536: 46-62 rounds of 128x256 tiles.
  for (int64_t n : {24576, 32768}) {
    CAPTURE(n);
    const GemmConfig c = config(8192, n, n == 32768 ? 512 : 1536, true);
    CHECK(c.cluster == 2);
    CHECK(c.multicast_a == 0);
    CHECK(config(8192, n, n == 32768 ? 512 : 1536, false).cluster == 1);  // K-major B
  }
  // Few rounds (N 2112: 5 at M 8192), or an explicit config field: single CTAs.
  CHECK(config(8192, 2112, 7168, true).cluster == 1);
  dg::ops::GemmOverride stages;
  stages.stages = 3;
  CHECK(config(8192, 32768, 512, true, stages).cluster == 1);
}

TEST_CASE("fast_div divides every 32-bit numerator exactly") {
  std::vector<uint32_t> divisors;
  for (uint32_t d = 1; d <= 4096; ++d) divisors.push_back(d);
  for (uint32_t s = 12; s < 32; ++s)
    for (uint32_t e : {0u, 1u, 3u}) divisors.insert(divisors.end(), {(1u << s) - e, (1u << s) + e});
  divisors.insert(divisors.end(), {0x7fffffffu, 0xfffffffeu, 0xffffffffu, 2654435761u});
  uint64_t state = 0x9e3779b97f4a7c15ull;
  int bad = 0;
  for (uint32_t d : divisors) {
    const dg::ops::FastDiv f = dg::ops::fast_div(d);
    std::vector<uint32_t> ns = {0u, 1u, d - 1, d, d + 1, 2 * d - 1, 0x7fffffffu, 0x80000000u, 0xfffffffeu, 0xffffffffu};
    for (int i = 0; i < 64; ++i) {
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      ns.push_back(uint32_t(state >> 32) >> (i % 32));
    }
    for (uint32_t n : ns) bad += fast_div_apply(f, n) != n / d;
  }
  CHECK(bad == 0);
}

TEST_CASE("BF16 GEMMs launch the chosen config with the contract's TMA maps, every layout and C mode") {
  FakeDriver fake(sizeof(Sm90GemmParams));
  for (int layout = 0; layout < 4; ++layout)
    for (auto c_mode : {Problem::kNoC, Problem::kSeparateC, Problem::kAliasedC})
      for (dg_dtype d : {DG_DTYPE_BFLOAT16, DG_DTYPE_FLOAT32}) {
        Problem p;
        p.m = 129, p.n = 336, p.k = 264;
        p.a_t = layout >= 2, p.b_t = layout == 1 || layout == 2;
        p.d_dtype = d;
        p.c_mode = c_mode;
        p.alpha = 0.75f;
        p.beta = c_mode == Problem::kAliasedC ? 1.0f : 0.5f;
        run_and_check(fake, p);
      }
  Problem big;  // large M: a multicast cluster and persistent grid
  big.m = 4096, big.n = 7168, big.k = 2048;
  run_and_check(fake, big);
  Problem one;  // M = 1: the skinny kernel
  one.m = 1, one.n = 4096, one.k = 7168;
  run_and_check(fake, one);
  one.c_mode = Problem::kSeparateC;  // which adds beta * C itself (no pre-pass)
  one.beta = 0.5f;
  run_and_check(fake, one);
  Problem tiled = one;  // M = 1 on the tiled kernel: the split-K rule
  tiled.options.kernel = DG_GEMM_KERNEL_TILED;
  run_and_check(fake, tiled);
  Problem wide;  // M = 1 with 235 MB of B: the tiled kernel streams it faster
  wide.m = 1, wide.n = 7168, wide.k = 16384;
  run_and_check(fake, wide);
}

TEST_CASE("FP8 GEMMs launch the chosen config with the contract's TMA maps and scale operands") {
  FakeDriver fake(sizeof(Sm90GemmParams));
  for (int64_t m : {1, 8, 9, 128, 4096}) {  // 1 and 8: the skinny kernel (split over 8 CTAs)
    Problem p;
    p.kind = GemmKind::kFp8_1D2D;
    p.m = m, p.n = 576, p.k = 7168;
    run_and_check(fake, p);
  }
  Problem skinny_1d1d;  // the skinny kernel forced, 1D1D with C aliased
  skinny_1d1d.kind = GemmKind::kFp8_1D1D;
  skinny_1d1d.m = 24, skinny_1d1d.n = 200, skinny_1d1d.k = 400;
  skinny_1d1d.d_dtype = DG_DTYPE_FLOAT32;
  skinny_1d1d.c_mode = Problem::kAliasedC;
  skinny_1d1d.options.kernel = DG_GEMM_KERNEL_SKINNY;
  run_and_check(fake, skinny_1d1d);
  Problem waves;  // 31 full waves and a last one of 4 tiles: the grid keeps every SM
  waves.kind = GemmKind::kFp8_1D2D;
  waves.m = 4096, waves.n = 24576, waves.k = 1536;
  run_and_check(fake, waves);
  Problem tail;
  tail.kind = GemmKind::kFp8_1D2D;
  tail.m = 77, tail.n = 336, tail.k = 400;
  tail.c_mode = Problem::kSeparateC;
  tail.beta = 2.0f;
  run_and_check(fake, tail);
  Problem wgrad;
  wgrad.kind = GemmKind::kFp8_1D1D;
  wgrad.m = 2112, wgrad.n = 4096, wgrad.k = 7168;
  wgrad.d_dtype = DG_DTYPE_FLOAT32;
  wgrad.c_mode = Problem::kAliasedC;
  run_and_check(fake, wgrad);
  Problem forced;  // an explicit split-K config
  forced.kind = GemmKind::kFp8_1D2D;
  forced.m = 128, forced.n = 2112, forced.k = 7168;
  forced.options.block_m = 64, forced.options.block_n = 128, forced.options.split_k = 4;
  run_and_check(fake, forced);
}

TEST_CASE("GEMM early exits: m = 0 launches nothing, k = 0 launches only D := beta * C") {
  FakeDriver fake(sizeof(Sm90GemmParams));
  Problem empty;
  empty.m = 0, empty.n = 256, empty.k = 512;
  run_and_check(fake, empty);
  Problem no_k;
  no_k.m = 64, no_k.n = 256, no_k.k = 0;
  no_k.c_mode = Problem::kSeparateC;
  no_k.beta = 0.5f;
  run_and_check(fake, no_k);
}

TEST_CASE("a repeated GEMM call reuses its TMA encodings; a changed operand re-encodes only that map") {
  FakeDriver fake(sizeof(Sm90GemmParams));
  dg_stream* stream = nullptr;
  REQUIRE(dg_stream_create(&stream, 0, nullptr, DG_STREAM_CREATE, nullptr) == DG_SUCCESS);
  Tensor a(fake_address(11), DG_DTYPE_BFLOAT16, {256, 512});
  Tensor b(fake_address(12), DG_DTYPE_BFLOAT16, {384, 512});
  Tensor d(fake_address(13), DG_DTYPE_BFLOAT16, {256, 384});
  REQUIRE(dg_bf16_gemm_nt(stream, a.t, b.t, d.t, nullptr, nullptr) == DG_SUCCESS);
  const uint64_t first = fake.counters().encodes;
  for (int i = 0; i < 3; ++i) REQUIRE(dg_bf16_gemm_nt(stream, a.t, b.t, d.t, nullptr, nullptr) == DG_SUCCESS);
  CHECK(fake.counters().encodes == first);
  REQUIRE(dg_tensor_set_data(a.t, fake_address(14)) == DG_SUCCESS);
  REQUIRE(dg_bf16_gemm_nt(stream, a.t, b.t, d.t, nullptr, nullptr) == DG_SUCCESS);
  CHECK(fake.counters().encodes == first + 1);
  std::vector<Launch> launches = fake.take();
  REQUIRE(launches.size() == 5);
  Sm90GemmParams last;
  std::memcpy(&last, launches.back().params.data(), sizeof(last));
  CHECK(map_of(last.tma_a).address == reinterpret_cast<uintptr_t>(fake_address(14)));
  CHECK(map_of(last.tma_b).address == reinterpret_cast<uintptr_t>(fake_address(12)));
  dg_stream_destroy(stream);
}

TEST_CASE("FP8 GEMMs transpose MN-major operands into the workspace, then read the K-major copies") {
  FakeDriver fake(sizeof(Sm90GemmParams));
  for (int layout : {DG_GEMM_LAYOUT_NN, DG_GEMM_LAYOUT_TN, DG_GEMM_LAYOUT_TT}) {
    Problem p;  // tails in M, N and K; a separate C (pre-pass first)
    p.kind = GemmKind::kFp8_1D2D;
    p.m = 77, p.n = 336, p.k = 400;
    p.a_t = layout == DG_GEMM_LAYOUT_TN || layout == DG_GEMM_LAYOUT_TT;
    p.b_t = layout == DG_GEMM_LAYOUT_NN || layout == DG_GEMM_LAYOUT_TN;
    p.c_mode = Problem::kSeparateC;
    p.beta = 2.0f;
    run_and_check(fake, p);
    p.as_nt = true;  // the nt entry point on MN-major views
    run_and_check(fake, p);
  }
  Problem wgrad;  // the weight gradient as DeepSeek runs it: tn, 1D1D, FP32 += (C aliased to D)
  wgrad.kind = GemmKind::kFp8_1D1D;
  wgrad.m = 2112, wgrad.n = 4096, wgrad.k = 7168;
  wgrad.a_t = wgrad.b_t = true;
  wgrad.d_dtype = DG_DTYPE_FLOAT32;
  wgrad.c_mode = Problem::kAliasedC;
  run_and_check(fake, wgrad);
  Problem big;  // nn, several tiles per transpose block
  big.kind = GemmKind::kFp8_1D2D;
  big.m = 4096, big.n = 576, big.k = 7168;
  big.b_t = true;
  run_and_check(fake, big);
  Problem one_row;  // tn with M = 1: a's one row, padded, is not contiguous along K and is copied too
  one_row.kind = GemmKind::kFp8_1D2D;
  one_row.m = 1, one_row.n = 576, one_row.k = 7168;
  one_row.a_t = one_row.b_t = true;
  run_and_check(fake, one_row);
}

TEST_CASE("FP8 GEMMs with MN-major operands and no usable workspace fail naming it, before any launch") {
  FakeDriver fake(sizeof(Sm90GemmParams));
  dg_stream* stream = nullptr;
  REQUIRE(dg_stream_create(&stream, 0, nullptr, DG_STREAM_CREATE, nullptr) == DG_SUCCESS);
  const int64_t m = 77, n = 336, k = 400;
  Tensor a(fake_address(1), DG_DTYPE_FLOAT8_E4M3, {m, k}, {k, 1});
  Tensor b(fake_address(2), DG_DTYPE_FLOAT8_E4M3, {k, n}, {n, 1});  // nn: MN-major
  Tensor b_nt(fake_address(2), DG_DTYPE_FLOAT8_E4M3, {n, k}, {k, 1});
  Tensor d(fake_address(3), DG_DTYPE_BFLOAT16, {m, n}, {n, 1});
  Tensor c(fake_address(4), DG_DTYPE_BFLOAT16, {m, n}, {n, 1});
  Tensor sfa(fake_address(5), DG_DTYPE_FLOAT32, {m, 4}, {1, 80});
  Tensor sfb(fake_address(6), DG_DTYPE_FLOAT32, {4, 3}, {1, 4});
  Tensor sfb_nt(fake_address(6), DG_DTYPE_FLOAT32, {3, 4}, {4, 1});
  auto message = [] { return std::string(dg_last_error()); };
  size_t need = 0;
  REQUIRE(dg_fp8_gemm_workspace_size(DG_GEMM_LAYOUT_NN, m, n, k, &need) == DG_SUCCESS);
  CHECK(need == 134400);

  CHECK(dg_fp8_gemm_nn(stream, a.t, sfa.t, b.t, sfb.t, d.t, nullptr, nullptr) == DG_ERROR_UNSUPPORTED);
  CHECK(message().rfind("b: ", 0) == 0);
  CHECK(message().find("134400 bytes") != std::string::npos);
  CHECK(message().find("dg_fp8_gemm_workspace_size") != std::string::npos);
  dg_gemm_options o = DG_GEMM_OPTIONS_INIT;
  o.workspace = fake_address(7);
  o.workspace_size = need - 1;
  CHECK(dg_fp8_gemm_nn(stream, a.t, sfa.t, b.t, sfb.t, d.t, nullptr, &o) == DG_ERROR_INVALID_ARGUMENT);
  CHECK(message().rfind("options.workspace_size: 134399 bytes", 0) == 0);
  CHECK(message().find("needs 134400 for the K-major copy of b") != std::string::npos);
  o.workspace = static_cast<char*>(fake_address(7)) + 128;
  o.workspace_size = need;
  CHECK(dg_fp8_gemm_nn(stream, a.t, sfa.t, b.t, sfb.t, d.t, nullptr, &o) == DG_ERROR_INVALID_ARGUMENT);
  CHECK(message().rfind("options.workspace: ", 0) == 0);
  CHECK(message().find("not 256-byte aligned") != std::string::npos);
  CHECK(fake.take().empty());

  // Calls that need no copy ignore the workspace, however unusable.
  o.beta = 2.0f;
  REQUIRE_MESSAGE(dg_fp8_gemm_nt(stream, a.t, sfa.t, b_nt.t, sfb_nt.t, d.t, c.t, &o) == DG_SUCCESS, message());
  std::vector<Launch> launches = fake.take();
  REQUIRE(launches.size() == 2);  // pre-pass, GEMM
  CHECK(launches[0].kernel.rfind("dg_gemm_scale_", 0) == 0);
  CHECK(launches[1].kernel.rfind("dg_sm90_fp8", 0) == 0);
  Tensor a16(fake_address(1), DG_DTYPE_BFLOAT16, {129, 264}, {264, 1});
  Tensor b16(fake_address(2), DG_DTYPE_BFLOAT16, {264, 336}, {336, 1});
  Tensor d16(fake_address(3), DG_DTYPE_BFLOAT16, {129, 336}, {336, 1});
  o.beta = 1.0f;
  REQUIRE_MESSAGE(dg_bf16_gemm_nn(stream, a16.t, b16.t, d16.t, nullptr, &o) == DG_SUCCESS, message());
  launches = fake.take();
  REQUIRE(launches.size() == 1);
  CHECK(launches[0].kernel.rfind("dg_sm90_bf16", 0) == 0);
  dg_stream_destroy(stream);
}

TEST_CASE("dg_gemm_prepare: every FP8 layout loads all its call needs, the transpose included, and no more") {
  FakeDriver fake(sizeof(Sm90GemmParams));
  dg_stream* stream = nullptr;
  REQUIRE(dg_stream_create(&stream, 0, nullptr, DG_STREAM_CREATE, nullptr) == DG_SUCCESS);
  // Kernels each layout asks the JIT for (whether compiled, loaded or already in memory): the GEMM
  // and the pre-pass, plus one transpose per MN-major operand.
  auto requests = [] {
    int64_t compiled = 0, from_disk = 0, hits = 0;
    REQUIRE(dg_jit_get_stats(&compiled, &from_disk, &hits) == DG_SUCCESS);
    return compiled + from_disk + hits;
  };
  int64_t asked[4] = {};
  for (int32_t layout = DG_GEMM_LAYOUT_NT; layout <= DG_GEMM_LAYOUT_TT; ++layout) {
    const int64_t before = requests();
    REQUIRE_MESSAGE(dg_gemm_prepare(stream, DG_DTYPE_FLOAT8_E4M3, layout, 77, 336, 400, DG_DTYPE_BFLOAT16, 1,
                                    nullptr) == DG_SUCCESS,
                    dg_last_error());
    asked[layout] = requests() - before;
  }
  CHECK(asked[DG_GEMM_LAYOUT_NT] == 2);
  CHECK(asked[DG_GEMM_LAYOUT_NN] == 3);
  CHECK(asked[DG_GEMM_LAYOUT_TT] == 3);
  CHECK(asked[DG_GEMM_LAYOUT_TN] == 4);
  // Without a C term no call needs the pre-pass: the GEMM alone is asked for.
  const int64_t before_no_c = requests();
  REQUIRE_MESSAGE(dg_gemm_prepare(stream, DG_DTYPE_FLOAT8_E4M3, DG_GEMM_LAYOUT_NT, 77, 336, 400, DG_DTYPE_BFLOAT16, 0,
                                  nullptr) == DG_SUCCESS,
                  dg_last_error());
  CHECK(requests() - before_no_c == 1);
  CHECK(fake.take().empty());
  int64_t compiled = 0, from_disk = 0;
  REQUIRE(dg_jit_get_stats(&compiled, &from_disk, nullptr) == DG_SUCCESS);
  // The matching tn call (warm: it could be captured in a CUDA graph) loads nothing more.
  const int64_t m = 77, n = 336, k = 400;
  char* const ws = static_cast<char*>(fake_address(7));
  Tensor a(fake_address(1), DG_DTYPE_FLOAT8_E4M3, {k, m}, {80, 1});
  Tensor b(fake_address(2), DG_DTYPE_FLOAT8_E4M3, {k, n}, {n, 1});
  Tensor d(fake_address(3), DG_DTYPE_BFLOAT16, {m, n}, {n, 1});
  Tensor c(fake_address(4), DG_DTYPE_BFLOAT16, {m, n}, {n, 1});
  Tensor sfa(fake_address(5), DG_DTYPE_FLOAT32, {4, m}, {80, 1});
  Tensor sfb(fake_address(6), DG_DTYPE_FLOAT32, {4, 3}, {1, 4});
  dg_gemm_options o = DG_GEMM_OPTIONS_INIT;
  o.beta = 0.5f;
  REQUIRE(dg_fp8_gemm_workspace_size(DG_GEMM_LAYOUT_TN, m, n, k, &o.workspace_size) == DG_SUCCESS);
  o.workspace = ws;
  REQUIRE_MESSAGE(dg_fp8_gemm_tn(stream, a.t, sfa.t, b.t, sfb.t, d.t, c.t, &o) == DG_SUCCESS, dg_last_error());
  int64_t compiled_after = 0, from_disk_after = 0;
  REQUIRE(dg_jit_get_stats(&compiled_after, &from_disk_after, nullptr) == DG_SUCCESS);
  CHECK(compiled_after == compiled);
  CHECK(from_disk_after == from_disk);
  const std::vector<Launch> launches = fake.take();
  REQUIRE(launches.size() == 4);  // pre-pass, a's copy, b's copy, GEMM
  CHECK(launches[1].kernel == dg::ops::transpose_kernel_spec().kernel_name);
  CHECK(launches[2].kernel == dg::ops::transpose_kernel_spec().kernel_name);
  dg_stream_destroy(stream);
}
