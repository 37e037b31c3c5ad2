// The scaling-factor layout kernels on a GPU against a CPU reference: odd and batched shapes,
// already-transposed inputs, UE8M0 packing bit-exact, poisoned outputs.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <utility>
#include <vector>

#include "dg.h"
#include "gpu_fixture.h"

namespace {

using dg::test::DeviceBuffer;
using Fixture = dg::test::Gpu;

// Scales like real ones: positive powers of two times a random mantissa, or exact powers of two
// for the UE8M0 packer (whose input must be powers of two).
std::vector<float> random_scales(size_t n, bool powers_of_two, std::mt19937& rng) {
  std::uniform_int_distribution<int> exp(-20, 20);
  std::uniform_real_distribution<float> mant(1.0f, 2.0f);
  std::vector<float> v(n);
  for (float& x : v) x = std::ldexp(powers_of_two ? 1.0f : mant(rng), exp(rng));
  return v;
}

struct Case {
  int64_t groups, mn, sf_k;
  bool input_transposed;  // input stored MN-major (stride 1 along MN) instead of row-major
  // Row-major input whose groups interleave by row ([MN, G, SF_K] in memory, as fp8_einsum's per-head
  // view of per-token scales [b, h, SF_K] reads them): rows G * SF_K apart, groups SF_K apart.
  bool interleaved = false;
};

void run_case(Fixture& fx, const Case& c, bool pack, std::mt19937& rng) {
  CAPTURE(c.groups);
  CAPTURE(c.mn);
  CAPTURE(c.sf_k);
  CAPTURE(c.input_transposed);
  CAPTURE(c.interleaved);
  CAPTURE(pack);
  const bool batched = c.groups > 1;
  const int64_t g = c.groups, mn = c.mn, k = c.sf_k;
  // Input: logical [G, MN, SF_K]; row-major, or each group stored transposed ([G, SF_K, MN]).
  std::vector<float> host = random_scales(static_cast<size_t>(g * mn * k), pack, rng);
  auto at = [&](int64_t gi, int64_t i, int64_t kb) {
    if (c.interleaved) return host[(i * g + gi) * k + kb];
    return c.input_transposed ? host[(gi * k + kb) * mn + i] : host[(gi * mn + i) * k + kb];
  };
  std::vector<int64_t> sizes = {mn, k};
  std::vector<int64_t> strides = c.input_transposed ? std::vector<int64_t>{1, mn}
                                 : c.interleaved    ? std::vector<int64_t>{g * k, 1}
                                                    : std::vector<int64_t>{k, 1};
  if (batched) {
    sizes.insert(sizes.begin(), g);
    strides.insert(strides.begin(), c.interleaved ? k : mn * k);
  }
  DeviceBuffer in(fx.device, host.size() * 4);
  in.upload(host);

  int64_t out_sizes[3], out_strides[3];
  size_t out_bytes = 0;
  const int32_t rank = static_cast<int32_t>(sizes.size());
  REQUIRE((pack ? dg_get_mn_major_tma_aligned_packed_ue8m0_tensor_layout(rank, sizes.data(), out_sizes, out_strides, &out_bytes)
                : dg_get_mn_major_tma_aligned_tensor_layout(rank, sizes.data(), out_sizes, out_strides, &out_bytes)) ==
          DG_SUCCESS);
  const int64_t aligned_mn = (mn + 3) / 4 * 4;
  const int64_t cols = pack ? (k + 3) / 4 : k;
  CHECK(out_strides[rank - 2] == 1);
  CHECK(out_strides[rank - 1] == aligned_mn);
  CHECK(out_bytes == static_cast<size_t>(g * aligned_mn * cols * 4));

  DeviceBuffer out(fx.device, out_bytes);
  out.poison();
  dg::test::Tensor tin(in.data(), DG_DTYPE_FLOAT32, sizes, strides);
  dg::test::Tensor tout(out.data(), pack ? DG_DTYPE_INT32 : DG_DTYPE_FLOAT32,
                                std::vector<int64_t>(out_sizes, out_sizes + rank),
                                std::vector<int64_t>(out_strides, out_strides + rank));
  const dg_status s = pack ? dg_get_mn_major_tma_aligned_packed_ue8m0_tensor(fx.stream, tin.t, tout.t)
                           : dg_get_mn_major_tma_aligned_tensor(fx.stream, tin.t, tout.t);
  REQUIRE_MESSAGE(s == DG_SUCCESS, dg_last_error());
  REQUIRE(dg_stream_synchronize(fx.stream) == DG_SUCCESS);

  const std::vector<uint32_t> got = out.download<uint32_t>();
  int64_t mismatches = 0;
  for (int64_t gi = 0; gi < g; ++gi) {
    for (int64_t p = 0; p < cols; ++p) {
      for (int64_t i = 0; i < aligned_mn; ++i) {
        uint32_t want = 0;  // padding rows are written as zeros
        if (i < mn) {
          if (pack) {
            for (int j = 0; j < 4; ++j) {
              const int64_t kb = p * 4 + j;
              if (kb >= k) break;
              uint32_t bits;
              const float v = at(gi, i, kb);
              std::memcpy(&bits, &v, 4);
              want |= ((bits >> 23) & 0xffu) << (8 * j);
            }
          } else {
            const float v = at(gi, i, p);
            std::memcpy(&want, &v, 4);
          }
        }
        const uint32_t have = got[static_cast<size_t>(gi * aligned_mn * cols + p * aligned_mn + i)];
        if (have != want && mismatches++ < 5)
          FAIL_CHECK("group ", gi, " row ", i, " col ", p, ": got ", have, " want ", want);
      }
    }
  }
  CHECK(mismatches == 0);
}

}  // namespace

