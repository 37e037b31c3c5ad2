// The M-grouped GEMM entry points against the fake driver: the launch that reaches the driver is
// the config the heuristic chose for the grouped problem (kernel, persistent grid, cluster, shared
// memory with the group table of the masked and psum layouts), and the kernel argument carries the
// grouped contract (templates/include/dg/gemm/sm90_gemm.cuh): one 2-D TMA map over every group's
// rows of A and D and over the G matrices of B, the masked SFA over G x ceil(K/128) K blocks, the
// group tensor's address, the group count and rows, the SFB group stride. No GPU: nothing runs.
#include <doctest/doctest.h>

#include <cstring>
#include <string>
#include <vector>

#include "dg.h"
#include "fake_driver.h"
#include "launch_util.h"
#include "ops/gemm.h"
#include "ops/gemm_cost_model.h"

namespace {

using dg::ops::GemmConfig;
using dg::ops::GemmKind;
using dg::ops::GemmShape;
using dg::ops::GemmType;
using dg::ops::Major;
using dg::ops::Sm90GemmParams;
using namespace dg::test;  // fake_driver.h, launch_util.h

void check_dims(const dg::tma::Descriptor& d, const char* what, const void* address, uint64_t inner, uint64_t outer) {
  INFO("TMA map of ", what);
  const fake_tensor_map m = map_of(d);
  CHECK(m.address == reinterpret_cast<uintptr_t>(address));
  CHECK(m.dims[0] == inner);
  CHECK(m.dims[1] == outer);
}

// One call of type `type`: G groups of [N, K] weights; contiguous problems have M rows of A, masked
// ones max_m rows per group.
void run_and_check(FakeDriver& fake, bool fp8, GemmType type, int64_t g, int64_t m, int64_t n, int64_t k,
                   int64_t expected_m, int cluster) {
  CAPTURE(fp8);
  CAPTURE(static_cast<int>(type));
  CAPTURE(cluster);
  const bool masked = type == GemmType::kMGroupedMasked;
  const dg_dtype ab = fp8 ? DG_DTYPE_FLOAT8_E4M3 : DG_DTYPE_BFLOAT16;
  const int64_t rows = masked ? g * m : m, sf_k = cdiv(k, 128), m4 = cdiv(m, 4) * 4;
  void *pa = fake_address(1), *psfa = fake_address(2), *pb = fake_address(3), *psfb = fake_address(4);
  void *pd = fake_address(5), *pl = fake_address(6);
  Tensor a(pa, ab, masked ? std::vector<int64_t>{g, m, k} : std::vector<int64_t>{m, k});
  Tensor sfa(psfa, DG_DTYPE_FLOAT32, masked ? std::vector<int64_t>{g, m, sf_k} : std::vector<int64_t>{m, sf_k},
             masked ? std::vector<int64_t>{m4 * sf_k, 1, m4} : std::vector<int64_t>{1, m4});
  Tensor b(pb, ab, {g, n, k});
  Tensor sfb(psfb, DG_DTYPE_FLOAT32, {g, cdiv(n, 128), sf_k});
  Tensor d(pd, DG_DTYPE_BFLOAT16, masked ? std::vector<int64_t>{g, m, n} : std::vector<int64_t>{m, n});
  const int64_t layout_len = type == GemmType::kMGroupedContiguous ? m : g;
  Tensor groups(pl, DG_DTYPE_INT32, {layout_len});
  dg_gemm_options o = DG_GEMM_OPTIONS_INIT;
  o.cluster = cluster;
  if (cluster == 2) o.multicast_a = 0;

  dg_stream* stream = nullptr;
  REQUIRE(dg_stream_create(&stream, 0, nullptr, DG_STREAM_CREATE, nullptr) == DG_SUCCESS);
  dg_status st;
  if (masked) {
    st = fp8 ? dg_m_grouped_fp8_gemm_nt_masked(stream, a.t, sfa.t, b.t, sfb.t, d.t, groups.t, expected_m, &o)
             : dg_m_grouped_bf16_gemm_nt_masked(stream, a.t, b.t, d.t, groups.t, expected_m, &o);
  } else {
    const int32_t code = type == GemmType::kMGroupedContiguousPsum ? DG_M_GROUPED_LAYOUT_PSUM : DG_M_GROUPED_LAYOUT_INDICES;
    st = fp8 ? dg_m_grouped_fp8_gemm_nt_contiguous(stream, a.t, sfa.t, b.t, sfb.t, d.t, groups.t, code, expected_m, &o)
             : dg_m_grouped_bf16_gemm_nt_contiguous(stream, a.t, b.t, d.t, groups.t, code, expected_m, &o);
  }
  dg_stream_destroy(stream);
  REQUIRE_MESSAGE(st == DG_SUCCESS, std::string(dg_last_error()));
  std::vector<Launch> launches = fake.take();
  REQUIRE(launches.size() == 1);
  const Launch& l = launches[0];

  GemmShape s;
  s.kind = fp8 ? GemmKind::kFp8_1D2D : GemmKind::kBf16;
  s.type = type, s.num_groups = g, s.m = m, s.n = n, s.k = k;
  s.expected_m = expected_m > 0 ? (masked ? std::min(expected_m, m) : expected_m) : std::max<int64_t>(1, m / g);
  dg::ops::GemmOverride ov;
  ov.cluster = cluster;
  ov.multicast_a = cluster == 2 ? 0 : -1;
  GemmConfig cfg;
  REQUIRE(dg::ops::choose_gemm_config(s, kSms, ov, &cfg) == DG_SUCCESS);
  CAPTURE(dg::ops::describe(s, cfg));
  CHECK(l.kernel == dg::ops::gemm_kernel_spec(s, cfg).kernel_name);
  CHECK(l.config.grid[0] == unsigned(cfg.grid));
  // Masked calls of single CTAs may split a short last round over CTA pairs (split_k 2): launched as pairs.
  CHECK((cfg.split_k == 1 || (masked && cluster != 2 && cfg.split_k == 2)));
  const int dims = cfg.split_k > 1 ? cfg.split_k : cfg.cluster;
  CHECK(cfg.grid % dims == 0);
  // Masked and psum tile counts live on the device: the grid keeps every SM (pair).
  if (dg::ops::uses_group_table(type)) CHECK(cfg.grid == kSms / dims * dims);
  CHECK(l.config.cluster[0] == (dims > 1 ? unsigned(dims) : 0u));
  CHECK(cfg.cluster == (cluster == 2 ? 2 : 1));
  CHECK(l.config.smem_bytes == cfg.smem_bytes + dg::ops::group_table_bytes(type, g));
  CHECK(l.config.smem_bytes <= 232448u);

  REQUIRE(l.params.size() == sizeof(Sm90GemmParams));
  Sm90GemmParams q;
  std::memcpy(&q, l.params.data(), sizeof(q));
  check_dims(q.tma_a, "a", pa, k, rows);
  check_dims(q.tma_b, "b", pb, k, g * n);
  check_dims(q.tma_d, "d", pd, n, rows);
  if (fp8) {
    check_dims(q.tma_sfa, "sfa", psfa, m4, masked ? g * sf_k : sf_k);
    CHECK(q.sfb == psfb);
    CHECK(q.sfb_stride_g == cdiv(n, 128) * sf_k);
    CHECK((q.sfb_stride_n == sf_k && q.sfb_stride_k == 1));
  }
  CHECK(q.grouped_layout == pl);
  CHECK(q.num_groups == uint32_t(g));
  CHECK(q.group_rows == uint32_t(m));
  CHECK((q.m == m && q.n == n && q.k == k));
  // The per-row layout walks a grid fixed for the launch (the table types' change with the group).
  if (type == GemmType::kMGroupedContiguous)
    check_walk(q.walk, cdiv(cdiv(m, cfg.block_m), cfg.cluster == 2 ? 2 : 1), cdiv(n, cfg.block_n), q.raster_band,
               q.raster_along_n != 0);
}

}  // namespace

