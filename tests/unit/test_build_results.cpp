// What every way out of a kernel build leaves behind (jit::OnceMap): a build that throws wakes its
// waiters with an error and can be retried; failed builds keep no memory; a build that asks for
// its own key fails instead of waiting for itself; and the user's log callback, which may call
// libdg, runs only once the build has published its result (log::Deferred). Steps that would
// hang on a regression run in a child process under alarm(). A build whose nvcc scratch files
// cannot be written (a full disk) is tested through the public API.
#include <doctest/doctest.h>

#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <new>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "dg.h"
#include "in_child.h"
#include "jit/once_map.h"
#include "runtime/log.h"
#include "runtime/status.h"

namespace {

using dg::test::hang_note;
using dg::test::in_child;

struct IntHash {
  size_t operator()(int k) const { return std::hash<int>()(k); }
};
using Map = dg::jit::OnceMap<int, std::string, IntHash>;

// Starts `waiters` threads that ask for `key` while `build` (run by the first) is in progress;
// returns how many of them got `want` with a message containing `needle`.
int waiters_get(Map& map, int key, int waiters, dg_status want, const char* needle) {
  std::atomic<bool> building{false};
  std::atomic<int> matched{0};
  std::thread builder([&] {
    const std::string* v = nullptr;
    bool hit = false;
    const dg_status s = map.get(
        key,
        [&](std::string*) -> dg_status {
          building = true;
          std::this_thread::sleep_for(std::chrono::milliseconds(100));  // let the waiters pile up
          if (want == DG_ERROR_OUT_OF_MEMORY) throw std::bad_alloc();
          throw std::runtime_error("filesystem error: cannot create directories: No space left on device");
        },
        &v, &hit);
    matched += s == want && std::strstr(dg_last_error(), needle) != nullptr;
  });
  while (!building) std::this_thread::yield();
  std::vector<std::thread> threads;
  for (int i = 0; i < waiters; ++i)
    threads.emplace_back([&] {
      const std::string* v = nullptr;
      bool hit = false;
      const dg_status s = map.get(key, [](std::string* out) { *out = "late"; return DG_SUCCESS; }, &v, &hit);
      // A waiter gets the thrown build's error; one that came after it was dropped builds anew.
      matched += (s == want && std::strstr(dg_last_error(), needle) != nullptr) || (s == DG_SUCCESS && *v == "late");
    });
  builder.join();
  for (auto& t : threads) t.join();
  return matched.load();
}

}  // namespace

TEST_CASE("a build that throws publishes its error to every waiter, and the key builds again") {
  const int rc = in_child([] {
    Map map;
    if (waiters_get(map, 1, 6, DG_ERROR_INTERNAL, "No space left on device") != 7) return 1;
    if (waiters_get(map, 2, 6, DG_ERROR_OUT_OF_MEMORY, "host allocation failed") != 7) return 2;
    // Retried: nothing of a thrown build is left in the map, the next call builds.
    const std::string* v = nullptr;
    bool hit = true;
    auto throws = [](std::string*) -> dg_status { throw std::runtime_error("once"); };
    if (map.get(9, throws, &v, &hit) != DG_ERROR_INTERNAL || hit) return 3;
    if (map.get(9, [](std::string* out) { *out = "nine"; return DG_SUCCESS; }, &v, &hit) != DG_SUCCESS) return 4;
    if (hit || *v != "nine") return 5;
    return 0;
  });
  CHECK_MESSAGE(rc == 0, "child exit ", rc, hang_note(rc));
}

namespace {

// An offline sm_90a stream that compiles with the nvcc at `nvcc` and keeps no disk cache.
dg_stream* nvcc_stream(const std::string& nvcc) {
  setenv("DG_JIT_NVCC_COMPILER", nvcc.c_str(), 1);  // read by dg_config_create
  dg_config* cfg = nullptr;
  if (dg_config_create(&cfg) != DG_SUCCESS) return nullptr;
  dg_config_set_int(cfg, DG_CONFIG_COMPILER, DG_COMPILER_NVCC);
  dg_config_set_string(cfg, DG_CONFIG_CACHE_DIR, "");
  dg_stream* stream = nullptr;
  dg_stream_create_offline(&stream, 9, 0, 132, cfg);
  dg_config_destroy(cfg);
  return stream;
}

dg_status prepare(dg_stream* stream) {
  return dg_gemm_prepare(stream, DG_DTYPE_BFLOAT16, DG_GEMM_LAYOUT_NT, 256, 512, 384, DG_DTYPE_BFLOAT16, 0, nullptr);
}

}  // namespace

