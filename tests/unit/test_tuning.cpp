// GEMM tuning on the host (docs/tuning.md): the heuristic's ranked candidates and their round trip
// through an override, the table's text form (round trip, corrupt, foreign, read-only), the M-bucket
// lookup, the config choice with a table (tuned, near, overridden, capped, invalid entries; streams
// with different tables apart), problem lists, and dg_tune's argument checks (outputs untouched on
// error).
#include <doctest/doctest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "api/tune_runner.h"
#include "dg.h"
#include "ops/gemm.h"
#include "ops/gemm_config_cache.h"
#include "ops/gemm_cost_model.h"
#include "ops/gemm_tuning.h"
#include "ops/gemm_util.h"
#include "runtime/log_deferred.h"
#include "runtime/stream.h"

namespace {

using dg::ops::GemmConfig;
using dg::ops::GemmKind;
using dg::ops::GemmOverride;
using dg::ops::GemmShape;
using dg::ops::GemmType;
using dg::ops::Major;
using dg::ops::TunedEntry;
using dg::ops::TuningTable;

constexpr int kSms = 132;

GemmShape dense(GemmKind kind, int64_t m, int64_t n, int64_t k) {
  GemmShape s;
  s.kind = kind, s.m = m, s.n = n, s.k = k;
  return s;
}

GemmShape masked(int64_t g, int64_t max_m, int64_t expected, int64_t n, int64_t k) {
  GemmShape s = dense(GemmKind::kFp8_1D2D, max_m, n, k);
  s.type = GemmType::kMGroupedMasked, s.num_groups = g, s.expected_m = expected;
  return s;
}

GemmShape k_grouped(int64_t g, int64_t m, int64_t n, int64_t k) {
  GemmShape s = dense(GemmKind::kFp8_1D1D, m, n, k);
  s.type = GemmType::kKGrouped, s.num_groups = g, s.d_dtype = DG_DTYPE_FLOAT32, s.accumulate = true;
  return s;
}

GemmShape contiguous(int64_t g, int64_t per_group, int64_t n, int64_t k) {
  GemmShape s = dense(GemmKind::kFp8_1D2D, g * ((per_group + 127) / 128 * 128), n, k);
  s.type = GemmType::kMGroupedContiguous, s.num_groups = g, s.expected_m = per_group;
  return s;
}

bool same(const GemmConfig& a, const GemmConfig& b) {
  return a.block_m == b.block_m && a.block_n == b.block_n && a.block_k == b.block_k && a.stages == b.stages &&
         a.math_wg == b.math_wg && a.cluster == b.cluster && a.multicast_a == b.multicast_a &&
         a.overlap == b.overlap && a.promote_split == b.promote_split && a.num_sms == b.num_sms && a.grid == b.grid &&
         a.raster_band == b.raster_band && a.raster_along_n == b.raster_along_n && a.smem_bytes == b.smem_bytes &&
         a.threads == b.threads && a.d_strip == b.d_strip && a.d_bufs == b.d_bufs && a.split_k == b.split_k &&
         a.sfb_boundaries == b.sfb_boundaries && a.stage_aligned == b.stage_aligned;
}

std::vector<GemmShape> sample_shapes() {
  std::vector<GemmShape> v = {dense(GemmKind::kFp8_1D2D, 1, 7168, 2048),
                              dense(GemmKind::kFp8_1D2D, 128, 2112, 7168),
                              dense(GemmKind::kFp8_1D2D, 4096, 24576, 1536),
                              dense(GemmKind::kFp8_1D2D, 8192, 7168, 16384),
                              dense(GemmKind::kBf16, 2048, 8192, 8192),
                              masked(32, 128, 20, 4096, 7168),
                              masked(8, 1024, 512, 7168, 2048),
                              contiguous(8, 512, 4096, 7168)};
  GemmShape nn = dense(GemmKind::kBf16, 1000, 4096, 1024);
  nn.major_b = Major::kMN, nn.d_dtype = DG_DTYPE_FLOAT32;
  v.push_back(nn);
  GemmShape kg = dense(GemmKind::kFp8_1D1D, 4096, 7168, 2048);
  kg.type = GemmType::kKGrouped, kg.num_groups = 4, kg.d_dtype = DG_DTYPE_FLOAT32, kg.accumulate = true;
  v.push_back(kg);
  return v;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
}

// A fresh directory under the build's temp area.
std::string temp_dir(const char* tag) {
  char tmpl[256];
  std::snprintf(tmpl, sizeof(tmpl), "/tmp/dg_tuning_%s_XXXXXX", tag);
  REQUIRE(mkdtemp(tmpl) != nullptr);
  return tmpl;
}

TunedEntry entry(const GemmShape& s, int bm, int bn, int stages) {
  TunedEntry e;
  e.shape = s;
  e.config.block_m = bm, e.config.block_n = bn, e.config.stages = stages, e.config.math_wg = bm == 64 ? 1 : 2;
  e.config.cluster = 1, e.config.multicast_a = -1, e.config.split_k = 1;
  e.config.fp8_promotion = s.kind == GemmKind::kBf16 ? 0 : DG_FP8_PROMOTION_OVERLAP;
  e.config.promotion_slices = s.kind == GemmKind::kBf16 ? 0 : 1;
  e.config.kernel = DG_GEMM_KERNEL_TILED;
  e.tuned_us = 100.25, e.heuristic_us = 110.5;
  return e;
}

}  // namespace

TEST_CASE("rank_gemm_configs: the heuristic's choice first, distinct, each chosen again through its override") {
  const dg::ops::Sm90CostModel& model = dg::ops::hopper_cost_model();
  for (const GemmShape& s : sample_shapes()) {
    CAPTURE(s.m);
    CAPTURE(s.n);
    CAPTURE(s.k);
    CAPTURE(static_cast<int>(s.type));
    GemmConfig chosen;
    REQUIRE(dg::ops::choose_gemm_config(s, kSms, GemmOverride{}, model, &chosen) == DG_SUCCESS);
    std::vector<GemmConfig> ranked;
    REQUIRE(dg::ops::rank_gemm_configs(s, kSms, GemmOverride{}, model, 6, &ranked) == DG_SUCCESS);
    REQUIRE(!ranked.empty());
    CHECK(ranked.size() <= 6);
    CHECK(same(ranked[0], chosen));
    for (size_t i = 0; i < ranked.size(); ++i) {
      for (size_t j = 0; j < i; ++j) CHECK_FALSE(same(ranked[i], ranked[j]));
      GemmConfig again;
      const GemmOverride o = dg::ops::override_for(s, ranked[i]);
      CHECK(dg::ops::has_config_override(o));
      REQUIRE(dg::ops::choose_gemm_config(s, kSms, o, model, &again) == DG_SUCCESS);
      CHECK(same(again, ranked[i]));
    }
    std::vector<GemmConfig> one;
    REQUIRE(dg::ops::rank_gemm_configs(s, kSms, GemmOverride{}, model, 1, &one) == DG_SUCCESS);
    CHECK(one.size() == 1);
  }
  // Large problems have many legal candidates: the count is reached.
  std::vector<GemmConfig> many;
  REQUIRE(dg::ops::rank_gemm_configs(dense(GemmKind::kFp8_1D2D, 4096, 7168, 2048), kSms, GemmOverride{}, model, 8,
                                     &many) == DG_SUCCESS);
  CHECK(many.size() == 8);
  // The candidates are the search's: an override narrows them, and a bad one fails as choose does.
  GemmOverride bn128;
  bn128.block_n = 128;
  REQUIRE(dg::ops::rank_gemm_configs(dense(GemmKind::kFp8_1D2D, 4096, 7168, 2048), kSms, bn128, model, 8, &many) ==
          DG_SUCCESS);
  for (const GemmConfig& c : many) CHECK(c.block_n == 128);
  GemmOverride bad;
  bad.block_m = 96;
  std::vector<GemmConfig> untouched(1);
  CHECK(dg::ops::rank_gemm_configs(dense(GemmKind::kBf16, 256, 256, 256), kSms, bad, model, 4, &untouched) ==
        DG_ERROR_INVALID_ARGUMENT);
  CHECK(untouched.size() == 1);
}

