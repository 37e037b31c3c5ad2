// Renders and NVRTC-compiles, for sm_90a, every SM90 GEMM configuration the heuristic picks for the
// test and benchmark shapes (132 SMs, as an H100), plus the elementwise pre-pass kernels. No GPU.
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <future>
#include <numeric>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "dg.h"
#include "jit/compiler.h"
#include "ops/gemm.h"
#include "ops/gemm_cost_model.h"
#include "ops/skinny_gemm.h"
#include "runtime/config.h"
#include "ptxas.h"

namespace {

using dg::ops::GemmKind;
using dg::ops::GemmShape;
using dg::ops::GemmType;
using dg::ops::Major;

std::vector<GemmShape> gemm_shapes() {
  std::vector<GemmShape> out;
  auto add = [&](GemmKind kind, int64_t m, int64_t n, int64_t k, Major ma, Major mb, dg_dtype d, bool acc) {
    GemmShape s;
    s.kind = kind, s.m = m, s.n = n, s.k = k, s.major_a = ma, s.major_b = mb, s.d_dtype = d, s.accumulate = acc;
    out.push_back(s);
  };
  const int64_t nk[7][2] = {{2112, 7168}, {576, 7168}, {24576, 1536}, {32768, 512},
                            {7168, 16384}, {4096, 7168}, {7168, 2048}};
  // The dense benchmark suites: forward M in {1, 128, 4096}, BF16 and FP8 1D2D.
  for (int64_t m : {1, 128, 4096})
    for (auto& p : nk) {
      add(GemmKind::kBf16, m, p[0], p[1], Major::kK, Major::kK, DG_DTYPE_BFLOAT16, false);
      add(GemmKind::kFp8_1D2D, m, p[0], p[1], Major::kK, Major::kK, DG_DTYPE_BFLOAT16, false);
    }
  for (auto& p : nk) {
    // Backward: dgrad (B MN-major for BF16), wgrad (both MN-major, FP32 += for BF16; 1D1D for FP8).
    add(GemmKind::kBf16, 4096, p[1], p[0], Major::kK, Major::kMN, DG_DTYPE_BFLOAT16, false);
    add(GemmKind::kBf16, p[0], 4096, p[1], Major::kMN, Major::kMN, DG_DTYPE_FLOAT32, true);
    add(GemmKind::kFp8_1D2D, 4096, p[1], p[0], Major::kK, Major::kK, DG_DTYPE_BFLOAT16, false);
    add(GemmKind::kFp8_1D1D, p[0], 4096, p[1], Major::kK, Major::kK, DG_DTYPE_FLOAT32, true);
  }
  for (int64_t n : {256, 129280}) add(GemmKind::kBf16, 4096, n, 7168, Major::kK, Major::kK, DG_DTYPE_FLOAT32, false);
  // tests/gpu/test_gemm.cpp: tails, every layout, both outputs, with and without C.
  for (int64_t m : {1, 17, 128, 129, 4096})
    for (int lay = 0; lay < 4; ++lay)
      for (dg_dtype d : {DG_DTYPE_BFLOAT16, DG_DTYPE_FLOAT32})
        for (bool acc : {false, true}) {
          const Major ma = lay >= 2 ? Major::kMN : Major::kK, mb = (lay == 1 || lay == 2) ? Major::kMN : Major::kK;
          add(GemmKind::kBf16, m, 336, 264, ma, mb, d, acc);
          if (lay == 0) {
            add(GemmKind::kFp8_1D2D, m, 336, 400, ma, mb, d, acc);
            if (d == DG_DTYPE_FLOAT32) add(GemmKind::kFp8_1D1D, m, 336, 400, ma, mb, d, acc);
          }
        }
  // tests/gpu/test_gemm.cpp: FP8 operands copied K-major (nn, tn, tt): K tails, the weight gradient,
  // the CUDA-graph case.
  for (int64_t k : {200, 72}) add(GemmKind::kFp8_1D2D, 77, 40, k, Major::kK, Major::kK, DG_DTYPE_BFLOAT16, false);
  add(GemmKind::kFp8_1D1D, 2112, 1024, 4096, Major::kK, Major::kK, DG_DTYPE_FLOAT32, true);
  add(GemmKind::kFp8_1D1D, 256, 200, 1000, Major::kK, Major::kK, DG_DTYPE_FLOAT32, true);
  // tests/gpu/test_grouped_gemm.cpp: M-grouped GEMMs. Contiguous with per-row indices plans for the
  // rows of A, so every M that the drawn group sizes ([0.7, 1.3] x expected, one group empty, each
  // padded to 128) can add up to is covered; psum and masked plan for expected_m.
  auto add_grouped = [&](GemmKind kind, GemmType type, int64_t g, int64_t m, int64_t n, int64_t k, int64_t em,
                         Major mb) {
    GemmShape s;
    s.kind = kind, s.type = type, s.num_groups = g, s.m = m, s.n = n, s.k = k, s.expected_m = em;
    s.major_a = Major::kK, s.major_b = mb, s.d_dtype = DG_DTYPE_BFLOAT16;
    out.push_back(s);
  };
  const int64_t moe_nk[3][2] = {{4096, 7168}, {7168, 2048}, {6144, 7168}};
  const int64_t contiguous[3][2] = {{4, 8192}, {8, 4096}, {32, 256}};
  const int64_t masked[6][2] = {{1, 1024}, {2, 512}, {4, 256}, {32, 192}, {6, 1024}, {32, 20}};
  for (auto& p : moe_nk)
    for (GemmKind kind : {GemmKind::kBf16, GemmKind::kFp8_1D2D})
      for (Major mb : {Major::kK, Major::kMN}) {
        if (kind != GemmKind::kBf16 && mb == Major::kMN) continue;
        for (auto& c : contiguous) {
          const int64_t lo = (c[0] - 1) * (c[1] * 7 / 10), hi = (c[0] - 1) * ((c[1] * 13 / 10 + 127) / 128 * 128);
          for (int64_t m = lo / 128 * 128; m <= hi; m += 128)
            add_grouped(kind, GemmType::kMGroupedContiguous, c[0], m, p[0], p[1], m / c[0], mb);
          add_grouped(kind, GemmType::kMGroupedContiguousPsum, c[0], c[0] * c[1], p[0], p[1], c[1], mb);
        }
        if (mb == Major::kK)
          for (auto& c : masked) add_grouped(kind, GemmType::kMGroupedMasked, c[0], 4096, p[0], p[1], c[1] * 6 / 5, mb);
      }
  for (GemmKind kind : {GemmKind::kBf16, GemmKind::kFp8_1D2D}) {
    // Out-of-range group data, the captured masked call.
    add_grouped(kind, GemmType::kMGroupedContiguous, 3, 512, 256, 512, 512 / 3, Major::kK);
    add_grouped(kind, GemmType::kMGroupedContiguousPsum, 3, 384, 256, 512, 128, Major::kK);
    add_grouped(kind, GemmType::kMGroupedMasked, 3, 192, 256, 512, 64, Major::kK);
    add_grouped(kind, GemmType::kMGroupedMasked, 6, 512, 1024, 1024, 200, Major::kK);
  }
  // tests/gpu/test_k_grouped_gemm.cpp: K-grouped GEMMs plan for the mean K of the non-empty groups
  // (aligned to 128), so every mean the drawn K ([0.7, 1.3] x expected, one group empty) can take is
  // covered; FP8 (nt, and tn through K-major copies) and BF16 tn, with and without C.
  auto add_k_grouped = [&](GemmKind kind, int64_t live, int64_t m, int64_t n, int64_t k, bool acc) {
    GemmShape s;
    s.kind = kind, s.type = GemmType::kKGrouped, s.num_groups = live, s.m = m, s.n = n, s.k = k;
    s.major_a = s.major_b = kind == GemmKind::kBf16 ? Major::kMN : Major::kK;
    s.d_dtype = DG_DTYPE_FLOAT32, s.accumulate = acc;
    out.push_back(s);
  };
  const int64_t k_grouped[6][4] = {{4, 4096, 7168, 8192}, {4, 7168, 2048, 8192}, {8, 4096, 7168, 4096},
                                   {8, 7168, 2048, 4096}, {16, 4096, 7168, 2048}, {16, 7168, 2048, 2048}};
  for (auto& c : k_grouped)
    for (int64_t k = (c[3] * 7 / 10) / 128 * 128; k <= (c[3] * 13 / 10 + 127) / 128 * 128; k += 128)
      for (GemmKind kind : {GemmKind::kBf16, GemmKind::kFp8_1D1D})
        for (bool acc : {false, true}) add_k_grouped(kind, c[0] - 1, c[1], c[2], k, acc);
  // 40 groups of 128-512 K (34 non-empty) with M and N tails.
  for (int64_t k = 128; k <= 512; k += 128)
    for (GemmKind kind : {GemmKind::kBf16, GemmKind::kFp8_1D1D})
      for (bool acc : {false, true}) add_k_grouped(kind, 34, 208, 144, k, acc);
  return out;
}

using dg::test::parse_ptxas;
using dg::test::PtxasInfo;

// nvdisasm, for reading a kernel's SASS: $DG_NVDISASM, else the CUDA toolkit's; empty when absent
// (it is not part of every toolkit install; `pip install nvidia-cuda-nvdisasm` provides one).
std::string nvdisasm_path() {
  const char* env = std::getenv("DG_NVDISASM");
  for (const char* p : {env, "/usr/local/cuda/bin/nvdisasm"}) {
    if (p == nullptr || *p == '\0') continue;
    if (std::FILE* f = std::fopen(p, "rb")) {
      std::fclose(f);
      return p;
    }
  }
  return {};
}

// R2UR instructions in a cubin's SASS: values moved from vector to uniform registers. A GEMM K loop
// whose pipeline stage ptxas keeps in vector registers builds every WGMMA descriptor per thread and
// moves it with R2UR before the issue (a masked split-tail kernel did, and ran 20-28% slower:
// 205 R2UR against 19). -1 without nvdisasm, -2 when it fails. No doctest assertions: it runs beside
// the compiles, on another thread (nvdisasm takes about a second per kernel).
int count_r2ur(const std::vector<char>& cubin) {
  static const std::string tool = nvdisasm_path();
  if (tool.empty()) return -1;
  char path[] = "/tmp/dg-sass-XXXXXX";
  const int fd = mkstemp(path);
  if (fd < 0) return -2;
  std::FILE* f = fdopen(fd, "wb");
  const bool written = f != nullptr && std::fwrite(cubin.data(), 1, cubin.size(), f) == cubin.size();
  if (f != nullptr) std::fclose(f);
  int count = -2;
  if (std::FILE* sass = written ? popen((tool + " -c " + path + " 2>/dev/null").c_str(), "r") : nullptr) {
    count = 0;
    char line[1024];
    while (std::fgets(line, sizeof line, sass))
      if (std::strstr(line, " R2UR ") != nullptr) ++count;
    if (pclose(sass) != 0) count = -2;
  }
  std::remove(path);
  return count;
}

// An upper bound for the R2UR of an SM90 GEMM kernel: 8-20 where the K loop's state stays uniform,
// 90-205 where it does not (count_r2ur).
constexpr int kMaxR2ur = 48;


// Compiles `spec` for sm_90a and checks what every GEMM kernel must satisfy: it compiles, and ptxas
// reports registers, no stack frame, no spills and (where it has any) WGMMAs left asynchronous.
// Returns ptxas's report.
PtxasInfo compile_clean(const dg::jit::KernelSpec& spec, const dg::Config& config, std::vector<char>* cubin = nullptr) {
  dg::jit::CompileResult r;
  const dg_status st = dg::jit::compile(spec, "sm_90a", config, &r);
  const std::string err = dg_last_error();
  INFO(spec.kernel_name << ": " << err);
  CHECK(st == DG_SUCCESS);
  CHECK(!r.cubin.empty());
  PtxasInfo info = parse_ptxas(r.log);
  if (!r.ptx.empty()) {
    info.mbarrier_inits = 0;
    for (size_t at = r.ptx.find("mbarrier.init"); at != std::string::npos; at = r.ptx.find("mbarrier.init", at + 1))
      ++info.mbarrier_inits;
  }
  if (cubin != nullptr) *cubin = r.cubin;
  INFO("ptxas log:\n" << r.log);
  dg::test::check_no_local_memory(info);
  CHECK_FALSE(info.wgmma_serialized);
  return info;
}

}  // namespace

