// Reading the option structs that cross the ABI. Each starts with `size_t struct_size`, set by
// its *_INIT macro, so that fields can be appended without breaking callers built against an
// older dg.h (the Linux copy_struct_from_user rule):
//   - an older, smaller struct: its fields are read, the newer ones keep their defaults;
//   - a newer, larger struct: accepted only when the fields this library does not know are zero,
//     so a request this version cannot honour is an error rather than silently ignored.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstring>

#include "runtime/status.h"

namespace dg {

// `oldest_size` is sizeof the struct in the first release that had it.
template <typename T>
dg_status read_options(const T* in, const T& defaults, size_t oldest_size, const char* arg, const char* init_macro,
                       T* out) {
  *out = defaults;
  if (in == nullptr) return DG_SUCCESS;
  const size_t size = in->struct_size;
  if (size < oldest_size || size > 4096)
    return fail(DG_ERROR_INVALID_ARGUMENT, "{}: struct_size {} is not the size of any version of this struct "
                "(this library's is {}; initialise it with {})", arg, size, sizeof(T), init_macro);
  const auto* bytes = reinterpret_cast<const unsigned char*>(in);
  for (size_t i = sizeof(T); i < size; ++i)
    if (bytes[i] != 0)
      return fail(DG_ERROR_UNSUPPORTED, "{}: sets fields that libdg {} does not know (struct_size {}, this version's "
                  "is {}): upgrade libdg or leave them zero", arg, dg_version(), size, sizeof(T));
  std::memcpy(out, in, std::min(size, sizeof(T)));
  out->struct_size = sizeof(T);
  return DG_SUCCESS;
}

}  // namespace dg
