// On-disk cubin cache: <root>/libdg/<family>-<32 hex digest>.cubin, one file per kernel.
// File = header (magic "DGKC", format version, key digest, payload size, payload checksum) + cubin.
// Written to a temp file in the same directory, fsynced, renamed into place: readers see a whole
// file or none; concurrent writers of the same key both write valid files and the last rename wins.
#pragma once
#include <array>
#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "dg.h"

namespace dg::jit {

struct Digest {
  std::array<uint64_t, 2> words{};
  std::string hex() const;  // 32 lowercase hex digits
  bool operator==(const Digest& o) const { return words == o.words; }
};

// 128-bit digest of `text` (two seeded FNV-1a-64 passes, each finished with a split-mix step).
Digest digest(const std::string& text);

class DiskCache {
 public:
  // `root` is the cache root ("" disables the disk cache). An unusable directory degrades to
  // memory-only with one warning; one that can be read but not written serves its entries and
  // skips writes, with one warning at the first skipped write.
  explicit DiskCache(std::string root);

  bool enabled() const { return !dir_.empty(); }
  const std::string& directory() const { return dir_; }
  std::string path_for(const std::string& family, const Digest& key) const;

  // true and fills `cubin` on a valid entry. A missing file is a quiet miss; a corrupt or
  // truncated file is a miss with a warning (the caller recompiles and store() replaces it).
  bool load(const std::string& family, const Digest& key, std::vector<char>* cubin) const;

  bool read_only() const { return read_only_; }

  // Atomically writes the entry; the first failure is logged as a warning, later ones at debug
  // level (the kernel still works). A directory found at the entry's path (which a rename cannot
  // replace) is moved aside to <entry>.displaced.<unique>, with a warning naming both paths, so
  // that the entry is stored once instead of every process recompiling the kernel; its contents
  // are kept.
  void store(const std::string& family, const Digest& key, const std::vector<char>& cubin) const;

  // Also keep a side file (source, PTX) next to the entry: <entry path minus .cubin>.<ext>.
  void store_side_file(const std::string& family, const Digest& key, const std::string& ext,
                       const std::string& contents) const;

 private:
  // False (after one warning) when the directory is read-only.
  bool writable() const;

  std::string dir_;
  bool read_only_ = false;
  mutable std::atomic<bool> warned_read_only_{false};
  mutable std::atomic<bool> warned_write_{false};
};

}  // namespace dg::jit