// Also the resources of each: no local-memory spills, WGMMAs left asynchronous by ptxas, and a
// table of registers and shared memory per config in the test output.
TEST_CASE("sm90 gemm: every heuristic config compiles for sm_90a without spills or serialized WGMMAs") {
  dg::Config config = dg::default_config();
  config.cache_dir = "";
  config.ptxas_verbose = true;
  config.dump_ptx = true;
  const int32_t log_level = dg_get_log_level();
  dg_set_log_level(DG_LOG_ERROR);  // the ptxas report is parsed here, not printed per kernel
  std::set<std::string> seen;
  int compiled = 0, max_r2ur = -1;
  double worst = 0;
  std::string table;
  std::vector<std::pair<std::string, std::future<int>>> r2ur;
  // The Hopper calibration's choices, and the H200's count-adaptive kernels (masked BF16 of few
  // groups: up to three tile widths in one kernel).
  std::vector<std::pair<GemmShape, const dg::ops::Sm90CostModel*>> plans;
  for (const GemmShape& s : gemm_shapes()) {
    plans.emplace_back(s, &dg::ops::hopper_cost_model());
    if (s.type == GemmType::kMGroupedMasked && s.kind == GemmKind::kBf16 && s.num_groups <= 8)
      plans.emplace_back(s, &dg::ops::sm90_cost_model("NVIDIA H200"));
  }
  for (const auto& [s, model] : plans) {
    dg::ops::GemmConfig c;
    REQUIRE(dg::ops::choose_gemm_config(s, 132, {}, *model, &c) == DG_SUCCESS);
    CHECK(c.smem_bytes <= 232448u);
    const dg::jit::KernelSpec spec = dg::ops::gemm_kernel_spec(s, c);
    if (!seen.insert(spec.kernel_name).second) continue;
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<char> cubin;
    const PtxasInfo info = compile_clean(spec, config, &cubin);
    r2ur.emplace_back(spec.kernel_name, std::async(std::launch::async, count_r2ur, std::move(cubin)));
    // Every pipeline stage has a full and an empty barrier, initialised by one thread before the
    // warp roles split: a kernel without them faults on its first wait (an unbraced `if constexpr`
    // once swallowed the init loop of every non-K-grouped kernel, and only the GPU noticed).
    CHECK_MESSAGE(info.mbarrier_inits >= 2, spec.kernel_name << ": " << info.mbarrier_inits << " mbarrier.init in the PTX");
    const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    worst = std::max(worst, sec);
    char row[256];
    std::snprintf(row, sizeof(row), "  %-72s %4d regs %7u B smem %5.2f s\n", spec.kernel_name.c_str(), info.registers,
                  c.smem_bytes, sec);
    table += row;
    ++compiled;
  }
  dg_set_log_level(log_level);
  // The K loops keep their pipeline state in uniform registers (count_r2ur).
  for (auto& [name, count] : r2ur) {
    const int n = count.get();
    CHECK_MESSAGE(n != -2, name << ": nvdisasm failed");
    CHECK_MESSAGE(n <= kMaxR2ur, name << ": " << n << " R2UR in the SASS");
    max_r2ur = std::max(max_r2ur, n);
  }
  std::printf("sm90 gemm: %d distinct configs compiled, slowest %.2f s, at most %d R2UR (-1: no nvdisasm; registers: "
              "the launch bound; the consumer warp-groups raise theirs with setmaxnreg)\n%s",
              compiled, worst, max_r2ur, table.c_str());
  if (max_r2ur == -1)
    std::printf("NOTE: nvdisasm not found: the SASS checks (R2UR counts) were skipped, the rest passed; set "
                "DG_NVDISASM or `pip install nvidia-cuda-nvdisasm` to run them\n");
}

