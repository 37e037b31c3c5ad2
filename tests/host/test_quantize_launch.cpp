// The FP8 quantization entry points against the fake driver: the variant each problem picks (input
// dtype, 16-byte or element path, grouping, packed scales), its grid and every field of its
// argument; empty problems launching nothing; and the checks of the bad-input matrix cannot see
// (layouts, overlapping rows, limits), each naming its argument. No GPU.
#include <doctest/doctest.h>

#include <cstring>
#include <string>
#include <tuple>
#include <vector>

#include "dg.h"
#include "fake_driver.h"
#include "launch_util.h"
#include "ops/quantize.h"

namespace {

using dg::ops::QuantParams;
using namespace dg::test;  // fake_driver.h, launch_util.h

struct Stream {
  dg_stream* s = nullptr;
  Stream() { REQUIRE(dg_stream_create(&s, 0, nullptr, DG_STREAM_CREATE, nullptr) == DG_SUCCESS); }
  ~Stream() { dg_stream_destroy(s); }
};

// The one launch a call made, its argument in *p.
Launch only_launch(FakeDriver& fake, QuantParams* p) {
  std::vector<Launch> l = fake.take();
  REQUIRE(l.size() == 1);
  REQUIRE(l[0].params.size() == sizeof(QuantParams));
  std::memcpy(p, l[0].params.data(), sizeof(QuantParams));
  CHECK(l[0].config.block[0] == 256);
  CHECK(l[0].config.block[1] == 1);
  return l[0];
}

void check_grid(const Launch& l, unsigned x, unsigned y, unsigned z) {
  CHECK(l.config.grid[0] == x);
  CHECK(l.config.grid[1] == y);
  CHECK(l.config.grid[2] == z);
}

std::vector<int64_t> sf_layout(std::vector<int64_t> sizes, bool packed, std::vector<int64_t>* strides) {
  std::vector<int64_t> out(sizes.size());
  strides->resize(sizes.size());
  auto f = packed ? dg_get_mn_major_tma_aligned_packed_ue8m0_tensor_layout : dg_get_mn_major_tma_aligned_tensor_layout;
  REQUIRE(f(int32_t(sizes.size()), sizes.data(), out.data(), strides->data(), nullptr) == DG_SUCCESS);
  return out;
}

}  // namespace

TEST_CASE("per-token quantization: variant, grid and argument") {
  FakeDriver fake(0);
  Stream stream;
  for (const bool fp32 : {false, true})
    for (const bool packed : {false, true})
      for (const int64_t m : {int64_t(1), int64_t(300), int64_t(301), int64_t(4096)})
        for (const int64_t k : {int64_t(7168), int64_t(100), int64_t(128), int64_t(513)}) {
          CAPTURE(fp32);
          CAPTURE(packed);
          CAPTURE(m);
          CAPTURE(k);
          const int64_t sf_k = (k + 127) / 128;
          std::vector<int64_t> st;
          const std::vector<int64_t> ss = sf_layout({m, sf_k}, packed, &st);
          Tensor x(fake_address(1), fp32 ? DG_DTYPE_FLOAT32 : DG_DTYPE_BFLOAT16, {m, k});
          Tensor out(fake_address(2), DG_DTYPE_FLOAT8_E4M3, {m, k});
          Tensor sf(fake_address(3), packed ? DG_DTYPE_UE8M0X4 : DG_DTYPE_FLOAT32, ss, st);
          dg_quant_options o = DG_QUANT_OPTIONS_INIT;
          o.amax_floor = 1e-10f;
          REQUIRE_MESSAGE(dg_quantize_fp8_per_token(stream.s, x.t, out.t, sf.t, &o) == DG_SUCCESS, dg_last_error());
          QuantParams p;
          const Launch l = only_launch(fake, &p);
          const bool vec = k % 16 == 0;
          CHECK(l.kernel == std::string("dg_quantize_fp8_per_token_") + (fp32 ? "f32" : "bf16") + (vec ? "_v16" : "_v1") +
                                (packed ? "_ue8m0x4" : ""));
          const int64_t aligned_m = (m + 3) / 4 * 4;
          check_grid(l, unsigned((aligned_m + 7) / 8), unsigned((k + 511) / 512), 1);
          CHECK(p.x == fake_address(1));
          CHECK(p.out == fake_address(2));
          CHECK(p.sf == fake_address(3));
          CHECK(p.groups == nullptr);
          CHECK(p.x_ld == k);
          CHECK(p.out_ld == k);
          CHECK(p.sf_ld == aligned_m);
          CHECK(p.rows == m);
          CHECK(p.cols == k);
          CHECK(p.sf_rows == aligned_m);
          CHECK(p.amax_floor == 1e-10f);
          CHECK(p.pow2 == (packed ? 1 : 0));
        }
}

