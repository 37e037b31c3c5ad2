// dg-bench measurement procedure and report formatting.
#include <chrono>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <stdexcept>

#include "bench.h"
#include "gpu.h"

namespace dgb {

Buffer::Buffer(size_t n) : bytes(n) {
  if (n == 0) return;
  const cudaError_t e = cudaMalloc(&ptr, n);
  if (e != cudaSuccess) {
    ptr = nullptr;
    throw std::runtime_error("cudaMalloc(" + std::to_string(n) + " bytes): " + cudaGetErrorString(e));
  }
}
Buffer& Buffer::operator=(Buffer&& o) noexcept {
  if (this != &o) {
    if (ptr) cudaFree(ptr);
    ptr = o.ptr, bytes = o.bytes;
    o.ptr = nullptr, o.bytes = 0;
  }
  return *this;
}
Buffer::~Buffer() {
  if (ptr) cudaFree(ptr);
}

void cuda_check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}
void gpu_check(int e, const char* what) { cuda_check(static_cast<cudaError_t>(e), what); }

std::string dg_error(dg_status s) {
  if (s == DG_SUCCESS) return "";
  return std::string(dg_status_string(s)) + ": " + dg_last_error();
}

Tensor make_tensor(void* data, dg_dtype dtype, std::vector<int64_t> sizes, std::vector<int64_t> strides) {
  dg_tensor* t = nullptr;
  const dg_status s = dg_tensor_create(&t, data, dtype, static_cast<int32_t>(sizes.size()), sizes.data(),
                                       strides.empty() ? nullptr : strides.data());
  if (s != DG_SUCCESS) throw std::runtime_error("dg_tensor_create: " + dg_error(s));
  return Tensor(t);
}

// ---- libdg log capture: the DG_PRINT_CONFIGS line of a first call -----------------------------

namespace {
std::mutex g_log_mutex;
bool g_capturing = false;
std::string g_captured;

void log_sink(int32_t level, const char* message, void*) {
  std::lock_guard<std::mutex> lock(g_log_mutex);
  if (g_capturing && std::strstr(message, "DG_PRINT_CONFIGS") != nullptr) {
    if (!g_captured.empty()) g_captured += " | ";
    g_captured += message;
    return;
  }
  if (level >= DG_LOG_WARN) std::fprintf(stderr, "[libdg] %s\n", message);
}

double now_us() {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Drops the lines of [base, base + 128 * lines) from L2 without writing them back (discard.global.L2).
// PTX loaded at run time, so the flush stays in this file.
const char kDiscardPtx[] = R"(.version 7.4
.target sm_80
.address_size 64
.visible .entry dgb_l2_discard(.param .u64 base, .param .u64 lines)
{
  .reg .pred %p;
  .reg .b32 %r<5>;
  .reg .b64 %rd<8>;
  ld.param.u64 %rd1, [base];
  cvta.to.global.u64 %rd1, %rd1;
  ld.param.u64 %rd2, [lines];
  mov.u32 %r1, %ctaid.x;
  mov.u32 %r2, %ntid.x;
  mov.u32 %r3, %tid.x;
  mov.u32 %r4, %nctaid.x;
  mul.wide.u32 %rd3, %r1, %r2;
  cvt.u64.u32 %rd4, %r3;
  add.u64 %rd3, %rd3, %rd4;
  mul.wide.u32 %rd5, %r4, %r2;
LOOP:
  setp.ge.u64 %p, %rd3, %rd2;
  @%p bra DONE;
  mad.lo.u64 %rd6, %rd3, 128, %rd1;
  discard.global.L2 [%rd6], 128;
  add.u64 %rd3, %rd3, %rd5;
  bra LOOP;
DONE:
  ret;
}
)";

// The L2 flush before each timed repetition: memset the flush buffer (4x L2: every earlier line,
// inputs and outputs included, is evicted), then discard its lines, so L2 ends cold AND clean. A
// memset alone leaves L2 full of dirty lines whose write-back the timed kernel would pay for
// (up to one L2 of writes: 50 MB on an H100, more than a 33 MB GEMV reads). A read pass instead of
// the discard does not work: L2 keeps lines that every repetition re-reads (seen on an H100).
void flush_l2(Context& ctx, int rep) {
  static cudaKernel_t discard = [] {
    cudaLibrary_t lib = nullptr;
    cudaKernel_t k = nullptr;
    DGB_CUDA(cudaLibraryLoadData(&lib, kDiscardPtx, nullptr, nullptr, 0, nullptr, nullptr, 0));
    DGB_CUDA(cudaLibraryGetKernel(&k, lib, "dgb_l2_discard"));
    return k;
  }();
  DGB_CUDA(cudaMemsetAsync(ctx.flush.ptr, rep & 0xff, ctx.flush.bytes, ctx.cu_stream));
  void* base = ctx.flush.ptr;
  unsigned long long lines = ctx.flush.bytes / 128;
  void* args[] = {&base, &lines};
  DGB_CUDA(cudaLaunchKernel(reinterpret_cast<const void*>(discard), dim3(4 * ctx.dev.sm_count), dim3(256), args, 0,
                            ctx.cu_stream));
}
}  // namespace

