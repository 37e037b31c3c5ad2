// dg_info_report: what a bug report needs to know about this libdg and the machine it runs on.
#include <dlfcn.h>
#include <nvrtc.h>

#include <cstring>
#include <filesystem>
#include <string>
#include <system_error>

#include "dg.h"
#include "runtime/config.h"
#include "runtime/device.h"
#include "runtime/driver.h"
#include "runtime/status.h"

extern char** environ;

namespace {

namespace fs = std::filesystem;

// The JIT cache walk stops after this many entries: a report must not take minutes on a huge or
// network-mounted directory.
constexpr long kMaxCacheEntries = 1000000;
// Environment values longer than this are cut (a report line, not a dump).
constexpr size_t kMaxEnvValue = 512;
constexpr double kBytesPerMiB = 1024.0 * 1024.0;

// The file a symbol was loaded from, or "" when the loader cannot say.
std::string origin_of(const void* symbol) {
  Dl_info info{};
  if (symbol != nullptr && dladdr(symbol, &info) != 0 && info.dli_fname != nullptr) return info.dli_fname;
  return "";
}

std::string build_lines() {
#if defined(__clang__)
  // __clang_version__ may end in a space or a repository URL: the numbers say what is needed.
  const std::string compiler = fmt::format("clang {}.{}.{}", __clang_major__, __clang_minor__, __clang_patchlevel__);
#elif defined(__GNUC__)
  const std::string compiler = "GCC " __VERSION__;
#else
  const std::string compiler = "unknown compiler";
#endif
#ifdef NDEBUG
  const char* checks = "assertions off";
#else
  const char* checks = "assertions on";
#endif
  std::string path = origin_of(reinterpret_cast<const void*>(&dg_info_report));
  return fmt::format("libdg: {}\nbuild: {}, CUDA {}.{} headers, {}\nlibrary: {}\n", dg_version(), compiler,
                     CUDA_VERSION / 1000, CUDA_VERSION % 1000 / 10, checks, path.empty() ? "(unknown)" : path);
}

std::string nvrtc_line() {
  int major = 0, minor = 0;
  if (nvrtcVersion(&major, &minor) != NVRTC_SUCCESS) return "nvrtc: loaded, but nvrtcVersion failed\n";
  const std::string path = origin_of(reinterpret_cast<const void*>(&nvrtcVersion));
  return fmt::format("nvrtc: {}.{} from {}\n", major, minor, path.empty() ? "(unknown)" : path);
}

std::string support_of(const dg::Device& d) {
  if (d.arch.empty()) return "not supported (libdg's kernels need SM90 or SM100)";
  if (d.cc_major == 9) return fmt::format("supported (NVRTC target {})", d.arch);
  return fmt::format("partly supported (NVRTC target {}: layouts and NVFP4 GEMV; the GEMMs need SM90)", d.arch);
}

// Driver and devices. A missing driver is part of the report, not a failure of it.
std::string driver_and_device_lines() {
  const dg::driver::Api* api = nullptr;
  if (dg::driver::load(&api) != DG_SUCCESS)
    return fmt::format("driver: not loaded: {}\ndevices: none usable without a driver\n", dg::last_error());
  std::string out = fmt::format("driver: CUDA {}.{} from {}\n", api->version / 1000, api->version % 1000 / 10,
                                origin_of(reinterpret_cast<const void*>(api->cuInit)));
  int count = 0;
  if (api->cuDeviceGetCount(&count) != CUDA_SUCCESS) return out + "devices: cuDeviceGetCount failed\n";
  out += fmt::format("devices: {}\n", count);
  for (int i = 0; i < count; ++i) {
    dg::Device* d = nullptr;
    if (dg::get_device(i, &d) != DG_SUCCESS) {
      out += fmt::format("device {}: cannot be used: {}\n", i, dg::last_error());
      continue;
    }
    out += fmt::format("device {}: {}, compute capability {}.{}, {} SMs, {}\n", i, d->name, d->cc_major,
                       d->cc_minor, d->sm_count, support_of(*d));
  }
  return out;
}

std::string cache_line(const std::string& dir) {
  if (dir.empty()) return "jit cache: none (memory only: DG_JIT_CACHE_DIR and HOME are unset)\n";
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return fmt::format("jit cache: {} (not created yet)\n", dir);
  long entries = 0;
  std::uintmax_t bytes = 0;
  bool cut = false;
  fs::recursive_directory_iterator it(dir, fs::directory_options::skip_permission_denied, ec), end;
  for (; !ec && it != end; it.increment(ec)) {
    if (++entries > kMaxCacheEntries) {
      cut = true;
      break;
    }
    std::error_code size_ec;
    if (it->is_regular_file(size_ec)) {
      const std::uintmax_t size = it->file_size(size_ec);
      if (!size_ec) bytes += size;
    }
  }
  return fmt::format("jit cache: {} ({}{} entries, {:.1f} MiB{})\n", dir, cut ? "over " : "",
                     cut ? kMaxCacheEntries : entries, static_cast<double>(bytes) / kBytesPerMiB,
                     ec ? ", walk stopped: " + ec.message() : "");
}

std::string settings_lines() {
  const dg::Config& c = dg::default_config();
  std::string out = cache_line(c.cache_dir);
  out += c.compiler == DG_COMPILER_NVRTC ? std::string("jit compiler: NVRTC\n")
                                         : fmt::format("jit compiler: nvcc at {}\n", c.nvcc_path);
  const int cap = dg::globals().num_sms;
  out += cap > 0 ? fmt::format("sm cap: {} (dg_set_num_sms / DG_NUM_SMS)\n", cap) : "sm cap: none (every SM)\n";
  out += "kernel configs: built-in heuristics (no tuning table; DG_PRINT_CONFIGS=1 logs each choice)\n";
  return out;
}

std::string environment_lines() {
  std::string out;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const bool relevant = std::strncmp(*e, "DG_", 3) == 0 || std::strncmp(*e, "CUDA_HOME=", 10) == 0 ||
                          std::strncmp(*e, "CUDA_PATH=", 10) == 0 || std::strncmp(*e, "CUDA_VISIBLE_DEVICES=", 21) == 0;
    if (!relevant) continue;
    std::string entry(*e);
    if (entry.size() > kMaxEnvValue) entry = entry.substr(0, kMaxEnvValue) + "...";
    out += "env: " + entry + "\n";
  }
  return out.empty() ? "env: no DG_* or CUDA_* variable is set\n" : out;
}

}  // namespace

extern "C" {

DG_API dg_status dg_info_report(char* buffer, size_t capacity, size_t* required) {
  if (buffer == nullptr && capacity != 0)
    return dg::fail(DG_ERROR_INVALID_ARGUMENT, "buffer: is NULL with capacity {} (pass capacity 0 to ask the size)",
                    capacity);
  DG_API_GUARD({
    const std::string report =
        build_lines() + nvrtc_line() + driver_and_device_lines() + settings_lines() + environment_lines();
    if (buffer != nullptr && capacity < report.size() + 1)
      return dg::fail(DG_ERROR_INVALID_ARGUMENT, "capacity: {} bytes is too small (the report needs {})", capacity,
                      report.size() + 1);
    if (required != nullptr) *required = report.size() + 1;
    if (buffer != nullptr) std::memcpy(buffer, report.c_str(), report.size() + 1);
    return DG_SUCCESS;
  })
}

}  // extern "C"