TEST_CASE("per-token quantization: strided and misaligned operands take the element path; defaults") {
  FakeDriver fake(0);
  Stream stream;
  std::vector<int64_t> st;
  const std::vector<int64_t> ss = sf_layout({64, 2}, false, &st);
  Tensor sf(fake_address(3), DG_DTYPE_FLOAT32, ss, st);
  Tensor out(fake_address(2), DG_DTYPE_FLOAT8_E4M3, {64, 256}, {272, 1});
  QuantParams p;
  {
    Tensor x(fake_address(1), DG_DTYPE_BFLOAT16, {64, 256}, {264, 1});  // rows 528 bytes apart: 16-byte multiples
    REQUIRE(dg_quantize_fp8_per_token(stream.s, x.t, out.t, sf.t, nullptr) == DG_SUCCESS);
    const Launch l = only_launch(fake, &p);
    CHECK(l.kernel == "dg_quantize_fp8_per_token_bf16_v16");
    CHECK(p.x_ld == 264);
    CHECK(p.out_ld == 272);
    CHECK(p.amax_floor == 1e-4f);  // the default
    CHECK(p.pow2 == 0);
  }
  {
    Tensor x(fake_address(1), DG_DTYPE_BFLOAT16, {64, 256}, {260, 1});  // 520 bytes: not a 16-byte multiple
    REQUIRE(dg_quantize_fp8_per_token(stream.s, x.t, out.t, sf.t, nullptr) == DG_SUCCESS);
    CHECK(only_launch(fake, &p).kernel == "dg_quantize_fp8_per_token_bf16_v1");
  }
  {
    Tensor x(static_cast<char*>(fake_address(1)) + 2, DG_DTYPE_BFLOAT16, {64, 256});
    REQUIRE(dg_quantize_fp8_per_token(stream.s, x.t, out.t, sf.t, nullptr) == DG_SUCCESS);
    CHECK(only_launch(fake, &p).kernel == "dg_quantize_fp8_per_token_bf16_v1");
  }
  {
    Tensor x(fake_address(1), DG_DTYPE_BFLOAT16, {64, 256});
    Tensor out1(static_cast<char*>(fake_address(2)) + 8, DG_DTYPE_FLOAT8_E4M3, {64, 256});
    REQUIRE(dg_quantize_fp8_per_token(stream.s, x.t, out1.t, sf.t, nullptr) == DG_SUCCESS);
    CHECK(only_launch(fake, &p).kernel == "dg_quantize_fp8_per_token_bf16_v1");
  }
  {
    dg_quant_options o = DG_QUANT_OPTIONS_INIT;
    o.pow2_scales = 1;
    Tensor x(fake_address(1), DG_DTYPE_BFLOAT16, {64, 256});
    REQUIRE(dg_quantize_fp8_per_token(stream.s, x.t, out.t, sf.t, &o) == DG_SUCCESS);
    only_launch(fake, &p);
    CHECK(p.pow2 == 1);
  }
}

