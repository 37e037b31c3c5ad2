// dg-bench: times libdg's kernels beside cuBLASLt in one process. See bench/README.md.
#include <cstdio>
#include <ctime>
#include <fstream>
#include <map>
#include <stdexcept>

#include "bench.h"
#include "peers.h"

namespace dgb {
namespace {

Device query_device(int ordinal) {
  Device d;
  d.ordinal = ordinal;
  DGB_CUDA(cudaSetDevice(ordinal));
  cudaDeviceProp p{};
  DGB_CUDA(cudaGetDeviceProperties(&p, ordinal));
  d.name = p.name;
  d.cc_major = p.major, d.cc_minor = p.minor;
  d.sm_count = p.multiProcessorCount;
  d.l2_bytes = p.l2CacheSize;
  d.total_mem = static_cast<int64_t>(p.totalGlobalMem);
  int v = 0;
  if (cudaDeviceGetAttribute(&v, cudaDevAttrClockRate, ordinal) == cudaSuccess) d.max_clock_mhz = v / 1000.0;
  if (cudaDeviceGetAttribute(&v, cudaDevAttrMemoryClockRate, ordinal) == cudaSuccess) d.mem_clock_mhz = v / 1000.0;
  if (cudaDeviceGetAttribute(&v, cudaDevAttrGlobalMemoryBusWidth, ordinal) == cudaSuccess) d.bus_bits = v;
  char bus[32] = {};
  if (cudaDeviceGetPCIBusId(bus, sizeof(bus), ordinal) == cudaSuccess) d.pci_bus_id = bus;
  const double clock = datasheet_clock_mhz(d.cc_major);
  d.peak_bf16 = peak_tflops(d.cc_major, d.sm_count, clock, false);
  d.peak_fp8 = peak_tflops(d.cc_major, d.sm_count, clock, true);

  Json& j = d.info;
  j = Json::object();
  j["name"] = d.name;
  j["ordinal"] = ordinal;
  j["pci_bus_id"] = d.pci_bus_id;
  j["compute_capability"] = std::to_string(d.cc_major) + "." + std::to_string(d.cc_minor);
  j["sm_count"] = d.sm_count;
  j["l2_bytes"] = d.l2_bytes;
  j["memory_bytes"] = d.total_mem;
  j["max_sm_clock_mhz"] = d.max_clock_mhz;
  j["memory_clock_mhz"] = d.mem_clock_mhz;
  j["memory_bus_bits"] = d.bus_bits;
  // DDR: two transfers per memory clock.
  j["memory_bandwidth_gbps_theoretical"] = 2.0 * d.mem_clock_mhz * 1e6 * d.bus_bits / 8 / 1e9;
  j["peak_tflops_bf16"] = d.peak_bf16;
  j["peak_tflops_fp8"] = d.peak_fp8;
  j["peak_clock_mhz_assumed"] = clock;
  j["peak_tflops_bf16_at_max_clock"] = peak_tflops(d.cc_major, d.sm_count, d.max_clock_mhz, false);
  int drv = 0, rt = 0;
  cudaDriverGetVersion(&drv);
  cudaRuntimeGetVersion(&rt);
  j["cuda_driver_api_version"] = drv;
  j["cuda_runtime_version"] = rt;
  Json nv = nvml_info(d.pci_bus_id);
  if (nv.size() > 0) j["nvml"] = nv;
  return d;
}

std::string timestamp() {
  char buf[32];
  const std::time_t t = std::time(nullptr);
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

std::vector<Shape> shapes_for(const std::string& suite, const Options& o) {
  if (!o.shapes.empty()) return o.shapes;
  if (suite == "copy") return copy_shapes();
  if (suite == "layout") return layout_shapes();
  if (suite == "quant") return quant_shapes();
  if (suite == "hc-prenorm") return hc_prenorm_shapes();
  if (suite == "nvfp4-gemv") return nvfp4_gemv_shapes();
  if (suite == "contiguous-fp8" || suite == "contiguous-bf16") return contiguous_shapes();
  if (suite == "masked-fp8" || suite == "masked-bf16") return masked_shapes();
  return dense_shapes();
}

// Geometric mean, per suite and peer, of t_peer / t_libdg over the cases where both were timed and
// libdg's check passed (> 1: libdg faster).
Json summarize_cases(const std::vector<Case>& cases) {
  std::map<std::string, std::map<std::string, std::vector<double>>> ratios;
  std::map<std::string, std::map<std::string, std::vector<double>>> tflops;
  for (const Case& c : cases) {
    if (c.results.empty()) continue;
    const Result& base = c.results[0];
    for (const Result& r : c.results) {
      if (r.status == "ok" && r.flops > 0) tflops[c.suite][r.name].push_back(r.tflops());
      if (&r == &base || base.name != "libdg" || base.status != "ok" || !r.timed()) continue;
      ratios[c.suite][r.name].push_back(r.us.median / base.us.median);
    }
  }
  Json out = Json::object();
  for (auto& [suite, peers] : ratios) {
    for (auto& [peer, v] : peers) {
      Json e = Json::object();
      e["geomean_time_ratio_to_libdg"] = geomean(v);
      e["cases"] = static_cast<int64_t>(v.size());
      out[suite]["vs " + peer] = e;
    }
  }
  for (auto& [suite, who] : tflops)
    for (auto& [name, v] : who) out[suite]["geomean_tflops " + name] = geomean(v);
  return out;
}

void write_csv(const std::string& path, const std::vector<Case>& cases) {
  std::ofstream f(path);
  if (!f) throw std::runtime_error("cannot write " + path);
  f << "suite,label,m,n,k,g,contender,status,median_us,p10_us,p90_us,tflops,gbps,pct_peak,time_ratio_to_libdg,"
       "diff,first_call_ms,jit_compiled,host_us_per_call,config,message\n";
  for (const Case& c : cases) {
    const Json j = case_json(c);
    const Json& rs = *j.find("results");
    for (size_t i = 0; i < rs.size(); ++i) {
      const Json& r = rs.at(i);
      auto num = [&](const Json& x) { return x.type() == Json::Type::Number ? json_number(x.number()) : std::string(); };
      auto str = [&](const char* key) {
        const Json* x = r.find(key);
        return x ? csv_field(x->string()) : std::string();
      };
      const Json& t = *r.find("time_us");
      f << c.suite << ',' << csv_field(c.label) << ',' << c.shape.m << ',' << c.shape.n << ',' << c.shape.k << ','
        << c.shape.g << ',' << str("contender") << ',' << str("status") << ',' << num(*t.find("median")) << ','
        << num(*t.find("p10")) << ',' << num(*t.find("p90")) << ',' << num(*r.find("tflops")) << ','
        << num(*r.find("gbps")) << ',' << num(*r.find("pct_peak")) << ',' << num(*r.find("time_ratio_to_libdg"))
        << ',' << num(*r.find("diff")) << ',' << num(*r.find("first_call_ms")) << ','
        << num(*r.find("jit_compiled")) << ',' << num(*r.find("host_us_per_call")) << ',' << str("config") << ','
        << str("message") << '\n';
    }
  }
}

int run(int argc, char** argv) {
  Options opts;
  std::string error;
  if (!parse_args(argc, argv, &opts, &error)) {
    std::fprintf(stderr, "dg-bench: %s\n%s", error.c_str(), usage());
    return 2;
  }
  if (opts.help) {
    std::printf("%s", usage());
    return 0;
  }
  if (opts.version) {
    std::printf("dg-bench (libdg) %s\n", dg_version());
    return 0;
  }
  std::vector<std::string> suites = opts.suites.empty() ? known_suites() : opts.suites;
  if (opts.list) {
    for (const auto& s : suites) {
      std::printf("%s:\n", s.c_str());
      for (const auto& sh : shapes_for(s, opts)) std::printf("  %s\n", to_string(sh).c_str());
    }
    return 0;
  }

  // Without a driver the CUDA runtime says "CUDA driver version is insufficient", which is not what
  // happened: ask libdg, whose loader says whether and why the driver is missing.
  int32_t devices = 0;
  const dg_status found = dg_device_count(&devices);
  if (found != DG_SUCCESS || devices == 0) {
    std::fprintf(stderr, "dg-bench: no GPU to run on: %s\n",
                 found != DG_SUCCESS ? dg_last_error() : "the CUDA driver found no device");
    return 1;
  }
  Context ctx;
  ctx.opts = opts;
  ctx.dev = query_device(opts.device);
  install_log_capture();
  DGB_CUDA(cudaStreamCreateWithFlags(&ctx.cu_stream, cudaStreamNonBlocking));
  dg_config* cfg = nullptr;
  dg_status st = dg_config_create(&cfg);
  if (st == DG_SUCCESS) st = dg_config_set_int(cfg, DG_CONFIG_PRINT_CONFIGS, 1);
  if (st == DG_SUCCESS) st = dg_stream_create(&ctx.stream, opts.device, ctx.cu_stream, DG_STREAM_BORROW, cfg);
  dg_config_destroy(cfg);
  if (st != DG_SUCCESS) throw std::runtime_error("creating the dg_stream: " + dg_error(st));
  ctx.flush = Buffer(static_cast<size_t>(std::max<int64_t>(4 * ctx.dev.l2_bytes, int64_t(64) << 20)));
  ctx.workspace = Buffer(dg_cublaslt_workspace_size());

  std::fprintf(stderr, "[dg-bench] %s, %d SMs, L2 %lld MiB, peaks BF16 %.0f / FP8 %.0f TFLOPS; libdg %s\n",
               ctx.dev.name.c_str(), ctx.dev.sm_count, static_cast<long long>(ctx.dev.l2_bytes >> 20),
               ctx.dev.peak_bf16, ctx.dev.peak_fp8, dg_version());
  print_header();
  std::vector<Case> cases;
  for (const auto& s : suites) {
    const auto shapes = shapes_for(s, opts);
    if (s == "copy") suite_copy(ctx, shapes, cases);
    else if (s == "layout") suite_layout(ctx, shapes, cases);
    else if (s == "dense-bf16") suite_dense(ctx, false, shapes, cases);
    else if (s == "dense-fp8") suite_dense(ctx, true, shapes, cases);
    else if (s == "nvfp4-gemv") suite_nvfp4_gemv(ctx, shapes, cases);
    else if (s == "contiguous-fp8") suite_m_grouped(ctx, false, true, shapes, cases);
    else if (s == "contiguous-bf16") suite_m_grouped(ctx, false, false, shapes, cases);
    else if (s == "masked-fp8") suite_m_grouped(ctx, true, true, shapes, cases);
    else if (s == "masked-bf16") suite_m_grouped(ctx, true, false, shapes, cases);
    else if (s == "quant") suite_quant(ctx, shapes, cases);
    else if (s == "hc-prenorm") suite_hc_prenorm(ctx, shapes, cases);
  }

  const Json summary = summarize_cases(cases);
  std::printf("\nsummary (geometric means; time ratio = t_peer / t_libdg, > 1 means libdg is faster):\n%s\n",
              summary.dump(2).c_str());

  if (!opts.json_path.empty()) {
    Json root = Json::object();
    root["tool"] = "dg-bench";
    root["schema_version"] = 1;
    root["timestamp"] = timestamp();
    root["libdg_version"] = dg_version();
    root["device"] = ctx.dev.info;
    BlockScaledFp8 lt;
    std::string why;
    root["cublaslt_version"] = lt.load(&why) ? lt.version() : "unavailable: " + why;
    Json o = Json::object();
    o["reps"] = opts.reps, o["warmup"] = opts.warmup, o["host_calls"] = opts.host_calls;
    o["seed"] = static_cast<int64_t>(opts.seed), o["peers"] = opts.peers;
    o["l2_flush_bytes"] = static_cast<int64_t>(ctx.flush.bytes);
    o["cublaslt_workspace_bytes"] = static_cast<int64_t>(ctx.workspace.bytes);
    root["options"] = o;
    Json arr = Json::array();
    for (const Case& c : cases) arr.push(case_json(c));
    root["cases"] = arr;
    root["summary"] = summary;
    std::ofstream f(opts.json_path);
    if (!f) throw std::runtime_error("cannot write " + opts.json_path);
    f << root.dump(1) << '\n';
  }
  if (!opts.csv_path.empty()) write_csv(opts.csv_path, cases);

  dg_stream_destroy(ctx.stream);
  for (auto e : ctx.ev_start) cudaEventDestroy(e);
  for (auto e : ctx.ev_stop) cudaEventDestroy(e);
  cudaStreamDestroy(ctx.cu_stream);
  // Exit status: 1 when any correctness check failed, so a run script notices.
  for (const Case& c : cases)
    for (const Result& r : c.results)
      if (r.status == "check_failed") return 1;
  return 0;
}

}  // namespace
}  // namespace dgb

int main(int argc, char** argv) {
  try {
    return dgb::run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dg-bench: %s\n", e.what());
    return 3;
  }
}
