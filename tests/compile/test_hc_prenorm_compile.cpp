// Every configuration of the hyper-connection pre-norm GEMM renders and compiles through the
// library's JIT (NVRTC) for sm_90a. No GPU.
#include <doctest/doctest.h>

#include <string>

#include "dg.h"
#include "jit/compiler.h"
#include "ops/hc_prenorm_gemm.h"
#include "runtime/config.h"

TEST_CASE("hc_prenorm_gemm: every configuration compiles for sm_90a") {
  const auto configs = dg::ops::all_hc_prenorm_configs();
  CHECK(configs.size() == 14);  // N tiles 1..3 x row tiles 1, 2, and N tiles 4 x one row tile; x 2 load widths
  for (const auto& c : configs) {
    CAPTURE(c.n_tiles);
    CAPTURE(c.m_tiles);
    CAPTURE(c.vec);
    dg::jit::CompileResult r;
    const dg_status s = dg::jit::compile(dg::ops::hc_prenorm_kernel_spec(c), "sm_90a", dg::default_config(), &r);
    CHECK_MESSAGE(s == DG_SUCCESS, std::string(dg_last_error()));
    CHECK(!r.cubin.empty());
  }
}

TEST_CASE("hc_prenorm_gemm: the heuristic picks N's tiles and two row tiles only with enough blocks") {
  using dg::ops::choose_hc_prenorm_config;
  CHECK(choose_hc_prenorm_config(4096, 24, 1, true, 132).n_tiles == 3);
  CHECK(choose_hc_prenorm_config(4096, 1, 1, true, 132).n_tiles == 1);
  CHECK(choose_hc_prenorm_config(4096, 32, 1, true, 132).n_tiles == 4);
  CHECK(choose_hc_prenorm_config(4096, 24, 1, true, 132).m_tiles == 1);   // 32 blocks of 128 rows
  CHECK(choose_hc_prenorm_config(4096, 24, 16, true, 132).m_tiles == 2);  // 512 blocks
  CHECK(choose_hc_prenorm_config(4096, 32, 16, true, 132).m_tiles == 1);  // would spill
  CHECK(choose_hc_prenorm_config(13, 24, 16, false, 132).vec == false);
  CHECK(dg::ops::hc_prenorm_chunks_per_split(28672, 16) == 56);
  CHECK(dg::ops::hc_prenorm_chunks_per_split(100, 16) == 1);  // 4 chunks: splits 4..15 get none
  CHECK(dg::ops::hc_prenorm_chunks_per_split(0, 1) == 1);
}
