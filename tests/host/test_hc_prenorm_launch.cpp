// dg_tf32_hc_prenorm_gemm against the fake driver: the launch (grid over row blocks and splits,
// block, the kernel argument with its strides and chunks per split), empty problems launching
// nothing, and every argument check with the argument its message names. No GPU.
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
using namespace dg::test;  // fake_driver.h, launch_util.h

struct Stream {
  dg_stream* s = nullptr;
  Stream() { REQUIRE(dg_stream_create(&s, 0, nullptr, DG_STREAM_CREATE, nullptr) == DG_SUCCESS); }
  ~Stream() { dg_stream_destroy(s); }
};

HcPrenormParams only_launch(FakeDriver& fake, unsigned grid_x, unsigned grid_y) {
  const std::vector<Launch> launches = fake.take();
  REQUIRE(launches.size() == 1);
  const Launch& l = launches[0];
  CHECK(l.kernel == "dg_hc_prenorm_gemm");
  CHECK(l.config.grid[0] == grid_x);
  CHECK(l.config.grid[1] == grid_y);
  CHECK(l.config.block[0] == unsigned(dg::ops::kHcWarps * 32));
  REQUIRE(l.params.size() == sizeof(HcPrenormParams));
  HcPrenormParams p;
  std::memcpy(&p, l.params.data(), sizeof(p));
  return p;
}

// The status of a call whose message must name `arg`.
void check_fails(dg_status got, dg_status want, const char* arg) {
  CHECK(got == want);
  CHECK_MESSAGE(std::string(dg_last_error()).rfind(arg, 0) == 0, dg_last_error());
}

}  // namespace

TEST_CASE("hc_prenorm_gemm: one launch over row blocks and splits with the tensors' strides") {
  FakeDriver fake(0);
  Stream stream;
  void *pa = fake_address(1), *pb = fake_address(2), *pd = fake_address(3), *ps = fake_address(4);
  {
    Tensor a(pa, DG_DTYPE_BFLOAT16, {4096, 7168}, {7176, 1}), b(pb, DG_DTYPE_FLOAT32, {24, 7168});
    Tensor d(pd, DG_DTYPE_FLOAT32, {16, 4096, 24}, {4096 * 32, 32, 1}), s(ps, DG_DTYPE_FLOAT32, {16, 4096});
    REQUIRE_MESSAGE(dg_tf32_hc_prenorm_gemm(stream.s, a.t, b.t, d.t, s.t, 16) == DG_SUCCESS, dg_last_error());
    const HcPrenormParams p = only_launch(fake, 4096 / 128, 16);  // 512 blocks: two row tiles per warp
    CHECK(p.a == pa);
    CHECK(p.b == pb);
    CHECK(p.d == pd);
    CHECK(p.s == ps);
    CHECK(p.lda == 7176);
    CHECK(p.ldb == 7168);
    CHECK(p.d_split == 4096 * 32);
    CHECK(p.d_row == 32);
    CHECK(p.s_split == 4096);
    CHECK(p.s_row == 1);
    CHECK((p.m == 4096 && p.n == 24 && p.k == 7168));
    CHECK(p.chunks_per_split == 14);  // 224 chunks over 16 splits
  }
  {  // no split: one split of all chunks, 64-row blocks
    Tensor a(pa, DG_DTYPE_BFLOAT16, {13, 100}), b(pb, DG_DTYPE_FLOAT32, {7, 100});
    Tensor d(pd, DG_DTYPE_FLOAT32, {13, 7}), s(ps, DG_DTYPE_FLOAT32, {13});
    REQUIRE_MESSAGE(dg_tf32_hc_prenorm_gemm(stream.s, a.t, b.t, d.t, s.t, 0) == DG_SUCCESS, dg_last_error());
    const HcPrenormParams p = only_launch(fake, 1, 1);
    CHECK(p.d_split == 0);
    CHECK(p.s_split == 0);
    CHECK(p.chunks_per_split == 4);
  }
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
