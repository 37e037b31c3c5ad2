// Status names, errors, version, logging and dtype queries.
#include "dg.h"
#include "runtime/log.h"
#include "runtime/status.h"
#include "runtime/tensor.h"

extern "C" {

DG_API const char* dg_status_string(dg_status status) {
  switch (status) {
    case DG_SUCCESS: return "DG_SUCCESS";
    case DG_ERROR_INVALID_ARGUMENT: return "DG_ERROR_INVALID_ARGUMENT";
    case DG_ERROR_UNSUPPORTED: return "DG_ERROR_UNSUPPORTED";
    case DG_ERROR_NO_DEVICE: return "DG_ERROR_NO_DEVICE";
    case DG_ERROR_CUDA: return "DG_ERROR_CUDA";
    case DG_ERROR_COMPILE: return "DG_ERROR_COMPILE";
    case DG_ERROR_OUT_OF_MEMORY: return "DG_ERROR_OUT_OF_MEMORY";
    case DG_ERROR_INTERNAL: return "DG_ERROR_INTERNAL";
    default: return "DG_UNKNOWN_STATUS";
  }
}

DG_API const char* dg_last_error(void) { return dg::last_error(); }

#define DG_STR2(x) #x
#define DG_STR(x) DG_STR2(x)
DG_API const char* dg_version(void) {
  return DG_STR(DG_VERSION_MAJOR) "." DG_STR(DG_VERSION_MINOR) "." DG_STR(DG_VERSION_PATCH);
}

DG_API int32_t dg_version_number(void) { return DG_VERSION_NUMBER; }

DG_API dg_status dg_set_log_callback(dg_log_callback callback, void* user_data) {
  dg::log::set_callback(callback, user_data);
  return DG_SUCCESS;
}

DG_API dg_status dg_set_log_level(int32_t level) {
  if (level < DG_LOG_TRACE || level > DG_LOG_OFF)
    return dg::fail(DG_ERROR_INVALID_ARGUMENT, "level: {} is not a DG_LOG_* value (expected {}..{})", level,
                    DG_LOG_TRACE, DG_LOG_OFF);
  dg::log::set_level(level);
  return DG_SUCCESS;
}

DG_API int32_t dg_get_log_level(void) { return dg::log::level(); }

DG_API size_t dg_dtype_size(dg_dtype dtype) { return dg::dtype_size(dtype); }

DG_API const char* dg_dtype_name(dg_dtype dtype) { return dg::dtype_name(dtype); }

}  // extern "C"
