// dg_tune on the GPU (docs/tuning.md): a two-problem list is tuned into a table (progress reported,
// winners among the heuristic's candidates, no slower than its choice), and later calls of nearby
// problems on a stream that reads a table run the tuned configs (seen through DG_PRINT_CONFIGS);
// contiguous problems tune on their samples of unequal groups; dg_prepare_problems leaves a list's
// calls nothing to compile or load.
#include <doctest/doctest.h>
#include <stdlib.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "dg.h"
#include "gpu_fixture.h"
#include "ops/gemm.h"
#include "ops/gemm_cost_model.h"
#include "ops/gemm_tuning.h"

namespace {

using dg::ops::GemmConfig;
using dg::ops::GemmOverride;
using dg::ops::TunedEntry;
using dg::ops::TuningTable;
using dg::test::DeviceBuffer;
using dg::test::Gpu;
using dg::test::Tensor;

struct Progress {
  std::vector<int64_t> done;
  std::vector<std::string> lines;
};
void on_progress(int64_t done, int64_t total, const char* line, void* user) {
  auto* p = static_cast<Progress*>(user);
  p->done.push_back(done);
  p->lines.push_back(std::to_string(done) + "/" + std::to_string(total) + " " + line);
}

std::vector<std::string>* g_configs = nullptr;
void on_log(int32_t, const char* message, void*) {
  if (g_configs != nullptr && std::strstr(message, "DG_PRINT_CONFIGS: ") == message)
    g_configs->push_back(message + std::strlen("DG_PRINT_CONFIGS: "));
}

dg_stream* stream_with_table(const std::string& table, bool print_configs) {
  dg_config* config = nullptr;
  REQUIRE(dg_config_create(&config) == DG_SUCCESS);
  REQUIRE(dg_config_set_string(config, DG_CONFIG_TUNING_TABLE, table.c_str()) == DG_SUCCESS);
  REQUIRE(dg_config_set_int(config, DG_CONFIG_PRINT_CONFIGS, print_configs ? 1 : 0) == DG_SUCCESS);
  dg_stream* stream = nullptr;
  REQUIRE(dg_stream_create(&stream, 0, nullptr, DG_STREAM_CREATE, config) == DG_SUCCESS);
  dg_config_destroy(config);
  return stream;
}

// Random non-zero bytes: E4M3 values 0.5 .. ~2 with random signs, or FP32 scales 0.5 .. 2.
void fill(DeviceBuffer& buf, bool scales, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<unsigned char> host(buf.bytes());
  if (scales) {
    for (size_t i = 0; i + 4 <= host.size(); i += 4) {
      const float v = 0.5f + static_cast<float>(rng() % 1536) / 1024.0f;
      std::memcpy(&host[i], &v, 4);
    }
  } else {
    for (unsigned char& c : host) c = static_cast<unsigned char>(((rng() & 1u) << 7) | 0x30u | (rng() & 0xFu));
  }
  buf.upload(host);
}

// The config the tuned entry `e` gives the problem `s` (what DG_PRINT_CONFIGS must show).
std::string tuned_description(const dg::ops::GemmShape& s, const TunedEntry& e, const dg::Device& device) {
  GemmConfig c;
  REQUIRE(dg::ops::choose_gemm_config(s, device.sm_count, e.config, dg::ops::sm90_cost_model(device.name), &c) ==
          DG_SUCCESS);
  return dg::ops::describe(s, c);
}

std::string heuristic_description(const dg::ops::GemmShape& s, const dg::Device& device) {
  GemmConfig c;
  REQUIRE(dg::ops::choose_gemm_config(s, device.sm_count, GemmOverride{}, dg::ops::sm90_cost_model(device.name), &c) ==
          DG_SUCCESS);
  return dg::ops::describe(s, c);
}

// What DG_PRINT_CONFIGS shows for a call `s` that entry `e` covers: the heuristic's choice for `s`
// where the heuristic won the tune (TunedEntry::keeps_heuristic), else the entry's config.
std::string covered_description(const dg::ops::GemmShape& s, const TunedEntry& e, const dg::Device& device) {
  return e.keeps_heuristic() ? heuristic_description(s, device) : tuned_description(s, e, device);
}

// Sets entry `i` of `table` to the lowest-ranked of the heuristic's `count` candidates for its problem
// that gives `call` another config than the heuristic would, as a winner (timed below the heuristic's
// choice), so that a table's effect on `call` shows whichever candidate won the tune. False when none does.
bool force_other_config(TuningTable* table, size_t i, const dg::ops::GemmShape& call, const dg::Device& device,
                        int count) {
  TunedEntry& e = table->entries[i];
  e.tuned_us = 0.9 * e.heuristic_us;
  const std::string heuristic = heuristic_description(call, device);
  std::vector<GemmConfig> ranked;
  REQUIRE(dg::ops::rank_gemm_configs(e.shape, device.sm_count, GemmOverride{}, dg::ops::sm90_cost_model(device.name),
                                     count, &ranked) == DG_SUCCESS);
  for (auto c = ranked.rbegin(); c != ranked.rend(); ++c) {
    e.config = dg::ops::override_for(e.shape, *c);
    if (tuned_description(call, e, device) != heuristic) return true;
  }
  return false;
}

// A dense FP8 1D2D call's operands on the GPU: random non-zero A, B and scales (SFA MN-major,
// TMA-aligned), D poisoned.
struct DenseFp8Call {
  DenseFp8Call(const Gpu& gpu, int64_t m, int64_t n, int64_t k, uint32_t seed)
      : kb((k + 127) / 128), m4((m + 3) / 4 * 4), a(gpu.device, m * k), b(gpu.device, n * k),
        sfa(gpu.device, m4 * kb * 4), sfb(gpu.device, ((n + 127) / 128) * kb * 4), d(gpu.device, m * n * 2),
        ta(a.data(), DG_DTYPE_FLOAT8_E4M3, {m, k}), tb(b.data(), DG_DTYPE_FLOAT8_E4M3, {n, k}),
        tsfa(sfa.data(), DG_DTYPE_FLOAT32, {m, kb}, {1, m4}),
        tsfb(sfb.data(), DG_DTYPE_FLOAT32, {(n + 127) / 128, kb}), td(d.data(), DG_DTYPE_BFLOAT16, {m, n}) {
    fill(a, false, seed), fill(b, false, seed + 1), fill(sfa, true, seed + 2), fill(sfb, true, seed + 3);
    d.poison();
  }
  dg_status run(dg_stream* stream) const {
    return dg_fp8_gemm_nt(stream, ta.t, tsfa.t, tb.t, tsfb.t, td.t, nullptr, nullptr);
  }
  // Elements of D the call left poisoned (NaN).
  size_t poisoned() {
    size_t n = 0;
    for (uint16_t v : d.download<uint16_t>()) n += v == 0xffff;
    return n;
  }

