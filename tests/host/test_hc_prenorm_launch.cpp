// dg_tf32_hc_prenorm_gemm against the fake driver: the launches of both kernels (grid over row
// blocks, clusters and splits, block, shared memory, the kernel argument with its strides, TMA maps
// and chunks per split), empty problems launching nothing, and every argument check with the
// argument its message names. No GPU.
#include <doctest/doctest.h>

#include <cstring>
#include <string>
#include <vector>

#include "dg.h"
#include "fake_driver.h"
#include "launch_util.h"
#include "ops/hc_prenorm_gemm.h"

namespace {

using dg::ops::HcPrenormParams;
using dg::ops::HcPrenormTmaParams;
using namespace dg::test;  // fake_driver.h, launch_util.h

struct Stream {
  dg_stream* s = nullptr;
  Stream() { REQUIRE(dg_stream_create(&s, 0, nullptr, DG_STREAM_CREATE, nullptr) == DG_SUCCESS); }
  ~Stream() { dg_stream_destroy(s); }
};

const Launch& one(const std::vector<Launch>& launches, const char* kernel, unsigned grid_x, unsigned grid_y) {
  REQUIRE(launches.size() == 1);
  const Launch& l = launches[0];
  CHECK(l.kernel == kernel);
  CHECK(l.config.grid[0] == grid_x);
  CHECK(l.config.grid[1] == grid_y);
  return l;
}

HcPrenormParams only_launch(FakeDriver& fake, unsigned grid_x, unsigned grid_y) {
  const std::vector<Launch> launches = fake.take();
  const Launch& l = one(launches, "dg_hc_prenorm_gemm", grid_x, grid_y);
  CHECK(l.config.block[0] == unsigned(dg::ops::kHcWarps * 32));
  CHECK(l.config.smem_bytes == 0u);
  REQUIRE(l.params.size() == sizeof(HcPrenormParams));
  HcPrenormParams p;
  std::memcpy(&p, l.params.data(), sizeof(p));
  return p;
}

// The streaming kernel's launch: grid, a producer warp beside the math warps, the cluster.
HcPrenormTmaParams only_tma_launch(FakeDriver& fake, unsigned grid_x, unsigned grid_y, unsigned cluster) {
  const std::vector<Launch> launches = fake.take();
  const Launch& l = one(launches, "dg_hc_prenorm_gemm_tma", grid_x, grid_y);
  CHECK(l.config.block[0] == unsigned((dg::ops::kHcWarps + 1) * 32));
  CHECK(l.config.smem_bytes > 0u);
  CHECK(l.config.cluster[0] == (cluster > 1 ? cluster : 0u));
  REQUIRE(l.params.size() == sizeof(HcPrenormTmaParams));
  HcPrenormTmaParams p;
  std::memcpy(&p, l.params.data(), sizeof(p));
  return p;
}

// The status of a call whose message must name `arg`.
void check_fails(dg_status got, dg_status want, const char* arg) {
  CHECK(got == want);
  CHECK_MESSAGE(std::string(dg_last_error()).rfind(arg, 0) == 0, dg_last_error());
}

}  // namespace

