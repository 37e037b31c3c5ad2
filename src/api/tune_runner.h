// What dg_tune runs on the GPU (docs/tuning.md#how-dg_tune-times): device buffers large enough
// for the largest problem of a list, filled once with random non-zero values; each problem's
// operands as views of them; its candidates compiled ahead, then timed round robin with CUDA
// events after an L2 flush.
#pragma once
#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "dg.h"
#include "ops/gemm_tuning.h"
#include "runtime/tensor.h"

namespace dg::api {

// Device memory freed on destruction (with the device's context made current by the caller).
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer();
  dg_status allocate(size_t bytes, const char* what);
  void* data() const { return reinterpret_cast<void*>(ptr_); }
  CUdeviceptr ptr() const { return ptr_; }
  size_t bytes() const { return bytes_; }

 private:
  CUdeviceptr ptr_ = 0;
  size_t bytes_ = 0;
};

// Bytes of each operand a problem needs.
struct Footprint {
  size_t a = 0, b = 0, sfa = 0, sfb = 0, d = 0, d_scales = 0, groups = 0;
};

// The larger of each role of two footprints.
Footprint max_of(const Footprint& x, const Footprint& y);

// The problem's footprint; DG_ERROR_INVALID_ARGUMENT (naming its line) when a size overflows.
dg_status footprint_of(const ops::TuneProblem& p, Footprint* out);

// The buffers every problem of a list shares, and the L2 flush buffer.
struct TuneBuffers {
  DeviceBuffer a, b, sfa, sfb, d, d_scales, groups, flush;
  int a_fill = -1, b_fill = -1;  // the GemmKind whose random values a and b hold (-1: none yet)
};

// Allocates the buffers for `max` (the largest of each role) and a zeroed flush buffer of twice the
// L2 size (ops/l2_flush.h reads it), and fills the scales with random values in [0.5, 2).
dg_status allocate_buffers(const Device& device, const Footprint& max, TuneBuffers* buffers);

// Masked problems are timed on this many group tensors, their counts spread as the heuristic takes
// a group's rows to spread around the hint (ops::count_spread): each group's counts cover the
// spread in as many strata, in an order of its own, so that the groups' counts vary independently
// of each other as routed tokens do. A config's time is the mean over the samples, what the
// heuristic estimates.
constexpr int kMaskedCountSamples = 8;

// The rows of `group` in count sample `sample` (0..kMaskedCountSamples-1): the midpoint of one
// stratum of the spread, each group meeting every stratum once in a pseudo-random order of its own.
int32_t masked_sample_count(const ops::CountSpread& spread, int sample, int64_t group);

// Contiguous problems are timed on this many group tensors of A's rows (g * align(m, 128)): groups
// 2i and 2i + 1 take m + d and m - d rows, |d| up to kContiguousSpread * m in as many strata (each
// pair through every stratum once, in an order of its own; the shorter group gives up the rows its
// partner's alignment needs past their two 128-row slots), so that the groups differ as routed
// tokens do while A's rows stay those of the list's problem. Timed on equal groups, the tuner's
// pick could be one whose rounds of tiles suit exactly m rows per group (BF16 128x208 at G 4 / 8,
// N 4096 on an H200 ran 2-4% slower on groups drawn from 0.7-1.3 x m).
constexpr int kContiguousSamples = 4;
constexpr double kContiguousSpread = 0.3;

// The rows of each of `groups` groups in contiguous sample `sample` (0..kContiguousSamples-1); their
// 128-aligned sum is at most groups * align(m, 128).
std::vector<int64_t> contiguous_sample_rows(int64_t m, int64_t groups, int sample);

// The call of one problem with one kernel config. d_scales: the FP8 D's scales (fused epilogue).
// groups: the first of `samples` group tensors, `sample_bytes` apart. ks: K-grouped, every group's K.
struct TuneCall {
  const ops::TuneProblem* problem = nullptr;
  dg_tensor_s a{}, sfa{}, b{}, sfb{}, d{}, d_scales{}, groups{};  // K-grouped: no d_scales, no groups
  int samples = 1;
  size_t sample_bytes = 0;
  std::vector<int64_t> ks;
};

// Fills a and b with the problem's random non-zero operand values (when they do not hold them
// yet) and its group tensor, and describes its operands.
dg_status bind_problem(const ops::TuneProblem& p, TuneBuffers* buffers, TuneCall* call);

// The options that force `o` on the problem's entry point (its fused epilogue is added where the
// call or the prepare call is made: it points at their tensors).
dg_gemm_options options_for(const ops::TuneProblem& p, const ops::GemmOverride& o);

// Compiles and loads the kernels of every (problem, config) pair, on up to `threads` threads.
dg_status prepare_all(dg_stream* stream, const std::vector<ops::TuneProblem>& problems,
                      const std::vector<std::vector<dg_gemm_options>>& options, int threads);

// A candidate replaces the heuristic's choice only where it ran at least this much faster: closer
// winners ran about as often behind the heuristic's choice as ahead of it when re-timed beside
// DeepGEMM (H200: contiguous FP8 G 4 x 8192, N 4096, a 0.1% lead, ran 1.4% slower).
constexpr double kTunedMinLead = 0.01;
// ... and, timed over samples of group counts, by this many standard errors of its mean lead (the
// spread of its per-sample leads over the root of their number). Masked BF16 of few groups, where
// the heuristic's count-adaptive kernel and a single tile trade places from count to count by
// 5-10%: single tiles 1.5-1.9% ahead over eight samples ran 5.7% behind on the suite's draw (G 1,
// 7168 x 2048) and 4-12% behind at seven fixed counts (G 4, N 6144); with the test both keep the
// heuristic, while leads that hold on every sample (masked FP8 decoding, contiguous FP8 at N 6144)
// still win (H200, docs/tuning.md#how-dg_tune-times).
constexpr double kTunedLeadErrors = 2.0;

// Each config's time of a problem: the mean over the samples of group counts (one sample for
// other problems) of the median of its runs, and those medians per sample (ms, samples x configs).
struct ConfigTimes {
  std::vector<double> mean_ms;
  std::vector<std::vector<double>> sample_ms;
};

// The winner (the heuristic's choice is config 0): the fastest by mean, unless its lead over the
// heuristic's choice is under kTunedMinLead or, over several samples, under kTunedLeadErrors
// standard errors of its per-sample leads; then 0. *fastest (may be null): the fastest.
size_t tuned_winner(const ConfigTimes& t, size_t* fastest = nullptr);

// Runs each config once, then per sample of the group counts `reps` rounds of one timed run per
// config (flush, event, call, event).
dg_status time_configs(dg_stream* stream, const TuneCall& call, const std::vector<dg_gemm_options>& options, int reps,
                       TuneBuffers* buffers, ConfigTimes* times);

}  // namespace dg::api