// Large-M CTA pairs, which the heuristic searches only on request, are variants of ranked tiles
// (both multicast forms), and from five candidates on the last slot holds the cheapest one; small M
// keeps its own candidates.
TEST_CASE("rank_gemm_configs: CTA pairs are variants at large M, and the last of five or more") {
  const dg::ops::Sm90CostModel& model = dg::ops::hopper_cost_model();
  const auto is_pair = [](const GemmConfig& c) { return c.cluster == 2; };
  for (GemmKind kind : {GemmKind::kFp8_1D2D, GemmKind::kBf16}) {
    CAPTURE(static_cast<int>(kind));
    const GemmShape s = dense(kind, 4096, 7168, 2048);
    std::vector<GemmConfig> all, four, five;
    REQUIRE(dg::ops::rank_gemm_configs(s, kSms, GemmOverride{}, model, 500, &all) == DG_SUCCESS);
    REQUIRE(!all.empty());
    CHECK(all[0].cluster == 1);
    CHECK(std::any_of(all.begin(), all.end(), [](const GemmConfig& c) { return c.cluster == 2 && c.multicast_a; }));
    CHECK(std::any_of(all.begin(), all.end(), [](const GemmConfig& c) { return c.cluster == 2 && !c.multicast_a; }));
    REQUIRE(dg::ops::rank_gemm_configs(s, kSms, GemmOverride{}, model, 4, &four) == DG_SUCCESS);
    CHECK(std::none_of(four.begin(), four.end(), is_pair));
    REQUIRE(dg::ops::rank_gemm_configs(s, kSms, GemmOverride{}, model, 5, &five) == DG_SUCCESS);
    REQUIRE(five.size() == 5);
    CHECK(std::count_if(five.begin(), five.end(), is_pair) == 1);
    CHECK(is_pair(five[4]));
    const auto cheapest = std::find_if(all.begin(), all.end(), is_pair);
    REQUIRE(cheapest != all.end());
    CHECK(five[4].block_m == cheapest->block_m);
    CHECK(five[4].block_n == cheapest->block_n);
    CHECK(five[4].multicast_a == cheapest->multicast_a);
  }
  std::vector<GemmConfig> small;
  REQUIRE(dg::ops::rank_gemm_configs(dense(GemmKind::kFp8_1D2D, 64, 7168, 2048), kSms, GemmOverride{}, model, 500,
                                     &small) == DG_SUCCESS);
  for (const GemmConfig& c : small) CHECK(c.cluster == 1);
}

// Candidates cover other tiles before they repeat one: a tile's width sets the rounds over the SMs.
TEST_CASE("rank_gemm_configs: other tiles before variants of a ranked tile") {
  const dg::ops::Sm90CostModel& model = dg::ops::hopper_cost_model();
  const auto tiles_of = [](const GemmConfig& c) { return std::make_tuple(c.block_m, c.block_n, c.split_k); };
  for (const GemmShape& s : {masked(1, 4096, 1228, 4096, 7168), dense(GemmKind::kFp8_1D2D, 4096, 7168, 2048)}) {
    CAPTURE(static_cast<int>(s.type));
    std::vector<GemmConfig> few, all;
    REQUIRE(dg::ops::rank_gemm_configs(s, kSms, GemmOverride{}, model, 4, &few) == DG_SUCCESS);
    REQUIRE(few.size() == 4);
    std::set<std::tuple<int, int, int>> tiles;
    for (const GemmConfig& c : few) tiles.insert(tiles_of(c));
    CHECK(tiles.size() == 4);
    // Once every tile is ranked, the variants follow, cheapest first.
    REQUIRE(dg::ops::rank_gemm_configs(s, kSms, GemmOverride{}, model, 200, &all) == DG_SUCCESS);
    tiles.clear();
    size_t first_variant = all.size();
    for (size_t i = 0; i < all.size(); ++i)
      if (!tiles.insert(tiles_of(all[i])).second && first_variant == all.size()) first_variant = i;
    REQUIRE(first_variant < all.size());
    CHECK(first_variant == tiles.size());
    for (size_t i = first_variant + 1; i < all.size(); ++i) CHECK(all[i - 1].estimate_us <= all[i].estimate_us);
  }
}

// Masked problems: the split tail is a candidate beside the whole tiles.
TEST_CASE("rank_gemm_configs: masked candidates include the split tail") {
  const dg::ops::Sm90CostModel& h200 = dg::ops::sm90_cost_model("NVIDIA H200");
  std::vector<GemmConfig> v;
  REQUIRE(dg::ops::rank_gemm_configs(masked(1, 4096, 1228, 4096, 7168), kSms, GemmOverride{}, h200, 6, &v) ==
          DG_SUCCESS);
  const auto split = [](const GemmConfig& c) { return c.split_k == 2; };
  CHECK(std::any_of(v.begin(), v.end(), split));
  CHECK(!std::all_of(v.begin(), v.end(), split));
}

// dg_tune's masked samples: every count inside the heuristic's spread, each group through every
// stratum once over the samples, and sample totals that vary (as drawn counts do).
TEST_CASE("dg_tune: masked problems are timed on counts spread as the heuristic assumes") {
  const dg::ops::CountSpread spread = dg::ops::count_spread(1228, 4096);
  CHECK(spread.lo == 736);
  CHECK(spread.hi == 1350);
  for (int64_t g = 0; g < 4; ++g) {
    std::set<int32_t> seen;
    for (int j = 0; j < dg::api::kMaskedCountSamples; ++j) {
      const int32_t c = dg::api::masked_sample_count(spread, j, g);
      CHECK(c >= spread.lo);
      CHECK(c <= spread.hi);
      seen.insert(c);
    }
    CHECK(seen.size() == static_cast<size_t>(dg::api::kMaskedCountSamples));
    CHECK(*seen.begin() < spread.lo + (spread.hi - spread.lo) / 8);
    CHECK(*seen.rbegin() > spread.hi - (spread.hi - spread.lo) / 8);
  }
  std::set<int64_t> totals;
  for (int j = 0; j < dg::api::kMaskedCountSamples; ++j)
    totals.insert(dg::api::masked_sample_count(spread, j, 0) + dg::api::masked_sample_count(spread, j, 1));
  CHECK(totals.size() > 2);
  const dg::ops::CountSpread capped = dg::ops::count_spread(1000, 512);  // max_m caps the spread (a hint above it)
  CHECK(capped.hi == 512);
  for (int j = 0; j < dg::api::kMaskedCountSamples; ++j) CHECK(dg::api::masked_sample_count(capped, j, 0) <= 512);
}

// dg_tune's contiguous samples: groups of unequal rows (pairs m + d, m - d, |d| up to 0.3 m), each
// pair through every stratum once, and every sample inside A's rows of the list's problem.
TEST_CASE("dg_tune: contiguous problems are timed on groups of unequal rows that fit A") {
  for (const int64_t m : {256, 1000, 4096, 8192}) {
    for (const int64_t groups : {1, 4, 5, 8}) {
      const int64_t cap = groups * dg::ops::align_up(m, dg::ops::kMkAlignment);
      std::set<int64_t> firsts;
      for (int j = 0; j < dg::api::kContiguousSamples; ++j) {
        const std::vector<int64_t> rows = dg::api::contiguous_sample_rows(m, groups, j);
        REQUIRE(rows.size() == static_cast<size_t>(groups));
        int64_t aligned = 0;
        for (const int64_t r : rows) {
          CHECK(r >= 0);
          CHECK(r <= m + static_cast<int64_t>(dg::api::kContiguousSpread * double(m)) + 1);
          aligned += dg::ops::align_up(r, dg::ops::kMkAlignment);
        }
        CHECK(aligned <= cap);
        if (groups % 2 == 1) CHECK(rows.back() == m);  // the odd group out keeps m
        firsts.insert(rows[0]);
      }
      if (groups >= 2) {
        CHECK(firsts.size() == static_cast<size_t>(dg::api::kContiguousSamples));  // every stratum once
        CHECK(*firsts.begin() < m - m / 8);
        CHECK(*firsts.rbegin() > m + m / 8);
      }
    }
  }
}

