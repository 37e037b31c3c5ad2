// Devices and dg_stream handles.
#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>

#include "runtime/driver.h"
#include "runtime/status.h"
#include "runtime/stream.h"

namespace {

// The longest GPU name an offline stream takes (the driver's names are at most 256 bytes with the NUL).
constexpr size_t kMaxGpuNameBytes = 255;

dg_status create_offline(dg_stream** stream, int32_t arch_major, int32_t arch_minor, int32_t num_sms,
                         const std::string& name, const dg_config* config) {
  if (stream == nullptr) return dg::fail(DG_ERROR_INVALID_ARGUMENT, "stream: out-pointer is NULL");
  dg::Device* d = nullptr;
  DG_TRY(dg::get_offline_device(arch_major, arch_minor, num_sms, name, &d));
  auto s = std::make_unique<dg_stream_s>();
  s->device = d;
  if (config != nullptr) {
    s->config = config->value;
    s->tuning_key = dg::tuning_table_key(config->value);
  }
  *stream = s.release();
  return DG_SUCCESS;
}

}  // namespace

extern "C" {

// Calls that load the driver or initialise a device (once, under a lock, logging at debug level)
// hold their messages until they end (log::Deferred), as DG_API_GUARD does for the others.
DG_API dg_status dg_device_count(int32_t* count) {
  const dg::log::Deferred deferred_log;
  if (count == nullptr) return dg::fail(DG_ERROR_INVALID_ARGUMENT, "count: out-pointer is NULL");
  DG_TRY(dg::driver::load(nullptr));
  int n = 0;
  DG_CU(cuDeviceGetCount(&n));
  *count = n;
  return DG_SUCCESS;
}

DG_API dg_status dg_device_get_capability(int32_t device, int32_t* major, int32_t* minor) {
  const dg::log::Deferred deferred_log;
  if (major == nullptr || minor == nullptr)
    return dg::fail(DG_ERROR_INVALID_ARGUMENT, "{}: out-pointer is NULL", major == nullptr ? "major" : "minor");
  dg::Device* d = nullptr;
  DG_TRY(dg::get_device(device, &d));
  *major = d->cc_major;
  *minor = d->cc_minor;
  return DG_SUCCESS;
}

DG_API dg_status dg_stream_create(dg_stream** stream, int32_t device, void* cu_stream, int32_t flags,
                                  const dg_config* config) {
  DG_API_GUARD({
    if (stream == nullptr) return dg::fail(DG_ERROR_INVALID_ARGUMENT, "stream: out-pointer is NULL");
    if (flags != DG_STREAM_BORROW && flags != DG_STREAM_CREATE)
      return dg::fail(DG_ERROR_INVALID_ARGUMENT, "flags: {} is not DG_STREAM_BORROW (0) or DG_STREAM_CREATE (1)", flags);
    if (flags == DG_STREAM_CREATE && cu_stream != nullptr)
      return dg::fail(DG_ERROR_INVALID_ARGUMENT, "cu_stream: must be NULL with DG_STREAM_CREATE (got {})", cu_stream);
    dg::Device* d = nullptr;
    DG_TRY(dg::get_device(device, &d));
    auto s = std::make_unique<dg_stream_s>();
    s->device = d;
    s->handle = static_cast<CUstream>(cu_stream);
    if (config != nullptr) {
      s->config = config->value;
      s->tuning_key = dg::tuning_table_key(config->value);
    }
    if (flags == DG_STREAM_CREATE) {
      dg::ContextScope scope;
      DG_TRY(scope.enter(*d));
      DG_CU(cuStreamCreate(&s->handle, CU_STREAM_NON_BLOCKING));
      s->owned = true;
    }
    *stream = s.release();
    return DG_SUCCESS;
  })
}

DG_API dg_status dg_stream_create_offline(dg_stream** stream, int32_t arch_major, int32_t arch_minor, int32_t num_sms,
                                          const dg_config* config) {
  DG_API_GUARD(return create_offline(stream, arch_major, arch_minor, num_sms, "", config);)
}

DG_API dg_status dg_stream_create_offline_named(dg_stream** stream, int32_t arch_major, int32_t arch_minor,
                                                int32_t num_sms, const char* gpu_name, const dg_config* config) {
  DG_API_GUARD({
    if (gpu_name == nullptr)
      return dg::fail(DG_ERROR_INVALID_ARGUMENT, "gpu_name: is NULL (expected the GPU's name, e.g. \"NVIDIA H200\")");
    const std::string_view name(gpu_name, strnlen(gpu_name, kMaxGpuNameBytes + 1));
    const auto printable = [](char c) { return c >= 0x20 && c < 0x7f; };
    if (name.empty() || name.size() > kMaxGpuNameBytes || !std::all_of(name.begin(), name.end(), printable) ||
        name.front() == ' ' || name.back() == ' ') {
      std::string shown(name.substr(0, 64));  // as much as a message needs, other bytes as '?'
      std::replace_if(shown.begin(), shown.end(), [&](char c) { return !printable(c); }, '?');
      return dg::fail(DG_ERROR_INVALID_ARGUMENT,
                      "gpu_name: \"{}\" (expected 1..{} printable ASCII characters without leading or trailing "
                      "spaces, the name the driver reports, e.g. \"NVIDIA H200\")",
                      shown, kMaxGpuNameBytes);
    }
    return create_offline(stream, arch_major, arch_minor, num_sms, std::string(name), config);
  })
}

DG_API void dg_stream_destroy(dg_stream* stream) {
  if (stream == nullptr) return;
  if (stream->owned) {
    dg::ContextScope scope;
    if (scope.enter(*stream->device) == DG_SUCCESS) dg::driver::api().cuStreamDestroy(stream->handle);
  }
  delete stream;
}

DG_API dg_status dg_stream_get_cu_stream(const dg_stream* stream, void** cu_stream) {
  DG_TRY(dg::check_stream(stream, "stream"));
  if (cu_stream == nullptr) return dg::fail(DG_ERROR_INVALID_ARGUMENT, "cu_stream: out-pointer is NULL");
  *cu_stream = stream->handle;
  return DG_SUCCESS;
}

DG_API dg_status dg_stream_get_device(const dg_stream* stream, int32_t* device) {
  DG_TRY(dg::check_stream(stream, "stream"));
  if (device == nullptr) return dg::fail(DG_ERROR_INVALID_ARGUMENT, "device: out-pointer is NULL");
  *device = stream->device->ordinal;
  return DG_SUCCESS;
}

DG_API dg_status dg_stream_synchronize(dg_stream* stream) {
  DG_TRY(dg::check_stream(stream, "stream"));
  dg::ContextScope scope;
  DG_TRY(scope.enter(*stream->device));
  DG_CU(cuStreamSynchronize(stream->handle));
  return DG_SUCCESS;
}

}  // extern "C"
