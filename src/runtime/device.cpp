#include "runtime/device.h"

#include <array>
#include <map>
#include <tuple>
#include <mutex>

#include "runtime/driver.h"
#include "runtime/log.h"
#include "runtime/status.h"

namespace dg {
namespace {

constexpr int kMaxDevices = 64;

dg_status init_device(int ordinal, Device* d) {
  const driver::Api& cu = driver::api();
  d->ordinal = ordinal;
  DG_CU(cuDeviceGet(&d->handle, ordinal));
  char name[256] = {};
  DG_CU(cuDeviceGetName(name, sizeof(name), d->handle));
  d->name = name;
  auto attr = [&](CUdevice_attribute a, int* v) { return driver::check(cu.cuDeviceGetAttribute(v, a, d->handle), "cuDeviceGetAttribute"); };
  DG_TRY(attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, &d->cc_major));
  DG_TRY(attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, &d->cc_minor));
  DG_TRY(attr(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, &d->sm_count));
  DG_TRY(attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, &d->max_smem_optin));
  DG_TRY(attr(CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, &d->l2_bytes));
  DG_TRY(attr(CU_DEVICE_ATTRIBUTE_CLOCK_RATE, &d->clock_khz));
  DG_TRY(attr(CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE, &d->memory_clock_khz));
  DG_TRY(attr(CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH, &d->memory_bus_bits));
  if (d->cc_major == 9 && d->cc_minor == 0) d->arch = "sm_90a";
  else if (d->cc_major == 10 && d->cc_minor == 0) d->arch = "sm_100a";
  DG_CU(cuDevicePrimaryCtxRetain(&d->context, d->handle));
  log::debug("device {}: {} (sm_{}{}, {} SMs, {} KiB smem/block)", ordinal, d->name, d->cc_major, d->cc_minor,
             d->sm_count, d->max_smem_optin / 1024);
  return DG_SUCCESS;
}

}  // namespace

// Devices live until process exit; their modules are reclaimed with the context by the driver.
Device::~Device() = default;

dg_status get_device(int ordinal, Device** device) {
  static std::array<Device*, kMaxDevices> devices{};
  static std::array<std::once_flag, kMaxDevices> once;
  static std::array<dg_status, kMaxDevices> init_status{};
  static std::array<std::string, kMaxDevices> init_error;

  DG_TRY(driver::load(nullptr));
  int count = 0;
  DG_CU(cuDeviceGetCount(&count));
  if (ordinal < 0 || ordinal >= count || ordinal >= kMaxDevices)
    return fail(DG_ERROR_NO_DEVICE, "device: ordinal {} is out of range (this machine has {} CUDA device{})", ordinal,
                count, count == 1 ? "" : "s");
  std::call_once(once[ordinal], [&] {
    auto d = new Device();
    init_status[ordinal] = init_device(ordinal, d);
    if (init_status[ordinal] == DG_SUCCESS) {
      devices[ordinal] = d;
    } else {
      init_error[ordinal] = last_error();
      delete d;
    }
  });
  if (init_status[ordinal] != DG_SUCCESS) return fail(init_status[ordinal], "{}", init_error[ordinal]);
  *device = devices[ordinal];
  return DG_SUCCESS;
}

dg_status get_offline_device(int cc_major, int cc_minor, int sm_count, const std::string& name, Device** device) {
  const bool known = (cc_major == 9 || cc_major == 10) && cc_minor == 0;
  if (!known)
    return fail(DG_ERROR_UNSUPPORTED, "arch_major, arch_minor: compute capability {}.{} (expected 9.0 or 10.0)",
                cc_major, cc_minor);
  if (sm_count < 1 || sm_count > 1024)
    return fail(DG_ERROR_INVALID_ARGUMENT, "num_sms: {} (expected 1..1024)", sm_count);
  static std::mutex mutex;
  static std::map<std::tuple<int, int, int, std::string>, std::unique_ptr<Device>> devices;
  std::lock_guard<std::mutex> lock(mutex);
  auto& d = devices[{cc_major, cc_minor, sm_count, name}];
  if (!d) {
    d = std::make_unique<Device>();
    d->ordinal = -1;
    d->offline = true;
    d->cc_major = cc_major;
    d->cc_minor = cc_minor;
    d->sm_count = sm_count;
    d->arch = cc_major == 9 ? "sm_90a" : "sm_100a";
    d->name = name.empty() ? fmt::format("offline {} ({} SMs)", d->arch, sm_count) : name;
    d->max_smem_optin = 232448;  // 227 KiB on both SM90 and SM100
    d->l2_bytes = cc_major == 9 ? 50 << 20 : 126 << 20;
    }
  *device = d.get();
  return DG_SUCCESS;
}

dg_status ContextScope::enter(const Device& device) {
  if (device.offline)
    return fail(DG_ERROR_NO_DEVICE, "{} is an offline description (dg_stream_create_offline): kernels compile but cannot run",
                device.name);
  CUcontext current = nullptr;
  DG_CU(cuCtxGetCurrent(&current));
  if (current == device.context) return DG_SUCCESS;
  DG_CU(cuCtxPushCurrent(device.context));
  pushed_ = true;
  return DG_SUCCESS;
}

ContextScope::~ContextScope() {
  if (pushed_) {
    CUcontext popped = nullptr;
    driver::api().cuCtxPopCurrent(&popped);
  }
}

}  // namespace dg
