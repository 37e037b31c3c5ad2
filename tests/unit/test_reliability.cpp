// What the environment, the file system and a re-entrant logger can do to libdg: strict parsing of
// DG_* variables, log callbacks that call back into the library, cache entries that are not
// regular files, read-only cache directories, compiler paths that a shell would misread, and
// DG_TEMPLATE_DIR trees that cannot be used. Steps that would hang on a regression run in a child
// process under alarm().
#include <doctest/doctest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "dg.h"
#include "in_child.h"
#include "jit/compiler.h"
#include "jit/disk_cache.h"
#include "jit/source_bundle.h"
#include "ops/gemm.h"
#include "runtime/config.h"
#include "runtime/env.h"
#include "runtime/log.h"

namespace fs = std::filesystem;

namespace {

struct TempDir {
  fs::path path;
  TempDir() {
    char tmpl[] = "/tmp/dg-reliability-XXXXXX";
    REQUIRE(mkdtemp(tmpl) != nullptr);
    path = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    fs::permissions(path, fs::perms::owner_all, ec);
    fs::remove_all(path, ec);
  }
};

using dg::test::in_child;

// Every message at or above `min_level` while alive.
struct LogCapture {
  static inline std::mutex m;
  static inline std::vector<std::string> lines;
  explicit LogCapture(int32_t min_level = DG_LOG_WARN) {
    std::lock_guard<std::mutex> lock(m);
    lines.clear();
    level = min_level;
    dg_set_log_callback(
        [](int32_t lvl, const char* msg, void*) {
          if (lvl < level) return;
          std::lock_guard<std::mutex> lock(m);
          lines.emplace_back(msg);
        },
        nullptr);
  }
  ~LogCapture() { dg_set_log_callback(nullptr, nullptr); }
  int count(const std::string& needle) {
    std::lock_guard<std::mutex> lock(m);
    int n = 0;
    for (const auto& l : lines) n += l.find(needle) != std::string::npos;
    return n;
  }
  static inline int32_t level = DG_LOG_WARN;
};

struct ScopedEnv {
  std::string name;
  ScopedEnv(const char* n, const char* value) : name(n) { setenv(n, value, 1); }
  ~ScopedEnv() { unsetenv(name.c_str()); }
};

void write_file(const fs::path& p, const std::string& contents) {
  std::ofstream out(p, std::ios::binary);
  out << contents;
}

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

TEST_CASE("boolean variables take the usual spellings and warn once about anything else") {
  using dg::env::parse_bool;
  for (const char* yes : {"1", "true", "TRUE", "On", "yes", "YES"}) CHECK(parse_bool(yes) == std::optional<bool>(true));
  for (const char* no : {"0", "false", "False", "OFF", "no", "No"}) CHECK(parse_bool(no) == std::optional<bool>(false));
  for (const char* bad : {"2", "y", "enable", "1 1", "truee", "-1", "+1"}) CHECK_FALSE(parse_bool(bad).has_value());

  LogCapture log;
  {
    ScopedEnv pdl("DG_PDL", "no");
    CHECK_FALSE(dg::Config::from_environment().pdl);  // was read as "on" before
  }
  {
    ScopedEnv pdl("DG_PDL", "Yes");
    CHECK(dg::Config::from_environment().pdl);
  }
  {
    ScopedEnv pdl("DG_PDL", "maybe");
    CHECK_FALSE(dg::Config::from_environment().pdl);  // the default
    CHECK_FALSE(dg::Config::from_environment().pdl);
    CHECK(log.count("DG_PDL=maybe") == 1);  // once per variable, naming it
  }
  {
    ScopedEnv nvrtc("DG_JIT_USE_NVRTC", "off");
    CHECK(dg::Config::from_environment().compiler == DG_COMPILER_NVCC);
  }
  {
    ScopedEnv nvrtc("DG_JIT_USE_NVRTC", "sometimes");
    CHECK(dg::Config::from_environment().compiler == DG_COMPILER_NVRTC);
    CHECK(log.count("DG_JIT_USE_NVRTC=sometimes") == 1);
  }
}

TEST_CASE("DG_JIT_PTXAS_OPTIONS: each word becomes a --ptxas-options= of every compile") {
  const auto ptxas_words = [](const dg::Config& c) {
    std::vector<std::string> out;
    for (const std::string& o : dg::jit::compiler_options("sm_90a", c))
      if (o.rfind("--ptxas-options=", 0) == 0) out.push_back(o);
    return out;
  };
  {
    ScopedEnv extra("DG_JIT_PTXAS_OPTIONS", "  --register-usage-level=10\t-O2 ");
    const dg::Config c = dg::Config::from_environment();
    CHECK(ptxas_words(c) == std::vector<std::string>{"--ptxas-options=--register-usage-level=10", "--ptxas-options=-O2"});
    dg::Config nvcc = c;
    nvcc.compiler = DG_COMPILER_NVCC;
    CHECK(ptxas_words(nvcc).size() == 2);
  }
  {
    ScopedEnv blank("DG_JIT_PTXAS_OPTIONS", " ");
    CHECK(ptxas_words(dg::Config::from_environment()).empty());
  }
}

TEST_CASE("DG_JIT_CPP_STANDARD and integer variables reject values they cannot honour") {
  LogCapture log;
  {
    ScopedEnv standard("DG_JIT_CPP_STANDARD", "20");
    CHECK(dg::Config::from_environment().cpp_standard == 20);
  }
  {
    ScopedEnv standard("DG_JIT_CPP_STANDARD", "18");  // was silently 17
    CHECK(dg::Config::from_environment().cpp_standard == 17);
    CHECK(log.count("DG_JIT_CPP_STANDARD=18") == 1);
  }
  {
    ScopedEnv sms("DG_NUM_SMS", "99999999999999999999");
    CHECK(dg::Config::from_environment().num_sms == 0);
    CHECK(log.count("DG_NUM_SMS=99999999999999999999") == 1);
  }
  {
    ScopedEnv util("DG_TC_UTIL", "50%");
    CHECK(dg::Config::from_environment().tc_util == 100);
    CHECK(log.count("DG_TC_UTIL=50%") == 1);
  }
}

TEST_CASE("numbers and switches in DG_* variables follow one rule: whitespace around ignored, optional sign, digits") {
  using dg::env::parse_integer;
  for (const char* twelve : {"12", " 12", "12 ", "\t12\n", "+12", " +12 ", "012"})
    CHECK_MESSAGE(parse_integer(twelve) == std::optional<long long>(12), "'", twelve, "'");
  CHECK(parse_integer("-7") == std::optional<long long>(-7));
  CHECK(parse_integer("-9223372036854775808") == std::optional<long long>(INT64_MIN));
  CHECK(parse_integer("9223372036854775807") == std::optional<long long>(INT64_MAX));
  for (const char* bad : {"", " ", "+", "-", "1 2", "12a", "0x10", "1e3", "1.0", "1_000", "++1", "+-1",
                          "9223372036854775808", "-9223372036854775809", "99999999999999999999"})
    CHECK_MESSAGE(!parse_integer(bad).has_value(), "'", bad, "'");
  for (const char* on : {" 1", "1 ", "\ttrue\n", " On "}) CHECK(dg::env::parse_bool(on) == std::optional<bool>(true));

  // Through the variables: every integer and switch, and the level names, read the same way.
  LogCapture log;
  for (const char* sms : {" 12", "12 ", "+12", "\t12\n"}) {
    ScopedEnv v("DG_NUM_SMS", sms);
    CHECK_MESSAGE(dg::Config::from_environment().num_sms == 12, "DG_NUM_SMS='", sms, "'");
  }
  {
    ScopedEnv v("DG_TC_UTIL", " 50 ");
    CHECK(dg::Config::from_environment().tc_util == 50);
  }
  {
    ScopedEnv v("DG_PDL", " 1");  // was refused
    CHECK(dg::Config::from_environment().pdl);
  }
  {
    ScopedEnv v("DG_JIT_CPP_STANDARD", " 20\n");
    CHECK(dg::Config::from_environment().cpp_standard == 20);
  }
  {
    ScopedEnv v("DG_NUM_SMS", "   ");  // only whitespace: as if unset, no warning
    CHECK(dg::Config::from_environment().num_sms == 0);
    CHECK(log.count("DG_NUM_SMS") == 0);
  }
  for (const char* bad : {"0x20", "1e2", "12a"}) {
    ScopedEnv v("DG_NUM_SMS", bad);  // refused with a warning (once per variable and process): the default
    CHECK_MESSAGE(dg::Config::from_environment().num_sms == 0, "DG_NUM_SMS='", bad, "'");
  }
  CHECK(dg::log::parse_level(" debug ") == DG_LOG_DEBUG);
  CHECK(dg::log::parse_level("+2") == DG_LOG_INFO);
  CHECK(dg::log::parse_level(" 4\n") == DG_LOG_ERROR);
  CHECK(dg::log::parse_level("6") == -1);
  CHECK(dg::log::parse_level("1.0") == -1);
}

// The logger reads DG_LOG_LEVEL once per process: a fresh process is needed to see its warning.
TEST_CASE("DG_LOG_LEVEL that is not a level is reported, naming the variable") {
  const int rc = in_child([] {
    setenv("DG_LOG_LEVEL", "garbage", 1);
    execl("/proc/self/exe", "dg_unit_tests", "--test-case=(child) report the log level", static_cast<char*>(nullptr));
    return 99;
  });
  CHECK(rc == 0);
}

TEST_CASE("(child) report the log level") {
  const char* v = std::getenv("DG_LOG_LEVEL");
  if (v == nullptr || std::string(v) != "garbage") return;  // only as the child of the case above
  // The warning was printed when the logger started; installing a callback starts it too, so start
  // it here, with stderr redirected into a pipe.
  int fds[2];
  REQUIRE(pipe(fds) == 0);
  const int saved = dup(2);
  dup2(fds[1], 2);
  CHECK(dg_get_log_level() == DG_LOG_WARN);  // the default, not garbage
  fflush(stderr);
  dup2(saved, 2);
  close(fds[1]);
  char buf[4096] = {};
  const ssize_t n = read(fds[0], buf, sizeof(buf) - 1);
  close(fds[0]);
  const std::string text(buf, n > 0 ? static_cast<size_t>(n) : 0);
  CHECK_MESSAGE(text.find("DG_LOG_LEVEL=garbage") != std::string::npos, "stderr: ", text);
}

TEST_CASE("a log callback may call back into libdg without deadlocking") {
  const int rc = in_child([] {
    static std::atomic<int> calls{0};
    static std::atomic<int> nested_ok{0};
    auto cb = [](int32_t, const char*, void* user) {
      ++calls;
      // Fails (logged at debug level, which is on): re-enters the logger on this thread.
      if (dg_set_log_level(99) == DG_ERROR_INVALID_ARGUMENT) ++nested_ok;
      if (dg_set_log_level(DG_LOG_DEBUG) == DG_SUCCESS) ++nested_ok;
      // Swapping the callback from inside a callback: it must not wait for itself.
      if (dg_set_log_callback(reinterpret_cast<dg_log_callback>(user), user) == DG_SUCCESS) ++nested_ok;
      int64_t x = 0;
      dg_get_tma_aligned_size(1, 3, &x);  // another logged failure
    };
    dg_log_callback self = cb;
    if (dg_set_log_callback(self, reinterpret_cast<void*>(self)) != DG_SUCCESS) return 1;
    dg_set_log_level(DG_LOG_DEBUG);
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t)
      threads.emplace_back([] {
        for (int i = 0; i < 200; ++i) {
          int64_t x = 0;
          dg_get_tma_aligned_size(-1, 1, &x);  // logged at debug level: calls the callback
        }
      });
    for (auto& t : threads) t.join();
    dg_set_log_callback(nullptr, nullptr);
    if (calls.load() < 800) return 2;
    if (nested_ok.load() != 3 * calls.load()) return 3;
    return 0;
  });
  CHECK_MESSAGE(rc == 0, "child exit ", rc, rc == 128 + SIGALRM ? " (deadlock: killed by the alarm)" : "");
}

