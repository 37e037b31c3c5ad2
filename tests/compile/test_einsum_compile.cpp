// The batched GEMMs behind dg_bf16_einsum and dg_fp8_einsum (sched::GemmType kBatched /
// kBatchReduced): every config the heuristic picks for DeepGEMM's einsum test shapes and for the
// GPU tests' odd shapes renders and NVRTC-compiles for sm_90a without spills; the K splits of the
// batch-reduced form. No GPU.
#include <doctest/doctest.h>

#include <array>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "dg.h"
#include "jit/compiler.h"
#include "ops/batched_gemm.h"
#include "ops/gemm.h"
#include "runtime/config.h"
#include "ptxas.h"

namespace {

using dg::ops::BatchedArgs;
using dg::ops::GemmType;
using dg::ops::Major;

BatchedArgs per_head(bool absorb, int64_t b, int64_t h, int64_t r, int64_t d) {
  BatchedArgs a;
  a.batches = h, a.m = b, a.n = absorb ? d : r, a.k = absorb ? r : d;
  a.b.major = absorb ? Major::kK : Major::kMN;
  return a;
}

// dg_fp8_einsum's "bhr,hdr->bhd": per head the FP8 1D2D GEMM, B K-major.
BatchedArgs fp8_per_head(int64_t b, int64_t h, int64_t r, int64_t d) {
  BatchedArgs a = per_head(true, b, h, r, d);
  a.kind = dg::ops::GemmKind::kFp8_1D2D;
  return a;
}

BatchedArgs reduced(int64_t s, int64_t m, int64_t n, int64_t k) {
  BatchedArgs a;
  a.reduce = true, a.batches = s, a.m = m, a.n = n, a.k = k, a.d_dtype = DG_DTYPE_FLOAT32;
  return a;
}

// "bhr,hdr->bhd" (B K-major) and "bhd,hdr->bhr" (B MN-major) per head, "bmk,bnk->mn" over the batch:
// DeepGEMM's tests/test_einsum.py shapes, then tests/gpu/test_einsum.cpp's odd ones.
std::vector<BatchedArgs> einsum_problems() {
  std::vector<BatchedArgs> out;
  const int64_t hrd[2][3] = {{128, 512, 128}, {8, 4096, 1024}};
  for (bool absorb : {true, false})
    for (const auto& p : hrd)
      for (int64_t b : {4, 32, 128, 4096, 8192}) out.push_back(per_head(absorb, b, p[0], p[1], p[2]));
  const int64_t mnk[3][3] = {{128, 384, 128}, {256, 256, 256}, {384, 128, 384}};
  for (int64_t s : {129, 4096, 8192})
    for (const auto& p : mnk) out.push_back(reduced(s, p[0], p[1], p[2]));
  // Odd shapes: rows not a multiple of the block, K and N tails, one head.
  for (bool absorb : {true, false}) {
    out.push_back(per_head(absorb, 5, 7, 200, 72));  // swapped (few rows): N 8 to 32
    out.push_back(per_head(absorb, 13, 3, 136, 264));
    out.push_back(per_head(absorb, 21, 2, 264, 64));
    out.push_back(per_head(absorb, 77, 5, 200, 72));
    out.push_back(per_head(absorb, 1, 3, 136, 264));
    out.push_back(per_head(absorb, 300, 1, 64, 128));
  }
  out.push_back(reduced(7, 77, 40, 200));
  out.push_back(reduced(33, 200, 136, 72));
  out.push_back(reduced(1, 8, 8, 8));
  // FP8 "bhr,hdr->bhd": DeepGEMM's test_fp8_bhr_hdr_bhd shapes, then the GPU tests' odd ones (rows
  // not a multiple of the block, r and d tails, d straddling 128-row scale blocks, one head).
  for (int64_t b : {4, 32, 128, 4096, 8192}) out.push_back(fp8_per_head(b, 8, 4096, 1024));
  out.push_back(fp8_per_head(77, 5, 208, 72));
  out.push_back(fp8_per_head(1, 3, 144, 264));
  out.push_back(fp8_per_head(300, 1, 384, 200));
  out.push_back(fp8_per_head(129, 4, 656, 336));
  return out;
}

using dg::test::parse_ptxas;


}  // namespace

