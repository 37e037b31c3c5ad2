#include "runtime/status.h"

#include <exception>
#include <new>

#include "runtime/log.h"

namespace dg {
namespace {
thread_local std::string t_last_error;
}

void set_last_error(dg_status status, std::string message) {
  log::debug("{}: {}", dg_status_string(status), message);
  t_last_error = std::move(message);
}

const char* last_error() { return t_last_error.c_str(); }

LastErrorGuard::LastErrorGuard() : saved_(t_last_error) {}
LastErrorGuard::~LastErrorGuard() { t_last_error.swap(saved_); }

dg_status fail_current_exception(const char* where) noexcept {
  dg_status status = DG_ERROR_INTERNAL;
  try {
    try {
      throw;
    } catch (const std::bad_alloc&) {
      status = DG_ERROR_OUT_OF_MEMORY;
      return fail(status, "host allocation failed while {}", where);
    } catch (const std::exception& e) {
      return fail(status, "unexpected exception while {}: {}", where, e.what());
    } catch (...) {
      return fail(status, "unexpected exception while {}", where);
    }
  } catch (...) {
    t_last_error.clear();  // no memory left even for the message
    return status;
  }
}

}  // namespace dg
