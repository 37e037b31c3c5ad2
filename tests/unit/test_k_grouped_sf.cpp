// The K-grouped UE8M0 packer (templates/kernels/layout.cu.j2, op k_grouped_pack_ue8m0) run on the
// host: the launches come from the library's own for_each_k_grouped_pack_launch, and each one's
// grid is emulated thread by thread through the device header dg/k_grouped_sf.cuh compiled here.
// Every output word must equal an independent per-group reference, the padding columns must be
// 0 and nothing outside the output may be written, for both vector widths, more groups than one
// launch takes, empty groups, odd MN and strided scales. Also the layout query and the host
// mirror of the kernel argument.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "dg.h"
#include "ops/layout.h"

#define __host__
#define __device__
#define __forceinline__ inline
inline uint32_t __float_as_uint(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline float __uint_as_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
#include "dg/k_grouped_sf.cuh"
#undef __host__
#undef __device__
#undef __forceinline__

namespace {

namespace ks_dev = dg::k_grouped_sf;
using dg::ops::KGroupedPackLaunch;

constexpr uint32_t kPoison = 0xdeadbeefu;
constexpr int64_t kGuard = 64;  // words of poison on each side of the output

static_assert(sizeof(ks_dev::Params) == sizeof(dg::ops::KGroupedPackParams), "host mirror");
static_assert(offsetof(ks_dev::Params, packed_row) == offsetof(dg::ops::KGroupedPackParams, packed_row), "host mirror");
static_assert(ks_dev::kMaxGroups == dg::ops::kKGroupedPackMaxGroups && ks_dev::kThreadsX == dg::ops::kKGroupedPackThreadsX &&
                  ks_dev::kRowsPerBlock == dg::ops::kKGroupedPackRowsPerBlock,
              "host mirror");

// A power of two, or (when `sign_and_mantissa`) any float: only the exponent field is packed.
float random_scale(std::mt19937& rng, bool sign_and_mantissa) {
  const int e = std::uniform_int_distribution<int>(-126, 127)(rng);
  float v = std::ldexp(1.0f, e);
  if (sign_and_mantissa) v *= std::uniform_real_distribution<float>(-1.99f, 1.99f)(rng);
  return v;
}

uint32_t bits_of(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

struct Case {
  int64_t mn;
  std::vector<int64_t> ks;
  int64_t sf_ld;       // elements between scale rows (>= mn; stride 1 along MN), or 0: transposed storage
  size_t sf_offset;    // floats the scale buffer starts after a 16-byte boundary
};

void run_case(const Case& c, std::mt19937& rng) {
  CAPTURE(c.mn);
  CAPTURE(c.ks.size());
  CAPTURE(c.sf_ld);
  CAPTURE(c.sf_offset);
  const int64_t g = static_cast<int64_t>(c.ks.size());
  int64_t rows = 0;
  for (int64_t k : c.ks) rows += k / 128;
  // Scales [rows, mn]: row-major with row stride sf_ld, or stored [mn, rows] row-major (stride 1
  // along K, mn_stride = rows).
  const bool transposed = c.sf_ld == 0;
  const int64_t sf_ld = transposed ? 1 : c.sf_ld, mn_stride = transposed ? std::max<int64_t>(rows, 1) : 1;
  std::vector<float> storage(c.sf_offset + static_cast<size_t>(std::max<int64_t>(rows * (transposed ? c.mn : sf_ld), 1)) + 8);
  float* sf = storage.data();
  while (reinterpret_cast<uintptr_t>(sf) % 16 != 0) ++sf;
  sf += c.sf_offset;
  auto at = [&](int64_t r, int64_t i) -> float& { return sf[r * sf_ld + i * mn_stride]; };
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t i = 0; i < c.mn; ++i) at(r, i) = random_scale(rng, (r + i) % 7 == 3);

  int64_t sizes[2], strides[2];
  size_t bytes = 0;
  REQUIRE(dg_get_k_grouped_mn_major_tma_aligned_packed_ue8m0_tensor_layout(c.mn, c.ks.data(), g, sizes, strides, &bytes) ==
          DG_SUCCESS);
  const int64_t aligned = (c.mn + 3) / 4 * 4;
  int64_t packed = 0;
  for (int64_t k : c.ks) packed += (k / 128 + 3) / 4;
  CHECK(sizes[0] == packed);
  CHECK(sizes[1] == c.mn);
  CHECK(strides[0] == aligned);
  CHECK(strides[1] == 1);
  CHECK(bytes == static_cast<size_t>(packed * aligned * 4));

  // Reference: each group packed on its own, the groups' rows one after another.
  std::vector<uint32_t> want(static_cast<size_t>(packed * aligned), 0);
  int64_t first_row = 0, out_row = 0;
  for (int64_t k : c.ks) {
    const int64_t blocks = k / 128;
    for (int64_t j = 0; j < (blocks + 3) / 4; ++j, ++out_row)
      for (int64_t i = 0; i < c.mn; ++i)
        for (int t = 0; t < 4 && 4 * j + t < blocks; ++t)
          want[static_cast<size_t>(out_row * aligned + i)] |= ((bits_of(at(first_row + 4 * j + t, i)) >> 23) & 0xffu) << (8 * t);
    first_row += blocks;
  }

  // Aligned storage for the output so that the 16-byte path may run, with guards.
  std::vector<uint32_t> out_storage(static_cast<size_t>(packed * aligned + 2 * kGuard + 4), kPoison);
  uint32_t* base = out_storage.data();
  while (reinterpret_cast<uintptr_t>(base) % 16 != 0) ++base;
  uint32_t* out = base + kGuard;
  const int vec = dg::ops::k_grouped_pack_vec(sf, sf_ld * (rows > 1), mn_stride, c.mn, aligned);
  CAPTURE(vec);
  const bool expect_vec4 = mn_stride == 1 && c.mn % 4 == 0 && (rows > 1 ? sf_ld : 0) % 4 == 0 && c.sf_offset % 4 == 0;
  CHECK(vec == (expect_vec4 ? 4 : 1));
  int launches = 0;
  const dg_status s = dg::ops::for_each_k_grouped_pack_launch(
      sf, rows > 1 ? sf_ld : 0, mn_stride, c.mn, out, aligned, c.ks.data(), g, vec, [&](const KGroupedPackLaunch& l) {
        ++launches;
        ks_dev::Params p;
        std::memcpy(&p, &l.params, sizeof(p));
        REQUIRE(p.num_groups >= 1);
        REQUIRE(p.num_groups <= ks_dev::kMaxGroups);
        for (unsigned bx = 0; bx < l.grid[0]; ++bx)
          for (unsigned by = 0; by < l.grid[1]; ++by)
            for (int ty = 0; ty < ks_dev::kRowsPerBlock; ++ty)
              for (int tx = 0; tx < ks_dev::kThreadsX; ++tx) {
                // The kernel's body (layout.cu.j2).
                const int32_t row = static_cast<int32_t>(bx) * ks_dev::kRowsPerBlock + ty;
                if (row >= p.packed_row[p.num_groups]) continue;
                const int64_t step = int64_t(l.grid[1]) * ks_dev::kThreadsX * vec;
                for (int64_t col = (int64_t(by) * ks_dev::kThreadsX + tx) * vec; col < p.out_ld; col += step)
                  vec == 4 ? ks_dev::pack_words<4>(p, row, col) : ks_dev::pack_words<1>(p, row, col);
              }
        return DG_SUCCESS;
      });
  REQUIRE(s == DG_SUCCESS);
  int live_launches = 0;
  for (int64_t g0 = 0; g0 < g; g0 += ks_dev::kMaxGroups) {
    int64_t rows_in = 0;
    for (int64_t i = g0; i < std::min<int64_t>(g, g0 + ks_dev::kMaxGroups); ++i) rows_in += c.ks[i];
    live_launches += rows_in > 0;
  }
  CHECK(launches == live_launches);

  int64_t bad = 0;
  for (int64_t i = 0; i < packed * aligned; ++i)
    if (out[i] != want[static_cast<size_t>(i)] && bad++ < 5)
      FAIL_CHECK("word ", i, " (row ", i / aligned, ", column ", i % aligned, "): got ", out[i], " want ", want[i]);
  CHECK(bad == 0);
  for (int64_t i = 0; i < kGuard; ++i) {
    CHECK(out[-1 - i] == kPoison);
    CHECK(out[packed * aligned + i] == kPoison);
  }
}

}  // namespace

TEST_CASE("K-grouped UE8M0 packing, emulated on the host, equals a per-group reference") {
  std::mt19937 rng(20);
  std::uniform_int_distribution<int> blocks(0, 11);
  for (int64_t mn : {4, 16, 260, 1, 3, 130}) {
    for (int64_t groups : {1, 3, 8, 130}) {
      std::vector<int64_t> ks(static_cast<size_t>(groups));
      for (auto& k : ks) k = 128 * blocks(rng);
      ks[ks.size() / 2] = 0;  // an empty group
      if (groups == 130) ks[128] = ks[129] = 0;  // a launch of empty groups only
      int64_t rows = 0;
      for (int64_t k : ks) rows += k / 128;
      run_case({mn, ks, mn, 0}, rng);
      run_case({mn, ks, mn + 4, 0}, rng);   // padded rows
      run_case({mn, ks, mn + 1, 1}, rng);   // rows not 16-byte aligned: one column per thread
      if (rows > 0) run_case({mn, ks, 0, 0}, rng);  // stored [MN, K blocks]: strided along MN
    }
  }
  // Every group empty: nothing to launch, an empty output.
  run_case({8, {0, 0, 0}, 8, 0}, rng);
  // One group, a single block (a word with only its low byte set).
  run_case({12, {128}, 12, 0}, rng);
}

TEST_CASE("K-grouped packing layout query: sizes, strides and argument checks") {
  const int64_t ks[3] = {512, 0, 640};
  int64_t sizes[2] = {-1, -1}, strides[2] = {-1, -1};
  size_t bytes = 0;
  REQUIRE(dg_get_k_grouped_mn_major_tma_aligned_packed_ue8m0_tensor_layout(7168, ks, 3, sizes, strides, &bytes) ==
          DG_SUCCESS);
  CHECK(sizes[0] == 1 + 0 + 2);  // ceil(4 / 4) + 0 + ceil(5 / 4)
  CHECK(sizes[1] == 7168);
  CHECK(strides[0] == 7168);
  CHECK(strides[1] == 1);
  CHECK(bytes == 3 * 7168 * 4);
  REQUIRE(dg_get_k_grouped_mn_major_tma_aligned_packed_ue8m0_tensor_layout(4097, ks, 3, nullptr, strides, nullptr) ==
          DG_SUCCESS);
  CHECK(strides[0] == 4100);

  const int64_t unaligned[2] = {128, 200};
  CHECK(dg_get_k_grouped_mn_major_tma_aligned_packed_ue8m0_tensor_layout(64, unaligned, 2, sizes, strides, &bytes) ==
        DG_ERROR_INVALID_ARGUMENT);
  CHECK(std::string(dg_last_error()).find("ks[1]: 200") != std::string::npos);
  const int64_t negative[1] = {-128};
  CHECK(dg_get_k_grouped_mn_major_tma_aligned_packed_ue8m0_tensor_layout(64, negative, 1, sizes, strides, &bytes) ==
        DG_ERROR_INVALID_ARGUMENT);
  CHECK(std::string(dg_last_error()).find("ks[0]") != std::string::npos);
  CHECK(dg_get_k_grouped_mn_major_tma_aligned_packed_ue8m0_tensor_layout(64, nullptr, 2, sizes, strides, &bytes) ==
        DG_ERROR_INVALID_ARGUMENT);
  CHECK(std::string(dg_last_error()).find("ks: NULL") != std::string::npos);
  CHECK(dg_get_k_grouped_mn_major_tma_aligned_packed_ue8m0_tensor_layout(64, ks, 0, sizes, strides, &bytes) ==
        DG_ERROR_INVALID_ARGUMENT);
  CHECK(std::string(dg_last_error()).find("num_groups") != std::string::npos);
  CHECK(dg_get_k_grouped_mn_major_tma_aligned_packed_ue8m0_tensor_layout(-4, ks, 3, sizes, strides, &bytes) ==
        DG_ERROR_INVALID_ARGUMENT);
  CHECK(std::string(dg_last_error()).find("mn: -4") != std::string::npos);
  CHECK(dg_get_k_grouped_mn_major_tma_aligned_packed_ue8m0_tensor_layout(INT64_MAX, ks, 3, sizes, strides, &bytes) ==
        DG_ERROR_INVALID_ARGUMENT);
  CHECK(std::string(dg_last_error()).find("mn") != std::string::npos);
}
