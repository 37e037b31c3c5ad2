// The K-grouped GEMM entry points against the fake driver: what reaches the driver is the config
// the heuristic chose, one launch per 32 non-empty groups, each with the grouped contract
// (templates/include/dg/gemm/sm90_gemm.cuh, sched::KGroupedSlots): per group a TMA map of its own
// [MN, k_g] slice of A and B at the right address, its K blocks and first SF K block, the D group
// it writes, and a 3-D map of D; the pre-passes that set D to C (or an empty group's D to zero);
// the FP8 tn form's K-major copies. Also the host-side checks of ks and ks_tensor. No GPU.
#include <doctest/doctest.h>

#include <cstring>
#include <string>
#include <vector>

#include "dg.h"
#include "fake_driver.h"
#include "launch_util.h"
#include "ops/gemm.h"

namespace {

using dg::ops::GemmConfig;
using dg::ops::GemmKind;
using dg::ops::GemmShape;
using dg::ops::GemmType;
using dg::ops::KGroupedSlots;
using dg::ops::Major;
using dg::ops::Sm90GemmParams;
using namespace dg::test;  // fake_driver.h, launch_util.h

char* at(void* base, int64_t bytes) { return static_cast<char*>(base) + bytes; }

enum class Form { kFp8Nt, kFp8Tn, kBf16Tn };

// One call: G groups of ks[g] K each over [M, N]; c_mode 0 = no C, 1 = C aliasing D, 2 = separate C.
void run_and_check(FakeDriver& fake, Form form, int64_t m, int64_t n, const std::vector<int64_t>& ks, int c_mode) {
  CAPTURE(static_cast<int>(form));
  CAPTURE(c_mode);
  const bool fp8 = form != Form::kBf16Tn, tn = form != Form::kFp8Nt;
  const int64_t g = static_cast<int64_t>(ks.size()), eb = fp8 ? 1 : 2;
  int64_t total = 0, live = 0, live_k = 0, empty = 0;
  for (int64_t k : ks) total += k, live += k > 0, live_k += k, empty += k == 0;
  void *pa = fake_address(1), *psfa = fake_address(2), *pb = fake_address(3), *psfb = fake_address(4);
  void *pd = fake_address(5), *pc = fake_address(6), *pws = fake_address(7);
  const dg_dtype ab = fp8 ? DG_DTYPE_FLOAT8_E4M3 : DG_DTYPE_BFLOAT16;
  const int64_t m4 = (m + 3) / 4 * 4, n4 = (n + 3) / 4 * 4;
  Tensor a(pa, ab, tn ? std::vector<int64_t>{total, m} : std::vector<int64_t>{m * total});
  Tensor b(pb, ab, tn ? std::vector<int64_t>{total, n} : std::vector<int64_t>{n * total});
  Tensor sfa(psfa, DG_DTYPE_FLOAT32, {m, total / 128}, {1, m4});
  Tensor sfb(psfb, DG_DTYPE_FLOAT32, {n, total / 128}, {1, n4});
  Tensor d(pd, DG_DTYPE_FLOAT32, {g, m, n});
  Tensor c(c_mode == 1 ? pd : pc, DG_DTYPE_FLOAT32, {g, m, n});
  dg_gemm_options o = DG_GEMM_OPTIONS_INIT;
  size_t ws_bytes = 0;
  if (form == Form::kFp8Tn) {
    REQUIRE(dg_fp8_gemm_workspace_size(DG_GEMM_LAYOUT_TN, m, n, total, &ws_bytes) == DG_SUCCESS);
    o.workspace = pws;
    o.workspace_size = ws_bytes;
  }
  dg_stream* stream = nullptr;
  REQUIRE(dg_stream_create(&stream, 0, nullptr, DG_STREAM_CREATE, nullptr) == DG_SUCCESS);
  const dg_tensor* ct = c_mode == 0 ? nullptr : c.t;
  dg_status st;
  if (form == Form::kFp8Nt)
    st = dg_k_grouped_fp8_gemm_nt_contiguous(stream, a.t, sfa.t, b.t, sfb.t, d.t, ct, ks.data(), g, nullptr, &o);
  else if (form == Form::kFp8Tn)
    st = dg_k_grouped_fp8_gemm_tn_contiguous(stream, a.t, sfa.t, b.t, sfb.t, d.t, ct, ks.data(), g, nullptr, &o);
  else st = dg_k_grouped_bf16_gemm_tn_contiguous(stream, a.t, b.t, d.t, ct, ks.data(), g, nullptr, &o);
  dg_stream_destroy(stream);
  REQUIRE_MESSAGE(st == DG_SUCCESS, std::string(dg_last_error()));
  const std::vector<Launch> launches = fake.take();

  GemmShape s;
  s.kind = fp8 ? GemmKind::kFp8_1D1D : GemmKind::kBf16;
  s.type = GemmType::kKGrouped;
  s.m = m, s.n = n, s.k = (live_k / live + 127) / 128 * 128;
  s.num_groups = live;
  s.major_a = s.major_b = fp8 ? Major::kK : Major::kMN;
  s.d_dtype = DG_DTYPE_FLOAT32;
  s.accumulate = c_mode != 0;
  GemmConfig cfg;
  REQUIRE(dg::ops::choose_gemm_config(s, kSms, dg::ops::GemmOverride{}, &cfg) == DG_SUCCESS);
  CAPTURE(dg::ops::describe(s, cfg));
  const std::string kernel = dg::ops::gemm_kernel_spec(s, cfg).kernel_name;

  // Expected order: D := C (separate C) or the empty groups' zero fills (no C), the FP8 tn copies,
  // then the GEMM launches.
  const size_t pre = c_mode == 2 ? 1 : c_mode == 0 ? static_cast<size_t>(empty) : 0;
  const size_t copies = form == Form::kFp8Tn ? 2 : 0;
  const size_t gemms = static_cast<size_t>((live + 31) / 32);
  REQUIRE(launches.size() == pre + copies + gemms);
  for (size_t i = 0; i < pre; ++i) CHECK(launches[i].kernel.find("dg_gemm_scale_f32") == 0);
  for (size_t i = pre; i < pre + copies; ++i) {
    dg::ops::TransposeParams t;
    REQUIRE(launches[i].params.size() == sizeof(t));
    std::memcpy(&t, launches[i].params.data(), sizeof(t));
    CHECK(t.src == (i == pre ? pa : pb));
    CHECK((t.rows == total && t.cols == (i == pre ? m : n)));
  }
  int64_t koff = 0, next = 0, seen = 0;
  for (size_t l = pre + copies; l < launches.size(); ++l) {
    const Launch& L = launches[l];
    CHECK(L.kernel == kernel);
    CHECK(L.config.grid[0] == unsigned(cfg.grid));
    CHECK(L.config.smem_bytes == cfg.smem_bytes);
    REQUIRE(L.params.size() == sizeof(Sm90GemmParams));
    REQUIRE(L.slots.size() == sizeof(KGroupedSlots));
    Sm90GemmParams q;
    std::memcpy(&q, L.params.data(), sizeof(q));
    check_walk(q.walk, cdiv(m, cfg.block_m), cdiv(n, cfg.block_n), q.raster_band, q.raster_along_n != 0);
    KGroupedSlots k;
    std::memcpy(&k, L.slots.data(), sizeof(k));
    const fake_tensor_map dm = map_of(q.tma_d);
    CHECK(dm.rank == 3);
    CHECK(dm.address == reinterpret_cast<uintptr_t>(pd));
    CHECK((dm.dims[0] == uint64_t(n) && dm.dims[1] == uint64_t(m) && dm.dim2 == uint64_t(g)));
    CHECK(dm.stride2 == uint64_t(m * n * 4));
    if (fp8) {
      CHECK(map_of(q.tma_sfa).dims[1] == uint64_t(total / 128));
      CHECK(map_of(q.tma_sfb).dims[0] == uint64_t(n4));
    }
    CHECK(k.num_slots == std::min<uint64_t>(32, uint64_t(live - seen)));
    for (uint32_t i = 0; i < k.num_slots; ++i) {
      while (ks[next] == 0) koff += ks[next++];  // empty groups have no slot
      const int64_t kg = ks[next];
      CAPTURE(next);
      CHECK(k.group[i] == uint32_t(next));
      CHECK(k.num_kb[i] == uint32_t(kg / (fp8 ? 128 : 64)));
      CHECK(k.sf_kb0[i] == uint32_t(koff / 128));
      const fake_tensor_map am = map_of(k.tma_a[i]), bm = map_of(k.tma_b[i]);
      if (form == Form::kFp8Nt) {
        CHECK(am.address == reinterpret_cast<uintptr_t>(at(pa, m * koff)));
        CHECK((am.dims[0] == uint64_t(kg) && am.dims[1] == uint64_t(m) && am.stride1 == uint64_t(kg)));
        CHECK(bm.address == reinterpret_cast<uintptr_t>(at(pb, n * koff)));
      } else if (form == Form::kFp8Tn) {
        // The K-major copies: a's [M, K] at the workspace's start, b's after it.
        CHECK(am.address == reinterpret_cast<uintptr_t>(at(pws, koff)));
        CHECK((am.dims[0] == uint64_t(kg) && am.dims[1] == uint64_t(m)));
        CHECK(am.stride1 == uint64_t((total + 15) / 16 * 16));
      } else {
        CHECK(am.address == reinterpret_cast<uintptr_t>(at(pa, koff * m * eb)));
        CHECK((am.dims[0] == uint64_t(m) && am.dims[1] == uint64_t(kg) && am.stride1 == uint64_t(m * eb)));
        CHECK(bm.address == reinterpret_cast<uintptr_t>(at(pb, koff * n * eb)));
      }
      koff += ks[next++];
      ++seen;
    }
  }
  CHECK(seen == live);
}

std::vector<int64_t> many_groups() {
  std::vector<int64_t> ks;
  for (int i = 0; i < 40; ++i) ks.push_back(i % 7 == 3 ? 0 : 128 * (1 + i % 4));
  return ks;
}

}  // namespace