TEST_CASE("batched, contiguous and masked per-token quantization") {
  FakeDriver fake(0);
  Stream stream;
  QuantParams p;
  const int64_t g = 3, max_m = 72, k = 640;
  std::vector<int64_t> st;
  const std::vector<int64_t> ss = sf_layout({g, max_m, 5}, false, &st);
  Tensor x3(fake_address(1), DG_DTYPE_BFLOAT16, {g, max_m, k});
  Tensor out3(fake_address(2), DG_DTYPE_FLOAT8_E4M3, {g, max_m, k});
  Tensor sf3(fake_address(3), DG_DTYPE_FLOAT32, ss, st);
  Tensor masked(fake_address(4), DG_DTYPE_INT32, {g});
  SUBCASE("batched") {
    REQUIRE(dg_quantize_fp8_per_token(stream.s, x3.t, out3.t, sf3.t, nullptr) == DG_SUCCESS);
    const Launch l = only_launch(fake, &p);
    CHECK(l.kernel == "dg_quantize_fp8_per_token_bf16_v16");
    check_grid(l, 9, 2, 3);
    CHECK(p.x_batch == max_m * k);
    CHECK(p.out_batch == max_m * k);
    CHECK(p.sf_batch == 72 * 5);
    CHECK(p.sf_ld == 72);
  }
  SUBCASE("masked") {
    REQUIRE(dg_quantize_fp8_per_token_masked(stream.s, x3.t, out3.t, sf3.t, masked.t, nullptr) == DG_SUCCESS);
    const Launch l = only_launch(fake, &p);
    CHECK(l.kernel == "dg_quantize_fp8_per_token_bf16_v16_masked");
    check_grid(l, 3 * 72 * 2 / 8, 1, 1);  // every row valid: 432 warps of work, 54 blocks
    CHECK(p.groups == fake_address(4));
    CHECK(p.num_groups == g);
    CHECK(p.rows == max_m);
  }
  SUBCASE("contiguous, both layouts") {
    const int64_t m = 512;
    const std::vector<int64_t> s2 = sf_layout({m, 5}, true, &st);
    Tensor x(fake_address(1), DG_DTYPE_FLOAT32, {m, k});
    Tensor out(fake_address(2), DG_DTYPE_FLOAT8_E4M3, {m, k});
    Tensor sf(fake_address(3), DG_DTYPE_INT32, s2, st);
    Tensor indices(fake_address(5), DG_DTYPE_INT32, {m});
    Tensor psum(fake_address(6), DG_DTYPE_INT32, {7});
    REQUIRE(dg_quantize_fp8_per_token_contiguous(stream.s, x.t, out.t, sf.t, indices.t, DG_M_GROUPED_LAYOUT_INDICES, 9,
                                                 nullptr) == DG_SUCCESS);
    Launch l = only_launch(fake, &p);
    CHECK(l.kernel == "dg_quantize_fp8_per_token_f32_v16_indices_ue8m0x4");
    check_grid(l, 64, 2, 1);
    CHECK(p.groups == fake_address(5));
    CHECK(p.num_groups == 9);
    CHECK(p.sf_ld == m);
    REQUIRE(dg_quantize_fp8_per_token_contiguous(stream.s, x.t, out.t, sf.t, psum.t, DG_M_GROUPED_LAYOUT_PSUM, 7,
                                                 nullptr) == DG_SUCCESS);
    l = only_launch(fake, &p);
    CHECK(l.kernel == "dg_quantize_fp8_per_token_f32_v16_psum_ue8m0x4");
    CHECK(p.groups == fake_address(6));
    CHECK(p.num_groups == 7);
    // The psum tensor has one entry per group; the indices one per row.
    CHECK(dg_quantize_fp8_per_token_contiguous(stream.s, x.t, out.t, sf.t, psum.t, DG_M_GROUPED_LAYOUT_PSUM, 8,
                                               nullptr) == DG_ERROR_INVALID_ARGUMENT);
    CHECK(std::string(dg_last_error()).rfind("grouped_layout:", 0) == 0);
    CHECK(dg_quantize_fp8_per_token_contiguous(stream.s, x.t, out.t, sf.t, psum.t, DG_M_GROUPED_LAYOUT_INDICES, 7,
                                               nullptr) == DG_ERROR_INVALID_ARGUMENT);
    CHECK(std::string(dg_last_error()).rfind("grouped_layout:", 0) == 0);
    CHECK(dg_quantize_fp8_per_token_contiguous(stream.s, x.t, out.t, sf.t, indices.t, DG_M_GROUPED_LAYOUT_INDICES, 0,
                                               nullptr) == DG_ERROR_INVALID_ARGUMENT);
    CHECK(std::string(dg_last_error()).rfind("num_groups:", 0) == 0);
  }
  CHECK(fake.take().empty());
}

TEST_CASE("masked per-token quantization: a grid of at most four blocks per SM walks the valid rows") {
  FakeDriver fake(0);
  Stream stream;
  QuantParams p;
  const int64_t g = 32, max_m = 256, k = 7168;
  std::vector<int64_t> st;
  const std::vector<int64_t> ss = sf_layout({g, max_m, 56}, false, &st);
  Tensor x(fake_address(1), DG_DTYPE_BFLOAT16, {g, max_m, k});
  Tensor out(fake_address(2), DG_DTYPE_FLOAT8_E4M3, {g, max_m, k});
  Tensor sf(fake_address(3), DG_DTYPE_FLOAT32, ss, st);
  Tensor masked(fake_address(4), DG_DTYPE_INT32, {g});
  REQUIRE(dg_quantize_fp8_per_token_masked(stream.s, x.t, out.t, sf.t, masked.t, nullptr) == DG_SUCCESS);
  const Launch l = only_launch(fake, &p);
  check_grid(l, unsigned(kSms * 4), 1, 1);
  CHECK(p.rows == max_m);
  CHECK(p.num_groups == g);
  CHECK(p.sf_batch == max_m * 56);
  // More groups than the kernel's table: refused, naming masked_m.
  Tensor x2(fake_address(1), DG_DTYPE_BFLOAT16, {1025, 64, 128});
  Tensor out2(fake_address(2), DG_DTYPE_FLOAT8_E4M3, {1025, 64, 128});
  const std::vector<int64_t> ss2 = sf_layout({1025, 64, 1}, false, &st);
  Tensor sf2(fake_address(3), DG_DTYPE_FLOAT32, ss2, st);
  Tensor masked2(fake_address(4), DG_DTYPE_INT32, {1025});
  CHECK(dg_quantize_fp8_per_token_masked(stream.s, x2.t, out2.t, sf2.t, masked2.t, nullptr) == DG_ERROR_UNSUPPORTED);
  CHECK(std::string(dg_last_error()).rfind("masked_m:", 0) == 0);
  CHECK(fake.take().empty());
}

