// The host tests' view of the fake driver (tests/fake_driver): the library libdg loaded, its
// counters, and the launches it saw.
#pragma once
#include <dlfcn.h>
#include <doctest/doctest.h>

#include <cstring>
#include <string>
#include <vector>

#include "fake_driver/fake_cuda.h"
#include "ops/gemm.h"
#include "ops/hc_prenorm_gemm.h"
#include "ops/layout.h"
#include "ops/quantize.h"
#include "ops/skinny_gemm.h"
#include "ops/transpose.h"

namespace dg::test {

struct Launch {
  fake_cuda_launch config;
  std::string kernel;
  std::vector<unsigned char> params;  // the first kernel argument's bytes (Sm90GemmParams, TransposeParams,
                                      // KGroupedPackParams, HcPrenorm(Tma)Params, QuantParams)
  std::vector<unsigned char> slots;   // K-grouped GEMMs: the second argument's (KGroupedSlots)
};

class FakeDriver {
 public:
  // `param_bytes` of the first argument are copied from launches of kernels named `dg_sm90_*`, and
  // the TransposeParams of the operand transpose's launches.
  explicit FakeDriver(size_t param_bytes) : param_bytes_(param_bytes) {
    // The same library libdg opens: the first libcuda.so.1 on LD_LIBRARY_PATH (ctest sets it).
    lib_ = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    REQUIRE_MESSAGE(lib_ != nullptr, "no libcuda.so.1 found: run through ctest, which puts the fake on LD_LIBRARY_PATH");
    set_hook_ = reinterpret_cast<decltype(set_hook_)>(dlsym(lib_, "fake_cuda_set_launch_hook"));
    get_counters_ = reinterpret_cast<decltype(get_counters_)>(dlsym(lib_, "fake_cuda_get_counters"));
    REQUIRE_MESSAGE(bool(set_hook_ && get_counters_), "libcuda.so.1 is a real driver, not tests/fake_driver: run through ctest");
    set_hook_(&FakeDriver::record, this);
  }
  ~FakeDriver() {
    set_hook_(nullptr, nullptr);
    dlclose(lib_);
  }
  FakeDriver(const FakeDriver&) = delete;
  FakeDriver& operator=(const FakeDriver&) = delete;

  fake_cuda_counters counters() const {
    fake_cuda_counters c;
    get_counters_(&c);
    return c;
  }
  std::vector<Launch> take() { return std::move(launches_); }

 private:
  static void record(const fake_cuda_launch* l, void** args, void* user) {
    auto* self = static_cast<FakeDriver*>(user);
    Launch r{*l, l->kernel, {}, {}};
    const auto* p = static_cast<const unsigned char*>(args[0]);
    if (r.kernel.rfind("dg_sm90_", 0) == 0) r.params.assign(p, p + self->param_bytes_);
    if (r.kernel.rfind("dg_sm90_", 0) == 0 && r.kernel.find("_gemm_kg_") != std::string::npos) {
      const auto* q = static_cast<const unsigned char*>(args[1]);
      r.slots.assign(q, q + sizeof(dg::ops::KGroupedSlots));
    }
    if (r.kernel == dg::ops::transpose_kernel_spec().kernel_name) r.params.assign(p, p + sizeof(dg::ops::TransposeParams));
    if (r.kernel.rfind("dg_skinny_", 0) == 0) r.params.assign(p, p + sizeof(dg::ops::SkinnyGemmParams));
    if (r.kernel == "dg_hc_prenorm_gemm") r.params.assign(p, p + sizeof(dg::ops::HcPrenormParams));
    if (r.kernel == "dg_hc_prenorm_gemm_tma") r.params.assign(p, p + sizeof(dg::ops::HcPrenormTmaParams));
    if (r.kernel.rfind("dg_k_grouped_pack_", 0) == 0) r.params.assign(p, p + sizeof(dg::ops::KGroupedPackParams));
    if (r.kernel.rfind("dg_quantize_fp8_k_grouped_", 0) == 0) r.params.assign(p, p + sizeof(dg::ops::KGroupedQuantParams));
    else if (r.kernel.rfind("dg_quantize_", 0) == 0) r.params.assign(p, p + sizeof(dg::ops::QuantParams));
    self->launches_.push_back(std::move(r));
  }

  void* lib_ = nullptr;
  void (*set_hook_)(fake_cuda_launch_hook, void*) = nullptr;
  void (*get_counters_)(fake_cuda_counters*) = nullptr;
  size_t param_bytes_;
  std::vector<Launch> launches_;
};

}  // namespace dg::test