// The skinny kernel: every template instance its heuristic can produce (token tiles 1-4, both
// unroll depths, every split, each recipe, output and C), without spills.
TEST_CASE("skinny gemm: every kernel the heuristic can pick compiles for sm_90a without spills") {
  dg::Config config = dg::default_config();
  config.cache_dir = "";
  config.ptxas_verbose = true;
  const int32_t log_level = dg_get_log_level();
  dg_set_log_level(DG_LOG_ERROR);
  std::set<std::string> seen;
  std::string table;
  auto add = [&](const GemmShape& s, const dg::ops::GemmOverride& o) {
    dg::ops::SkinnyConfig c;
    REQUIRE(dg::ops::choose_skinny_config(s, 132, o, &c) == DG_SUCCESS);
    const dg::jit::KernelSpec spec = dg::ops::skinny_kernel_spec(s, c);
    if (!seen.insert(spec.kernel_name).second) return;
    const PtxasInfo info = compile_clean(spec, config);
    char row[160];
    std::snprintf(row, sizeof(row), "  %-56s %4d regs\n", spec.kernel_name.c_str(), info.registers);
    table += row;
  };
  for (GemmKind kind : {GemmKind::kBf16, GemmKind::kFp8_1D2D, GemmKind::kFp8_1D1D})
    for (dg_dtype d : {DG_DTYPE_BFLOAT16, DG_DTYPE_FLOAT32})
      for (bool acc : {false, true}) {
        if (kind == GemmKind::kFp8_1D1D && d != DG_DTYPE_FLOAT32) continue;
        for (int64_t m : {1, 9, 17, 32}) {
          GemmShape s;
          s.kind = kind, s.m = m, s.n = 2112, s.k = 7168, s.d_dtype = d, s.accumulate = acc;
          REQUIRE(dg::ops::skinny_ineligible(s) == nullptr);
          add(s, {});
          if (d == DG_DTYPE_BFLOAT16 && !acc) {
            for (int split : {1, 2, 4, 8}) {
              dg::ops::GemmOverride o;
              o.split_k = split;
              add(s, o);
            }
          }
        }
      }
  dg_set_log_level(log_level);
  std::printf("skinny gemm: %zu kernels compiled\n%s", seen.size(), table.c_str());
}

TEST_CASE("skinny gemm: eligibility, the AUTO rule and overrides") {
  const dg::ops::Sm90CostModel& hopper = dg::ops::hopper_cost_model();
  GemmShape s;
  s.kind = GemmKind::kBf16, s.m = 1, s.n = 7168, s.k = 2048;
  bool skinny = false;
  dg::ops::GemmOverride o;
  REQUIRE(dg::ops::use_skinny(s, o, false, hopper, &skinny) == DG_SUCCESS);
  CHECK(skinny);
  REQUIRE(dg::ops::use_skinny(s, o, true, hopper, &skinny) == DG_SUCCESS);  // an SM cap keeps the tiled kernel
  CHECK(!skinny);
  o.block_n = 128;  // a tiled option
  REQUIRE(dg::ops::use_skinny(s, o, false, hopper, &skinny) == DG_SUCCESS);
  CHECK(!skinny);
  o.kernel = DG_GEMM_KERNEL_SKINNY;
  CHECK(dg::ops::use_skinny(s, o, false, hopper, &skinny) == DG_ERROR_INVALID_ARGUMENT);
  o = {};
  o.kernel = DG_GEMM_KERNEL_TILED;
  REQUIRE(dg::ops::use_skinny(s, o, false, hopper, &skinny) == DG_SUCCESS);
  CHECK(!skinny);
  s.m = 64;
  o.kernel = DG_GEMM_KERNEL_SKINNY;
  CHECK(dg::ops::use_skinny(s, o, false, hopper, &skinny) == DG_ERROR_UNSUPPORTED);
  CHECK(std::string(dg_last_error()).find("M <= 32") != std::string::npos);
  s.m = 8, s.k = 2044;  // rows of 4088 bytes
  CHECK(dg::ops::use_skinny(s, o, false, hopper, &skinny) == DG_ERROR_UNSUPPORTED);
  CHECK(std::string(dg_last_error()).find("16 bytes") != std::string::npos);
  s.k = 2048, s.major_b = Major::kMN;
  CHECK(dg::ops::use_skinny(s, o, false, hopper, &skinny) == DG_ERROR_UNSUPPORTED);
  o = {};
  REQUIRE(dg::ops::use_skinny(s, o, false, hopper, &skinny) == DG_SUCCESS);
  CHECK(!skinny);

  // The calibration sets the AUTO range: BF16 at M 12 runs skinny on the Hopper calibration, tiled
  // (32-row tiles) on the H200's; FP8 stops at M 8 on both.
  s.major_b = Major::kK, s.m = 12, s.n = 4096, s.k = 7168;
  const dg::ops::Sm90CostModel& h200 = dg::ops::sm90_cost_model("NVIDIA H200");
  REQUIRE(dg::ops::use_skinny(s, o, false, hopper, &skinny) == DG_SUCCESS);
  CHECK(skinny);
  REQUIRE(dg::ops::use_skinny(s, o, false, h200, &skinny) == DG_SUCCESS);
  CHECK(!skinny);
  s.m = 8;
  REQUIRE(dg::ops::use_skinny(s, o, false, h200, &skinny) == DG_SUCCESS);
  CHECK(skinny);
  s.kind = GemmKind::kFp8_1D2D;
  REQUIRE(dg::ops::use_skinny(s, o, false, h200, &skinny) == DG_SUCCESS);
  CHECK(skinny);
  s.m = 12;
  REQUIRE(dg::ops::use_skinny(s, o, false, hopper, &skinny) == DG_SUCCESS);
  CHECK(!skinny);
  s.kind = GemmKind::kBf16;

  // The split: CTAs fit on the GPU at once and every warp keeps two units of each row.
  s.major_b = Major::kK, s.m = 1;
  dg::ops::SkinnyConfig c;
  s.n = 576, s.k = 7168;  // 36 tiles, 112 units
  REQUIRE(dg::ops::choose_skinny_config(s, 132, {}, &c) == DG_SUCCESS);
  CHECK(c.split == 8);
  CHECK(c.grid == 36 * 8);
  s.n = 7168, s.k = 2048;  // 448 tiles
  REQUIRE(dg::ops::choose_skinny_config(s, 132, {}, &c) == DG_SUCCESS);
  CHECK(c.split == 1);
  o.split_k = 3;
  CHECK(dg::ops::choose_skinny_config(s, 132, o, &c) == DG_ERROR_INVALID_ARGUMENT);
  CHECK(std::string(dg_last_error()).find("options.split_k") != std::string::npos);
  o = {};
  o.stages = 9;
  CHECK(dg::ops::choose_skinny_config(s, 132, o, &c) == DG_ERROR_INVALID_ARGUMENT);
  CHECK(std::string(dg_last_error()).find("options.num_stages") != std::string::npos);
}

TEST_CASE("sm90 gemm: elementwise pre-pass kernels compile") {
  dg::Config config = dg::default_config();
  for (dg_dtype d : {DG_DTYPE_BFLOAT16, DG_DTYPE_FLOAT32})
    for (bool has_c : {false, true}) {
      dg::jit::CompileResult r;
      const auto spec = dg::ops::gemm_scale_kernel_spec(d, has_c);
      const std::string err = dg_last_error();
    INFO(spec.kernel_name << ": " << err);
      CHECK(dg::jit::compile(spec, "sm_90a", config, &r) == DG_SUCCESS);
    }
}