TEST_CASE("per-block and MN-major quantization: variant, grid and argument") {
  FakeDriver fake(0);
  Stream stream;
  QuantParams p;
  {
    Tensor x(fake_address(1), DG_DTYPE_BFLOAT16, {2, 300, 7168});
    Tensor out(fake_address(2), DG_DTYPE_FLOAT8_E4M3, {2, 300, 7168});
    Tensor sf(fake_address(3), DG_DTYPE_FLOAT32, {2, 3, 56});
    REQUIRE(dg_quantize_fp8_per_block(stream.s, x.t, out.t, sf.t, nullptr) == DG_SUCCESS);
    const Launch l = only_launch(fake, &p);
    CHECK(l.kernel == "dg_quantize_fp8_per_block_bf16_v16");
    check_grid(l, 56, 3, 2);
    CHECK(p.rows == 300);
    CHECK(p.cols == 7168);
    CHECK(p.sf_ld == 56);
    CHECK(p.sf_batch == 3 * 56);
    CHECK(p.x_batch == 300 * 7168);
  }
  {
    Tensor x(fake_address(1), DG_DTYPE_FLOAT32, {129, 200});
    Tensor out(fake_address(2), DG_DTYPE_FLOAT8_E4M3, {129, 200});
    Tensor sf(fake_address(3), DG_DTYPE_FLOAT32, {2, 2});
    REQUIRE(dg_quantize_fp8_per_block(stream.s, x.t, out.t, sf.t, nullptr) == DG_SUCCESS);
    const Launch l = only_launch(fake, &p);
    CHECK(l.kernel == "dg_quantize_fp8_per_block_f32_v1");
    check_grid(l, 2, 2, 1);
    Tensor sf_t(fake_address(3), DG_DTYPE_FLOAT32, {2, 2}, {1, 2});  // MN-major: refused
    CHECK(dg_quantize_fp8_per_block(stream.s, x.t, out.t, sf_t.t, nullptr) == DG_ERROR_INVALID_ARGUMENT);
    CHECK(std::string(dg_last_error()).rfind("sf:", 0) == 0);
  }
  {
    std::vector<int64_t> st;
    const std::vector<int64_t> ss = sf_layout({4097, 9}, false, &st);
    Tensor x(fake_address(1), DG_DTYPE_BFLOAT16, {1100, 4097}, {4104, 1});
    Tensor out(fake_address(2), DG_DTYPE_FLOAT8_E4M3, {1100, 4097});
    Tensor sf(fake_address(3), DG_DTYPE_FLOAT32, ss, st);
    REQUIRE(dg_quantize_fp8_mn_major(stream.s, x.t, out.t, sf.t, nullptr) == DG_SUCCESS);
    const Launch l = only_launch(fake, &p);
    CHECK(l.kernel == "dg_quantize_fp8_mn_major_bf16_v1");
    check_grid(l, 9, 33, 1);
    CHECK(p.rows == 1100);
    CHECK(p.cols == 4097);
    CHECK(p.x_ld == 4104);
    CHECK(p.out_ld == 4097);
    CHECK(p.sf_ld == 4100);
  }
}

