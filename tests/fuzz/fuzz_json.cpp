// The JSON context reader on arbitrary bytes: it either fails with std::invalid_argument at
// name:line:col or gives a value that prints, serialises, compares equal to itself and renders.
#include <stdexcept>
#include <string>

#include "dg/codegen/json.h"
#include "dg/codegen/template.h"
#include "fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using dg::codegen::Value;
  const std::string text(reinterpret_cast<const char*>(data), size);
  Value v;
  try {
    v = dg::codegen::parse_json(text, "fuzz.json");
  } catch (const std::invalid_argument& e) {
    FUZZ_ASSERT(std::string(e.what()).rfind("fuzz.json:", 0) == 0);
    return 0;
  }
  FUZZ_ASSERT(v == v);
  (void)v.to_string();
  FUZZ_ASSERT(!v.canonical().empty());
  try {
    (void)dg::codegen::render("{{ v }}{% for x in [v] %}{{ x is defined }}{% endfor %}{{ v == v }}", "fuzz.j2",
                              Value::map({{"v", v}}));
  } catch (const dg::codegen::TemplateError&) {
  }
  return 0;
}