// A tuned entry replaces the heuristic's choice only past the timing's noise.
TEST_CASE("dg_tune: a candidate wins only with a lead of at least kTunedMinLead") {
  using dg::api::ConfigTimes;
  using dg::api::tuned_winner;
  const double lead = dg::api::kTunedMinLead;
  // One sample (no group counts): the means are the sample.
  const auto one = [](std::vector<double> ms) { return ConfigTimes{ms, {ms}}; };
  CHECK(tuned_winner(one({1.0})) == 0);
  CHECK(tuned_winner(one({1.0, 1.1, 1.2})) == 0);                           // the heuristic fastest
  CHECK(tuned_winner(one({1.0, 1.0 - lead / 2, 1.2})) == 0);                // a lead under the margin
  CHECK(tuned_winner(one({1.0, 1.0 - 2 * lead, 1.0 - lead / 2})) == 1);     // past it
  CHECK(tuned_winner(one({1.0, 1.0 - lead / 2, 1.0 - 3 * lead})) == 2);     // the fastest, not the first past it
  size_t fastest = 0;
  CHECK(tuned_winner(one({1.0, 1.0 - lead / 2, 1.1}), &fastest) == 0);
  CHECK(fastest == 1);  // what the progress line names as under the margin
}

TEST_CASE("dg_tune: over samples of group counts a lead must also stand out of its samples' spread") {
  using dg::api::ConfigTimes;
  using dg::api::tuned_winner;
  // Eight samples: candidate 1 leads by 3% in each; candidate 2 by 14% in half of them and trails by
  // 8% in the others (1.8% less mean time, past the margin, with a standard error of its leads of 4.2%).
  ConfigTimes steady, swinging;
  for (int s = 0; s < 8; ++s) {
    steady.sample_ms.push_back({1.0, 1.0 / 1.03});
    swinging.sample_ms.push_back({1.0, s % 2 ? 1.0 / 1.14 : 1.0 / 0.92});
  }
  const auto mean = [](ConfigTimes* t) {
    t->mean_ms.assign(t->sample_ms[0].size(), 0.0);
    for (const auto& s : t->sample_ms)
      for (size_t i = 0; i < s.size(); ++i) t->mean_ms[i] += s[i] / double(t->sample_ms.size());
  };
  mean(&steady), mean(&swinging);
  CHECK(tuned_winner(steady) == 1);
  size_t fastest = 0;
  CHECK(swinging.mean_ms[1] < swinging.mean_ms[0] * (1.0 - dg::api::kTunedMinLead));  // past the 1% margin
  CHECK(tuned_winner(swinging, &fastest) == 0);
  CHECK(fastest == 1);
}

TEST_CASE("tuning table: round trip of the text form") {
  TuningTable t;
  t.gpu = "NVIDIA H200", t.sms = 132, t.version = dg::ops::tuning_library_version();
  t.entries.push_back(entry(dense(GemmKind::kFp8_1D2D, 4096, 24576, 1536), 128, 192, 5));
  t.entries.push_back(entry(masked(32, 128, 20, 4096, 7168), 64, 128, 8));
  GemmShape nn = dense(GemmKind::kBf16, 1000, 4096, 1024);
  nn.major_b = Major::kMN, nn.d_dtype = DG_DTYPE_FLOAT32, nn.accumulate = true;
  t.entries.push_back(entry(nn, 128, 128, 4));
  t.entries.back().config.cluster = 2, t.entries.back().config.multicast_a = 1;
  const std::string text = dg::ops::format_tuning_table(t);
  TuningTable back;
  std::string why;
  REQUIRE_MESSAGE(dg::ops::parse_tuning_table(text, &back, &why), why);
  CHECK(back.gpu == t.gpu);
  CHECK(back.sms == t.sms);
  CHECK(back.version == t.version);
  REQUIRE(back.entries.size() == 3);
  for (size_t i = 0; i < 3; ++i) {
    const TunedEntry &a = t.entries[i], &b = back.entries[i];
    CHECK(dg::ops::same_tuning_key(a.shape, b.shape));
    CHECK(a.shape.m == b.shape.m);
    CHECK(a.shape.expected_m == b.shape.expected_m);
    CHECK(std::memcmp(&a.config, &b.config, sizeof(GemmOverride)) == 0);
    CHECK(b.tuned_us == doctest::Approx(a.tuned_us));
  }
  CHECK(dg::ops::format_tuning_table(back) == text);
}

// A problem with a fused epilogue: SwiGLU (N the GEMM's gate and up columns) and/or an FP8 D with FP32 scales.
GemmShape fused(GemmShape s, bool swiglu, bool fp8_d) {
  if (swiglu) s.epilogue.act = dg::ops::Activation::kSwiGlu;
  if (fp8_d) s.epilogue.scales = dg::ops::DScales::kFp32, s.d_dtype = DG_DTYPE_FLOAT8_E4M3;
  return s;
}

TEST_CASE("tuning table: fused epilogues round trip, match only their own calls, and format 1 still reads") {
  TuningTable t;
  t.gpu = "NVIDIA H200", t.sms = 132, t.version = dg::ops::tuning_library_version();
  const GemmShape gate_up = contiguous(8, 512, 4096, 7168);
  t.entries.push_back(entry(fused(gate_up, true, true), 128, 256, 4));
  t.entries.push_back(entry(fused(masked(32, 128, 20, 4096, 7168), false, true), 64, 128, 8));
  t.entries.push_back(entry(fused(dense(GemmKind::kBf16, 2048, 8192, 4096), true, false), 128, 256, 4));
  const std::string text = dg::ops::format_tuning_table(t);
  CHECK(text.find("gemm fp8_1d2d e4m3 nt contiguous 0 swiglu 4096 7168") != std::string::npos);
  CHECK(text.find("gemm bf16 bf16 nt dense 0 swiglu 8192 4096") != std::string::npos);
  TuningTable back;
  std::string why;
  REQUIRE_MESSAGE(dg::ops::parse_tuning_table(text, &back, &why), why);
  REQUIRE(back.entries.size() == 3);
  for (size_t i = 0; i < 3; ++i) {
    CAPTURE(i);
    CHECK(dg::ops::same_tuning_key(t.entries[i].shape, back.entries[i].shape));
    CHECK(back.entries[i].shape.d_dtype == t.entries[i].shape.d_dtype);
  }
  CHECK(dg::ops::format_tuning_table(back) == text);
  // The fused gate/up entry serves the fused call only; the plain call and SwiGLU into BF16 miss it.
  CHECK(dg::ops::find_tuned(back, fused(contiguous(8, 600, 4096, 7168), true, true)) != nullptr);
  CHECK(dg::ops::find_tuned(back, contiguous(8, 512, 4096, 7168)) == nullptr);
  CHECK(dg::ops::find_tuned(back, fused(gate_up, true, false)) == nullptr);
  GemmShape packed = fused(gate_up, true, true);
  packed.epilogue.scales = dg::ops::DScales::kPackedUe8m0;
  CHECK(dg::ops::find_tuned(back, packed) == nullptr);

  // Format 1: no EPILOGUE word, no e4m3 D.
  const std::string v1 = "libdg-tuning-table 1\nlibdg " + t.version +
                         "\ngpu NVIDIA H200\nsms 132\n"
                         "gemm fp8_1d2d bf16 nt dense 0 24576 1536 4096 1 0 : "
                         "128 192 5 2 1 -1 overlap 1 1 412.10 418.02\n";
  REQUIRE_MESSAGE(dg::ops::parse_tuning_table(v1, &back, &why), why);
  REQUIRE(back.entries.size() == 1);
  CHECK(back.entries[0].shape.n == 24576);
  CHECK(back.entries[0].shape.m == 4096);
  CHECK_FALSE(back.entries[0].shape.epilogue.active());
  CHECK(back.entries[0].config.block_n == 192);
  std::string v1_fp8_d = v1;
  v1_fp8_d.replace(v1_fp8_d.find("fp8_1d2d bf16"), 13, "fp8_1d2d e4m3");
  CHECK_FALSE(dg::ops::parse_tuning_table(v1_fp8_d, &back, &why));
  CHECK(why.find("line 5") != std::string::npos);
  std::string bad_epilogue = text;
  bad_epilogue.replace(bad_epilogue.find(" swiglu "), 8, " gelu ");
  CHECK_FALSE(dg::ops::parse_tuning_table(bad_epilogue, &back, &why));
}

