// The template engine on arbitrary template text, with a context of every value type, or the
// input's own context laid over it (dg::fuzz::kContextTag: the seeds carry the contexts the
// library renders its kernel templates with, so that mutants of a kernel template render deep
// instead of stopping at the first undefined name). Rendering may fail only with a TemplateError
// (name:line:col); anything else (another exception, a crash, a sanitizer report, unbounded
// memory) is a bug.
#include <stdexcept>
#include <string>

#include "dg/codegen/json.h"
#include "dg/codegen/template.h"
#include "fuzz.h"
#include "fuzz_inputs.h"

namespace {

using dg::codegen::Value;

const Value& base_context() {
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
  return context;
}

Value context_for(const std::string& source) {
  const std::string_view tag = dg::fuzz::kContextTag;
  if (source.compare(0, tag.size(), tag) != 0) return base_context();
  const size_t end = source.find("#}", tag.size());
  if (end == std::string::npos) return base_context();
  Value own;
  try {
    own = dg::codegen::parse_json(std::string_view(source).substr(tag.size(), end - tag.size()), "context");
  } catch (const std::invalid_argument&) {
    return base_context();
  }
  if (!own.is_map()) return base_context();
  Value context = base_context();
  for (const auto& [key, value] : own.as_map()) context[key] = value;
  return context;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string source(reinterpret_cast<const char*>(data), size);
  const Value context = context_for(source);
  try {
    const std::string out = dg::codegen::render(source, "fuzz.j2", context);
    FUZZ_ASSERT(out.size() <= (size_t(1) << 26));
  } catch (const dg::codegen::TemplateError& e) {
    FUZZ_ASSERT(e.line() >= 1 && e.column() >= 1);
    FUZZ_ASSERT(std::string(e.what()).rfind("fuzz.j2:", 0) == 0);
  }
  return 0;
}
