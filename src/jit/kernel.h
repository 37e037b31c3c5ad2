// What the JIT produces and how a kernel family asks for one.
//
// A family describes a kernel by a KernelKey (a family tag and the integer parameters that fix
// its source: block sizes, dtypes, flags...) and, only on a cache miss, by a KernelSpec (which
// template to render with which context). The warm path hashes the small key and looks it up:
// no string is built and nothing is rendered.
#pragma once
#include <cstdint>
#include <initializer_list>
#include <string>

#include "dg/codegen/template.h"
#include "dg.h"
#include "runtime/kernel.h"

namespace dg::jit {

struct KernelKey {
  static constexpr int kMaxParams = 48;
  uint32_t family = 0;  // a FamilyId
  uint32_t count = 0;
  int64_t params[kMaxParams] = {};

  KernelKey() = default;
  KernelKey(uint32_t family, std::initializer_list<int64_t> values);
  bool operator==(const KernelKey& other) const;
  uint64_t hash() const;
};

// Kernel families, for keys and logs. Values only appended.
enum FamilyId : uint32_t {
  kFamilyLayout = 1,
  kFamilySm90Gemm = 2,
  kFamilyNvfp4Gemv = 3,
  kFamilyElementwise = 4,
  kFamilyTranspose = 5,
  kFamilySkinnyGemm = 6,
  kFamilyMqaLogits = 7,
  kFamilyPagedMqaLogits = 8,
  kFamilyPagedMqaMetadata = 9,
  kFamilyHcPrenorm = 10,
  kFamilyL2Flush = 11,
};

struct KernelSpec {
  std::string template_name;  // relative to templates/, e.g. "kernels/layout.cu.j2"
  std::string kernel_name;    // the extern "C" __global__ symbol the template defines
  codegen::Value context;     // a map; rendering it with the template gives the source
};

}  // namespace dg::jit
