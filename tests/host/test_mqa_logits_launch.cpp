// dg_fp8_mqa_logits (and its compressed layout) against the fake driver: what reaches the driver is
// the chosen kernel with its persistent grid and shared memory, TMA maps of q's (token, head) rows,
// kv's rows (with the D-byte swizzle the kernel's WGMMA descriptors assume), the key scales and the
// weights, and the scalars; empty problems launch nothing; the layout query's numbers. No GPU.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "dg.h"
#include "fake_driver.h"
#include "launch_util.h"
#include "ops/mqa_logits.h"

namespace {

using dg::ops::MqaLogitsParams;
using namespace dg::test;  // fake_driver.h, launch_util.h

struct Problem {
  int64_t s_q, s_kv, h, d;
  int64_t ld_q;       // bytes between (token, head) rows
  int64_t ld_kv;      // bytes between keys
  int64_t ld_logits;  // 0: the layout query's stride
  dg_dtype out;
  int32_t clean;
  int64_t max_seqlen_k = 0;  // > 0: dg_fp8_mqa_logits_compressed
  int64_t logits_cols = -1;  // -1: S_kv, or max_seqlen_k when compressed
};

std::vector<Launch> run(FakeDriver& fake, const Problem& p, dg_status* status) {
  Tensor q(fake_address(1), DG_DTYPE_FLOAT8_E4M3, {p.s_q, p.h, p.d}, {p.h * p.ld_q, p.ld_q, 1});
  Tensor kv(fake_address(2), DG_DTYPE_FLOAT8_E4M3, {p.s_kv, p.d}, {p.ld_kv, 1});
  Tensor sf(fake_address(3), DG_DTYPE_FLOAT32, {p.s_kv});
  Tensor w(fake_address(4), DG_DTYPE_FLOAT32, {p.s_q, p.h});
  Tensor ks(fake_address(5), DG_DTYPE_INT32, {p.s_q});
  Tensor ke(fake_address(6), DG_DTYPE_INT32, {p.s_q});
  const int64_t cols = p.logits_cols >= 0 ? p.logits_cols : p.max_seqlen_k > 0 ? p.max_seqlen_k : p.s_kv;
  int64_t sizes[2], strides[2];
  REQUIRE(dg_get_mqa_logits_layout(p.s_q, cols, p.out, sizes, strides, nullptr) == DG_SUCCESS);
  if (p.ld_logits) strides[0] = p.ld_logits;
  Tensor logits(fake_address(7), p.out, {sizes[0], sizes[1]}, {strides[0], strides[1]});
  dg_stream* stream = nullptr;
  REQUIRE(dg_stream_create(&stream, 0, nullptr, DG_STREAM_CREATE, nullptr) == DG_SUCCESS);
  if (p.max_seqlen_k != 0)
    *status = dg_fp8_mqa_logits_compressed(stream, q.t, kv.t, sf.t, w.t, ks.t, ke.t, p.max_seqlen_k, logits.t, p.clean);
  else
    *status = dg_fp8_mqa_logits(stream, q.t, kv.t, sf.t, w.t, ks.t, ke.t, logits.t, p.clean);
  dg_stream_destroy(stream);
  return fake.take();
}

}  // namespace

