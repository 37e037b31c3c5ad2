// Hostile-user cases on the fake driver: a log callback that asks for the kernel whose build
// logged (a corrupt cache entry's warning, the JIT's debug lines) must get it instead of waiting
// on its own build, and dg_nvfp4_gemv refuses outputs whose elements overlap.
//
// The re-entry cases need a process whose memory cache is empty: the test runs this executable
// again, filtered to a "(child)" case, and kills it if it has not finished in time (a hang fails
// the test instead of stopping the suite).
#include <doctest/doctest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "dg.h"
#include "fake_driver.h"
#include "launch_util.h"

namespace fs = std::filesystem;

namespace {

using namespace dg::test;

constexpr const char* kStep = "DG_TEST_REENTRY_STEP";
constexpr int kTimedOut = -1;

std::string timeout_note(int rc) { return rc == kTimedOut ? " (hung: killed)" : ""; }

// Runs this executable on the test cases matching `filter` with `env` added; its exit status, or
// kTimedOut after killing it when it runs past `seconds`.
int run_self(const std::string& filter, const std::vector<std::string>& env, int seconds) {
  std::vector<std::string> vars;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string var = *e;
    bool replaced = false;  // getenv returns the first of duplicates: drop the ones `env` sets
    for (const std::string& v : env) replaced = replaced || var.compare(0, v.find('=') + 1, v, 0, v.find('=') + 1) == 0;
    if (!replaced) vars.push_back(var);
  }
  vars.insert(vars.end(), env.begin(), env.end());
  std::vector<char*> envp;
  for (auto& v : vars) envp.push_back(v.data());
  envp.push_back(nullptr);
  std::string exe = "/proc/self/exe", arg = "--test-case=" + filter;
  char* argv[] = {exe.data(), arg.data(), nullptr};
  pid_t pid = 0;
  REQUIRE(posix_spawn(&pid, exe.c_str(), nullptr, nullptr, argv, envp.data()) == 0);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  int status = 0;
  while (waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      return kTimedOut;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

struct Scratch {
  fs::path path;
  Scratch() {
    char tmpl[] = "/tmp/dg-reentry-XXXXXX";
    REQUIRE(mkdtemp(tmpl) != nullptr);
    path = tmpl;
  }
  ~Scratch() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

// The call the callback repeats: FP32 scales [128, 4] into their MN-major layout.
dg_status transpose_scales(dg_stream* stream) {
  Tensor sf(fake_address(1), DG_DTYPE_FLOAT32, {128, 4});
  Tensor out(fake_address(2), DG_DTYPE_FLOAT32, {128, 4}, {1, 128});
  return dg_get_mn_major_tma_aligned_tensor(stream, sf.t, out.t);
}

struct Reentry {
  dg_stream* stream = nullptr;
  int messages = 0;
  dg_status nested = -1;
};

}  // namespace

TEST_CASE("(child) a log callback repeats the call whose kernel build logged") {
  const char* step = std::getenv(kStep);
  if (step == nullptr) return;  // only as the child of the case below
  FakeDriver driver(0);
  if (std::strcmp(step, "device") == 0) {
    // The driver loads and device 0 initialises (each once, under a lock) inside this first call,
    // logging at debug level; the callback asks for the same.
    static int32_t nested_sms = -1, nested_count = -1;
    dg_set_log_level(DG_LOG_DEBUG);
    dg_set_log_callback(
        [](int32_t, const char*, void*) {
          if (nested_sms >= 0) return;
          nested_sms = dg_get_num_sms();
          dg_device_count(&nested_count);
        },
        nullptr);
    const int32_t sms = dg_get_num_sms();
    dg_set_log_callback(nullptr, nullptr);
    CHECK(sms > 0);
    CHECK(nested_sms == sms);
    CHECK(nested_count >= 1);
    return;
  }
  dg_stream* stream = nullptr;
  REQUIRE(dg_stream_create(&stream, 0, nullptr, DG_STREAM_BORROW, nullptr) == DG_SUCCESS);
  if (std::strcmp(step, "populate") == 0) {
    REQUIRE_MESSAGE(transpose_scales(stream) == DG_SUCCESS, dg_last_error());
    dg_stream_destroy(stream);
    return;
  }
  static Reentry state;
  state.stream = stream;
  dg_set_log_level(std::strcmp(step, "debug") == 0 ? DG_LOG_DEBUG : DG_LOG_WARN);
  dg_set_log_callback(
      [](int32_t, const char*, void* user) {
        auto* s = static_cast<Reentry*>(user);
        if (s->messages++ == 0) s->nested = transpose_scales(s->stream);  // once: the same kernel
      },
      &state);
  const dg_status outer = transpose_scales(stream);
  const std::string outer_error = dg_last_error();
  dg_set_log_callback(nullptr, nullptr);
  CHECK_MESSAGE(outer == DG_SUCCESS, outer_error);
  CHECK(state.messages > 0);
  CHECK_MESSAGE(state.nested == DG_SUCCESS, "the callback's call: ", dg_status_string(state.nested));
  dg_stream_destroy(stream);
}

TEST_CASE("a log callback that asks for the kernel being built gets it: corrupt cache entry, debug level") {
  Scratch cache;
  const std::string filter = "(child) a log callback repeats*";
  const std::string dir = "DG_JIT_CACHE_DIR=" + cache.path.string();
  // The repro: a cache entry replaced by garbage warns while the kernel is being built.
  REQUIRE(run_self(filter, {dir, std::string(kStep) + "=populate"}, 300) == 0);
  int planted = 0;
  for (const auto& e : fs::directory_iterator(cache.path / "libdg"))
    if (e.path().extension() == ".cubin") {
      std::ofstream(e.path(), std::ios::binary | std::ios::trunc) << "garbage where a kernel was";
      ++planted;
    }
  REQUIRE(planted > 0);
  const int corrupt = run_self(filter, {dir, std::string(kStep) + "=corrupt"}, 300);
  CHECK_MESSAGE(corrupt == 0, "child exit ", corrupt, timeout_note(corrupt));
  // The JIT's debug lines ("compiled", "ready") are logged during a build too.
  const int debug = run_self(filter, {dir, std::string(kStep) + "=debug"}, 300);
  CHECK_MESSAGE(debug == 0, "child exit ", debug, timeout_note(debug));
}

TEST_CASE("a log callback that calls the SM-count and device queries while device 0 initialises gets answers") {
  const int rc = run_self("(child) a log callback repeats*", {std::string(kStep) + "=device"}, 120);
  CHECK_MESSAGE(rc == 0, "child exit ", rc, timeout_note(rc));
}

TEST_CASE("dg_nvfp4_gemv refuses an output c whose elements share memory") {
  FakeDriver driver(0);
  dg_config* cfg = nullptr;
  REQUIRE(dg_config_create(&cfg) == DG_SUCCESS);
  REQUIRE(dg_config_set_int(cfg, DG_CONFIG_NUM_SMS, 1024) == DG_SUCCESS);  // valid calls stop at the SM cap
  dg_stream* stream = nullptr;
  REQUIRE(dg_stream_create(&stream, 0, nullptr, DG_STREAM_BORROW, cfg) == DG_SUCCESS);
  dg_config_destroy(cfg);
  const int64_t M = 128, K = 256, L = 2;
  Tensor a(fake_address(1), DG_DTYPE_FLOAT4_E2M1X2, {M, K / 2, L}, {K / 2, 1, M * K / 2});
  Tensor sfa(fake_address(2), DG_DTYPE_FLOAT8_E4M3, {M, K / 16, L}, {K / 16, 1, M * K / 16});
  Tensor b(fake_address(3), DG_DTYPE_FLOAT4_E2M1X2, {1, K / 2, L}, {K / 2, 1, K / 2});
  Tensor sfb(fake_address(4), DG_DTYPE_FLOAT8_E4M3, {1, K / 16, L}, {K / 16, 1, K / 16});
  // The three, and a batch stride one short of the rows' span.
  for (const std::vector<int64_t>& strides : {std::vector<int64_t>{0, 0, 0}, std::vector<int64_t>{0, 1, 0},
                                              std::vector<int64_t>{1, 1, 16}, std::vector<int64_t>{1, 1, M - 1},
                                              std::vector<int64_t>{2, 1, 2}}) {
    CAPTURE(strides[0]);
    CAPTURE(strides[2]);
    Tensor c(fake_address(5), DG_DTYPE_FLOAT16, {M, 1, L}, strides);
    CHECK(dg_nvfp4_gemv(stream, a.t, sfa.t, b.t, sfb.t, c.t, nullptr) == DG_ERROR_INVALID_ARGUMENT);
    const std::string msg = dg_last_error();
    CHECK_MESSAGE(msg.rfind("c: ", 0) == 0, msg);
    CHECK_MESSAGE(msg.find("overlap") != std::string::npos, msg);
  }
  // Layouts whose elements are distinct pass validation (and stop at the SM cap): rows packed or
  // spread, batches past the rows, batch-major; a size-1 dimension's stride is free.
  for (const std::vector<int64_t>& strides : {std::vector<int64_t>{1, 1, M}, std::vector<int64_t>{4, 0, 4 * M},
                                              std::vector<int64_t>{L, 7, 1}, std::vector<int64_t>{1, 0, M + 8}}) {
    CAPTURE(strides[0]);
    CAPTURE(strides[2]);
    Tensor c(fake_address(5), DG_DTYPE_FLOAT16, {M, 1, L}, strides);
    CHECK(dg_nvfp4_gemv(stream, a.t, sfa.t, b.t, sfb.t, c.t, nullptr) == DG_ERROR_INVALID_ARGUMENT);
    CHECK_MESSAGE(std::strstr(dg_last_error(), "num_sms: 1024") != nullptr, dg_last_error());
  }
  dg_stream_destroy(stream);
}