TEST_CASE("M-grouped GEMMs launch the chosen config with the grouped contract, every layout, alone and paired") {
  FakeDriver fake(sizeof(Sm90GemmParams));
  for (bool fp8 : {true, false})
    for (int cluster : {1, 2}) {
      run_and_check(fake, fp8, GemmType::kMGroupedContiguous, 8, 8 * 4096, 4096, 7168, 0, cluster);
      run_and_check(fake, fp8, GemmType::kMGroupedContiguousPsum, 8, 8 * 4096 - 200, 4096, 7168, 4096, cluster);
      run_and_check(fake, fp8, GemmType::kMGroupedMasked, 32, 4096, 6144, 7168, 230, cluster);
      run_and_check(fake, fp8, GemmType::kMGroupedMasked, 6, 192, 256, 512, 64, cluster);
    }
}

TEST_CASE("masked calls split a short last round over CTA pairs where the model prices it lower, or on request") {
  // G 1, max_m 4096, hint 1228 rows, N 4096, K 7168 (few tiles; the last round's fill depends on the
  // count): CTA pairs unasked and with options.split_k 2, single CTAs with 1
  // (docs/m_grouped_gemm.md#split-tail), BF16 and FP8 alike; decoding (G 32, hint 24) stays unsplit.
  FakeDriver fake(sizeof(Sm90GemmParams));
  const int64_t g = 1, max_m = 4096, n = 4096, k = 7168, hint = 1228;
  Tensor a(fake_address(1), DG_DTYPE_BFLOAT16, {g, max_m, k}), b(fake_address(2), DG_DTYPE_BFLOAT16, {g, n, k});
  Tensor d(fake_address(3), DG_DTYPE_BFLOAT16, {g, max_m, n}), counts(fake_address(4), DG_DTYPE_INT32, {g});
  dg_stream* stream = nullptr;
  REQUIRE(dg_stream_create(&stream, 0, nullptr, DG_STREAM_CREATE, nullptr) == DG_SUCCESS);
  for (int split : {0, 1, 2}) {
    CAPTURE(split);
    dg_gemm_options o = DG_GEMM_OPTIONS_INIT;
    o.split_k = split;
    REQUIRE_MESSAGE(dg_m_grouped_bf16_gemm_nt_masked(stream, a.t, b.t, d.t, counts.t, hint, &o) == DG_SUCCESS,
                    std::string(dg_last_error()));
    const std::vector<Launch> launches = fake.take();
    REQUIRE(launches.size() == 1);
    CHECK(launches[0].config.cluster[0] == (split == 1 ? 0u : 2u));
  }
  dg_stream_destroy(stream);

  GemmShape s;
  s.kind = GemmKind::kFp8_1D2D, s.type = GemmType::kMGroupedMasked;
  s.num_groups = g, s.m = max_m, s.n = n, s.k = k, s.expected_m = hint;
  GemmConfig cfg;
  REQUIRE(dg::ops::choose_gemm_config(s, kSms, dg::ops::GemmOverride{}, &cfg) == DG_SUCCESS);
  CHECK(cfg.split_k == 2);
  dg::ops::GemmOverride whole;
  whole.split_k = 1;
  REQUIRE(dg::ops::choose_gemm_config(s, kSms, whole, &cfg) == DG_SUCCESS);
  CHECK(cfg.split_k == 1);
  s.num_groups = 32, s.m = 128, s.expected_m = 24;
  REQUIRE(dg::ops::choose_gemm_config(s, kSms, dg::ops::GemmOverride{}, &cfg) == DG_SUCCESS);
  CHECK(cfg.split_k == 1);
}