TEST_CASE("MQA logits: the chosen kernel, its grid and its TMA maps reach the driver") {
  FakeDriver fake(sizeof(MqaLogitsParams));
  const Problem problems[] = {
      {4096, 65536, 64, 128, 128, 128, 0, DG_DTYPE_FLOAT32, 1},
      {2048, 4096, 32, 64, 64, 64, 0, DG_DTYPE_BFLOAT16, 0},
      {37, 1000, 64, 64, 80, 96, 1008, DG_DTYPE_FLOAT32, 1},  // strided rows, odd sizes, a tail tile
      {300, 129, 32, 128, 144, 128, 136, DG_DTYPE_BFLOAT16, 1},
  };
  for (const Problem& p : problems) {
    CAPTURE(p.s_q);
    dg_status st;
    const std::vector<Launch> launches = run(fake, p, &st);
    REQUIRE_MESSAGE(st == DG_SUCCESS, dg_last_error());
    REQUIRE(launches.size() == 1);
    const dg::ops::MqaLogitsConfig c = dg::ops::choose_mqa_logits_config(int(p.h), int(p.d), p.out);
    const Launch& l = launches[0];
    CHECK(l.kernel == dg::ops::mqa_logits_kernel_spec(c).kernel_name);
    CHECK(l.kernel.find("mqa_logits") != std::string::npos);
    // One CTA per SM at most, striding over the tiles' parts.
    const int64_t tiles = (p.s_q + 128 / p.h - 1) / (128 / p.h);
    const int split = dg::ops::mqa_logits_split(tiles, (p.s_kv + c.block_kv() - 1) / c.block_kv(), kSms);
    CHECK(l.config.grid[0] == unsigned(std::min<int64_t>(tiles * split, kSms)));
    CHECK(l.config.block[0] == c.threads());
    CHECK(l.config.smem_bytes == c.smem_bytes());
    REQUIRE(l.params.size() == sizeof(MqaLogitsParams));
    MqaLogitsParams k;
    std::memcpy(&k, l.params.data(), sizeof(k));
    CHECK(k.split == uint32_t(split));
    const CUtensorMapSwizzle sw = p.d == 128 ? CU_TENSOR_MAP_SWIZZLE_128B : CU_TENSOR_MAP_SWIZZLE_64B;
    const fake_tensor_map qm = map_of(k.tma_q), km = map_of(k.tma_kv), sm = map_of(k.tma_sf);
    CHECK(qm.address == reinterpret_cast<uintptr_t>(fake_address(1)));
    CHECK((qm.dims[0] == uint64_t(p.d) && qm.dims[1] == uint64_t(p.s_q * p.h) && qm.stride1 == uint64_t(p.ld_q)));
    CHECK((qm.box[0] == uint32_t(p.d) && qm.box[1] == 128u && qm.swizzle == sw));
    CHECK(km.address == reinterpret_cast<uintptr_t>(fake_address(2)));
    CHECK((km.dims[0] == uint64_t(p.d) && km.dims[1] == uint64_t(p.s_kv) && km.stride1 == uint64_t(p.ld_kv)));
    CHECK((km.box[0] == uint32_t(p.d) && km.box[1] == uint32_t(c.block_kv()) && km.swizzle == sw));
    CHECK(km.l2_promotion == uint32_t(CU_TENSOR_MAP_L2_PROMOTION_L2_256B));  // every Q tile reads the keys
    CHECK(sm.address == reinterpret_cast<uintptr_t>(fake_address(3)));
    CHECK((sm.dims[0] == uint64_t(p.s_kv) && sm.box[0] == uint32_t(c.block_kv()) && sm.box[1] == 1u));
    CHECK(sm.swizzle == CU_TENSOR_MAP_SWIZZLE_NONE);
    const fake_tensor_map wm = map_of(k.tma_w);
    CHECK(wm.address == reinterpret_cast<uintptr_t>(fake_address(4)));
    CHECK((wm.dims[0] == uint64_t(p.h) && wm.dims[1] == uint64_t(p.s_q) && wm.stride1 == uint64_t(p.h * 4)));
    CHECK((wm.box[0] == uint32_t(p.h) && wm.box[1] == uint32_t(128 / p.h) && wm.swizzle == CU_TENSOR_MAP_SWIZZLE_NONE));
    CHECK((k.ks == fake_address(5) && k.ke == fake_address(6) && k.logits == fake_address(7)));
    const int64_t eb = p.out == DG_DTYPE_FLOAT32 ? 4 : 2;
    CHECK(k.ld_logits == (p.ld_logits ? p.ld_logits : (p.s_kv + 1024 / eb - 1) / (1024 / eb) * (1024 / eb)));
    CHECK((k.s_q == uint32_t(p.s_q) && k.s_kv == uint32_t(p.s_kv) && k.clean == uint32_t(p.clean)));
  }
}

TEST_CASE("MQA logits: parts per tile fill the SMs' rounds without parts under 8 blocks") {
  using dg::ops::mqa_logits_split;
  // 4096 x 65536 causal at H 64: 2048 tiles of up to 256 blocks take 16 rounds for 15.5 of work
  // whole; in 5 parts, 78 rounds of 132 for 77.6.
  CHECK(mqa_logits_split(2048, 256, 132) == 5);
  CHECK(mqa_logits_split(4096, 256, 132) == 4);
  // Fewer tiles than SMs: 64 tiles in 2 parts fill 128 of 132 SMs in one round.
  CHECK(mqa_logits_split(64, 256, 132) == 2);
  CHECK(mqa_logits_split(19, 79, 132) == 6);
  // Parts of at least 8 blocks: none for short tiles, whatever the fill.
  CHECK(mqa_logits_split(64, 15, 132) == 1);
  CHECK(mqa_logits_split(1, 16, 132) == 2);
  CHECK(mqa_logits_split(1, 1 << 20, 132) == 8);
  // Full rounds already: whole tiles.
  CHECK(mqa_logits_split(132 * 7, 256, 132) == 1);
}

