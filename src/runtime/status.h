// Errors inside the library: every failure sets this thread's message and returns a status.
//
//   if (k % 32) return dg::fail(DG_ERROR_INVALID_ARGUMENT, "a: K = {} must be a multiple of 32", k);
//   DG_TRY(other_step());   // propagates a non-success status unchanged
#pragma once
#include <fmt/format.h>

#include <string>

#include "dg.h"
#include "runtime/log_deferred.h"

namespace dg {

// Stores `message` as this thread's dg_last_error() and logs it at debug level.
void set_last_error(dg_status status, std::string message);
const char* last_error();

// Puts this thread's dg_last_error() back as it was when constructed: the user's log callback may
// call libdg, and the call that logged must still report its own message.
class LastErrorGuard {
 public:
  LastErrorGuard();
  ~LastErrorGuard();
  LastErrorGuard(const LastErrorGuard&) = delete;
  LastErrorGuard& operator=(const LastErrorGuard&) = delete;

 private:
  std::string saved_;
};

// The status and message for the exception being handled (call only inside a catch block):
// DG_ERROR_OUT_OF_MEMORY for std::bad_alloc, else DG_ERROR_INTERNAL; `where` says what was running.
dg_status fail_current_exception(const char* where) noexcept;

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

// Wraps the body of an exported function: C++ exceptions never cross the ABI, and log messages
// reach the user's callback only once the call has released its locks (log::Deferred).
#define DG_API_GUARD(body)                                                                   \
  const ::dg::log::Deferred dg_deferred_log_;                                                \
  try {                                                                                      \
    body                                                                                     \
  } catch (const std::bad_alloc&) {                                                          \
    return ::dg::fail(DG_ERROR_OUT_OF_MEMORY, "host allocation failed in {}", __func__);     \
  } catch (const std::exception& e) {                                                        \
    return ::dg::fail(DG_ERROR_INTERNAL, "unexpected exception in {}: {}", __func__, e.what()); \
  } catch (...) {                                                                            \
    return ::dg::fail(DG_ERROR_INTERNAL, "unexpected exception in {}", __func__);            \
  }