TEST_CASE("einsum: the batched GEMM configs compile for sm_90a without spills") {
  dg::Config config = dg::default_config();
  config.cache_dir = "";
  config.ptxas_verbose = true;
  const int32_t log_level = dg_get_log_level();
  dg_set_log_level(DG_LOG_ERROR);
  std::set<std::string> seen;
  std::string table;
  for (const BatchedArgs& args : einsum_problems()) {
    const dg::ops::BatchedPlan plan = dg::ops::plan_batched_gemm(args, {});
    const dg::ops::GemmShape& s = plan.shape;
    CHECK(s.type == (args.reduce ? GemmType::kBatchReduced : GemmType::kBatched));
    dg::ops::GemmConfig c;
    INFO("batches " << args.batches << " m " << args.m << " n " << args.n << " k " << args.k);
    REQUIRE(dg::ops::choose_gemm_config(s, 132, plan.over, &c) == DG_SUCCESS);
    CHECK(c.split_k == 1);
    const dg::jit::KernelSpec spec = dg::ops::gemm_kernel_spec(s, c);
    CHECK(spec.kernel_name.find(args.reduce ? "_bsum" : "_bat") != std::string::npos);
    const bool fp8_name = spec.kernel_name.find("fp8_1d2d") != std::string::npos;
    CHECK(fp8_name == (args.kind == dg::ops::GemmKind::kFp8_1D2D));
    if (!seen.insert(spec.kernel_name).second) continue;
    dg::jit::CompileResult r;
    const dg_status st = dg::jit::compile(spec, "sm_90a", config, &r);
    INFO(spec.kernel_name << ": " << dg_last_error() << "\n" << r.log);
    CHECK(st == DG_SUCCESS);
    const dg::test::PtxasInfo p = parse_ptxas(r.log);
    dg::test::check_no_local_memory(p);
    table += "  " + spec.kernel_name + ": " + std::to_string(p.registers) + " regs, " + dg::ops::describe(s, c) + "\n";
  }
  dg_set_log_level(log_level);
  std::printf("einsum: %zu distinct batched GEMM configs compiled\n%s", seen.size(), table.c_str());
}

// Per-head BF16 products of at most 32 rows over K <= 512 run swapped: the weights' rows on the
// WGMMA's M, a head's rows on its N (rounded up to 8), D stored transposed; more rows, a longer K,
// FP8, a batch sum, fewer than 64 columns or a tile option keep the call's own orientation.
TEST_CASE("einsum: per-head BF16 products of few rows run with their operands swapped") {
  for (bool absorb : {true, false})
    for (int64_t b : {1, 4, 5, 8, 13, 32}) {
      const BatchedArgs args = per_head(absorb, b, 128, 512, 128);
      const dg::ops::BatchedPlan plan = dg::ops::plan_batched_gemm(args, {});
      CAPTURE(absorb);
      CAPTURE(b);
      CHECK(plan.shape.transpose_d);
      CHECK(plan.args.m == args.n);
      CHECK(plan.args.n == b);
      CHECK(plan.args.a.major == args.b.major);
      CHECK(plan.args.b.major == Major::kK);
      CHECK(plan.over.block_n == (b + 7) / 8 * 8);
      dg::ops::GemmConfig c;
      REQUIRE(dg::ops::choose_gemm_config(plan.shape, 132, plan.over, &c) == DG_SUCCESS);
      CHECK(c.cluster == 1);
      CHECK((c.block_m / c.math_wg) % 64 == 0);
      CHECK(c.d_bufs == 0);
      CHECK(dg::ops::gemm_kernel_spec(plan.shape, c).kernel_name.find("_dt_") != std::string::npos);
    }
  dg::ops::GemmOverride forced;
  forced.block_n = 128;
  CHECK_FALSE(dg::ops::plan_batched_gemm(per_head(true, 33, 128, 512, 128), {}).shape.transpose_d);
  CHECK_FALSE(dg::ops::plan_batched_gemm(per_head(true, 4, 128, 512, 32), {}).shape.transpose_d);  // N 32
  CHECK_FALSE(dg::ops::plan_batched_gemm(per_head(true, 4, 8, 4096, 1024), {}).shape.transpose_d);   // K 4096
  CHECK_FALSE(dg::ops::plan_batched_gemm(per_head(false, 32, 8, 4096, 1024), {}).shape.transpose_d);  // K 1024
  CHECK(dg::ops::plan_batched_gemm(per_head(false, 32, 8, 4096, 512), {}).shape.transpose_d);         // K 512
  CHECK_FALSE(dg::ops::plan_batched_gemm(per_head(true, 4, 128, 512, 128), forced).shape.transpose_d);
  CHECK_FALSE(dg::ops::plan_batched_gemm(fp8_per_head(4, 8, 4096, 1024), {}).shape.transpose_d);
  CHECK_FALSE(dg::ops::plan_batched_gemm(reduced(129, 8, 384, 128), {}).shape.transpose_d);
}