TEST_CASE("MQA logits: empty problems launch nothing; H, D and strides outside the kernels are refused") {
  FakeDriver fake(sizeof(MqaLogitsParams));
  dg_status st;
  CHECK(run(fake, {0, 4096, 64, 128, 128, 128, 0, DG_DTYPE_FLOAT32, 1}, &st).empty());
  CHECK(st == DG_SUCCESS);
  CHECK(run(fake, {16, 0, 64, 128, 128, 128, 0, DG_DTYPE_FLOAT32, 1}, &st).empty());
  CHECK(st == DG_SUCCESS);
  CHECK(run(fake, {16, 256, 16, 128, 128, 128, 0, DG_DTYPE_FLOAT32, 1}, &st).empty());
  CHECK(st == DG_ERROR_UNSUPPORTED);
  CHECK(std::string(dg_last_error()).find("q: H = 16") == 0);
  CHECK(run(fake, {16, 256, 64, 32, 32, 32, 0, DG_DTYPE_FLOAT32, 1}, &st).empty());
  CHECK(st == DG_ERROR_UNSUPPORTED);
  CHECK(std::string(dg_last_error()).find("q: D = 32") == 0);
  CHECK(run(fake, {16, 256, 64, 128, 136, 128, 0, DG_DTYPE_FLOAT32, 1}, &st).empty());
  CHECK(st == DG_ERROR_INVALID_ARGUMENT);
  CHECK(std::string(dg_last_error()).find("q: rows 136 bytes apart") == 0);
  CHECK(run(fake, {16, 250, 64, 128, 128, 128, 250, DG_DTYPE_BFLOAT16, 1}, &st).empty());
  CHECK(st == DG_ERROR_INVALID_ARGUMENT);
  CHECK(std::string(dg_last_error()).find("logits: row stride 250") == 0);
}

