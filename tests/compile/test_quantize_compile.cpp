// Every FP8 quantization kernel variant renders and compiles through NVRTC for sm_90a, without a
// GPU; the 16-byte variants really issue 16-byte accesses (the K-grouped K-major variants store 16
// bytes whatever their loads, after a byte transpose in shared memory), and nothing spills to local
// memory (in the PTX, or in ptxas's register allocation).
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "jit/compiler.h"
#include "ops/quantize.h"
#include "ptxas.h"

TEST_CASE("quantization kernels compile for sm_90a, every variant") {
  dg::Config config = dg::Config::from_environment();
  config.compiler = DG_COMPILER_NVRTC;
  config.dump_ptx = true;
  config.ptxas_verbose = true;
  std::vector<dg::ops::QuantVariant> variants(dg::ops::quantize_variants(nullptr, 0));
  REQUIRE(dg::ops::quantize_variants(variants.data(), static_cast<int>(variants.size())) == int(variants.size()));
  CHECK(variants.size() == 48);
  std::vector<std::string> names;
  for (const dg::ops::QuantVariant& v : variants) {
    const dg::jit::KernelSpec spec = dg::ops::quantize_kernel_spec(v);
    CAPTURE(spec.kernel_name);
    for (const std::string& n : names) CHECK(n != spec.kernel_name);  // one symbol per variant
    names.push_back(spec.kernel_name);
    dg::jit::CompileResult result;
    const dg_status s = dg::jit::compile(spec, "sm_90a", config, &result);
    REQUIRE_MESSAGE(s == DG_SUCCESS, dg_last_error());
    CHECK(result.cubin.size() > 1000);
    CHECK(result.source.find("{{") == std::string::npos);
    INFO("ptxas log:\n" << result.log);
    dg::test::check_no_local_memory(dg::test::parse_ptxas(result.log));
    if (result.ptx.empty()) continue;
    CHECK((result.ptx.find("ld.global.nc.L1::no_allocate.v4") != std::string::npos) == v.vec);
    const bool k_major = v.op == dg::ops::QuantOp::kKGrouped && v.transpose;
    // Per-token 16-byte variants store a piece (8 BF16 or 4 FP32 inputs' codes) per instruction.
    const bool pieces = v.vec && v.op == dg::ops::QuantOp::kPerToken;
    const char* piece_store = v.fp32 ? "st.global.u32" : "st.global.v2.u32";
    CHECK((result.ptx.find("st.global.v4") != std::string::npos) == ((v.vec && !pieces) || k_major));
    if (pieces) CHECK(result.ptx.find(piece_store) != std::string::npos);
    CHECK((result.ptx.find("prmt.b32") != std::string::npos) == k_major);
    CHECK(result.ptx.find("cvt.rn.satfinite.e4m3x2.f32") != std::string::npos);
    CHECK(result.ptx.find(".local") == std::string::npos);
  }
}
