// The disk cache (atomic writes, corruption, concurrency across threads and processes), the
// once-per-key build map behind the in-memory kernel cache, and the two-step runner of prepares.
#include <doctest/doctest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <random>
#include <stdexcept>
#include <thread>

#include "jit/concurrent.h"
#include "jit/disk_cache.h"
#include "jit/kernel.h"
#include "jit/once_map.h"
#include "runtime/status.h"

namespace fs = std::filesystem;
using dg::jit::Digest;
using dg::jit::DiskCache;

namespace {

struct TempDir {
  fs::path path;
  TempDir() {
    char tmpl[] = "/tmp/dg-cache-test-XXXXXX";
    REQUIRE(mkdtemp(tmpl) != nullptr);
    path = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    fs::permissions(path, fs::perms::owner_all, ec);
    fs::remove_all(path, ec);
  }
};

// Captures warnings so tests can assert that corruption is reported.
struct WarningCapture {
  static inline std::mutex m;
  static inline std::vector<std::string> lines;
  WarningCapture() {
    std::lock_guard<std::mutex> lock(m);
    lines.clear();
    dg_set_log_callback(
        [](int32_t level, const char* msg, void*) {
          if (level < DG_LOG_WARN) return;
          std::lock_guard<std::mutex> lock(m);
          lines.emplace_back(msg);
        },
        nullptr);
  }
  ~WarningCapture() { dg_set_log_callback(nullptr, nullptr); }
  bool saw(const std::string& needle) {
    std::lock_guard<std::mutex> lock(m);
    for (const auto& l : lines)
      if (l.find(needle) != std::string::npos) return true;
    return false;
  }
};

std::vector<char> random_cubin(size_t size, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<char> v(size);
  for (char& c : v) c = static_cast<char>(rng());
  return v;
}

size_t count_files(const fs::path& dir) {
  size_t n = 0;
  for (auto& e : fs::directory_iterator(dir)) n += e.is_regular_file();
  return n;
}

}  // namespace

TEST_CASE("digests are stable, 128-bit and input-sensitive") {
  const Digest a = dg::jit::digest("kernel A");
  CHECK(a.hex().size() == 32);
  CHECK(dg::jit::digest("kernel A") == a);
  CHECK(!(dg::jit::digest("kernel B") == a));
  CHECK(!(dg::jit::digest("") == a));
  CHECK(a.words[0] != a.words[1]);
}

TEST_CASE("disk cache round trip") {
  TempDir tmp;
  DiskCache cache(tmp.path.string());
  REQUIRE(cache.enabled());
  const Digest key = dg::jit::digest("key 1");
  std::vector<char> out;
  CHECK_FALSE(cache.load("layout", key, &out));  // quiet miss
  const auto cubin = random_cubin(12345, 1);
  cache.store("layout", key, cubin);
  REQUIRE(cache.load("layout", key, &out));
  CHECK(out == cubin);
  CHECK(cache.path_for("layout", key).find(tmp.path.string() + "/libdg/layout-") == 0);
  CHECK(count_files(tmp.path / "libdg") == 1);  // no temp files left behind
  // A different key with the same family is a different file.
  CHECK_FALSE(cache.load("layout", dg::jit::digest("key 2"), &out));
}