TEST_CASE("K-grouped GEMMs launch the chosen config with one map per group, every form, with and without C") {
  FakeDriver fake(sizeof(Sm90GemmParams));
  for (Form f : {Form::kFp8Nt, Form::kFp8Tn, Form::kBf16Tn})
    for (int c_mode : {0, 1, 2}) {
      run_and_check(fake, f, 4096, 7168, {8192, 0, 6144, 10240}, c_mode);
      run_and_check(fake, f, 208, 144, many_groups(), c_mode);  // two launches
    }
}

TEST_CASE("K-grouped GEMMs: every group empty runs only the pre-pass; prepare launches nothing") {
  FakeDriver fake(sizeof(Sm90GemmParams));
  void* p = fake_address(9);
  Tensor a(p, DG_DTYPE_BFLOAT16, {0, 256}), b(p, DG_DTYPE_BFLOAT16, {0, 128}), d(p, DG_DTYPE_FLOAT32, {3, 256, 128});
  const int64_t ks[3] = {0, 0, 0};
  dg_stream* stream = nullptr;
  REQUIRE(dg_stream_create(&stream, 0, nullptr, DG_STREAM_CREATE, nullptr) == DG_SUCCESS);
  CHECK(dg_k_grouped_bf16_gemm_tn_contiguous(stream, a.t, b.t, d.t, nullptr, ks, 3, nullptr, nullptr) == DG_SUCCESS);
  std::vector<Launch> l = fake.take();
  REQUIRE(l.size() == 1);
  CHECK(l[0].kernel == "dg_gemm_scale_f32_zero");
  const int64_t real[3] = {256, 0, 512};
  CHECK(dg_k_grouped_gemm_prepare(stream, DG_DTYPE_FLOAT8_E4M3, DG_GEMM_LAYOUT_TN, 4096, 7168, real, 3, 1, nullptr) ==
        DG_SUCCESS);
  dg_stream_destroy(stream);
  CHECK(fake.take().empty());
}