TEST_CASE("quantization: empty problems launch nothing") {
  FakeDriver fake(0);
  Stream stream;
  std::vector<int64_t> st;
  for (const auto& [m, k] : {std::pair<int64_t, int64_t>{0, 256}, {64, 0}}) {
    const std::vector<int64_t> ss = sf_layout({m, (k + 127) / 128}, false, &st);
    Tensor x(nullptr, DG_DTYPE_BFLOAT16, {m, k});
    Tensor out(nullptr, DG_DTYPE_FLOAT8_E4M3, {m, k});
    Tensor sf(nullptr, DG_DTYPE_FLOAT32, ss, st);
    CHECK(dg_quantize_fp8_per_token(stream.s, x.t, out.t, sf.t, nullptr) == DG_SUCCESS);
    Tensor sfb(nullptr, DG_DTYPE_FLOAT32, {(m + 127) / 128, (k + 127) / 128});
    CHECK(dg_quantize_fp8_per_block(stream.s, x.t, out.t, sfb.t, nullptr) == DG_SUCCESS);
  }
  Tensor x(nullptr, DG_DTYPE_BFLOAT16, {0, 64, 256});
  Tensor out(nullptr, DG_DTYPE_FLOAT8_E4M3, {0, 64, 256});
  Tensor sf(nullptr, DG_DTYPE_FLOAT32, {0, 64, 2}, {128, 1, 64});
  Tensor masked(nullptr, DG_DTYPE_INT32, {0});
  CHECK(dg_quantize_fp8_per_token_masked(stream.s, x.t, out.t, sf.t, masked.t, nullptr) == DG_SUCCESS);
  CHECK(fake.take().empty());
}

TEST_CASE("quantization: layouts, overlapping rows and limits are refused naming the argument") {
  FakeDriver fake(0);
  Stream stream;
  Tensor x(fake_address(1), DG_DTYPE_BFLOAT16, {64, 256});
  Tensor out(fake_address(2), DG_DTYPE_FLOAT8_E4M3, {64, 256});
  auto opens = [](const char* arg) { return std::string(dg_last_error()).rfind(std::string(arg) + ":", 0) == 0; };
  {
    Tensor sf_k_major(fake_address(3), DG_DTYPE_FLOAT32, {64, 2});  // K-major: not what the GEMMs read
    CHECK(dg_quantize_fp8_per_token(stream.s, x.t, out.t, sf_k_major.t, nullptr) == DG_ERROR_INVALID_ARGUMENT);
    CHECK(opens("sf"));
    CHECK(std::string(dg_last_error()).find("dg_get_mn_major_tma_aligned_tensor_layout") != std::string::npos);
    Tensor sf_packed(fake_address(3), DG_DTYPE_INT32, {64, 2}, {1, 64});  // packed: ceil(2 / 4) = 1 word per row
    CHECK(dg_quantize_fp8_per_token(stream.s, x.t, out.t, sf_packed.t, nullptr) == DG_ERROR_INVALID_ARGUMENT);
    CHECK(std::string(dg_last_error()).find("packed_ue8m0") != std::string::npos);
  }
  Tensor sf(fake_address(3), DG_DTYPE_FLOAT32, {64, 2}, {1, 64});
  {
    Tensor overlapping(fake_address(2), DG_DTYPE_FLOAT8_E4M3, {64, 256}, {128, 1});
    CHECK(dg_quantize_fp8_per_token(stream.s, x.t, overlapping.t, sf.t, nullptr) == DG_ERROR_INVALID_ARGUMENT);
    CHECK(opens("out"));
    Tensor strided(fake_address(2), DG_DTYPE_FLOAT8_E4M3, {64, 256}, {512, 2});
    CHECK(dg_quantize_fp8_per_token(stream.s, x.t, strided.t, sf.t, nullptr) == DG_ERROR_INVALID_ARGUMENT);
    CHECK(opens("out"));
    Tensor x_t(fake_address(1), DG_DTYPE_BFLOAT16, {64, 256}, {1, 64});
    CHECK(dg_quantize_fp8_per_token(stream.s, x_t.t, out.t, sf.t, nullptr) == DG_ERROR_INVALID_ARGUMENT);
    CHECK(opens("x"));
  }
  {
    const int64_t k = int64_t(40) << 20;  // 40 Mi columns: more 512-column chunks than grid.y takes
    std::vector<int64_t> st;
    const std::vector<int64_t> ss = sf_layout({2, k / 128}, false, &st);
    Tensor xb(fake_address(1), DG_DTYPE_BFLOAT16, {2, k});
    Tensor ob(fake_address(2), DG_DTYPE_FLOAT8_E4M3, {2, k});
    Tensor sb(fake_address(3), DG_DTYPE_FLOAT32, ss, st);
    CHECK(dg_quantize_fp8_per_token(stream.s, xb.t, ob.t, sb.t, nullptr) == DG_ERROR_UNSUPPORTED);
    CHECK(opens("x"));
  }
  {
    dg_quant_options o = DG_QUANT_OPTIONS_INIT;
    o.amax_floor = 1e31f;
    CHECK(dg_quantize_fp8_per_token(stream.s, x.t, out.t, sf.t, &o) == DG_ERROR_INVALID_ARGUMENT);
    CHECK(opens("options.amax_floor"));
  }
  CHECK(fake.take().empty());
}