TEST_CASE("sm90 gemm: heuristic rejects illegal overrides by name") {
  GemmShape s;
  s.kind = GemmKind::kFp8_1D2D, s.m = 4096, s.n = 4096, s.k = 4096;
  dg::ops::GemmConfig c;
  dg::ops::GemmOverride o;
  o.block_m = 96;
  CHECK(dg::ops::choose_gemm_config(s, 132, o, &c) == DG_ERROR_INVALID_ARGUMENT);
  CHECK(std::string(dg_last_error()).find("options.block_m") != std::string::npos);
  o = {};
  o.block_n = 176;  // straddles three 128-row SFB blocks
  CHECK(dg::ops::choose_gemm_config(s, 132, o, &c) == DG_ERROR_INVALID_ARGUMENT);
  o = {};
  o.stages = 40;
  CHECK(dg::ops::choose_gemm_config(s, 132, o, &c) == DG_ERROR_INVALID_ARGUMENT);
  o = {};
  o.block_m = 128, o.block_n = 128, o.cluster = 2, o.multicast_a = 0;
  REQUIRE(dg::ops::choose_gemm_config(s, 132, o, &c) == DG_SUCCESS);
  CHECK(c.block_m == 128);
  CHECK(c.block_n == 128);
  CHECK(c.cluster == 2);
  CHECK(!c.multicast_a);
  o = {};
  o.fp8_promotion = 3;
  CHECK(dg::ops::choose_gemm_config(s, 132, o, &c) == DG_ERROR_INVALID_ARGUMENT);
  CHECK(std::string(dg_last_error()).find("options.fp8_promotion") != std::string::npos);
  o = {};
  o.promotion_slices = 3;
  CHECK(dg::ops::choose_gemm_config(s, 132, o, &c) == DG_ERROR_INVALID_ARGUMENT);
  CHECK(std::string(dg_last_error()).find("options.fp8_promotion_slices") != std::string::npos);
  o = {};
  o.block_m = 128, o.block_n = 256, o.fp8_promotion = DG_FP8_PROMOTION_AFTER, o.promotion_slices = 4;
  REQUIRE(dg::ops::choose_gemm_config(s, 132, o, &c) == DG_SUCCESS);
  CHECK(!c.overlap);
  CHECK(c.promote_split == 4);
  o = {};
  o.block_m = 128, o.block_n = 128, o.fp8_promotion = DG_FP8_PROMOTION_AFTER;
  REQUIRE(dg::ops::choose_gemm_config(s, 132, o, &c) == DG_SUCCESS);
  CHECK(!c.overlap);
  o.fp8_promotion = DG_FP8_PROMOTION_OVERLAP;
  REQUIRE(dg::ops::choose_gemm_config(s, 132, o, &c) == DG_SUCCESS);
  CHECK(c.overlap);
  GemmShape b = s;
  b.kind = GemmKind::kBf16;
  CHECK(dg::ops::choose_gemm_config(b, 132, o, &c) == DG_ERROR_INVALID_ARGUMENT);
  CHECK(std::string(dg_last_error()).find("FP8 GEMMs only") != std::string::npos);
  o = {};
  o.split_k = 3;
  CHECK(dg::ops::choose_gemm_config(s, 132, o, &c) == DG_ERROR_INVALID_ARGUMENT);
  CHECK(std::string(dg_last_error()).find("options.split_k") != std::string::npos);
  o.split_k = 2, o.cluster = 2;
  CHECK(dg::ops::choose_gemm_config(s, 132, o, &c) == DG_ERROR_INVALID_ARGUMENT);
  CHECK(std::string(dg_last_error()).find("cluster") != std::string::npos);
  GemmShape tiny = s;
  tiny.k = 128;  // one K block cannot be split
  o = {};
  o.split_k = 2;
  CHECK(dg::ops::choose_gemm_config(tiny, 132, o, &c) == DG_ERROR_INVALID_ARGUMENT);
  CHECK(std::string(dg_last_error()).find("options.split_k: 2 exceeds") != std::string::npos);
  // Masked: the split tail on request (split_k 2: an even grid of CTA pairs; unasked only where the
  // model prices it lower, not here), refused on one SM and on straddling tiles whose SFB boundaries
  // take too many values; contiguous: never.
  GemmShape m = s;
  m.type = GemmType::kMGroupedMasked, m.num_groups = 4, m.m = 1024, m.expected_m = 300;
  REQUIRE(dg::ops::choose_gemm_config(m, 131, {}, &c) == DG_SUCCESS);
  CHECK(c.split_k == 1);
  CHECK(c.grid == 131);
  o = {};
  o.split_k = 2;
  REQUIRE(dg::ops::choose_gemm_config(m, 131, o, &c) == DG_SUCCESS);
  CHECK(c.split_k == 2);
  CHECK(c.grid == 130);
  o.split_k = 2, o.num_sms = 1;
  CHECK(dg::ops::choose_gemm_config(m, 131, o, &c) == DG_ERROR_INVALID_ARGUMENT);
  CHECK(std::string(dg_last_error()).find("needs options.num_sms >= 2") != std::string::npos);
  o = {};
  o.split_k = 2, o.block_n = 144;  // its tiles start at 8 offsets mod 128
  m.n = 144 * 16;
  CHECK(dg::ops::choose_gemm_config(m, 132, o, &c) == DG_ERROR_INVALID_ARGUMENT);
  CHECK(std::string(dg_last_error()).find("split tail needs block_n") != std::string::npos);
  GemmShape cg = s;
  cg.type = GemmType::kMGroupedContiguous, cg.num_groups = 4;
  REQUIRE(dg::ops::choose_gemm_config(cg, 132, {}, &c) == DG_SUCCESS);
  CHECK(c.split_k == 1);
  o = {};
  o.split_k = 2;
  CHECK(dg::ops::choose_gemm_config(cg, 132, o, &c) == DG_ERROR_INVALID_ARGUMENT);
}

// 32-row tiles: the heuristic's from M <= 32 for dense FP8 1D2D and dense BF16 with K-major A (one
// warp-group, no pair or split); forced where the kernel has no such tile, refused by name.
TEST_CASE("sm90 gemm: 32-row tiles only where the kernel has them") {
  GemmShape s;
  s.kind = GemmKind::kFp8_1D2D, s.m = 32, s.n = 4096, s.k = 7168;
  dg::ops::GemmConfig c;
  REQUIRE(dg::ops::choose_gemm_config(s, 132, {}, &c) == DG_SUCCESS);
  CHECK(c.block_m == 32);
  CHECK(c.math_wg == 1);
  GemmShape wide = s;
  wide.m = 33;
  REQUIRE(dg::ops::choose_gemm_config(wide, 132, {}, &c) == DG_SUCCESS);
  CHECK(c.block_m == 64);
  dg::ops::GemmOverride o;
  o.block_m = 32;
  wide.m = 300;  // forced beyond M 32: several 32-row tiles
  REQUIRE(dg::ops::choose_gemm_config(wide, 132, o, &c) == DG_SUCCESS);
  CHECK(c.block_m == 32);
  const auto refused = [&](const GemmShape& shape, const dg::ops::GemmOverride& over, const char* why) {
    CHECK(dg::ops::choose_gemm_config(shape, 132, over, &c) == DG_ERROR_INVALID_ARGUMENT);
    CHECK_MESSAGE(std::string(dg_last_error()).find(why) != std::string::npos, dg_last_error());
  };
  GemmShape bf16 = s;
  bf16.kind = GemmKind::kBf16;
  REQUIRE(dg::ops::choose_gemm_config(bf16, 132, {}, &c) == DG_SUCCESS);
  CHECK(c.block_m == 32);
  CHECK(c.split_k == 1);
  bf16.major_a = Major::kMN;  // an MN-major A box holds 64 rows of M
  refused(bf16, o, "block_m 32 is for dense and per-head FP8");
  GemmShape k1d1d = s;
  k1d1d.kind = GemmKind::kFp8_1D1D, k1d1d.d_dtype = DG_DTYPE_FLOAT32;
  refused(k1d1d, o, "block_m 32 is for dense and per-head FP8");
  GemmShape masked = s;
  masked.type = GemmType::kMGroupedMasked, masked.num_groups = 4, masked.m = 64, masked.expected_m = 20;
  refused(masked, o, "block_m 32 is for dense and per-head FP8");
  GemmShape fused = s;
  fused.epilogue.bias = dg::ops::BiasType::kFp32;
  refused(fused, o, "block_m 32 is for dense and per-head FP8");
  dg::ops::GemmOverride pair = o;
  pair.cluster = 2;
  refused(s, pair, "block_m 32 runs one math warp-group");
  dg::ops::GemmOverride split = o;
  split.split_k = 2;
  refused(s, split, "block_m 32 runs one math warp-group");
}

// The H200 calibration prices BF16 CTA pairs that share B at small M (gemm_cost_model.cpp): it takes
// them where two row blocks cover M and K is long, never for FP8 or short-K shapes, and the Hopper
// calibration never unasked. The pair kernels it picks compile without spills.
TEST_CASE("sm90 gemm: the H200 calibration's BF16 pairs at small M") {
  const dg::ops::Sm90CostModel& h200 = dg::ops::sm90_cost_model("NVIDIA H200");
  const dg::ops::Sm90CostModel& hopper = dg::ops::sm90_cost_model("NVIDIA H100 80GB HBM3");
  CHECK(&hopper == &dg::ops::hopper_cost_model());
  const auto b_pair = [](const GemmShape& s, const dg::ops::Sm90CostModel& model) {
    dg::ops::GemmConfig c;
    REQUIRE(dg::ops::choose_gemm_config(s, 132, {}, model, &c) == DG_SUCCESS);
    return c.cluster == 2 && !c.multicast_a ? c.block_m : 0;
  };
  dg::Config config = dg::default_config();
  config.cache_dir = "";
  config.ptxas_verbose = true;
  GemmShape s;
  s.kind = GemmKind::kBf16, s.m = 128, s.n = 7168, s.k = 16384;
  for (int64_t m : {65, 96, 128}) {
    s.m = m;
    CAPTURE(m);
    CHECK(b_pair(s, h200) == 64);
    CHECK(b_pair(s, hopper) == 0);
  }
  s.m = 128, s.n = 4096, s.k = 7168;
  CHECK(b_pair(s, h200) == 64);
  dg::ops::GemmOverride pair;
  pair.cluster = 2, pair.multicast_a = 0;
  for (Major b : {Major::kK, Major::kMN}) {
    GemmShape any_b = s;
    any_b.major_b = b;
    dg::ops::GemmConfig c;
    REQUIRE(dg::ops::choose_gemm_config(any_b, 132, pair, h200, &c) == DG_SUCCESS);
    compile_clean(dg::ops::gemm_kernel_spec(any_b, c), config);
  }
  s.n = 2112;  // 64x32 tiles: sharing B saves a sixth of the reads, less than a pair costs
  CHECK(b_pair(s, h200) == 0);
  s.n = 7168, s.k = 2048;  // 32 K blocks
  CHECK(b_pair(s, h200) == 0);
  s.m = 64, s.k = 16384;  // one row block
  CHECK(b_pair(s, h200) == 0);
  s.m = 256;  // the large-M model
  CHECK(b_pair(s, h200) == 0);
  s.m = 128, s.kind = GemmKind::kFp8_1D2D;
  CHECK(b_pair(s, h200) == 0);
}