TEST_CASE("tuning table: malformed text is refused with the line") {
  TuningTable t;
  t.gpu = "NVIDIA H200", t.sms = 132, t.version = "0.7.0";
  t.entries.push_back(entry(dense(GemmKind::kFp8_1D2D, 4096, 24576, 1536), 128, 192, 5));
  const std::string good = dg::ops::format_tuning_table(t);
  TuningTable out;
  out.gpu = "kept";
  std::string why;
  CHECK_FALSE(dg::ops::parse_tuning_table("", &out, &why));
  CHECK(why.find("header") != std::string::npos);
  CHECK_FALSE(dg::ops::parse_tuning_table("libdg-tuning-table 3\nlibdg 0.7.0\ngpu X\nsms 1\n", &out, &why));
  CHECK(why.find("line 1") != std::string::npos);
  std::string bad_field = good;
  bad_field.replace(bad_field.find(" 24576 "), 7, " 24x76 ");
  CHECK_FALSE(dg::ops::parse_tuning_table(bad_field, &out, &why));
  CHECK(why.find("line 6") != std::string::npos);
  CHECK_FALSE(dg::ops::parse_tuning_table(good + "gemm fp8_1d2d bf16 nt dense 0 1 2\n", &out, &why));
  CHECK(why.find("line 7") != std::string::npos);
  CHECK_FALSE(dg::ops::parse_tuning_table(good.substr(0, good.size() - 10), &out, &why));
  CHECK(out.gpu == "kept");
  CHECK(dg::ops::parse_tuning_table(good + "\n# a comment\n\n", &out, &why));
}

TEST_CASE("tuning table: the nearest tuned M bucket within a factor of 1.5") {
  TuningTable t;
  const GemmShape s1024 = dense(GemmKind::kFp8_1D2D, 1024, 7168, 2048);
  const GemmShape s2048 = dense(GemmKind::kFp8_1D2D, 2048, 7168, 2048);
  t.entries.push_back(entry(s1024, 128, 128, 6));
  t.entries.push_back(entry(s2048, 128, 192, 5));
  auto found_m = [&](int64_t m, int64_t n = 7168) -> int64_t {
    const TunedEntry* e = dg::ops::find_tuned(t, dense(GemmKind::kFp8_1D2D, m, n, 2048));
    return e ? e->shape.m : 0;
  };
  CHECK(found_m(1024) == 1024);
  CHECK(found_m(2048) == 2048);
  CHECK(found_m(1448) == 1024);  // 1.414 to 1024, 1.414.. to 2048
  CHECK(found_m(1449) == 2048);
  CHECK(found_m(3072) == 2048);  // the factor itself
  CHECK(found_m(3073) == 0);
  CHECK(found_m(683) == 1024);
  CHECK(found_m(682) == 0);
  TuningTable tie;
  tie.entries.push_back(entry(dense(GemmKind::kFp8_1D2D, 100, 7168, 2048), 128, 128, 6));
  tie.entries.push_back(entry(dense(GemmKind::kFp8_1D2D, 144, 7168, 2048), 128, 192, 5));
  const TunedEntry* e = dg::ops::find_tuned(tie, dense(GemmKind::kFp8_1D2D, 120, 7168, 2048));
  REQUIRE(e != nullptr);
  CHECK(e->shape.m == 100);  // a tie (1.2 either way): the smaller M
  CHECK(found_m(4096, 4096) == 0);  // another N
  GemmShape bf16 = s2048;
  bf16.kind = GemmKind::kBf16;
  CHECK(dg::ops::find_tuned(t, bf16) == nullptr);
  GemmShape fused = s2048;  // a fused epilogue is another problem
  fused.epilogue.bias = dg::ops::BiasType::kFp32;
  CHECK(dg::ops::find_tuned(t, fused) == nullptr);
  // Grouped problems: the bucket is expected_m, G must match.
  t.entries.push_back(entry(masked(32, 128, 16, 4096, 7168), 64, 128, 8));
  CHECK(dg::ops::find_tuned(t, masked(32, 4096, 24, 4096, 7168)) != nullptr);
  CHECK(dg::ops::find_tuned(t, masked(32, 128, 64, 4096, 7168)) == nullptr);
  CHECK(dg::ops::find_tuned(t, masked(8, 128, 16, 4096, 7168)) == nullptr);
}

TEST_CASE("tuning table: K-grouped problems key on M and N, their bucket is the mean K and the groups") {
  TuningTable t;
  t.entries.push_back(entry(k_grouped(4, 4096, 7168, 8192), 128, 192, 5));
  t.entries.push_back(entry(k_grouped(8, 4096, 7168, 4096), 128, 160, 5));
  auto found = [&](int64_t g, int64_t m, int64_t k) -> std::pair<int64_t, int64_t> {
    const TunedEntry* e = dg::ops::find_tuned(t, k_grouped(g, m, 7168, k));
    return e ? std::make_pair(e->shape.num_groups, e->shape.k) : std::make_pair(int64_t(0), int64_t(0));
  };
  CHECK(found(4, 4096, 8192) == std::make_pair(int64_t(4), int64_t(8192)));
  CHECK(found(3, 4096, 7808) == std::make_pair(int64_t(4), int64_t(8192)));  // an empty group, K drawn
  CHECK(found(7, 4096, 4224) == std::make_pair(int64_t(8), int64_t(4096)));
  CHECK(found(8, 4096, 8192) == std::make_pair(int64_t(0), int64_t(0)));  // G 2x from one entry, K 2x the other
  CHECK(found(6, 4096, 6144) == std::make_pair(int64_t(8), int64_t(4096)));  // 1.5x from both: the smaller K
  CHECK(found(8, 4096, 5461) == std::make_pair(int64_t(8), int64_t(4096)));  // 1.33x K, same G
  CHECK(found(4, 2048, 8192) == std::make_pair(int64_t(0), int64_t(0)));     // M is exact
  CHECK(dg::ops::bucket_ratio(t.entries[0].shape, t.entries[1].shape) == doctest::Approx(2.0));
  CHECK(dg::ops::bucket_ratio(t.entries[0].shape, t.entries[0].shape) == 1.0);
}

TEST_CASE("tuning table: default path beside the JIT cache") {
  CHECK(dg::ops::default_tuning_table_path("/c", "NVIDIA H200", 132) == "/c/libdg/tuning-nvidia-h200-132sm.txt");
  CHECK(dg::ops::default_tuning_table_path("/c", "NVIDIA H100 80GB HBM3", 132) ==
        "/c/libdg/tuning-nvidia-h100-80gb-hbm3-132sm.txt");
  CHECK(dg::ops::default_tuning_table_path("", "NVIDIA H200", 132).empty());
}

namespace {

// An offline stream (no GPU needed) whose config points at `table`.
struct OfflineStream {
  dg_stream* stream = nullptr;
  explicit OfflineStream(const std::string& table, int sms = kSms) {
    dg_config* config = nullptr;
    REQUIRE(dg_config_create(&config) == DG_SUCCESS);
    REQUIRE(dg_config_set_string(config, DG_CONFIG_TUNING_TABLE, table.c_str()) == DG_SUCCESS);
    REQUIRE(dg_stream_create_offline(&stream, 9, 0, sms, config) == DG_SUCCESS);
    dg_config_destroy(config);
  }
  ~OfflineStream() { dg_stream_destroy(stream); }
  const dg_stream_s& s() const { return *stream; }
};

TuningTable table_for(const dg_stream_s& s) {
  TuningTable t;
  t.gpu = s.device->name, t.sms = s.device->sm_count, t.version = dg::ops::tuning_library_version();
  return t;
}

// Log messages at warn level, collected.
std::vector<std::string>* g_messages = nullptr;
void collect(int32_t level, const char* message, void*) {
  if (g_messages && level >= DG_LOG_WARN) g_messages->push_back(message);
}

}  // namespace

