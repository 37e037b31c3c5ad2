#include "runtime/config.h"

#include <cstdlib>
#include <cstring>

#include "runtime/log.h"

namespace dg {
namespace {

const char* env(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && v[0] != '\0' ? v : nullptr;
}

bool env_flag(const char* name, bool fallback = false) {
  const char* v = env(name);
  if (v == nullptr) return fallback;
  return !(std::strcmp(v, "0") == 0 || strcasecmp(v, "false") == 0 || strcasecmp(v, "off") == 0);
}

int env_int(const char* name, int fallback, int lo, int hi) {
  const char* v = env(name);
  if (v == nullptr) return fallback;
  char* end = nullptr;
  long x = std::strtol(v, &end, 10);
  if (*end != '\0' || x < lo || x > hi) {
    log::warn("ignoring {}={}: expected an integer in [{}, {}]", name, v, lo, hi);
    return fallback;
  }
  return static_cast<int>(x);
}

}  // namespace

Config Config::from_environment() {
  Config c;
  c.num_sms = env_int("DG_NUM_SMS", 0, 0, 1024);
  c.tc_util = env_int("DG_TC_UTIL", 100, 1, 100);
  c.pdl = env_flag("DG_PDL");
  if (const char* dir = env("DG_JIT_CACHE_DIR")) {
    c.cache_dir = dir;
  } else if (const char* home = env("HOME")) {
    c.cache_dir = std::string(home) + "/.deep_gemm";
  }
  c.compiler = env_flag("DG_JIT_USE_NVRTC", true) ? DG_COMPILER_NVRTC : DG_COMPILER_NVCC;
  c.jit_debug = env_flag("DG_JIT_DEBUG");
  c.print_configs = env_flag("DG_PRINT_CONFIGS") || c.jit_debug;
  c.ptxas_verbose = env_flag("DG_JIT_PTXAS_VERBOSE") || c.jit_debug;
  c.dump_source = env_flag("DG_JIT_DUMP_SOURCE");
  c.dump_ptx = env_flag("DG_JIT_DUMP_PTX");
  c.cpp_standard = env_int("DG_JIT_CPP_STANDARD", 17, 17, 20) >= 20 ? 20 : 17;
  if (const char* nvcc = env("DG_JIT_NVCC_COMPILER")) {
    c.nvcc_path = nvcc;
  } else {
    const char* cuda_home = env("CUDA_HOME");
    c.nvcc_path = std::string(cuda_home ? cuda_home : "/usr/local/cuda") + "/bin/nvcc";
  }
  if (const char* level = env("DG_LOG_LEVEL")) {
    int parsed = log::parse_level(level);
    if (parsed >= 0) c.log_level = parsed;
  }
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