TEST_CASE("dg_set_log_callback returns only once the replaced callback has finished on other threads") {
  struct State {
    std::atomic<bool> entered{false}, finished{false};
  };
  static State state;
  auto slow = [](int32_t, const char*, void*) {
    state.entered = true;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    state.finished = true;
  };
  REQUIRE(dg_set_log_callback(slow, nullptr) == DG_SUCCESS);
  const int32_t before = dg_get_log_level();
  dg_set_log_level(DG_LOG_DEBUG);
  std::thread logger([] {
    int64_t x = 0;
    dg_get_tma_aligned_size(-1, 1, &x);
  });
  while (!state.entered) std::this_thread::yield();
  REQUIRE(dg_set_log_callback(nullptr, nullptr) == DG_SUCCESS);
  CHECK(state.finished.load());  // user_data of the old callback may be freed now
  logger.join();
  dg_set_log_level(before);
}

TEST_CASE("cache entries that are not regular files are misses, never a hang, and get replaced") {
  const int rc = in_child([] {
    TempDir tmp;
    dg::jit::DiskCache cache(tmp.path.string());
    if (!cache.enabled()) return 1;
    const std::vector<char> cubin = {'c', 'u', 'b', 'i', 'n'};
    std::vector<char> out;
    const auto key = dg::jit::digest("fifo");
    const std::string path = cache.path_for("gemm", key);
    if (mkfifo(path.c_str(), 0644) != 0) return 2;
    if (cache.load("gemm", key, &out)) return 3;  // returns at once: O_NONBLOCK, then not regular
    cache.store("gemm", key, cubin);              // the rename replaces the FIFO
    if (!cache.load("gemm", key, &out) || out != cubin) return 4;

    const auto link_key = dg::jit::digest("link");
    const std::string link = cache.path_for("gemm", link_key);
    if (symlink(path.c_str(), link.c_str()) != 0) return 5;
    if (cache.load("gemm", link_key, &out)) return 6;  // O_NOFOLLOW: libdg never writes links
    cache.store("gemm", link_key, cubin);
    if (!cache.load("gemm", link_key, &out) || out != cubin) return 7;

    const auto dir_key = dg::jit::digest("dir");
    if (mkdir(cache.path_for("gemm", dir_key).c_str(), 0755) != 0) return 8;
    if (cache.load("gemm", dir_key, &out)) return 9;
    return 0;  // a directory is replaced too: the case below

  });
  CHECK_MESSAGE(rc == 0, "child exit ", rc, rc == 128 + SIGALRM ? " (blocked: killed by the alarm)" : "");
}

