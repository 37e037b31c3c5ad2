// The template engine on arbitrary template text, with a context of every value type. Rendering
// may fail only with a TemplateError (name:line:col); anything else (another exception, a crash, a
// sanitizer report, unbounded memory) is a bug.
#include <string>

#include "dg/codegen/template.h"
#include "fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using dg::codegen::Value;
  static const Value context = Value::map({
      {"n", 7},
      {"big", int64_t(1) << 62},
      {"neg", -3},
      {"f", 1.5},
      {"s", "text"},
      {"empty", ""},
      {"flag", true},
      {"none", nullptr},
      {"l", Value::list({1, "a", 2.5, Value::list({3, 4})})},
      {"m", Value::map({{"k", 1}, {"inner", Value::map({{"x", "y"}})}})},
  });
  const std::string source(reinterpret_cast<const char*>(data), size);
  try {
    const std::string out = dg::codegen::render(source, "fuzz.j2", context);
    FUZZ_ASSERT(out.size() <= (size_t(1) << 26));
  } catch (const dg::codegen::TemplateError& e) {
    FUZZ_ASSERT(e.line() >= 1 && e.column() >= 1);
    FUZZ_ASSERT(std::string(e.what()).rfind("fuzz.j2:", 0) == 0);
  }
  return 0;
}
