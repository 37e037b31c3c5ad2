#include "jit/compiler.h"

#include <fcntl.h>
#include <nvrtc.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <utility>

#include "jit/source_bundle.h"
#include "runtime/log.h"
#include "runtime/status.h"

namespace dg::jit {
namespace {

// Kernel sources use no toolkit header, so diagnostics about unused variables in templates are
// the only noise worth silencing.
const char* const kSuppressedDiagnostics = "--diag-suppress=177,550";

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// NVRTC's version at run time (the library may load a newer one than it was built with).
std::pair<int, int> nvrtc_version() {
  static const std::pair<int, int> version = [] {
    int major = 0, minor = 0;
    nvrtcVersion(&major, &minor);
    return std::make_pair(major, minor);
  }();
  return version;
}

dg_status nvrtc_check(nvrtcResult r, const char* what) {
  if (r == NVRTC_SUCCESS) return DG_SUCCESS;
  return fail(DG_ERROR_COMPILE, "{}: {}", what, nvrtcGetErrorString(r));
}

dg_status compile_nvrtc(const KernelSpec& spec, const std::string& arch, const Config& config, CompileResult* out) {
  const SourceBundle& bundle = source_bundle();
  std::vector<const char*> header_sources, header_names;
  for (const auto& [name, contents] : bundle.headers) {
    header_names.push_back(name.c_str());
    header_sources.push_back(contents.c_str());
  }
  nvrtcProgram prog = nullptr;
  const std::string file_name = spec.kernel_name + ".cu";
  DG_TRY(nvrtc_check(nvrtcCreateProgram(&prog, out->source.c_str(), file_name.c_str(),
                                        static_cast<int>(header_sources.size()), header_sources.data(),
                                        header_names.data()),
                     "nvrtcCreateProgram"));
  struct Destroy {
    nvrtcProgram* p;
    ~Destroy() { nvrtcDestroyProgram(p); }
  } destroy{&prog};

  const std::vector<std::string> options = compiler_options(arch, config);
  std::vector<const char*> argv;
  for (const std::string& o : options) argv.push_back(o.c_str());
  const nvrtcResult result = nvrtcCompileProgram(prog, static_cast<int>(argv.size()), argv.data());
  size_t log_size = 0;
  nvrtcGetProgramLogSize(prog, &log_size);
  out->log.resize(log_size);
  if (log_size > 0) nvrtcGetProgramLog(prog, out->log.data());
  while (!out->log.empty() && (out->log.back() == '\0' || out->log.back() == '\n')) out->log.pop_back();
  if (result != NVRTC_SUCCESS)
    return fail(DG_ERROR_COMPILE, "NVRTC failed to compile {} for {} ({}):\n{}", spec.kernel_name, arch,
                nvrtcGetErrorString(result), out->log);
  size_t cubin_size = 0;
  DG_TRY(nvrtc_check(nvrtcGetCUBINSize(prog, &cubin_size), "nvrtcGetCUBINSize"));
  out->cubin.resize(cubin_size);
  DG_TRY(nvrtc_check(nvrtcGetCUBIN(prog, out->cubin.data()), "nvrtcGetCUBIN"));
  if (config.dump_ptx) {
    size_t ptx_size = 0;
    if (nvrtcGetPTXSize(prog, &ptx_size) == NVRTC_SUCCESS && ptx_size > 0) {
      out->ptx.resize(ptx_size);
      nvrtcGetPTX(prog, out->ptx.data());
      out->ptx.pop_back();  // NUL
    }
  }
  return DG_SUCCESS;
}

// Runs `args[0]` with `args` as its argument vector (no shell: a path or option is never parsed as
// a command), stdin from /dev/null, stdout and stderr collected into *output. Returns the exit
// status, or -1 when the program could not be started or was killed (*output then says why).
int run_process(const std::vector<std::string>& args, std::string* output) {
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  int fds[2];
  // Close-on-exec, so that processes other threads spawn meanwhile do not hold the write end open.
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    *output = fmt::format("cannot create a pipe: {}", std::strerror(errno));
    return -1;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 1);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 2);
  pid_t pid = 0;
  const int spawn_error = ::posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(fds[1]);
  if (spawn_error != 0) {
    ::close(fds[0]);
    *output = fmt::format("cannot run {}: {}", args[0], std::strerror(spawn_error));
    return -1;
  }
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(fds[0], buf, sizeof(buf));
    if (n > 0) output->append(buf, static_cast<size_t>(n));
    else if (n == 0 || errno != EINTR) break;
  }
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) {
      *output += fmt::format("\nwaitpid failed: {}", std::strerror(errno));
      return -1;
    }
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  *output += fmt::format("\n{} was killed by signal {}", args[0], WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  return -1;
}