namespace {

using dg::ops::KGroupedQuantParams;

KGroupedQuantParams k_grouped_params(const Launch& l) {
  KGroupedQuantParams p;
  REQUIRE(l.params.size() == sizeof(KGroupedQuantParams));
  std::memcpy(&p, l.params.data(), sizeof p);
  CHECK(l.config.block[0] == 256);
  return p;
}

const char* at(int i, int64_t bytes) { return static_cast<const char*>(fake_address(i)) + bytes; }

}  // namespace

TEST_CASE("K-grouped quantization: variant, grid, argument, launches of up to 512 host groups, device counts") {
  FakeDriver fake(0);
  Stream stream;
  const std::vector<int64_t> ks = {300, 0, 128, 5};  // padded: 384 + 0 + 128 + 128 rows, 5 blocks
  for (const bool kmajor : {false, true})
    for (const bool fp32 : {false, true}) {
      CAPTURE(kmajor);
      CAPTURE(fp32);
      Tensor x(fake_address(1), fp32 ? DG_DTYPE_FLOAT32 : DG_DTYPE_BFLOAT16, {433, 4096});
      Tensor out_mn(fake_address(2), DG_DTYPE_FLOAT8_E4M3, {640, 4096}, {4112, 1});
      Tensor out_k(fake_address(2), DG_DTYPE_FLOAT8_E4M3, {640 * 4096});
      Tensor sf(fake_address(3), DG_DTYPE_FLOAT32, {4096, 5}, {1, 4096});
      Tensor ks_t(fake_address(4), DG_DTYPE_INT32, {4});
      dg_quant_options o = DG_QUANT_OPTIONS_INIT;
      o.pow2_scales = 1;
      REQUIRE_MESSAGE(dg_quantize_fp8_k_grouped(stream.s, x.t, kmajor ? out_k.t : out_mn.t, sf.t, ks.data(), 4, ks_t.t,
                                                &o) == DG_SUCCESS,
                      dg_last_error());
      std::vector<Launch> l = fake.take();
      REQUIRE(l.size() == 1);
      const KGroupedQuantParams p = k_grouped_params(l[0]);
      CHECK(l[0].kernel == std::string("dg_quantize_fp8_k_grouped_") + (fp32 ? "f32" : "bf16") + "_v16" +
                               (kmajor ? "_kmajor" : ""));
      check_grid(l[0], 5, 32, 1);
      CHECK(p.x == fake_address(1));
      CHECK(p.out == fake_address(2));
      CHECK(p.sf == fake_address(3));
      CHECK(p.ks_dev == nullptr);  // host counts govern; ks_tensor is only checked
      CHECK(p.x_ld == 4096);
      CHECK(p.out_ld == (kmajor ? 4096 : 4112));
      CHECK(p.sf_ld == 4096);
      CHECK(p.x_rows == 433);
      CHECK(p.out_blocks == 5);
      CHECK(p.mn == 4096);
      CHECK(p.num_groups == 4);
      CHECK(p.pow2 == 1);
      CHECK(p.blocks_per_cta == 1);  // 160 CTAs: fewer than 4 per SM of the fake's 132
      CHECK(p.amax_floor == 1e-4f);
      for (int g = 0; g < 4; ++g) CHECK(p.ks[g] == ks[g]);
    }
  {
    // 1100 groups of 1 row: launches of 512, 512 and 76 groups, each offset to its first group.
    const std::vector<int64_t> many(1100, 1);
    Tensor x(fake_address(1), DG_DTYPE_BFLOAT16, {1100, 100});
    Tensor out(fake_address(2), DG_DTYPE_FLOAT8_E4M3, {1100 * 128 * 100});
    Tensor sf(fake_address(3), DG_DTYPE_FLOAT32, {100, 1100}, {1, 100});
    REQUIRE_MESSAGE(dg_quantize_fp8_k_grouped(stream.s, x.t, out.t, sf.t, many.data(), 1100, nullptr, nullptr) ==
                        DG_SUCCESS,
                    dg_last_error());
    std::vector<Launch> l = fake.take();
    REQUIRE(l.size() == 3);
    const int64_t firsts[3] = {0, 512, 1024}, counts[3] = {512, 512, 76};
    for (int i = 0; i < 3; ++i) {
      const KGroupedQuantParams p = k_grouped_params(l[i]);
      CHECK(l[i].kernel == "dg_quantize_fp8_k_grouped_bf16_v1_kmajor");  // MN = 100: element-wise loads
      check_grid(l[i], unsigned(counts[i]), 1, 1);
      CHECK(p.x == at(1, firsts[i] * 100 * 2));
      CHECK(p.out == at(2, firsts[i] * 128 * 100));
      CHECK(p.sf == reinterpret_cast<const float*>(at(3, firsts[i] * 100 * 4)));
      CHECK(p.num_groups == counts[i]);
      CHECK(p.x_rows == counts[i]);
      CHECK(p.out_blocks == counts[i]);
    }
  }
  {
    // Device counts: one launch over out's blocks, the counts read on the device.
    Tensor x(fake_address(1), DG_DTYPE_BFLOAT16, {1000, 256});
    Tensor out(fake_address(2), DG_DTYPE_FLOAT8_E4M3, {1536, 256});
    Tensor sf(fake_address(3), DG_DTYPE_FLOAT32, {256, 12}, {1, 256});
    Tensor ks_t(fake_address(4), DG_DTYPE_INT32, {7});
    REQUIRE_MESSAGE(dg_quantize_fp8_k_grouped(stream.s, x.t, out.t, sf.t, nullptr, 7, ks_t.t, nullptr) == DG_SUCCESS,
                    dg_last_error());
    std::vector<Launch> l = fake.take();
    REQUIRE(l.size() == 1);
    const KGroupedQuantParams p = k_grouped_params(l[0]);
    check_grid(l[0], 12, 2, 1);
    CHECK(p.ks_dev == fake_address(4));
    CHECK(p.x_rows == 1000);
    CHECK(p.out_blocks == 12);
    CHECK(p.num_groups == 7);
  }
  {
    // 256 blocks x 56 column chunks: CTAs of 8 blocks (1792 CTAs, over 4 per SM), 32 along the blocks.
    const std::vector<int64_t> big = {20480, 12288};
    Tensor x(fake_address(1), DG_DTYPE_BFLOAT16, {32768, 7168});
    Tensor out(fake_address(2), DG_DTYPE_FLOAT8_E4M3, {32768 * 7168});
    Tensor sf(fake_address(3), DG_DTYPE_FLOAT32, {7168, 256}, {1, 7168});
    REQUIRE_MESSAGE(dg_quantize_fp8_k_grouped(stream.s, x.t, out.t, sf.t, big.data(), 2, nullptr, nullptr) == DG_SUCCESS,
                    dg_last_error());
    std::vector<Launch> l = fake.take();
    REQUIRE(l.size() == 1);
    const KGroupedQuantParams p = k_grouped_params(l[0]);
    check_grid(l[0], 32, 56, 1);
    CHECK(p.blocks_per_cta == 8);
    CHECK(p.out_blocks == 256);
  }
  for (const auto& [blocks, mn, sms, want] : {std::tuple<int64_t, int64_t, int, int>{4, 128, 132, 1},
                                              {1056, 128, 132, 2}, {100000, 7168, 132, 8}, {7, 256, 1, 3}})
    CHECK(dg::ops::k_grouped_blocks_per_cta(blocks, mn, sms) == want);
}