TEST_CASE("FP32 scales into the MN-major TMA-aligned layout") {
  Fixture fx;
  std::mt19937 rng(1234);
  for (int64_t mn : {4096, 4097, 1, 130})
    for (int64_t k_elems : {128, 7168, 7296})
      for (int64_t groups : {1, 2, 4})
        for (bool transposed : {false, true})
          run_case(fx, {groups, mn, (k_elems + 127) / 128, transposed}, false, rng);
}

TEST_CASE("UE8M0 packing is bit-exact") {
  Fixture fx;
  std::mt19937 rng(99);
  for (int64_t mn : {4096, 4097, 8192, 3})
    for (int64_t k_elems : {128, 7168, 7296})
      for (int64_t groups : {1, 2, 4})
        for (bool transposed : {false, true})
          run_case(fx, {groups, mn, (k_elems + 127) / 128, transposed}, true, rng);
}

// Few K blocks (K 128 .. 2048: SF_K 1 .. 16) take tiles of fewer columns and more rows: every tile
// width, with MN tails and the per-head interleaved rows of fp8_einsum's scales.
TEST_CASE("scale layouts of few K blocks") {
  Fixture fx;
  std::mt19937 rng(4242);
  for (bool pack : {false, true})
    for (int64_t sf_k : {1, 2, 3, 4, 5, 8, 9, 16, 17})
      for (int64_t mn : {4096, 1027})
        for (int64_t groups : {1, 3}) {
          run_case(fx, {groups, mn, sf_k, false}, pack, rng);
          run_case(fx, {groups, mn, sf_k, true}, pack, rng);
          if (groups > 1) run_case(fx, {groups, mn, sf_k, false, true}, pack, rng);
        }
}

// The quick suite's layout kernels: both, batched and not, row-major and transposed input, MN and
// SF_K tails.
TEST_CASE("quick: scale layout kernels" * doctest::test_suite("quick")) {
  Fixture fx;
  std::mt19937 rng(77);
  for (bool pack : {false, true})
    for (int64_t groups : {1, 2})
      for (bool transposed : {false, true}) run_case(fx, {groups, 130, 57, transposed}, pack, rng);
  for (bool pack : {false, true}) run_case(fx, {8, 300, 4, false, true}, pack, rng);  // fp8_einsum's K 512
}