TEST_CASE("masked BF16 calls of few groups of many rows take tiles of at most 192 columns in 32-column steps") {
  // The grouped suite's BF16 masked sets (G 1-6, hints 307-1228) on DeepSeek-V3's expert shapes and
  // (6144, 7168), on the H100 and the H200 calibrations: no tile above 192 columns, none of 16-column
  // BF16 strips (docs/m_grouped_gemm.md#tiles). Decoding (hint 24) and G 32 keep the widest tiles.
  const std::pair<int64_t, int64_t> shapes[] = {{4096, 7168}, {7168, 2048}, {6144, 7168}};
  const std::pair<int64_t, int64_t> sets[] = {{1, 1228}, {2, 614}, {4, 307}, {6, 1228}};
  for (const char* device : {"NVIDIA H100 80GB HBM3", "NVIDIA H200"})
    for (const auto& nk : shapes)
      for (const auto& set : sets) {
        CAPTURE(device);
        CAPTURE(nk.first);
        CAPTURE(set.first);
        GemmShape s;
        s.kind = GemmKind::kBf16, s.type = GemmType::kMGroupedMasked;
        s.num_groups = set.first, s.m = 4096, s.n = nk.first, s.k = nk.second, s.expected_m = set.second;
        GemmConfig cfg;
        REQUIRE(dg::ops::choose_gemm_config(s, kSms, dg::ops::GemmOverride{}, dg::ops::sm90_cost_model(device), &cfg) ==
                DG_SUCCESS);
        CHECK(cfg.block_n <= 192);
        CHECK(cfg.block_n % 32 == 0);
      }
  GemmShape s;
  s.kind = GemmKind::kBf16, s.type = GemmType::kMGroupedMasked;
  s.num_groups = 32, s.m = 4096, s.n = 4096, s.k = 7168;
  GemmConfig cfg;
  for (int64_t hint : {24, 230}) {
    CAPTURE(hint);
    s.expected_m = hint;
    REQUIRE(dg::ops::choose_gemm_config(s, kSms, dg::ops::GemmOverride{}, dg::ops::sm90_cost_model("NVIDIA H200"),
                                        &cfg) == DG_SUCCESS);
    CHECK(cfg.block_n == 256);
  }
}

