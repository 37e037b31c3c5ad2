// dg_bf16_einsum and dg_fp8_einsum against the fake driver: the per-head forms launch the batched
// GEMM kernel with 3-D maps of a, b and d over the tensors' own strides (views read in place), the
// walk over every head's blocks of rows (padded to even with CTA pairs along M) and the heads'
// divider, each head's partial last row block's short A box, single-line L2 fetches for heads of at
// most 128 rows; the FP8 form adds SFA's map of ceil(r / 128) rows per head and SFB's per-head stride; the
// batch sum sets D to C (or zeros) first and launches units x splits CTAs whose K splits cover the
// batch's K blocks. Also the argument checks the bad-input matrix cannot see (expressions, layouts,
// scales, c, options, prepare's sizes), each naming its argument. No GPU.
#include <doctest/doctest.h>

#include <cstring>
#include <string>
#include <vector>

#include "dg.h"
#include "fake_driver.h"
#include "launch_util.h"
#include "ops/batched_gemm.h"
#include "ops/gemm.h"

namespace {

using dg::ops::BatchedArgs;
using dg::ops::GemmConfig;
using dg::ops::Major;
using dg::ops::Sm90GemmParams;
using namespace dg::test;  // fake_driver.h, launch_util.h

struct Stream {
  dg_stream* s = nullptr;
  Stream() { REQUIRE(dg_stream_create(&s, 0, nullptr, DG_STREAM_CREATE, nullptr) == DG_SUCCESS); }
  ~Stream() { dg_stream_destroy(s); }
};

uint64_t addr(const void* p) { return reinterpret_cast<uintptr_t>(p); }

GemmConfig config_of(const BatchedArgs& args, const dg_gemm_options& o) {
  dg::ops::GemmOverride over;
  over.block_m = o.block_m, over.block_n = o.block_n, over.cluster = o.cluster, over.multicast_a = o.multicast_a;
  GemmConfig c;
  REQUIRE(dg::ops::choose_gemm_config(dg::ops::batched_gemm_shape(args), kSms,
                                      dg::ops::batched_gemm_override(args, over), &c) == DG_SUCCESS);
  return c;
}

Sm90GemmParams only_gemm(FakeDriver& fake, size_t pre, Launch* out) {
  const std::vector<Launch> l = fake.take();
  REQUIRE(l.size() == pre + 1);
  for (size_t i = 0; i < pre; ++i) CHECK(l[i].kernel.find("dg_gemm_scale_f32") == 0);
  *out = l[pre];
  Sm90GemmParams p;
  REQUIRE(out->params.size() == sizeof(p));
  std::memcpy(&p, out->params.data(), sizeof(p));
  return p;
}

// Calls "bhr,hdr->bhd" (absorb) or "bhd,hdr->bhr" on fake tensors: a [b, h, K] at fake address 1
// (heads-first storage when transposed), b [h, d, r] rows r + pad apart at 2, d [b, h, N] at 3.
// Returns the call's problem as batched_gemm.h states it.
BatchedArgs call_per_head(bool absorb, int64_t b, int64_t h, int64_t r, int64_t d, int64_t pad, bool transposed,
                          const dg_gemm_options& o) {
  const int64_t K = absorb ? r : d, N = absorb ? d : r, ldb = r + pad;
  Tensor ta(fake_address(1), DG_DTYPE_BFLOAT16, {b, h, K},
            transposed ? std::vector<int64_t>{K, b * K, 1} : std::vector<int64_t>{});
  Tensor tb(fake_address(2), DG_DTYPE_BFLOAT16, {h, d, r}, {d * ldb, ldb, 1});
  Tensor td(fake_address(3), DG_DTYPE_BFLOAT16, {b, h, N});
  Stream stream;
  REQUIRE_MESSAGE(dg_bf16_einsum(stream.s, absorb ? "bhr,hdr->bhd" : "bhd,hdr->bhr", ta.t, tb.t, td.t, nullptr, &o) ==
                      DG_SUCCESS,
                  std::string(dg_last_error()));
  BatchedArgs args;
  args.batches = h, args.m = b, args.n = N, args.k = K;
  args.b.major = absorb ? Major::kK : Major::kMN;
  return args;
}

void check_per_head(FakeDriver& fake, bool absorb, int64_t b, int64_t h, int64_t r, int64_t d, int64_t pad,
                    bool transposed, const dg_gemm_options& o) {
  CAPTURE(absorb);
  CAPTURE(b);
  CAPTURE(h);
  CAPTURE(o.cluster);
  const int64_t K = absorb ? r : d, N = absorb ? d : r, ldb = r + pad;
  void *pa = fake_address(1), *pb = fake_address(2), *pd = fake_address(3);
  const BatchedArgs args = call_per_head(absorb, b, h, r, d, pad, transposed, o);
  const GemmConfig c = config_of(args, o);
  CAPTURE(dg::ops::describe(dg::ops::batched_gemm_shape(args), c));
  Launch L;
  const Sm90GemmParams p = only_gemm(fake, 0, &L);
  CHECK(L.kernel.find("_bat_") != std::string::npos);
  CHECK(L.config.grid[0] == unsigned(c.grid));
  const bool pair_m = c.cluster == 2 && !c.multicast_a, pair_n = c.cluster == 2 && c.multicast_a;
  const int64_t blocks = (cdiv(b, c.block_m) + (pair_m ? 1 : 0)) / (pair_m ? 2 : 1) * (pair_m ? 2 : 1);
  CHECK(p.m == uint32_t(h * blocks * c.block_m));
  CHECK(p.n == uint32_t(N));
  CHECK(p.k == uint32_t(K));
  CHECK(p.num_groups == uint32_t(h));
  CHECK(p.walk.per_slot.d == uint32_t(blocks));
  for (uint32_t block : {0u, 1u, uint32_t(blocks), uint32_t(h * blocks - 1)})
    CHECK(fast_div_apply(p.walk.per_slot, block) == block / uint32_t(blocks));
  Sm90GemmParams q = p;
  const int64_t units_m = h * blocks / (pair_m ? 2 : 1), units_n = cdiv(cdiv(N, c.block_n), pair_n ? 2 : 1);
  q.walk.per_slot = dg::ops::fast_div(uint32_t(units_m * units_n));
  check_walk(q.walk, units_m, units_n, p.raster_band, p.raster_along_n != 0);
  // a: (K, b, h) with b's rows h * K elements apart and heads K apart (or the transposed storage's).
  const fake_tensor_map am = map_of(p.tma_a), bm = map_of(p.tma_b), dm = map_of(p.tma_d);
  CHECK((am.rank == 3 && am.address == addr(pa)));
  CHECK((am.dims[0] == uint64_t(K) && am.dims[1] == uint64_t(b) && am.dim2 == uint64_t(h)));
  CHECK(am.stride1 == uint64_t((transposed ? K : h * K) * 2));
  CHECK(am.stride2 == uint64_t((transposed ? b * K : K) * 2));
  CHECK((bm.rank == 3 && bm.address == addr(pb) && bm.dim2 == uint64_t(h)));
  CHECK(bm.stride1 == uint64_t(ldb * 2));
  CHECK(bm.stride2 == uint64_t(d * ldb * 2));
  if (absorb) CHECK((bm.dims[0] == uint64_t(r) && bm.dims[1] == uint64_t(d) && bm.box[0] == 64u));
  else CHECK((bm.dims[0] == uint64_t(r) && bm.dims[1] == uint64_t(d) && bm.box[1] == 64u));  // (N, K): r over d
  CHECK((dm.rank == 3 && dm.address == addr(pd)));
  CHECK((dm.dims[0] == uint64_t(N) && dm.dims[1] == uint64_t(b) && dm.dim2 == uint64_t(h)));
  CHECK(dm.stride1 == uint64_t(h * N * 2));
  CHECK(dm.stride2 == uint64_t(N * 2));
  // Heads of at most 128 rows stream the weights: operand maps fetch single lines into L2.
  const uint32_t fetch = b <= 128 ? CU_TENSOR_MAP_L2_PROMOTION_L2_128B : CU_TENSOR_MAP_L2_PROMOTION_L2_256B;
  CHECK((am.l2_promotion == fetch && bm.l2_promotion == fetch));
  CHECK(dm.l2_promotion == uint32_t(CU_TENSOR_MAP_L2_PROMOTION_L2_256B));
  // A head's partial last row block (K-major a, not shared by a pair): the same map with a box of its
  // rows rounded up to 8.
  const int64_t tail = (b % c.block_m + 7) / 8 * 8;
  if (!(c.cluster == 2 && c.multicast_a) && tail != 0 && tail < c.block_m) {
    const fake_tensor_map tm = map_of(p.tma_a_tail);
    CHECK((tm.rank == 3 && tm.address == addr(pa) && tm.dims[1] == uint64_t(b) && tm.dim2 == uint64_t(h)));
    CHECK((tm.box[0] == am.box[0] && tm.box[1] == uint32_t(tail) && tm.l2_promotion == fetch));
  }
}

// A per-head form of at most 32 rows over K <= 512 (plan_batched_gemm): the kernel runs D_h^T = B_h . A_h^T,
// its A the weights (N rows per head), its B the b rows (block_n = b rounded up to 8), and stores
// into D's own map (N, b, h) through boxes of 64 columns by block_n rows with the 128-byte swizzle.
void check_swapped(FakeDriver& fake, bool absorb, int64_t b, int64_t h, int64_t r, int64_t d, int64_t pad,
                   bool transposed) {
  CAPTURE(absorb);
  CAPTURE(b);
  CAPTURE(h);
  const int64_t K = absorb ? r : d, N = absorb ? d : r, ldb = r + pad;
  void *pa = fake_address(1), *pb = fake_address(2), *pd = fake_address(3);
  const BatchedArgs args = call_per_head(absorb, b, h, r, d, pad, transposed, DG_GEMM_OPTIONS_INIT);
  const dg::ops::BatchedPlan plan = dg::ops::plan_batched_gemm(args, {});
  REQUIRE(plan.shape.transpose_d);
  GemmConfig c;
  REQUIRE(dg::ops::choose_gemm_config(plan.shape, kSms, plan.over, &c) == DG_SUCCESS);
  CAPTURE(dg::ops::describe(plan.shape, c));
  CHECK(c.block_n == int((b + 7) / 8 * 8));
  Launch L;
  const Sm90GemmParams p = only_gemm(fake, 0, &L);
  CHECK(L.kernel.find("_bat_") != std::string::npos);
  CHECK(L.kernel.find("_dt_") != std::string::npos);
  const int64_t blocks = cdiv(N, c.block_m);
  CHECK(p.m == uint32_t(h * blocks * c.block_m));
  CHECK(p.n == uint32_t(b));
  CHECK(p.k == uint32_t(K));
  CHECK(p.num_groups == uint32_t(h));
  CHECK(p.walk.per_slot.d == uint32_t(blocks));
  const fake_tensor_map am = map_of(p.tma_a), bm = map_of(p.tma_b), dm = map_of(p.tma_d);
  // The kernel's A: the weights, K-major (r, d, h) for "bhr", MN-major (r over d, h) for "bhd".
  CHECK((am.rank == 3 && am.address == addr(pb) && am.dim2 == uint64_t(h)));
  CHECK((am.dims[0] == uint64_t(r) && am.dims[1] == uint64_t(d)));
  CHECK(am.stride1 == uint64_t(ldb * 2));
  if (absorb) CHECK((am.box[0] == 64u && am.box[1] == uint32_t(c.block_m)));
  else CHECK((am.box[0] == 64u && am.box[1] == 64u));
  // The kernel's B: the b rows of each head, K-major, one box of block_n rows.
  CHECK((bm.rank == 3 && bm.address == addr(pa)));
  CHECK((bm.dims[0] == uint64_t(K) && bm.dims[1] == uint64_t(b) && bm.dim2 == uint64_t(h)));
  CHECK(bm.stride1 == uint64_t((transposed ? K : h * K) * 2));
  CHECK((bm.box[0] == 64u && bm.box[1] == uint32_t(c.block_n)));
  // D: the caller's map, boxes of 64 columns by block_n rows.
  CHECK((dm.rank == 3 && dm.address == addr(pd)));
  CHECK((dm.dims[0] == uint64_t(N) && dm.dims[1] == uint64_t(b) && dm.dim2 == uint64_t(h)));
  CHECK((dm.stride1 == uint64_t(h * N * 2) && dm.stride2 == uint64_t(N * 2)));
  CHECK((dm.box[0] == 64u && dm.box[1] == uint32_t(c.block_n)));
  CHECK(dm.swizzle == uint32_t(CU_TENSOR_MAP_SWIZZLE_128B));
}

// "bmk,bnk->mn": c_mode 0 = none (D zeroed first), 1 = d itself, 2 = separate (D := C first).
void check_sum(FakeDriver& fake, int64_t s, int64_t m, int64_t n, int64_t k, int c_mode, const dg_gemm_options& o) {
  CAPTURE(s);
  CAPTURE(m);
  CAPTURE(n);
  CAPTURE(k);
  CAPTURE(c_mode);
  void *pa = fake_address(1), *pb = fake_address(2), *pd = fake_address(3), *pc = fake_address(4);
  Tensor ta(pa, DG_DTYPE_BFLOAT16, {s, m, k});
  Tensor tb(pb, DG_DTYPE_BFLOAT16, {s, n, k});
  Tensor td(pd, DG_DTYPE_FLOAT32, {m, n});
  Tensor tc(c_mode == 1 ? pd : pc, DG_DTYPE_FLOAT32, {m, n});
  Stream stream;
  REQUIRE_MESSAGE(dg_bf16_einsum(stream.s, "bmk,bnk->mn", ta.t, tb.t, td.t, c_mode ? tc.t : nullptr, &o) == DG_SUCCESS,
                  std::string(dg_last_error()));
  BatchedArgs args;
  args.reduce = true, args.batches = s, args.m = m, args.n = n, args.k = k, args.d_dtype = DG_DTYPE_FLOAT32;
  const GemmConfig c = config_of(args, o);
  Launch L;
  const Sm90GemmParams p = only_gemm(fake, c_mode == 1 ? 0 : 1, &L);
  CHECK(L.kernel.find("_bsum_") != std::string::npos);
  CHECK(L.kernel.find("_acc_") != std::string::npos);
  const int64_t units = cdiv(cdiv(m, c.block_m), c.cluster == 2 && !c.multicast_a ? 2 : 1) *
                        cdiv(cdiv(n, c.block_n), c.cluster == 2 && c.multicast_a ? 2 : 1);
  const int64_t num_kb = s * cdiv(k, c.block_k);
  const int64_t splits = dg::ops::batch_reduced_splits(units, kSms / c.cluster, num_kb);
  CHECK(p.num_groups == uint32_t(splits));
  CHECK(p.group_rows == uint32_t(s));
  CHECK(p.k == uint32_t(k));
  CHECK(p.walk.per_slot.d == uint32_t(units));
  CHECK(L.config.grid[0] == unsigned(std::min<int64_t>(units * splits, kSms / c.cluster) * c.cluster));
  // The splits cover the K blocks once, in order.
  int64_t covered = 0;
  for (int64_t j = 0; j < splits; ++j) {
    const int64_t begin = j * num_kb / splits, end = (j + 1) * num_kb / splits;
    CHECK(begin == covered);
    CHECK(end - begin >= (splits > 1 ? 4 : 1));
    covered = end;
  }
  CHECK(covered == num_kb);
  const fake_tensor_map am = map_of(p.tma_a), dm = map_of(p.tma_d);
  CHECK((am.rank == 3 && am.dims[0] == uint64_t(k) && am.dims[1] == uint64_t(m) && am.dim2 == uint64_t(s)));
  CHECK((am.stride1 == uint64_t(k * 2) && am.stride2 == uint64_t(m * k * 2)));
  CHECK((dm.rank == 2 && dm.address == addr(pd) && dm.dims[0] == uint64_t(n) && dm.dims[1] == uint64_t(m)));
  CHECK(dm.dtype == uint32_t(CU_TENSOR_MAP_DATA_TYPE_FLOAT32));
}

// dg_fp8_einsum "bhr,hdr->bhd": a [b, h, r] E4M3, b [h, d, r] rows r + pad apart, d [b, h, d], sfa the
// [h, b, ceil(r / 128)] MN-major view with K blocks ld_sfa apart, sfb [h, ceil(d / 128), ceil(r / 128)].
void check_fp8(FakeDriver& fake, int64_t b, int64_t h, int64_t r, int64_t d, int64_t pad, int64_t ld_sfa,
               const dg_gemm_options& o) {
  CAPTURE(b);
  CAPTURE(h);
  CAPTURE(r);
  CAPTURE(d);
  CAPTURE(o.cluster);
  const int64_t ldb = r + pad, sf_k = cdiv(r, 128), sf_n = cdiv(d, 128);
  void *pa = fake_address(1), *pb = fake_address(2), *pd = fake_address(3), *psa = fake_address(4),
       *psb = fake_address(5);
  Tensor ta(pa, DG_DTYPE_FLOAT8_E4M3, {b, h, r});
  Tensor tb(pb, DG_DTYPE_FLOAT8_E4M3, {h, d, r}, {d * ldb, ldb, 1});
  Tensor td(pd, DG_DTYPE_BFLOAT16, {b, h, d});
  Tensor tsa(psa, DG_DTYPE_FLOAT32, {b, h, sf_k}, {1, sf_k * ld_sfa, ld_sfa});
  Tensor tsb(psb, DG_DTYPE_FLOAT32, {h, sf_n, sf_k});
  Stream stream;
  REQUIRE_MESSAGE(dg_fp8_einsum(stream.s, "bhr, hdr -> bhd", ta.t, tsa.t, tb.t, tsb.t, td.t, nullptr, &o) ==
                      DG_SUCCESS,
                  std::string(dg_last_error()));
  BatchedArgs args;
  args.kind = dg::ops::GemmKind::kFp8_1D2D;
  args.batches = h, args.m = b, args.n = d, args.k = r;
  const GemmConfig c = config_of(args, o);
  CAPTURE(dg::ops::describe(dg::ops::batched_gemm_shape(args), c));
  Launch L;
  const Sm90GemmParams p = only_gemm(fake, 0, &L);
  CHECK(L.kernel.find("fp8_1d2d") != std::string::npos);
  CHECK(L.kernel.find("_bat_") != std::string::npos);
  CHECK(L.config.grid[0] == unsigned(c.grid));
  const bool pair_m = c.cluster == 2 && !c.multicast_a;
  const int64_t blocks = (cdiv(b, c.block_m) + (pair_m ? 1 : 0)) / (pair_m ? 2 : 1) * (pair_m ? 2 : 1);
  CHECK(p.m == uint32_t(h * blocks * c.block_m));
  CHECK((p.n == uint32_t(d) && p.k == uint32_t(r) && p.num_groups == uint32_t(h)));
  // a, b: 3-D byte maps over the views; d: the BF16 3-D map.
  const fake_tensor_map am = map_of(p.tma_a), bm = map_of(p.tma_b), dm = map_of(p.tma_d), sm = map_of(p.tma_sfa);
  CHECK((am.rank == 3 && am.address == addr(pa) && am.dtype == uint32_t(CU_TENSOR_MAP_DATA_TYPE_UINT8)));
  CHECK((am.dims[0] == uint64_t(r) && am.dims[1] == uint64_t(b) && am.dim2 == uint64_t(h)));
  CHECK((am.stride2 == uint64_t(r) && am.box[0] == 128u));
  if (b > 1) CHECK(am.stride1 == uint64_t(h * r));  // one row: no row stride
  CHECK((bm.rank == 3 && bm.address == addr(pb) && bm.dtype == uint32_t(CU_TENSOR_MAP_DATA_TYPE_UINT8)));
  CHECK((bm.dims[0] == uint64_t(r) && bm.dims[1] == uint64_t(d) && bm.dim2 == uint64_t(h)));
  CHECK((bm.stride1 == uint64_t(ldb) && bm.stride2 == uint64_t(d * ldb)));
  CHECK((dm.rank == 3 && dm.dims[0] == uint64_t(d) && dm.dims[1] == uint64_t(b) && dm.dim2 == uint64_t(h)));
  // sfa: one 2-D map, b scales per row, ceil(r / 128) rows per head, boxes of a tile's rows.
  CHECK((sm.rank == 2 && sm.address == addr(psa) && sm.dtype == uint32_t(CU_TENSOR_MAP_DATA_TYPE_FLOAT32)));
  CHECK((sm.dims[0] == uint64_t(b) && sm.dims[1] == uint64_t(h * sf_k) && sm.stride1 == uint64_t(ld_sfa * 4)));
  CHECK((sm.box[0] == unsigned(c.block_m) && sm.box[1] == 1u));
  // sfb: read by the producer at head * sfb_stride_g.
  CHECK(addr(p.sfb) == addr(psb));
  CHECK((p.sfb_stride_g == sf_n * sf_k && p.sfb_stride_n == sf_k && p.sfb_stride_k == 1));
  CHECK(p.sfb_rows == uint32_t(sf_n));
}

dg_gemm_options pair(int bm, int bn, int multicast_a) {
  dg_gemm_options o = DG_GEMM_OPTIONS_INIT;
  o.block_m = bm, o.block_n = bn, o.cluster = 2, o.multicast_a = multicast_a;
  return o;
}

}  // namespace