// Per-head problems share one K, so a short one is compiled into the kernel as for dense calls; the
// batch-reduced walk runs K blocks batch after batch and reads K at run time.
TEST_CASE("einsum: short per-head K compiled in, batch sums read it at run time") {
  const auto chosen = [](const BatchedArgs& args) {
    const dg::ops::GemmShape s = dg::ops::batched_gemm_shape(args);
    dg::ops::GemmConfig c;
    REQUIRE(dg::ops::choose_gemm_config(s, 132, dg::ops::batched_gemm_override(args, {}), &c) == DG_SUCCESS);
    return std::make_pair(c, dg::ops::gemm_kernel_spec(s, c).kernel_name);
  };
  const auto [absorb, absorb_name] = chosen(per_head(true, 128, 128, 512, 128));  // BF16: 64 K per block
  CHECK(absorb.k_blocks == 8);
  CHECK(absorb_name.find("_kb8") != std::string::npos);
  CHECK(chosen(per_head(false, 128, 128, 512, 128)).first.k_blocks == 2);  // K = d = 128
  CHECK(chosen(fp8_per_head(300, 3, 400, 336)).first.k_blocks == 4);       // FP8: 128 K per block, tail
  CHECK(chosen(fp8_per_head(4096, 8, 4096, 1024)).first.k_blocks == 0);   // 32 K blocks: run time
  const auto [sum, sum_name] = chosen(reduced(9, 200, 136, 200));
  CHECK(sum.k_blocks == 0);
  CHECK(sum_name.find("_kb") == std::string::npos);
}

