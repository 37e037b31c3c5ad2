// Every MQA logits kernel configuration renders and compiles through NVRTC for sm_90a, without a GPU.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "jit/compiler.h"
#include "ops/mqa_logits.h"
#include "runtime/config.h"

TEST_CASE("MQA logits kernels compile for sm_90a: H 32/64, D 64/128, FP32 and BF16 logits, both layouts") {
  dg::Config config = dg::Config::from_environment();
  config.compiler = DG_COMPILER_NVRTC;
  const auto configs = dg::ops::all_mqa_logits_configs();
  CHECK(configs.size() == 16);
  for (const dg::ops::MqaLogitsConfig& c : configs) {
    const dg::jit::KernelSpec spec = dg::ops::mqa_logits_kernel_spec(c);
    CAPTURE(spec.kernel_name);
    dg::jit::CompileResult result;
    const dg_status s = dg::jit::compile(spec, "sm_90a", config, &result);
    REQUIRE_MESSAGE(s == DG_SUCCESS, dg_last_error());
    CHECK(result.cubin.size() > 1000);
    CHECK(result.source.find(spec.kernel_name) != std::string::npos);
    CHECK(c.smem_bytes() <= 232448u);
  }
}

TEST_CASE("Paged MQA logits kernels and the schedule kernel compile for sm_90a") {
  dg::Config config = dg::Config::from_environment();
  config.compiler = DG_COMPILER_NVRTC;
  std::vector<dg::jit::KernelSpec> specs{dg::ops::paged_mqa_metadata_kernel_spec()};
  const auto configs = dg::ops::all_paged_mqa_logits_configs();
  CHECK(configs.size() == 24);
  for (const dg::ops::PagedMqaLogitsConfig& c : configs) {
    CHECK(c.smem_bytes() <= 232448u);
    CHECK(c.stages >= 3);
    // Four consumer warp-groups have 96 registers a thread: N = 64 * next_n accumulators must fit.
    CHECK((c.math_wg == 4 ? c.next_n <= 2 : c.math_wg == 2));
    specs.push_back(dg::ops::paged_mqa_logits_kernel_spec(c));
  }
  for (const dg::jit::KernelSpec& spec : specs) {
    CAPTURE(spec.kernel_name);
    dg::jit::CompileResult result;
    const dg_status s = dg::jit::compile(spec, "sm_90a", config, &result);
    REQUIRE_MESSAGE(s == DG_SUCCESS, dg_last_error());
    CHECK(result.cubin.size() > 1000);
    CHECK(result.source.find(spec.kernel_name) != std::string::npos);
  }
}