  int64_t kb, m4;
  DeviceBuffer a, b, sfa, sfb, d;
  Tensor ta, tb, tsfa, tsfb, td;
};

// A fresh directory under /tmp.
std::string temp_dir(const char* tag) {
  std::string tmpl = std::string("/tmp/") + tag + "_XXXXXX";
  REQUIRE(mkdtemp(tmpl.data()) != nullptr);
  return tmpl;
}

// The table at `path` (it must parse), and its text.
TuningTable read_table(const std::string& path, std::string* text) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  *text = ss.str();
  TuningTable table;
  std::string why;
  REQUIRE_MESSAGE(dg::ops::parse_tuning_table(*text, &table, &why), why);
  return table;
}

// Tunes `list` on `tuner` (`candidates` configs, `reps` runs each), expecting `problems` problems
// tuned, and reads the table it wrote at `path` (its text into `text`).
TuningTable tune_into(dg_stream* tuner, const char* list, int candidates, int reps, int64_t problems,
                      const std::string& path, std::string* text) {
  dg_tune_options options = DG_TUNE_OPTIONS_INIT;
  options.candidates = candidates, options.repetitions = reps;
  int64_t tuned = -1;
  REQUIRE_MESSAGE(dg_tune(tuner, list, &options, &tuned) == DG_SUCCESS, dg_last_error());
  CHECK(tuned == problems);
  return read_table(path, text);
}

}  // namespace

