#include "jit/concurrent.h"

#include <exception>
#include <new>
#include <string>
#include <system_error>
#include <thread>

#include "runtime/status.h"

namespace dg::jit {

dg_status run_concurrently(const std::function<dg_status()>& main, const std::function<dg_status()>& side) {
  dg_status side_status = DG_SUCCESS;
  std::string side_error;
  auto run_side = [&] {
    try {
      side_status = side();
    } catch (const std::bad_alloc&) {
      side_status = fail(DG_ERROR_OUT_OF_MEMORY, "host allocation failed while preparing kernels");
    } catch (const std::exception& e) {
      side_status = fail(DG_ERROR_INTERNAL, "unexpected exception while preparing kernels: {}", e.what());
    } catch (...) {
      side_status = fail(DG_ERROR_INTERNAL, "unexpected exception while preparing kernels");
    }
    if (side_status != DG_SUCCESS) side_error = last_error();
  };
  std::thread thread;
  try {
    thread = std::thread(run_side);
  } catch (const std::system_error&) {
    run_side();  // no thread to be had: one after the other
  }
  // The side thread reads what `main` may capture: it must be joined even when main throws.
  struct Join {
    std::thread& t;
    ~Join() {
      if (t.joinable()) t.join();
    }
  } join{thread};
  const dg_status main_status = main();
  if (thread.joinable()) thread.join();
  if (main_status != DG_SUCCESS) return main_status;
  if (side_status != DG_SUCCESS) return fail(side_status, "{}", side_error);
  return DG_SUCCESS;
}

}  // namespace dg::jit