TEST_CASE("tuning table: the config choice takes a tuned entry unless overridden, capped or invalid") {
  const std::string dir = temp_dir("choose");
  const std::string path = dir + "/table.txt";
  OfflineStream os(path);
  const GemmShape s = dense(GemmKind::kFp8_1D2D, 4096, 7168, 2048);
  GemmConfig heuristic;
  REQUIRE(dg::ops::choose_gemm_config(s, kSms, GemmOverride{}, &heuristic) == DG_SUCCESS);
  // A legal config the heuristic does not choose.
  const int bn = heuristic.block_n == 96 ? 112 : 96;
  TuningTable t = table_for(os.s());
  t.entries.push_back(entry(s, 128, bn, 4));
  GemmShape near = s;
  near.m = 6000;
  t.entries.push_back(entry(masked(32, 128, 16, 4096, 7168), 256, 128, 4));  // block_m 256: not for masked calls
  REQUIRE(dg::ops::write_tuning_table(path, t) == DG_SUCCESS);

  GemmConfig c;
  REQUIRE(dg::ops::choose_tuned_gemm_config(os.s(), s, kSms, GemmOverride{}, &c) == DG_SUCCESS);
  CHECK(c.block_n == bn);
  CHECK(c.stages == 4);
  REQUIRE(dg::ops::choose_tuned_gemm_config(os.s(), near, kSms, GemmOverride{}, &c) == DG_SUCCESS);
  CHECK(c.block_n == bn);
  // The caller's config fields win.
  GemmOverride o;
  o.block_n = 128;
  REQUIRE(dg::ops::choose_tuned_gemm_config(os.s(), s, kSms, o, &c) == DG_SUCCESS);
  CHECK(c.block_n == 128);
  // A capped call plans with the heuristic.
  GemmOverride capped;
  capped.num_sms = 100;
  GemmConfig capped_heuristic;
  REQUIRE(dg::ops::choose_gemm_config(s, kSms, capped, &capped_heuristic) == DG_SUCCESS);
  REQUIRE(dg::ops::choose_tuned_gemm_config(os.s(), s, kSms, capped, &c) == DG_SUCCESS);
  CHECK(same(c, capped_heuristic));
  REQUIRE(dg::ops::choose_tuned_gemm_config(os.s(), s, 100, GemmOverride{}, &c) == DG_SUCCESS);
  CHECK(c.num_sms == 100);
  // An entry that fails the override checks falls back to the heuristic.
  const GemmShape m = masked(32, 128, 16, 4096, 7168);
  GemmConfig masked_heuristic;
  REQUIRE(dg::ops::choose_gemm_config(m, kSms, GemmOverride{}, &masked_heuristic) == DG_SUCCESS);
  REQUIRE(dg::ops::choose_tuned_gemm_config(os.s(), m, kSms, GemmOverride{}, &c) == DG_SUCCESS);
  CHECK(same(c, masked_heuristic));
  // Untuned problems keep the heuristic.
  REQUIRE(dg::ops::choose_tuned_gemm_config(os.s(), dense(GemmKind::kBf16, 4096, 7168, 2048), kSms, GemmOverride{},
                                            &c) == DG_SUCCESS);
  GemmConfig bf16;
  REQUIRE(dg::ops::choose_gemm_config(dense(GemmKind::kBf16, 4096, 7168, 2048), kSms, GemmOverride{}, &bf16) ==
          DG_SUCCESS);
  CHECK(same(c, bf16));
  // "off": no table.
  OfflineStream off("off");
  REQUIRE(dg::ops::choose_tuned_gemm_config(off.s(), s, kSms, GemmOverride{}, &c) == DG_SUCCESS);
  CHECK(same(c, heuristic));
}

TEST_CASE("tuning table: an entry that is the heuristic's own tile keeps its count-adaptive second width") {
  const std::string dir = temp_dir("adaptive");
  const std::string path = dir + "/table.txt";
  OfflineStream os(path);
  GemmShape s = masked(1, 4096, 1228, 4096, 7168);
  s.kind = GemmKind::kBf16;
  GemmConfig heuristic;
  REQUIRE(dg::ops::choose_gemm_config(s, kSms, GemmOverride{}, &heuristic) == DG_SUCCESS);
  REQUIRE(heuristic.alt_tiles() != 0);  // 128x192 split, 128x256 at some totals (docs/m_grouped_gemm.md)
  // An entry of the heuristic's tile, every field explicit, timed faster than the heuristic's
  // choice (its other candidates' pipelines can tie that tile's config).
  TuningTable t = table_for(os.s());
  TunedEntry own;
  own.shape = s, own.config = dg::ops::override_for(s, heuristic), own.tuned_us = 85, own.heuristic_us = 90;
  t.entries.push_back(own);
  REQUIRE(dg::ops::write_tuning_table(path, t) == DG_SUCCESS);
  GemmConfig c;
  REQUIRE(dg::ops::choose_tuned_gemm_config(os.s(), s, kSms, GemmOverride{}, &c) == DG_SUCCESS);
  CHECK(same(c, heuristic));
  REQUIRE(c.alt_tiles() == heuristic.alt_tiles());
  for (int i = 0; i < c.alt_tiles(); ++i) {
    CHECK(c.alts[i].block_n == heuristic.alts[i].block_n);
    CHECK(c.alts[i].rows[0] == heuristic.alts[i].rows[0]);
  }
  // Another tile of the entry runs alone.
  const int bn = heuristic.block_n == 160 ? 128 : 160;
  t.entries[0].config.block_n = bn;
  const std::string other_path = dir + "/other.txt";
  REQUIRE(dg::ops::write_tuning_table(other_path, t) == DG_SUCCESS);
  OfflineStream other(other_path);
  REQUIRE(dg::ops::choose_tuned_gemm_config(other.s(), s, kSms, GemmOverride{}, &c) == DG_SUCCESS);
  CHECK(c.block_n == bn);
  CHECK(c.alt_tiles() == 0);
}

// dg_tune writes the heuristic's choice with equal times where no candidate led it by the margin:
// such an entry leaves every call it covers to the heuristic for the call's own shape, while a won
// entry pins its config over the bucket.
TEST_CASE("tuning table: an entry the heuristic's choice won leaves the calls it covers to the heuristic") {
  const std::string dir = temp_dir("kept");
  const std::string path = dir + "/table.txt";
  OfflineStream os(path);
  // A tuned M and a call's M within the bucket factor whose heuristic choices differ.
  GemmShape tuned, call;
  GemmConfig at_tuned, at_call;
  bool found = false;
  for (const int64_t n : {6144, 10240, 28672, 4096})
    for (const int64_t k : {4096, 8192, 14336})
      for (const int64_t m : {3000, 2900, 3100, 5000, 1500})
        if (!found) {
          tuned = dense(GemmKind::kBf16, 4096, n, k), call = dense(GemmKind::kBf16, m, n, k);
          if (m < 2048) tuned.m = 2048;
          REQUIRE(dg::ops::choose_gemm_config(tuned, kSms, GemmOverride{}, &at_tuned) == DG_SUCCESS);
          REQUIRE(dg::ops::choose_gemm_config(call, kSms, GemmOverride{}, &at_call) == DG_SUCCESS);
          found = at_tuned.block_m != at_call.block_m || at_tuned.block_n != at_call.block_n ||
                  at_tuned.stages != at_call.stages;  // another tile or pipeline, not only another grid
        }
  REQUIRE(found);
  CAPTURE(call.m);
  CAPTURE(call.n);
  CAPTURE(call.k);
  TuningTable t = table_for(os.s());
  TunedEntry e;
  e.shape = tuned, e.config = dg::ops::override_for(tuned, at_tuned), e.tuned_us = 90, e.heuristic_us = 90;
  CHECK(e.keeps_heuristic());
  t.entries.push_back(e);
  REQUIRE(dg::ops::write_tuning_table(path, t) == DG_SUCCESS);
  GemmConfig c;
  REQUIRE(dg::ops::choose_tuned_gemm_config(os.s(), call, kSms, GemmOverride{}, &c) == DG_SUCCESS);
  CHECK(same(c, at_call));
  // The same config won by a candidate's lead applies over the bucket.
  t.entries[0].tuned_us = 80;
  CHECK(!t.entries[0].keeps_heuristic());
  const std::string won_path = dir + "/won.txt";
  REQUIRE(dg::ops::write_tuning_table(won_path, t) == DG_SUCCESS);
  OfflineStream won(won_path);
  REQUIRE(dg::ops::choose_tuned_gemm_config(won.s(), call, kSms, GemmOverride{}, &c) == DG_SUCCESS);
  CHECK((c.block_m == at_tuned.block_m && c.block_n == at_tuned.block_n && c.stages == at_tuned.stages));
  unlink(path.c_str()), unlink(won_path.c_str()), rmdir(dir.c_str());
}