TEST_CASE("dg_tune: tunes a list into a table that later calls use") {
  Gpu gpu;
  if (!gpu.sm90()) return;
  const std::string dir = temp_dir("dg_tune_gpu"), path = dir + "/table.txt";
  dg_stream* tuner = stream_with_table(path, false);
  const int sms = gpu.device->sm_count;

  // 1. Tune two problems: dense FP8 M = 256, masked FP8 decode (8 experts, 16 rows each).
  const char* list = "dense fp8 nt n=2112 k=7168 m=256\nmasked fp8 n=4096 k=7168 g=8 m=16  # decode\n";
  Progress progress;
  dg_tune_options options = DG_TUNE_OPTIONS_INIT;
  options.candidates = 3, options.repetitions = 5, options.progress = on_progress, options.user_data = &progress;
  int64_t tuned = -1;
  REQUIRE_MESSAGE(dg_tune(tuner, list, &options, &tuned) == DG_SUCCESS, dg_last_error());
  CHECK(tuned == 2);
  REQUIRE(progress.done.size() == 4);  // the compile line, one per problem, the table written
  CHECK(progress.done[0] == 0);
  CHECK(progress.done[2] == 2);
  CHECK(progress.lines[3].find(path) != std::string::npos);
  CHECK(progress.lines[1].find("dense fp8 nt m=256 n=2112 k=7168") != std::string::npos);
  for (const std::string& l : progress.lines) MESSAGE(l);

  std::string text;
  TuningTable table = read_table(path, &text);
  CHECK(table.gpu == gpu.device->name);
  CHECK(table.sms == sms);
  REQUIRE(table.entries.size() == 2);
  std::vector<dg::ops::TuneProblem> problems;
  REQUIRE(dg::ops::parse_problem_list(list, "list", &problems) == DG_SUCCESS);
  for (size_t i = 0; i < 2; ++i) {
    const TunedEntry& e = table.entries[i];
    CAPTURE(i);
    CHECK(dg::ops::same_tuning_key(e.shape, problems[i].shape));
    CHECK(e.tuned_us > 0);
    CHECK(e.tuned_us <= e.heuristic_us);
    // The winner is one of the heuristic's three candidates.
    std::vector<GemmConfig> ranked;
    REQUIRE(dg::ops::rank_gemm_configs(e.shape, sms, GemmOverride{}, dg::ops::sm90_cost_model(gpu.device->name), 3,
                                       &ranked) == DG_SUCCESS);
    bool found = false;
    for (const GemmConfig& c : ranked) {
      const GemmOverride o = dg::ops::override_for(e.shape, c);
      found = found || std::memcmp(&o, &e.config, sizeof(GemmOverride)) == 0;
    }
    CHECK(found);
  }

  // 2. Force the dense entry to a candidate that gives M = 320 another config than the heuristic's,
  // so that the table's effect shows whatever won, and read the table through a second stream.
  const int64_t m = 320, n = 2112, k = 7168;
  dg::ops::GemmShape dense_shape = table.entries[0].shape;
  dense_shape.m = m;
  const std::string heuristic_320 = heuristic_description(dense_shape, *gpu.device);
  REQUIRE(force_other_config(&table, 0, dense_shape, *gpu.device, 4));
  const std::string forced = dir + "/forced.txt";
  REQUIRE(dg::ops::write_tuning_table(forced, table) == DG_SUCCESS);
  dg_stream* user = stream_with_table(forced, true);

  // Dense M = 320: not tuned, within a factor of 1.5 of the tuned M = 256.
  DenseFp8Call dense(gpu, m, n, k, 1);
  std::vector<std::string> configs;
  g_configs = &configs;
  REQUIRE(dg_set_log_callback(on_log, nullptr) == DG_SUCCESS);
  REQUIRE(dense.run(user) == DG_SUCCESS);

  // Masked, expected_m 24: within a factor of 1.5 of the tuned 16 (its winner, as tuned).
  const int64_t g = 8, max_m = 128, mn = 4096, mk = 7168, mkb = mk / 128, em = 24;
  DeviceBuffer ma(gpu.device, g * max_m * mk), mb(gpu.device, g * mn * mk), msfa(gpu.device, g * max_m * mkb * 4),
      msfb(gpu.device, g * (mn / 128) * mkb * 4), md(gpu.device, g * max_m * mn * 2), mm(gpu.device, g * 4);
  fill(ma, false, 5), fill(mb, false, 6), fill(msfa, true, 7), fill(msfb, true, 8);
  mm.upload(std::vector<int32_t>{24, 20, 28, 16, 30, 24, 22, 26});
  Tensor tma(ma.data(), DG_DTYPE_FLOAT8_E4M3, {g, max_m, mk}), tmb(mb.data(), DG_DTYPE_FLOAT8_E4M3, {g, mn, mk});
  Tensor tmsfa(msfa.data(), DG_DTYPE_FLOAT32, {g, max_m, mkb}, {max_m * mkb, 1, max_m});
  Tensor tmsfb(msfb.data(), DG_DTYPE_FLOAT32, {g, mn / 128, mkb}), tmd(md.data(), DG_DTYPE_BFLOAT16, {g, max_m, mn});
  Tensor tmm(mm.data(), DG_DTYPE_INT32, {g});
  REQUIRE(dg_m_grouped_fp8_gemm_nt_masked(user, tma.t, tmsfa.t, tmb.t, tmsfb.t, tmd.t, tmm.t, em, nullptr) ==
          DG_SUCCESS);
  REQUIRE(dg_stream_synchronize(user) == DG_SUCCESS);
  dg_set_log_callback(nullptr, nullptr);
  g_configs = nullptr;

  dg::ops::GemmShape masked_shape = table.entries[1].shape;
  masked_shape.m = max_m, masked_shape.expected_m = em;
  REQUIRE(configs.size() == 2);
  CHECK(configs[0] == tuned_description(dense_shape, table.entries[0], *gpu.device));
  CHECK(configs[0] != heuristic_320);
  CHECK(configs[1] == covered_description(masked_shape, table.entries[1], *gpu.device));
  // The output is written everywhere (no NaN poison left in D).
  CHECK(dense.poisoned() == 0);

  dg_stream_destroy(user);
  dg_stream_destroy(tuner);
  unlink(path.c_str()), unlink(forced.c_str()), rmdir(dir.c_str());
}

