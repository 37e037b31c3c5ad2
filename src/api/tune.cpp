// dg_tune (docs/tuning.md): for each problem of a list, the heuristic's best-ranked configs are
// compiled (all problems at once, on several threads), timed on the stream (tune_runner.h), and
// the fastest kept in the device's tuning table. dg_prepare_problems compiles the kernels the
// list's calls run (the table's or the heuristic's), nothing timed.
#include <fmt/format.h>

#include <string>
#include <thread>
#include <vector>

#include "api/tune_runner.h"
#include "ops/gemm_cost_model.h"
#include "ops/gemm_tuning.h"
#include "runtime/config.h"
#include "runtime/device.h"
#include "runtime/log.h"
#include "runtime/options.h"
#include "runtime/status.h"
#include "runtime/stream.h"

namespace {

using dg::ops::GemmConfig;
using dg::ops::TunedEntry;
using dg::ops::TuneProblem;

constexpr int kDefaultCandidates = 4, kMaxCandidates = 16;
constexpr int kDefaultRepetitions = 7, kMaxRepetitions = 100;
constexpr int kMaxCompileThreads = 16;
constexpr double kMicrosecondsPerMillisecond = 1e3;

struct TuneSettings {
  int candidates = kDefaultCandidates, repetitions = kDefaultRepetitions;
  std::string path;
  bool replace = false;
  dg_tune_progress progress = nullptr;
  void* user_data = nullptr;
};

dg_status read_settings(const dg_stream_s& stream, const dg_tune_options* options, TuneSettings* out) {
  dg_tune_options o;
  DG_TRY(dg::read_options(options, dg_tune_options DG_TUNE_OPTIONS_INIT, sizeof(dg_tune_options), "options",
                          "DG_TUNE_OPTIONS_INIT", &o));
  if (o.candidates < 0 || o.candidates > kMaxCandidates)
    return dg::fail(DG_ERROR_INVALID_ARGUMENT, "options.candidates: {} (expected 1..{}, 0 = {})", o.candidates,
                    kMaxCandidates, kDefaultCandidates);
  if (o.repetitions < 0 || o.repetitions > kMaxRepetitions)
    return dg::fail(DG_ERROR_INVALID_ARGUMENT, "options.repetitions: {} (expected 1..{}, 0 = {})", o.repetitions,
                    kMaxRepetitions, kDefaultRepetitions);
  if (o.replace != 0 && o.replace != 1)
    return dg::fail(DG_ERROR_INVALID_ARGUMENT, "options.replace: {} (expected 0 or 1)", o.replace);
  TuneSettings s;
  s.candidates = o.candidates ? o.candidates : kDefaultCandidates;
  s.repetitions = o.repetitions ? o.repetitions : kDefaultRepetitions;
  const bool explicit_path = o.table_path != nullptr && o.table_path[0] != '\0';
  s.path = explicit_path ? std::string(o.table_path) : dg::ops::tuning_table_path(stream);
  if (s.path.empty())
    return dg::fail(DG_ERROR_INVALID_ARGUMENT,
                    "options.table_path: NULL, and the stream has no table of its own (its JIT cache is disabled or "
                    "its DG_CONFIG_TUNING_TABLE is \"off\"): pass the path to write");
  s.replace = o.replace == 1;
  s.progress = o.progress, s.user_data = o.user_data;
  *out = s;
  return DG_SUCCESS;
}

// An SM90 GPU running on all of its SMs (tables are measured and used there).
dg_status check_device(const dg_stream_s& stream) {
  const dg::Device& d = *stream.device;
  int sms = 0;
  DG_TRY(dg::num_sms_of(stream, &sms));
  if (sms != d.sm_count)
    return dg::fail(DG_ERROR_INVALID_ARGUMENT,
                    "stream: an SM cap of {} is in force (DG_CONFIG_NUM_SMS or dg_set_num_sms); tables are tuned and "
                    "used on all {} SMs of {}",
                    sms, d.sm_count, d.name);
  if (d.offline)
    return dg::fail(DG_ERROR_NO_DEVICE, "stream: {} is an offline description; dg_tune times kernels on a GPU", d.name);
  if (d.cc_major != 9)
    return dg::fail(DG_ERROR_UNSUPPORTED, "stream: {} is sm_{}{}; dg_tune tunes the SM90 GEMMs (sm_90)", d.name,
                    d.cc_major, d.cc_minor);
  return DG_SUCCESS;
}

std::string describe_config(const GemmConfig& c, bool fp8) {
  std::string s = fmt::format("{}x{} stages {} wg {}", c.block_m, c.block_n, c.stages, c.math_wg);
  if (c.cluster == 2) s += fmt::format(" cluster 2{}", c.multicast_a ? "a" : "b");
  if (fp8) s += fmt::format(" {}/{}", c.overlap ? "overlap" : "after", c.promote_split);
  if (c.split_k > 1) s += fmt::format(" split_k {}", c.split_k);
  for (int i = 0; i < c.alt_tiles(); ++i) s += fmt::format(" (x{} at some counts)", c.alts[i].block_n);
  return s;
}

// A view of `stream` that reads no tuning table (it shares the CUDA stream and is never destroyed):
// the candidates are compiled and timed on it, so that the heuristic's, which a call makes with no
// config fields, is the heuristic's whatever table the stream reads.
dg_stream_s untabled(const dg_stream_s& stream) {
  dg_stream_s view = stream;
  view.owned = false;
  dg::Config config = dg::config_of(stream);
  config.tuning_table = dg::ops::kTuningTableOff;
  view.tuning_key = dg::tuning_table_key(config);
  view.config = std::move(config);
  return view;
}

// Each problem's candidates (the heuristic's own first) and the options that force them. The
// heuristic's runs with no config fields where it holds count-adaptive tile widths, which no
// override expresses: it is timed as an untuned call runs it.
dg_status candidates_of(const dg_stream_s& stream, const std::vector<TuneProblem>& problems, int count,
                        std::vector<std::vector<GemmConfig>>* configs,
                        std::vector<std::vector<dg_gemm_options>>* options) {
  const dg::ops::Sm90CostModel& model = dg::ops::sm90_cost_model(stream.device->name);
  for (const TuneProblem& p : problems) {
    std::vector<GemmConfig> v;
    if (dg::ops::rank_gemm_configs(p.shape, stream.device->sm_count, dg::ops::GemmOverride{}, model, count, &v) !=
        DG_SUCCESS)
      return dg::fail(DG_ERROR_UNSUPPORTED, "problems: line {}: {}: {}", p.line, p.text, dg::last_error());
    std::vector<dg_gemm_options> o;
    for (const GemmConfig& c : v) {
      const bool heuristic = o.empty() && c.alt_tiles() != 0;
      o.push_back(dg::api::options_for(p, heuristic ? dg::ops::GemmOverride{} : dg::ops::override_for(p.shape, c)));
    }
    configs->push_back(std::move(v));
    options->push_back(std::move(o));
  }
  return DG_SUCCESS;
}

// Threads compiling a list's kernels: one per core, at most kMaxCompileThreads.
int compile_threads() {
  return static_cast<int>(std::min<unsigned>(std::max(1u, std::thread::hardware_concurrency()), kMaxCompileThreads));
}

void report(const TuneSettings& s, int64_t done, int64_t total, const std::string& line) {
  if (s.progress != nullptr) s.progress(done, total, line.c_str(), s.user_data);
  else dg::log::info("dg_tune: {}", line);
}

// Times one problem's candidates and makes its table entry.
dg_status tune_one(dg_stream* stream, const TuneProblem& p, const std::vector<GemmConfig>& configs,
                   const std::vector<dg_gemm_options>& options, int reps, dg::api::TuneBuffers* buffers,
                   TunedEntry* entry, std::string* line) {
  dg::api::TuneCall call;
  DG_TRY(dg::api::bind_problem(p, buffers, &call));
  dg::api::ConfigTimes times;
  if (const dg_status st = dg::api::time_configs(stream, call, options, reps, buffers, &times); st != DG_SUCCESS)
    return dg::fail(st, "problems: line {}: {}: {}", p.line, p.text, dg::last_error());
  const std::vector<double>& ms = times.mean_ms;
  size_t fastest = 0;
  const size_t best = dg::api::tuned_winner(times, &fastest);
  entry->shape = p.shape;
  entry->config = dg::ops::override_for(p.shape, configs[best]);
  entry->tuned_us = ms[best] * kMicrosecondsPerMillisecond;
  entry->heuristic_us = ms[0] * kMicrosecondsPerMillisecond;
  *line = fmt::format("{}: {} {:.1f} us; heuristic {} {:.1f} us ({:+.1f}%)", p.text,
                      describe_config(configs[best], p.fp8), entry->tuned_us, describe_config(configs[0], p.fp8),
                      entry->heuristic_us, (entry->heuristic_us / entry->tuned_us - 1.0) * 100.0);
  if (fastest != best)
    *line += fmt::format("; {} ran {:.1f}% faster over {} sample(s), under the {:.0f}% (and {:.0f} standard errors of "
                         "its per-sample leads) a table entry needs",
                         describe_config(configs[fastest], p.fp8), (ms[0] / ms[fastest] - 1.0) * 100.0,
                         times.sample_ms.size(), dg::api::kTunedMinLead * 100.0, dg::api::kTunedLeadErrors);
  return DG_SUCCESS;
}

bool same_problem(const TunedEntry& a, const TunedEntry& b) {
  return dg::ops::same_tuning_key(a.shape, b.shape) && dg::ops::bucket_ratio(a.shape, b.shape) == 1.0;
}

// The table to write: the existing one's other entries (unless replacing), then the new ones (a
// problem listed twice keeps its last result).
dg_status write_table(const dg_stream_s& stream, const TuneSettings& s, const std::vector<TunedEntry>& tuned) {
  const dg::Device& d = *stream.device;
  auto table = std::make_shared<dg::ops::TuningTable>();
  table->gpu = d.name, table->sms = d.sm_count, table->version = dg::ops::tuning_library_version();
  std::vector<TunedEntry> fresh;
  for (const TunedEntry& e : tuned) {
    for (TunedEntry& f : fresh)
      if (same_problem(e, f)) f = e;
    bool seen = false;
    for (const TunedEntry& f : fresh) seen = seen || same_problem(e, f);
    if (!seen) fresh.push_back(e);
  }
  if (!s.replace)
    if (const auto old = dg::ops::read_tuning_table(d, s.path))
      for (const TunedEntry& e : old->entries) {
        bool replaced = false;
        for (const TunedEntry& f : fresh) replaced = replaced || same_problem(e, f);
        if (!replaced) table->entries.push_back(e);
      }
  table->entries.insert(table->entries.end(), fresh.begin(), fresh.end());
  DG_TRY(dg::ops::write_tuning_table(s.path, *table));
  const size_t entries = table->entries.size();
  dg::ops::publish_tuning_table(d, s.path, std::move(table));
  report(s, static_cast<int64_t>(tuned.size()), static_cast<int64_t>(tuned.size()),
         fmt::format("wrote {} ({} tuned problems)", s.path, entries));
  return DG_SUCCESS;
}

dg_status tune(dg_stream* stream, const char* problems, const dg_tune_options* options, int64_t* num_tuned) {
  DG_TRY(dg::check_stream(stream, "stream"));
  if (problems == nullptr)
    return dg::fail(DG_ERROR_INVALID_ARGUMENT, "problems: is NULL (expected the text of a problem list)");
  TuneSettings s;
  DG_TRY(read_settings(*stream, options, &s));
  std::vector<TuneProblem> list;
  DG_TRY(dg::ops::parse_problem_list(problems, "problems", &list));
  DG_TRY(check_device(*stream));
  dg_stream_s timing_stream = untabled(*stream);
  std::vector<std::vector<GemmConfig>> configs;
  std::vector<std::vector<dg_gemm_options>> opts;
  DG_TRY(candidates_of(*stream, list, s.candidates, &configs, &opts));
  dg::api::Footprint max;
  for (const TuneProblem& p : list) {
    dg::api::Footprint f;
    DG_TRY(dg::api::footprint_of(p, &f));
    max = dg::api::max_of(max, f);
  }
  const int threads = compile_threads();
  const int64_t total = static_cast<int64_t>(list.size());
  report(s, 0, total, fmt::format("compiling the candidates of {} problems on {} threads", total, threads));
  DG_TRY(dg::api::prepare_all(&timing_stream, list, opts, threads));
  dg::ContextScope scope;  // the buffers are allocated and freed in the device's context
  DG_TRY(scope.enter(*stream->device));
  std::vector<TunedEntry> tuned(list.size());
  {
    dg::api::TuneBuffers buffers;
    DG_TRY(dg::api::allocate_buffers(*stream->device, max, &buffers));
    for (size_t i = 0; i < list.size(); ++i) {
      std::string line;
      DG_TRY(tune_one(&timing_stream, list[i], configs[i], opts[i], s.repetitions, &buffers, &tuned[i], &line));
      report(s, static_cast<int64_t>(i) + 1, total, fmt::format("[{}/{}] {}", i + 1, total, line));
    }
  }
  DG_TRY(write_table(*stream, s, tuned));
  if (num_tuned != nullptr) *num_tuned = total;
  return DG_SUCCESS;
}

// The options a call of `p` passes by default (the recipe its kind names, no config fields).
dg_gemm_options call_options(const TuneProblem& p) {
  dg_gemm_options o = DG_GEMM_OPTIONS_INIT;
  if (p.shape.kind == dg::ops::GemmKind::kFp8_1D1D) o.recipe = DG_FP8_RECIPE_1D1D;
  return o;
}

dg_status prepare_problems(dg_stream* stream, const char* problems, int64_t* num_prepared) {
  DG_TRY(dg::check_stream(stream, "stream"));
  if (problems == nullptr)
    return dg::fail(DG_ERROR_INVALID_ARGUMENT, "problems: is NULL (expected the text of a problem list)");
  std::vector<TuneProblem> list;
  DG_TRY(dg::ops::parse_problem_list(problems, "problems", &list));
  std::vector<std::vector<dg_gemm_options>> opts;
  for (const TuneProblem& p : list) opts.push_back({call_options(p)});
  DG_TRY(dg::api::prepare_all(stream, list, opts, compile_threads()));
  if (num_prepared != nullptr) *num_prepared = static_cast<int64_t>(list.size());
  return DG_SUCCESS;
}

}  // namespace

extern "C" {

DG_API dg_status dg_prepare_problems(dg_stream* stream, const char* problems, int64_t* num_prepared) {
  DG_API_GUARD(return prepare_problems(stream, problems, num_prepared);)
}

DG_API dg_status dg_tune(dg_stream* stream, const char* problems, const dg_tune_options* options, int64_t* num_tuned) {
  DG_API_GUARD(return tune(stream, problems, options, num_tuned);)
}

}  // extern "C"