// The H200 calibration prices 1D2D tiles by their SFB boundaries (gemm_cost_model.cpp): at
// 2112 x 7168 it leaves 128x144 (eight boundary values over N, selected per K block) for tiles with
// a K loop per boundary, which ran 3.5-5% faster there; the Hopper calibration is unchanged.
TEST_CASE("sm90 gemm: the H200 calibration's SFB boundary prices") {
  const dg::ops::Sm90CostModel& h200 = dg::ops::sm90_cost_model("NVIDIA H200");
  GemmShape s;
  s.kind = GemmKind::kFp8_1D2D, s.n = 2112, s.k = 7168;
  for (int64_t m : {1024, 2048}) {
    s.m = m;
    CAPTURE(m);
    dg::ops::GemmConfig c;
    REQUIRE(dg::ops::choose_gemm_config(s, 132, {}, h200, &c) == DG_SUCCESS);
    CHECK((128 % c.block_n == 0 || c.sfb_boundaries != 0));
    REQUIRE(dg::ops::choose_gemm_config(s, 132, {}, dg::ops::hopper_cost_model(), &c) == DG_SUCCESS);
    CHECK(c.block_n == 144);
    CHECK(c.sfb_boundaries == 0);
  }
  // Masked prefill, one expert of ~1024 tokens at N 4096: 128x160 (four compiled boundaries, two
  // rounds) ran 6% faster than 128x128 (three rounds); the H200 prices the boundaries' K loops so.
  GemmShape masked = s;
  masked.type = dg::ops::GemmType::kMGroupedMasked, masked.num_groups = 1, masked.m = 4096, masked.expected_m = 1228;
  masked.n = 4096, masked.k = 7168;
  dg::ops::GemmConfig c;
  dg::ops::GemmOverride whole;
  whole.split_k = 1;  // the unsplit tiles (unasked, the split tail wins here: below)
  REQUIRE(dg::ops::choose_gemm_config(masked, 132, whole, h200, &c) == DG_SUCCESS);
  CHECK(c.block_n == 160);
  CHECK(c.sfb_boundaries != 0);
}

// Masked calls take the split tail unasked where the model prices it below the unsplit choice, the
// last round's fill taken per count over the spread around the hint: one or two experts of ~1024
// tokens (few tiles, rounds that depend on the count), not decoding (G 32, ~20 tokens: tiles the
// same with every count) nor an explicit config.
TEST_CASE("sm90 gemm: the masked split tail where the model prices it below the whole last round") {
  const dg::ops::Sm90CostModel& h200 = dg::ops::sm90_cost_model("NVIDIA H200");
  GemmShape s;
  s.type = dg::ops::GemmType::kMGroupedMasked, s.m = 4096, s.n = 4096, s.k = 7168;
  for (const GemmKind kind : {GemmKind::kFp8_1D2D, GemmKind::kBf16}) {
    CAPTURE(static_cast<int>(kind));
    s.kind = kind;
    dg::ops::GemmConfig c;
    for (int64_t g : {1, 2}) {
      s.num_groups = g, s.expected_m = 1228 / g;
      REQUIRE(dg::ops::choose_gemm_config(s, 132, {}, h200, &c) == DG_SUCCESS);
      CHECK(c.split_k == 2);
      CHECK(c.grid % 2 == 0);
      REQUIRE(dg::ops::choose_gemm_config(s, 131, {}, h200, &c) == DG_SUCCESS);
      CHECK(c.grid <= 130);  // an even grid of CTA pairs
    }
    s.num_groups = 32, s.expected_m = 24;
    REQUIRE(dg::ops::choose_gemm_config(s, 132, {}, h200, &c) == DG_SUCCESS);
    CHECK(c.split_k == 1);
    s.num_groups = 1, s.expected_m = 1228;
    dg::ops::GemmOverride o;
    o.block_m = 128, o.block_n = 128;
    REQUIRE(dg::ops::choose_gemm_config(s, 132, o, h200, &c) == DG_SUCCESS);
    CHECK(c.split_k == 1);
  }
}

TEST_CASE("sm90 gemm: split-K and epilogue staging choices") {
  dg::ops::GemmConfig c;
  GemmShape s;
  s.kind = GemmKind::kFp8_1D2D, s.m = 1, s.n = 2112, s.k = 7168;
  REQUIRE(dg::ops::choose_gemm_config(s, 132, {}, &c) == DG_SUCCESS);
  CHECK(c.block_m == 64);
  CHECK(c.block_n == 128);
  CHECK(c.split_k == 4);  // 17 tiles x 4 = 68 CTAs; x 8 would pass 112
  CHECK(c.grid == 17 * 4);
  s.n = 576;
  REQUIRE(dg::ops::choose_gemm_config(s, 132, {}, &c) == DG_SUCCESS);
  CHECK(c.split_k == 8);
  s.k = 1536;  // too little K per CTA
  REQUIRE(dg::ops::choose_gemm_config(s, 132, {}, &c) == DG_SUCCESS);
  CHECK(c.split_k == 1);
  s.m = 128, s.k = 7168;  // 2 x 9 tiles of 64x64, x 4 = 72 CTAs
  REQUIRE(dg::ops::choose_gemm_config(s, 132, {}, &c) == DG_SUCCESS);
  CHECK(c.block_n == 64);
  CHECK(c.split_k == 4);
  s.n = 2112;  // 66 tiles: no split
  REQUIRE(dg::ops::choose_gemm_config(s, 132, {}, &c) == DG_SUCCESS);
  CHECK(c.split_k == 1);
  s.m = 4096, s.n = 7168, s.k = 16384;  // 128x256 fits 4 stages beside two rotating strips, 3 beside the tile
  dg::ops::GemmOverride o;
  o.block_m = 128, o.block_n = 256, o.cluster = 2;
  REQUIRE(dg::ops::choose_gemm_config(s, 132, o, &c) == DG_SUCCESS);
  CHECK(c.stages == 3);  // FP8 1D2D keeps the whole tile where 3 stages fit (fp8_whole_tile_staging)
  CHECK(c.d_bufs == 0);
  o.stages = 4;  // only beside rotating strips
  REQUIRE(dg::ops::choose_gemm_config(s, 132, o, &c) == DG_SUCCESS);
  CHECK(c.d_bufs == 2);
  CHECK(c.smem_bytes <= 232448u);
  o.stages = 0;
  s.kind = GemmKind::kBf16;  // BF16 takes the fourth stage
  REQUIRE(dg::ops::choose_gemm_config(s, 132, o, &c) == DG_SUCCESS);
  CHECK(c.stages == 4);
  CHECK(c.d_bufs == 2);
  o.stages = 3;  // fits beside the whole tile
  REQUIRE(dg::ops::choose_gemm_config(s, 132, o, &c) == DG_SUCCESS);
  CHECK(c.d_bufs == 0);
  s.kind = GemmKind::kFp8_1D2D, s.d_dtype = DG_DTYPE_FLOAT32, s.accumulate = true;  // the FP32 tile leaves 1 stage
  o = {};
  o.block_m = 256, o.block_n = 128;
  REQUIRE(dg::ops::choose_gemm_config(s, 132, o, &c) == DG_SUCCESS);
  CHECK(c.d_bufs > 0);
  s.d_dtype = DG_DTYPE_BFLOAT16, s.accumulate = false;
  // FP8 128x128: two 64-column strips are the whole tile, so 6 stages need one strip buffer.
  o = {};
  o.block_m = 128, o.block_n = 128, o.stages = 6;
  REQUIRE(dg::ops::choose_gemm_config(s, 132, o, &c) == DG_SUCCESS);
  CHECK(c.d_bufs == 1);
  CHECK(c.smem_bytes <= 232448u);
  o.stages = 5;
  REQUIRE(dg::ops::choose_gemm_config(s, 132, o, &c) == DG_SUCCESS);
  CHECK(c.d_bufs == 0);
  o.stages = 7;
  CHECK(dg::ops::choose_gemm_config(s, 132, o, &c) == DG_ERROR_INVALID_ARGUMENT);
}