TEST_CASE("transform_sf_into_required_layout on SM90 per-token scales" * doctest::test_suite("quick")) {
  Fixture fx;
  std::mt19937 rng(5);
  const int64_t mn = 4097, k = 7296, sf_k = 57;
  std::vector<float> host = random_scales(static_cast<size_t>(mn * sf_k), false, rng);
  DeviceBuffer in(fx.device, host.size() * 4);
  in.upload(host);
  dg::test::Tensor tin(in.data(), DG_DTYPE_FLOAT32, {mn, sf_k}, {});
  dg_sf_recipe recipe = DG_SF_RECIPE_INIT;  // arch from the stream's device
  int32_t is_input = -1;
  dg_dtype dtype = 0;
  int64_t sizes[3], strides[3];
  size_t bytes = 0;
  REQUIRE(dg_transform_sf_layout(fx.stream, tin.t, mn, k, &recipe, &is_input, &dtype, sizes, strides, &bytes) == DG_SUCCESS);
  if (fx.device->cc_major != 9) return;  // the SM100 path packs to UE8M0 and is covered above
  REQUIRE(is_input == 0);
  DeviceBuffer out(fx.device, bytes);
  out.poison();
  dg::test::Tensor tout(out.data(), dtype, {sizes[0], sizes[1]}, {strides[0], strides[1]});
  REQUIRE_MESSAGE(dg_transform_sf_into_required_layout(fx.stream, tin.t, mn, k, &recipe, tout.t) == DG_SUCCESS, dg_last_error());
  const std::vector<float> got = out.download<float>();
  int64_t bad = 0;
  for (int64_t i = 0; i < mn; ++i)
    for (int64_t kb = 0; kb < sf_k; ++kb) bad += got[static_cast<size_t>(kb * 4100 + i)] != host[static_cast<size_t>(i * sf_k + kb)];
  CHECK(bad == 0);
}

namespace {

// One K-grouped packing on the device against a per-group host reference, bit for bit: scales
// [sum(ks) / 128, mn] with row stride sf_ld, the output poisoned (and a poisoned guard after it).
void run_k_grouped(Fixture& fx, int64_t mn, const std::vector<int64_t>& ks, int64_t sf_ld, std::mt19937& rng) {
  const int64_t g = static_cast<int64_t>(ks.size());
  int64_t rows = 0, sum_k = 0;
  for (int64_t k : ks) rows += k / 128, sum_k += k;
  CAPTURE(mn);
  CAPTURE(g);
  CAPTURE(sum_k);
  CAPTURE(sf_ld);
  // Scales as DeepGEMM's per-channel cast makes them for UE8M0: powers of two; a few with sign or
  // mantissa bits (only the exponent field is packed).
  std::vector<float> host = random_scales(static_cast<size_t>(rows * sf_ld), true, rng);
  for (size_t i = 0; i < host.size(); i += 97) host[i] *= -1.5f;
  DeviceBuffer in(fx.device, host.size() * 4);
  in.upload(host);

  int64_t sizes[2], strides[2];
  size_t bytes = 0;
  REQUIRE(dg_get_k_grouped_mn_major_tma_aligned_packed_ue8m0_tensor_layout(mn, ks.data(), g, sizes, strides, &bytes) ==
          DG_SUCCESS);
  const int64_t aligned = (mn + 3) / 4 * 4;
  int64_t packed = 0;
  for (int64_t k : ks) packed += (k / 128 + 3) / 4;
  REQUIRE(sizes[0] == packed);
  REQUIRE(strides[0] == aligned);
  REQUIRE(bytes == static_cast<size_t>(packed * aligned * 4));

  std::vector<int32_t> ks32(ks.begin(), ks.end());
  DeviceBuffer ks_dev(fx.device, ks32.size() * 4);
  ks_dev.upload(ks32);
  constexpr size_t kGuardBytes = 4096;
  DeviceBuffer out(fx.device, bytes + kGuardBytes);
  out.poison();
  dg::test::Tensor tin(in.data(), DG_DTYPE_FLOAT32, {rows, mn}, {sf_ld, 1});
  dg::test::Tensor tks(ks_dev.data(), DG_DTYPE_INT32, {g});
  dg::test::Tensor tout(out.data(), DG_DTYPE_INT32, {sizes[0], sizes[1]}, {strides[0], strides[1]});
  REQUIRE_MESSAGE(dg_get_k_grouped_mn_major_tma_aligned_packed_ue8m0_tensor(fx.stream, tin.t, ks.data(), g, tks.t,
                                                                              tout.t) == DG_SUCCESS,
                  dg_last_error());
  REQUIRE(dg_stream_synchronize(fx.stream) == DG_SUCCESS);
  const std::vector<uint32_t> got = out.download<uint32_t>();

  int64_t mismatches = 0, first = 0, row = 0;
  for (int64_t gi = 0; gi < g; ++gi) {
    const int64_t blocks = ks[static_cast<size_t>(gi)] / 128;
    for (int64_t j = 0; j < (blocks + 3) / 4; ++j, ++row) {
      for (int64_t i = 0; i < aligned; ++i) {
        uint32_t want = 0;  // padding columns are written as zeros
        for (int t = 0; t < 4 && i < mn && 4 * j + t < blocks; ++t) {
          uint32_t bits;
          std::memcpy(&bits, &host[static_cast<size_t>((first + 4 * j + t) * sf_ld + i)], 4);
          want |= ((bits >> 23) & 0xffu) << (8 * t);
        }
        const uint32_t have = got[static_cast<size_t>(row * aligned + i)];
        if (have != want && mismatches++ < 5)
          FAIL_CHECK("group ", gi, " packed row ", j, " column ", i, ": got ", have, " want ", want);
      }
    }
    first += blocks;
  }
  CHECK(mismatches == 0);
  int64_t guard_hits = 0;
  for (size_t w = bytes / 4; w < got.size(); ++w) guard_hits += got[w] != 0xffffffffu;
  CHECK(guard_hits == 0);
}

// Each group's K: align(U(lo, hi) * avg, 128), as DeepGEMM's test draws them.
std::vector<int64_t> draw_ks(int64_t groups, double lo, double hi, int64_t avg, std::mt19937& rng) {
  std::uniform_real_distribution<double> u(lo, hi);
  std::vector<int64_t> ks(static_cast<size_t>(groups));
  for (auto& k : ks) k = (static_cast<int64_t>(u(rng) * avg) + 127) / 128 * 128;
  return ks;
}

}  // namespace