TEST_CASE("einsum per-head forms launch 3-D maps over the views and walk every head's blocks") {
  FakeDriver fake(sizeof(Sm90GemmParams));
  const dg_gemm_options none = DG_GEMM_OPTIONS_INIT;
  for (bool absorb : {true, false}) {
    check_per_head(fake, absorb, 64, 128, 512, 128, 128, false, none);  // DeepGEMM's y[:, :, :r]
    check_per_head(fake, absorb, 4, 8, 4096, 1024, 0, false, none);     // few rows, long K: not swapped
    check_per_head(fake, absorb, 4096, 8, 4096, 1024, 0, false, none);
    check_swapped(fake, absorb, 4, 128, 512, 128, 128, false);
    check_swapped(fake, absorb, 13, 5, 200, 72, 8, true);
    check_swapped(fake, absorb, 32, 3, 136, 264, 0, false);
    check_per_head(fake, absorb, 77, 5, 200, 72, 8, true, none);
    check_per_head(fake, absorb, 300, 3, 200, 256, 0, false, pair(128, absorb ? 64 : 128, 0));  // pairs along M
    check_per_head(fake, absorb, 300, 3, 200, 256, 0, false, pair(64, 128, 1));                 // along N
  }
}

// bhd,hdr->bhr's batch (h heads of b rows, N = r, K = d, MN-major B) as the heuristic plans it.
GemmConfig bhd_config(int64_t b, int64_t h, int64_t r, int64_t d) {
  BatchedArgs args;
  args.batches = h, args.m = b, args.n = r, args.k = d;
  args.b.major = Major::kMN;
  return config_of(args, DG_GEMM_OPTIONS_INIT);
}

