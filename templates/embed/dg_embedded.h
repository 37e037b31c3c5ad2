// The kernel templates and device headers as data (cmake/embed.cmake generates the bytes): the
// dg_embedded target, linked by libdg (which hands them to NVRTC) and by dg-codegen (which renders
// them), so that neither depends on the other. Paths are relative to templates/, e.g.
// "kernels/layout.cu.j2" or "include/dg/types.cuh".
#pragma once
#include <cstdint>
#include <string_view>
#include <vector>

namespace dg::embedded {

struct File {
  std::string_view path;
  std::string_view data;
};

// Every embedded file, sorted by path.
const std::vector<File>& files();

// The file at `path`, or nullptr.
const File* find(std::string_view path);

}  // namespace dg::embedded