TEST_CASE("a directory planted at an entry's path is moved aside once, keeping its files; the entry is then stored") {
  TempDir tmp;
  const auto key = dg::jit::digest("planted");
  const std::vector<char> cubin = {'c', 'u', 'b'};
  std::string path;
  {
    LogCapture log;
    dg::jit::DiskCache cache(tmp.path.string());
    path = cache.path_for("gemm", key);
    REQUIRE(mkdir(path.c_str(), 0755) == 0);
    write_file(fs::path(path) / "keep.txt", "user data");
    std::vector<char> out;
    CHECK_FALSE(cache.load("gemm", key, &out));  // a miss: "not a regular file", recompiled
    cache.store("gemm", key, cubin);
    CHECK(log.count("was a directory; moved it to") == 1);
    CHECK(log.count("cannot write") == 0);
    REQUIRE(cache.load("gemm", key, &out));
    CHECK(out == cubin);
  }
  // The next process finds a valid entry: no warning, no recompile.
  LogCapture log;
  dg::jit::DiskCache next(tmp.path.string());
  std::vector<char> out;
  CHECK(next.load("gemm", key, &out));
  CHECK(out == cubin);
  CHECK(log.lines.empty());
  // What the directory held is kept beside the entry.
  int displaced = 0;
  for (const auto& e : fs::directory_iterator(fs::path(path).parent_path())) {
    if (e.path().string().rfind(path + ".displaced.", 0) != 0) continue;
    ++displaced;
    CHECK(read_file(e.path() / "keep.txt") == "user data");
  }
  CHECK(displaced == 1);
}