TEST_CASE("einsum per-head forms: CTA pairs over long runs of short-K tiles (sharing A) and of an MN-major B's "
          "(sharing B), bands that keep A in L2") {
  FakeDriver fake(sizeof(Sm90GemmParams));
  // h 128, K 128 (one or two K blocks): pairs along N from 24 rounds of tiles on (b 2048: 31 rounds).
  for (int64_t b : {1024, 2048, 8192}) {
    CAPTURE(b);
    const GemmConfig c = bhd_config(b, 128, 512, 128);
    CHECK(c.cluster == (b >= 2048 ? 2 : 1));
    CHECK(c.multicast_a == (b >= 2048));
  }
  check_per_head(fake, false, 2048, 128, 512, 128, 128, false, DG_GEMM_OPTIONS_INIT);
  // bhr (K-major B: no pair) at h 8, b 4096, N 4096: bands of 8 along N hold the fewest operand rows
  // in flight, but each re-reads every head's A: 64 MB at K 1024, more than L2 keeps between bands
  // (bands along M then); 16 MB at K 256.
  for (int64_t r : {256, 1024}) {
    CAPTURE(r);
    BatchedArgs args;
    args.batches = 8, args.m = 4096, args.n = 4096, args.k = r;
    const GemmConfig c = config_of(args, DG_GEMM_OPTIONS_INIT);
    CHECK(c.cluster == 1);
    CHECK(c.raster_along_n == (r == 256));
  }
  // b 4096 (31 rounds), K of 4 or 16 blocks of an MN-major B: pairs along M that share B.
  for (int64_t d : {256, 1024}) {
    CAPTURE(d);
    const GemmConfig c = bhd_config(4096, 8, 4096, d);
    CHECK(c.cluster == 2);
    CHECK(c.multicast_a == 0);
  }
  // b 3968: 31 row blocks of 128 per head, an odd count: a pair's blocks would straddle two heads.
  const GemmConfig odd = bhd_config(3968, 8, 4096, 1024);
  CHECK(odd.cluster == (cdiv(3968, odd.block_m) % 2 == 0 ? 2 : 1));
}