// The kernel specialises its K loop on exactly the boundaries the host reports, and takes the last
// candidate without a test: every tile of the problem must find its boundary in the set.
// Masked decoding (G 32, a few rows per expert) streams each expert's weights once, so what
// separates tiles is how often they re-read A: 64x48 and 64x32 tiles (what a hard DRAM floor in the
// cost model left) ran 10-20% behind 64x256 on an H200 (docs/cost_model.md).
TEST_CASE("sm90 gemm: masked decoding takes tiles of at least 128 columns") {
  const int64_t shapes[2][2] = {{4096, 7168}, {7168, 2048}};
  for (GemmKind kind : {GemmKind::kFp8_1D2D, GemmKind::kBf16})
    for (int64_t em : {8, 16, 32, 64})
      for (const auto& nk : shapes) {
        GemmShape s;
        s.kind = kind, s.type = GemmType::kMGroupedMasked, s.num_groups = 32, s.m = 4096;
        s.n = nk[0], s.k = nk[1], s.expected_m = em;
        s.major_a = s.major_b = Major::kK, s.d_dtype = DG_DTYPE_BFLOAT16;
        dg::ops::GemmConfig c;
        REQUIRE(dg::ops::choose_gemm_config(s, 132, {}, &c) == DG_SUCCESS);
        CAPTURE(dg::ops::describe(s, c));
        CHECK(c.block_m == 64);
        CHECK(c.block_n >= 128);
      }
}

TEST_CASE("sm90 gemm: SFB boundary sets cover every tile of the problem") {
  for (int bn = 8; bn <= 256; bn += 8)
    for (int64_t n = 1; n <= 3000; ++n) {
      const uint32_t mask = dg::ops::sfb_boundaries(n, bn);
      if (128 % bn == 0) {
        CHECK(mask == 0);
        continue;
      }
      uint32_t expected = 0;
      for (int64_t n0 = 0; n0 < n; n0 += bn) expected |= 1u << (std::min<int64_t>(128 - n0 % 128, bn) / 8 - 1);
      INFO("block_n " << bn << ", n " << n);
      if (__builtin_popcount(expected) <= 4) CHECK(mask == expected);
      else CHECK(mask == 0);
    }
  CHECK(dg::ops::sfb_boundaries(576, 144) == (1u << 9 | 1u << 11 | 1u << 13 | 1u << 15));  // 80, 96, 112, 128
  CHECK(dg::ops::sfb_boundaries(1040, 144) == 0);                                        // 8 boundaries
  GemmShape s;
  s.kind = GemmKind::kFp8_1D2D, s.m = 4096, s.n = 576, s.k = 7168;
  dg::ops::GemmConfig c;
  REQUIRE(dg::ops::choose_gemm_config(s, 132, {}, &c) == DG_SUCCESS);
  CHECK(c.sfb_boundaries == dg::ops::sfb_boundaries(s.n, c.block_n));
  s.kind = GemmKind::kBf16;
  REQUIRE(dg::ops::choose_gemm_config(s, 132, {}, &c) == DG_SUCCESS);
  CHECK(c.sfb_boundaries == 0);
}

// The ring-unrolled K loop assumes every tile starts at stage 0: only configs whose tiles all take
// the same whole number of ring turns get it.
TEST_CASE("sm90 gemm: the stage-aligned K loop only where every tile turns the ring whole") {
  GemmShape s;
  s.kind = GemmKind::kFp8_1D2D, s.m = 4096, s.n = 4096, s.k = 7168;  // 56 K blocks
  dg::ops::GemmConfig c;
  for (int stages : {2, 3, 4, 5, 6, 7}) {
    dg::ops::GemmOverride o;
    o.block_m = 128, o.block_n = stages <= 6 ? 128 : 64, o.stages = stages;
    REQUIRE(dg::ops::choose_gemm_config(s, 132, o, &c) == DG_SUCCESS);
    INFO("stages " << stages);
    CHECK(c.stage_aligned == (56 % stages == 0));
  }
  s.k = 7168 - 100;  // a partial last K block still counts as one
  REQUIRE(dg::ops::choose_gemm_config(s, 132, {}, &c) == DG_SUCCESS);
  CHECK(c.stage_aligned == (56 % c.stages == 0 && c.stages <= 8 && c.split_k == 1));
  dg::ops::GemmOverride split;
  split.split_k = 2;
  s.m = 128, s.k = 4096;
  REQUIRE(dg::ops::choose_gemm_config(s, 132, split, &c) == DG_SUCCESS);
  CHECK(!c.stage_aligned);  // each CTA of a split tile takes part of the K blocks
  s.kind = GemmKind::kBf16, s.k = 64 * 32;
  REQUIRE(dg::ops::choose_gemm_config(s, 132, {}, &c) == DG_SUCCESS);
  CHECK(!c.stage_aligned);  // the BF16 loop has no such variant
  s.kind = GemmKind::kFp8_1D1D, s.type = GemmType::kKGrouped, s.d_dtype = DG_DTYPE_FLOAT32, s.num_groups = 4, s.k = 4096;
  REQUIRE(dg::ops::choose_gemm_config(s, 132, {}, &c) == DG_SUCCESS);
  CHECK(!c.stage_aligned);  // every group has its own K
  s.kind = GemmKind::kFp8_1D2D, s.type = GemmType::kNormal, s.d_dtype = DG_DTYPE_BFLOAT16, s.k = 1536;
  dg::ops::GemmOverride rows;
  rows.block_m = 256, rows.block_n = 128, rows.stages = 3;
  REQUIRE(dg::ops::choose_gemm_config(s, 132, rows, &c) == DG_SUCCESS);
  CHECK(!c.stage_aligned);  // row units (two WGMMA iterations per warp-group) keep the run-time stage
  dg::ops::GemmOverride deep;
  deep.block_m = 64, deep.block_n = 32, deep.stages = 16;
  s = GemmShape{};
  s.kind = GemmKind::kFp8_1D2D, s.m = 128, s.n = 2112, s.k = 16 * 128;
  REQUIRE(dg::ops::choose_gemm_config(s, 132, deep, &c) == DG_SUCCESS);
  CHECK(!c.stage_aligned);  // too deep a ring to unroll
}

// A kernel with its K blocks compiled in serves only problems of that count: dense calls with at most
// eight, every CTA taking a tile's every K block, never 1D1D.
TEST_CASE("sm90 gemm: K blocks compiled in only for short dense K") {
  GemmShape s;
  s.kind = GemmKind::kFp8_1D2D, s.m = 64, s.n = 8192, s.k = 512;
  dg::ops::GemmConfig c;
  REQUIRE(dg::ops::choose_gemm_config(s, 132, {}, &c) == DG_SUCCESS);
  CHECK(c.k_blocks == 4);
  CHECK(dg::ops::gemm_kernel_spec(s, c).kernel_name.find("_kb4") != std::string::npos);
  s.k = 1024 + 1;  // nine K blocks, the last partial
  REQUIRE(dg::ops::choose_gemm_config(s, 132, {}, &c) == DG_SUCCESS);
  CHECK(c.k_blocks == 0);
  CHECK(dg::ops::gemm_kernel_spec(s, c).kernel_name.find("_kb") == std::string::npos);
  s.kind = GemmKind::kBf16, s.k = 500;  // BF16: 64 K per block
  REQUIRE(dg::ops::choose_gemm_config(s, 132, {}, &c) == DG_SUCCESS);
  CHECK(c.k_blocks == 8);
  dg::ops::GemmOverride split;
  split.split_k = 2;
  REQUIRE(dg::ops::choose_gemm_config(s, 132, split, &c) == DG_SUCCESS);
  CHECK(c.k_blocks == 0);  // each CTA of a split tile takes part of the K blocks
  s.kind = GemmKind::kFp8_1D1D, s.d_dtype = DG_DTYPE_FLOAT32, s.k = 512;
  REQUIRE(dg::ops::choose_gemm_config(s, 132, {}, &c) == DG_SUCCESS);
  CHECK(c.k_blocks == 0);
  s.kind = GemmKind::kFp8_1D2D, s.d_dtype = DG_DTYPE_BFLOAT16, s.type = GemmType::kMGroupedMasked;
  s.num_groups = 4, s.m = 256, s.expected_m = 64;
  REQUIRE(dg::ops::choose_gemm_config(s, 132, {}, &c) == DG_SUCCESS);
  CHECK(c.k_blocks == 0);  // grouped calls read K at run time
}