TEST_CASE("corrupt or truncated entries are misses with a warning, then replaced") {
  TempDir tmp;
  DiskCache cache(tmp.path.string());
  const Digest key = dg::jit::digest("corruptible");
  const auto cubin = random_cubin(4096, 2);
  const std::string path = cache.path_for("gemm", key);
  std::vector<char> out;

  auto rewrite = [&](auto&& mutate) {
    cache.store("gemm", key, cubin);
    std::ifstream in(path, std::ios::binary);
    std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    mutate(bytes);
    std::ofstream(path, std::ios::binary | std::ios::trunc).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  };

  SUBCASE("flipped payload byte") {
    WarningCapture w;
    rewrite([](std::vector<char>& b) { b[b.size() / 2] ^= 0x40; });
    CHECK_FALSE(cache.load("gemm", key, &out));
    CHECK(w.saw("checksum mismatch"));
  }
  SUBCASE("truncated payload") {
    WarningCapture w;
    rewrite([](std::vector<char>& b) { b.resize(b.size() - 100); });
    CHECK_FALSE(cache.load("gemm", key, &out));
    CHECK(w.saw("truncated payload"));
  }
  SUBCASE("truncated header") {
    WarningCapture w;
    rewrite([](std::vector<char>& b) { b.resize(10); });
    CHECK_FALSE(cache.load("gemm", key, &out));
    CHECK(w.saw("truncated header"));
  }
  SUBCASE("bad magic") {
    WarningCapture w;
    rewrite([](std::vector<char>& b) { b[0] = 'X'; });
    CHECK_FALSE(cache.load("gemm", key, &out));
    CHECK(w.saw("bad magic"));
  }
  SUBCASE("empty payload (with its checksum right)") {
    WarningCapture w;
    cache.store("gemm", key, {});
    CHECK_FALSE(cache.load("gemm", key, &out));
    CHECK(out.empty());
    CHECK(w.saw("empty payload"));
  }
  SUBCASE("entry stored under another key") {
    WarningCapture w;
    cache.store("gemm", dg::jit::digest("other"), cubin);
    fs::rename(cache.path_for("gemm", dg::jit::digest("other")), path);
    CHECK_FALSE(cache.load("gemm", key, &out));
    CHECK(w.saw("key mismatch"));
  }
  // After the miss the caller recompiles and stores: the file is valid again.
  cache.store("gemm", key, cubin);
  REQUIRE(cache.load("gemm", key, &out));
  CHECK(out == cubin);
}

TEST_CASE("an unwritable cache directory degrades to memory-only with a warning") {
  if (geteuid() == 0) {
    // root ignores permission bits; use a path under a regular file instead.
    TempDir tmp;
    std::ofstream(tmp.path / "file") << "x";
    WarningCapture w;
    DiskCache cache((tmp.path / "file").string());
    CHECK_FALSE(cache.enabled());
    CHECK(w.saw("memory only"));
    return;
  }
  TempDir tmp;
  fs::permissions(tmp.path, fs::perms::owner_read | fs::perms::owner_exec);
  WarningCapture w;
  DiskCache cache(tmp.path.string());
  CHECK_FALSE(cache.enabled());
  CHECK(w.saw("memory only"));
}

TEST_CASE("an empty root disables the disk cache quietly") {
  DiskCache cache("");
  CHECK_FALSE(cache.enabled());
  std::vector<char> out;
  CHECK_FALSE(cache.load("x", dg::jit::digest("k"), &out));
  cache.store("x", dg::jit::digest("k"), {'a'});  // a no-op, not a crash
}

