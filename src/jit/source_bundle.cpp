#include "jit/source_bundle.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "dg_embedded.h"
#include "runtime/log.h"

namespace dg::jit {
namespace {

constexpr const char* kIncludePrefix = "include/";

void add(SourceBundle* b, const std::string& path, std::string contents) {
  if (path.rfind(kIncludePrefix, 0) == 0) {
    b->headers.emplace_back(path.substr(std::char_traits<char>::length(kIncludePrefix)), std::move(contents));
  } else {
    b->templates.emplace_back(path, std::move(contents));
  }
}

uint64_t hash_of(const SourceBundle& b) {
  uint64_t h = 0xcbf29ce484222325ull;
  auto mix = [&h](const std::string& s) {
    for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ull;
    h = (h ^ 0xff) * 0x100000001b3ull;
  };
  for (const auto& [p, c] : b.headers) { mix(p); mix(c); }
  for (const auto& [p, c] : b.templates) { mix(p); mix(c); }
  return h;
}

SourceBundle load() {
  SourceBundle b;
  const char* dir = std::getenv("DG_TEMPLATE_DIR");
  if (dir != nullptr && dir[0] != '\0') {
    namespace fs = std::filesystem;
    std::error_code ec;
    std::vector<std::string> paths;
    for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator();
         it.increment(ec)) {
      const std::string ext = it->path().extension().string();
      if (it->is_regular_file() && (ext == ".j2" || ext == ".cuh"))
        paths.push_back(fs::relative(it->path(), dir).generic_string());
    }
    if (ec || paths.empty()) {
      log::warn("DG_TEMPLATE_DIR={} holds no templates ({}); using the embedded ones", dir,
                ec ? ec.message() : "no .j2 or .cuh files");
    } else {
      std::sort(paths.begin(), paths.end());
      for (const std::string& p : paths) {
        std::ifstream in(std::string(dir) + "/" + p, std::ios::binary);
        std::stringstream ss;
        ss << in.rdbuf();
        add(&b, p, ss.str());
      }
      b.origin = dir;
      b.hash = hash_of(b);
      log::info("JIT: templates and headers from DG_TEMPLATE_DIR={}", dir);
      return b;
    }
  }
  for (const embedded::File& f : embedded::files()) add(&b, std::string(f.path), std::string(f.data));
  b.origin = "embedded";
  b.hash = hash_of(b);
  return b;
}

}  // namespace

const std::string* SourceBundle::find_template(const std::string& name) const {
  for (const auto& [p, c] : templates)
    if (p == name) return &c;
  return nullptr;
}

const SourceBundle& source_bundle() {
  static const SourceBundle b = load();
  return b;
}

}  // namespace dg::jit