TEST_CASE("sm90 gemm: configs the GPU tests force compile for sm_90a without spills") {
  dg::Config config = dg::default_config();
  config.cache_dir = "";
  config.ptxas_verbose = true;
  const int32_t log_level = dg_get_log_level();
  dg_set_log_level(DG_LOG_ERROR);
  struct Forced { GemmKind kind; int64_t m, n, k; dg_dtype d; bool acc; int bm, bn, stages, split_k; };
  const Forced forced[] = {
      {GemmKind::kBf16, 300, 600, 264, DG_DTYPE_BFLOAT16, true, 128, 256, 4, 0},
      {GemmKind::kBf16, 300, 600, 264, DG_DTYPE_FLOAT32, false, 128, 240, 4, 0},
      {GemmKind::kFp8_1D1D, 300, 600, 400, DG_DTYPE_FLOAT32, true, 128, 256, 3, 0},
      {GemmKind::kBf16, 77, 208, 1000, DG_DTYPE_BFLOAT16, true, 0, 0, 0, 8},
      {GemmKind::kBf16, 128, 202, 1000, DG_DTYPE_FLOAT32, false, 0, 0, 0, 4},
      {GemmKind::kFp8_1D2D, 1, 336, 1200, DG_DTYPE_BFLOAT16, false, 0, 0, 0, 2},
      {GemmKind::kFp8_1D2D, 256, 448, 1040, DG_DTYPE_BFLOAT16, false, 0, 112, 0, 0},
      {GemmKind::kFp8_1D2D, 256, 576, 1040, DG_DTYPE_BFLOAT16, false, 0, 144, 0, 0},
      {GemmKind::kFp8_1D2D, 256, 530, 1040, DG_DTYPE_BFLOAT16, false, 0, 144, 0, 0},
      {GemmKind::kFp8_1D2D, 300, 600, 1808, DG_DTYPE_BFLOAT16, false, 128, 144, 0, 4},
      {GemmKind::kFp8_1D2D, 300, 600, 1808, DG_DTYPE_BFLOAT16, false, 128, 192, 0, 4},
      {GemmKind::kBf16, 300, 600, 1000, DG_DTYPE_BFLOAT16, true, 128, 256, 2, 2},
      {GemmKind::kBf16, 300, 600, 1000, DG_DTYPE_FLOAT32, true, 128, 256, 2, 2},
      {GemmKind::kFp8_1D1D, 300, 600, 1008, DG_DTYPE_FLOAT32, true, 128, 128, 0, 2},
      {GemmKind::kFp8_1D2D, 300, 600, 1040, DG_DTYPE_BFLOAT16, false, 128, 128, 6, 0},
      {GemmKind::kFp8_1D2D, 300, 600, 1040, DG_DTYPE_BFLOAT16, true, 128, 128, 6, 0},
      {GemmKind::kFp8_1D2D, 300, 336, 1040, DG_DTYPE_BFLOAT16, false, 256, 128, 0, 0},
      {GemmKind::kFp8_1D2D, 300, 336, 1040, DG_DTYPE_FLOAT32, true, 256, 128, 0, 0},
      {GemmKind::kFp8_1D2D, 17, 336, 1040, DG_DTYPE_BFLOAT16, false, 32, 64, 0, 0},
      {GemmKind::kFp8_1D2D, 17, 336, 1040, DG_DTYPE_FLOAT32, true, 32, 128, 0, 0},
      {GemmKind::kFp8_1D2D, 17, 336, 1040, DG_DTYPE_BFLOAT16, false, 32, 144, 0, 0},
      {GemmKind::kBf16, 17, 336, 1000, DG_DTYPE_BFLOAT16, false, 32, 64, 0, 0},
      {GemmKind::kBf16, 17, 336, 1000, DG_DTYPE_FLOAT32, true, 32, 128, 0, 0},
  };
  for (const Forced& f : forced) {
    GemmShape s;
    s.kind = f.kind, s.m = f.m, s.n = f.n, s.k = f.k, s.d_dtype = f.d, s.accumulate = f.acc;
    dg::ops::GemmOverride o;
    o.block_m = f.bm, o.block_n = f.bn, o.stages = f.stages, o.split_k = f.split_k;
    if (f.kind != GemmKind::kBf16 && (f.bn == 256 || f.bm == 256))
      o.fp8_promotion = DG_FP8_PROMOTION_AFTER, o.promotion_slices = 2;
    dg::ops::GemmConfig c;
    REQUIRE(dg::ops::choose_gemm_config(s, 132, o, &c) == DG_SUCCESS);
    compile_clean(dg::ops::gemm_kernel_spec(s, c), config);
  }
  // tests/gpu/test_gemm.cpp, the stage-aligned K loops: every ring depth, one and three turns.
  for (int stages = 2; stages <= 8; ++stages)
    for (int turns : {1, 3}) {
      GemmShape s;
      s.kind = turns == 3 && stages % 3 == 0 ? GemmKind::kFp8_1D1D : GemmKind::kFp8_1D2D;
      s.m = 1000, s.n = 520, s.k = stages * turns * 128 - (turns == 3 ? 48 : 0);
      s.d_dtype = s.kind == GemmKind::kFp8_1D1D ? DG_DTYPE_FLOAT32 : DG_DTYPE_BFLOAT16;
      s.accumulate = stages % 3 == 1;
      dg::ops::GemmOverride o;
      o.block_m = 128, o.block_n = stages <= 6 ? 128 : 64, o.stages = stages;
      o.fp8_promotion = stages % 2 ? DG_FP8_PROMOTION_AFTER : DG_FP8_PROMOTION_OVERLAP;
      dg::ops::GemmConfig c;
      REQUIRE(dg::ops::choose_gemm_config(s, 132, o, &c) == DG_SUCCESS);
      CHECK(c.stage_aligned);
      compile_clean(dg::ops::gemm_kernel_spec(s, c), config);
    }
  // tests/gpu/test_k_grouped_gemm.cpp: 64 x 64 tiles, FP8 and BF16, with C.
  for (GemmKind kind : {GemmKind::kFp8_1D1D, GemmKind::kBf16}) {
    GemmShape s;
    s.kind = kind, s.type = GemmType::kKGrouped, s.num_groups = 34, s.m = 208, s.n = 144, s.k = 384;
    s.major_a = s.major_b = kind == GemmKind::kBf16 ? Major::kMN : Major::kK;
    s.d_dtype = DG_DTYPE_FLOAT32, s.accumulate = true;
    dg::ops::GemmOverride o;
    o.block_m = 64, o.block_n = 64;
    dg::ops::GemmConfig c;
    REQUIRE(dg::ops::choose_gemm_config(s, 132, o, &c) == DG_SUCCESS);
    compile_clean(dg::ops::gemm_kernel_spec(s, c), config);
  }
  // tests/gpu/test_grouped_gemm.cpp: the masked split tail, 128x128 tiles on 8 SMs, with and without.
  for (GemmKind kind : {GemmKind::kFp8_1D2D, GemmKind::kBf16})
    for (int64_t n : {512, 448})
      for (int split : {2, 1}) {
        GemmShape s;
        s.kind = kind, s.type = GemmType::kMGroupedMasked, s.num_groups = 2, s.m = 512, s.n = n;
        s.k = kind == GemmKind::kBf16 ? 7 * 64 : 7 * 128, s.expected_m = 256;
        dg::ops::GemmOverride o;
        o.block_m = 128, o.block_n = 128, o.num_sms = 8, o.split_k = split;
        dg::ops::GemmConfig c;
        REQUIRE(dg::ops::choose_gemm_config(s, 132, o, &c) == DG_SUCCESS);
        CHECK(c.split_k == split);
        CHECK(c.grid == 8);
        compile_clean(dg::ops::gemm_kernel_spec(s, c), config);
      }
  // tests/gpu/test_gemm_epilogue.cpp: bias on dense calls; SwiGLU with BF16 and FP8 D (FP32 and
  // packed scales) on dense, contiguous and masked FP8 calls.
  using dg::ops::Activation;
  using dg::ops::BiasType;
  using dg::ops::DScales;
  struct Fused {
    GemmKind kind;
    GemmType type;
    int64_t m, n, k;
    Activation act;
    BiasType bias;
    DScales scales;
  };
  const Fused fused[] = {
      {GemmKind::kBf16, GemmType::kNormal, 200, 384, 640, Activation::kNone, BiasType::kBf16, DScales::kNone},
      {GemmKind::kFp8_1D2D, GemmType::kNormal, 200, 384, 640, Activation::kNone, BiasType::kFp32, DScales::kNone},
      {GemmKind::kFp8_1D2D, GemmType::kNormal, 203, 768, 896, Activation::kSwiGlu, BiasType::kNone, DScales::kNone},
      {GemmKind::kFp8_1D2D, GemmType::kNormal, 203, 768, 896, Activation::kSwiGlu, BiasType::kNone, DScales::kFp32},
      {GemmKind::kFp8_1D2D, GemmType::kNormal, 203, 768, 896, Activation::kSwiGlu, BiasType::kNone, DScales::kPackedUe8m0},
      {GemmKind::kFp8_1D2D, GemmType::kMGroupedMasked, 128, 512, 512, Activation::kSwiGlu, BiasType::kNone, DScales::kNone},
      {GemmKind::kFp8_1D2D, GemmType::kMGroupedMasked, 128, 512, 512, Activation::kSwiGlu, BiasType::kNone, DScales::kFp32},
      {GemmKind::kFp8_1D2D, GemmType::kMGroupedContiguous, 512, 512, 512, Activation::kSwiGlu, BiasType::kNone, DScales::kNone},
      {GemmKind::kFp8_1D2D, GemmType::kMGroupedContiguous, 512, 512, 512, Activation::kSwiGlu, BiasType::kNone,
       DScales::kPackedUe8m0},
  };
  for (const Fused& f : fused) {
    GemmShape s;
    s.kind = f.kind, s.type = f.type, s.m = f.m, s.n = f.n, s.k = f.k;
    s.num_groups = f.type == GemmType::kNormal ? 1 : 3;
    s.expected_m = f.type == GemmType::kNormal ? 0 : 64;
    s.d_dtype = f.scales == DScales::kNone ? DG_DTYPE_BFLOAT16 : DG_DTYPE_FLOAT8_E4M3;
    s.epilogue.act = f.act, s.epilogue.bias = f.bias, s.epilogue.scales = f.scales;
    dg::ops::GemmConfig c;
    REQUIRE_MESSAGE(dg::ops::choose_gemm_config(s, 132, {}, &c) == DG_SUCCESS, dg_last_error());
    CHECK(c.split_k == 1);
    if (f.act == Activation::kSwiGlu) CHECK(c.block_n == 256);
    compile_clean(dg::ops::gemm_kernel_spec(s, c), config);
  }
  dg_set_log_level(log_level);
}