TEST_CASE("named offline streams choose as the named GPU does and read its tuning table") {
  // FP8 M 2048, N 7168, K 2048: the H200's calibration promotes after the WGMMAs, the generic
  // Hopper one overlaps the promotion.
  const GemmShape s = dense(GemmKind::kFp8_1D2D, 2048, 7168, 2048);
  GemmConfig h200, hopper, c;
  REQUIRE(dg::ops::choose_gemm_config(s, kSms, GemmOverride{}, dg::ops::sm90_cost_model("NVIDIA H200"), &h200) ==
          DG_SUCCESS);
  REQUIRE(dg::ops::choose_gemm_config(s, kSms, GemmOverride{}, &hopper) == DG_SUCCESS);
  REQUIRE_FALSE(same(h200, hopper));
  const std::string dir = temp_dir("named");
  dg_config* config = nullptr;
  REQUIRE(dg_config_create(&config) == DG_SUCCESS);
  REQUIRE(dg_config_set_string(config, DG_CONFIG_TUNING_TABLE, (dir + "/table.txt").c_str()) == DG_SUCCESS);
  dg_stream* named = nullptr;
  REQUIRE(dg_stream_create_offline_named(&named, 9, 0, kSms, "NVIDIA H200", config) == DG_SUCCESS);
  CHECK(std::string(named->device->name) == "NVIDIA H200");
  CHECK(named->device->offline);
  REQUIRE(dg::ops::choose_tuned_gemm_config(*named, s, kSms, GemmOverride{}, &c) == DG_SUCCESS);
  CHECK(same(c, h200));
  // The H200's table (its name and SM count) is read: a tuned tile wins.
  TuningTable t = table_for(*named);
  t.entries.push_back(entry(s, 128, 96, 4));
  REQUIRE(dg::ops::write_tuning_table(dir + "/table.txt", t) == DG_SUCCESS);
  dg_stream* again = nullptr;  // the table is read once per path: a fresh config path for a fresh read
  REQUIRE(dg_config_set_string(config, DG_CONFIG_TUNING_TABLE, (dir + "/table2.txt").c_str()) == DG_SUCCESS);
  REQUIRE(dg::ops::write_tuning_table(dir + "/table2.txt", t) == DG_SUCCESS);
  REQUIRE(dg_stream_create_offline_named(&again, 9, 0, kSms, "NVIDIA H200", config) == DG_SUCCESS);
  REQUIRE(dg::ops::choose_tuned_gemm_config(*again, s, kSms, GemmOverride{}, &c) == DG_SUCCESS);
  CHECK(c.block_n == 96);
  dg_stream_destroy(again);
  dg_stream_destroy(named);
  dg_config_destroy(config);
  // Bad names are refused naming the argument; the out-pointer is untouched.
  dg_stream* out = reinterpret_cast<dg_stream*>(0x1);
  const std::string long_name(256, 'A');
  for (const char* bad : {static_cast<const char*>(nullptr), "", " H200", "H200 ", "NVIDIA\tH200", "NVIDIA \xc3\xa9",
                          long_name.c_str()}) {
    CHECK(dg_stream_create_offline_named(&out, 9, 0, kSms, bad, nullptr) == DG_ERROR_INVALID_ARGUMENT);
    CHECK(std::string(dg_last_error()).find("gpu_name") != std::string::npos);
    CHECK(out == reinterpret_cast<dg_stream*>(0x1));
  }
  CHECK(dg_stream_create_offline_named(&out, 8, 0, kSms, "NVIDIA A100", nullptr) == DG_ERROR_UNSUPPORTED);
  CHECK(dg_stream_create_offline_named(nullptr, 9, 0, kSms, "NVIDIA H200", nullptr) == DG_ERROR_INVALID_ARGUMENT);
}

TEST_CASE("dg_prepare_problems compiles the kernels a list's calls run: the table's config, else the heuristic's") {
  const std::string dir = temp_dir("prepare");
  const GemmShape s = dense(GemmKind::kFp8_1D2D, 2048, 7168, 2048);
  dg_config* config = nullptr;
  REQUIRE(dg_config_create(&config) == DG_SUCCESS);
  REQUIRE(dg_config_set_string(config, DG_CONFIG_TUNING_TABLE, (dir + "/table.txt").c_str()) == DG_SUCCESS);
  REQUIRE(dg_config_set_string(config, DG_CONFIG_CACHE_DIR, (dir + "/cache").c_str()) == DG_SUCCESS);
  REQUIRE(dg_config_set_int(config, DG_CONFIG_PRINT_CONFIGS, 1) == DG_SUCCESS);
  dg_stream* stream = nullptr;
  REQUIRE(dg_stream_create_offline_named(&stream, 9, 0, kSms, "NVIDIA H200", config) == DG_SUCCESS);
  dg_config_destroy(config);
  TuningTable t = table_for(*stream);
  t.entries.push_back(entry(s, 128, 96, 4));
  REQUIRE(dg::ops::write_tuning_table(dir + "/table.txt", t) == DG_SUCCESS);
  std::vector<std::string> messages;
  g_messages = &messages;
  REQUIRE(dg_set_log_callback(collect, nullptr) == DG_SUCCESS);
  int64_t compiled0 = 0, from_disk = 0, hits = 0, compiled1 = 0;
  REQUIRE(dg_jit_get_stats(&compiled0, &from_disk, &hits) == DG_SUCCESS);
  int64_t prepared = -1;
  const char* list = "dense fp8 nt n=7168 k=2048 m=2048\ndense bf16 nt n=256 k=512 m=16\n";
  const dg_status st = dg_prepare_problems(stream, list, &prepared);
  INFO(dg_last_error());
  CHECK(st == DG_SUCCESS);
  CHECK(prepared == 2);
  REQUIRE(dg_jit_get_stats(&compiled1, &from_disk, &hits) == DG_SUCCESS);
  CHECK(compiled1 - compiled0 >= 2);
  // The tuned entry's tile, not the heuristic's, is the one compiled for the FP8 problem.
  const auto tuned = std::find_if(messages.begin(), messages.end(), [](const std::string& m) {
    return m.find("fp8") != std::string::npos && m.find("block 128x96x128") != std::string::npos;
  });
  CHECK(tuned != messages.end());
  // A malformed list names its line; the count is untouched.
  prepared = -1;
  CHECK(dg_prepare_problems(stream, "dense fp8 nt n=7168 k=2048 m=2048\ndense fp8 nt n=7168\n", &prepared) ==
        DG_ERROR_INVALID_ARGUMENT);
  CHECK(std::string(dg_last_error()).find("line 2") != std::string::npos);
  CHECK(prepared == -1);
  CHECK(dg_prepare_problems(stream, nullptr, &prepared) == DG_ERROR_INVALID_ARGUMENT);
  CHECK(std::string(dg_last_error()).find("problems") != std::string::npos);
  CHECK(dg_prepare_problems(nullptr, list, &prepared) == DG_ERROR_INVALID_ARGUMENT);
  CHECK(prepared == -1);
  REQUIRE(dg_set_log_callback(nullptr, nullptr) == DG_SUCCESS);
  g_messages = nullptr;
  dg_stream_destroy(stream);
}

