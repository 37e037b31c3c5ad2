// Errors inside the library: every failure sets this thread's message and returns a status.
//
//   if (k % 32) return dg::fail(DG_ERROR_INVALID_ARGUMENT, "a: K = {} must be a multiple of 32", k);
//   DG_TRY(other_step());   // propagates a non-success status unchanged
#pragma once
#include <fmt/format.h>

#include <string>

#include "dg.h"

namespace dg {

// Stores `message` as this thread's dg_last_error() and logs it at debug level.
void set_last_error(dg_status status, std::string message);
const char* last_error();

template <typename... Args>
dg_status fail(dg_status status, fmt::format_string<Args...> format, Args&&... args) {
  set_last_error(status, fmt::format(format, std::forward<Args>(args)...));
  return status;
}

}  // namespace dg

#define DG_TRY(expr)                                  \
  do {                                                \
    const dg_status dg_try_status_ = (expr);          \
    if (dg_try_status_ != DG_SUCCESS) return dg_try_status_; \
  } while (0)

// Wraps the body of an exported function: C++ exceptions never cross the ABI.
#define DG_API_GUARD(body)                                                                   \
  try {                                                                                      \
    body                                                                                     \
  } catch (const std::bad_alloc&) {                                                          \
    return ::dg::fail(DG_ERROR_OUT_OF_MEMORY, "host allocation failed in {}", __func__);     \
  } catch (const std::exception& e) {                                                        \
    return ::dg::fail(DG_ERROR_INTERNAL, "unexpected exception in {}: {}", __func__, e.what()); \
  } catch (...) {                                                                            \
    return ::dg::fail(DG_ERROR_INTERNAL, "unexpected exception in {}", __func__);            \
  }
