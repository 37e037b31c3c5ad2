// The structured input formats of the fuzz targets: the targets read them, fuzz_seeds writes its
// seeds in them (so that a format change cannot leave the seeds behind).
#pragma once
#include <cstdint>
#include <cstddef>
#include <initializer_list>
#include <string>
#include <string_view>

#include "dg.h"

namespace dg::fuzz {

// fuzz_template: an input that starts with kContextTag, a JSON object and "#}" renders with that
// object laid over the target's own context. The whole input is the template, so the tag is a
// comment to the engine and renders to nothing.
constexpr std::string_view kContextTag = "{#context ";

// fuzz_cache_file: the first byte's low 7 bits (modulo kCacheModes) say what is put under the
// entry's name; its top bit (kCacheReenter) installs a log callback that loads the entry again
// from inside each warning the load gives.
enum CacheMode : uint8_t {
  kCacheBytes = 0,      // the rest of the input as the file
  kCacheBytesAgain = 1, // the same (raw files are the most varied case: twice the weight)
  kCacheOverwrite = 2,  // a valid entry of 200 bytes, then (offset % 240, byte) pairs from the rest
                        // overwrite bytes of it
  kCacheLink = 3,       // a symbolic link to a file of the rest
  kCacheFifo = 4,
  kCacheDirectory = 5,
  kCacheModes = 6,
  kCacheReenter = 0x80,
};
// The entry every input is stored under.
constexpr const char* kCacheFamily = "gemm";
constexpr const char* kCacheKeyText = "fuzz";

// fuzz_tensor: little-endian fields. Past the end the reader reads zeros.
struct Reader {
  const uint8_t* p;
  size_t n;
  uint64_t u(int bytes) {
    uint64_t v = 0;
    for (int i = 0; i < bytes; ++i) v |= uint64_t(n > 0 ? (--n, *p++) : 0) << (8 * i);
    return v;
  }
  // A size, stride or scalar: a selector byte below kRawDim picks one of the boundary values;
  // from kRawDim on, (selector % 8 + 1) raw bytes follow.
  static constexpr uint64_t kRawDim = 160;
  int64_t dim() {
    static const int64_t kInteresting[] = {0, 1, 2, 3, 16, 127, 128, 129, 256, 4096, INT32_MAX, int64_t(INT32_MAX) + 1,
                                           int64_t(1) << 40, int64_t(1) << 62, INT64_MAX, -1, INT64_MIN};
    const uint64_t sel = u(1);
    if (sel < kRawDim) return kInteresting[sel % (sizeof(kInteresting) / sizeof(kInteresting[0]))];
    return static_cast<int64_t>(u(int(sel % 8) + 1));
  }
};

// Writes what Reader reads.
struct Writer {
  std::string bytes;
  void u(uint64_t v, int n) {
    for (int i = 0; i < n; ++i) bytes.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  }
  void dim(int64_t v) {
    u(Reader::kRawDim + 7, 1);  // 8 raw bytes
    u(static_cast<uint64_t>(v), 8);
  }
};

// A tensor descriptor in fuzz_tensor's input: rank, dtype, DG_MAX_RANK + 1 sizes, a byte whose
// low bit says whether the strides are given, DG_MAX_RANK + 1 strides, and the data pointer / 16
// in two bytes. Rank 0 (and 5) descriptors are refused: `rank` 0 writes a placeholder.
inline void write_tensor(Writer& w, int32_t rank, dg_dtype dtype, std::initializer_list<int64_t> sizes,
                         std::initializer_list<int64_t> strides, uint16_t data_div16) {
  w.u(static_cast<uint64_t>(rank), 1);
  w.u(static_cast<uint64_t>(dtype), 1);
  auto dims = [&](std::initializer_list<int64_t> v) {
    int i = 0;
    for (int64_t x : v) w.dim(x), ++i;
    for (; i <= DG_MAX_RANK; ++i) w.dim(0);
  };
  dims(sizes);
  w.u(strides.size() > 0 ? 1 : 0, 1);
  dims(strides);
  w.u(data_div16, 2);
}

}  // namespace dg::fuzz