TEST_CASE("tuning table: corrupt, foreign and read-only tables") {
  const std::string dir = temp_dir("foreign");
  std::vector<std::string> messages;
  g_messages = &messages;
  REQUIRE(dg_set_log_callback(collect, nullptr) == DG_SUCCESS);
  const GemmShape s = dense(GemmKind::kFp8_1D2D, 4096, 7168, 2048);
  auto check_ignored = [&](const std::string& name, const std::string& text, const char* says) {
    CAPTURE(name);
    const std::string path = dir + "/" + name;
    write_file(path, text);
    OfflineStream os(path);
    messages.clear();
    GemmConfig c, h;
    {
      const dg::log::Deferred deliver;  // messages reach the callback when this scope ends
      REQUIRE(dg::ops::choose_tuned_gemm_config(os.s(), s, kSms, GemmOverride{}, &c) == DG_SUCCESS);
      REQUIRE(dg::ops::choose_tuned_gemm_config(os.s(), s, kSms, GemmOverride{}, &c) == DG_SUCCESS);
    }
    REQUIRE(dg::ops::choose_gemm_config(s, kSms, GemmOverride{}, &h) == DG_SUCCESS);
    CHECK(same(c, h));
    REQUIRE(messages.size() == 1);  // once, however often the table is consulted
    CHECK(messages[0].find(path) != std::string::npos);
    CHECK(messages[0].find(says) != std::string::npos);
  };
  OfflineStream probe(dir + "/probe");
  TuningTable t = table_for(probe.s());
  t.entries.push_back(entry(s, 128, 96, 4));
  const std::string good = dg::ops::format_tuning_table(t);
  check_ignored("corrupt.txt", good.substr(0, good.size() - 20) + "x\n", "cannot read");
  TuningTable other = t;
  other.gpu = "NVIDIA H100 80GB HBM3";
  check_ignored("gpu.txt", dg::ops::format_tuning_table(other), "NVIDIA H100 80GB HBM3");
  other = t, other.sms = 114;
  check_ignored("sms.txt", dg::ops::format_tuning_table(other), "114 SMs");
  other = t, other.version = "0.6.9";
  check_ignored("version.txt", dg::ops::format_tuning_table(other), "0.6.9");

  // A missing file is quietly no table.
  {
    OfflineStream os(dir + "/missing.txt");
    messages.clear();
    GemmConfig c;
    {
      const dg::log::Deferred deliver;
      REQUIRE(dg::ops::choose_tuned_gemm_config(os.s(), s, kSms, GemmOverride{}, &c) == DG_SUCCESS);
    }
    CHECK(messages.empty());
  }
  // A table in a read-only directory serves.
  const std::string ro = dir + "/ro";
  REQUIRE(mkdir(ro.c_str(), 0755) == 0);
  write_file(ro + "/table.txt", good);
  REQUIRE(chmod((ro + "/table.txt").c_str(), 0444) == 0);
  REQUIRE(chmod(ro.c_str(), 0555) == 0);
  {
    OfflineStream os(ro + "/table.txt");
    GemmConfig c;
    REQUIRE(dg::ops::choose_tuned_gemm_config(os.s(), s, kSms, GemmOverride{}, &c) == DG_SUCCESS);
    CHECK(c.block_n == 96);
  }
  dg_set_log_callback(nullptr, nullptr);
  g_messages = nullptr;
  // A path that cannot be written: an error naming it, the old file untouched.
  const std::string blocked = dir + "/file";
  write_file(blocked, "not a directory");
  CHECK(dg::ops::write_tuning_table(blocked + "/table.txt", t) == DG_ERROR_INVALID_ARGUMENT);
  CHECK(std::string(dg_last_error()).find(blocked) != std::string::npos);
  CHECK(read_file(blocked) == "not a directory");
  chmod(ro.c_str(), 0755);
}

TEST_CASE("problem lists: expansion, defaults and errors naming the line") {
  std::vector<dg::ops::TuneProblem> p;
  REQUIRE(dg::ops::parse_problem_list("# c\n\ndense fp8 nt n=7168 k=2048 m=128,4096  # o\n"
                                      "dense bf16 tn n=256 k=512 m=64 d=f32\n"
                                      "contiguous bf16 n=4096 k=7168 g=8,32 m=200\n"
                                      "masked fp8 n=4096 k=7168 g=32 m=20\n"
                                      "masked fp8 n=4096 k=7168 g=2 m=512 max_m=4096\n",
                                      "problems", &p) == DG_SUCCESS);
  REQUIRE(p.size() == 7);
  CHECK(p[0].shape.m == 128);
  CHECK(p[1].shape.m == 4096);
  CHECK(p[1].line == 3);
  CHECK(p[1].text == "dense fp8 nt m=4096 n=7168 k=2048");
  CHECK(p[2].shape.major_a == Major::kMN);
  CHECK(p[2].shape.major_b == Major::kMN);
  CHECK(p[2].shape.d_dtype == DG_DTYPE_FLOAT32);
  CHECK(p[3].shape.type == GemmType::kMGroupedContiguous);
  CHECK(p[3].shape.m == 8 * 256);
  CHECK(p[3].shape.expected_m == 200);
  CHECK(p[4].shape.num_groups == 32);
  CHECK(p[5].shape.type == GemmType::kMGroupedMasked);
  CHECK(p[5].shape.m == 128);
  CHECK(p[5].shape.expected_m == 20);
  CHECK(p[6].shape.m == 4096);

  // Fused epilogues: the GEMM's N (gate and up), D after SwiGLU, FP8 D with FP32 scales.
  REQUIRE(dg::ops::parse_problem_list("contiguous fp8 n=4096 k=7168 g=8 m=512 epilogue=swiglu_fp8\n"
                                      "masked fp8 n=4096 k=7168 g=32 m=16 epilogue=fp8\n"
                                      "dense bf16 nt n=512 k=256 m=128 epilogue=swiglu\n",
                                      "problems", &p) == DG_SUCCESS);
  REQUIRE(p.size() == 3);
  CHECK(p[0].shape.n == 4096);
  CHECK(p[0].shape.epilogue.act == dg::ops::Activation::kSwiGlu);
  CHECK(p[0].shape.epilogue.scales == dg::ops::DScales::kFp32);
  CHECK(p[0].shape.d_dtype == DG_DTYPE_FLOAT8_E4M3);
  CHECK(p[0].text == "contiguous fp8 g=8 m=512 n=4096 k=7168 epilogue=swiglu_fp8");
  CHECK(p[1].shape.epilogue.act == dg::ops::Activation::kNone);
  CHECK(p[1].shape.d_dtype == DG_DTYPE_FLOAT8_E4M3);
  CHECK(p[2].shape.d_dtype == DG_DTYPE_BFLOAT16);
  CHECK(p[2].shape.epilogue.act == dg::ops::Activation::kSwiGlu);
  for (const dg::ops::TuneProblem& q : p) {
    std::vector<GemmConfig> c;
    CHECK(dg::ops::rank_gemm_configs(q.shape, kSms, GemmOverride{}, dg::ops::hopper_cost_model(), 4, &c) == DG_SUCCESS);
  }

  // K-grouped: the 1D1D recipe (FP8, nt) or BF16 (tn), FP32 D accumulated, every group at K = k.
  REQUIRE(dg::ops::parse_problem_list("kgrouped fp8 n=7168 k=4096 g=8,16 m=4096\n"
                                      "kgrouped bf16 tn n=2048 k=2048 g=4 m=7168\n",
                                      "problems", &p) == DG_SUCCESS);
  REQUIRE(p.size() == 3);
  CHECK(p[0].family == dg::ops::TuneFamily::kKGrouped);
  CHECK(p[0].shape.type == GemmType::kKGrouped);
  CHECK(p[0].shape.kind == dg::ops::GemmKind::kFp8_1D1D);
  CHECK((p[0].shape.major_a == Major::kK && p[0].shape.major_b == Major::kK));
  CHECK((p[0].shape.m == 4096 && p[0].shape.k == 4096 && p[0].shape.num_groups == 8));
  CHECK(p[0].shape.accumulate);
  CHECK(p[0].shape.d_dtype == DG_DTYPE_FLOAT32);
  CHECK(p[1].shape.num_groups == 16);
  CHECK(p[0].text == "kgrouped fp8 g=8 m=4096 n=7168 k=4096");
  CHECK(p[2].shape.kind == dg::ops::GemmKind::kBf16);
  CHECK((p[2].shape.major_a == Major::kMN && p[2].shape.major_b == Major::kMN));
  CHECK(p[2].layout == DG_GEMM_LAYOUT_TN);
  for (const dg::ops::TuneProblem& q : p) {
    std::vector<GemmConfig> c;
    CHECK(dg::ops::rank_gemm_configs(q.shape, kSms, GemmOverride{}, dg::ops::hopper_cost_model(), 4, &c) == DG_SUCCESS);
  }

  const std::vector<std::pair<const char*, const char*>> bad = {
      {"kgrouped fp8 n=7168 k=4000 g=4 m=4096", "k % 128"},
      {"kgrouped fp8 n=7168 k=4096 m=4096", "g="},
      {"kgrouped bf16 nt n=7168 k=4096 g=4 m=4096", "tn (BF16)"},
      {"kgrouped fp8_1d1d n=7168 k=4096 g=4 m=4096", "fp8_1d1d"},
      {"kgrouped fp8 n=7168 k=4096 g=4 m=4096 epilogue=swiglu", "epilogue=swiglu"},
      {"dense fp8 n=4096 k=512 m=1 epilogue=gelu", "epilogue=gelu"},
      {"dense fp8 n=384 k=512 m=1 epilogue=swiglu", "N % 256"},
      {"dense bf16 n=512 k=512 m=1 d=f32 epilogue=fp8", "d=f32"},
      {"dense fp8_1d1d n=512 k=512 m=1 epilogue=fp8", "fp8_1d1d"},
      {"sparse fp8 n=1 k=1 m=1", "line 1"},
      {"\ndense fp4 n=8 k=16 m=1", "line 2"},
      {"dense fp8 nn n=8 k=16 m=1", "nt layout"},
      {"dense fp8 n=8 k=16", "required"},
      {"dense fp8 n=8 k=16 m=0", "m=0"},
      {"dense fp8 n=8 k=16 m=1,,2", "m=1,,2"},
      {"dense fp8 n=8 k=16 m=1 g=4", "g=4"},
      {"masked fp8 n=4096 k=7168 m=8", "g="},
      {"masked fp8 n=4096 k=7168 g=2 m=8 max_m=100", "max_m=100"},
      {"dense fp8 n=8 k=12 m=1", "K % 16"},
      {"# nothing\n", "no problems"},
  };
  for (const auto& [text, says] : bad) {
    CAPTURE(text);
    std::vector<dg::ops::TuneProblem> untouched(1);
    CHECK(dg::ops::parse_problem_list(text, "problems", &untouched) == DG_ERROR_INVALID_ARGUMENT);
    CHECK(std::string(dg_last_error()).find(says) != std::string::npos);
    CHECK(std::string(dg_last_error()).rfind("problems: ", 0) == 0);
    CHECK(untouched.size() == 1);
  }
}