TEST_CASE("einsum bmk,bnk->mn: D set first, units x splits CTAs over the batch's K blocks") {
  FakeDriver fake(sizeof(Sm90GemmParams));
  const dg_gemm_options none = DG_GEMM_OPTIONS_INIT;
  for (int c_mode : {0, 1, 2}) {
    check_sum(fake, 129, 128, 384, 128, c_mode, none);
    check_sum(fake, 4096, 384, 128, 384, c_mode, none);
  }
  check_sum(fake, 7, 77, 40, 200, 2, none);
  check_sum(fake, 1, 8, 8, 8, 0, none);
  check_sum(fake, 9, 200, 136, 200, 1, pair(128, 64, 0));
}

TEST_CASE("einsum refuses what it cannot run, naming the argument") {
  FakeDriver fake(sizeof(Sm90GemmParams));
  Stream stream;
  void *pa = fake_address(1), *pb = fake_address(2), *pd = fake_address(3);
  Tensor a(pa, DG_DTYPE_BFLOAT16, {64, 4, 128});
  Tensor b(pb, DG_DTYPE_BFLOAT16, {4, 64, 128});
  Tensor d(pd, DG_DTYPE_BFLOAT16, {64, 4, 64});
  auto expect = [&](dg_status st, dg_status want, const char* needle) {
    CHECK_MESSAGE(st == want, dg_status_string(st), ": ", dg_last_error());
    CHECK_MESSAGE(std::strstr(dg_last_error(), needle) != nullptr, dg_last_error());
  };
  expect(dg_bf16_einsum(stream.s, "bhr,hdr->bhr", a.t, b.t, d.t, nullptr, nullptr), DG_ERROR_UNSUPPORTED, "expr");
  expect(dg_bf16_einsum(stream.s, "mk,nk->mn", a.t, b.t, d.t, nullptr, nullptr), DG_ERROR_UNSUPPORTED, "bmk,bnk->mn");
  expect(dg_bf16_einsum(stream.s, nullptr, a.t, b.t, d.t, nullptr, nullptr), DG_ERROR_INVALID_ARGUMENT, "expr");
  const std::string longer(200, 'b');
  expect(dg_bf16_einsum(stream.s, longer.c_str(), a.t, b.t, d.t, nullptr, nullptr), DG_ERROR_UNSUPPORTED, "expr");
  // Only the batch sum accumulates.
  expect(dg_bf16_einsum(stream.s, "bhr,hdr->bhd", a.t, b.t, d.t, d.t, nullptr), DG_ERROR_INVALID_ARGUMENT, "c:");
  // The wrong form's operands: "bhd,hdr->bhr" wants a [b, h, d = 64].
  expect(dg_bf16_einsum(stream.s, "bhd,hdr->bhr", a.t, b.t, d.t, nullptr, nullptr), DG_ERROR_INVALID_ARGUMENT, "a:");
  // Options einsum does not take.
  for (int field = 0; field < 5; ++field) {
    dg_gemm_options o = DG_GEMM_OPTIONS_INIT;
    const char* name = field == 0 ? "options.alpha" : field == 1 ? "options.split_k" : field == 2 ? "options.kernel"
                                                    : field == 3 ? "options.fp8_promotion" : "options.epilogue";
    if (field == 0) o.alpha = 2.0f;
    if (field == 1) o.split_k = 2;
    if (field == 2) o.kernel = DG_GEMM_KERNEL_SKINNY;
    if (field == 3) o.fp8_promotion = DG_FP8_PROMOTION_AFTER;
    dg_gemm_epilogue epi = DG_GEMM_EPILOGUE_INIT;
    if (field == 4) o.epilogue = &epi;
    expect(dg_bf16_einsum(stream.s, "bhr,hdr->bhd", a.t, b.t, d.t, nullptr, &o), DG_ERROR_INVALID_ARGUMENT, name);
  }
  // Layouts TMA cannot read: a stride not a multiple of 16 bytes, a last dimension not contiguous.
  Tensor odd_b(pb, DG_DTYPE_BFLOAT16, {4, 64, 128}, {64 * 132, 132, 1});
  expect(dg_bf16_einsum(stream.s, "bhr,hdr->bhd", a.t, odd_b.t, d.t, nullptr, nullptr), DG_ERROR_UNSUPPORTED, "b:");
  Tensor cols_a(pa, DG_DTYPE_BFLOAT16, {64, 4, 128}, {8, 64 * 128 * 8, 64});
  expect(dg_bf16_einsum(stream.s, "bhr,hdr->bhd", cols_a.t, b.t, d.t, nullptr, nullptr), DG_ERROR_UNSUPPORTED, "a:");
  // The batch sum writes FP32 d; c shares d's data only as d itself.
  Tensor sa(pa, DG_DTYPE_BFLOAT16, {4, 64, 128}), sb(pb, DG_DTYPE_BFLOAT16, {4, 32, 128});
  Tensor sd_bf16(pd, DG_DTYPE_BFLOAT16, {64, 32}), sd(pd, DG_DTYPE_FLOAT32, {64, 32}, {40, 1});
  Tensor sc_alias(pd, DG_DTYPE_FLOAT32, {64, 32});
  expect(dg_bf16_einsum(stream.s, "bmk,bnk->mn", sa.t, sb.t, sd_bf16.t, nullptr, nullptr), DG_ERROR_INVALID_ARGUMENT,
         "d:");
  expect(dg_bf16_einsum(stream.s, "bmk,bnk->mn", sa.t, sb.t, sd.t, sc_alias.t, nullptr), DG_ERROR_INVALID_ARGUMENT,
         "c:");
  Tensor sb_k(pb, DG_DTYPE_BFLOAT16, {4, 32, 120});
  expect(dg_bf16_einsum(stream.s, "bmk,bnk->mn", sa.t, sb_k.t, sd.t, nullptr, nullptr), DG_ERROR_INVALID_ARGUMENT,
         "b:");
  // prepare: operands that do not fit the expression, c for a per-head form.
  const int64_t as[3] = {64, 4, 128}, bs[3] = {4, 64, 128}, bad[3] = {5, 64, 128};
  expect(dg_bf16_einsum_prepare(stream.s, "bhr,hdr->bhd", as, bad, 0, nullptr), DG_ERROR_INVALID_ARGUMENT, "b_sizes");
  expect(dg_bf16_einsum_prepare(stream.s, "bmk,bnk->mn", as, bs, 0, nullptr), DG_ERROR_INVALID_ARGUMENT, "b_sizes");
  expect(dg_bf16_einsum_prepare(stream.s, "bhr,hdr->bhd", as, bs, 1, nullptr), DG_ERROR_INVALID_ARGUMENT, "with_c");
  expect(dg_bf16_einsum_prepare(stream.s, "bmk,bnk->mm", as, bs, 0, nullptr), DG_ERROR_UNSUPPORTED, "expr");
  // Nothing reached the driver.
  CHECK(fake.take().empty());
}

