#pragma once
#include <cuda.h>

#include <optional>

#include "runtime/config.h"
#include "runtime/device.h"

struct dg_stream_s {
  dg::Device* device = nullptr;
  CUstream handle = nullptr;
  bool owned = false;
  std::optional<dg::Config> config;  // empty: follow the process-wide defaults
  // Which tuning table the stream's GEMM configs come from (dg::tuning_table_key of its config; 0:
  // the process default's): part of the config cache's key, so that streams reading different
  // tables choose their configs apart.
  uint64_t tuning_key = 0;
};

namespace dg {

// The config in force for work on `stream`.
const Config& config_of(const dg_stream_s& stream);

// SMs a kernel may use on `stream`: the stream's cap, else the process-wide cap, else all SMs.
// Fails with DG_ERROR_INVALID_ARGUMENT when a cap exceeds the device's SM count.
dg_status num_sms_of(const dg_stream_s& stream, int* num_sms);

// Validates the handle (non-NULL) and returns it; `arg` names it in the error message.
dg_status check_stream(const dg_stream_s* stream, const char* arg);

}  // namespace dg
