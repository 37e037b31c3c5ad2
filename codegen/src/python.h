// Python's printing rules, which Jinja2 output follows.
#pragma once
#include <string>
#include <string_view>

namespace dg::codegen::python {

// repr(float): shortest round-trip digits, e.g. 1.5, 3.0, 1e-05, 1e+16, inf, nan.
std::string float_repr(double d);
// repr(str): 'text' with Python's quote choice and escapes.
std::string string_repr(std::string_view s);

}  // namespace dg::codegen::python