TEST_CASE("a DG_TEMPLATE_DIR tree that lacks a template is a configuration error naming the file") {
  TempDir tmp;
  const fs::path tree = tmp.path / "tree";
  fs::create_directories(tree / "kernels");
  fs::create_directories(tree / "include" / "dg");
  write_file(tree / "kernels" / "k.cu.j2", "{{ kernel_name }}");
  write_file(tree / "include" / "dg" / "h.cuh", "#pragma once");
  const dg::jit::SourceBundle b = dg::jit::load_source_bundle(tree.c_str());
  REQUIRE(b.error.empty());
  const std::string* text = nullptr;
  CHECK(b.get_template("kernels/k.cu.j2", &text) == DG_SUCCESS);
  REQUIRE(text != nullptr);
  CHECK(*text == "{{ kernel_name }}");
  CHECK(b.get_template("kernels/layout.cu.j2", &text) == DG_ERROR_INVALID_ARGUMENT);
  const std::string msg = dg_last_error();
  CHECK_MESSAGE(msg.find((tree / "kernels" / "layout.cu.j2").string()) != std::string::npos, msg);
  CHECK_MESSAGE(msg.find("DG_TEMPLATE_DIR=") == 0, msg);
  // The embedded bundle lacking one is libdg's own fault.
  CHECK(dg::jit::load_source_bundle(nullptr).get_template("kernels/none.cu.j2", &text) == DG_ERROR_INTERNAL);
}