TEST_CASE("fp8 einsum launches the batched FP8 GEMM with per-head scale maps") {
  FakeDriver fake(sizeof(Sm90GemmParams));
  const dg_gemm_options none = DG_GEMM_OPTIONS_INIT;
  check_fp8(fake, 4096, 8, 4096, 1024, 0, 4096, none);  // DeepGEMM's test shape
  check_fp8(fake, 4100, 8, 4096, 1024, 0, 4100, none);  // 256-row tiles with a tail of 4 rows per head
  check_fp8(fake, 4, 8, 4096, 1024, 0, 4, none);
  check_fp8(fake, 77, 5, 208, 72, 16, 80, none);        // tails in b, r and d; scale rows padded
  check_fp8(fake, 1, 3, 128, 264, 0, 4, none);          // one K block: the head stride gives L
  check_fp8(fake, 300, 3, 384, 336, 0, 304, pair(128, 64, 0));
  check_fp8(fake, 300, 3, 384, 336, 0, 304, pair(64, 128, 1));
}

// Per head 4096 x 1024 x 4096: 128x192 tiles leave the sixth column block two-thirds empty (0.92 of
// DeepGEMM on an H200), 256x128 tiles ran 1.01-1.05 (bench/results/README.md). Batched calls are not held
// to the 192 columns of hint-sized grouped calls.
TEST_CASE("fp8 einsum: 256-row tiles from 4096 rows per head") {
  BatchedArgs args;
  args.kind = dg::ops::GemmKind::kFp8_1D2D;
  args.batches = 8, args.m = 4096, args.n = 1024, args.k = 4096;
  const GemmConfig c = config_of(args, DG_GEMM_OPTIONS_INIT);
  CHECK((c.block_m == 256 && c.block_n == 128));
  args.m = 2048;  // below: 128-row tiles, as dense calls
  CHECK(config_of(args, DG_GEMM_OPTIONS_INIT).block_m <= 128);
}