TEST_CASE("nvcc scratch files that cannot be written fail the build with the reason; the next call builds again") {
  // The full /tmp: the file-size limit makes every write of nvcc's scratch files fail
  // (EFBIG). Such a build once threw past its slot, and the next call for the kernel waited forever.
  const int rc = in_child([] {
    char dir[] = "/tmp/dg-build-results-XXXXXX";
    if (mkdtemp(dir) == nullptr) return 1;
    const std::string nvcc = std::string(dir) + "/nvcc";  // writes a cubin wherever -o points
    std::ofstream(nvcc) << "#!/bin/sh\nwhile [ $# -gt 0 ]; do [ \"$1\" = -o ] && printf cubin > \"$2\"; shift; done\n";
    chmod(nvcc.c_str(), 0700);
    dg_set_log_level(DG_LOG_OFF);
    dg_stream* stream = nvcc_stream(nvcc);
    if (stream == nullptr) return 2;
    signal(SIGXFSZ, SIG_IGN);
    rlimit old{};
    getrlimit(RLIMIT_FSIZE, &old);
    rlimit none = old;
    none.rlim_cur = 0;
    setrlimit(RLIMIT_FSIZE, &none);
    for (int attempt = 0; attempt < 2; ++attempt) {
      if (prepare(stream) != DG_ERROR_COMPILE) return 3 + attempt;
      if (std::strstr(dg_last_error(), "for nvcc") == nullptr) return 5;
    }
    setrlimit(RLIMIT_FSIZE, &old);  // the disk has room again: the same kernels build
    const dg_status s = prepare(stream);
    dg_stream_destroy(stream);
    std::remove(nvcc.c_str());
    rmdir(dir);
    return s == DG_SUCCESS ? 0 : 6;
  });
  CHECK_MESSAGE(rc == 0, "child exit ", rc, hang_note(rc));
}

namespace {

// A value that counts its live instances: what a map keeps alive, slots of failed builds included.
struct Counted {
  static inline int live = 0;
  std::string text;
  Counted() { ++live; }
  ~Counted() { --live; }
  Counted(const Counted&) = delete;
  Counted& operator=(const Counted&) = delete;
};

}  // namespace

TEST_CASE("failed builds keep nothing: repeated and distinct failing keys leave no slot alive") {
  {
    dg::jit::OnceMap<int, Counted, IntHash> map;
    int attempts = 0;
    const Counted* v = nullptr;
    bool hit = false;
    auto failing = [&](Counted* out) {
      out->text.assign(4096, 'x');  // a build's partial state, freed with its slot
      ++attempts;
      return dg::fail(DG_ERROR_UNSUPPORTED, "nvcc not found at /nonexistent/{}", attempts);
    };
    for (int i = 0; i < 20000; ++i) REQUIRE(map.get(i % 2 == 0 ? 7 : i, failing, &v, &hit) == DG_ERROR_UNSUPPORTED);
    CHECK(attempts == 20000);  // every call retried: failures are not cached
    CHECK(map.size() == 0);
    CHECK(Counted::live == 0);  // once 20000 slots of 4 KiB each
    CHECK(std::string(dg_last_error()) == "nvcc not found at /nonexistent/20000");
    REQUIRE(map.get(7, [](Counted* out) { out->text = "built"; return DG_SUCCESS; }, &v, &hit) == DG_SUCCESS);
    CHECK(v->text == "built");
    CHECK(map.size() == 1);
    CHECK(Counted::live == 1);
  }
  CHECK(Counted::live == 0);
}