TEST_CASE("MQA logits, compressed: its own kernel, the parts of max_seqlen_k-key tiles, max_seqlen_k and the row stride") {
  FakeDriver fake(sizeof(MqaLogitsParams));
  const Problem problems[] = {
      {4096, 65536, 64, 128, 128, 128, 0, DG_DTYPE_FLOAT32, 0, 8192},
      {64, 65536, 64, 128, 128, 128, 0, DG_DTYPE_BFLOAT16, 0, 2048},  // few tiles: parts of 2048 keys
      {37, 1000, 32, 64, 80, 96, 304, DG_DTYPE_FLOAT32, 0, 300},      // strided rows, a tail tile
      {300, 129, 32, 128, 144, 128, 0, DG_DTYPE_BFLOAT16, 0, 5000},   // rows longer than S_kv
  };
  for (const Problem& p : problems) {
    CAPTURE(p.s_q);
    CAPTURE(p.max_seqlen_k);
    dg_status st;
    const std::vector<Launch> launches = run(fake, p, &st);
    REQUIRE_MESSAGE(st == DG_SUCCESS, dg_last_error());
    REQUIRE(launches.size() == 1);
    const dg::ops::MqaLogitsConfig c = dg::ops::choose_mqa_logits_config(int(p.h), int(p.d), p.out, true);
    CHECK(c.compressed);
    const Launch& l = launches[0];
    CHECK(l.kernel == dg::ops::mqa_logits_kernel_spec(c).kernel_name);
    CHECK(l.kernel.find("mqa_logits") != std::string::npos);
    CHECK(l.kernel.find("compressed") != std::string::npos);
    CHECK(l.kernel != dg::ops::mqa_logits_kernel_spec(dg::ops::choose_mqa_logits_config(int(p.h), int(p.d), p.out))
                          .kernel_name);
    const int64_t tiles = (p.s_q + 128 / p.h - 1) / (128 / p.h);
    const int64_t tile_keys = std::min(p.s_kv, p.max_seqlen_k);
    const int split = dg::ops::mqa_logits_split(tiles, (tile_keys + c.block_kv() - 1) / c.block_kv(), kSms);
    CHECK(l.config.grid[0] == unsigned(std::min<int64_t>(tiles * split, kSms)));
    CHECK(l.config.block[0] == c.threads());
    CHECK(l.config.smem_bytes == c.smem_bytes());
    REQUIRE(l.params.size() == sizeof(MqaLogitsParams));
    MqaLogitsParams k;
    std::memcpy(&k, l.params.data(), sizeof(k));
    CHECK(k.split == uint32_t(split));
    CHECK(k.max_seqlen_k == uint32_t(p.max_seqlen_k));
    CHECK((k.s_q == uint32_t(p.s_q) && k.s_kv == uint32_t(p.s_kv) && k.clean == 0u));
    const fake_tensor_map qm = map_of(k.tma_q), km = map_of(k.tma_kv);
    CHECK((qm.dims[0] == uint64_t(p.d) && qm.dims[1] == uint64_t(p.s_q * p.h) && qm.stride1 == uint64_t(p.ld_q)));
    CHECK((km.dims[0] == uint64_t(p.d) && km.dims[1] == uint64_t(p.s_kv) && km.stride1 == uint64_t(p.ld_kv)));
    CHECK((k.ks == fake_address(5) && k.ke == fake_address(6) && k.logits == fake_address(7)));
    // The layout query with max_seqlen_k columns: rows of 1024 bytes, DeepGEMM's align(max_seqlen_k, 256).
    const int64_t per_row = p.out == DG_DTYPE_FLOAT32 ? 256 : 512;
    CHECK(k.ld_logits == (p.ld_logits ? p.ld_logits : (p.max_seqlen_k + per_row - 1) / per_row * per_row));
  }
  // The launches of the default layout are unchanged by it: no max_seqlen_k, the same kernel.
  dg_status st;
  const std::vector<Launch> plain = run(fake, {37, 1000, 32, 64, 80, 96, 1008, DG_DTYPE_FLOAT32, 0}, &st);
  REQUIRE(plain.size() == 1);
  MqaLogitsParams k;
  std::memcpy(&k, plain[0].params.data(), sizeof(k));
  CHECK(k.max_seqlen_k == 0u);
  CHECK(plain[0].kernel.find("compressed") == std::string::npos);
}

TEST_CASE("MQA logits, compressed: clean_logits, max_seqlen_k and logits that do not fit the layout are refused") {
  FakeDriver fake(sizeof(MqaLogitsParams));
  dg_status st;
  const auto refused = [&](Problem p, dg_status want, const char* message) {
    CAPTURE(message);
    CHECK(run(fake, p, &st).empty());
    CHECK(st == want);
    CHECK_MESSAGE(std::string(dg_last_error()).find(message) == 0, dg_last_error());
  };
  refused({16, 4096, 64, 128, 128, 128, 0, DG_DTYPE_FLOAT32, 1, 300}, DG_ERROR_UNSUPPORTED, "clean_logits: 1");
  refused({16, 4096, 64, 128, 128, 128, 0, DG_DTYPE_FLOAT32, 2, 300}, DG_ERROR_INVALID_ARGUMENT, "clean_logits: 2");
  refused({16, 4096, 64, 128, 128, 128, 0, DG_DTYPE_FLOAT32, 0, -3, 300}, DG_ERROR_INVALID_ARGUMENT,
          "max_seqlen_k: -3");
  refused({16, 4096, 64, 128, 128, 128, 0, DG_DTYPE_FLOAT32, 0, int64_t(1) << 31, 300}, DG_ERROR_INVALID_ARGUMENT,
          "max_seqlen_k: 2147483648");
  // The [S_q, S_kv] logits of dg_fp8_mqa_logits, and rows closer than max_seqlen_k.
  refused({16, 4096, 64, 128, 128, 128, 0, DG_DTYPE_FLOAT32, 0, 300, 4096}, DG_ERROR_INVALID_ARGUMENT,
          "logits: size(1) is 4096 but max_seqlen_k is 300");
  refused({16, 4096, 64, 128, 128, 128, 296, DG_DTYPE_FLOAT32, 0, 300}, DG_ERROR_INVALID_ARGUMENT,
          "logits: row stride 296 (expected at least max_seqlen_k = 300");
  // Empty problems launch nothing.
  CHECK(run(fake, {0, 4096, 64, 128, 128, 128, 0, DG_DTYPE_FLOAT32, 0, 300}, &st).empty());
  CHECK(st == DG_SUCCESS);
  CHECK(run(fake, {16, 0, 64, 128, 128, 128, 0, DG_DTYPE_FLOAT32, 0, 300}, &st).empty());
  CHECK(st == DG_SUCCESS);
}

