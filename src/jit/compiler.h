// Source -> cubin: render a KernelSpec and compile it with NVRTC (default) or nvcc. Needs no GPU.
#pragma once
#include <string>
#include <vector>

#include "jit/kernel.h"
#include "runtime/config.h"

namespace dg::jit {

struct CompileResult {
  std::string source;          // the rendered translation unit
  std::vector<char> cubin;
  std::string ptx;             // only when requested (DG_JIT_DUMP_PTX) and with NVRTC
  std::string log;             // compiler output (warnings, ptxas -v)
  double seconds = 0;
};

// Renders `spec` with the embedded templates (or $DG_TEMPLATE_DIR). DG_ERROR_COMPILE with the
// template error (name:line:col and a caret) on failure.
dg_status render(const KernelSpec& spec, std::string* source);

// Renders and compiles for `arch` ("sm_90a", "sm_100a"). DG_ERROR_COMPILE with the compiler log on
// failure; DG_ERROR_UNSUPPORTED when nvcc was asked for and cannot be found.
dg_status compile(const KernelSpec& spec, const std::string& arch, const Config& config,
                  CompileResult* result);

// "NVRTC 13.0" or "nvcc 13.0": part of every cache key.
std::string compiler_signature(const Config& config);

// The options given to the compiler for `arch` (part of every cache key).
std::vector<std::string> compiler_options(const std::string& arch, const Config& config);

}  // namespace dg::jit
