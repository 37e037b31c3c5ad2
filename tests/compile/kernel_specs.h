// Representative kernel specs of every family, built by the same ops/ functions the library uses,
// and their contexts as JSON: the compile tests render them (and write them for the Jinja2
// differential test), and the fuzz seeds pair them with their templates.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "dg/codegen/value.h"
#include "jit/kernel.h"

namespace dg::test {

// family (template file name without .cu.j2) -> specs. Throws std::runtime_error naming the
// problem when a heuristic refuses one of the representative problems.
std::map<std::string, std::vector<dg::jit::KernelSpec>> representative_kernel_specs();

// JSON text of a value (maps keep their sorted key order; doubles round-trip).
std::string to_json(const dg::codegen::Value& v);

}  // namespace dg::test