void install_log_capture() { dg_set_log_callback(log_sink, nullptr); }

bool first_call(Context& ctx, const Call& call, Result* r) {
  int64_t c0 = 0, l0 = 0, h0 = 0, c1 = 0, l1 = 0, h1 = 0;
  dg_jit_get_stats(&c0, &l0, &h0);
  {
    std::lock_guard<std::mutex> lock(g_log_mutex);
    g_capturing = true;
    g_captured.clear();
  }
  DGB_CUDA(cudaStreamSynchronize(ctx.cu_stream));
  const double t0 = now_us();
  std::string err;
  try {
    err = call(0);
  } catch (const std::exception& e) {
    err = e.what();
  }
  const cudaError_t sync = cudaStreamSynchronize(ctx.cu_stream);
  const double t1 = now_us();
  {
    std::lock_guard<std::mutex> lock(g_log_mutex);
    g_capturing = false;
    r->config = g_captured;
  }
  dg_jit_get_stats(&c1, &l1, &h1);
  r->jit_compiled = c1 - c0;
  r->jit_loaded = l1 - l0;
  if (err.empty() && sync != cudaSuccess) err = std::string("after the call: ") + cudaGetErrorString(sync);
  if (!err.empty()) {
    r->status = err.rfind("DG_ERROR_UNSUPPORTED", 0) == 0 ? "unsupported" : "error";
    r->message = err;
    return false;
  }
  r->first_call_ms = (t1 - t0) / 1000.0;
  return true;
}

void measure(Context& ctx, std::vector<Timed>& contenders) {
  const int reps = ctx.opts.reps, n = static_cast<int>(contenders.size());
  if (n == 0) return;
  const size_t events = static_cast<size_t>(reps) * n;
  for (size_t i = ctx.ev_start.size(); i < events; ++i) {
    cudaEvent_t a, b;
    DGB_CUDA(cudaEventCreate(&a));
    DGB_CUDA(cudaEventCreate(&b));
    ctx.ev_start.push_back(a);
    ctx.ev_stop.push_back(b);
  }
  std::vector<bool> live(n, true);
  auto fail = [&](int j, const std::exception& e) {
    live[j] = false;
    contenders[j].out.status = "error";
    contenders[j].out.message = e.what();
  };
  auto must = [&](int j, int set) {
    const std::string e = contenders[j].call(set);
    if (!e.empty()) throw std::runtime_error(e);
  };
  for (int j = 0; j < n; ++j) try {
      for (int i = 0; i < ctx.opts.warmup; ++i) must(j, i % contenders[j].nsets);
    } catch (const std::exception& e) {
      fail(j, e);
    }
  DGB_CUDA(cudaStreamSynchronize(ctx.cu_stream));

  for (int i = 0; i < reps; ++i)
    for (int q = 0; q < n; ++q) {
      const int j = (i + q) % n;
      if (!live[j]) continue;
      try {
        flush_l2(ctx, i * n + q);
        DGB_CUDA(cudaEventRecord(ctx.ev_start[i * n + j], ctx.cu_stream));
        must(j, i % contenders[j].nsets);
        DGB_CUDA(cudaEventRecord(ctx.ev_stop[i * n + j], ctx.cu_stream));
      } catch (const std::exception& e) {
        fail(j, e);
      }
    }
  DGB_CUDA(cudaStreamSynchronize(ctx.cu_stream));

  for (int j = 0; j < n; ++j) {
    contenders[j].timed = true;
    if (!live[j]) continue;
    Result* r = &contenders[j].out;
    std::vector<double> us(reps);
    for (int i = 0; i < reps; ++i) {
      float ms = 0;
      DGB_CUDA(cudaEventElapsedTime(&ms, ctx.ev_start[i * n + j], ctx.ev_stop[i * n + j]));
      us[i] = ms * 1000.0;
    }
    r->us = summarize(us);

    // Host overhead: enqueue host_calls calls behind a spin kernel, so the host loop measures the
    // submission cost only. Valid when the spin kernel was still running at the end of the loop.
    try {
      cudaEvent_t spun;
      DGB_CUDA(cudaEventCreateWithFlags(&spun, cudaEventDisableTiming));
      uint64_t spin_ns = 20'000'000;
      for (int attempt = 0; attempt < 3; ++attempt, spin_ns *= 4) {
        DGB_GPU(gpu::spin(spin_ns, ctx.cu_stream));
        DGB_CUDA(cudaEventRecord(spun, ctx.cu_stream));
        const double t0 = now_us();
        for (int i = 0; i < ctx.opts.host_calls; ++i) must(j, i % contenders[j].nsets);
        const double t1 = now_us();
        const bool busy = cudaEventQuery(spun) == cudaErrorNotReady;
        DGB_CUDA(cudaStreamSynchronize(ctx.cu_stream));
        r->host_us = (t1 - t0) / ctx.opts.host_calls;
        r->host_valid = busy;
        if (busy) break;
      }
      cudaEventDestroy(spun);
    } catch (const std::exception& e) {
      fail(j, e);
      continue;
    }
    r->status = "ok";
  }
}