TEST_CASE("concurrent writers and readers in threads never see a partial entry") {
  TempDir tmp;
  DiskCache cache(tmp.path.string());
  const Digest key = dg::jit::digest("contended");
  const auto cubin = random_cubin(1 << 20, 3);
  std::atomic<int> bad{0}, hits{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 20; ++i) {
        if ((t + i) % 2 == 0) {
          cache.store("gemm", key, cubin);
        } else {
          std::vector<char> out;
          if (cache.load("gemm", key, &out)) {
            ++hits;
            if (out != cubin) ++bad;
          }
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  CHECK(bad == 0);
  CHECK(hits > 0);
  CHECK(count_files(tmp.path / "libdg") == 1);
}

TEST_CASE("concurrent processes writing the same entry leave one valid file") {
  TempDir tmp;
  const Digest key = dg::jit::digest("multi-process");
  const auto cubin = random_cubin(256 << 10, 4);
  std::vector<pid_t> children;
  for (int p = 0; p < 4; ++p) {
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      DiskCache cache(tmp.path.string());
      for (int i = 0; i < 25; ++i) {
        cache.store("gemm", key, cubin);
        std::vector<char> out;
        if (cache.load("gemm", key, &out) && out != cubin) _exit(3);
      }
      _exit(0);
    }
    children.push_back(pid);
  }
  for (pid_t pid : children) {
    int status = 0;
    REQUIRE(waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
  }
  DiskCache cache(tmp.path.string());
  std::vector<char> out;
  REQUIRE(cache.load("gemm", key, &out));
  CHECK(out == cubin);
  CHECK(count_files(tmp.path / "libdg") == 1);
}

TEST_CASE("OnceMap builds each key once under contention and retries failures") {
  struct IntHash {
    size_t operator()(int k) const { return std::hash<int>()(k); }
  };
  dg::jit::OnceMap<int, int, IntHash> map;
  std::atomic<int> builds{0};
  std::atomic<int> hits{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 16; ++t) {
    threads.emplace_back([&] {
      const int* v = nullptr;
      bool hit = false;
      const dg_status s = map.get(
          7,
          [&](int* out) {
            ++builds;
            std::this_thread::sleep_for(std::chrono::milliseconds(50));  // let the others pile up
            *out = 49;
            return DG_SUCCESS;
          },
          &v, &hit);
      CHECK(s == DG_SUCCESS);
      CHECK(*v == 49);
      hits += hit;
    });
  }
  for (auto& th : threads) th.join();
  CHECK(builds == 1);
  CHECK(hits == 15);

  int attempts = 0;
  const int* v = nullptr;
  bool hit = false;
  auto failing = [&](int*) {
    ++attempts;
    return dg::fail(DG_ERROR_COMPILE, "synthetic failure {}", attempts);
  };
  CHECK(map.get(8, failing, &v, &hit) == DG_ERROR_COMPILE);
  CHECK(map.get(8, failing, &v, &hit) == DG_ERROR_COMPILE);
  CHECK(attempts == 2);  // not cached
  CHECK(std::string(dg_last_error()) == "synthetic failure 2");
  CHECK(map.get(8, [](int* out) { *out = 1; return DG_SUCCESS; }, &v, &hit) == DG_SUCCESS);
  CHECK(*v == 1);
}

TEST_CASE("run_concurrently overlaps its two steps and reports main's failure, then side's") {
  using dg::jit::run_concurrently;
  // Each step waits for the other to have started: run one after the other, both would time out.
  std::atomic<bool> main_started{false}, side_started{false};
  auto wait_for = [](const std::atomic<bool>& flag) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (!flag && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
    return flag.load();
  };
  std::thread::id side_thread;
  const dg_status both = run_concurrently(
      [&] {
        main_started = true;
        return wait_for(side_started) ? DG_SUCCESS : dg::fail(DG_ERROR_INTERNAL, "side never started");
      },
      [&] {
        side_thread = std::this_thread::get_id();
        side_started = true;
        return wait_for(main_started) ? DG_SUCCESS : dg::fail(DG_ERROR_INTERNAL, "main never started");
      });
  CHECK_MESSAGE(both == DG_SUCCESS, dg_last_error());
  CHECK(side_thread != std::this_thread::get_id());

  auto ok = [] { return DG_SUCCESS; };
  auto side_fails = [] { return dg::fail(DG_ERROR_COMPILE, "side failed"); };
  dg::fail(DG_ERROR_INTERNAL, "stale");
  CHECK(run_concurrently(ok, side_fails) == DG_ERROR_COMPILE);
  CHECK(std::string(dg_last_error()) == "side failed");  // the side thread's message, here
  CHECK(run_concurrently([] { return dg::fail(DG_ERROR_UNSUPPORTED, "main failed"); }, side_fails) ==
        DG_ERROR_UNSUPPORTED);
  CHECK(std::string(dg_last_error()) == "main failed");
  CHECK(run_concurrently(ok, []() -> dg_status { throw std::runtime_error("boom"); }) == DG_ERROR_INTERNAL);
  CHECK(std::string(dg_last_error()).find("boom") != std::string::npos);
  CHECK(run_concurrently(ok, ok) == DG_SUCCESS);
}

TEST_CASE("kernel keys compare and hash by family and parameters") {
  using dg::jit::KernelKey;
  const KernelKey a(dg::jit::kFamilyLayout, {1, 0});
  CHECK(a == KernelKey(dg::jit::kFamilyLayout, {1, 0}));
  CHECK(a.hash() == KernelKey(dg::jit::kFamilyLayout, {1, 0}).hash());
  CHECK_FALSE(a == KernelKey(dg::jit::kFamilyLayout, {1, 1}));
  CHECK_FALSE(a == KernelKey(dg::jit::kFamilySm90Gemm, {1, 0}));
  CHECK_FALSE(a == KernelKey(dg::jit::kFamilyLayout, {1, 0, 0}));
  CHECK(a.hash() != KernelKey(dg::jit::kFamilyLayout, {0, 1}).hash());
}