TEST_CASE("masked BF16 calls of few groups compile more tile widths, each run at the totals of row blocks where it costs less") {
  // BF16 G 1, hint 1228, N 4096, K 7168 on the H200 (docs/m_grouped_gemm.md#count-adaptive-tiles): the
  // chosen 128x192 tiles with the split tail; 128x256 where its rounds make it at least 5% cheaper:
  // 4 row blocks (64 tiles: half a round, split, against 88 whole), 7 and 8 (one round of 256
  // columns against one and a half of 192); 128x160 at 10 (two rounds of 160 columns against two
  // of 192); 192 itself at 6 (one round), 9 (one and a half, split, against two of 160) and 11.
  GemmShape s;
  s.kind = GemmKind::kBf16, s.type = GemmType::kMGroupedMasked;
  s.num_groups = 1, s.m = 4096, s.n = 4096, s.k = 7168, s.expected_m = 1228;
  const dg::ops::Sm90CostModel& h200 = dg::ops::sm90_cost_model("NVIDIA H200");
  GemmConfig cfg;
  REQUIRE(dg::ops::choose_gemm_config(s, kSms, dg::ops::GemmOverride{}, h200, &cfg) == DG_SUCCESS);
  CHECK(cfg.block_m == 128);
  CHECK(cfg.block_n == 192);
  CHECK(cfg.split_k == 2);
  REQUIRE(cfg.alt_tiles() == 2);
  CHECK(cfg.alts[0].block_n == 256);
  CHECK(cfg.alts[1].block_n == 160);
  for (int64_t r : {4, 7, 8}) CHECK(cfg.tile_at(r) == 1);
  CHECK(cfg.tile_at(10) == 2);
  for (int64_t r : {6, 9, 11, 300}) CHECK(cfg.tile_at(r) == 0);
  // No total runs two tiles.
  for (int64_t r = 0; r < dg::ops::kAltRowBlocks; ++r) CHECK_FALSE((cfg.alts[0].runs(r) && cfg.alts[1].runs(r)));
  const std::string name = dg::ops::gemm_kernel_spec(s, cfg).kernel_name;
  INFO(name);
  const size_t second = name.find("_or256s4"), third = name.find("_or160s5");
  CHECK(second != std::string::npos);
  CHECK(third != std::string::npos);
  CHECK(second < third);
  // Its launch takes the largest layout; each tile's config is the first's with its own fields.
  for (int i = 0; i < cfg.alt_tiles(); ++i) {
    const GemmConfig a = dg::ops::alt_config(cfg, i);
    CHECK(a.block_n == cfg.alts[i].block_n);
    CHECK(a.alt_tiles() == 0);
    CHECK(a.block_m == cfg.block_m);
    CHECK(a.split_k == 2);
  }
  // An explicit config, many groups, or a call whose choice is not the split tail: one tile.
  dg::ops::GemmOverride o;
  o.block_n = 192;
  REQUIRE(dg::ops::choose_gemm_config(s, kSms, o, h200, &cfg) == DG_SUCCESS);
  CHECK(cfg.alt_tiles() == 0);
  s.num_groups = 32, s.expected_m = 230;
  REQUIRE(dg::ops::choose_gemm_config(s, kSms, dg::ops::GemmOverride{}, h200, &cfg) == DG_SUCCESS);
  CHECK(cfg.alt_tiles() == 0);
  s.kind = GemmKind::kFp8_1D2D, s.num_groups = 4, s.expected_m = 307;  // 128x160 whole tiles
  REQUIRE(dg::ops::choose_gemm_config(s, kSms, dg::ops::GemmOverride{}, h200, &cfg) == DG_SUCCESS);
  CHECK(cfg.split_k == 1);
  CHECK(cfg.alt_tiles() == 0);
  // FP8 keeps one tile even where its choice takes the split tail (G 1: 128x160 split).
  s.num_groups = 1, s.expected_m = 1228;
  REQUIRE(dg::ops::choose_gemm_config(s, kSms, dg::ops::GemmOverride{}, h200, &cfg) == DG_SUCCESS);
  CHECK(cfg.split_k == 2);
  CHECK(cfg.alt_tiles() == 0);
}