double device_diff(Context& ctx, const std::vector<DiffBlock>& blocks, int xt, int64_t ldx, int yt, int64_t ldy,
                   int64_t cols, int64_t* nonfinite) {
  Buffer sums(4 * sizeof(double));
  DGB_CUDA(cudaMemsetAsync(sums.ptr, 0, sums.bytes, ctx.cu_stream));
  for (const DiffBlock& b : blocks)
    DGB_GPU(gpu::diff_sums(b.x, static_cast<gpu::DType>(xt), ldx, b.y, static_cast<gpu::DType>(yt), ldy, b.rows, cols,
                           sums.as<double>(), ctx.cu_stream));
  double h[4] = {};
  DGB_CUDA(cudaMemcpyAsync(h, sums.ptr, sizeof(h), cudaMemcpyDeviceToHost, ctx.cu_stream));
  DGB_CUDA(cudaStreamSynchronize(ctx.cu_stream));
  *nonfinite = static_cast<int64_t>(h[3]);
  DiffSums s;
  s.xy = h[0], s.xx = h[1], s.yy = h[2];
  return calc_diff(s);
}

double device_diff(Context& ctx, const void* x, int xt, int64_t ldx, const void* y, int yt, int64_t ldy, int64_t rows,
                   int64_t cols, int64_t* nonfinite) {
  return device_diff(ctx, {DiffBlock{x, y, rows}}, xt, ldx, yt, ldy, cols, nonfinite);
}

int64_t device_count_nonzero_bf16(Context& ctx, const std::vector<RowBlock>& blocks, int64_t ld, int64_t cols,
                                  bool poison_ok) {
  Buffer count(sizeof(unsigned long long));
  DGB_CUDA(cudaMemsetAsync(count.ptr, 0, count.bytes, ctx.cu_stream));
  for (const RowBlock& b : blocks)
    DGB_GPU(gpu::count_nonzero_bf16(b.x, ld, b.rows, cols, poison_ok, count.as<unsigned long long>(), ctx.cu_stream));
  unsigned long long h = 0;
  DGB_CUDA(cudaMemcpyAsync(&h, count.ptr, sizeof(h), cudaMemcpyDeviceToHost, ctx.cu_stream));
  DGB_CUDA(cudaStreamSynchronize(ctx.cu_stream));
  return static_cast<int64_t>(h);
}

void record_check(Result* r, double diff, int64_t nonfinite, double threshold, const std::string& reference) {
  r->diff = diff;
  r->threshold = threshold;
  r->reference = reference;
  if (nonfinite > 0 || !(diff < threshold)) {
    r->status = "check_failed";
    r->message = nonfinite > 0 ? std::to_string(nonfinite) + " non-finite (unwritten or overflowed) outputs"
                               : "calc_diff " + json_number(diff) + " >= " + json_number(threshold);
  }
}

