#include "runtime/status.h"

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

}  // namespace dg