TEST_CASE("einsum: forced tiles, CTA pairs along M and N, compile for sm_90a") {
  dg::Config config = dg::default_config();
  config.cache_dir = "";
  const int32_t log_level = dg_get_log_level();
  dg_set_log_level(DG_LOG_ERROR);
  struct Forced {
    BatchedArgs args;
    int bm, bn, cluster, multicast_a;
  };
  const Forced forced[] = {
      {per_head(true, 300, 3, 200, 136), 128, 64, 2, 0},   // pairs along M: blocks per batch padded to even
      {per_head(false, 300, 3, 200, 256), 64, 128, 2, 1},  // pairs along N, B MN-major
      {per_head(true, 77, 5, 200, 72), 256, 128, 1, -1},
      {reduced(9, 200, 136, 200), 128, 64, 2, 0},
      {reduced(9, 200, 136, 200), 64, 128, 2, 1},
      {fp8_per_head(300, 3, 400, 336), 128, 64, 2, 0},   // FP8: pairs along M (SFA rows past b clip)
      {fp8_per_head(300, 3, 400, 336), 64, 128, 2, 1},   // FP8: pairs along N
      {fp8_per_head(300, 3, 400, 336), 64, 160, 1, -1},  // FP8: tiles straddling two SFB rows
      {fp8_per_head(300, 3, 400, 336), 128, 192, 1, -1},
      {fp8_per_head(300, 3, 400, 336), 256, 128, 1, -1},
  };
  for (const Forced& f : forced) {
    const dg::ops::GemmShape s = dg::ops::batched_gemm_shape(f.args);
    dg::ops::GemmOverride o;
    o.block_m = f.bm, o.block_n = f.bn, o.cluster = f.cluster, o.multicast_a = f.multicast_a;
    o = dg::ops::batched_gemm_override(f.args, o);
    dg::ops::GemmConfig c;
    REQUIRE(dg::ops::choose_gemm_config(s, 132, o, &c) == DG_SUCCESS);
    CHECK(c.block_m == f.bm);
    CHECK(c.cluster == f.cluster);
    dg::jit::CompileResult r;
    const dg::jit::KernelSpec spec = dg::ops::gemm_kernel_spec(s, c);
    const dg_status st = dg::jit::compile(spec, "sm_90a", config, &r);
    INFO(spec.kernel_name << ": " << dg_last_error());
    CHECK(st == DG_SUCCESS);
  }
  dg_set_log_level(log_level);
}

TEST_CASE("einsum: batch-reduced calls run 128 x 128 tiles unless told otherwise") {
  for (const auto& [m, n, bm, bn] : {std::array<int64_t, 4>{128, 384, 128, 128}, {384, 128, 128, 128},
                                      {64, 40, 64, 40}, {77, 8, 128, 8}, {200, 136, 128, 128}}) {
    const dg::ops::GemmOverride o = dg::ops::batched_gemm_override(reduced(9, m, n, 256), {});
    CHECK(o.block_m == bm);
    CHECK(o.block_n == bn);
    CHECK(o.split_k == 1);
  }
  dg::ops::GemmOverride user;
  user.block_n = 64;
  const dg::ops::GemmOverride o = dg::ops::batched_gemm_override(reduced(9, 128, 384, 256), user);
  CHECK(o.block_m == 0);  // the caller's tile options leave the rest to the heuristic
  CHECK(o.block_n == 64);
  CHECK(dg::ops::batched_gemm_override(per_head(true, 64, 4, 512, 128), {}).block_m == 0);
}

TEST_CASE("einsum: batched GEMMs refuse split-K by name") {
  dg::ops::GemmOverride o;
  o.split_k = 2;
  dg::ops::GemmConfig c;
  for (const BatchedArgs& args : {per_head(true, 64, 4, 512, 128), reduced(16, 128, 128, 128)}) {
    CHECK(dg::ops::choose_gemm_config(dg::ops::batched_gemm_shape(args), 132, o, &c) == DG_ERROR_INVALID_ARGUMENT);
    CHECK(std::string(dg_last_error()).find("split_k") != std::string::npos);
  }
}

TEST_CASE("einsum: batch-reduced splits fill the SMs and keep several K blocks each") {
  using dg::ops::batch_reduced_splits;
  CHECK(batch_reduced_splits(3, 132, 100000) == 44);  // 3 tiles on 132 SMs
  CHECK(batch_reduced_splits(3, 132, 40) == 10);      // at least 4 K blocks per split
  CHECK(batch_reduced_splits(3, 132, 3) == 1);
  CHECK(batch_reduced_splits(200, 132, 100000) == 1);  // more tiles than SMs: no split
  CHECK(batch_reduced_splits(9, 66, 100000) == 7);     // CTA pairs: 66 clusters
  for (int64_t units : {1, 2, 5, 31, 132, 1000})
    for (int64_t kb : {1, 4, 7, 64, 100000}) {
      const int64_t s = batch_reduced_splits(units, 132, kb);
      CHECK(s >= 1);
      CHECK((s == 1 || s * 4 <= kb));
      CHECK((s == 1 || s * units <= 132));
    }
}