TEST_CASE("hc_prenorm_gemm: aligned operands stream through TMA: a persistent grid, or clusters sharing K") {
  FakeDriver fake(0);
  Stream stream;
  void *pa = fake_address(1), *pb = fake_address(2), *pd = fake_address(3), *ps = fake_address(4);
  {
    Tensor a(pa, DG_DTYPE_BFLOAT16, {4096, 7168}, {7176, 1}), b(pb, DG_DTYPE_FLOAT32, {24, 7168});
    Tensor d(pd, DG_DTYPE_FLOAT32, {16, 4096, 24}, {4096 * 32, 32, 1}), s(ps, DG_DTYPE_FLOAT32, {16, 4096});
    REQUIRE_MESSAGE(dg_tf32_hc_prenorm_gemm(stream.s, a.t, b.t, d.t, s.t, 16) == DG_SUCCESS, dg_last_error());
    // 32 row tiles x 16 splits = 512 work items: no cluster, a persistent grid of 2 CTAs per SM
    const HcPrenormTmaParams p = only_tma_launch(fake, 2 * 132, 1, 1);
    const fake_tensor_map am = map_of(p.a_map), bm = map_of(p.b_map);
    CHECK(am.address == reinterpret_cast<uintptr_t>(pa));
    CHECK(am.dtype == CU_TENSOR_MAP_DATA_TYPE_BFLOAT16);
    CHECK((am.dims[0] == 7168u && am.dims[1] == 4096u && am.stride1 == 7176u * 2));
    CHECK((am.box[0] == 64u && am.box[1] == 128u && am.swizzle == CU_TENSOR_MAP_SWIZZLE_128B));
    CHECK(am.l2_promotion == CU_TENSOR_MAP_L2_PROMOTION_L2_128B);  // A is streamed once: single lines
    CHECK(bm.address == reinterpret_cast<uintptr_t>(pb));
    CHECK(bm.dtype == CU_TENSOR_MAP_DATA_TYPE_FLOAT32);
    CHECK((bm.dims[0] == 7168u && bm.dims[1] == 24u && bm.stride1 == 7168u * 4));
    CHECK((bm.box[0] == 32u && bm.box[1] == 24u && bm.swizzle == CU_TENSOR_MAP_SWIZZLE_128B));
    CHECK(bm.l2_promotion == CU_TENSOR_MAP_L2_PROMOTION_L2_256B);  // B is re-read by every row tile
    CHECK(p.d == pd);
    CHECK(p.s == ps);
    CHECK(p.d_split == 4096 * 32);
    CHECK(p.d_row == 32);
    CHECK(p.s_split == 4096);
    CHECK(p.s_row == 1);
    CHECK((p.m == 4096 && p.n == 24 && p.k == 7168));
    CHECK(p.chunks_per_split == 14);  // 224 chunks over 16 splits
    CHECK(p.splits == 16);
  }
  {  // fewer work items than the SMs hold: one CTA each
    Tensor a(pa, DG_DTYPE_BFLOAT16, {1000, 7168}), b(pb, DG_DTYPE_FLOAT32, {24, 7168});
    Tensor d(pd, DG_DTYPE_FLOAT32, {16, 1000, 24}), s(ps, DG_DTYPE_FLOAT32, {16, 1000});
    REQUIRE_MESSAGE(dg_tf32_hc_prenorm_gemm(stream.s, a.t, b.t, d.t, s.t, 16) == DG_SUCCESS, dg_last_error());
    CHECK(only_tma_launch(fake, 8 * 16, 1, 1).splits == 16);  // 7 stages per split: too few to share
  }
  {  // no split, 13 rows: one 64-row tile, 8 CTAs of a cluster share K; N = 7 pads to one 8-row box
    Tensor a(pa, DG_DTYPE_BFLOAT16, {13, 28672}), b(pb, DG_DTYPE_FLOAT32, {7, 28672});
    Tensor d(pd, DG_DTYPE_FLOAT32, {13, 7}), s(ps, DG_DTYPE_FLOAT32, {13});
    REQUIRE_MESSAGE(dg_tf32_hc_prenorm_gemm(stream.s, a.t, b.t, d.t, s.t, 0) == DG_SUCCESS, dg_last_error());
    const HcPrenormTmaParams p = only_tma_launch(fake, 8, 1, 8);
    CHECK(map_of(p.a_map).box[1] == 64u);
    CHECK(map_of(p.b_map).box[1] == 8u);
    CHECK(p.d_split == 0);
    CHECK(p.s_split == 0);
    CHECK(p.chunks_per_split == 896);
    CHECK(p.splits == 1);
  }
}

TEST_CASE("hc_prenorm_gemm: clusters shrink until the grid's clusters run at once") {
  // The fake runs 132 clusters of 2, 62 of 4 and 30 of 8 at two CTAs per SM (an H200's answer).
  FakeDriver fake(0);
  Stream stream;
  void *pa = fake_address(1), *pb = fake_address(2), *pd = fake_address(3), *ps = fake_address(4);
  struct Case {
    int64_t m;
    unsigned grid, cluster;
  };
  const Case cases[] = {
      {2048, 16 * 8, 8},    // 16 row tiles: 16 clusters of 8 fit
      {4096, 32 * 4, 4},    // 32 row tiles: 32 clusters of 8 do not fit 30, 32 of 4 do
      {8192, 64 * 2, 2},    // 64 row tiles: 64 clusters of 4 do not fit 62, 64 pairs do
      {16384, 128 * 2, 2},  // 128 row tiles: pairs, as the heuristic chose
  };
  for (const Case& c : cases) {
    CAPTURE(c.m);
    Tensor a(pa, DG_DTYPE_BFLOAT16, {c.m, 7168}), b(pb, DG_DTYPE_FLOAT32, {24, 7168});
    Tensor d(pd, DG_DTYPE_FLOAT32, {c.m, 24}), s(ps, DG_DTYPE_FLOAT32, {c.m});
    REQUIRE_MESSAGE(dg_tf32_hc_prenorm_gemm(stream.s, a.t, b.t, d.t, s.t, 0) == DG_SUCCESS, dg_last_error());
    CHECK(only_tma_launch(fake, c.grid, 1, c.cluster).splits == 1);
  }
}