// ---- output ------------------------------------------------------------------------------------

void progress(const std::string& suite, size_t index, size_t total, const std::string& label) {
  std::fprintf(stderr, "[dg-bench] %s %zu/%zu %s\n", suite.c_str(), index + 1, total, label.c_str());
  std::fflush(stderr);
}

namespace {
std::string fmt(const char* f, double x) {
  if (!std::isfinite(x)) return "-";
  char buf[64];
  std::snprintf(buf, sizeof(buf), f, x);
  return buf;
}
}  // namespace

void print_case(const Case& c) {
  const Result* base = c.results.empty() ? nullptr : &c.results[0];
  for (const Result& r : c.results) {
    std::string ratio = "-";
    if (base && &r != base && base->timed() && r.timed()) ratio = fmt("%.2fx", r.us.median / base->us.median);
    std::printf("%-15s %-30s %-24s %10s %6s %8s %8s %6s %7s %9s %8s %s\n", c.suite.c_str(), c.label.c_str(),
                r.name.c_str(), fmt("%.1f", r.timed() ? r.us.median : NAN).c_str(),
                fmt("%.1f%%", r.timed() ? 100 * r.us.spread() : NAN).c_str(),
                fmt("%.1f", r.flops > 0 ? r.tflops() : NAN).c_str(), fmt("%.0f", r.gbps()).c_str(),
                fmt("%.1f%%", r.flops > 0 && r.peak_tflops > 0 ? 100 * r.tflops() / r.peak_tflops : NAN).c_str(),
                ratio.c_str(), fmt("%.2e", r.diff).c_str(), fmt("%.1f", r.host_valid ? r.host_us : NAN).c_str(),
                (r.status == "ok" ? std::string("") : r.status + (r.message.empty() ? "" : ": " + r.message)).c_str());
  }
  std::fflush(stdout);
}

void print_header() {
  std::printf("%-15s %-30s %-24s %10s %6s %8s %8s %6s %7s %9s %8s %s\n", "suite", "shape", "contender", "us(med)",
              "spread", "TFLOPS", "GB/s", "%peak", "t/t_dg", "diff", "host_us", "status");
}

Json case_json(const Case& c) {
  Json j = Json::object();
  j["suite"] = c.suite;
  j["label"] = c.label;
  Json shape = Json::object();
  shape["m"] = c.shape.m, shape["n"] = c.shape.n, shape["k"] = c.shape.k, shape["g"] = c.shape.g;
  j["shape"] = shape;
  if (!c.note.empty()) j["note"] = c.note;
  Json results = Json::array();
  const Result* base = c.results.empty() ? nullptr : &c.results[0];
  for (const Result& r : c.results) {
    Json x = Json::object();
    x["contender"] = r.name;
    x["status"] = r.status;
    if (!r.message.empty()) x["message"] = r.message;
    x["diff"] = r.diff;
    x["diff_threshold"] = r.threshold;
    if (!r.reference.empty()) x["reference"] = r.reference;
    Json t = Json::object();
    t["median"] = r.us.median, t["p10"] = r.us.p10, t["p90"] = r.us.p90, t["min"] = r.us.min;
    t["max"] = r.us.max, t["mean"] = r.us.mean, t["stddev"] = r.us.stddev, t["count"] = r.us.count;
    x["time_us"] = t;
    x["flops"] = r.flops;
    x["bytes"] = r.bytes;
    x["tflops"] = r.flops > 0 ? r.tflops() : NAN;
    x["gbps"] = r.gbps();
    x["peak_tflops"] = r.peak_tflops;
    x["pct_peak"] = r.flops > 0 && r.peak_tflops > 0 ? 100 * r.tflops() / r.peak_tflops : NAN;
    x["first_call_ms"] = r.first_call_ms;
    x["jit_compiled"] = r.jit_compiled;
    x["jit_loaded_from_disk"] = r.jit_loaded;
    x["host_us_per_call"] = r.host_us;
    x["host_measurement_valid"] = r.host_valid;
    if (!r.config.empty()) x["config"] = r.config;
    // time of this contender over libdg's: > 1 means libdg is faster.
    x["time_ratio_to_libdg"] = base && &r != base && base->timed() && r.timed() ? r.us.median / base->us.median : NAN;
    results.push(x);
  }
  j["results"] = results;
  return j;
}

}  // namespace dgb
