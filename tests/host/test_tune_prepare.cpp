// dg_tune on the fake driver: it refuses device memory, so a tune stops once the candidates are
// compiled and loaded. What runs before that is checked here without a GPU: the problems' calls as
// prepare calls (fused epilogues included, with the descriptors the timed calls will pass).
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "dg.h"
#include "fake_driver.h"
#include "ops/gemm.h"

namespace {

using namespace dg::test;  // fake_driver.h

struct Lines {
  std::vector<std::string> text;
};

void on_progress(int64_t, int64_t, const char* line, void* user) { static_cast<Lines*>(user)->text.push_back(line); }

int64_t kernels_loaded() {
  int64_t compiled = 0, from_disk = 0;
  REQUIRE(dg_jit_get_stats(&compiled, &from_disk, nullptr) == DG_SUCCESS);
  return compiled + from_disk;
}

}  // namespace

TEST_CASE("dg_tune compiles fused-epilogue candidates through their calls' checks, then needs device memory") {
  FakeDriver fake(sizeof(dg::ops::Sm90GemmParams));
  dg_stream* stream = nullptr;
  REQUIRE(dg_stream_create(&stream, 0, nullptr, DG_STREAM_CREATE, nullptr) == DG_SUCCESS);
  // The MoE gate/up GEMM's epilogue (SwiGLU into FP8 with its scales) on a masked and a contiguous
  // problem, and an FP8 D alone on a dense one.
  const char* list =
      "masked fp8 n=512 k=256 g=4 m=32 max_m=128 epilogue=swiglu_fp8\n"
      "contiguous fp8 n=512 k=256 g=2 m=200 epilogue=swiglu_fp8\n"
      "dense fp8 nt n=256 k=256 m=300 epilogue=fp8\n";
  Lines lines;
  dg_tune_options o = DG_TUNE_OPTIONS_INIT;
  o.candidates = 1;
  o.table_path = "/nonexistent/dg-tuning-table.txt";  // never reached
  o.progress = on_progress, o.user_data = &lines;
  const int64_t before = kernels_loaded();
  int64_t tuned = -7;
  const dg_status s = dg_tune(stream, list, &o, &tuned);
  const std::string message = dg_last_error();
  CHECK(s != DG_SUCCESS);
  CHECK(tuned == -7);
  // Every candidate compiled and loaded (a prepare refusing an epilogue would have stopped there).
  CHECK(message.find("cuMemAlloc") != std::string::npos);
  CHECK(message.find("epilogue") == std::string::npos);
  CHECK(kernels_loaded() >= before + 1);
  REQUIRE(lines.text.size() == 1);
  CHECK(lines.text[0].find("compiling the candidates of 3 problems") != std::string::npos);
  CHECK(fake.take().empty());  // nothing launched
  dg_stream_destroy(stream);
}