TEST_CASE("hc_prenorm_gemm: unaligned rows or K under a stage take the register kernel") {
  FakeDriver fake(0);
  Stream stream;
  void *pa = fake_address(1), *pb = fake_address(2), *pd = fake_address(3), *ps = fake_address(4);
  {  // 200-byte rows of A: no TMA; 32 blocks of 128 rows over 16 splits
    Tensor a(pa, DG_DTYPE_BFLOAT16, {4096, 100}), b(pb, DG_DTYPE_FLOAT32, {24, 100});
    Tensor d(pd, DG_DTYPE_FLOAT32, {16, 4096, 24}), s(ps, DG_DTYPE_FLOAT32, {16, 4096});
    REQUIRE_MESSAGE(dg_tf32_hc_prenorm_gemm(stream.s, a.t, b.t, d.t, s.t, 16) == DG_SUCCESS, dg_last_error());
    const HcPrenormParams p = only_launch(fake, 4096 / 128, 16);
    CHECK(p.a == pa);
    CHECK(p.b == pb);
    CHECK(p.d == pd);
    CHECK(p.s == ps);
    CHECK(p.lda == 100);
    CHECK(p.ldb == 100);
    CHECK(p.d_split == 4096 * 24);
    CHECK(p.d_row == 24);
    CHECK((p.m == 4096 && p.n == 24 && p.k == 100));
    CHECK(p.chunks_per_split == 1);  // 4 chunks over 16 splits
  }
  {  // no split, one 64-row block
    Tensor a(pa, DG_DTYPE_BFLOAT16, {13, 100}), b(pb, DG_DTYPE_FLOAT32, {7, 100});
    Tensor d(pd, DG_DTYPE_FLOAT32, {13, 7}), s(ps, DG_DTYPE_FLOAT32, {13});
    REQUIRE_MESSAGE(dg_tf32_hc_prenorm_gemm(stream.s, a.t, b.t, d.t, s.t, 0) == DG_SUCCESS, dg_last_error());
    const HcPrenormParams p = only_launch(fake, 1, 1);
    CHECK(p.d_split == 0);
    CHECK(p.s_split == 0);
    CHECK(p.chunks_per_split == 4);
  }
  {  // aligned, but K = 32 is under one 64-k stage
    Tensor a(pa, DG_DTYPE_BFLOAT16, {64, 32}), b(pb, DG_DTYPE_FLOAT32, {24, 32});
    Tensor d(pd, DG_DTYPE_FLOAT32, {64, 24}), s(ps, DG_DTYPE_FLOAT32, {64});
    REQUIRE_MESSAGE(dg_tf32_hc_prenorm_gemm(stream.s, a.t, b.t, d.t, s.t, 0) == DG_SUCCESS, dg_last_error());
    only_launch(fake, 1, 1);
  }
}

TEST_CASE("hc_prenorm_gemm: both kernels launch with PDL exactly when the stream's config has it") {
  FakeDriver fake(0);
  dg_config* config = nullptr;
  REQUIRE(dg_config_create(&config) == DG_SUCCESS);
  void *pa = fake_address(1), *pb = fake_address(2), *pd = fake_address(3), *ps = fake_address(4);
  for (int pdl : {0, 1}) {
    CAPTURE(pdl);
    REQUIRE(dg_config_set_int(config, DG_CONFIG_PDL, pdl) == DG_SUCCESS);
    dg_stream* s = nullptr;
    REQUIRE(dg_stream_create(&s, 0, nullptr, DG_STREAM_CREATE, config) == DG_SUCCESS);
    for (int64_t k : {int64_t(7168), int64_t(100)}) {  // the streaming kernel, then the register one
      Tensor a(pa, DG_DTYPE_BFLOAT16, {256, k}), b(pb, DG_DTYPE_FLOAT32, {24, k});
      Tensor d(pd, DG_DTYPE_FLOAT32, {256, 24}), sq(ps, DG_DTYPE_FLOAT32, {256});
      REQUIRE_MESSAGE(dg_tf32_hc_prenorm_gemm(s, a.t, b.t, d.t, sq.t, 0) == DG_SUCCESS, dg_last_error());
      const std::vector<Launch> launches = fake.take();
      REQUIRE(launches.size() == 1);
      CHECK(launches[0].kernel == (k == 7168 ? "dg_hc_prenorm_gemm_tma" : "dg_hc_prenorm_gemm"));
      CHECK(launches[0].config.pdl == pdl);
    }
    dg_stream_destroy(s);
  }
  dg_config_destroy(config);
}

