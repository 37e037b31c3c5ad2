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
  // Why $DG_TEMPLATE_DIR cannot be used (then nothing else is set); empty when the bundle is usable.
  std::string error;

  const std::string* find_template(const std::string& name) const;
  // The template `name` in *text. Missing from a DG_TEMPLATE_DIR tree: DG_ERROR_INVALID_ARGUMENT
  // naming the file (the tree is the user's configuration); missing from the embedded bundle:
  // DG_ERROR_INTERNAL.
  dg_status get_template(const std::string& name, const std::string** text) const;
};

// The process's bundle: $DG_TEMPLATE_DIR's, read once, or the embedded one.
const SourceBundle& source_bundle();

// DG_ERROR_INVALID_ARGUMENT with the reason when source_bundle() has an error (DG_TEMPLATE_DIR is
// not a template tree: missing kernels/ or include/, unreadable, too large); checked before any
// kernel is looked up, so a misconfigured process never falls back to other templates silently.
dg_status check_source_bundle();

// Reads the bundle from `dir` (a template tree: kernels/ and include/), or the embedded one when
// `dir` is NULL or empty. Directory links are not followed; errors go to SourceBundle::error.
SourceBundle load_source_bundle(const char* dir);

}  // namespace dg::jit
