#include "runtime/config.h"

#include <cstdlib>
#include <cstring>
#include <sstream>

#include "runtime/env.h"
#include "runtime/log.h"

namespace dg {

uint64_t tuning_table_key(const Config& c) {
  constexpr uint64_t kFnvOffset = 1469598103934665603ull, kFnvPrime = 1099511628211ull;
  // "" names the default table beside the JIT cache: the cache directory tells those apart.
  const std::string& name = c.tuning_table.empty() ? c.cache_dir : c.tuning_table;
  uint64_t h = kFnvOffset ^ static_cast<uint64_t>(c.tuning_table.empty());
  for (const char ch : name) h = (h ^ static_cast<unsigned char>(ch)) * kFnvPrime;
  return h | 1u;
}

Config Config::from_environment() {
  Config c;
  c.num_sms = env::integer("DG_NUM_SMS", 0, 0, 1024);
  c.tc_util = env::integer("DG_TC_UTIL", 100, 1, 100);
  c.pdl = env::flag("DG_PDL");
  if (const char* dir = env::get("DG_JIT_CACHE_DIR")) {
    c.cache_dir = dir;
  } else if (const char* home = env::get("HOME")) {
    c.cache_dir = std::string(home) + "/.deep_gemm";
  }
  if (const char* table = env::get("DG_TUNING_TABLE")) c.tuning_table = table;
  c.compiler = env::flag("DG_JIT_USE_NVRTC", true) ? DG_COMPILER_NVRTC : DG_COMPILER_NVCC;
  c.jit_debug = env::flag("DG_JIT_DEBUG");
  c.print_configs = env::flag("DG_PRINT_CONFIGS") || c.jit_debug;
  c.ptxas_verbose = env::flag("DG_JIT_PTXAS_VERBOSE") || c.jit_debug;
  if (const char* extra = env::get("DG_JIT_PTXAS_OPTIONS")) {
    std::istringstream words(extra);
    for (std::string w; words >> w;) c.ptxas_options.push_back(w);
  }
  c.dump_source = env::flag("DG_JIT_DUMP_SOURCE");
  c.dump_ptx = env::flag("DG_JIT_DUMP_PTX");
  if (const std::optional<std::string> standard = env::get_trimmed("DG_JIT_CPP_STANDARD")) {
    const std::optional<long long> n = env::parse_integer(standard->c_str());
    if (n && (*n == 17 || *n == 20)) {
      c.cpp_standard = static_cast<int>(*n);
    } else if (env::first_warning("DG_JIT_CPP_STANDARD")) {
      log::warn("ignoring DG_JIT_CPP_STANDARD={}: expected 17 or 20; using 17", *standard);
    }
  }
  if (const char* nvcc = env::get("DG_JIT_NVCC_COMPILER")) {
    c.nvcc_path = nvcc;
  } else {
    const char* cuda_home = env::get("CUDA_HOME");
    c.nvcc_path = std::string(cuda_home ? cuda_home : "/usr/local/cuda") + "/bin/nvcc";
  }
  c.log_level = log::environment_level();
  return c;
}

Globals& globals() {
  static Globals g;
  return g;
}

const Config& default_config() {
  static const Config c = Config::from_environment();
  return c;
}

}  // namespace dg