// DG_GEMM_PRINT_HEURISTIC=1 prints the config chosen for every test/benchmark shape.
TEST_CASE("sm90 gemm: heuristic choices (print with DG_GEMM_PRINT_HEURISTIC=1)") {
  const char* env = std::getenv("DG_GEMM_PRINT_HEURISTIC");
  for (const GemmShape& s : gemm_shapes()) {
    dg::ops::GemmConfig c;
    REQUIRE(dg::ops::choose_gemm_config(s, 132, {}, &c) == DG_SUCCESS);
    CHECK(c.grid % (c.split_k > 1 ? c.split_k : c.cluster) == 0);
    CHECK(c.grid <= 132);
    if (env && env[0] == '1') std::printf("%s\n", dg::ops::describe(s, c).c_str());
  }
}

// skip_head_mid (docs/skip_head_mid.md): the heuristic's configs for DeepGEMM's test shapes and odd
// head splits keep every store box within one head's left or right columns, and compile.
TEST_CASE("sm90 gemm: skip_head_mid configs keep boxes within head parts and compile") {
  dg::Config config = dg::default_config();
  config.cache_dir = "";
  config.ptxas_verbose = true;
  const int32_t log_level = dg_get_log_level();
  dg_set_log_level(DG_LOG_ERROR);
  struct Case { int64_t m, n, k, left, mid, right; dg_dtype d; int bn; };
  const Case cases[] = {
      // DeepGEMM's tests/test_attention.py shapes, heads (128, 64, 128).
      {128, 32768, 512, 128, 64, 128, DG_DTYPE_BFLOAT16, 0},
      {4096, 32768, 512, 128, 64, 128, DG_DTYPE_BFLOAT16, 0},
      {128, 8192, 512, 128, 64, 128, DG_DTYPE_BFLOAT16, 0},
      {4096, 8192, 512, 128, 64, 128, DG_DTYPE_BFLOAT16, 0},
      // tests/gpu/test_skip_head_mid.cpp: odd splits, tiles straddling heads, FP32 D.
      {200, 320, 640, 16, 7, 48, DG_DTYPE_BFLOAT16, 0},
      {200, 320, 640, 16, 7, 48, DG_DTYPE_BFLOAT16, 144},
      {129, 1024, 384, 128, 64, 128, DG_DTYPE_BFLOAT16, 192},
      {77, 224, 528, 8, 3, 24, DG_DTYPE_FLOAT32, 0},
      {300, 480, 1040, 0, 40, 96, DG_DTYPE_FLOAT32, 0},
      {300, 480, 1040, 32, 0, 64, DG_DTYPE_BFLOAT16, 96},
      // Parts no 32-byte strip divides: the per-element store.
      {150, 144, 384, 8, 5, 8, DG_DTYPE_BFLOAT16, 0},
      {77, 112, 528, 5, 3, 11, DG_DTYPE_BFLOAT16, 48},
      {100, 96, 256, 4, 2, 12, DG_DTYPE_FLOAT32, 0},
  };
  std::set<std::string> seen;
  for (const Case& t : cases) {
    GemmShape s;
    s.kind = GemmKind::kFp8_1D2D, s.m = t.m, s.n = t.n, s.k = t.k, s.d_dtype = t.d;
    s.epilogue.head_left = t.left, s.epilogue.head_mid = t.mid, s.epilogue.head_right = t.right;
    dg::ops::GemmOverride o;
    o.block_n = t.bn;
    dg::ops::GemmConfig c;
    REQUIRE_MESSAGE(dg::ops::choose_gemm_config(s, 132, o, &c) == DG_SUCCESS, dg_last_error());
    INFO(dg::ops::describe(s, c));
    CHECK(c.split_k == 1);
    const int ob = t.d == DG_DTYPE_FLOAT32 ? 4 : 2;
    // Per-element store (dg::ops::direct_head_store): no 32-byte strip divides both parts, or the
    // middle part would start the right part's boxes off a 16-byte boundary.
    const bool direct = std::gcd(t.left, t.right) % (32 / ob) != 0 || t.mid * ob % 16 != 0;
    CHECK(c.d_strip * ob >= 32);
    CHECK(c.block_n % c.d_strip == 0);
    if (!direct) {
      CHECK(t.left % c.d_strip == 0);
      CHECK(t.right % c.d_strip == 0);
    }
    const dg::jit::KernelSpec spec = dg::ops::gemm_kernel_spec(s, c);
    CHECK(spec.kernel_name.find("_heads") != std::string::npos);
    // The same problem without the split is another kernel; the per-element store stages nothing.
    GemmShape plain = s;
    plain.epilogue = {};
    dg::ops::GemmConfig pc;
    REQUIRE(dg::ops::choose_gemm_config(plain, 132, o, &pc) == DG_SUCCESS);
    CHECK(!(dg::ops::gemm_kernel_key(plain, pc) == dg::ops::gemm_kernel_key(s, c)));
    const unsigned staged = dg::ops::gemm_smem_bytes(plain, c.block_m, c.block_n, c.stages, c.d_bufs);
    if (direct) CHECK(c.smem_bytes < staged);
    if (seen.insert(spec.kernel_name).second) compile_clean(spec, config);
  }
  dg_set_log_level(log_level);
}

TEST_CASE("sm90 gemm: skip_head_mid refuses split-K") {
  GemmShape s;
  s.kind = GemmKind::kFp8_1D2D, s.m = 64, s.n = 2048, s.k = 7168, s.d_dtype = DG_DTYPE_BFLOAT16;
  s.epilogue.head_left = 128, s.epilogue.head_mid = 64, s.epilogue.head_right = 128;
  dg::ops::GemmConfig c;
  // Few tiles and long K: the plain GEMM would split K; the head store never does.
  REQUIRE(dg::ops::choose_gemm_config(s, 132, {}, &c) == DG_SUCCESS);
  CHECK(c.split_k == 1);
  dg::ops::GemmOverride o;
  o.split_k = 2;
  CHECK(dg::ops::choose_gemm_config(s, 132, o, &c) == DG_ERROR_INVALID_ARGUMENT);
  CHECK(std::string(dg_last_error()).find("split K") != std::string::npos);
  // Nor with the per-element store (left and right of 8 BF16 columns).
  s.epilogue.head_left = 8, s.epilogue.head_right = 8;
  REQUIRE(dg::ops::choose_gemm_config(s, 132, {}, &c) == DG_SUCCESS);
  CHECK(c.split_k == 1);
  CHECK(dg::ops::choose_gemm_config(s, 132, o, &c) == DG_ERROR_INVALID_ARGUMENT);
}