TEST_CASE("fp8 einsum: r = 0 writes zeros per head, empty outputs launch nothing") {
  FakeDriver fake(sizeof(Sm90GemmParams));
  Stream stream;
  void *pa = fake_address(1), *pb = fake_address(2), *pd = fake_address(3), *ps = fake_address(4);
  Tensor a(pa, DG_DTYPE_FLOAT8_E4M3, {7, 3, 0}), b(pb, DG_DTYPE_FLOAT8_E4M3, {3, 40, 0});
  Tensor sfa(ps, DG_DTYPE_FLOAT32, {7, 3, 0}), sfb(ps, DG_DTYPE_FLOAT32, {3, 1, 0});
  Tensor d(pd, DG_DTYPE_BFLOAT16, {7, 3, 40});
  REQUIRE_MESSAGE(dg_fp8_einsum(stream.s, "bhr,hdr->bhd", a.t, sfa.t, b.t, sfb.t, d.t, nullptr, nullptr) == DG_SUCCESS,
                  dg_last_error());
  const std::vector<Launch> l = fake.take();
  REQUIRE(l.size() == 3u);
  for (const Launch& x : l) CHECK(x.kernel.find("dg_gemm_scale_bf16_zero") == 0);
  Tensor a0(pa, DG_DTYPE_FLOAT8_E4M3, {0, 3, 256}), sfa0(ps, DG_DTYPE_FLOAT32, {0, 3, 2});
  Tensor b1(pb, DG_DTYPE_FLOAT8_E4M3, {3, 40, 256}), sfb1(ps, DG_DTYPE_FLOAT32, {3, 1, 2});
  Tensor d0(pd, DG_DTYPE_BFLOAT16, {0, 3, 40});
  REQUIRE(dg_fp8_einsum(stream.s, "bhr,hdr->bhd", a0.t, sfa0.t, b1.t, sfb1.t, d0.t, nullptr, nullptr) == DG_SUCCESS);
  CHECK(fake.take().empty());
}