TEST_CASE("MQA logits: q strides whose H multiple overflows int64 are refused, not multiplied") {
  FakeDriver fake(sizeof(MqaLogitsParams));
  // A valid tensor ((H - 1) * 2^57 fits) whose H * stride(1) = 2^63 does not.
  Tensor q(fake_address(1), DG_DTYPE_FLOAT8_E4M3, {2, 64, 128}, {0, int64_t(1) << 57, 1});
  Tensor kv(fake_address(2), DG_DTYPE_FLOAT8_E4M3, {256, 128});
  Tensor sf(fake_address(3), DG_DTYPE_FLOAT32, {256});
  Tensor w(fake_address(4), DG_DTYPE_FLOAT32, {2, 64});
  Tensor ks(fake_address(5), DG_DTYPE_INT32, {2});
  Tensor ke(fake_address(6), DG_DTYPE_INT32, {2});
  Tensor logits(fake_address(7), DG_DTYPE_FLOAT32, {2, 256});
  dg_stream* stream = nullptr;
  REQUIRE(dg_stream_create(&stream, 0, nullptr, DG_STREAM_CREATE, nullptr) == DG_SUCCESS);
  CHECK(dg_fp8_mqa_logits(stream, q.t, kv.t, sf.t, w.t, ks.t, ke.t, logits.t, 0) == DG_ERROR_INVALID_ARGUMENT);
  CHECK(std::string(dg_last_error()).find("q: ") == 0);
  dg_stream_destroy(stream);
  CHECK(fake.take().empty());
}

TEST_CASE("MQA logits layout: rows of 1024 bytes, checked arithmetic") {
  int64_t sizes[2], strides[2];
  size_t bytes = 0;
  REQUIRE(dg_get_mqa_logits_layout(4096, 65537, DG_DTYPE_FLOAT32, sizes, strides, &bytes) == DG_SUCCESS);
  CHECK((sizes[0] == 4096 && sizes[1] == 65537 && strides[0] == 65792 && strides[1] == 1));
  CHECK(bytes == size_t(4096) * 65792 * 4);
  REQUIRE(dg_get_mqa_logits_layout(3, 100, DG_DTYPE_BFLOAT16, sizes, strides, &bytes) == DG_SUCCESS);
  CHECK((strides[0] == 512 && bytes == 3 * 512 * 2));
  CHECK(dg_get_mqa_logits_layout(int64_t(1) << 40, int64_t(1) << 40, DG_DTYPE_FLOAT32, sizes, strides, &bytes) ==
        DG_ERROR_INVALID_ARGUMENT);
  CHECK(std::string(dg_last_error()).find("seq_len") == 0);
  CHECK(dg_get_mqa_logits_layout(1, 1, DG_DTYPE_INT32, nullptr, nullptr, nullptr) == DG_ERROR_INVALID_ARGUMENT);
  CHECK(std::string(dg_last_error()).find("logits_dtype") == 0);
}

