#include "jit/kernel_cache.h"

#include <algorithm>
#include <chrono>
#include <map>

#include "jit/compiler.h"
#include "jit/disk_cache.h"
#include "jit/source_bundle.h"
#include "runtime/device.h"
#include "runtime/driver.h"
#include "runtime/log.h"
#include "runtime/status.h"

namespace dg::jit {
namespace {

// One DiskCache per root, so an unusable directory is reported once, not once per kernel.
const DiskCache& disk_cache_for(const std::string& root) {
  static std::mutex mutex;
  static std::map<std::string, std::unique_ptr<DiskCache>> caches;
  std::lock_guard<std::mutex> lock(mutex);
  auto& slot = caches[root];
  if (!slot) slot = std::make_unique<DiskCache>(root);
  return *slot;
}

// "kernels/sm90_gemm.cu.j2" -> "sm90_gemm"
std::string family_of(const std::string& template_name) {
  std::string f = template_name.substr(template_name.rfind('/') + 1);
  return f.substr(0, f.find('.'));
}

std::string cache_key_text(const KernelSpec& spec, const std::string& arch, const Config& config) {
  std::string options;
  for (const std::string& o : compiler_options(arch, config)) options += o + ' ';
  return fmt::format("libdg {}|bundle {:016x}|{}|{}|{}|{}|{}|{}", dg_version(), source_bundle().hash,
                     compiler_signature(config), arch, options, spec.template_name, spec.kernel_name,
                     spec.context.canonical());
}

}  // namespace

Stats& stats() {
  static Stats s;
  return s;
}

KernelCache& kernel_cache(Device& device) {
  std::call_once(device.kernels_once, [&] { device.kernels = std::make_unique<KernelCache>(device); });
  return static_cast<KernelCache&>(*device.kernels);
}

dg_status get_kernel(const dg_stream_s& stream, const KernelKey& key, const SpecBuilder& build, const Kernel** kernel) {
  return kernel_cache(*stream.device).get(key, build, config_of(stream), kernel);
}

KernelCache::KernelCache(Device& device) : device_(device) {}
KernelCache::~KernelCache() = default;

dg_status KernelCache::get(const KernelKey& key, const SpecBuilder& builder, const Config& config,
                           const Kernel** kernel) {
  bool hit = false;
  const dg_status status =
      kernels_.get(key, [&](Kernel* k) { return build(builder, config, k); }, kernel, &hit);
  if (hit && status == DG_SUCCESS) stats().memory_hits.fetch_add(1, std::memory_order_relaxed);
  return status;
}

dg_status KernelCache::build(const SpecBuilder& builder, const Config& config, Kernel* out) {
  if (device_.arch.empty())
    return fail(DG_ERROR_UNSUPPORTED, "device {} ({}) has compute capability {}.{}; libdg kernels need sm_90 or sm_100",
                device_.ordinal, device_.name, device_.cc_major, device_.cc_minor);
  DG_TRY(check_source_bundle());
  KernelSpec spec;
  DG_TRY(builder(&spec));
  const auto t0 = std::chrono::steady_clock::now();
  const std::string family = family_of(spec.template_name);
  const Digest digest_key = digest(cache_key_text(spec, device_.arch, config));
  const DiskCache& disk = disk_cache_for(config.cache_dir);

  std::vector<char> cubin;
  bool from_disk = disk.load(family, digest_key, &cubin);
  if (!from_disk) {
    CompileResult compiled;
    DG_TRY(compile(spec, device_.arch, config, &compiled));
    cubin = std::move(compiled.cubin);
    disk.store(family, digest_key, cubin);
    if (config.dump_source) disk.store_side_file(family, digest_key, "cu", compiled.source);
    if (config.dump_ptx && !compiled.ptx.empty()) disk.store_side_file(family, digest_key, "ptx", compiled.ptx);
    stats().compiled.fetch_add(1, std::memory_order_relaxed);
    log::debug("JIT: compiled {} ({}) in {:.3f} s -> {}", spec.kernel_name, family, compiled.seconds,
               disk.enabled() ? disk.path_for(family, digest_key) : std::string("memory only"));
  } else {
    stats().loaded_from_disk.fetch_add(1, std::memory_order_relaxed);
  }

  out->name = spec.kernel_name;
  if (device_.offline) return DG_SUCCESS;  // compiled into the disk cache; nothing to load

  ContextScope scope;
  DG_TRY(scope.enter(device_));
  const driver::Api& cu = driver::api();
  CUresult r = cu.cuModuleLoadData(&out->module, cubin.data());
  if (r != CUDA_SUCCESS) return driver::check(r, "cuModuleLoadData");
  r = cu.cuModuleGetFunction(&out->function, out->module, spec.kernel_name.c_str());
  if (r != CUDA_SUCCESS) {
    cu.cuModuleUnload(out->module);
    out->module = nullptr;
    driver::check(r, "cuModuleGetFunction");
    return fail(DG_ERROR_INTERNAL, "template {} defines no kernel named {}: {}", spec.template_name, spec.kernel_name,
                last_error());
  }
  // Without an opt-in, static plus dynamic shared memory must stay within 48 KiB.
  int static_smem = 0;
  if (cu.cuFuncGetAttribute(&static_smem, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, out->function) == CUDA_SUCCESS)
    out->smem_allowed.store(static_cast<unsigned>(std::max(0, 48 * 1024 - static_smem)), std::memory_order_relaxed);
  log::debug("JIT: {} ready in {:.3f} s ({}, key {})", spec.kernel_name,
             std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(),
             from_disk ? "disk cache" : "compiled", digest_key.hex());
  return DG_SUCCESS;
}

}  // namespace dg::jit
