// Where templates and device headers come from: the copies embedded in the library, or, when
// DG_TEMPLATE_DIR is set, a source tree on disk (read once per process, for development).
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "dg.h"

namespace dg::jit {

struct SourceBundle {
  std::string origin;  // "embedded" or the directory
  // Device headers as NVRTC include names ("dg/types.cuh") and contents.
  std::vector<std::pair<std::string, std::string>> headers;
  // Templates by path relative to the template root ("kernels/layout.cu.j2").
  std::vector<std::pair<std::string, std::string>> templates;
  uint64_t hash = 0;  // over every path and content

  const std::string* find_template(const std::string& name) const;
};

const SourceBundle& source_bundle();

}  // namespace dg::jit
