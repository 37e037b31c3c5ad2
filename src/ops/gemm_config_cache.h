// The heuristic's choice per distinct problem, so that a warm call costs one lookup; a new entry
// is also when DG_PRINT_CONFIGS prints. One cache per config type (tiled, skinny): any GEMM family
// whose config is a pure function of (GemmShape, SM count, GemmOverride, the stream's tuning
// table) shares it.
#pragma once
#include <cstdint>
#include <cstring>
#include <mutex>
#include <shared_mutex>
#include <unordered_map>

#include "ops/gemm.h"
#include "runtime/log.h"
#include "runtime/status.h"
#include "runtime/stream.h"

namespace dg::ops {

struct ConfigKey {
  int64_t v[19];
  bool operator==(const ConfigKey& o) const { return std::memcmp(v, o.v, sizeof(v)) == 0; }
};
struct ConfigKeyHash {
  size_t operator()(const ConfigKey& k) const {
    uint64_t h = 1469598103934665603ull;
    for (int64_t x : k.v) h = (h ^ static_cast<uint64_t>(x)) * 1099511628211ull;
    return static_cast<size_t>(h);
  }
};

inline ConfigKey config_key(const dg_stream_s& stream, const GemmShape& s, int num_sms, const GemmOverride& o) {
  return ConfigKey{{static_cast<int64_t>(s.kind), s.m, s.n, s.k,
                    static_cast<int64_t>(s.major_a) | static_cast<int64_t>(s.major_b) << 1 |
                        int64_t(s.accumulate) << 2 | int64_t(s.d_dtype) << 3 |
                        int64_t(s.epilogue.act) << 16 | int64_t(s.epilogue.bias) << 20 |
                        int64_t(s.epilogue.scales) << 24 | int64_t(s.transpose_d) << 28,
                    num_sms, o.block_m | int64_t(o.block_n) << 16 | int64_t(o.stages) << 32,
                    o.cluster | int64_t(o.fp8_promotion) << 8 | int64_t(o.promotion_slices) << 16 |
                        int64_t(o.split_k) << 24 | int64_t(o.kernel) << 32,
                    o.multicast_a, o.math_wg, o.num_sms, reinterpret_cast<int64_t>(stream.device),
                    static_cast<int64_t>(s.type), s.num_groups, s.expected_m,
                    s.epilogue.head_left, s.epilogue.head_mid, s.epilogue.head_right,
                    static_cast<int64_t>(stream.tuning_key)}};
}

// `choose(s, num_sms, o, out)` runs on a miss; `describe(s, config)` names the choice for
// DG_PRINT_CONFIGS.
template <class Config, class Choose>
dg_status cached_config(const dg_stream_s& stream, const GemmShape& s, int num_sms, const GemmOverride& o,
                        Choose choose, Config* out) {
  const ConfigKey key = config_key(stream, s, num_sms, o);
  static std::shared_mutex mu;
  static std::unordered_map<ConfigKey, Config, ConfigKeyHash> cache;
  {
    std::shared_lock<std::shared_mutex> lock(mu);
    auto it = cache.find(key);
    if (it != cache.end()) {
      *out = it->second;
      return DG_SUCCESS;
    }
  }
  DG_TRY(choose(s, num_sms, o, out));
  bool inserted = false;
  {
    std::unique_lock<std::shared_mutex> lock(mu);
    if (cache.size() > 4096) cache.clear();  // bounded: shapes seen by one process are few
    inserted = cache.emplace(key, *out).second;
  }
  if (inserted && (config_of(stream).print_configs || config_of(stream).jit_debug))
    log::warn("DG_PRINT_CONFIGS: {}", describe(s, *out));
  return DG_SUCCESS;
}

}  // namespace dg::ops