TEST_CASE("dg_tune: problems with fused epilogues run their epilogue and key their table lines on it") {
  Gpu gpu;
  if (!gpu.sm90()) return;
  const std::string dir = temp_dir("dg_tune_fused"), path = dir + "/table.txt";
  dg_stream* tuner = stream_with_table(path, false);
  // The MoE gate/up GEMM (SwiGLU into FP8), a masked FP8 D, a dense BF16 SwiGLU.
  const char* list =
      "contiguous fp8 n=512 k=512 g=2 m=200 epilogue=swiglu_fp8\n"
      "masked fp8 n=512 k=256 g=4 m=16 epilogue=fp8\n"
      "dense bf16 nt n=768 k=256 m=130 epilogue=swiglu\n";
  std::string text;
  const TuningTable table = tune_into(tuner, list, 2, 3, 3, path, &text);
  std::vector<dg::ops::TuneProblem> problems;
  REQUIRE(dg::ops::parse_problem_list(list, "list", &problems) == DG_SUCCESS);
  REQUIRE(table.entries.size() == 3);
  for (size_t i = 0; i < 3; ++i) {
    CAPTURE(i);
    const TunedEntry& e = table.entries[i];
    CHECK(dg::ops::same_tuning_key(e.shape, problems[i].shape));
    CHECK(e.shape.epilogue.active());
    CHECK(e.tuned_us > 0);
    CHECK(e.tuned_us <= e.heuristic_us);
  }
  CHECK(text.find(" e4m3 nt contiguous 0 swiglu 512 512 ") != std::string::npos);
  dg_stream_destroy(tuner);
  unlink(path.c_str()), rmdir(dir.c_str());
}