TEST_CASE("hc_prenorm_gemm: M = 0 launches nothing") {
  FakeDriver fake(0);
  Stream stream;
  void* p = fake_address(5);
  Tensor a(p, DG_DTYPE_BFLOAT16, {0, 64}), b(p, DG_DTYPE_FLOAT32, {24, 64});
  Tensor d(p, DG_DTYPE_FLOAT32, {0, 24}), s(p, DG_DTYPE_FLOAT32, {0});
  CHECK(dg_tf32_hc_prenorm_gemm(stream.s, a.t, b.t, d.t, s.t, 0) == DG_SUCCESS);
  CHECK(fake.take().empty());
}

TEST_CASE("hc_prenorm_gemm: arguments are checked, naming the argument") {
  FakeDriver fake(0);
  Stream stream;
  void *pa = fake_address(1), *pb = fake_address(2), *pd = fake_address(3), *ps = fake_address(4);
  Tensor a(pa, DG_DTYPE_BFLOAT16, {64, 256}), b(pb, DG_DTYPE_FLOAT32, {24, 256});
  Tensor d(pd, DG_DTYPE_FLOAT32, {64, 24}), s(ps, DG_DTYPE_FLOAT32, {64});
  Tensor d3(pd, DG_DTYPE_FLOAT32, {4, 64, 24}), s2(ps, DG_DTYPE_FLOAT32, {4, 64});
  const dg_status bad = DG_ERROR_INVALID_ARGUMENT;
  check_fails(dg_tf32_hc_prenorm_gemm(nullptr, a.t, b.t, d.t, s.t, 0), bad, "stream");
  check_fails(dg_tf32_hc_prenorm_gemm(stream.s, nullptr, b.t, d.t, s.t, 0), bad, "a");
  check_fails(dg_tf32_hc_prenorm_gemm(stream.s, a.t, b.t, d.t, nullptr, 0), bad, "sqr_sum");
  check_fails(dg_tf32_hc_prenorm_gemm(stream.s, a.t, b.t, d.t, s.t, -1), bad, "num_splits");
  check_fails(dg_tf32_hc_prenorm_gemm(stream.s, a.t, b.t, d.t, s.t, 65536), bad, "num_splits");
  check_fails(dg_tf32_hc_prenorm_gemm(stream.s, b.t, b.t, d.t, s.t, 0), bad, "a");  // FP32 A
  check_fails(dg_tf32_hc_prenorm_gemm(stream.s, a.t, a.t, d.t, s.t, 0), bad, "b");  // BF16 B
  check_fails(dg_tf32_hc_prenorm_gemm(stream.s, a.t, b.t, d.t, s.t, 4), bad, "d");  // rank 2 with splits
  check_fails(dg_tf32_hc_prenorm_gemm(stream.s, a.t, b.t, d3.t, s.t, 4), bad, "sqr_sum");
  check_fails(dg_tf32_hc_prenorm_gemm(stream.s, a.t, b.t, d3.t, s2.t, 3), bad, "d");  // 4 splits in d
  Tensor b_k(pb, DG_DTYPE_FLOAT32, {24, 255});
  check_fails(dg_tf32_hc_prenorm_gemm(stream.s, a.t, b_k.t, d.t, s.t, 0), bad, "b");
  Tensor b33(pb, DG_DTYPE_FLOAT32, {33, 256}), d33(pd, DG_DTYPE_FLOAT32, {64, 33});
  check_fails(dg_tf32_hc_prenorm_gemm(stream.s, a.t, b33.t, d33.t, s.t, 0), DG_ERROR_UNSUPPORTED, "b");
  Tensor b0(pb, DG_DTYPE_FLOAT32, {0, 256}), d0(pd, DG_DTYPE_FLOAT32, {64, 0});
  check_fails(dg_tf32_hc_prenorm_gemm(stream.s, a.t, b0.t, d0.t, s.t, 0), bad, "b");
  Tensor a_t(pa, DG_DTYPE_BFLOAT16, {64, 256}, {1, 64});  // M-major
  check_fails(dg_tf32_hc_prenorm_gemm(stream.s, a_t.t, b.t, d.t, s.t, 0), bad, "a");
  Tensor d_t(pd, DG_DTYPE_FLOAT32, {64, 24}, {1, 64});
  check_fails(dg_tf32_hc_prenorm_gemm(stream.s, a.t, b.t, d_t.t, s.t, 0), bad, "d");
  Tensor a_odd(static_cast<char*>(pa) + 1, DG_DTYPE_BFLOAT16, {64, 256});
  check_fails(dg_tf32_hc_prenorm_gemm(stream.s, a_odd.t, b.t, d.t, s.t, 0), bad, "a");
  Tensor a_null(nullptr, DG_DTYPE_BFLOAT16, {64, 256});
  check_fails(dg_tf32_hc_prenorm_gemm(stream.s, a_null.t, b.t, d.t, s.t, 0), bad, "a");
  CHECK(fake.take().empty());  // no failing call launched anything
}
