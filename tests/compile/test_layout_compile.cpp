// Every layout-kernel configuration renders and compiles through NVRTC, without a GPU.
#include <doctest/doctest.h>

#include <unistd.h>

#include <string>

#include "jit/compiler.h"
#include "ops/layout.h"

using dg::ops::LayoutOp;

TEST_CASE("layout kernels compile for sm_90a and sm_100a") {
  dg::Config config = dg::Config::from_environment();
  config.compiler = DG_COMPILER_NVRTC;
  for (const char* arch : {"sm_90a", "sm_100a"}) {
    for (LayoutOp op : {LayoutOp::kTranspose, LayoutOp::kPackUe8m0}) {
      for (bool mn_major : {false, true}) {
        for (int tile_cols : {1, 4, 32}) {
          const dg::jit::KernelSpec spec = dg::ops::layout_kernel_spec(op, mn_major, tile_cols);
          CAPTURE(arch);
          CAPTURE(spec.kernel_name);
          dg::jit::CompileResult result;
          const dg_status s = dg::jit::compile(spec, arch, config, &result);
          REQUIRE_MESSAGE(s == DG_SUCCESS, dg_last_error());
          CHECK(result.cubin.size() > 1000);
          CHECK(result.source.find(spec.kernel_name) != std::string::npos);
          CHECK(result.source.find("{{") == std::string::npos);
        }
      }
    }
    for (int vec : {1, 4}) {
      dg::Config with_ptx = config;
      with_ptx.dump_ptx = true;
      const dg::jit::KernelSpec spec = dg::ops::k_grouped_pack_kernel_spec(vec);
      CAPTURE(arch);
      CAPTURE(spec.kernel_name);
      dg::jit::CompileResult result;
      const dg_status s = dg::jit::compile(spec, arch, with_ptx, &result);
      REQUIRE_MESSAGE(s == DG_SUCCESS, dg_last_error());
      CHECK(result.cubin.size() > 1000);
      CHECK(result.source.find(spec.kernel_name) != std::string::npos);
      CHECK(result.source.find("constexpr int kVec = " + std::to_string(vec) + ";") != std::string::npos);
      if (!result.ptx.empty()) {
        // The 16-byte path must load and store 16 bytes at a time; the prefix tables stay in the
        // kernel's parameter space (no per-thread copy to local memory).
        CHECK((result.ptx.find("ld.global.v4") != std::string::npos) == (vec == 4));
        CHECK((result.ptx.find("st.global.v4") != std::string::npos) == (vec == 4));
        CHECK(result.ptx.find(".local") == std::string::npos);
      }
    }
  }
}

TEST_CASE("template and compiler errors come back as DG_ERROR_COMPILE with the details") {
  dg::Config config = dg::Config::from_environment();
  dg::jit::KernelSpec spec = dg::ops::layout_kernel_spec(LayoutOp::kTranspose, false, 32);
  dg::jit::CompileResult result;

  SUBCASE("undefined template variable: name, line and caret") {
    spec.context = dg::codegen::Value::map({{"kernel_name", "k"}});
    REQUIRE(dg::jit::compile(spec, "sm_90a", config, &result) == DG_ERROR_COMPILE);
    const std::string msg = dg_last_error();
    CHECK(msg.find("kernels/layout.cu.j2:") != std::string::npos);
    CHECK(msg.find("op") != std::string::npos);
    CHECK(msg.find('^') != std::string::npos);
  }
  SUBCASE("missing template") {
    spec.template_name = "kernels/nope.cu.j2";
    REQUIRE(dg::jit::compile(spec, "sm_90a", config, &result) == DG_ERROR_INTERNAL);
    CHECK(std::string(dg_last_error()).find("kernels/nope.cu.j2") != std::string::npos);
  }
  SUBCASE("NVRTC error carries the compiler log") {
    spec.context = dg::codegen::Value::map({{"kernel_name", "not a valid identifier"}, {"op", "transpose"},
                                            {"input_mn_major", false}, {"tile_cols", int64_t{32}}});
    REQUIRE(dg::jit::compile(spec, "sm_90a", config, &result) == DG_ERROR_COMPILE);
    const std::string msg = dg_last_error();
    CHECK(msg.find("NVRTC failed") != std::string::npos);
    CHECK(msg.find("error") != std::string::npos);
  }
}

TEST_CASE("the nvcc path compiles the same kernel when nvcc is installed") {
  dg::Config config = dg::Config::from_environment();
  config.compiler = DG_COMPILER_NVCC;
  if (access(config.nvcc_path.c_str(), X_OK) != 0) {
    dg::jit::CompileResult result;
    CHECK(dg::jit::compile(dg::ops::layout_kernel_spec(LayoutOp::kTranspose, false, 32), "sm_90a", config, &result) ==
          DG_ERROR_UNSUPPORTED);
    CHECK(std::string(dg_last_error()).find("nvcc not found") != std::string::npos);
    return;
  }
  dg::jit::CompileResult result;
  const dg_status s = dg::jit::compile(dg::ops::layout_kernel_spec(LayoutOp::kPackUe8m0, true, 32), "sm_90a", config, &result);
  REQUIRE_MESSAGE(s == DG_SUCCESS, dg_last_error());
  CHECK(result.cubin.size() > 1000);
  CHECK(dg::jit::compiler_signature(config).rfind("nvcc", 0) == 0);
}
