// What ptxas reports for a kernel (--ptxas-options=-v in the NVRTC log), for the compile tests'
// resource checks.
#pragma once
#include <doctest/doctest.h>

#include <cstdio>
#include <sstream>
#include <string>

namespace dg::test {

struct PtxasInfo {
  int registers = -1, stack_frame = -1, spill_stores = -1, spill_loads = -1;
  bool wgmma_serialized = false;  // ptxas fell back to waiting on every WGMMA (C7515-style advisory)
  int mbarrier_inits = -1;        // mbarrier.init instructions in the PTX (when it was kept)
};

inline PtxasInfo parse_ptxas(const std::string& log) {
  PtxasInfo info;
  std::istringstream lines(log);
  for (std::string line; std::getline(lines, line);) {
    if (line.find("bytes stack frame") != std::string::npos)
      std::sscanf(line.c_str(), "ptxas . %d bytes stack frame, %d bytes spill stores, %d bytes spill loads",
                  &info.stack_frame, &info.spill_stores, &info.spill_loads);
    const size_t used = line.find("Used ");
    if (used != std::string::npos) std::sscanf(line.c_str() + used, "Used %d registers", &info.registers);
    if (line.find("wgmma") != std::string::npos && line.find("serialized") != std::string::npos)
      info.wgmma_serialized = true;
  }
  return info;
}

// What every kernel's report must show: registers allocated, no stack frame, no spills.
inline void check_no_local_memory(const PtxasInfo& info) {
  CHECK(info.registers > 0);
  CHECK(info.stack_frame == 0);
  CHECK(info.spill_stores == 0);
  CHECK(info.spill_loads == 0);
}

}  // namespace dg::test
