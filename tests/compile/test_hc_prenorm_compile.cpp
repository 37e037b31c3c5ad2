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
  // Streaming: N tiles 1..4 x row tiles 1, 2 x clusters 1, 2, 4, 8. Register: N tiles 1..3 x row
  // tiles 1, 2, and N tiles 4 x one row tile; x 2 load widths.
  CHECK(configs.size() == 32 + 14);
  for (const auto& c : configs) {
    CAPTURE(c.tma);
    CAPTURE(c.n_tiles);
    CAPTURE(c.m_tiles);
    CAPTURE(c.vec);
    CAPTURE(c.cluster);
    CAPTURE(c.stages);
    dg::jit::CompileResult r;
    const dg_status s = dg::jit::compile(dg::ops::hc_prenorm_kernel_spec(c), "sm_90a", dg::default_config(), &r);
    CHECK_MESSAGE(s == DG_SUCCESS, std::string(dg_last_error()));
    CHECK(!r.cubin.empty());
  }
}

TEST_CASE("hc_prenorm_gemm: the streaming kernel's shared memory leaves room for two CTAs per SM") {
  constexpr unsigned kSmPerTwoCtas = 115712;  // (228 KiB - 2 x 1 KiB) / 2
  for (const auto& c : dg::ops::all_hc_prenorm_configs()) {
    if (!c.tma) {
      CHECK(c.smem_bytes() == 0);
      continue;
    }
    CAPTURE(c.n_tiles);
    CAPTURE(c.m_tiles);
    CHECK(c.smem_bytes() <= kSmPerTwoCtas);
    CHECK(c.stages >= 4);  // at least 4 x 64 k of A in flight per CTA
    CHECK(c.threads() == unsigned((c.warps + 1) * 32));
  }
}

TEST_CASE("hc_prenorm_gemm: the heuristic") {
  using dg::ops::choose_hc_prenorm_config;
  // Aligned operands with a stage of K: the streaming kernel, 128-row tiles (64 for M <= 64).
  const auto big = choose_hc_prenorm_config(8192, 24, 28672, 16, true, 132);
  CHECK(big.tma);
  CHECK(big.n_tiles == 3);
  CHECK(big.block_m() == 128);
  CHECK(big.cluster == 1);  // 1024 CTAs already
  CHECK(big.stages == 5);   // 5 x 22 KiB + slack fits 113 KiB
  CHECK(choose_hc_prenorm_config(13, 24, 28672, 16, true, 132).block_m() == 64);
  CHECK(choose_hc_prenorm_config(4096, 32, 7168, 16, true, 132).n_tiles == 4);
  CHECK(choose_hc_prenorm_config(4096, 1, 7168, 16, true, 132).n_tiles == 1);
  // Clusters share an item's K, doubled while the doubled grid fits one round of 2 CTAs per SM
  // (264 here) and each CTA keeps >= 4 stages.
  CHECK(choose_hc_prenorm_config(4096, 24, 28672, 0, true, 132).cluster == 8);   // 32 tiles: 256 CTAs
  CHECK(choose_hc_prenorm_config(8192, 24, 7680, 0, true, 132).cluster == 4);    // 64 tiles: 256, not 512
  CHECK(choose_hc_prenorm_config(16384, 24, 28672, 0, true, 132).cluster == 2);  // 128 tiles
  CHECK(choose_hc_prenorm_config(16384, 24, 28672, 0, true, 100).cluster == 1);  // 128 items > 200 / 2
  CHECK(choose_hc_prenorm_config(4096, 24, 7168, 16, true, 132).cluster == 1);   // 512 CTAs
  CHECK(choose_hc_prenorm_config(137, 24, 28672, 16, true, 132).cluster == 4);   // 28 stages per split
  // Split calls of few items: 64-row tiles while those number at most one per SM, and clusters up to
  // 4 while the grid does and each CTA keeps 2 stages.
  const auto m137 = choose_hc_prenorm_config(137, 24, 7168, 16, true, 132);
  CHECK(m137.block_m() == 64);  // 3 tiles x 16 splits = 48 items
  CHECK(m137.cluster == 2);     // 7 stages per split: 96 CTAs of 4 or 3 stages, not 192 of 2
  const auto m300 = choose_hc_prenorm_config(300, 24, 7168, 16, true, 132);
  CHECK(m300.block_m() == 64);  // 80 items
  CHECK(m300.cluster == 1);     // 160 CTAs would exceed one per SM, 3.5 stages fewer than 4
  CHECK(choose_hc_prenorm_config(13, 24, 7168, 16, true, 132).cluster == 4);   // 64 CTAs of 2 stages
  CHECK(choose_hc_prenorm_config(13, 24, 28672, 16, true, 132).cluster == 4);  // not 8: the 2-per-SM rule's stages
  CHECK(choose_hc_prenorm_config(600, 24, 7168, 16, true, 132).block_m() == 128);  // 160 items of 64 rows
  CHECK(choose_hc_prenorm_config(137, 24, 7168, 0, true, 132).block_m() == 128);   // unsplit: clusters fill
  CHECK(choose_hc_prenorm_config(13, 24, 28672, 0, true, 132).cluster == 8);
  // Unaligned operands or K below a stage: the register kernel.
  CHECK_FALSE(choose_hc_prenorm_config(4096, 24, 7168, 16, false, 132).tma);
  CHECK_FALSE(choose_hc_prenorm_config(4096, 24, 63, 1, true, 132).tma);
  CHECK(choose_hc_prenorm_config(4096, 24, 4101, 1, false, 132).m_tiles == 1);   // 32 blocks of 128 rows
  CHECK(choose_hc_prenorm_config(4096, 24, 4101, 16, false, 132).m_tiles == 2);  // 512 blocks
  CHECK(choose_hc_prenorm_config(4096, 32, 4101, 16, false, 132).m_tiles == 1);  // would spill
  CHECK(choose_hc_prenorm_config(13, 24, 4101, 16, false, 132).vec == false);
  CHECK(dg::ops::hc_prenorm_chunks_per_split(28672, 16) == 56);
  CHECK(dg::ops::hc_prenorm_chunks_per_split(100, 16) == 1);  // 4 chunks: splits 4..15 get none
  CHECK(dg::ops::hc_prenorm_chunks_per_split(0, 1) == 1);
}
