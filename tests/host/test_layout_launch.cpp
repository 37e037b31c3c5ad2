// The K-grouped UE8M0 packer's entry point against the fake driver: what reaches the driver (one
// launch per 128 groups with their prefix tables, the addresses each launch starts at, the vector
// width, the grid), empty problems launching nothing, and the host-side checks of sf, ks,
// ks_tensor and out with the argument each message names. No GPU.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "dg.h"
#include "fake_driver.h"
#include "launch_util.h"
#include "ops/layout.h"

namespace {

using dg::ops::KGroupedPackParams;
using namespace dg::test;  // fake_driver.h, launch_util.h

struct Stream {
  dg_stream* s = nullptr;
  Stream() { REQUIRE(dg_stream_create(&s, 0, nullptr, DG_STREAM_CREATE, nullptr) == DG_SUCCESS); }
  ~Stream() { dg_stream_destroy(s); }
};

// Packs [sum(ks) / 128, mn] scales with row stride sf_ld and checks every launch.
void run_and_check(FakeDriver& fake, int64_t mn, const std::vector<int64_t>& ks, int64_t sf_ld, int expect_vec) {
  CAPTURE(mn);
  CAPTURE(ks.size());
  CAPTURE(sf_ld);
  const int64_t g = static_cast<int64_t>(ks.size());
  int64_t rows = 0;
  for (int64_t k : ks) rows += k / 128;
  int64_t sizes[2], strides[2];
  size_t bytes = 0;
  REQUIRE(dg_get_k_grouped_mn_major_tma_aligned_packed_ue8m0_tensor_layout(mn, ks.data(), g, sizes, strides, &bytes) ==
          DG_SUCCESS);
  void *psf = fake_address(1), *pout = fake_address(2);
  Tensor sf(psf, DG_DTYPE_FLOAT32, {rows, mn}, {sf_ld, 1});
  Tensor out(pout, DG_DTYPE_UE8M0X4, {sizes[0], sizes[1]}, {strides[0], strides[1]});
  Stream stream;
  REQUIRE_MESSAGE(dg_get_k_grouped_mn_major_tma_aligned_packed_ue8m0_tensor(stream.s, sf.t, ks.data(), g, nullptr,
                                                                              out.t) == DG_SUCCESS,
                  dg_last_error());
  const std::vector<Launch> launches = fake.take();
  int64_t next = 0, sf_row = 0, packed_row = 0;
  size_t l = 0;
  while (next < g) {
    const int64_t count = std::min<int64_t>(g - next, 128);
    int64_t blocks = 0, packed = 0;
    for (int64_t i = next; i < next + count; ++i) blocks += ks[i] / 128, packed += (ks[i] / 128 + 3) / 4;
    if (packed == 0) {  // a launch of empty groups only is left out
      next += count;
      continue;
    }
    REQUIRE(l < launches.size());
    const Launch& L = launches[l++];
    CHECK(L.kernel == "dg_k_grouped_pack_ue8m0_fp32_v" + std::to_string(expect_vec));
    CHECK((L.config.block[0] == 64 && L.config.block[1] == 4 && L.config.block[2] == 1));
    CHECK(L.config.grid[0] == unsigned((packed + 3) / 4));
    CHECK(L.config.grid[1] == unsigned(std::min<int64_t>((strides[0] + 64 * expect_vec - 1) / (64 * expect_vec), 65535)));
    REQUIRE(L.params.size() == sizeof(KGroupedPackParams));
    KGroupedPackParams p;
    std::memcpy(&p, L.params.data(), sizeof(p));
    CHECK(p.num_groups == count);
    CHECK(p.sf == static_cast<const float*>(psf) + sf_row * sf_ld);
    CHECK(p.out == static_cast<uint32_t*>(pout) + packed_row * strides[0]);
    CHECK(p.sf_ld == sf_ld);
    CHECK(p.sf_mn_stride == 1);
    CHECK(p.out_ld == strides[0]);
    CHECK(p.mn == mn);
    int64_t r = 0, q = 0;
    for (int64_t i = 0; i < count; ++i) {
      CHECK(p.sf_row[i] == r);
      CHECK(p.packed_row[i] == q);
      r += ks[next + i] / 128;
      q += (ks[next + i] / 128 + 3) / 4;
    }
    CHECK(p.sf_row[count] == r);
    CHECK(p.packed_row[count] == q);
    sf_row += blocks;
    packed_row += packed;
    next += count;
  }
  CHECK(l == launches.size());
  CHECK(packed_row == sizes[0]);
}

}  // namespace