// nvcc in a scratch directory: headers and source written out, cubin read back.
dg_status compile_nvcc(const KernelSpec& spec, const std::string& arch, const Config& config, CompileResult* out) {
  namespace fs = std::filesystem;
  if (::access(config.nvcc_path.c_str(), X_OK) != 0)
    return fail(DG_ERROR_UNSUPPORTED, "nvcc not found at {} (set DG_JIT_NVCC_COMPILER or CUDA_HOME, or use NVRTC)",
                config.nvcc_path);
  char dir_template[] = "/tmp/libdg-nvcc-XXXXXX";
  if (::mkdtemp(dir_template) == nullptr)
    return fail(DG_ERROR_COMPILE, "cannot create a scratch directory for nvcc: {}", std::strerror(errno));
  const fs::path dir = dir_template;
  struct Cleanup {
    fs::path d;
    ~Cleanup() {
      std::error_code ec;
      fs::remove_all(d, ec);
    }
  } cleanup{dir};
  // A full or read-only /tmp is a compile failure with the reason, not an exception.
  auto write = [](const fs::path& p, const std::string& contents) -> dg_status {
    std::error_code ec;
    fs::create_directories(p.parent_path(), ec);
    if (ec) return fail(DG_ERROR_COMPILE, "cannot create {} for nvcc: {}", p.parent_path().string(), ec.message());
    std::ofstream f(p, std::ios::binary);
    f << contents;
    f.close();
    if (!f) return fail(DG_ERROR_COMPILE, "cannot write {} for nvcc: {}", p.string(), std::strerror(errno));
    return DG_SUCCESS;
  };
  for (const auto& [name, contents] : source_bundle().headers) DG_TRY(write(dir / "include" / name, contents));
  DG_TRY(write(dir / "kernel.cu", out->source));
  std::vector<std::string> args = {config.nvcc_path,           "-cubin", "-o", (dir / "kernel.cubin").string(),
                                   (dir / "kernel.cu").string(), "-I" + (dir / "include").string()};
  for (const std::string& o : compiler_options(arch, config)) args.push_back(o);
  const int status = run_process(args, &out->log);
  if (status != 0)
    return fail(DG_ERROR_COMPILE, "nvcc failed to compile {} for {} (exit {}):\n{}", spec.kernel_name, arch, status,
                out->log);
  std::ifstream in(dir / "kernel.cubin", std::ios::binary);
  out->cubin.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  if (out->cubin.empty()) return fail(DG_ERROR_COMPILE, "nvcc produced no cubin for {}", spec.kernel_name);
  return DG_SUCCESS;
}

}  // namespace

dg_status render(const KernelSpec& spec, std::string* source) {
  DG_TRY(check_source_bundle());
  const std::string* text = nullptr;
  DG_TRY(source_bundle().get_template(spec.template_name, &text));
  try {
    *source = codegen::render(*text, spec.template_name, spec.context);
  } catch (const codegen::TemplateError& e) {
    return fail(DG_ERROR_COMPILE, "rendering {}:\n{}", spec.template_name, e.what());
  }
  return DG_SUCCESS;
}

std::vector<std::string> compiler_options(const std::string& arch, const Config& config) {
  std::vector<std::string> o;
  o.push_back("-std=c++" + std::to_string(config.cpp_standard));
  o.push_back(kSuppressedDiagnostics);
  if (config.compiler == DG_COMPILER_NVRTC) {
    o.push_back("--gpu-architecture=" + arch);
    o.push_back("-default-device");
    // Kernels use no texture, no device-side CUDA runtime call and no device-side launch: without
    // their declarations NVRTC's built-in header parses ~10 ms faster per kernel (NVRTC 12.4+; the
    // cubins are the same).
    if (nvrtc_version() >= std::make_pair(12, 4)) o.push_back("-minimal");
  } else {
    o.push_back("--gpu-architecture=" + arch);
    o.push_back("-O3");
  }
  if (config.ptxas_verbose) o.push_back("--ptxas-options=-v");
  // Part of the cache key (kernel_cache.cpp): cubins built with other ptxas options are not reused.
  for (const std::string& w : config.ptxas_options) o.push_back("--ptxas-options=" + w);
  if (config.jit_debug) o.push_back("-lineinfo");
  return o;
}

// "release 13.0, V13.0.88" from `nvcc --version`, run once per path.
static std::string nvcc_version(const std::string& path) {
  static std::mutex mutex;
  static std::map<std::string, std::string> versions;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = versions.find(path);
  if (it != versions.end()) return it->second;
  std::string out;
  if (run_process({path, "--version"}, &out) != 0) out.clear();
  const size_t at = out.find("release ");
  std::string version = at == std::string::npos ? "unknown" : out.substr(at, out.find('\n', at) - at);
  return versions.emplace(path, version).first->second;
}

std::string compiler_signature(const Config& config) {
  if (config.compiler == DG_COMPILER_NVCC) return "nvcc " + nvcc_version(config.nvcc_path) + " at " + config.nvcc_path;
  const auto [major, minor] = nvrtc_version();
  return "NVRTC " + std::to_string(major) + "." + std::to_string(minor);
}

dg_status compile(const KernelSpec& spec, const std::string& arch, const Config& config, CompileResult* result) {
  const auto t0 = std::chrono::steady_clock::now();
  DG_TRY(render(spec, &result->source));
  DG_TRY(config.compiler == DG_COMPILER_NVCC ? compile_nvcc(spec, arch, config, result)
                                             : compile_nvrtc(spec, arch, config, result));
  result->seconds = seconds_since(t0);
  if (config.ptxas_verbose && !result->log.empty()) log::warn("{} ({}):\n{}", spec.kernel_name, arch, result->log);
  return DG_SUCCESS;
}

}  // namespace dg::jit
