// The byte transpose that makes K-major copies of MN-major FP8 GEMM operands (its one variant)
// compiles for sm_90a within its launch bounds, with no local memory, and with 16-byte shared and
// global accesses in its PTX. No GPU.
#include <doctest/doctest.h>

#include <cstdio>
#include <sstream>
#include <string>

#include "dg.h"
#include "jit/compiler.h"
#include "ops/transpose.h"
#include "runtime/config.h"

TEST_CASE("transpose: the kernel compiles for sm_90a without spills, with vector accesses") {
  dg::Config config = dg::default_config();
  config.cache_dir = "";
  config.ptxas_verbose = true;
  config.dump_ptx = true;
  const dg::jit::KernelSpec spec = dg::ops::transpose_kernel_spec();
  dg::jit::CompileResult r;
  const int32_t log_level = dg_get_log_level();
  dg_set_log_level(DG_LOG_ERROR);  // the ptxas report is checked here, not printed
  const dg_status st = dg::jit::compile(spec, "sm_90a", config, &r);
  dg_set_log_level(log_level);
  REQUIRE_MESSAGE(st == DG_SUCCESS, dg_last_error());
  CHECK(!r.cubin.empty());
  INFO("ptxas log:\n" << r.log);
  int registers = -1, stack = -1, spill_stores = -1, spill_loads = -1;
  std::istringstream lines(r.log);
  for (std::string line; std::getline(lines, line);) {
    if (line.find("bytes stack frame") != std::string::npos)
      std::sscanf(line.c_str(), "ptxas . %d bytes stack frame, %d bytes spill stores, %d bytes spill loads", &stack,
                  &spill_stores, &spill_loads);
    const size_t used = line.find("Used ");
    if (used != std::string::npos) std::sscanf(line.c_str() + used, "Used %d registers", &registers);
  }
  CHECK(stack == 0);
  CHECK(spill_stores == 0);
  CHECK(spill_loads == 0);
  // __launch_bounds__(kThreads, kBlocksPerSm): every block of the grid resident at once.
  CHECK(registers > 0);
  CHECK(registers <= 65536 / (dg::ops::kTransposeThreads * dg::ops::kTransposeBlocksPerSm));
  REQUIRE(!r.ptx.empty());
  CHECK(r.ptx.find("ld.global.v4.u32") != std::string::npos);
  CHECK(r.ptx.find("st.global.v4.u32") != std::string::npos);
  CHECK(r.ptx.find("ld.shared.v4.u32") != std::string::npos);
  CHECK(r.ptx.find("prmt.b32") != std::string::npos);
  CHECK(r.ptx.find(".local") == std::string::npos);
  MESSAGE(spec.kernel_name << ": " << registers << " registers");
}