TEST_CASE("M-grouped GEMMs: M = 0 launches nothing; dg_m_grouped_gemm_prepare launches nothing") {
  FakeDriver fake(sizeof(Sm90GemmParams));
  void* p = fake_address(9);
  Tensor a(p, DG_DTYPE_BFLOAT16, {0, 256}), b(p, DG_DTYPE_BFLOAT16, {4, 128, 256}), d(p, DG_DTYPE_BFLOAT16, {0, 128});
  Tensor idx(p, DG_DTYPE_INT32, {0});
  dg_stream* stream = nullptr;
  REQUIRE(dg_stream_create(&stream, 0, nullptr, DG_STREAM_CREATE, nullptr) == DG_SUCCESS);
  CHECK(dg_m_grouped_bf16_gemm_nt_contiguous(stream, a.t, b.t, d.t, idx.t, DG_M_GROUPED_LAYOUT_INDICES, 0, nullptr) ==
        DG_SUCCESS);
  CHECK(dg_m_grouped_gemm_prepare(stream, DG_DTYPE_FLOAT8_E4M3, DG_GEMM_LAYOUT_NT, DG_M_GROUPED_LAYOUT_MASKED, 4, 512,
                                  1024, 1024, 200, nullptr) == DG_SUCCESS);
  dg_stream_destroy(stream);
  CHECK(fake.take().empty());
}

