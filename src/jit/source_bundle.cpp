#include "jit/source_bundle.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "dg_embedded.h"
#include "runtime/log.h"
#include "runtime/status.h"

namespace dg::jit {
namespace {

constexpr const char* kIncludePrefix = "include/";
constexpr const char* kEmbedded = "embedded";

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

// A development tree is small: these bound the walk of a directory given by mistake ("/").
constexpr int kMaxDepth = 16;
constexpr size_t kMaxFiles = 4096;
constexpr uintmax_t kMaxFileBytes = uintmax_t(16) << 20;

// Adds the .j2 and .cuh files under dir/sub (not following directory links, so a link loop is
// walked once); false with *error set when the tree cannot be read or is not a template tree.
bool add_tree(const std::filesystem::path& dir, const std::string& sub, std::vector<std::string>* paths,
              std::string* error) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path root = dir / sub;
  if (!fs::is_directory(root, ec)) {
    *error = fmt::format("{} is not a directory{}", root.string(), ec ? " (" + ec.message() + ")" : "");
    return false;
  }
  fs::recursive_directory_iterator it(root, fs::directory_options::none, ec), end;
  for (; !ec && it != end; it.increment(ec)) {
    if (it.depth() > kMaxDepth) {
      *error = fmt::format("{} is nested more than {} directories deep", root.string(), kMaxDepth);
      return false;
    }
    const std::string ext = it->path().extension().string();
    if (ext != ".j2" && ext != ".cuh") continue;
    std::error_code type_ec;
    if (!it->is_regular_file(type_ec)) continue;  // FIFOs, sockets, dangling links
    if (paths->size() == kMaxFiles) {
      *error = fmt::format("{} holds more than {} templates and headers", dir.string(), kMaxFiles);
      return false;
    }
    paths->push_back(fs::relative(it->path(), dir, type_ec).generic_string());
    if (type_ec) break;
  }
  if (ec) {
    *error = fmt::format("cannot read {}: {}", root.string(), ec.message());
    return false;
  }
  return true;
}

}  // namespace

SourceBundle load_source_bundle(const char* dir) {
  SourceBundle b;
  if (dir == nullptr || dir[0] == '\0') {
    for (const embedded::File& f : embedded::files()) add(&b, std::string(f.path), std::string(f.data));
    b.origin = kEmbedded;
    b.hash = hash_of(b);
    return b;
  }
  namespace fs = std::filesystem;
  b.origin = dir;
  std::vector<std::string> paths;
  std::string why;
  if (!add_tree(dir, "kernels", &paths, &why) || !add_tree(dir, "include", &paths, &why)) {
    b.error = fmt::format("DG_TEMPLATE_DIR={} is not a usable template tree: {} (expected the templates/ directory of "
                          "a libdg source tree, holding kernels/*.cu.j2 and include/dg/*.cuh)",
                          dir, why);
    return b;
  }
  std::sort(paths.begin(), paths.end());
  for (const std::string& p : paths) {
    const std::string path = std::string(dir) + "/" + p;
    std::error_code ec;
    const uintmax_t size = fs::file_size(path, ec);
    if (ec || size > kMaxFileBytes) {
      b.error = fmt::format("DG_TEMPLATE_DIR={}: {} {}", dir, path,
                            ec ? "cannot be read: " + ec.message() : fmt::format("is larger than {} bytes", kMaxFileBytes));
      return b;
    }
    std::ifstream in(path, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    if (!in) {
      b.error = fmt::format("DG_TEMPLATE_DIR={}: cannot read {}", dir, path);
      return b;
    }
    add(&b, p, ss.str());
  }
  b.hash = hash_of(b);
  log::info("JIT: templates and headers from DG_TEMPLATE_DIR={}", dir);
  return b;
}

const std::string* SourceBundle::find_template(const std::string& name) const {
  for (const auto& [p, c] : templates)
    if (p == name) return &c;
  return nullptr;
}

dg_status SourceBundle::get_template(const std::string& name, const std::string** text) const {
  *text = find_template(name);
  if (*text != nullptr) return DG_SUCCESS;
  if (origin == kEmbedded) return fail(DG_ERROR_INTERNAL, "no template {} among the embedded templates", name);
  return fail(DG_ERROR_INVALID_ARGUMENT,
              "DG_TEMPLATE_DIR={}: {}/{} is missing or not a regular file (the tree lacks a template this libdg "
              "needs; point DG_TEMPLATE_DIR at the templates/ directory of the same libdg version)",
              origin, origin, name);
}

const SourceBundle& source_bundle() {
  static const SourceBundle b = load_source_bundle(std::getenv("DG_TEMPLATE_DIR"));
  return b;
}

dg_status check_source_bundle() {
  const SourceBundle& b = source_bundle();
  if (b.error.empty()) return DG_SUCCESS;
  return fail(DG_ERROR_INVALID_ARGUMENT, "{}", b.error);
}

}  // namespace dg::jit
