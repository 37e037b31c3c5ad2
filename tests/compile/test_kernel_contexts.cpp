// Representative template contexts of every kernel family, built by the same ops/ functions the
// library uses (kernel_specs.h). With DG_KERNEL_CONTEXTS_OUT set they are written as JSON for the
// Jinja2 differential test (tests/unit/codegen/jinja2_diff.py --contexts), so that test always
// renders the templates with the parameters the library really passes.
#include <doctest/doctest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "jit/compiler.h"
#include "kernel_specs.h"

TEST_CASE("kernel contexts: every family renders with the parameters the library passes") {
  const auto specs = dg::test::representative_kernel_specs();
  std::ostringstream json;
  json << "{\n";
  const char* sep = "";
  for (const auto& [family, list] : specs) {
    json << sep << "  \"" << family << "\": [";
    const char* item_sep = "";
    for (const dg::jit::KernelSpec& spec : list) {
      std::string source;
      CAPTURE(spec.kernel_name);
      REQUIRE_MESSAGE(dg::jit::render(spec, &source) == DG_SUCCESS, dg_last_error());
      json << item_sep << "\n    " << dg::test::to_json(spec.context);
      item_sep = ",";
    }
    json << "\n  ]";
    sep = ",\n";
  }
  json << "\n}\n";
  CHECK(specs.size() >= 4);
  if (const char* path = std::getenv("DG_KERNEL_CONTEXTS_OUT")) {
    std::ofstream(path) << json.str();
    MESSAGE("wrote " << path);
  }
}