TEST_CASE("fp8 einsum refuses what it cannot run, naming the argument") {
  FakeDriver fake(sizeof(Sm90GemmParams));
  Stream stream;
  void *pa = fake_address(1), *pb = fake_address(2), *pd = fake_address(3), *psa = fake_address(4),
       *psb = fake_address(5);
  // b = 64, h = 4, r = 256, d = 200: two K blocks, two 128-row blocks of d.
  Tensor a(pa, DG_DTYPE_FLOAT8_E4M3, {64, 4, 256});
  Tensor b(pb, DG_DTYPE_FLOAT8_E4M3, {4, 200, 256});
  Tensor d(pd, DG_DTYPE_BFLOAT16, {64, 4, 200});
  Tensor sfa(psa, DG_DTYPE_FLOAT32, {64, 4, 2}, {1, 128, 64});
  Tensor sfb(psb, DG_DTYPE_FLOAT32, {4, 2, 2});
  auto expect = [&](dg_status st, dg_status want, const char* needle) {
    CHECK_MESSAGE(st == want, dg_status_string(st), ": ", dg_last_error());
    CHECK_MESSAGE(std::strstr(dg_last_error(), needle) != nullptr, dg_last_error());
  };
  auto call = [&](const char* expr, const dg_tensor* ta, const dg_tensor* tsa, const dg_tensor* tb,
                  const dg_tensor* tsb, const dg_tensor* tdd, const dg_tensor* tc, const dg_gemm_options* o) {
    return dg_fp8_einsum(stream.s, expr, ta, tsa, tb, tsb, tdd, tc, o);
  };
  REQUIRE_MESSAGE(call("bhr,hdr->bhd", a.t, sfa.t, b.t, sfb.t, d.t, nullptr, nullptr) == DG_SUCCESS, dg_last_error());
  fake.take();
  // Expressions: DeepGEMM's SM100-only FP8 forms and the BF16-only ones.
  expect(call("bhd,hdr->bhr", a.t, sfa.t, b.t, sfb.t, d.t, nullptr, nullptr), DG_ERROR_UNSUPPORTED, "SM100");
  expect(call("bhd,bhr->hdr", a.t, sfa.t, b.t, sfb.t, d.t, nullptr, nullptr), DG_ERROR_UNSUPPORTED, "SM100");
  expect(call("bmk,bnk->mn", a.t, sfa.t, b.t, sfb.t, d.t, nullptr, nullptr), DG_ERROR_UNSUPPORTED, "bhr,hdr->bhd");
  expect(call(nullptr, a.t, sfa.t, b.t, sfb.t, d.t, nullptr, nullptr), DG_ERROR_INVALID_ARGUMENT, "expr");
  // No accumulation, no FP32 d (DeepGEMM's SM90 path has neither).
  expect(call("bhr,hdr->bhd", a.t, sfa.t, b.t, sfb.t, d.t, d.t, nullptr), DG_ERROR_UNSUPPORTED, "c:");
  Tensor d32(pd, DG_DTYPE_FLOAT32, {64, 4, 200});
  expect(call("bhr,hdr->bhd", a.t, sfa.t, b.t, sfb.t, d32.t, nullptr, nullptr), DG_ERROR_UNSUPPORTED, "d:");
  // Operand dtypes and shapes.
  Tensor a16(pa, DG_DTYPE_BFLOAT16, {64, 4, 256});
  expect(call("bhr,hdr->bhd", a16.t, sfa.t, b.t, sfb.t, d.t, nullptr, nullptr), DG_ERROR_INVALID_ARGUMENT, "a:");
  Tensor b_r(pb, DG_DTYPE_FLOAT8_E4M3, {4, 200, 384});
  expect(call("bhr,hdr->bhd", a.t, sfa.t, b_r.t, sfb.t, d.t, nullptr, nullptr), DG_ERROR_INVALID_ARGUMENT, "a:");
  Tensor d_h(pd, DG_DTYPE_BFLOAT16, {64, 4, 192});
  expect(call("bhr,hdr->bhd", a.t, sfa.t, b.t, sfb.t, d_h.t, nullptr, nullptr), DG_ERROR_INVALID_ARGUMENT, "d:");
  expect(call("bhr,hdr->bhd", a.t, nullptr, b.t, sfb.t, d.t, nullptr, nullptr), DG_ERROR_INVALID_ARGUMENT, "sfa");
  expect(call("bhr,hdr->bhd", a.t, sfa.t, b.t, nullptr, d.t, nullptr, nullptr), DG_ERROR_INVALID_ARGUMENT, "sfb");
  // A row of r = 120 FP8 codes is not a multiple of 16 bytes: TMA cannot read a's heads.
  Tensor a120(pa, DG_DTYPE_FLOAT8_E4M3, {64, 4, 120}), b120(pb, DG_DTYPE_FLOAT8_E4M3, {4, 200, 120});
  Tensor sfa1(psa, DG_DTYPE_FLOAT32, {64, 4, 1}, {1, 64, 64}), sfb1(psb, DG_DTYPE_FLOAT32, {4, 2, 1});
  expect(call("bhr,hdr->bhd", a120.t, sfa1.t, b120.t, sfb1.t, d.t, nullptr, nullptr), DG_ERROR_UNSUPPORTED, "b:");
  // sfa: per_token_cast_to_fp8's row-major [b, h, 2] is not the MN-major layout; nor a K-block stride
  // off 16 bytes, one below b, or heads not ceil(r / 128) K blocks apart; the shape is checked.
  const std::vector<std::vector<int64_t>> bad_strides = {{8, 2, 1}, {1, 132, 66}, {1, 120, 60}, {1, 192, 64}};
  for (const auto& st : bad_strides) {
    Tensor t(psa, DG_DTYPE_FLOAT32, {64, 4, 2}, st);
    CAPTURE(st[1]);
    expect(call("bhr,hdr->bhd", a.t, t.t, b.t, sfb.t, d.t, nullptr, nullptr), DG_ERROR_INVALID_ARGUMENT, "sfa:");
  }
  Tensor sfa_k(psa, DG_DTYPE_FLOAT32, {64, 4, 3}, {1, 192, 64});
  expect(call("bhr,hdr->bhd", a.t, sfa_k.t, b.t, sfb.t, d.t, nullptr, nullptr), DG_ERROR_INVALID_ARGUMENT, "sfa:");
  Tensor sfa_off(static_cast<char*>(psa) + 4, DG_DTYPE_FLOAT32, {64, 4, 2}, {1, 128, 64});
  expect(call("bhr,hdr->bhd", a.t, sfa_off.t, b.t, sfb.t, d.t, nullptr, nullptr), DG_ERROR_INVALID_ARGUMENT, "sfa");
  // sfb: [h, ceil(d / 128), ceil(r / 128)] FP32.
  Tensor sfb_n(psb, DG_DTYPE_FLOAT32, {4, 1, 2}), sfb_t(psb, DG_DTYPE_BFLOAT16, {4, 2, 2});
  expect(call("bhr,hdr->bhd", a.t, sfa.t, b.t, sfb_n.t, d.t, nullptr, nullptr), DG_ERROR_INVALID_ARGUMENT, "sfb:");
  expect(call("bhr,hdr->bhd", a.t, sfa.t, b.t, sfb_t.t, d.t, nullptr, nullptr), DG_ERROR_INVALID_ARGUMENT, "sfb");
  // Options: the 1D1D recipe is not DeepGEMM's einsum recipe; alpha, workspace, epilogue are refused.
  dg_gemm_options o = DG_GEMM_OPTIONS_INIT;
  o.recipe = DG_FP8_RECIPE_1D1D;
  expect(call("bhr,hdr->bhd", a.t, sfa.t, b.t, sfb.t, d.t, nullptr, &o), DG_ERROR_UNSUPPORTED, "options.recipe");
  o = DG_GEMM_OPTIONS_INIT;
  o.alpha = 0.5f;
  expect(call("bhr,hdr->bhd", a.t, sfa.t, b.t, sfb.t, d.t, nullptr, &o), DG_ERROR_INVALID_ARGUMENT, "options.alpha");
  o = DG_GEMM_OPTIONS_INIT;
  o.split_k = 4;
  expect(call("bhr,hdr->bhd", a.t, sfa.t, b.t, sfb.t, d.t, nullptr, &o), DG_ERROR_INVALID_ARGUMENT, "options.split_k");
  // prepare.
  const int64_t as[3] = {64, 4, 256}, bs[3] = {4, 200, 256}, bad[3] = {4, 200, 128}, neg[3] = {-1, 4, 256};
  expect(dg_fp8_einsum_prepare(stream.s, "bhr,hdr->bhd", as, bad, 0, nullptr), DG_ERROR_INVALID_ARGUMENT, "b_sizes");
  expect(dg_fp8_einsum_prepare(stream.s, "bhr,hdr->bhd", neg, bs, 0, nullptr), DG_ERROR_INVALID_ARGUMENT, "a_sizes[0]");
  expect(dg_fp8_einsum_prepare(stream.s, "bhr,hdr->bhd", as, bs, 1, nullptr), DG_ERROR_UNSUPPORTED, "with_c");
  expect(dg_fp8_einsum_prepare(stream.s, "bhr,hdr->bhd", as, bs, 2, nullptr), DG_ERROR_INVALID_ARGUMENT, "with_c");
  expect(dg_fp8_einsum_prepare(stream.s, "bhd,hdr->bhr", as, bs, 0, nullptr), DG_ERROR_UNSUPPORTED, "expr");
  expect(dg_fp8_einsum_prepare(stream.s, "bhr,hdr->bhd", nullptr, bs, 0, nullptr), DG_ERROR_INVALID_ARGUMENT,
         "a_sizes");
  CHECK(fake.take().empty());
  // prepare loads the GEMM kernel and launches nothing.
  CHECK_MESSAGE(dg_fp8_einsum_prepare(stream.s, "bhr,hdr->bhd", as, bs, 0, nullptr) == DG_SUCCESS, dg_last_error());
  CHECK(fake.take().empty());
}