TEST_CASE("a build that asks for its own key fails instead of waiting for itself") {
  const int rc = in_child([] {
    Map map;
    const std::string* v = nullptr;
    bool hit = false;
    dg_status inner = DG_SUCCESS;
    std::string inner_error;
    const dg_status outer = map.get(
        3,
        [&](std::string* out) {
          const std::string* w = nullptr;
          bool h = false;
          inner = map.get(3, [](std::string*) { return DG_SUCCESS; }, &w, &h);
          inner_error = dg_last_error();
          *out = "outer";
          return DG_SUCCESS;
        },
        &v, &hit);
    if (inner != DG_ERROR_INTERNAL || inner_error.find("the kernel it is building") == std::string::npos) return 1;
    if (outer != DG_SUCCESS || *v != "outer") return 2;
    return 0;
  });
  CHECK_MESSAGE(rc == 0, "child exit ", rc, hang_note(rc));
}

namespace {

// The state a re-entering callback reads: the map it asks, and what it saw.
struct Reentry {
  Map map;
  std::atomic<int> calls{0}, served{0};
  std::atomic<bool> in_build{false};
};
Reentry* g_reentry = nullptr;

void reentering_callback(int32_t, const char* message, void*) {
  if (std::strstr(message, "building key 5") == nullptr) return;
  ++g_reentry->calls;
  if (g_reentry->in_build) return;  // delivered inside the build: the deadlock of old
  const std::string* v = nullptr;
  bool hit = false;
  if (g_reentry->map.get(5, [](std::string*) { return dg::fail(DG_ERROR_INTERNAL, "built twice"); }, &v, &hit) ==
          DG_SUCCESS &&
      hit && *v == "five")
    ++g_reentry->served;
  dg::fail(DG_ERROR_COMPILE, "set by the callback");  // must not replace the outer call's message
}

}  // namespace

TEST_CASE("a log callback that asks for the kernel being built runs after the build, and gets it") {
  const int rc = in_child([] {
    Reentry state;
    g_reentry = &state;
    dg_set_log_level(DG_LOG_WARN);
    dg_set_log_callback(reentering_callback, nullptr);
    const std::string* v = nullptr;
    bool hit = false;
    const dg_status s = state.map.get(
        5,
        [&](std::string* out) {
          state.in_build = true;
          dg::log::warn("building key 5");  // e.g. a corrupt cache entry's warning
          dg::log::warn("building key 5 again");
          *out = "five";
          state.in_build = false;
          return dg::fail(DG_SUCCESS, "outer message");
        },
        &v, &hit);
    dg_set_log_callback(nullptr, nullptr);
    if (s != DG_SUCCESS || *v != "five") return 1;
    if (state.calls != 2 || state.served != 2) return 2 + state.calls * 10 + state.served * 100;
    if (std::string(dg_last_error()) != "outer message") return 3;
    return 0;
  });
  CHECK_MESSAGE(rc == 0, "child exit ", rc, hang_note(rc));
}

TEST_CASE("log::Deferred holds a thread's messages for the callback until the outermost scope ends") {
  static std::vector<std::string> seen;
  seen.clear();
  const int32_t level = dg_get_log_level();
  dg_set_log_level(DG_LOG_WARN);
  REQUIRE(dg_set_log_callback([](int32_t, const char* m, void*) { seen.emplace_back(m); }, nullptr) == DG_SUCCESS);
  {
    const dg::log::Deferred outer;
    dg::log::warn("first");
    {
      const dg::log::Deferred inner;
      dg::log::warn("second");
    }
    CHECK(seen.empty());  // the inner scope's end is not the outermost
    // Other threads are not held.
    std::thread([] { dg::log::warn("other thread"); }).join();
    CHECK(seen == std::vector<std::string>{"other thread"});
    for (size_t i = 0; i < dg::log::Deferred::kMaxHeld + 5; ++i) dg::log::warn("flood {}", i);
  }
  REQUIRE(seen.size() == 1 + dg::log::Deferred::kMaxHeld + 1);
  CHECK(seen[1] == "first");
  CHECK(seen[2] == "second");
  CHECK(seen[3] == "flood 0");
  CHECK(seen.back() == "7 more messages of one libdg call were dropped");
  dg_set_log_callback(nullptr, nullptr);
  dg_set_log_level(level);
}