TEST_CASE("K-grouped GEMMs: ks and ks_tensor are checked on the host") {
  FakeDriver fake(sizeof(Sm90GemmParams));
  void* p = fake_address(9);
  Tensor a(p, DG_DTYPE_BFLOAT16, {512, 256}), b(p, DG_DTYPE_BFLOAT16, {512, 128}), d(p, DG_DTYPE_FLOAT32, {3, 256, 128});
  Tensor ks3(p, DG_DTYPE_INT32, {3}), ks4(p, DG_DTYPE_INT32, {4}), ks_f(p, DG_DTYPE_FLOAT32, {3});
  dg_stream* stream = nullptr;
  REQUIRE(dg_stream_create(&stream, 0, nullptr, DG_STREAM_CREATE, nullptr) == DG_SUCCESS);
  auto call = [&](const int64_t* ks, int64_t g, const dg_tensor* kt) {
    return dg_k_grouped_bf16_gemm_tn_contiguous(stream, a.t, b.t, d.t, nullptr, ks, g, kt, nullptr);
  };
  const int64_t good[3] = {128, 128, 256}, odd[3] = {128, 100, 284}, neg[3] = {128, -128, 512}, short_[3] = {128, 128, 128};
  const int64_t huge[3] = {int64_t(1) << 40, 128, 128};
  CHECK(call(good, 3, ks3.t) == DG_SUCCESS);
  CHECK(call(nullptr, 3, nullptr) == DG_ERROR_INVALID_ARGUMENT);
  CHECK(std::string(dg_last_error()).find("ks:") == 0);
  CHECK(call(odd, 3, nullptr) == DG_ERROR_INVALID_ARGUMENT);
  CHECK(std::string(dg_last_error()).find("ks[1]: 100") == 0);
  CHECK(call(neg, 3, nullptr) == DG_ERROR_INVALID_ARGUMENT);
  CHECK(std::string(dg_last_error()).find("ks[1]") == 0);
  CHECK(call(short_, 3, nullptr) == DG_ERROR_INVALID_ARGUMENT);  // sums to 384, a and b have 512 rows
  CHECK(std::string(dg_last_error()).find("a:") == 0);
  CHECK(call(huge, 3, nullptr) == DG_ERROR_UNSUPPORTED);
  CHECK(std::string(dg_last_error()).find("ks:") == 0);
  CHECK(call(good, 0, nullptr) == DG_ERROR_INVALID_ARGUMENT);
  CHECK(std::string(dg_last_error()).find("num_groups") == 0);
  CHECK(call(good, 3, ks4.t) == DG_ERROR_INVALID_ARGUMENT);
  CHECK(std::string(dg_last_error()).find("ks_tensor") == 0);
  CHECK(call(good, 3, ks_f.t) == DG_ERROR_INVALID_ARGUMENT);
  CHECK(std::string(dg_last_error()).find("ks_tensor") == 0);
  dg_stream_destroy(stream);
  fake.take();
}
