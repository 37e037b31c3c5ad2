// dg_fp8_gemm_nt_skip_head_mid against the fake driver: one launch of the GEMM kernel the heuristic
// chose for the head split, whose D map spans D's full rows (every head's left, mid and right
// columns) with boxes of the chosen strip width, which divides left and right (or, for parts no
// 32-byte box divides, no staging: the per-element store); the kernel argument keeps the GEMM's N.
// No GPU: nothing runs, the arguments are checked.
#include <doctest/doctest.h>

#include <cstring>
#include <string>
#include <vector>

#include "dg.h"
#include "fake_driver.h"
#include "launch_util.h"
#include "ops/gemm.h"
#include "ops/gemm_util.h"

namespace {

using dg::ops::GemmConfig;
using dg::ops::GemmKind;
using dg::ops::GemmShape;
using dg::ops::Sm90GemmParams;
using namespace dg::test;  // fake_driver.h, launch_util.h

struct Split {
  int64_t m, k, left, mid, right, heads;
  dg_dtype d_dtype;
  int block_n;
};

}  // namespace

TEST_CASE("skip_head_mid launches one GEMM whose D map spans every head column in boxes within head parts") {
  FakeDriver fake(sizeof(Sm90GemmParams));
  const Split splits[] = {
      {300, 512, 128, 64, 128, 5, DG_DTYPE_BFLOAT16, 0},
      {300, 512, 128, 64, 128, 5, DG_DTYPE_BFLOAT16, 192},
      {77, 528, 8, 4, 24, 7, DG_DTYPE_FLOAT32, 0},
      {200, 640, 16, 8, 48, 5, DG_DTYPE_BFLOAT16, 144},
      // Parts no 32-byte box divides, or a middle part that starts boxes off 16 bytes: stored
      // element by element, nothing staged.
      {77, 528, 5, 3, 11, 7, DG_DTYPE_BFLOAT16, 0},
      {77, 528, 8, 3, 24, 7, DG_DTYPE_FLOAT32, 0},
      {200, 640, 16, 7, 48, 5, DG_DTYPE_BFLOAT16, 144},
  };
  for (const Split& t : splits) {
    const int64_t n = t.heads * (t.left + t.right), d_cols = t.heads * (t.left + t.mid + t.right);
    const int64_t ob = t.d_dtype == DG_DTYPE_FLOAT32 ? 4 : 2, ldd = cdiv(d_cols, 16) * 16 + 16;
    INFO("m ", t.m, " heads ", t.heads, " x (", t.left, ", ", t.mid, ", ", t.right, ") block_n ", t.block_n);
    const int64_t sf_k = cdiv(t.k, 128), m4 = cdiv(t.m, 4) * 4;
    Tensor a(fake_address(1), DG_DTYPE_FLOAT8_E4M3, {t.m, t.k});
    Tensor b(fake_address(2), DG_DTYPE_FLOAT8_E4M3, {n, t.k});
    Tensor d(fake_address(3), t.d_dtype, {t.m, d_cols}, {ldd, 1});
    Tensor sfa(fake_address(5), DG_DTYPE_FLOAT32, {t.m, sf_k}, {1, m4});
    Tensor sfb(fake_address(6), DG_DTYPE_FLOAT32, {cdiv(n, 128), sf_k});
    dg_gemm_options o = DG_GEMM_OPTIONS_INIT;
    o.block_n = t.block_n;
    o.alpha = 0.5f;
    dg_stream* stream = nullptr;
    REQUIRE(dg_stream_create(&stream, 0, nullptr, DG_STREAM_CREATE, nullptr) == DG_SUCCESS);
    const dg_status st =
        dg_fp8_gemm_nt_skip_head_mid(stream, a.t, sfa.t, b.t, sfb.t, d.t, t.left, t.mid, t.right, &o);
    dg_stream_destroy(stream);
    REQUIRE_MESSAGE(st == DG_SUCCESS, std::string(dg_last_error()));
    const std::vector<Launch> launches = fake.take();
    REQUIRE(launches.size() == 1);

    GemmShape s;
    s.kind = GemmKind::kFp8_1D2D, s.m = t.m, s.n = n, s.k = t.k, s.d_dtype = t.d_dtype;
    s.epilogue.head_left = t.left, s.epilogue.head_mid = t.mid, s.epilogue.head_right = t.right;
    dg::ops::GemmOverride over;
    over.block_n = t.block_n;
    GemmConfig cfg;
    REQUIRE(dg::ops::choose_gemm_config(s, kSms, over, &cfg) == DG_SUCCESS);
    CAPTURE(dg::ops::describe(s, cfg));
    const Launch& l = launches[0];
    CHECK(l.kernel == dg::ops::gemm_kernel_spec(s, cfg).kernel_name);
    CHECK(l.kernel.find("_heads" + std::to_string(t.left) + "_" + std::to_string(t.mid) + "_" +
                        std::to_string(t.right)) != std::string::npos);
    CHECK(l.config.grid[0] == unsigned(cfg.grid));
    CHECK(l.config.smem_bytes == cfg.smem_bytes);
    CHECK(cfg.split_k == 1);
    if (t.block_n) CHECK(cfg.block_n == t.block_n);

    REQUIRE(l.params.size() == sizeof(Sm90GemmParams));
    Sm90GemmParams q;
    std::memcpy(&q, l.params.data(), sizeof(q));
    const fake_tensor_map md = map_of(q.tma_d);
    CHECK(md.address == reinterpret_cast<uintptr_t>(fake_address(3)));
    CHECK(md.dtype == (ob == 4 ? CU_TENSOR_MAP_DATA_TYPE_FLOAT32 : CU_TENSOR_MAP_DATA_TYPE_BFLOAT16));
    CHECK(md.rank == 2);
    CHECK(md.dims[0] == uint64_t(d_cols));
    CHECK(md.dims[1] == uint64_t(t.m));
    CHECK(md.stride1 == uint64_t(ldd * ob));
    CHECK(md.box[0] == uint32_t(cfg.d_strip));
    CHECK(md.box[1] == uint32_t(cfg.block_m / cfg.math_wg));
    // Every box lies within one head's left or right part, at least 32 bytes wide, and starts on a
    // 16-byte boundary of D; or no such box exists and the tile is stored from registers (no staging
    // in the shared memory the launch asks for).
    CHECK(cfg.block_n % cfg.d_strip == 0);
    CHECK(cfg.d_strip * ob >= 32);
    if (dg::ops::direct_head_store(s)) {
      CHECK((t.left % cfg.d_strip != 0 || t.right % cfg.d_strip != 0 || t.mid * ob % 16 != 0));
      GemmShape plain = s;
      plain.epilogue = {};
      CHECK(l.config.smem_bytes <
            dg::ops::gemm_smem_bytes(plain, cfg.block_m, cfg.block_n, cfg.stages, cfg.d_bufs, cfg.split_k));
    } else {
      CHECK(t.left % cfg.d_strip == 0);
      CHECK(t.right % cfg.d_strip == 0);
      CHECK(t.mid * ob % 16 == 0);
    }
    CHECK(q.n == uint32_t(n));
    CHECK(q.m == uint32_t(t.m));
    CHECK(q.alpha == 0.5f);
    CHECK(q.d == fake_address(3));
  }
}
