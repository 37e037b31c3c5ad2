// A bounded random fuzzing driver for builds without libFuzzer (GCC): runs every seed from the
// files and directories given, then mutated copies of them for --seconds, and exits 0 when no input
// crashed. Not coverage guided: it keeps every 64th mutant that ran as a seed, so that mutations
// compound. A crash is whatever the target or a sanitizer does to end the process; the input is
// written first to ./fuzz-crash-<target>.bin (--crash-dir) so that it can be replayed.
//
//   fuzz_template --seconds 10 --seed 1 templates/kernels tests/unit/codegen/cases
//   fuzz_template fuzz-crash-fuzz_template.bin        (replays one input)
//   nice -n 19 fuzz_tensor --cpu-seconds 600 ...       (stops after 10 minutes of this process's
//                                                       CPU time, however long that takes)
// SIGINT or SIGTERM ends a run early: the input in flight finishes and the summary is printed.
#include <chrono>
#include <csignal>
#include <ctime>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "fuzz.h"

namespace {

using Bytes = std::vector<uint8_t>;

volatile std::sig_atomic_t g_stop = 0;
extern "C" void request_stop(int) { g_stop = 1; }

// Tokens that are worth splicing in whole (template syntax, JSON syntax, boundary numbers).
const char* const kDictionary[] = {
    "{{", "}}", "{%", "%}", "{#", "#}", "-", "for ", " in ", "endfor", "if ", "else", "elif", "endif", "set ", " = ",
    "range(", ")", "(", "[", "]", ",", "*", "**", "~", "+", " | ", "length", "join", "list", "int", "default(",
    " is ", "defined", "loop.index", "not ", " and ", " or ", "9223372036854775807", "-9223372036854775808",
    "2**62", "4294967296", "'", "\"", "\\u", "\\ud83d", "{", "}", ":", "null", "true", "1e308", "0.5", "\n"};

Bytes read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void mutate(Bytes& b, std::mt19937_64& rng, size_t max_len) {
  const int n = 1 + int(rng() % 8);
  for (int i = 0; i < n; ++i) {
    const size_t pos = b.empty() ? 0 : rng() % (b.size() + 1);
    switch (rng() % 7) {
      case 0:
        if (!b.empty()) b[pos % b.size()] ^= uint8_t(1u << (rng() % 8));
        break;
      case 1:
        if (!b.empty()) b[pos % b.size()] = uint8_t(rng());
        break;
      case 2: {
        const size_t len = 1 + rng() % 8;
        for (size_t j = 0; j < len; ++j) b.insert(b.begin() + long(std::min(pos, b.size())), uint8_t(rng()));
        break;
      }
      case 3:
        if (!b.empty()) {
          const size_t start = pos % b.size(), len = 1 + rng() % std::min<size_t>(64, b.size() - start);
          b.erase(b.begin() + long(start), b.begin() + long(start + len));
        }
        break;
      case 4:
        if (!b.empty()) {  // duplicate a range (nesting, repetition)
          const size_t start = pos % b.size(), len = 1 + rng() % std::min<size_t>(256, b.size() - start);
          const Bytes copy(b.begin() + long(start), b.begin() + long(start + len));
          const size_t times = 1 + rng() % 16;
          for (size_t t = 0; t < times; ++t) b.insert(b.begin() + long(start), copy.begin(), copy.end());
        }
        break;
      default: {
        const char* tok = kDictionary[rng() % (sizeof(kDictionary) / sizeof(kDictionary[0]))];
        b.insert(b.begin() + long(std::min(pos, b.size())), tok, tok + std::strlen(tok));
        break;
      }
    }
  }
  if (b.size() > max_len) b.resize(max_len);
}

}  // namespace

int main(int argc, char** argv) {
  double seconds = 10;
  double cpu_seconds = 0;  // > 0: a budget of process CPU time instead of wall time
  uint64_t seed = 1;
  size_t max_len = 1 << 16;
  std::string crash_dir = ".";
  std::vector<Bytes> pool;
  const std::string target = std::filesystem::path(argv[0]).filename().string();
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--seconds" && i + 1 < argc) seconds = std::stod(argv[++i]);
    else if (a == "--cpu-seconds" && i + 1 < argc) cpu_seconds = std::stod(argv[++i]);
    else if (a == "--seed" && i + 1 < argc) seed = std::stoull(argv[++i]);
    else if (a == "--max-len" && i + 1 < argc) max_len = std::stoull(argv[++i]);
    else if (a == "--crash-dir" && i + 1 < argc) crash_dir = argv[++i];
    else if (std::filesystem::is_directory(a)) {
      for (const auto& e : std::filesystem::recursive_directory_iterator(a))
        if (e.is_regular_file()) pool.push_back(read_file(e.path()));
    } else if (std::filesystem::is_regular_file(a)) {
      pool.push_back(read_file(a));
    } else {
      std::cerr << "usage: " << target << " [--seconds S | --cpu-seconds S] [--seed N] [--max-len L] [--crash-dir D] [CORPUS...]\n";
      return 2;
    }
  }
  std::mt19937_64 rng(seed);
  if (pool.empty())
    for (int i = 0; i < 16; ++i) {
      Bytes b(size_t(rng() % 64));
      for (auto& x : b) x = uint8_t(rng());
      pool.push_back(b);
    }
  const std::string crash_path = crash_dir + "/fuzz-crash-" + target + ".bin";
  auto run = [&](const Bytes& input) {
    {  // written before the run: a crash leaves it behind
      std::ofstream out(crash_path, std::ios::binary | std::ios::trunc);
      out.write(reinterpret_cast<const char*>(input.data()), std::streamsize(input.size()));
    }
    LLVMFuzzerTestOneInput(input.data(), input.size());
  };
  const auto t0 = std::chrono::steady_clock::now();
  uint64_t runs = 0;
  for (const Bytes& b : pool) {
    run(b);
    ++runs;
  }
  const size_t seeds = pool.size();
  auto cpu_used = [] { return double(std::clock()) / CLOCKS_PER_SEC; };
  const double cpu0 = cpu_used();
  std::signal(SIGINT, request_stop);
  std::signal(SIGTERM, request_stop);
  auto time_left = [&] {
    if (g_stop) return false;
    if (cpu_seconds > 0) return cpu_used() - cpu0 < cpu_seconds;
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() < seconds;
  };
  while (time_left()) {
    Bytes b = pool[rng() % pool.size()];
    mutate(b, rng, max_len);
    run(b);
    if (++runs % 64 == 0 && pool.size() < 4096) pool.push_back(std::move(b));
  }
  std::filesystem::remove(crash_path);
  std::cout << target << ": " << runs << " inputs (" << seeds << " seeds) in "
            << std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() << " s ("
            << cpu_used() - cpu0 << " s of CPU), no crash" << (g_stop ? " (stopped by a signal)" : "") << "\n";
  return 0;
}