TEST_CASE("an entry whose header claims more bytes than the file holds is a miss") {
  TempDir tmp;
  dg::jit::DiskCache cache(tmp.path.string());
  const auto key = dg::jit::digest("claims");
  const std::vector<char> cubin(64, 'x');
  cache.store("gemm", key, cubin);
  const std::string path = cache.path_for("gemm", key);
  std::string bytes = read_file(path);
  const uint64_t huge = uint64_t(1) << 40;
  std::memcpy(&bytes[24], &huge, sizeof(huge));  // payload_size
  write_file(path, bytes);
  LogCapture log;
  std::vector<char> out;
  CHECK_FALSE(cache.load("gemm", key, &out));
  CHECK(log.count("truncated payload") == 1);
}

TEST_CASE("a read-only cache directory is read; writes are skipped with one warning") {
  TempDir tmp;
  const auto key = dg::jit::digest("warm");
  const std::vector<char> cubin = {'w', 'a', 'r', 'm'};
  {
    dg::jit::DiskCache warm(tmp.path.string());
    warm.store("gemm", key, cubin);
  }
  fs::permissions(tmp.path / "libdg", fs::perms::owner_read | fs::perms::owner_exec | fs::perms::group_read |
                                          fs::perms::group_exec | fs::perms::others_read | fs::perms::others_exec);
  fs::permissions(tmp.path, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                                fs::perms::others_read | fs::perms::others_exec);
  // As root, permission bits do not bind: run the reader as "nobody" then.
  const int rc = in_child([&] {
    if (geteuid() == 0 && (setgid(65534) != 0 || setuid(65534) != 0)) return 1;
    LogCapture log;
    dg::jit::DiskCache cache(tmp.path.string());
    if (!cache.enabled()) return 2;
    if (!cache.read_only()) return 3;
    std::vector<char> out;
    if (!cache.load("gemm", key, &out) || out != cubin) return 4;
    cache.store("gemm", dg::jit::digest("new1"), cubin);
    cache.store("gemm", dg::jit::digest("new2"), cubin);
    cache.store_side_file("gemm", dg::jit::digest("new3"), "cu", "source");
    if (log.count("read-only") != 1) return 5;
    return 0;
  });
  fs::permissions(tmp.path / "libdg", fs::perms::owner_all);
  CHECK(rc == 0);
}