TEST_CASE("dg_tune: K-grouped problems tune into entries that calls with other K and an empty group use") {
  Gpu gpu;
  if (!gpu.sm90()) return;
  const std::string dir = temp_dir("dg_tune_kg"), path = dir + "/table.txt";
  dg_stream* tuner = stream_with_table(path, false);
  const int64_t m = 512, n = 1024;

  std::string text;
  TuningTable table = tune_into(tuner, "kgrouped fp8 n=1024 k=1024 g=4 m=512\n", 3, 5, 1, path, &text);
  REQUIRE(table.entries.size() == 1);
  const TunedEntry& e = table.entries[0];
  CHECK(e.shape.type == dg::ops::GemmType::kKGrouped);
  CHECK((e.shape.num_groups == 4 && e.shape.k == 1024 && e.shape.m == m && e.shape.n == n && e.shape.accumulate));
  CHECK(e.tuned_us > 0);
  CHECK(e.tuned_us <= e.heuristic_us);

  // The call: K 1024, 0, 896, 1152 (three groups launched, mean K 1024), D += the products (C = D).
  const std::vector<int64_t> ks = {1024, 0, 896, 1152};
  const int64_t g = 4, k_all = 3072, kb = k_all / 128;
  dg::ops::GemmShape call = e.shape;
  call.num_groups = 3;
  const std::string heuristic = heuristic_description(call, *gpu.device);
  REQUIRE(force_other_config(&table, 0, call, *gpu.device, 3));
  const std::string forced = dir + "/forced.txt";
  REQUIRE(dg::ops::write_tuning_table(forced, table) == DG_SUCCESS);
  dg_stream* user = stream_with_table(forced, true);

  DeviceBuffer a(gpu.device, m * k_all), b(gpu.device, n * k_all), sfa(gpu.device, m * kb * 4),
      sfb(gpu.device, n * kb * 4), d(gpu.device, g * m * n * 4);
  fill(a, false, 11), fill(b, false, 12), fill(sfa, true, 13), fill(sfb, true, 14);
  d.upload(std::vector<float>(static_cast<size_t>(g * m * n), 0.0f));
  Tensor ta(a.data(), DG_DTYPE_FLOAT8_E4M3, {m * k_all}), tb(b.data(), DG_DTYPE_FLOAT8_E4M3, {n * k_all});
  Tensor tsfa(sfa.data(), DG_DTYPE_FLOAT32, {m, kb}, {1, m}), tsfb(sfb.data(), DG_DTYPE_FLOAT32, {n, kb}, {1, n});
  Tensor td(d.data(), DG_DTYPE_FLOAT32, {g, m, n});
  std::vector<std::string> configs;
  g_configs = &configs;
  REQUIRE(dg_set_log_callback(on_log, nullptr) == DG_SUCCESS);
  dg_gemm_options o = DG_GEMM_OPTIONS_INIT;
  o.recipe = DG_FP8_RECIPE_1D1D;
  REQUIRE_MESSAGE(dg_k_grouped_fp8_gemm_nt_contiguous(user, ta.t, tsfa.t, tb.t, tsfb.t, td.t, td.t, ks.data(), g,
                                                      nullptr, &o) == DG_SUCCESS,
                  dg_last_error());
  REQUIRE(dg_stream_synchronize(user) == DG_SUCCESS);
  dg_set_log_callback(nullptr, nullptr);
  g_configs = nullptr;
  REQUIRE(!configs.empty());
  CHECK(configs.back() == tuned_description(call, table.entries[0], *gpu.device));
  CHECK(configs.back() != heuristic);
  // Every launched group's D is written (finite, not all zero); the empty group's stays as C was.
  const std::vector<float> out = d.download<float>();
  for (int64_t q = 0; q < g; ++q) {
    CAPTURE(q);
    size_t finite = 0, zero = 0;
    for (int64_t i = q * m * n; i < (q + 1) * m * n; ++i) {
      finite += std::isfinite(out[static_cast<size_t>(i)]);
      zero += out[static_cast<size_t>(i)] == 0.0f;
    }
    CHECK(finite == size_t(m * n));
    CHECK(zero == (ks[static_cast<size_t>(q)] == 0 ? size_t(m * n) : size_t(0)));
  }
  dg_stream_destroy(user);
  dg_stream_destroy(tuner);
  unlink(path.c_str()), unlink(forced.c_str()), rmdir(dir.c_str());
}

