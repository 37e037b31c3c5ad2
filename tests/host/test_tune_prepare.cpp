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

// Runs dg_tune on `list` (`problems` problems, `candidates` configs each) over the fake driver: every
// candidate must be compiled and loaded (at least `kernels`), nothing launched, and the tune must stop
// at its first device allocation, with nothing tuned. Returns its error message.
std::string tune_until_device_memory(const char* list, int candidates, int problems, int64_t kernels) {
  FakeDriver fake(sizeof(dg::ops::Sm90GemmParams));
  dg_stream* stream = nullptr;
  REQUIRE(dg_stream_create(&stream, 0, nullptr, DG_STREAM_CREATE, nullptr) == DG_SUCCESS);
  Lines lines;
  dg_tune_options o = DG_TUNE_OPTIONS_INIT;
  o.candidates = candidates;
  o.table_path = "/nonexistent/dg-tuning-table.txt";  // never reached
  o.progress = on_progress, o.user_data = &lines;
  const int64_t before = kernels_loaded();
  int64_t tuned = -7;
  const dg_status s = dg_tune(stream, list, &o, &tuned);
  const std::string message = dg_last_error();
  CHECK(s != DG_SUCCESS);
  CHECK(tuned == -7);
  CHECK(message.find("cuMemAlloc") != std::string::npos);
  CHECK(kernels_loaded() >= before + kernels);
  REQUIRE(lines.text.size() == 1);
  CHECK(lines.text[0].find("compiling the candidates of " + std::to_string(problems) + " problems") !=
        std::string::npos);
  CHECK(fake.take().empty());  // nothing launched
  dg_stream_destroy(stream);
  return message;
}

}  // namespace

TEST_CASE("dg_tune compiles fused-epilogue candidates through their calls' checks, then needs device memory") {
  // The MoE gate/up GEMM's epilogue (SwiGLU into FP8 with its scales) on a masked and a contiguous
  // problem, and an FP8 D alone on a dense one: a prepare refusing an epilogue would stop the tune
  // before its first allocation, naming it.
  const std::string message = tune_until_device_memory(
      "masked fp8 n=512 k=256 g=4 m=32 max_m=128 epilogue=swiglu_fp8\n"
      "contiguous fp8 n=512 k=256 g=2 m=200 epilogue=swiglu_fp8\n"
      "dense fp8 nt n=256 k=256 m=300 epilogue=fp8\n",
      1, 3, 1);
  CHECK(message.find("epilogue") == std::string::npos);
}

TEST_CASE("dg_tune compiles K-grouped candidates through their prepare calls, then needs device memory") {
  // FP8 (1D1D, nt) and BF16 (tn), FP32 D accumulated: every candidate passes the K-grouped options'
  // checks (no split_k, single CTAs).
  tune_until_device_memory("kgrouped fp8 n=512 k=256 g=3 m=256\nkgrouped bf16 n=256 k=384 g=2 m=128\n", 3, 2, 2);
}