TEST_CASE("nvcc runs from an argument vector: a path with quotes and $() is a path, not a command") {
  TempDir tmp;
  const fs::path dir = tmp.path / "dir with 'quote\" and $(touch injected)";
  fs::create_directories(dir);
  const fs::path nvcc = dir / "nvcc";
  // A stand-in for nvcc: records its arguments, answers --version, writes the -o file.
  write_file(nvcc,
             "#!/bin/sh\n"
             "for a in \"$@\"; do printf '%s\\n' \"$a\"; done >> \"$(dirname \"$0\")/args\"\n"
             "if [ \"$1\" = --version ]; then echo 'Cuda compilation tools, release 99.9, V99.9.1'; exit 0; fi\n"
             "if [ -n \"$DG_FAKE_NVCC_FAIL\" ]; then echo 'kernel.cu(1): error: broken'; exit 3; fi\n"
             "while [ $# -gt 0 ]; do if [ \"$1\" = -o ]; then printf 'fake-cubin' > \"$2\"; fi; shift; done\n");
  fs::permissions(nvcc, fs::perms::owner_all);

  dg::Config config;
  config.compiler = DG_COMPILER_NVCC;
  config.nvcc_path = nvcc.string();
  CHECK(dg::jit::compiler_signature(config).find("release 99.9") != std::string::npos);
  dg::jit::CompileResult result;
  REQUIRE(dg::jit::compile(dg::ops::gemm_scale_kernel_spec(DG_DTYPE_BFLOAT16, true), "sm_90a", config, &result) ==
          DG_SUCCESS);
  CHECK(std::string(result.cubin.begin(), result.cubin.end()) == "fake-cubin");
  CHECK_FALSE(fs::exists(tmp.path / "injected"));
  CHECK_FALSE(fs::exists("injected"));
  const std::string args = read_file(dir / "args");
  CHECK(args.find("--version\n") != std::string::npos);
  CHECK(args.find("-cubin\n-o\n") != std::string::npos);
  CHECK(args.find("--gpu-architecture=sm_90a\n") != std::string::npos);

  ScopedEnv fail("DG_FAKE_NVCC_FAIL", "1");
  dg::jit::CompileResult failed;
  CHECK(dg::jit::compile(dg::ops::gemm_scale_kernel_spec(DG_DTYPE_BFLOAT16, true), "sm_90a", config, &failed) ==
        DG_ERROR_COMPILE);
  CHECK(std::string(dg_last_error()).find("exit 3") != std::string::npos);
  CHECK(std::string(dg_last_error()).find("error: broken") != std::string::npos);

  config.nvcc_path = (tmp.path / "missing'nvcc").string();
  CHECK(dg::jit::compiler_signature(config).find("unknown") != std::string::npos);
  CHECK(dg::jit::compile(dg::ops::gemm_scale_kernel_spec(DG_DTYPE_BFLOAT16, true), "sm_90a", config, &failed) ==
        DG_ERROR_UNSUPPORTED);
}

