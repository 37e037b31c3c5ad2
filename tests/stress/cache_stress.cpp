// The JIT disk cache under load and vandalism: 8 processes x 8 threads share one cache directory,
// storing and loading entries of known content and compiling the same and different kernels
// (dg_gemm_prepare on fresh offline devices, so that each call goes to the disk cache or NVRTC),
// while another process truncates, overwrites, swaps and replaces entries with links, FIFOs and
// directories. Passes when no call failed and no load served bytes other than what was stored.
//
//   cache_stress [--seconds S] [--processes P] [--threads T]
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "dg.h"
#include "jit/disk_cache.h"

namespace fs = std::filesystem;

namespace {

constexpr int kKeys = 16;

// The content stored under key k: deterministic, 1-64 KiB.
std::vector<char> payload(int k) {
  std::mt19937 rng(uint32_t(k) * 7919u + 1);
  std::vector<char> p(1024 * (1 + k % 64));
  for (char& c : p) c = char(rng());
  return p;
}

struct Counts {
  std::atomic<long> loads{0}, stores{0}, served{0}, corrupt{0}, calls{0}, failed{0};
};

int worker(const std::string& dir, int process, int threads, double seconds) {
  dg_set_log_level(DG_LOG_OFF);  // every vandalised entry warns
  const dg::jit::DiskCache cache(dir);
  if (!cache.enabled()) {
    std::fprintf(stderr, "worker %d: cache %s not usable\n", process, dir.c_str());
    return 1;
  }
  dg_config* cfg = nullptr;
  dg_config_create(&cfg);
  dg_config_set_string(cfg, DG_CONFIG_CACHE_DIR, dir.c_str());
  Counts n;
  std::string first_error;
  std::atomic<bool> recorded{false};
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      std::mt19937 rng(uint32_t(process * 1000 + t));
      for (int i = 0; std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() < seconds; ++i) {
        const int k = int(rng() % kKeys);
        const auto key = dg::jit::digest("stress-" + std::to_string(k));
        std::vector<char> got;
        ++n.loads;
        if (cache.load("stress", key, &got)) {
          ++n.served;
          if (got != payload(k)) ++n.corrupt;
        } else {
          cache.store("stress", key, payload(k));
          ++n.stores;
        }
        if (i % 8 == 0) {
          // A fresh offline device has an empty memory cache: the kernel comes from disk or NVRTC.
          // Four kernels (D dtype x C): processes and threads meet on the same ones.
          const int sms = 1 + (process * threads * 64 + t * 64 + i / 8) % 1024;
          dg_stream* s = nullptr;
          dg_status st = dg_stream_create_offline(&s, 9, 0, sms, cfg);
          if (st == DG_SUCCESS) {
            const int variant = int(rng() % 4);
            st = dg_gemm_prepare(s, DG_DTYPE_BFLOAT16, DG_GEMM_LAYOUT_NT, 64, 64, 0,
                                 variant % 2 ? DG_DTYPE_FLOAT32 : DG_DTYPE_BFLOAT16, variant / 2, nullptr);
          }
          dg_stream_destroy(s);
          ++n.calls;
          if (st != DG_SUCCESS) {
            ++n.failed;
            if (!recorded.exchange(true)) first_error = dg_last_error();
          }
        }
      }
    });
  for (auto& th : pool) th.join();
  dg_config_destroy(cfg);
  std::printf("process %d: %ld loads (%ld served, %ld corrupt), %ld stores, %ld compile calls (%ld failed)%s%s\n",
              process, n.loads.load(), n.served.load(), n.corrupt.load(), n.stores.load(), n.calls.load(),
              n.failed.load(), first_error.empty() ? "" : ": ", first_error.c_str());
  std::fflush(stdout);
  return n.corrupt == 0 && n.failed == 0 && n.served > 0 ? 0 : 1;
}

volatile sig_atomic_t g_stop = 0;

// Until SIGTERM: damages a random entry of the cache directory in one of several ways.
[[noreturn]] void vandal(const std::string& dir) {
  signal(SIGTERM, [](int) { g_stop = 1; });
  signal(SIGPIPE, SIG_IGN);
  std::mt19937 rng(12345);
  long acts = 0;
  while (!g_stop) {
    std::vector<fs::path> entries;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(dir, ec))
      if (e.path().extension() == ".cubin") entries.push_back(e.path());
    if (entries.empty()) {
      usleep(1000);
      continue;
    }
    const fs::path p = entries[rng() % entries.size()];
    const fs::path other = entries[rng() % entries.size()];
    // Only regular files are edited in place or copied: opening a FIFO left by an earlier act would
    // block the vandal.
    const bool regular = fs::is_regular_file(fs::symlink_status(p, ec)) &&
                         fs::is_regular_file(fs::symlink_status(other, ec));
    switch (regular ? rng() % 7 : 5) {
      case 0:  // truncate in place
        truncate(p.c_str(), off_t(rng() % 4096));
        break;
      case 1: {  // overwrite bytes in place
        std::fstream f(p, std::ios::binary | std::ios::in | std::ios::out);
        f.seekp(long(rng() % 4096));
        f.put(char(rng()));
        break;
      }
      case 2: {  // replace with another entry's (valid, but another key's) content
        fs::copy_file(other, p.string() + ".v", fs::copy_options::overwrite_existing, ec);
        fs::rename(p.string() + ".v", p, ec);
        break;
      }
      case 3:
        fs::remove(p, ec);
        mkfifo(p.c_str(), 0644);
        break;
      case 4:
        fs::remove(p, ec);
        symlink("/dev/zero", p.c_str());
        break;
      case 5:
        fs::remove(p, ec);
        break;
      default: {  // garbage behind a valid magic
        std::ofstream f(p, std::ios::binary | std::ios::trunc);
        f << "DGKC" << std::string(size_t(rng() % 100), char(rng()));
        break;
      }
    }
    ++acts;
    usleep(200);
  }
  std::printf("vandal: %ld entries damaged\n", acts);
  std::fflush(stdout);
  _exit(0);
}

}  // namespace

int main(int argc, char** argv) {
  double seconds = 20;
  int processes = 8, threads = 8;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--seconds") seconds = std::stod(argv[i + 1]);
    else if (a == "--processes") processes = std::stoi(argv[i + 1]);
    else if (a == "--threads") threads = std::stoi(argv[i + 1]);
  }
  char tmpl[] = "/tmp/dg-cache-stress-XXXXXX";
  if (mkdtemp(tmpl) == nullptr) return 2;
  const std::string root = tmpl;
  fs::create_directories(root + "/libdg");
  const pid_t vandal_pid = fork();
  if (vandal_pid == 0) vandal(root + "/libdg");
  std::vector<pid_t> workers;
  for (int p = 0; p < processes; ++p) {
    const pid_t pid = fork();
    if (pid == 0) _exit(worker(root, p, threads, seconds));
    workers.push_back(pid);
  }
  int failed = 0;
  for (pid_t pid : workers) {
    int status = 0;
    waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      ++failed;
      std::printf("worker %d ended with %s %d\n", int(pid), WIFEXITED(status) ? "exit" : "signal",
                  WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
    }
  }
  kill(vandal_pid, SIGTERM);
  waitpid(vandal_pid, nullptr, 0);
  std::error_code ec;
  fs::remove_all(root, ec);
  std::printf("cache stress: %d processes x %d threads for %.0f s: %d failed processes\n", processes, threads, seconds,
              failed);
  return failed == 0 ? 0 : 1;
}