// The quick suite's K-grouped packing: the 16-byte path and the one-column path (MN % 4 != 0), an
// empty group.
TEST_CASE("quick: K-grouped UE8M0 packing" * doctest::test_suite("quick")) {
  Fixture fx;
  std::mt19937 rng(2021);
  run_k_grouped(fx, 132, {256, 0, 512, 384}, 132, rng);
  run_k_grouped(fx, 130, {384, 128, 0, 640}, 130, rng);
}

TEST_CASE("K-grouped UE8M0 packing is bit-exact against a per-group reference") {
  Fixture fx;
  std::mt19937 rng(2020);
  for (int64_t mn : {4096, 7168}) {
    // DeepGEMM's test_layout sets: (G, average K per group), K drawn in [0.7, 1.3] x average.
    for (const auto& [g, avg] : {std::pair<int64_t, int64_t>{16, 2048}, {8, 4096}, {72, 384}, {128, 256}})
      run_k_grouped(fx, mn, draw_ks(g, 0.7, 1.3, avg, rng), mn, rng);
    // K per group anywhere from 256 to 4096, one group empty.
    for (int64_t g : {8, 16, 72, 128}) {
      std::vector<int64_t> ks = draw_ks(g, 256.0 / 128, 4096.0 / 128, 128, rng);
      for (auto& k : ks) k = std::min<int64_t>(std::max<int64_t>(k, 256), 4096);
      ks[static_cast<size_t>(g / 3)] = 0;
      run_k_grouped(fx, mn, ks, mn, rng);
    }
  }
  // Odd forms: padded scale rows (16-byte path), rows not 16-byte aligned and MN % 4 != 0 (one
  // column per thread, padded output rows), more groups than one launch takes.
  run_k_grouped(fx, 4096, draw_ks(16, 0.7, 1.3, 2048, rng), 4100, rng);
  run_k_grouped(fx, 4096, draw_ks(16, 0.7, 1.3, 2048, rng), 4098, rng);
  run_k_grouped(fx, 4097, draw_ks(16, 0.7, 1.3, 2048, rng), 4097, rng);
  run_k_grouped(fx, 7168, draw_ks(200, 0.7, 1.3, 384, rng), 7168, rng);
}
