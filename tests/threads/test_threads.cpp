// Concurrency of the C API, for ThreadSanitizer (the `tsan` preset) and the other builds alike:
// handle churn (configs, tensors, streams), process-wide setters, per-thread errors, log-callback
// swaps while other threads log, and concurrent JIT of the same and of different kernels, both on
// offline streams (NVRTC only, no device) and on the fake driver's device (compile, load, launch).
// Every call's status is checked; the sanitizer checks the rest.
#include <doctest/doctest.h>
#include <stdlib.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "dg.h"

namespace {

constexpr int kThreads = 8;

template <typename F>
void run_threads(int n, F&& body) {
  std::vector<std::thread> threads;
  for (int t = 0; t < n; ++t) threads.emplace_back([&body, t] { body(t); });
  for (auto& th : threads) th.join();
}

struct TempDir {
  std::string path;
  TempDir() {
    char tmpl[] = "/tmp/dg-threads-XXXXXX";
    REQUIRE(mkdtemp(tmpl) != nullptr);
    path = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

// A JIT cache of its own for the test's streams, and a tally of the calls that failed (from any
// thread; the first failure's message is kept for the report).
struct JitCase {
  TempDir cache;
  dg_config* cfg = nullptr;
  std::atomic<int> failures{0};
  std::atomic<bool> recorded{false};
  std::string first_error;
  JitCase() {
    REQUIRE(dg_config_create(&cfg) == DG_SUCCESS);
    REQUIRE(dg_config_set_string(cfg, DG_CONFIG_CACHE_DIR, cache.path.c_str()) == DG_SUCCESS);
  }
  ~JitCase() { dg_config_destroy(cfg); }
  JitCase(const JitCase&) = delete;
  JitCase& operator=(const JitCase&) = delete;
  void check(dg_status st) {
    if (st == DG_SUCCESS) return;
    ++failures;
    if (!recorded.exchange(true)) first_error = dg_last_error();
  }
};

bool has_device() {
  int32_t n = 0;
  return dg_device_count(&n) == DG_SUCCESS && n > 0;
}

void* address(int i) { return reinterpret_cast<void*>(0x7f0000000000ull + (uint64_t(i) << 32)); }

}  // namespace

TEST_CASE("configs, tensors and process-wide settings churn across threads") {
  std::atomic<int> failures{0};
  run_threads(kThreads, [&](int t) {
    for (int i = 0; i < 300; ++i) {
      dg_config* c = nullptr;
      if (dg_config_create(&c) != DG_SUCCESS) ++failures;
      if (dg_config_set_int(c, DG_CONFIG_TC_UTIL, 1 + (t + i) % 100) != DG_SUCCESS) ++failures;
      if (dg_config_set_string(c, DG_CONFIG_CACHE_DIR, i % 2 ? "" : "/tmp/dg-threads-unused") != DG_SUCCESS) ++failures;
      dg_config* copy = nullptr;
      if (dg_config_clone(c, &copy) != DG_SUCCESS) ++failures;
      int64_t v = 0;
      if (dg_config_get_int(copy, DG_CONFIG_TC_UTIL, &v) != DG_SUCCESS || v != 1 + (t + i) % 100) ++failures;
      dg_config_destroy(copy);
      dg_config_destroy(c);

      const int64_t sizes[3] = {4 + i % 7, 8, 2};
      dg_tensor* tensor = nullptr;
      if (dg_tensor_create(&tensor, address(t), DG_DTYPE_BFLOAT16, 3, sizes, nullptr) != DG_SUCCESS) ++failures;
      if (dg_tensor_set_data(tensor, address(t + 1)) != DG_SUCCESS) ++failures;
      int64_t got[DG_MAX_RANK] = {};
      if (dg_tensor_get(tensor, nullptr, nullptr, nullptr, got, nullptr) != DG_SUCCESS || got[0] != sizes[0]) ++failures;
      dg_tensor_destroy(tensor);

      dg_set_tc_util((t % 4 + 1) / 4.0);
      (void)dg_get_tc_util();
      dg_set_num_sms(t % 2 ? 0 : 64);
      (void)dg_get_num_sms();
    }
  });
  dg_set_num_sms(0);
  dg_set_tc_util(0);
  CHECK(failures.load() == 0);
}

TEST_CASE("each thread keeps its own last error") {
  std::atomic<int> wrong{0};
  run_threads(kThreads, [&](int t) {
    for (int i = 0; i < 500; ++i) {
      int64_t out = 0;
      const int64_t x = -1 - t;  // each thread's message names its own value
      if (dg_get_tma_aligned_size(x, 2, &out) != DG_ERROR_INVALID_ARGUMENT) ++wrong;
      const std::string expected = "x: " + std::to_string(x) + " is negative";
      if (expected != dg_last_error()) ++wrong;
    }
  });
  CHECK(wrong.load() == 0);
}

TEST_CASE("log callbacks swapped while other threads log: no call after its swap returned") {
  struct Target {
    std::atomic<int> calls{0};
    std::atomic<bool> retired{false};
    std::atomic<int>* late;
  };
  std::atomic<int> late{0};
  const int32_t before = dg_get_log_level();
  REQUIRE(dg_set_log_level(DG_LOG_DEBUG) == DG_SUCCESS);  // failures are logged at debug level
  auto cb = [](int32_t, const char*, void* user) {
    auto* target = static_cast<Target*>(user);
    if (target->retired.load()) ++*target->late;  // called after dg_set_log_callback replaced it
    ++target->calls;
  };
  std::atomic<bool> stop{false};
  std::vector<std::thread> loggers;
  for (int t = 0; t < kThreads - 1; ++t)
    loggers.emplace_back([&] {
      while (!stop) {
        int64_t out = 0;
        dg_get_tma_aligned_size(-1, 2, &out);
      }
    });
  int total_calls = 0;
  for (int i = 0; i < 300; ++i) {
    auto* target = new Target{{0}, {false}, &late};
    REQUIRE(dg_set_log_callback(cb, target) == DG_SUCCESS);
    std::this_thread::yield();
    REQUIRE(dg_set_log_callback(nullptr, nullptr) == DG_SUCCESS);
    // No thread runs the callback any more: its user data can go.
    target->retired = true;
    total_calls += target->calls.load();
    delete target;
  }
  stop = true;
  for (auto& th : loggers) th.join();
  dg_set_log_level(before);
  CHECK(late.load() == 0);
  CHECK(total_calls > 0);
}

TEST_CASE("concurrent JIT of the same and of different kernels on offline streams") {
  JitCase jc;
  // K = 0 problems compile only the small D := beta * C kernel: four variants (d dtype x C).
  // Two rounds of fresh offline devices (distinct SM counts): the first compiles into the disk
  // cache under contention, the second loads from it under contention.
  for (int round = 0; round < 2; ++round) {
    run_threads(kThreads, [&](int t) {
      dg_stream* s = nullptr;
      jc.check(dg_stream_create_offline(&s, 9, 0, 100 + round * 10 + t % 2, jc.cfg));
      if (s == nullptr) return;
      for (int i = 0; i < 4; ++i) {
        const int variant = (t + i) % 4;  // threads meet on the same kernels in different orders
        jc.check(dg_gemm_prepare(s, DG_DTYPE_BFLOAT16, DG_GEMM_LAYOUT_NT, 128, 128, 0,
                                 variant % 2 ? DG_DTYPE_FLOAT32 : DG_DTYPE_BFLOAT16, variant / 2, nullptr));
      }
      dg_stream_destroy(s);
    });
  }
  CHECK_MESSAGE(jc.failures.load() == 0, jc.first_error);
  int64_t compiled = 0, from_disk = 0;
  REQUIRE(dg_jit_get_stats(&compiled, &from_disk, nullptr) == DG_SUCCESS);
  CHECK(compiled + from_disk >= 8);
}

TEST_CASE("prepares that compile their kernels side by side, from many threads at once") {
  JitCase jc;
  // The paged MQA prepare compiles its schedule kernel on a second thread; the FP8 tn prepare its
  // operand transpose and pre-pass beside the GEMM. First round into the disk cache, second from it.
  for (int round = 0; round < 2; ++round) {
    run_threads(kThreads, [&](int t) {
      dg_stream* s = nullptr;
      jc.check(dg_stream_create_offline(&s, 9, 0, 120 + round, jc.cfg));
      if (s == nullptr) return;
      if (t % 2) {
        jc.check(dg_paged_mqa_logits_prepare(s, 32, 64, 1, DG_DTYPE_FLOAT32));
      } else {
        jc.check(dg_gemm_prepare(s, DG_DTYPE_FLOAT8_E4M3, DG_GEMM_LAYOUT_TN, 128, 128, 256, DG_DTYPE_BFLOAT16, 1,
                              nullptr));
      }
      dg_stream_destroy(s);
    });
  }
  CHECK_MESSAGE(jc.failures.load() == 0, jc.first_error);
}

TEST_CASE("streams churn and kernels compile, load and launch concurrently on the fake device") {
  if (!has_device()) {
    MESSAGE("no device (the fake driver is not on LD_LIBRARY_PATH): the offline cases cover the JIT");
    return;
  }
  JitCase jc;
  run_threads(kThreads, [&](int t) {
    for (int i = 0; i < 20; ++i) {
      dg_stream* s = nullptr;
      jc.check(dg_stream_create(&s, 0, nullptr, i % 2 ? DG_STREAM_CREATE : DG_STREAM_BORROW, i % 3 ? jc.cfg : nullptr));
      if (s == nullptr) continue;
      // Layout transforms: two ops x two input orders = four kernels; every thread runs all four.
      const int64_t mn = 128, sf_k = 4;
      const bool mn_major = (t + i) % 2;
      const int64_t in_sizes[2] = {mn, sf_k};
      const int64_t in_strides[2] = {mn_major ? 1 : sf_k, mn_major ? mn : 1};
      dg_tensor* in = nullptr;
      jc.check(dg_tensor_create(&in, address(1), DG_DTYPE_FLOAT32, 2, in_sizes, in_strides));
      const int64_t out_strides[2] = {1, mn};
      dg_tensor* out = nullptr;
      jc.check(dg_tensor_create(&out, address(2), DG_DTYPE_FLOAT32, 2, in_sizes, out_strides));
      const int64_t packed_sizes[2] = {mn, 1};
      dg_tensor* packed = nullptr;
      jc.check(dg_tensor_create(&packed, address(3), DG_DTYPE_INT32, 2, packed_sizes, out_strides));
      if ((t + i) % 3 == 0) {
        jc.check(dg_get_mn_major_tma_aligned_packed_ue8m0_tensor(s, in, packed));
      } else {
        jc.check(dg_get_mn_major_tma_aligned_tensor(s, in, out));
      }
      jc.check(dg_stream_synchronize(s));
      dg_tensor_destroy(packed);
      dg_tensor_destroy(out);
      dg_tensor_destroy(in);
      dg_stream_destroy(s);
    }
  });
  CHECK_MESSAGE(jc.failures.load() == 0, jc.first_error);
}

namespace {

// Every nvcc build in this process fails at once ("nvcc not found"): set before any config reads
// the environment (the first dg_config_create, after static initialisation).
const bool kNvccMissing = setenv("DG_JIT_NVCC_COMPILER", "/nonexistent/libdg-threads/nvcc", 1) == 0;

std::atomic<int> g_reentered{0};
std::atomic<int> g_reentry_failed{0};
thread_local dg_stream* t_stream = nullptr;

// Repeats, from inside the callback, the call whose build logged (once per message: what it logs
// meanwhile is dropped, so it does not recurse).
void reenter(int32_t, const char*, void*) {
  if (t_stream == nullptr) return;
  ++g_reentered;
  const dg_status s = dg_gemm_prepare(t_stream, DG_DTYPE_BFLOAT16, DG_GEMM_LAYOUT_NT, 128, 128, 0, DG_DTYPE_BFLOAT16,
                                      0, nullptr);
  if (s != DG_ERROR_UNSUPPORTED) ++g_reentry_failed;
}

}  // namespace

TEST_CASE("failing builds under contention, with a callback that re-enters them, all end with the failure") {
  REQUIRE(kNvccMissing);
  JitCase jc;
  REQUIRE(dg_config_set_int(jc.cfg, DG_CONFIG_COMPILER, DG_COMPILER_NVCC) == DG_SUCCESS);
  const int32_t level = dg_get_log_level();
  dg_set_log_level(DG_LOG_DEBUG);  // every failure is logged, during and after the builds
  REQUIRE(dg_set_log_callback(reenter, nullptr) == DG_SUCCESS);
  std::atomic<int> unexpected{0}, done{0};
  std::string first_unexpected;
  std::atomic<bool> recorded{false};
  // A watchdog: a hang fails the test case with a message rather than stopping the suite.
  std::thread work([&] {
    run_threads(kThreads, [&](int t) {
      dg_stream* s = nullptr;
      jc.check(dg_stream_create_offline(&s, 9, 0, 132, jc.cfg));
      if (s == nullptr) return;
      for (int i = 0; i < 25; ++i) {
        t_stream = t % 2 ? s : nullptr;  // half the threads re-enter from their callback
        const dg_status st = dg_gemm_prepare(s, DG_DTYPE_BFLOAT16, DG_GEMM_LAYOUT_NT, 128, 128, 0, DG_DTYPE_BFLOAT16,
                                             0, nullptr);
        t_stream = nullptr;
        if (st != DG_ERROR_UNSUPPORTED || std::strstr(dg_last_error(), "nvcc not found") == nullptr) {
          ++unexpected;
          if (!recorded.exchange(true)) first_unexpected = std::string(dg_status_string(st)) + ": " + dg_last_error();
        }
      }
      dg_stream_destroy(s);
    });
    done = 1;
  });
  for (int waited = 0; waited < 600 && !done; ++waited) std::this_thread::sleep_for(std::chrono::milliseconds(200));
  if (!done) {
    FAIL_CHECK("failing builds did not end within 120 s: a waiter hangs");
    std::fflush(nullptr);
    std::_Exit(1);  // the hung threads cannot be joined
  }
  work.join();
  dg_set_log_callback(nullptr, nullptr);
  dg_set_log_level(level);
  CHECK_MESSAGE(jc.failures.load() == 0, jc.first_error);
  CHECK_MESSAGE(unexpected.load() == 0, first_unexpected);
  CHECK(g_reentered.load() > 0);
  CHECK(g_reentry_failed.load() == 0);
}
