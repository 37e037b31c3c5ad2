#include "jit/kernel.h"

#include <cstring>

namespace dg::jit {

KernelKey::KernelKey(uint32_t family_id, std::initializer_list<int64_t> values) : family(family_id) {
  for (int64_t v : values) {
    if (count == kMaxParams) break;  // families stay far below the limit; see the static_asserts there
    params[count++] = v;
  }
}

bool KernelKey::operator==(const KernelKey& o) const {
  return family == o.family && count == o.count && std::memcmp(params, o.params, count * sizeof(int64_t)) == 0;
}

uint64_t KernelKey::hash() const {
  uint64_t h = 0x9e3779b97f4a7c15ull ^ (static_cast<uint64_t>(family) << 32 | count);
  for (uint32_t i = 0; i < count; ++i) {
    h ^= static_cast<uint64_t>(params[i]) + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  }
  return h;
}

}  // namespace dg::jit