// Contiguous problems are timed on samples of unequal groups (api::contiguous_sample_rows) in the
// list's rows of A: every sample's layout must launch, and the entry keys the problem as listed.
TEST_CASE("dg_tune: a contiguous problem tunes on unequal groups into an entry keyed as listed") {
  Gpu gpu;
  if (!gpu.sm90()) return;
  const std::string dir = temp_dir("dg_tune_cont"), path = dir + "/table.txt";
  dg_stream* tuner = stream_with_table(path, false);
  const char* list = "contiguous fp8 n=1024 k=1024 g=4 m=300\ncontiguous bf16 n=1024 k=512 g=5 m=1000\n";
  std::string text;
  const TuningTable table = tune_into(tuner, list, 3, 3, 2, path, &text);
  std::vector<dg::ops::TuneProblem> problems;
  REQUIRE(dg::ops::parse_problem_list(list, "list", &problems) == DG_SUCCESS);
  REQUIRE(table.entries.size() == 2);
  for (size_t i = 0; i < 2; ++i) {
    const TunedEntry& e = table.entries[i];
    CAPTURE(i);
    CHECK(e.shape.type == dg::ops::GemmType::kMGroupedContiguous);
    CHECK(dg::ops::same_tuning_key(e.shape, problems[i].shape));
    CHECK(e.tuned_us > 0);
    CHECK(e.tuned_us <= e.heuristic_us);
  }
  dg_stream_destroy(tuner);
  unlink(path.c_str()), rmdir(dir.c_str());
}

TEST_CASE("dg_prepare_problems: a prepared problem's call compiles and loads nothing more") {
  Gpu gpu;
  if (!gpu.sm90()) return;
  // A table path with no table: the heuristic's configs, as the calls below choose them.
  const std::string dir = temp_dir("dg_prepare_gpu");
  dg_stream* stream = stream_with_table(dir + "/none.txt", false);
  // Shapes no other test runs, so that their kernels are this process's to compile.
  const int64_t m = 272, n = 1408, k = 4480;
  const std::string list = "dense fp8 nt n=" + std::to_string(n) + " k=" + std::to_string(k) +
                           " m=" + std::to_string(m) + "\n";
  int64_t prepared = -1, compiled0 = 0, loaded0 = 0, compiled1 = 0, loaded1 = 0, hits = 0;
  REQUIRE_MESSAGE(dg_prepare_problems(stream, list.c_str(), &prepared) == DG_SUCCESS, dg_last_error());
  CHECK(prepared == 1);
  REQUIRE(dg_jit_get_stats(&compiled0, &loaded0, &hits) == DG_SUCCESS);
  DenseFp8Call call(gpu, m, n, k, 11);
  REQUIRE(call.run(stream) == DG_SUCCESS);
  REQUIRE(dg_stream_synchronize(stream) == DG_SUCCESS);
  REQUIRE(dg_jit_get_stats(&compiled1, &loaded1, &hits) == DG_SUCCESS);
  CHECK(compiled1 == compiled0);
  CHECK(loaded1 == loaded0);
  CHECK(call.poisoned() == 0);
  dg_stream_destroy(stream);
  rmdir(dir.c_str());
}
