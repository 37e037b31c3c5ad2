// Settings (dg_config) and the process-wide defaults they fall back to.
#pragma once
#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "dg.h"

namespace dg {

struct Config {
  int num_sms = 0;          // 0 = process-wide value, then all SMs
  int tc_util = 100;        // percent
  bool pdl = false;
  std::string cache_dir;    // "" = memory-only
  std::string tuning_table; // GEMM tuning table: "" = beside the JIT cache, "off" = none (docs/tuning.md)
  int compiler = DG_COMPILER_NVRTC;
  bool print_configs = false;
  int log_level = DG_LOG_WARN;

  // JIT diagnostics, from the environment only (DG_JIT_*; see README).
  bool jit_debug = false;
  bool ptxas_verbose = false;
  std::vector<std::string> ptxas_options;  // DG_JIT_PTXAS_OPTIONS, split at whitespace
  bool dump_source = false;
  bool dump_ptx = false;
  std::string nvcc_path;    // DG_JIT_NVCC_COMPILER, else $CUDA_HOME/bin/nvcc
  int cpp_standard = 17;    // DG_JIT_CPP_STANDARD: 17 or 20

  // Defaults read from the environment (DG_* variables).
  static Config from_environment();
};

// Process-wide state behind dg_set_num_sms / dg_set_tc_util, and the config that streams created
// without one follow.
struct Globals {
  std::atomic<int> num_sms{0};
  std::atomic<int> tc_util{100};
};
Globals& globals();

// The process default config (environment-derived, built once).
const Config& default_config();

// A nonzero digest of the tuning table `c` names (its path, or the JIT cache directory the default
// table lives in; "off"): equal for configs that read the same table.
uint64_t tuning_table_key(const Config& c);

}  // namespace dg

struct dg_config_s {
  dg::Config value;
};