namespace {

using dg::ops::PagedMqaLogitsParams;

struct PagedProblem {
  int64_t batch, next_n, h, d, num_blocks, max_blocks, max_ctx;
  int64_t block_stride;  // bytes between cache blocks
  bool two_d;
  int num_ctas;
  dg_dtype out;
  int32_t clean;
};

std::vector<Launch> run_paged(FakeDriver& fake, const PagedProblem& p, dg_status* status) {
  Tensor q(fake_address(1), DG_DTYPE_FLOAT8_E4M3, {p.batch, p.next_n, p.h, p.d});
  Tensor cache(fake_address(2), DG_DTYPE_UINT8, {p.num_blocks, 64, 1, p.d + 4}, {p.block_stride, p.d + 4, p.d + 4, 1});
  Tensor w(fake_address(3), DG_DTYPE_FLOAT32, {p.batch * p.next_n, p.h});
  Tensor ctx(fake_address(4), DG_DTYPE_INT32,
             p.two_d ? std::vector<int64_t>{p.batch, p.next_n} : std::vector<int64_t>{p.batch});
  Tensor table(fake_address(5), DG_DTYPE_INT32, {p.batch, p.max_blocks});
  Tensor meta(fake_address(6), DG_DTYPE_INT32, {p.num_ctas + 1, 2});
  int64_t sizes[2], strides[2];
  REQUIRE(dg_get_mqa_logits_layout(p.batch * p.next_n, p.max_ctx, p.out, sizes, strides, nullptr) == DG_SUCCESS);
  Tensor logits(fake_address(7), p.out, {sizes[0], sizes[1]}, {strides[0], strides[1]});
  dg_stream* stream = nullptr;
  REQUIRE(dg_stream_create(&stream, 0, nullptr, DG_STREAM_CREATE, nullptr) == DG_SUCCESS);
  *status = dg_get_paged_mqa_logits_metadata(stream, ctx.t, 64, p.num_ctas, meta.t);
  if (*status == DG_SUCCESS)
    *status = dg_fp8_paged_mqa_logits(stream, q.t, cache.t, w.t, ctx.t, table.t, meta.t, p.max_ctx, logits.t, p.clean);
  dg_stream_destroy(stream);
  return fake.take();
}

}  // namespace

TEST_CASE("Paged MQA logits: the schedule kernel, then the chosen kernel with the schedule's grid and TMA maps") {
  FakeDriver fake(sizeof(PagedMqaLogitsParams));
  const PagedProblem problems[] = {
      {256, 1, 64, 128, 5000, 40, 2500, 64 * 132, false, 132, DG_DTYPE_FLOAT32, 0},
      {64, 2, 64, 128, 3000, 33, 2049, 64 * 132 + 16, true, 132, DG_DTYPE_BFLOAT16, 1},  // padded blocks
      {3, 4, 32, 64, 9, 3, 150, 64 * 68, false, 7, DG_DTYPE_FLOAT32, 1},
      {5, 4, 64, 128, 100, 20, 100, 64 * 132, true, 1, DG_DTYPE_FLOAT32, 0},  // table wider than the logits
  };
  for (const PagedProblem& p : problems) {
    CAPTURE(p.batch);
    CAPTURE(p.next_n);
    dg_status st;
    const std::vector<Launch> launches = run_paged(fake, p, &st);
    REQUIRE_MESSAGE(st == DG_SUCCESS, dg_last_error());
    REQUIRE(launches.size() == 2);
    CHECK(launches[0].kernel == dg::ops::paged_mqa_metadata_kernel_spec().kernel_name);
    CHECK((launches[0].config.grid[0] == 1u && launches[0].config.block[0] == 1024u));
    const dg::ops::PagedMqaLogitsConfig c =
        dg::ops::choose_paged_mqa_logits_config(int(p.h), int(p.d), int(p.next_n), p.out);
    const Launch& l = launches[1];
    CHECK(l.kernel == dg::ops::paged_mqa_logits_kernel_spec(c).kernel_name);
    CHECK(l.config.grid[0] == unsigned(p.num_ctas));
    CHECK(l.config.block[0] == c.threads());
    CHECK(l.config.smem_bytes == c.smem_bytes());
    REQUIRE(l.params.size() == sizeof(PagedMqaLogitsParams));
    PagedMqaLogitsParams k;
    std::memcpy(&k, l.params.data(), sizeof(k));
    const CUtensorMapSwizzle sw = p.d == 128 ? CU_TENSOR_MAP_SWIZZLE_128B : CU_TENSOR_MAP_SWIZZLE_64B;
    const fake_tensor_map qm = map_of(k.tma_q), km = map_of(k.tma_kv), sm = map_of(k.tma_sf);
    const uint64_t n = uint64_t(p.next_n * p.h);
    CHECK(qm.address == reinterpret_cast<uintptr_t>(fake_address(1)));
    CHECK((qm.dims[0] == uint64_t(p.d) && qm.dims[1] == uint64_t(p.batch) * n && qm.stride1 == uint64_t(p.d)));
    CHECK((qm.box[0] == uint32_t(p.d) && qm.box[1] == n && qm.swizzle == sw));
    CHECK(km.address == reinterpret_cast<uintptr_t>(fake_address(2)));
    CHECK((km.rank == 3u && km.dims[0] == uint64_t(p.d) && km.dims[1] == 64u && km.dim2 == uint64_t(p.num_blocks)));
    CHECK((km.stride1 == uint64_t(p.d) && km.stride2 == uint64_t(p.block_stride)));
    CHECK((km.box[0] == uint32_t(p.d) && km.box[1] == 64u && km.box2 == 1u && km.swizzle == sw));
    CHECK(sm.address == reinterpret_cast<uintptr_t>(fake_address(2)) + uint64_t(64 * p.d));
    CHECK((sm.dims[0] == 64u && sm.dims[1] == uint64_t(p.num_blocks) && sm.stride1 == uint64_t(p.block_stride)));
    CHECK((sm.box[0] == 64u && sm.box[1] == 1u && sm.swizzle == CU_TENSOR_MAP_SWIZZLE_NONE));
    // Each cache block is read once: single lines into L2; Q (read by the sequence's blocks) keeps pairs.
    CHECK((km.l2_promotion == uint32_t(CU_TENSOR_MAP_L2_PROMOTION_L2_128B) &&
           sm.l2_promotion == uint32_t(CU_TENSOR_MAP_L2_PROMOTION_L2_128B)));
    CHECK(qm.l2_promotion == uint32_t(CU_TENSOR_MAP_L2_PROMOTION_L2_256B));
    const fake_tensor_map wm = map_of(k.tma_w);
    CHECK(wm.address == reinterpret_cast<uintptr_t>(fake_address(3)));
    CHECK((wm.dims[0] == uint64_t(p.h) && wm.dims[1] == uint64_t(p.batch * p.next_n) && wm.stride1 == uint64_t(p.h * 4)));
    CHECK((wm.box[0] == uint32_t(p.h) && wm.box[1] == uint32_t(p.next_n)));
    CHECK((k.ctx == fake_address(4) && k.ld_ctx == (p.two_d ? p.next_n : 1) && k.ctx_2d == uint32_t(p.two_d)));
    CHECK((k.block_table == fake_address(5) && k.ld_block_table == p.max_blocks));
    CHECK(k.max_blocks == uint32_t(std::min<int64_t>(p.max_blocks, (p.max_ctx + 63) / 64)));
    CHECK((k.schedule == fake_address(6) && k.logits == fake_address(7)));
    const int64_t eb = p.out == DG_DTYPE_FLOAT32 ? 4 : 2;
    CHECK(k.ld_logits == (p.max_ctx + 1024 / eb - 1) / (1024 / eb) * (1024 / eb));
    CHECK((k.batch == uint32_t(p.batch) && k.max_context_len == uint32_t(p.max_ctx) && k.clean == uint32_t(p.clean)));
  }
}

