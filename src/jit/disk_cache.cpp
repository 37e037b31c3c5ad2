#include "jit/disk_cache.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <random>

#include "runtime/log.h"

namespace dg::jit {
namespace {

constexpr char kMagic[4] = {'D', 'G', 'K', 'C'};
constexpr uint32_t kFormatVersion = 1;

struct FileHeader {
  char magic[4];
  uint32_t format_version;
  uint64_t key[2];
  uint64_t payload_size;
  uint64_t payload_checksum;
};
static_assert(sizeof(FileHeader) == 40, "on-disk header layout");

uint64_t fnv1a(const void* data, size_t size, uint64_t seed) {
  const auto* p = static_cast<const unsigned char*>(data);
  uint64_t h = seed;
  for (size_t i = 0; i < size; ++i) h = (h ^ p[i]) * 0x100000001b3ull;
  return h;
}

uint64_t splitmix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// mkdir -p; true when `dir` exists as a directory afterwards.
bool make_dirs(const std::string& dir) {
  std::string partial;
  for (size_t i = 0; i <= dir.size(); ++i) {
    if (i == dir.size() || (dir[i] == '/' && i > 0)) {
      partial = dir.substr(0, i);
      if (mkdir(partial.c_str(), 0755) != 0 && errno != EEXIST) return false;
    }
  }
  struct stat st{};
  return stat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool write_all(int fd, const void* data, size_t size) {
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    ssize_t n = ::write(fd, p, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

// A unique name beside `path` for something moved out of the way.
std::string unique_sibling(const std::string& path, const char* what) {
  static std::atomic<uint64_t> counter{0};
  thread_local std::mt19937_64 rng{std::random_device{}()};
  return path + "." + what + "." + std::to_string(getpid()) + "." + std::to_string(counter++) + "." +
         std::to_string(rng() & 0xffffff);
}

// Writes `parts` to a unique temp file beside `path`, fsyncs it and renames it over `path`.
bool atomic_write(const std::string& path, std::initializer_list<std::pair<const void*, size_t>> parts, std::string* why) {
  const std::string tmp = unique_sibling(path, "tmp");
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) {
    *why = std::strerror(errno);
    return false;
  }
  bool ok = true;
  for (const auto& [data, size] : parts) ok = ok && write_all(fd, data, size);
  ok = ok && ::fsync(fd) == 0;
  if (!ok) *why = std::strerror(errno);
  ::close(fd);
  if (ok && std::rename(tmp.c_str(), path.c_str()) != 0) {
    *why = std::strerror(errno);
    ok = false;
  }
  if (!ok) ::unlink(tmp.c_str());
  return ok;
}

// rename() cannot put a file over a directory: one planted at an entry's path would make every
// process recompile that kernel. Moving it aside keeps whatever it holds.
void displace_directory(const std::string& path) {
  struct stat st{};
  if (::lstat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return;
  const std::string aside = unique_sibling(path, "displaced");
  if (std::rename(path.c_str(), aside.c_str()) == 0)
    log::warn("JIT cache entry {} was a directory; moved it to {} to store the kernel there", path, aside);
  else if (errno != ENOENT)  // ENOENT: another process moved it first
    log::warn("JIT cache entry {} is a directory and cannot be moved aside ({}); remove it", path,
              std::strerror(errno));
}

}  // namespace

std::string Digest::hex() const { return fmt::format("{:016x}{:016x}", words[0], words[1]); }

Digest digest(const std::string& text) {
  Digest d;
  d.words[0] = splitmix(fnv1a(text.data(), text.size(), 0xcbf29ce484222325ull));
  d.words[1] = splitmix(fnv1a(text.data(), text.size(), 0x84222325cbf29ce4ull));
  return d;
}

DiskCache::DiskCache(std::string root) {
  if (root.empty()) return;
  std::string dir = root + "/libdg";
  // A directory that exists but cannot be written (a cache warmed into a read-only image, used by
  // another user) still serves its entries; only new kernels stay in memory.
  const bool exists = make_dirs(dir);
  const int why = errno;
  if (exists && ::access(dir.c_str(), R_OK | X_OK) == 0) {
    read_only_ = ::access(dir.c_str(), W_OK) != 0;
    dir_ = std::move(dir);
    return;
  }
  log::warn("JIT cache directory {} is not usable ({}); compiled kernels are kept in memory only", dir,
            std::strerror(exists ? errno : why));
}

std::string DiskCache::path_for(const std::string& family, const Digest& key) const {
  return dir_ + "/" + family + "-" + key.hex() + ".cubin";
}

namespace {

// Reads exactly `size` bytes unless the file ends first; false on an error or a short read.
bool read_all(int fd, void* data, size_t size) {
  char* p = static_cast<char*>(data);
  while (size > 0) {
    const ssize_t n = ::read(fd, p, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

// Largest entry read back: cubins are a few MB; anything far larger is not an entry libdg wrote.
constexpr uint64_t kMaxEntryBytes = uint64_t(1) << 30;

}  // namespace

bool DiskCache::load(const std::string& family, const Digest& key, std::vector<char>* cubin) const {
  if (!enabled()) return false;
  const std::string path = path_for(family, key);
  // O_NONBLOCK: a FIFO or device planted under an entry's name must not block open() or read();
  // O_NOFOLLOW: libdg writes regular files, never links. Whatever is there is then checked to be
  // a regular file before a byte is read.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    if (errno != ENOENT) log::warn("JIT cache entry {} cannot be opened ({}); recompiling it", path, std::strerror(errno));
    return false;
  }
  struct Close {
    int fd;
    ~Close() { ::close(fd); }
  } close_fd{fd};
  struct stat st{};
  FileHeader h{};
  const char* problem = nullptr;
  if (::fstat(fd, &st) != 0) {
    problem = "cannot stat it";
  } else if (!S_ISREG(st.st_mode)) {
    problem = "not a regular file";
  } else if (static_cast<uint64_t>(st.st_size) < sizeof(FileHeader) || !read_all(fd, &h, sizeof(h))) {
    problem = "truncated header";
  } else if (std::memcmp(h.magic, kMagic, 4) != 0) {
    problem = "bad magic";
  } else if (h.format_version != kFormatVersion) {
    problem = "unknown format version";
  } else if (h.key[0] != key.words[0] || h.key[1] != key.words[1]) {
    problem = "key mismatch";
  } else if (h.payload_size != static_cast<uint64_t>(st.st_size) - sizeof(FileHeader)) {
    problem = "truncated payload";
  } else if (h.payload_size == 0) {
    problem = "empty payload";  // no compiler gives an empty cubin: the driver would refuse it
  } else if (h.payload_size > kMaxEntryBytes) {
    problem = "larger than any kernel";
  } else {
    cubin->resize(h.payload_size);
    // A file truncated or replaced in place after fstat gives a short read here (writers rename
    // whole files into place, so only something else would do that).
    if (!read_all(fd, cubin->data(), cubin->size())) {
      problem = "read error or short read";
    } else if (fnv1a(cubin->data(), cubin->size(), 0xcbf29ce484222325ull) != h.payload_checksum) {
      problem = "checksum mismatch";
    }
  }
  if (problem != nullptr) {
    log::warn("JIT cache entry {} is corrupt ({}); recompiling and replacing it", path, problem);
    cubin->clear();
    return false;
  }
  return true;
}

bool DiskCache::writable() const {
  if (!read_only_) return true;
  if (!warned_read_only_.exchange(true))
    log::warn("JIT cache directory {} is read-only: its kernels are used, new ones are kept in memory only", dir_);
  return false;
}

void DiskCache::store(const std::string& family, const Digest& key, const std::vector<char>& cubin) const {
  if (!enabled() || !writable()) return;
  FileHeader h{};
  std::memcpy(h.magic, kMagic, 4);
  h.format_version = kFormatVersion;
  h.key[0] = key.words[0];
  h.key[1] = key.words[1];
  h.payload_size = cubin.size();
  h.payload_checksum = fnv1a(cubin.data(), cubin.size(), 0xcbf29ce484222325ull);
  std::string why;
  const std::string path = path_for(family, key);
  displace_directory(path);
  if (!atomic_write(path, {{&h, sizeof(h)}, {cubin.data(), cubin.size()}}, &why)) {
    // Once per directory: a full disk or a directory made read-only later fails every write.
    if (!warned_write_.exchange(true))
      log::warn("cannot write JIT cache entry {}: {} (further write failures in {} are logged at debug level)", path,
                why, dir_);
    else
      log::debug("cannot write JIT cache entry {}: {}", path, why);
  }
}

void DiskCache::store_side_file(const std::string& family, const Digest& key, const std::string& ext,
                                const std::string& contents) const {
  if (!enabled() || !writable()) return;
  std::string path = path_for(family, key);
  path.replace(path.size() - 5, 5, ext);  // ".cubin" -> ".<ext>"
  std::string why;
  if (!atomic_write(path, {{contents.data(), contents.size()}}, &why))
    log::warn("cannot write {}: {}", path, why);
  else
    log::info("JIT: wrote {}", path);
}

}  // namespace dg::jit
