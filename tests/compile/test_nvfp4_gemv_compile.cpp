// Every configuration the NVFP4 GEMV heuristic can choose renders and compiles through the
// library's JIT (NVRTC) for sm_90a; the SM100 path (hardware E2M1 conversion) for sm_100a. No GPU.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>

#include "dg.h"
#include "jit/compiler.h"
#include "ops/nvfp4_gemv.h"
#include "runtime/config.h"

namespace {

std::string describe(const dg::ops::Nvfp4GemvConfig& c) {
  return "arch " + std::to_string(c.arch) + " kt " + std::to_string(c.threads_per_row) + " rg " +
         std::to_string(c.row_groups) + " nc " + std::to_string(c.chunks) + " rows " + std::to_string(c.rows) +
         " vec " + std::to_string(c.vec) + " exact " + std::to_string(c.exact) + " loop_k " +
         std::to_string(c.loop_k) + " pipe " + std::to_string(c.pipe) + " defer " + std::to_string(c.defer) + " hint " +
         std::to_string(static_cast<int>(c.hint));
}

void check_compiles(const dg::ops::Nvfp4GemvConfig& c, const char* arch) {
  CAPTURE(describe(c));
  dg::jit::CompileResult r;
  const dg_status s = dg::jit::compile(dg::ops::nvfp4_gemv_kernel_spec(c), arch, dg::default_config(), &r);
  CHECK_MESSAGE(s == DG_SUCCESS, std::string(dg_last_error()));
  CHECK(!r.cubin.empty());
}

dg::ops::Nvfp4GemvConfig choose(int M, int K, int L, int vec, int arch, dg::ops::Nvfp4GemvOverrides o = {}) {
  dg::ops::Nvfp4GemvConfig c;
  REQUIRE(dg::ops::choose_nvfp4_gemv_config(M, K, L, vec, arch, o, &c) == DG_SUCCESS);
  return c;
}

}  // namespace

TEST_CASE("nvfp4_gemv: every heuristic configuration compiles for sm_90a") {
  const auto configs = dg::ops::all_nvfp4_gemv_heuristic_configs(90);
  CHECK(configs.size() >= 10);
  bool has_loop_k = false, has_vec8 = false;
  for (const auto& c : configs) {
    has_loop_k |= c.loop_k;
    has_vec8 |= c.vec == 8;
    check_compiles(c, "sm_90a");
  }
  CHECK(has_loop_k);
  CHECK(has_vec8);
}

TEST_CASE("nvfp4_gemv: option variants compile for sm_90a") {
  dg::ops::Nvfp4GemvOverrides o;
  for (int hint = 1; hint <= 3; ++hint) {
    o = {};
    o.hint = hint;
    check_compiles(choose(7168, 2048, 4, 16, 90, o), "sm_90a");
  }
  o = {};
  o.prefetch = -1;
  check_compiles(choose(4096, 7168, 8, 16, 90, o), "sm_90a");
  o = {};
  o.threads_per_row = 32;
  o.chunks = 2;
  o.rows = 3;
  check_compiles(choose(7168, 16384, 1, 8, 90, o), "sm_90a");  // loop over K, 8-byte loads
  // Template paths the heuristic does not take today (measured slower on H100): two rounds in
  // flight and the deferred cross-warp reduction, with and without the loop over K.
  for (int arch : {90, 100}) {
    auto c = choose(7168, 16384, 1, 16, arch);
    c.pipe = 2;
    c.defer = 16;
    check_compiles(c, arch == 90 ? "sm_90a" : "sm_100a");
    c = choose(16, 1 << 20, 1, 16, arch);
    c.pipe = 2;
    c.defer = 5;
    check_compiles(c, arch == 90 ? "sm_90a" : "sm_100a");
  }
}

TEST_CASE("nvfp4_gemv: the SM100 path compiles for sm_100a") {
  // Compiled only: no Blackwell GPU has run it.
  for (int vec : {16, 8}) {
    check_compiles(choose(7168, 16384, 1, vec, 100), "sm_100a");
    check_compiles(choose(4096, 7168, 8, vec, 100), "sm_100a");
    check_compiles(choose(7168, 2048, 4, vec, 100), "sm_100a");
    check_compiles(choose(128, 256, 1, vec, 100), "sm_100a");
    check_compiles(choose(2432, 4608, 2, vec, 100), "sm_100a");
    check_compiles(choose(16, 1 << 20, 1, vec, 100), "sm_100a");  // loop over K
  }
}

TEST_CASE("nvfp4_gemv: heuristic picks for the benchmark shapes") {
  // The fastest on an H100: one row per KT threads, one 16-byte chunk each,
  // two rows in flight, a persistent grid.
  auto c = choose(7168, 16384, 1, 16, 90);
  CHECK(c.threads_per_row == 512);
  CHECK(c.chunks == 1);
  CHECK(c.exact);
  c = choose(4096, 7168, 8, 16, 90);
  CHECK(c.threads_per_row == 224);
  CHECK(c.chunks == 1);
  CHECK(c.rows == 2);
  c = choose(7168, 2048, 4, 16, 90);
  CHECK(c.threads_per_row == 64);
  CHECK(c.row_groups == 4);
  CHECK(!c.loop_k);
  c = choose(1, 1 << 20, 1, 16, 90);
  CHECK(c.loop_k);
  CHECK(!c.exact);
}

TEST_CASE("nvfp4_gemv: the grid is the fewest blocks as short as a full wave") {
  using dg::ops::nvfp4_gemv_grid;
  // The benchmark shapes at the register path's occupancy on 132 SMs (2, 5 and 4 blocks per SM).
  CHECK(nvfp4_gemv_grid(3584, 264) == 256);
  CHECK(nvfp4_gemv_grid(16384, 660) == 656);
  CHECK(nvfp4_gemv_grid(3584, 528) == 512);
  CHECK(nvfp4_gemv_grid(10, 264) == 10);
  CHECK(nvfp4_gemv_grid(0, 264) == 1);
  for (int64_t rounds = 1; rounds <= 3000; rounds += 7)
    for (int64_t wave = 1; wave <= 700; wave += 13) {
      const int64_t g = nvfp4_gemv_grid(rounds, wave), longest = (rounds + wave - 1) / wave;
      CAPTURE(rounds);
      CAPTURE(wave);
      REQUIRE(g >= 1);
      CHECK(g <= std::min(rounds, wave));
      CHECK((rounds + g - 1) / g == longest);
      if (g > 1) CHECK((rounds + g - 2) / (g - 1) > longest);  // one block fewer makes a longer range
    }
}