TEST_CASE("DG_TEMPLATE_DIR that is not a template tree is a configuration error") {
  const dg::jit::SourceBundle root = dg::jit::load_source_bundle("/");
  CHECK(root.error.find("DG_TEMPLATE_DIR=/ is not a usable template tree") != std::string::npos);
  CHECK(root.templates.empty());

  TempDir tmp;
  fs::create_symlink(tmp.path / "b", tmp.path / "a");
  fs::create_symlink(tmp.path / "a", tmp.path / "b");
  const dg::jit::SourceBundle loop = dg::jit::load_source_bundle((tmp.path / "a").c_str());
  CHECK(loop.error.find("is not a usable template tree") != std::string::npos);

  const dg::jit::SourceBundle missing = dg::jit::load_source_bundle((tmp.path / "nothing").c_str());
  CHECK(missing.error.find("kernels is not a directory") != std::string::npos);

  // A tree with a directory link loop inside still loads: links are not followed.
  const fs::path tree = tmp.path / "tree";
  fs::create_directories(tree / "kernels");
  fs::create_directories(tree / "include" / "dg");
  write_file(tree / "kernels" / "k.cu.j2", "{{ kernel_name }}");
  write_file(tree / "include" / "dg" / "h.cuh", "#pragma once");
  fs::create_directory_symlink(tree, tree / "kernels" / "loop");
  REQUIRE(mkfifo((tree / "kernels" / "fifo.cu.j2").c_str(), 0644) == 0);  // skipped, never opened
  const dg::jit::SourceBundle ok = dg::jit::load_source_bundle(tree.c_str());
  CHECK(ok.error.empty());
  REQUIRE(ok.templates.size() == 1);
  CHECK(ok.templates[0].first == "kernels/k.cu.j2");
  REQUIRE(ok.headers.size() == 1);
  CHECK(ok.headers[0].first == "dg/h.cuh");

  // The source tree's templates are the embedded ones.
  const dg::jit::SourceBundle source = dg::jit::load_source_bundle(DG_TEST_DATA_DIR "/../../templates");
  CHECK(source.error.empty());
  CHECK(source.hash == dg::jit::load_source_bundle(nullptr).hash);
}

// The bundle is read once per process, so the public call runs in a fresh process of this binary
// that runs only this test case, with DG_TEMPLATE_DIR=/ and, as the marker, a file it writes to
// show that it ran.
TEST_CASE("DG_TEMPLATE_DIR=/ makes a public kernel-preparing call a configuration error") {
  constexpr const char* kMarker = "DG_TEST_TEMPLATE_DIR_CHILD";
  if (const char* ran = std::getenv(kMarker)) {
    write_file(ran, "ran");
    dg_stream* stream = nullptr;
    REQUIRE(dg_stream_create_offline(&stream, 9, 0, 132, nullptr) == DG_SUCCESS);
    const dg_status s = dg_gemm_prepare(stream, DG_DTYPE_BFLOAT16, DG_GEMM_LAYOUT_NT, 256, 256, 256,
                                        DG_DTYPE_BFLOAT16, 0, nullptr);
    const std::string msg = dg_last_error();
    dg_stream_destroy(stream);
    CHECK_MESSAGE(s == DG_ERROR_INVALID_ARGUMENT, dg_status_string(s), ": ", msg);
    CHECK_MESSAGE(msg.find("DG_TEMPLATE_DIR=/ is not a usable template tree") != std::string::npos, msg);
    return;
  }
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e)
    if (std::strncmp(*e, "DG_TEMPLATE_DIR=", 16) != 0) env.emplace_back(*e);
  env.emplace_back("DG_TEMPLATE_DIR=/");
  TempDir tmp;
  const fs::path ran = tmp.path / "ran";
  env.emplace_back(std::string(kMarker) + "=" + ran.string());
  std::vector<char*> envp;
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::string exe = "/proc/self/exe", filter = "--test-case=DG_TEMPLATE_DIR=/ makes a public*";
  char* argv[] = {exe.data(), filter.data(), nullptr};
  pid_t pid = 0;
  REQUIRE(posix_spawn(&pid, exe.c_str(), nullptr, nullptr, argv, envp.data()) == 0);
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  CHECK_MESSAGE((WIFEXITED(status) && WEXITSTATUS(status) == 0), "the child's checks failed (its output is above)");
  CHECK_MESSAGE(fs::exists(ran), "the child did not run the test case");
}
