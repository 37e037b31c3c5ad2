// Per-device tuning of SM90 GEMM configs (docs/tuning.md): the heuristic's ranked candidates, the
// tuning table (a versioned text file keyed by GPU name, SM count and libdg version; one line per
// tuned problem), its lookup by nearest tuned bucket (M), and the config choice on a config-cache
// miss that consults it. The problem lists dg_tune reads are parsed here too; the timing runs in
// src/api/tune.cpp.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "ops/gemm.h"
#include "runtime/stream.h"

namespace dg::ops {

// ---- candidates (gemm_heuristic.cpp) ------------------------------------------------------------

// The heuristic's `count` best-ranked distinct configs for `s` (the search choose_gemm_config
// runs, ranked by `model`): choose_gemm_config's own answer first, then by estimate the cheapest
// config of each tile not yet ranked (block_m x block_n, split_k), then the cheapest remaining
// variants (stages, promotion, cluster: at large M also the CTA pairs the heuristic takes only on
// request) of ranked tiles; from 5 configs on, the last is the cheapest CTA pair where no other
// slot holds one. Fewer when fewer are legal. Fails as choose_gemm_config does.
dg_status rank_gemm_configs(const GemmShape& s, int num_sms, const GemmOverride& o, const Sm90CostModel& model,
                            int count, std::vector<GemmConfig>* out);

// The override with which choose_gemm_config picks `c` again for `s` (every template parameter
// explicit, the tiled kernel).
GemmOverride override_for(const GemmShape& s, const GemmConfig& c);

// Whether `o` sets any kernel-config field (then the caller's choice wins over a tuning table).
bool has_config_override(const GemmOverride& o);

// The config a tuning table's entry (`entry`, an override_for) runs for `s` on a call with options
// `o` (no config fields; its SM cap is kept): the entry's tile forced, except where that is the
// heuristic's own choice, which runs as the heuristic has it, its count-adaptive tile widths included
// (dg_tune times the heuristic's candidate as an untuned call runs it). Fails as choose_gemm_config.
dg_status choose_entry_config(const GemmShape& s, int num_sms, const GemmOverride& entry, const GemmOverride& o,
                              const Sm90CostModel& model, GemmConfig* out);

// ---- the tuning table ---------------------------------------------------------------------------

// The value of DG_TUNING_TABLE / DG_CONFIG_TUNING_TABLE that turns tables off.
constexpr const char* kTuningTableOff = "off";

// Format 2 adds each line's fused epilogue (EPILOGUE and D e4m3); format 1 tables are still read.
constexpr int kTuningFormatVersion = 2;
// A problem between tuned ones takes the config of the nearest tuned M (by ratio) of the same
// (kind, layout, type, N, K, G, D dtype, accumulation) when that M is within this factor: lists
// tuned at powers of two cover every M between their buckets (within sqrt(2) of one) and half a
// step past their ends. A factor of 2 carried the ends too far: contiguous G 8 at 4096 rows per
// group with the 2048 row config ran 1-9% slower than the heuristic (H200, docs/tuning.md).
constexpr double kMaxBucketRatio = 1.5;

struct TunedEntry {
  GemmShape shape;    // the tuned problem (m: rows of A, or max_m for masked calls)
  GemmOverride config;  // the winner, every field explicit (override_for)
  double tuned_us = 0, heuristic_us = 0;  // medians measured for the winner and the heuristic's choice
  // The heuristic's choice won (no candidate led it by dg_tune's margin): calls this entry covers
  // run the heuristic's choice for their own shape, not the config it chose at the tuned one
  // (the entry's config), which another M in the bucket can run slower.
  bool keeps_heuristic() const { return tuned_us >= heuristic_us; }
};

struct TuningTable {
  std::string gpu;      // the device name, e.g. "NVIDIA H200"
  int sms = 0;          // the device's SM count
  std::string version;  // libdg's "MAJOR.MINOR.PATCH"
  std::vector<TunedEntry> entries;
};

// libdg's version as tables record it.
std::string tuning_library_version();

// The file's text (docs/tuning.md#the-table-file).
std::string format_tuning_table(const TuningTable& t);

// Parses a table's text; false with `why` (naming the line) when it is not a well-formed table.
bool parse_tuning_table(std::string_view text, TuningTable* t, std::string* why);

// The size the bucket distance is measured on: expected_m for M-grouped problems, the groups' mean K
// for K-grouped ones (a weight gradient's K, the tokens routed to each expert, changes from call to
// call while M and N do not), else m.
int64_t bucket_of(const GemmShape& s);

// Whether two problems share everything but the bucket (the fields a table line keys on, the fused
// epilogue included: SwiGLU and an FP8 D with FP32 scales; calls with a bias or packed UE8M0 scales
// never match a line). K-grouped problems key on M and N; their K and group count are the bucket.
bool same_tuning_key(const GemmShape& a, const GemmShape& b);

// How far apart two problems of one key are (>= 1; 1 for the same problem): the ratio of their
// buckets, for K-grouped problems the larger of that and the ratio of their group counts (a call
// with empty groups launches only the others).
double bucket_ratio(const GemmShape& a, const GemmShape& b);

// The entry for `s`: its exact bucket, else the nearest tuned bucket within kMaxBucketRatio (the
// smaller M on a tie); nullptr when none.
const TunedEntry* find_tuned(const TuningTable& t, const GemmShape& s);

// The table file for a device: <cache_dir>/libdg/tuning-<gpu name, lowercase, [a-z0-9-]>-<sms>sm.txt;
// "" when cache_dir is "".
std::string default_tuning_table_path(const std::string& cache_dir, const std::string& gpu, int sms);

// The table file in force on `stream`: its config's tuning_table ("off": none, ""), else the default.
std::string tuning_table_path(const dg_stream_s& stream);

// The table of `path` for `device`, read once per (device, path) and kept; nullptr when the file is
// missing (quietly), unreadable, corrupt, or written for another GPU, SM count or libdg version
// (one warning each time it is read). Thread-safe.
std::shared_ptr<const TuningTable> tuning_table_for(const Device& device, const std::string& path);

// Reads the table at `path` now (no caching): nullptr, with the warnings tuning_table_for gives,
// when there is none for `device`.
std::shared_ptr<const TuningTable> read_tuning_table(const Device& device, const std::string& path);

// Replaces what tuning_table_for(device, path) returns (after dg_tune has written `path`).
void publish_tuning_table(const Device& device, const std::string& path, std::shared_ptr<const TuningTable> table);

// Writes `t` to `path` atomically (a temporary file in the same directory, renamed into place),
// creating the directory (one level) when missing. DG_ERROR_INVALID_ARGUMENT naming the path and
// the reason when it cannot be written; the previous file is then untouched.
dg_status write_tuning_table(const std::string& path, const TuningTable& t);

// The config of `s` on a config-cache miss: the caller's explicit config fields win; else a tuned
// entry of the stream's table when the call runs on all of the table's SMs and the entry's config
// passes the checks an override passes; else the heuristic (with the device's cost model).
dg_status choose_tuned_gemm_config(const dg_stream_s& stream, const GemmShape& s, int num_sms, const GemmOverride& o,
                                   GemmConfig* out);

// ---- problem lists ------------------------------------------------------------------------------

enum class TuneFamily : int { kDense = 0, kContiguous = 1, kMasked = 2, kKGrouped = 3 };

// One problem of a list: the call dg_tune times and the shape its table line keys on.
struct TuneProblem {
  TuneFamily family = TuneFamily::kDense;
  bool fp8 = false;
  int layout = DG_GEMM_LAYOUT_NT;  // dense: DG_GEMM_LAYOUT_*; M-grouped: NT; K-grouped: NT (FP8), TN (BF16)
  GemmShape shape;                 // as the API derives it for the call
  int line = 0;                    // line of the list it came from
  std::string text;                // e.g. "dense fp8 nt m=4096 n=24576 k=1536"
};

// Expands a problem list (docs/tuning.md#problem-lists) into problems; DG_ERROR_INVALID_ARGUMENT
// naming `arg`, the line and the token when a line is malformed. At most kMaxTuneProblems.
constexpr int64_t kMaxTuneProblems = 4096;
dg_status parse_problem_list(std::string_view text, const char* arg, std::vector<TuneProblem>* out);

}  // namespace dg::ops
