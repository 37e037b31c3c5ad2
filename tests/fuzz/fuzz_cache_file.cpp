// The JIT cache reader on arbitrary entry files: whatever sits under an entry's name (bytes, a
// valid entry with bytes changed, a link, a FIFO, a directory), DiskCache::load returns at once and
// serves only a payload whose header, size and checksum are right; otherwise it is a miss.
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "dg.h"
#include "fuzz.h"
#include "fuzz_inputs.h"
#include "jit/disk_cache.h"

namespace {

std::string scratch_dir() {
  static const std::string dir = [] {
    char tmpl[] = "/tmp/dg-fuzz-cache-XXXXXX";
    FUZZ_ASSERT(mkdtemp(tmpl) != nullptr);
    dg_set_log_level(DG_LOG_OFF);  // every corrupt entry warns
    return std::string(tmpl);
  }();
  return dir;
}

uint64_t fnv1a(const char* p, size_t n) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < n; ++i) h = (h ^ static_cast<unsigned char>(p[i])) * 0x100000001b3ull;
  return h;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static dg::jit::DiskCache cache(scratch_dir());
  FUZZ_ASSERT(cache.enabled());
  using namespace dg::fuzz;
  const auto key = dg::jit::digest(kCacheKeyText);
  const std::string path = cache.path_for(kCacheFamily, key);
  std::error_code ec;
  std::filesystem::remove_all(path, ec);
  std::filesystem::remove_all(path + ".target", ec);
  const int mode = size > 0 ? (data[0] & ~kCacheReenter) % kCacheModes : kCacheBytes;
  const bool reenter = size > 0 && (data[0] & kCacheReenter) != 0;
  const std::vector<char> bytes(reinterpret_cast<const char*>(data) + (size > 0), reinterpret_cast<const char*>(data) + size);
  switch (mode) {
    case kCacheBytes:
    case kCacheBytesAgain:
      std::ofstream(path, std::ios::binary).write(bytes.data(), std::streamsize(bytes.size()));
      break;
    case kCacheOverwrite: {
      cache.store(kCacheFamily, key, std::vector<char>(200, 'p'));
      std::fstream f(path, std::ios::binary | std::ios::in | std::ios::out);
      for (size_t i = 0; i + 1 < bytes.size(); i += 2) {
        f.seekp(static_cast<unsigned char>(bytes[i]) % 240);
        f.put(bytes[i + 1]);
      }
      break;
    }
    case kCacheLink:
      std::ofstream(path + ".target", std::ios::binary).write(bytes.data(), std::streamsize(bytes.size()));
      FUZZ_ASSERT(symlink((path + ".target").c_str(), path.c_str()) == 0);
      break;
    case kCacheFifo:
      FUZZ_ASSERT(mkfifo(path.c_str(), 0644) == 0);
      break;
    default:
      FUZZ_ASSERT(mkdir(path.c_str(), 0755) == 0);
      break;
  }
  // Re-entry: the warning's callback loads the same entry (its own warnings are dropped) and the
  // outcome must be the outer load's.
  static int nested = -1;
  nested = -1;
  if (reenter) {
    dg_set_log_callback(
        [](int32_t, const char*, void*) {
          std::vector<char> again;
          nested = cache.load(kCacheFamily, dg::jit::digest(kCacheKeyText), &again) ? 1 : 0;
        },
        nullptr);
    dg_set_log_level(DG_LOG_WARN);
  }
  std::vector<char> out;
  const bool loaded = cache.load(kCacheFamily, key, &out);
  if (reenter) {
    dg_set_log_level(DG_LOG_OFF);
    dg_set_log_callback(nullptr, nullptr);
    FUZZ_ASSERT(nested != 1);  // a warning means the entry is not served, also when read again
    FUZZ_ASSERT(!loaded || nested == -1);  // a served entry warns about nothing
  }
  if (loaded) {
    // Served: a non-empty payload from a regular file whose header matches it.
    FUZZ_ASSERT(!out.empty());
    struct stat st{};
    FUZZ_ASSERT(lstat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode));
    std::ifstream in(path, std::ios::binary);
    const std::string file((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    FUZZ_ASSERT(file.size() == 40 + out.size());
    FUZZ_ASSERT(std::memcmp(file.data(), "DGKC", 4) == 0);
    FUZZ_ASSERT(std::memcmp(file.data() + 40, out.data(), out.size()) == 0);
    uint64_t checksum = 0;
    std::memcpy(&checksum, file.data() + 32, 8);
    FUZZ_ASSERT(checksum == fnv1a(out.data(), out.size()));
  } else {
    FUZZ_ASSERT(out.empty());
  }
  return 0;
}