TEST_CASE("problem lists: the committed lists parse and every problem has candidates") {
  const std::pair<const char*, size_t> lists[] = {
      {"deepseek-v3.txt", 97}, {"llama-70b.txt", 56}, {"llama-8b.txt", 56}, {"peer-grouped.txt", 27}, {"peer-k-grouped.txt", 12}, {"peer-bf16.txt", 55}};
  for (const auto& [name, count] : lists) {
    CAPTURE(name);
    const std::string text = read_file(std::string(DG_TEST_DATA_DIR) + "/../../tools/problems/" + name);
    REQUIRE(!text.empty());
    std::vector<dg::ops::TuneProblem> p;
    REQUIRE(dg::ops::parse_problem_list(text, "problems", &p) == DG_SUCCESS);
    CHECK(p.size() == count);
    for (const dg::ops::TuneProblem& q : p) {
      CAPTURE(q.text);
      std::vector<GemmConfig> c;
      CHECK(dg::ops::rank_gemm_configs(q.shape, kSms, GemmOverride{}, dg::ops::hopper_cost_model(), 4, &c) ==
            DG_SUCCESS);
    }
  }
}

TEST_CASE("dg_tune: argument checks leave the outputs untouched") {
  const std::string dir = temp_dir("args");
  const std::string path = dir + "/table.txt";
  OfflineStream os(path);
  const char* list = "dense fp8 nt n=7168 k=2048 m=4096\n";
  int64_t tuned = -7;
  auto check = [&](dg_stream* stream, const char* problems, const dg_tune_options* options, dg_status expected,
                   const char* says) {
    CAPTURE(says);
    CHECK(dg_tune(stream, problems, options, &tuned) == expected);
    CHECK(std::string(dg_last_error()).find(says) != std::string::npos);
    CHECK(tuned == -7);
    CHECK(access(path.c_str(), F_OK) != 0);
  };
  check(nullptr, list, nullptr, DG_ERROR_INVALID_ARGUMENT, "stream");
  check(os.stream, nullptr, nullptr, DG_ERROR_INVALID_ARGUMENT, "problems");
  check(os.stream, "dense fp8 nt n=7168 k=2048\n", nullptr, DG_ERROR_INVALID_ARGUMENT, "problems: line 1");
  dg_tune_options o = DG_TUNE_OPTIONS_INIT;
  o.struct_size = 3;
  check(os.stream, list, &o, DG_ERROR_INVALID_ARGUMENT, "DG_TUNE_OPTIONS_INIT");
  o = DG_TUNE_OPTIONS_INIT;
  o.candidates = 17;
  check(os.stream, list, &o, DG_ERROR_INVALID_ARGUMENT, "options.candidates: 17");
  o = DG_TUNE_OPTIONS_INIT;
  o.repetitions = -1;
  check(os.stream, list, &o, DG_ERROR_INVALID_ARGUMENT, "options.repetitions: -1");
  o = DG_TUNE_OPTIONS_INIT;
  o.replace = 2;
  check(os.stream, list, &o, DG_ERROR_INVALID_ARGUMENT, "options.replace: 2");
  OfflineStream off("off");
  check(off.stream, list, nullptr, DG_ERROR_INVALID_ARGUMENT, "options.table_path");
  // Valid arguments on an offline stream: no GPU to time on.
  check(os.stream, list, nullptr, DG_ERROR_NO_DEVICE, "offline");
  o = DG_TUNE_OPTIONS_INIT;
  o.candidates = 2, o.repetitions = 3, o.table_path = path.c_str();
  check(off.stream, list, &o, DG_ERROR_NO_DEVICE, "offline");
  CHECK(dg_tune(os.stream, list, nullptr, nullptr) == DG_ERROR_NO_DEVICE);
}

TEST_CASE("tuning table: streams reading different tables choose a problem's config apart") {
  const std::string dir = temp_dir("apart");
  const std::string path = dir + "/table.txt";
  const GemmShape s = dense(GemmKind::kFp8_1D2D, 3000, 2112, 7168);
  GemmConfig heuristic;
  REQUIRE(dg::ops::choose_gemm_config(s, kSms, GemmOverride{}, &heuristic) == DG_SUCCESS);
  const int bn = heuristic.block_n == 96 ? 112 : 96;
  OfflineStream untuned("off"), tuned(path), tuned_too(path);
  TuningTable t = table_for(tuned.s());
  t.entries.push_back(entry(s, 128, bn, 4));
  REQUIRE(dg::ops::write_tuning_table(path, t) == DG_SUCCESS);
  CHECK(untuned.s().tuning_key != tuned.s().tuning_key);
  CHECK(tuned.s().tuning_key == tuned_too.s().tuning_key);

  // What a GEMM call does on a config-cache miss, through the cache every call consults.
  auto choose_on = [&](const OfflineStream& os) {
    GemmConfig c;
    const auto choose = [&](const GemmShape& shape, int sms, const GemmOverride& o, GemmConfig* out) {
      return dg::ops::choose_tuned_gemm_config(os.s(), shape, sms, o, out);
    };
    REQUIRE(dg::ops::cached_config(os.s(), s, kSms, GemmOverride{}, choose, &c) == DG_SUCCESS);
    return c;
  };
  // The untuned stream runs the problem first; the tuned one still gets its table's entry.
  CHECK(choose_on(untuned).block_n == heuristic.block_n);
  CHECK(choose_on(tuned).block_n == bn);
  CHECK(choose_on(tuned_too).block_n == bn);
  CHECK(choose_on(untuned).block_n == heuristic.block_n);
  std::remove(path.c_str());
  rmdir(dir.c_str());
}
