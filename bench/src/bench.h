// dg-bench internals shared by main.cpp and the suite files: the run context, device buffers,
// tensor descriptors, the measurement procedure and the per-case report.
#pragma once
#include <cuda_runtime.h>
#include <dlfcn.h>

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "cli.h"
#include "dg.h"
#include "json.h"
#include "numerics.h"
#include "stats.h"

namespace dgb {

struct Device {
  int ordinal = 0;
  std::string name, pci_bus_id;
  int cc_major = 0, cc_minor = 0, sm_count = 0;
  int64_t l2_bytes = 0, total_mem = 0;
  double max_clock_mhz = 0, mem_clock_mhz = 0;
  int bus_bits = 0;
  double peak_bf16 = 0, peak_fp8 = 0;  // TFLOPS at the datasheet clock
  Json info;                           // everything above plus driver/runtime/NVML, for the JSON
};

// Owning device allocation.
struct Buffer {
  void* ptr = nullptr;
  size_t bytes = 0;
  Buffer() = default;
  explicit Buffer(size_t n);  // throws std::runtime_error on failure
  Buffer(Buffer&& o) noexcept : ptr(o.ptr), bytes(o.bytes) { o.ptr = nullptr, o.bytes = 0; }
  Buffer& operator=(Buffer&& o) noexcept;
  Buffer(const Buffer&) = delete;
  ~Buffer();
  template <typename T> T* as() const { return static_cast<T*>(ptr); }
};

struct TensorDeleter {
  void operator()(dg_tensor* t) const { dg_tensor_destroy(t); }
};
using Tensor = std::unique_ptr<dg_tensor, TensorDeleter>;
// Throws std::runtime_error with dg_last_error() on failure. strides empty = contiguous.
Tensor make_tensor(void* data, dg_dtype dtype, std::vector<int64_t> sizes, std::vector<int64_t> strides = {});

// Throws std::runtime_error naming the call when a CUDA runtime call fails.
void cuda_check(cudaError_t e, const char* what);
void gpu_check(int e, const char* what);
#define DGB_CUDA(call) ::dgb::cuda_check((call), #call)
#define DGB_GPU(call) ::dgb::gpu_check((call), #call)

// "" for DG_SUCCESS, else "DG_ERROR_X: message".
std::string dg_error(dg_status s);

struct Context {
  Options opts;
  Device dev;
  cudaStream_t cu_stream = nullptr;
  dg_stream* stream = nullptr;
  Buffer flush;            // >= 2x L2, written before every timed repetition
  Buffer workspace;        // cuBLASLt workspace (dg_cublaslt_workspace_size bytes)
  std::vector<cudaEvent_t> ev_start, ev_stop;
  std::vector<struct Timed> pending;  // the current case's checked contenders, timed together at its end
  uint64_t seed_counter = 0;
  uint64_t next_seed() { return opts.seed * 1000003ull + (++seed_counter); }
};

// One contender's call: enqueue the operation for input set `set` on ctx.stream; "" on success,
// else an error text. May throw std::runtime_error.
using Call = std::function<std::string(int set)>;

// Result of one contender on one case.
struct Result {
  std::string name;
  std::string status = "absent";  // ok | absent | unsupported | error | check_failed
  std::string message;            // why absent / the error / what the check saw
  double diff = std::numeric_limits<double>::quiet_NaN();
  double threshold = std::numeric_limits<double>::quiet_NaN();
  std::string reference;          // what the check compared against
  Summary us;                     // device time per call, microseconds
  double flops = 0, bytes = 0;    // per call
  double peak_tflops = 0;         // device peak for this contender's precision
  double first_call_ms = std::numeric_limits<double>::quiet_NaN();
  int64_t jit_compiled = 0, jit_loaded = 0;  // libdg kernels compiled / read from disk by the first call
  double host_us = std::numeric_limits<double>::quiet_NaN();
  bool host_valid = false;        // the GPU stayed busy for the whole host-overhead measurement
  std::string config;             // libdg's DG_PRINT_CONFIGS line for this problem, when it logged one
  bool timed() const { return status == "ok" || status == "check_failed"; }
  double tflops() const { return timed() ? flops / (us.median * 1e-6) / 1e12 : std::numeric_limits<double>::quiet_NaN(); }
  double gbps() const { return timed() ? bytes / (us.median * 1e-6) / 1e9 : std::numeric_limits<double>::quiet_NaN(); }
};

struct Case {
  std::string suite;
  Shape shape;
  std::string label;             // e.g. "m=128 n=2112 k=7168"
  std::vector<Result> results;   // results[0] is libdg where the suite has it
  std::string note;
};

// The check run: poisons nothing itself (the caller does), calls once with host timing and a sync
// (the cold first call: JIT compile or disk load included), records first_call_ms / jit counts /
// config. Returns false (and sets status/message) when the call fails.
bool first_call(Context& ctx, const Call& call, Result* r);
// One checked contender of a case waiting to be timed; `out` receives the timing (us, host_us,
// host_valid, and status "error" with a message if a call fails), copied to the case's Result of
// the same name when the case ends.
struct Timed {
  std::string name;
  Call call;
  int nsets = 1;
  bool timed = false;
  Result out;
};

// Times a case's contenders together: each warms up, then opts.reps rounds in which every contender
// runs once (L2 flushed before each call, CUDA events around it), the order rotating by one per
// round, so that all contenders see the same clocks and temperature (the H100's clocks drift over
// a case by more than the differences being measured); then each one's host overhead per call.
// Fills each contender's `out`; one whose call fails gets status "error" and is left out of the
// remaining rounds.
void measure(Context& ctx, std::vector<Timed>& contenders);

// calc_diff of x against y ([rows, cols], row strides ldx/ldy) on the device; `nonfinite` gets the
// count of non-finite x elements.
double device_diff(Context& ctx, const void* x, int xt, int64_t ldx, const void* y, int yt, int64_t ldy, int64_t rows,
                   int64_t cols, int64_t* nonfinite);
// The same over several blocks of rows taken together (one calc_diff of their union): block i is
// `rows` rows at x and at y, both with the row strides and `cols` columns given.
struct DiffBlock {
  const void* x;
  const void* y;
  int64_t rows;
};
double device_diff(Context& ctx, const std::vector<DiffBlock>& blocks, int xt, int64_t ldx, int yt, int64_t ldy,
                   int64_t cols, int64_t* nonfinite);
// BF16 elements of the row blocks (`rows` rows at `x` each, row stride ld, `cols` columns) that are
// not zero (of either sign) nor, when poison_ok, the poison bit pattern 0xFFFF.
struct RowBlock {
  const void* x;
  int64_t rows;
};
int64_t device_count_nonzero_bf16(Context& ctx, const std::vector<RowBlock>& blocks, int64_t ld, int64_t cols,
                                  bool poison_ok);

// Records a check: diff vs threshold, non-finite elements fail it.
void record_check(Result* r, double diff, int64_t nonfinite, double threshold, const std::string& reference);

// Suites. Each appends its cases to `out` (and prints them as they finish).
void suite_copy(Context& ctx, const std::vector<Shape>& shapes, std::vector<Case>& out);
void suite_layout(Context& ctx, const std::vector<Shape>& shapes, std::vector<Case>& out);
void suite_dense(Context& ctx, bool fp8, const std::vector<Shape>& shapes, std::vector<Case>& out);
void suite_nvfp4_gemv(Context& ctx, const std::vector<Shape>& shapes, std::vector<Case>& out);
// The M-grouped GEMMs (suites contiguous-fp8/-bf16, masked-fp8/-bf16; suites_grouped.cpp).
void suite_m_grouped(Context& ctx, bool masked, bool fp8, const std::vector<Shape>& shapes, std::vector<Case>& out);
// FP8 per-token quantization against a per-group kernel and the copy rate (suite quant; suites_quant.cpp).
void suite_quant(Context& ctx, const std::vector<Shape>& shapes, std::vector<Case>& out);
std::vector<Shape> quant_shapes();
// The hyper-connection pre-norm GEMM against a plain read and the copy rate (suite hc-prenorm;
// suites_hc.cpp); g carries num_splits (1: no split).
void suite_hc_prenorm(Context& ctx, const std::vector<Shape>& shapes, std::vector<Case>& out);
std::vector<Shape> hc_prenorm_shapes();

// ---- what every suite does with a case (suites.cpp) ----------------------------------------------

// A kernel entry point looked up at run time: NULL when this libdg does not export it.
template <typename Fn>
Fn resolve(const char* name) {
  return reinterpret_cast<Fn>(dlsym(RTLD_DEFAULT, name));
}

inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
inline int64_t align_up(int64_t a, int64_t b) { return ceil_div(a, b) * b; }

Case new_case(const char* suite, const Shape& s, std::string label);
// Runs one contender on a case: poison the output, first (cold) call, check; the timing waits for
// the case's end (time_case), where all its contenders are timed together. `call` is kept until
// then: what it captures by reference must live as long as the case.
void run_contender(Context& ctx, Result& r, const Call& call, int nsets, void* poison, size_t poison_bytes,
                   const std::function<void(Result&)>& check);
// The device copy of `bytes` from src to dst as a contender, unchecked (a suite's roofline peer);
// the buffers must live until time_case.
void time_copy_contender(Context& ctx, Result& r, void* dst, const void* src, size_t bytes);
// Times the case's checked contenders together (measure); call it where everything their calls
// capture is still alive.
void time_case(Context& ctx);
// Copies the timings into the case's results (by name) and reports the case.
void finish(Context& ctx, Case& c, std::vector<Case>& out);
// Runs a case's `body` (its contenders through time_case): an entry point libdg lacks (resolve's
// std::logic_error) marks libdg's result `r` absent, any other exception an error with its
// message. Then adds `r` and the peers' results to the case and finishes it.
template <class Body>
void run_case(Context& ctx, Case& c, Result& r, std::initializer_list<Result*> peers, std::vector<Case>& out,
              Body body) {
  try {
    body();
  } catch (const std::logic_error&) {
    r.status = "absent";
  } catch (const std::exception& e) {
    r.status = "error";
    r.message = e.what();
  }
  c.results.push_back(r);
  for (Result* p : peers) c.results.push_back(*p);
  finish(ctx, c, out);
}
#ifdef DG_GEMM_OPTIONS_INIT
// A --gemm-config applied to libdg's GEMM options (fields the config leaves at 0 keep the heuristic).
void apply_gemm_config(const GemmConfigArg& g, dg_gemm_options* o);
#endif

// Output.
void install_log_capture();  // routes libdg's log through dg-bench (captures DG_PRINT_CONFIGS lines)
void print_header();
void print_case(const Case& c);
Json case_json(const Case& c);
void progress(const std::string& suite, size_t index, size_t total, const std::string& label);

}  // namespace dgb
