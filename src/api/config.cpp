// dg_config handles and the process-wide settings.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "runtime/config.h"
#include "runtime/device.h"
#include "runtime/log.h"
#include "runtime/status.h"

namespace {

struct Bounds {
  int64_t lo, hi;
};

// Bounds of each int key; false for keys that are not int settings.
bool int_bounds(dg_config_key key, Bounds* b) {
  switch (key) {
    case DG_CONFIG_NUM_SMS: *b = {0, 1024}; return true;
    case DG_CONFIG_TC_UTIL: *b = {1, 100}; return true;
    case DG_CONFIG_PDL: *b = {0, 1}; return true;
    case DG_CONFIG_COMPILER: *b = {DG_COMPILER_NVRTC, DG_COMPILER_NVCC}; return true;
    case DG_CONFIG_PRINT_CONFIGS: *b = {0, 1}; return true;
    case DG_CONFIG_LOG_LEVEL: *b = {DG_LOG_TRACE, DG_LOG_OFF}; return true;
    default: return false;
  }
}

dg_status unknown_key(dg_config_key key, const char* kind) {
  return dg::fail(DG_ERROR_INVALID_ARGUMENT, "key: {} is not a {} DG_CONFIG_* key", key, kind);
}

}  // namespace

extern "C" {

DG_API dg_status dg_config_create(dg_config** config) {
  DG_API_GUARD({
    if (config == nullptr) return dg::fail(DG_ERROR_INVALID_ARGUMENT, "config: out-pointer is NULL");
    *config = new dg_config_s{dg::default_config()};
    return DG_SUCCESS;
  })
}

DG_API void dg_config_destroy(dg_config* config) { delete config; }

DG_API dg_status dg_config_clone(const dg_config* source, dg_config** config) {
  DG_API_GUARD({
    if (source == nullptr) return dg::fail(DG_ERROR_INVALID_ARGUMENT, "source: is NULL (expected a dg_config)");
    if (config == nullptr) return dg::fail(DG_ERROR_INVALID_ARGUMENT, "config: out-pointer is NULL");
    *config = new dg_config_s{source->value};
    return DG_SUCCESS;
  })
}

DG_API dg_status dg_config_get_bounds(dg_config_key key, int64_t* min_value, int64_t* max_value) {
  Bounds b{};
  if (!int_bounds(key, &b)) return unknown_key(key, "int");
  if (min_value) *min_value = b.lo;
  if (max_value) *max_value = b.hi;
  return DG_SUCCESS;
}

DG_API dg_status dg_config_set_int(dg_config* config, dg_config_key key, int64_t value) {
  if (config == nullptr) return dg::fail(DG_ERROR_INVALID_ARGUMENT, "config: is NULL (expected a dg_config)");
  Bounds b{};
  if (!int_bounds(key, &b)) return unknown_key(key, "int");
  if (value < b.lo || value > b.hi)
    return dg::fail(DG_ERROR_INVALID_ARGUMENT, "value: {} is out of range for key {} (expected {}..{})", value, key, b.lo,
                    b.hi);
  dg::Config& c = config->value;
  const int v = static_cast<int>(value);
  switch (key) {
    case DG_CONFIG_NUM_SMS: c.num_sms = v; break;
    case DG_CONFIG_TC_UTIL: c.tc_util = v; break;
    case DG_CONFIG_PDL: c.pdl = v != 0; break;
    case DG_CONFIG_COMPILER: c.compiler = v; break;
    case DG_CONFIG_PRINT_CONFIGS: c.print_configs = v != 0; break;
    case DG_CONFIG_LOG_LEVEL:
      c.log_level = v;
      dg::log::set_level(v);
      break;
  }
  return DG_SUCCESS;
}

DG_API dg_status dg_config_get_int(const dg_config* config, dg_config_key key, int64_t* value) {
  if (config == nullptr) return dg::fail(DG_ERROR_INVALID_ARGUMENT, "config: is NULL (expected a dg_config)");
  if (value == nullptr) return dg::fail(DG_ERROR_INVALID_ARGUMENT, "value: out-pointer is NULL");
  const dg::Config& c = config->value;
  switch (key) {
    case DG_CONFIG_NUM_SMS: *value = c.num_sms; return DG_SUCCESS;
    case DG_CONFIG_TC_UTIL: *value = c.tc_util; return DG_SUCCESS;
    case DG_CONFIG_PDL: *value = c.pdl; return DG_SUCCESS;
    case DG_CONFIG_COMPILER: *value = c.compiler; return DG_SUCCESS;
    case DG_CONFIG_PRINT_CONFIGS: *value = c.print_configs; return DG_SUCCESS;
    case DG_CONFIG_LOG_LEVEL: *value = c.log_level; return DG_SUCCESS;
    default: return unknown_key(key, "int");
  }
}

DG_API dg_status dg_config_set_string(dg_config* config, dg_config_key key, const char* value) {
  DG_API_GUARD({
    if (config == nullptr) return dg::fail(DG_ERROR_INVALID_ARGUMENT, "config: is NULL (expected a dg_config)");
    if (key != DG_CONFIG_CACHE_DIR && key != DG_CONFIG_TUNING_TABLE) return unknown_key(key, "string");
    if (value == nullptr)
      return dg::fail(DG_ERROR_INVALID_ARGUMENT, "value: is NULL (expected a path, or \"\" for {})",
                      key == DG_CONFIG_CACHE_DIR ? "memory only" : "the default beside the JIT cache");
    (key == DG_CONFIG_CACHE_DIR ? config->value.cache_dir : config->value.tuning_table) = value;
    return DG_SUCCESS;
  })
}

DG_API dg_status dg_config_get_string(const dg_config* config, dg_config_key key, char* buffer, size_t capacity,
                                      size_t* required) {
  if (config == nullptr) return dg::fail(DG_ERROR_INVALID_ARGUMENT, "config: is NULL (expected a dg_config)");
  if (key != DG_CONFIG_CACHE_DIR && key != DG_CONFIG_TUNING_TABLE) return unknown_key(key, "string");
  const std::string& s = key == DG_CONFIG_CACHE_DIR ? config->value.cache_dir : config->value.tuning_table;
  if (required) *required = s.size() + 1;
  if (buffer != nullptr) {
    if (capacity < s.size() + 1)
      return dg::fail(DG_ERROR_INVALID_ARGUMENT, "capacity: {} bytes is too small (need {})", capacity, s.size() + 1);
    std::memcpy(buffer, s.c_str(), s.size() + 1);
  }
  return DG_SUCCESS;
}

// The SM-count calls may initialise device 0 (once, logging at debug level): its messages wait for
// the call's end (log::Deferred), so a callback that calls them again does not wait on itself.
DG_API dg_status dg_set_num_sms(int32_t num_sms) {
  const dg::log::Deferred deferred_log;
  if (num_sms < 0 || num_sms > 1024)
    return dg::fail(DG_ERROR_INVALID_ARGUMENT, "num_sms: {} is out of range (expected 0..1024, 0 = all SMs)", num_sms);
  dg::Device* device = nullptr;
  if (num_sms > 0 && dg::get_device(0, &device) == DG_SUCCESS && num_sms > device->sm_count)
    return dg::fail(DG_ERROR_INVALID_ARGUMENT, "num_sms: {} exceeds the {} SMs of device 0 ({})", num_sms,
                    device->sm_count, device->name);
  dg::globals().num_sms = num_sms;
  return DG_SUCCESS;
}

DG_API int32_t dg_get_num_sms(void) {
  const dg::log::Deferred deferred_log;
  const int set = dg::globals().num_sms;
  if (set > 0) return set;
  dg::Device* device = nullptr;
  return dg::get_device(0, &device) == DG_SUCCESS ? device->sm_count : 0;
}

DG_API dg_status dg_set_tc_util(double ratio) {
  if (!(ratio >= 0.0 && ratio <= 1.0))
    return dg::fail(DG_ERROR_INVALID_ARGUMENT, "ratio: {} is out of range (expected 0..1, 0 = full utilisation)", ratio);
  dg::globals().tc_util = ratio == 0.0 ? 100 : std::max(1, static_cast<int>(std::lround(ratio * 100.0)));
  return DG_SUCCESS;
}

DG_API double dg_get_tc_util(void) { return dg::globals().tc_util / 100.0; }

}  // extern "C"