TEST_CASE("K-grouped UE8M0 packing launches one kernel per 128 groups with the groups' prefix tables") {
  FakeDriver fake(0);
  std::vector<int64_t> many;
  for (int i = 0; i < 300; ++i) many.push_back(i % 9 == 4 ? 0 : 128 * (1 + i % 13));
  for (int i = 128; i < 256; ++i) many[i] = 0;  // the second launch's groups are all empty
  run_and_check(fake, 7168, {4096, 0, 2048, 384}, 7168, 4);
  run_and_check(fake, 4096, many, 4096, 4);
  run_and_check(fake, 4096, {512, 640}, 4100, 4);  // padded scale rows, still 16-byte aligned
  run_and_check(fake, 4096, {512, 640}, 4098, 1);  // rows not 16-byte aligned
  run_and_check(fake, 4097, {512, 640}, 4097, 1);  // MN % 4 != 0: padded output rows
}

TEST_CASE("K-grouped UE8M0 packing: empty problems launch nothing") {
  FakeDriver fake(0);
  Stream stream;
  void* p = fake_address(3);
  const int64_t empty[3] = {0, 0, 0}, some[2] = {256, 128};
  Tensor sf0(p, DG_DTYPE_FLOAT32, {0, 256}), out0(p, DG_DTYPE_INT32, {0, 256});
  CHECK(dg_get_k_grouped_mn_major_tma_aligned_packed_ue8m0_tensor(stream.s, sf0.t, empty, 3, nullptr, out0.t) ==
        DG_SUCCESS);
  Tensor sf1(p, DG_DTYPE_FLOAT32, {3, 0}), out1(p, DG_DTYPE_INT32, {2, 0});
  CHECK(dg_get_k_grouped_mn_major_tma_aligned_packed_ue8m0_tensor(stream.s, sf1.t, some, 2, nullptr, out1.t) ==
        DG_SUCCESS);
  CHECK(fake.take().empty());
}