TEST_CASE("K-grouped quantization: empty problems launch nothing; bad shapes are refused naming the argument") {
  FakeDriver fake(0);
  Stream stream;
  auto opens = [](const char* arg) { return std::string(dg_last_error()).rfind(std::string(arg) + ":", 0) == 0; };
  {
    const std::vector<int64_t> zeros = {0, 0};
    Tensor x(nullptr, DG_DTYPE_BFLOAT16, {0, 256});
    Tensor out(nullptr, DG_DTYPE_FLOAT8_E4M3, {0, 256});
    Tensor sf(nullptr, DG_DTYPE_FLOAT32, {256, 0}, {1, 256});
    CHECK(dg_quantize_fp8_k_grouped(stream.s, x.t, out.t, sf.t, zeros.data(), 2, nullptr, nullptr) == DG_SUCCESS);
    const std::vector<int64_t> ks = {5};
    Tensor x0(fake_address(1), DG_DTYPE_BFLOAT16, {5, 0});
    Tensor out0(fake_address(2), DG_DTYPE_FLOAT8_E4M3, {0});
    Tensor sf0(fake_address(3), DG_DTYPE_FLOAT32, {0, 1});
    CHECK(dg_quantize_fp8_k_grouped(stream.s, x0.t, out0.t, sf0.t, ks.data(), 1, nullptr, nullptr) == DG_SUCCESS);
    CHECK(fake.take().empty());
  }
  const std::vector<int64_t> ks = {100, 30};  // 130 rows, padded 256
  Tensor x(fake_address(1), DG_DTYPE_BFLOAT16, {130, 64});
  Tensor out(fake_address(2), DG_DTYPE_FLOAT8_E4M3, {256, 64});
  Tensor sf(fake_address(3), DG_DTYPE_FLOAT32, {64, 2}, {1, 64});
  REQUIRE(dg_quantize_fp8_k_grouped(stream.s, x.t, out.t, sf.t, ks.data(), 2, nullptr, nullptr) == DG_SUCCESS);
  CHECK(fake.take().size() == 1);
  const std::vector<int64_t> wrong_sum = {100, 31}, negative = {131, -1};
  CHECK(dg_quantize_fp8_k_grouped(stream.s, x.t, out.t, sf.t, wrong_sum.data(), 2, nullptr, nullptr) ==
        DG_ERROR_INVALID_ARGUMENT);
  CHECK(opens("x"));
  CHECK(dg_quantize_fp8_k_grouped(stream.s, x.t, out.t, sf.t, negative.data(), 2, nullptr, nullptr) ==
        DG_ERROR_INVALID_ARGUMENT);
  CHECK(opens("ks[1]"));
  Tensor unpadded(fake_address(2), DG_DTYPE_FLOAT8_E4M3, {130, 64});  // the GEMM needs each group padded
  CHECK(dg_quantize_fp8_k_grouped(stream.s, x.t, unpadded.t, sf.t, ks.data(), 2, nullptr, nullptr) ==
        DG_ERROR_INVALID_ARGUMENT);
  CHECK(opens("out"));
  CHECK(std::string(dg_last_error()).find("256") != std::string::npos);
  Tensor flat_short(fake_address(2), DG_DTYPE_FLOAT8_E4M3, {130 * 64});
  CHECK(dg_quantize_fp8_k_grouped(stream.s, x.t, flat_short.t, sf.t, ks.data(), 2, nullptr, nullptr) ==
        DG_ERROR_INVALID_ARGUMENT);
  CHECK(opens("out"));
  Tensor flat_misaligned(static_cast<char*>(fake_address(2)) + 8, DG_DTYPE_FLOAT8_E4M3, {256 * 64});
  CHECK(dg_quantize_fp8_k_grouped(stream.s, x.t, flat_misaligned.t, sf.t, ks.data(), 2, nullptr, nullptr) ==
        DG_ERROR_INVALID_ARGUMENT);
  CHECK(opens("out"));
  Tensor overlapping(fake_address(2), DG_DTYPE_FLOAT8_E4M3, {256, 64}, {32, 1});
  CHECK(dg_quantize_fp8_k_grouped(stream.s, x.t, overlapping.t, sf.t, ks.data(), 2, nullptr, nullptr) ==
        DG_ERROR_INVALID_ARGUMENT);
  CHECK(opens("out"));
  Tensor sf_k_major(fake_address(3), DG_DTYPE_FLOAT32, {64, 2});
  CHECK(dg_quantize_fp8_k_grouped(stream.s, x.t, out.t, sf_k_major.t, ks.data(), 2, nullptr, nullptr) ==
        DG_ERROR_INVALID_ARGUMENT);
  CHECK(opens("sf"));
  Tensor x_t(fake_address(1), DG_DTYPE_BFLOAT16, {130, 64}, {1, 130});
  CHECK(dg_quantize_fp8_k_grouped(stream.s, x_t.t, out.t, sf.t, ks.data(), 2, nullptr, nullptr) ==
        DG_ERROR_INVALID_ARGUMENT);
  CHECK(opens("x"));
  CHECK(dg_quantize_fp8_k_grouped(stream.s, x.t, out.t, sf.t, nullptr, 2, nullptr, nullptr) == DG_ERROR_INVALID_ARGUMENT);
  CHECK(opens("ks"));
  Tensor ks_t(fake_address(4), DG_DTYPE_INT32, {2});
  Tensor out_odd(fake_address(2), DG_DTYPE_FLOAT8_E4M3, {200, 64});  // device counts: whole 128-row blocks
  CHECK(dg_quantize_fp8_k_grouped(stream.s, x.t, out_odd.t, sf.t, nullptr, 2, ks_t.t, nullptr) ==
        DG_ERROR_INVALID_ARGUMENT);
  CHECK(opens("out"));
  Tensor ks_short(fake_address(4), DG_DTYPE_INT32, {3});
  CHECK(dg_quantize_fp8_k_grouped(stream.s, x.t, out.t, sf.t, ks.data(), 2, ks_short.t, nullptr) ==
        DG_ERROR_INVALID_ARGUMENT);
  CHECK(opens("ks_tensor"));
  CHECK(fake.take().empty());
}