TEST_CASE("prepare with a fused epilogue loads the kernel its call launches; the epilogue is checked as the call's") {
  FakeDriver fake(sizeof(Sm90GemmParams));
  dg_stream* stream = nullptr;
  REQUIRE(dg_stream_create(&stream, 0, nullptr, DG_STREAM_CREATE, nullptr) == DG_SUCCESS);
  auto message = [] { return std::string(dg_last_error()); };
  auto loads = [] {  // kernels compiled or read from disk: a warm call does neither
    int64_t compiled = 0, from_disk = 0;
    REQUIRE(dg_jit_get_stats(&compiled, &from_disk, nullptr) == DG_SUCCESS);
    return compiled + from_disk;
  };
  // Masked FP8 with SwiGLU and an FP8 D: G 4 x max_m 128, N 512 (D 256 columns), K 256.
  const int64_t g = 4, max_m = 128, n = 512, k = 256, expected_m = 32, sf_k = 2, cols = n / 2, d_sf = cols / 128;
  Tensor scales(fake_address(7), DG_DTYPE_FLOAT32, {g, max_m, d_sf}, {max_m * d_sf, 1, max_m});
  dg_gemm_epilogue e = DG_GEMM_EPILOGUE_INIT;
  e.activation = DG_ACTIVATION_SWIGLU;
  e.d_scales = scales.t;
  dg_gemm_options o = DG_GEMM_OPTIONS_INIT;
  o.epilogue = &e;
  REQUIRE_MESSAGE(dg_m_grouped_gemm_prepare(stream, DG_DTYPE_FLOAT8_E4M3, DG_GEMM_LAYOUT_NT, DG_M_GROUPED_LAYOUT_MASKED,
                                            g, max_m, n, k, expected_m, &o) == DG_SUCCESS,
                  message());
  CHECK(fake.take().empty());
  const int64_t prepared = loads();
  Tensor a(fake_address(1), DG_DTYPE_FLOAT8_E4M3, {g, max_m, k});
  Tensor sfa(fake_address(2), DG_DTYPE_FLOAT32, {g, max_m, sf_k}, {max_m * sf_k, 1, max_m});
  Tensor b(fake_address(3), DG_DTYPE_FLOAT8_E4M3, {g, n, k});
  Tensor sfb(fake_address(4), DG_DTYPE_FLOAT32, {g, n / 128, sf_k});
  Tensor d(fake_address(5), DG_DTYPE_FLOAT8_E4M3, {g, max_m, cols});
  Tensor counts(fake_address(6), DG_DTYPE_INT32, {g});
  REQUIRE_MESSAGE(dg_m_grouped_fp8_gemm_nt_masked(stream, a.t, sfa.t, b.t, sfb.t, d.t, counts.t, expected_m, &o) ==
                      DG_SUCCESS,
                  message());
  CHECK(loads() == prepared);
  CHECK(fake.take().size() == 1);

  // Dense FP8 with a bias and a BF16 D: descriptors are read, never their memory (data may be NULL).
  Tensor bias(nullptr, DG_DTYPE_FLOAT32, {n});
  dg_gemm_epilogue eb = DG_GEMM_EPILOGUE_INIT;
  eb.bias = bias.t;
  dg_gemm_options ob = DG_GEMM_OPTIONS_INIT;
  ob.epilogue = &eb;
  REQUIRE_MESSAGE(dg_gemm_prepare(stream, DG_DTYPE_FLOAT8_E4M3, DG_GEMM_LAYOUT_NT, 300, n, k, DG_DTYPE_BFLOAT16, 0, &ob) ==
                      DG_SUCCESS,
                  message());
  CHECK(fake.take().empty());

  // What the call refuses, prepare refuses, naming the same argument.
  CHECK(dg_gemm_prepare(stream, DG_DTYPE_FLOAT8_E4M3, DG_GEMM_LAYOUT_NT, 300, n, k, DG_DTYPE_FLOAT8_E4M3, 0, nullptr) ==
        DG_ERROR_INVALID_ARGUMENT);
  CHECK(message().rfind("d_dtype: ", 0) == 0);
  CHECK(dg_gemm_prepare(stream, DG_DTYPE_FLOAT8_E4M3, DG_GEMM_LAYOUT_NT, 300, n, k, DG_DTYPE_BFLOAT16, 1, &ob) ==
        DG_ERROR_UNSUPPORTED);
  CHECK(message().find("C term") != std::string::npos);
  CHECK(dg_m_grouped_gemm_prepare(stream, DG_DTYPE_FLOAT8_E4M3, DG_GEMM_LAYOUT_NT, DG_M_GROUPED_LAYOUT_MASKED, g, max_m,
                                  n, k, expected_m, &ob) == DG_ERROR_UNSUPPORTED);
  CHECK(message().rfind("options.epilogue.bias: ", 0) == 0);
  CHECK(dg_m_grouped_gemm_prepare(stream, DG_DTYPE_FLOAT8_E4M3, DG_GEMM_LAYOUT_NT, DG_M_GROUPED_LAYOUT_MASKED, g, max_m,
                                  384, k, expected_m, &o) == DG_ERROR_UNSUPPORTED);
  CHECK(message().find("SwiGLU") != std::string::npos);
  Tensor bad_scales(fake_address(7), DG_DTYPE_FLOAT32, {g, max_m, d_sf + 1});
  e.d_scales = bad_scales.t;
  CHECK(dg_m_grouped_gemm_prepare(stream, DG_DTYPE_FLOAT8_E4M3, DG_GEMM_LAYOUT_NT, DG_M_GROUPED_LAYOUT_MASKED, g, max_m,
                                  n, k, expected_m, &o) == DG_ERROR_INVALID_ARGUMENT);
  CHECK(message().rfind("options.epilogue.d_scales: ", 0) == 0);
  CHECK(fake.take().empty());
  dg_stream_destroy(stream);
}
