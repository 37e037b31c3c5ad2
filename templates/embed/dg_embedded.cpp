#include "dg_embedded.h"

#include <algorithm>
#include <cstddef>

namespace dg::embedded {
namespace data {
struct Entry {
  const char* path;
  const char* data;
  std::size_t size;
};
extern const Entry kEntries[];
extern const std::size_t kCount;
}  // namespace data

const std::vector<File>& files() {
  static const std::vector<File> all = [] {
    std::vector<File> v;
    v.reserve(data::kCount);
    for (std::size_t i = 0; i < data::kCount; ++i)
      v.push_back({data::kEntries[i].path, {data::kEntries[i].data, data::kEntries[i].size}});
    return v;
  }();
  return all;
}

const File* find(std::string_view path) {
  const auto& all = files();
  auto it = std::lower_bound(all.begin(), all.end(), path,
                             [](const File& f, std::string_view p) { return f.path < p; });
  return it != all.end() && it->path == path ? &*it : nullptr;
}

}  // namespace dg::embedded