TEST_CASE("Paged MQA logits: empty problems run only the schedule; shapes outside the kernels are refused") {
  FakeDriver fake(sizeof(PagedMqaLogitsParams));
  dg_status st;
  std::vector<Launch> l = run_paged(fake, {0, 1, 64, 128, 10, 4, 256, 64 * 132, false, 132, DG_DTYPE_FLOAT32, 1}, &st);
  CHECK(st == DG_SUCCESS);
  CHECK(l.size() == 1);
  l = run_paged(fake, {2, 1, 64, 128, 10, 4, 0, 64 * 132, false, 132, DG_DTYPE_FLOAT32, 1}, &st);
  CHECK(st == DG_SUCCESS);
  CHECK(l.size() == 1);
  CHECK(run_paged(fake, {2, 3, 64, 128, 10, 4, 256, 64 * 132, false, 132, DG_DTYPE_FLOAT32, 1}, &st).size() == 1);
  CHECK(st == DG_ERROR_UNSUPPORTED);
  CHECK(std::string(dg_last_error()).find("q: next_n = 3") == 0);
  CHECK(run_paged(fake, {2, 1, 16, 128, 10, 4, 256, 64 * 132, false, 132, DG_DTYPE_FLOAT32, 1}, &st).size() == 1);
  CHECK(st == DG_ERROR_UNSUPPORTED);
  CHECK(std::string(dg_last_error()).find("q: H = 16") == 0);
  CHECK(run_paged(fake, {2, 1, 64, 128, 10, 4, 256, 64 * 132 + 4, false, 132, DG_DTYPE_FLOAT32, 1}, &st).size() == 1);
  CHECK(st == DG_ERROR_INVALID_ARGUMENT);
  CHECK(std::string(dg_last_error()).find("kv_cache: blocks 8452 bytes apart") == 0);
}
