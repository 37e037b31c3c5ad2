// GPU correctness tests: exit 77 (reported by CTest as skipped) when no CUDA device is usable.
// DG_GPU_TEST_QUICK=1 runs only the test suite "quick" (the same as -ts=quick): every kernel
// template and variant once on small shapes with tails, for compute-sanitizer
// (README.md) and smoke runs.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "dg.h"

int main(int argc, char** argv) {
  int32_t count = 0;
  if (dg_device_count(&count) != DG_SUCCESS || count == 0) {
    std::printf("no CUDA device (%s): skipping the GPU tests\n", count == 0 && dg_last_error()[0] == '\0' ? "0 devices" : dg_last_error());
    return 77;
  }
  doctest::Context context(argc, argv);
  const char* quick = std::getenv("DG_GPU_TEST_QUICK");
  if (quick != nullptr && std::strcmp(quick, "1") == 0) context.setOption("test-suite", "quick");
  return context.run();
}