TEST_CASE("K-grouped UE8M0 packing: sf, ks, ks_tensor and out are checked, naming the argument") {
  FakeDriver fake(0);
  Stream stream;
  void* p = fake_address(4);
  const int64_t ks[3] = {256, 0, 640};  // 2 + 0 + 5 K blocks; 1 + 0 + 2 packed rows
  Tensor sf(p, DG_DTYPE_FLOAT32, {7, 4096}), out(p, DG_DTYPE_INT32, {3, 4096});
  Tensor kt(p, DG_DTYPE_INT32, {3}), kt2(p, DG_DTYPE_INT32, {2}), kt_f(p, DG_DTYPE_FLOAT32, {3});
  auto call = [&](const dg_tensor* s, const int64_t* k, int64_t g, const dg_tensor* t, const dg_tensor* o) {
    return dg_get_k_grouped_mn_major_tma_aligned_packed_ue8m0_tensor(stream.s, s, k, g, t, o);
  };
  auto says = [](const char* prefix) {
    const std::string msg = dg_last_error();
    CHECK_MESSAGE(msg.rfind(prefix, 0) == 0, msg);
  };
  CHECK(call(sf.t, ks, 3, kt.t, out.t) == DG_SUCCESS);
  CHECK(call(sf.t, ks, 3, nullptr, out.t) == DG_SUCCESS);

  const int64_t short_[3] = {256, 0, 512}, unaligned[3] = {256, 64, 576}, negative[3] = {256, -128, 768};
  CHECK(call(sf.t, short_, 3, nullptr, out.t) == DG_ERROR_INVALID_ARGUMENT);  // 6 blocks, sf has 7
  says("sf: has 7 rows of K blocks but sum(ks) / 128 = 6");
  CHECK(call(sf.t, unaligned, 3, nullptr, out.t) == DG_ERROR_INVALID_ARGUMENT);
  says("ks[1]: 64 (expected >= 0 and a multiple of 128");
  CHECK(call(sf.t, negative, 3, nullptr, out.t) == DG_ERROR_INVALID_ARGUMENT);
  says("ks[1]: -128");
  CHECK(call(sf.t, nullptr, 3, nullptr, out.t) == DG_ERROR_INVALID_ARGUMENT);
  says("ks: NULL");
  CHECK(call(sf.t, ks, 0, nullptr, out.t) == DG_ERROR_INVALID_ARGUMENT);
  says("num_groups: 0");
  CHECK(call(sf.t, ks, 3, kt2.t, out.t) == DG_ERROR_INVALID_ARGUMENT);
  says("ks_tensor: has 2 entries (expected 3");
  CHECK(call(sf.t, ks, 3, kt_f.t, out.t) == DG_ERROR_INVALID_ARGUMENT);
  says("ks_tensor:");
  CHECK(call(nullptr, ks, 3, nullptr, out.t) == DG_ERROR_INVALID_ARGUMENT);
  says("sf:");
  CHECK(call(sf.t, ks, 3, nullptr, nullptr) == DG_ERROR_INVALID_ARGUMENT);
  says("out:");
  {
    dg_stream* none = nullptr;
    CHECK(dg_get_k_grouped_mn_major_tma_aligned_packed_ue8m0_tensor(none, sf.t, ks, 3, nullptr, out.t) ==
          DG_ERROR_INVALID_ARGUMENT);
    says("stream:");
  }
  // out: the packed row count, MN, the row stride (padded to 4 words for odd MN) and the dtype.
  Tensor out_rows(p, DG_DTYPE_INT32, {4, 4096}), out_f(p, DG_DTYPE_FLOAT32, {3, 4096});
  CHECK(call(sf.t, ks, 3, nullptr, out_rows.t) == DG_ERROR_INVALID_ARGUMENT);
  says("out: has shape [4, 4096]");
  CHECK(call(sf.t, ks, 3, nullptr, out_f.t) == DG_ERROR_INVALID_ARGUMENT);
  says("out:");
  Tensor sf_odd(p, DG_DTYPE_FLOAT32, {7, 4097}), out_odd(p, DG_DTYPE_INT32, {3, 4097}),
      out_odd_padded(p, DG_DTYPE_INT32, {3, 4097}, {4100, 1});
  CHECK(call(sf_odd.t, ks, 3, nullptr, out_odd.t) == DG_ERROR_INVALID_ARGUMENT);
  says("out: has shape [3, 4097]");
  CHECK(std::string(dg_last_error()).find("strides [4100, 1]") != std::string::npos);
  CHECK(call(sf_odd.t, ks, 3, nullptr, out_odd_padded.t) == DG_SUCCESS);
  // sf: rank, dtype.
  Tensor sf3(p, DG_DTYPE_FLOAT32, {1, 7, 4096}), sf_bf(p, DG_DTYPE_BFLOAT16, {7, 4096});
  CHECK(call(sf3.t, ks, 3, nullptr, out.t) == DG_ERROR_INVALID_ARGUMENT);
  says("sf:");
  CHECK(call(sf_bf.t, ks, 3, nullptr, out.t) == DG_ERROR_INVALID_ARGUMENT);
  says("sf:");
  fake.take();
}
