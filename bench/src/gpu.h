// Device helpers of dg-bench (gpu.cu, compiled by nvcc): random inputs, the reference FP8
// quantisers (docs/README.md#how-results-are-checked), layout copies, calc_diff sums and a spin
// kernel. Every function enqueues on `stream` (a cudaStream_t) and returns the launch's cudaError_t
// as an int (0 = success).
#pragma once
#include <cstdint>

#include "numerics.h"

namespace dgb::gpu {

// Normal(0, 1) * scale from a counter-based generator: element i depends only on (seed, i).
int fill_randn_bf16(void* out, int64_t n, uint64_t seed, float scale, void* stream);
int fill_randn_f32(void* out, int64_t n, uint64_t seed, float scale, void* stream);

// per_token_cast_to_fp8 (gran 128): x BF16 [rows, k] row-major -> out E4M3 [rows, k] row-major and
// sf FP32 [rows, ceil(k/128)] row-major; sf = max(amax, 1e-4) / 448.
int quant_per_token(const void* x, int64_t rows, int64_t k, void* out, float* sf, void* stream);
// per_block_cast_to_fp8: 128 x 128 tiles -> sf FP32 [ceil(rows/128), ceil(k/128)] row-major.
int quant_per_block(const void* x, int64_t rows, int64_t k, void* out, float* sf, void* stream);

// The hyper-connection pre-norm GEMM in FP64, per split: d [splits, m, n] = a . b^T and
// s [splits, m] = sum of a^2 over split i's k range [i * cps * 32, (i + 1) * cps * 32) clipped to
// k (dg.h's partition), rounded to FP32 at the end. a BF16 [m, k], b FP32 [n, k], both row-major.
int hc_prenorm_ref(const void* a, const float* b, int64_t m, int64_t n, int64_t k, int64_t splits, int64_t cps,
                   float* d, float* s, void* stream);

// E4M3 -> BF16 (exact), n elements.
int fp8_to_bf16(const void* in, void* out, int64_t n, void* stream);

// dst[i * ds0 + j * ds1] = src[i * ss0 + j * ss1] for FP32, i < rows, j < cols.
int copy2d_f32(float* dst, int64_t ds0, int64_t ds1, const float* src, int64_t ss0, int64_t ss1, int64_t rows,
               int64_t cols, void* stream);

// Accumulates calc_diff's sums of x (dtype 0 = BF16, 1 = FP32) against y into `sums` (device
// memory, 4 doubles: xy, xx, yy, non-finite count of x; zero it first). x is [rows, cols] with
// row stride ldx, y likewise.
enum DType { kBF16 = 0, kF32 = 1 };
int diff_sums(const void* x, DType xt, int64_t ldx, const void* y, DType yt, int64_t ldy, int64_t rows,
              int64_t cols, double* sums, void* stream);

// Adds to *count (device memory; zero it first) the BF16 elements of x ([rows, cols], row stride ld)
// whose bits are neither +0 nor -0 nor, when poison_ok, the poison pattern 0xFFFF.
int count_nonzero_bf16(const void* x, int64_t ld, int64_t rows, int64_t cols, bool poison_ok,
                       unsigned long long* count, void* stream);

// A plain streaming read: the byte ranges taken as one sequence of 16-byte vectors, read grid-stride
// by a `grid` x `block` launch with four independent loads per step (ld.global.nc, L1 no-allocate,
// as the GEMV reads its matrix). Bytes past a range's last whole vector are read one by one. Block
// b writes out[b]: the wrapping 32-bit sum of the little-endian words (and tail bytes) it read, so
// the loads cannot be optimised away and the sum over blocks can be checked. Range starts must be
// 16-byte aligned; at most kMaxReadRanges ranges.
struct ReadRange {
  const void* ptr;
  int64_t bytes;
};
constexpr int kMaxReadRanges = 64;
int stream_read(const ReadRange* ranges, int n, unsigned grid, unsigned block, uint32_t* out, void* stream);

// Busy-waits on the device for about `ns` nanoseconds (one block).
int spin(uint64_t ns, void* stream);

const char* error_string(int err);

}  // namespace dgb::gpu
