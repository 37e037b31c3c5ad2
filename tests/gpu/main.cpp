// GPU correctness tests: exit 77 (reported by CTest as skipped) when no CUDA device is usable.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>

#include "dg.h"

int main(int argc, char** argv) {
  int32_t count = 0;
  if (dg_device_count(&count) != DG_SUCCESS || count == 0) {
    std::printf("no CUDA device (%s): skipping the GPU tests\n", count == 0 && dg_last_error()[0] == '\0' ? "0 devices" : dg_last_error());
    return 77;
  }
  doctest::Context context(argc, argv);
  return context.run();
}
