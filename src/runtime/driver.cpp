#include "runtime/driver.h"

#include <dlfcn.h>

#include <mutex>
#include <string>

#include "runtime/log.h"
#include "runtime/status.h"

namespace dg::driver {
namespace {

struct Loader {
  Api api;
  dg_status status = DG_SUCCESS;
  std::string reason;

  Loader() {
    // RTLD_NODELETE keeps the driver mapped past our own unload; it is never dlclosed.
    void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    if (lib == nullptr) {
      const char* why = dlerror();
      fail_with(fmt::format("cannot load the CUDA driver (libcuda.so.1): {}", why ? why : "unknown error"));
      return;
    }
    using GetProc = CUresult (*)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);
    auto get_proc = reinterpret_cast<GetProc>(dlsym(lib, "cuGetProcAddress_v2"));
    if (get_proc == nullptr) {
      fail_with("the CUDA driver is too old: cuGetProcAddress_v2 is missing (need a CUDA 12.0+ driver)");
      return;
    }
    bool ok = true;
#define DG_DRIVER_RESOLVE(name)                                                                   \
    if (ok) {                                                                                     \
      void* fn = nullptr;                                                                         \
      CUdriverProcAddressQueryResult found{};                                                     \
      if (get_proc(#name, &fn, 12000, CU_GET_PROC_ADDRESS_DEFAULT, &found) != CUDA_SUCCESS ||     \
          fn == nullptr) {                                                                        \
        fail_with("the CUDA driver has no " #name " (need a CUDA 12.0+ driver)");                 \
        ok = false;                                                                               \
      } else {                                                                                    \
        api.name = reinterpret_cast<decltype(api.name)>(fn);                                      \
      }                                                                                           \
    }
    DG_DRIVER_FUNCTIONS(DG_DRIVER_RESOLVE)
#undef DG_DRIVER_RESOLVE
    if (!ok) return;
    CUresult r = api.cuInit(0);
    if (r != CUDA_SUCCESS) {
      const char* name = nullptr;
      api.cuGetErrorName(r, &name);
      fail_with(fmt::format("cuInit failed: {}", name ? name : "unknown error"));
      return;
    }
    api.cuDriverGetVersion(&api.version);
    log::debug("CUDA driver {}.{} loaded", api.version / 1000, api.version % 1000 / 10);
  }

  void fail_with(std::string why) {
    status = DG_ERROR_NO_DEVICE;
    reason = std::move(why);
  }
};

Loader& loader() {
  static Loader* l = new Loader();  // never destroyed: other static destructors may still call in
  return *l;
}

}  // namespace

dg_status load(const Api** out) {
  Loader& l = loader();
  if (l.status != DG_SUCCESS) return fail(l.status, "{}", l.reason);
  if (out) *out = &l.api;
  return DG_SUCCESS;
}

const Api& api() { return loader().api; }

dg_status check(CUresult result, const char* what) {
  if (result == CUDA_SUCCESS) return DG_SUCCESS;
  const char* name = nullptr;
  const char* text = nullptr;
  api().cuGetErrorName(result, &name);
  api().cuGetErrorString(result, &text);
  const dg_status status =
      (result == CUDA_ERROR_NO_DEVICE || result == CUDA_ERROR_INVALID_DEVICE) ? DG_ERROR_NO_DEVICE : DG_ERROR_CUDA;
  return fail(status, "{}: {} ({})", what, name ? name : "CUDA error", text ? text : "no description");
}

}  // namespace dg::driver
