#include <cuda_bf16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include "gpu.h"

namespace dgb::gpu {
namespace {

__device__ __forceinline__ uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// Box-Muller on two 32-bit uniforms taken from one 64-bit hash of (seed, pair index).
__device__ __forceinline__ float2 randn2(uint64_t seed, uint64_t pair) {
  const uint64_t h = splitmix64(seed * 0x2545f4914f6cdd1dull + pair);
  const float u1 = (static_cast<float>(static_cast<uint32_t>(h >> 32)) + 1.0f) * 2.3283064e-10f;  // (0, 1]
  const float u2 = static_cast<float>(static_cast<uint32_t>(h)) * 2.3283064e-10f;
  const float r = sqrtf(-2.0f * logf(u1));
  float s, c;
  sincospif(2.0f * u2, &s, &c);
  return make_float2(r * c, r * s);
}

template <typename T>
__global__ void fill_randn_kernel(T* out, int64_t n, uint64_t seed, float scale) {
  const int64_t pairs = (n + 1) / 2;
  for (int64_t p = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; p < pairs; p += int64_t(gridDim.x) * blockDim.x) {
    const float2 v = randn2(seed, static_cast<uint64_t>(p));
    const int64_t i = 2 * p;
    if constexpr (sizeof(T) == 2) {
      out[i] = __float2bfloat16(v.x * scale);
      if (i + 1 < n) out[i + 1] = __float2bfloat16(v.y * scale);
    } else {
      out[i] = v.x * scale;
      if (i + 1 < n) out[i + 1] = v.y * scale;
    }
  }
}

__device__ __forceinline__ uint8_t to_e4m3(float x) {
  return static_cast<uint8_t>(__nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3));
}

// One warp per (row, 128-wide K block): each lane holds 4 elements.
__global__ void quant_per_token_kernel(const __nv_bfloat16* x, int64_t rows, int64_t k, uint8_t* out, float* sf) {
  const int64_t kblocks = (k + 127) / 128;
  const int64_t warp = (blockIdx.x * int64_t(blockDim.x) + threadIdx.x) / 32;
  const int lane = threadIdx.x % 32;
  if (warp >= rows * kblocks) return;
  const int64_t row = warp / kblocks, kb = warp % kblocks;
  float v[4];
  float amax = 0.0f;
  for (int j = 0; j < 4; ++j) {
    const int64_t col = kb * 128 + lane * 4 + j;
    v[j] = col < k ? __bfloat162float(x[row * k + col]) : 0.0f;
    amax = fmaxf(amax, fabsf(v[j]));
  }
  for (int off = 16; off > 0; off /= 2) amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, off));
  const float s = fmaxf(amax, 1e-4f) / 448.0f;
  for (int j = 0; j < 4; ++j) {
    const int64_t col = kb * 128 + lane * 4 + j;
    if (col < k) out[row * k + col] = to_e4m3(v[j] * (1.0f / s));
  }
  if (lane == 0) sf[row * kblocks + kb] = s;
}

// One block of 256 threads per 128 x 128 tile.
__global__ void quant_per_block_kernel(const __nv_bfloat16* x, int64_t rows, int64_t k, uint8_t* out, float* sf) {
  const int64_t kblocks = (k + 127) / 128;
  const int64_t rb = blockIdx.y, kb = blockIdx.x;
  __shared__ float warp_max[8];
  float amax = 0.0f;
  for (int e = threadIdx.x; e < 128 * 128; e += blockDim.x) {
    const int64_t r = rb * 128 + e / 128, c = kb * 128 + e % 128;
    if (r < rows && c < k) amax = fmaxf(amax, fabsf(__bfloat162float(x[r * k + c])));
  }
  for (int off = 16; off > 0; off /= 2) amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, off));
  if (threadIdx.x % 32 == 0) warp_max[threadIdx.x / 32] = amax;
  __syncthreads();
  amax = 0.0f;
  for (int w = 0; w < 8; ++w) amax = fmaxf(amax, warp_max[w]);
  const float s = fmaxf(amax, 1e-4f) / 448.0f;
  for (int e = threadIdx.x; e < 128 * 128; e += blockDim.x) {
    const int64_t r = rb * 128 + e / 128, c = kb * 128 + e % 128;
    if (r < rows && c < k) out[r * k + c] = to_e4m3(__bfloat162float(x[r * k + c]) * (1.0f / s));
  }
  if (threadIdx.x == 0) sf[rb * kblocks + kb] = s;
}

// One thread per (split, row, column), column n standing for the sum of squares.
__global__ void hc_prenorm_ref_kernel(const __nv_bfloat16* a, const float* b, int64_t m, int64_t n, int64_t k,
                                      int64_t splits, int64_t cps, float* d, float* s) {
  const int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (i >= splits * m * (n + 1)) return;
  const int64_t col = i % (n + 1), row = i / (n + 1) % m, split = i / ((n + 1) * m);
  const int64_t k0 = min(k, split * cps * 32), k1 = min(k, (split + 1) * cps * 32);
  const __nv_bfloat16* ar = a + row * k;
  double acc = 0;
  for (int64_t kk = k0; kk < k1; ++kk) {
    const double x = __bfloat162float(ar[kk]);
    acc += x * (col == n ? x : static_cast<double>(b[col * k + kk]));
  }
  if (col == n) s[split * m + row] = static_cast<float>(acc);
  else d[(split * m + row) * n + col] = static_cast<float>(acc);
}

__global__ void fp8_to_bf16_kernel(const uint8_t* in, __nv_bfloat16* out, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const __half_raw h = __nv_cvt_fp8_to_halfraw(static_cast<__nv_fp8_storage_t>(in[i]), __NV_E4M3);
    out[i] = __float2bfloat16(__half2float(__half(h)));
  }
}

__global__ void copy2d_kernel(float* dst, int64_t ds0, int64_t ds1, const float* src, int64_t ss0, int64_t ss1,
                              int64_t rows, int64_t cols) {
  const int64_t n = rows * cols;
  for (int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; e < n; e += int64_t(gridDim.x) * blockDim.x) {
    const int64_t i = e / cols, j = e % cols;
    dst[i * ds0 + j * ds1] = src[i * ss0 + j * ss1];
  }
}

__device__ __forceinline__ double load(const void* p, DType t, int64_t i) {
  return t == kBF16 ? static_cast<double>(__bfloat162float(static_cast<const __nv_bfloat16*>(p)[i]))
                    : static_cast<double>(static_cast<const float*>(p)[i]);
}

__global__ void diff_sums_kernel(const void* x, DType xt, int64_t ldx, const void* y, DType yt, int64_t ldy,
                                 int64_t rows, int64_t cols, double* sums) {
  double xy = 0, xx = 0, yy = 0, bad = 0;
  const int64_t n = rows * cols;
  for (int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; e < n; e += int64_t(gridDim.x) * blockDim.x) {
    const int64_t i = e / cols, j = e % cols;
    const double a = load(x, xt, i * ldx + j), b = load(y, yt, i * ldy + j);
    if (!isfinite(a)) {
      bad += 1;
      continue;
    }
    xy += a * b;
    xx += a * a;
    yy += b * b;
  }
  for (int off = 16; off > 0; off /= 2) {
    xy += __shfl_xor_sync(0xffffffffu, xy, off);
    xx += __shfl_xor_sync(0xffffffffu, xx, off);
    yy += __shfl_xor_sync(0xffffffffu, yy, off);
    bad += __shfl_xor_sync(0xffffffffu, bad, off);
  }
  if (threadIdx.x % 32 == 0) {
    atomicAdd(&sums[0], xy);
    atomicAdd(&sums[1], xx);
    atomicAdd(&sums[2], yy);
    atomicAdd(&sums[3], bad);
  }
}

__global__ void count_nonzero_bf16_kernel(const uint16_t* x, int64_t ld, int64_t rows, int64_t cols, bool poison_ok,
                                          unsigned long long* count) {
  unsigned long long n = 0;
  const int64_t total = rows * cols;
  for (int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; e < total; e += int64_t(gridDim.x) * blockDim.x) {
    const uint16_t v = x[(e / cols) * ld + e % cols];
    n += (v & 0x7fffu) != 0 && !(poison_ok && v == 0xffffu);
  }
  for (int off = 16; off > 0; off /= 2) n += __shfl_xor_sync(0xffffffffu, n, off);
  if (threadIdx.x % 32 == 0 && n) atomicAdd(count, n);
}

__global__ void spin_kernel(uint64_t ns) {
  uint64_t start;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  for (;;) {
    uint64_t now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    if (now - start >= ns) break;
  }
}

struct ReadPlan {
  uintptr_t base[kMaxReadRanges];  // range start - (its first vector's index) * 16
  int64_t end[kMaxReadRanges];     // one past the range's last vector, in the whole sequence
  const uint8_t* tail[kMaxReadRanges];
  int tail_bytes[kMaxReadRanges];
  int n;
  int64_t total;  // vectors
};

__device__ __forceinline__ uint32_t sum_words(uint4 v) { return v.x + v.y + v.z + v.w; }

__global__ void stream_read_kernel(const ReadPlan plan, uint32_t* out) {
  constexpr int kUnroll = 4;
  const int64_t step = int64_t(gridDim.x) * blockDim.x;
  const int64_t first = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  uint32_t acc = 0;
  int r = 0;  // the range of the last vector read (vectors only move forward)
  for (int64_t v = first; v < plan.total; v += kUnroll * step) {
    uint4 x[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int64_t i = v + u * step;
      x[u] = make_uint4(0, 0, 0, 0);
      if (i < plan.total) {
        while (i >= plan.end[r]) ++r;
        const uint4* p = reinterpret_cast<const uint4*>(plan.base[r] + static_cast<uintptr_t>(i) * 16);
        asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
                     : "=r"(x[u].x), "=r"(x[u].y), "=r"(x[u].z), "=r"(x[u].w) : "l"(p));
      }
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) acc += sum_words(x[u]);
  }
  if (first < plan.n)
    for (int j = 0; j < plan.tail_bytes[first]; ++j) acc += plan.tail[first][j];
  for (int off = 16; off > 0; off /= 2) acc += __shfl_xor_sync(0xffffffffu, acc, off);
  __shared__ uint32_t block_sum;
  if (threadIdx.x == 0) block_sum = 0;
  __syncthreads();
  if (threadIdx.x % 32 == 0) atomicAdd(&block_sum, acc);
  __syncthreads();
  if (threadIdx.x == 0) out[blockIdx.x] = block_sum;
}

unsigned grid_for(int64_t work, int block) {
  const int64_t g = (work + block - 1) / block;
  return static_cast<unsigned>(g < 1 ? 1 : (g > 65536 ? 65536 : g));
}

cudaStream_t S(void* s) { return static_cast<cudaStream_t>(s); }

}  // namespace

int fill_randn_bf16(void* out, int64_t n, uint64_t seed, float scale, void* stream) {
  if (n <= 0) return 0;
  fill_randn_kernel<<<grid_for((n + 1) / 2, 256), 256, 0, S(stream)>>>(static_cast<__nv_bfloat16*>(out), n, seed, scale);
  return cudaGetLastError();
}

int fill_randn_f32(void* out, int64_t n, uint64_t seed, float scale, void* stream) {
  if (n <= 0) return 0;
  fill_randn_kernel<<<grid_for((n + 1) / 2, 256), 256, 0, S(stream)>>>(static_cast<float*>(out), n, seed, scale);
  return cudaGetLastError();
}

int quant_per_token(const void* x, int64_t rows, int64_t k, void* out, float* sf, void* stream) {
  const int64_t warps = rows * ((k + 127) / 128);
  if (warps <= 0) return 0;
  const int64_t blocks = (warps * 32 + 255) / 256;
  quant_per_token_kernel<<<static_cast<unsigned>(blocks), 256, 0, S(stream)>>>(
      static_cast<const __nv_bfloat16*>(x), rows, k, static_cast<uint8_t*>(out), sf);
  return cudaGetLastError();
}

int quant_per_block(const void* x, int64_t rows, int64_t k, void* out, float* sf, void* stream) {
  if (rows <= 0 || k <= 0) return 0;
  const dim3 grid(static_cast<unsigned>((k + 127) / 128), static_cast<unsigned>((rows + 127) / 128));
  quant_per_block_kernel<<<grid, 256, 0, S(stream)>>>(static_cast<const __nv_bfloat16*>(x), rows, k,
                                                      static_cast<uint8_t*>(out), sf);
  return cudaGetLastError();
}

int hc_prenorm_ref(const void* a, const float* b, int64_t m, int64_t n, int64_t k, int64_t splits, int64_t cps,
                   float* d, float* s, void* stream) {
  const int64_t threads = splits * m * (n + 1);
  if (threads <= 0) return 0;
  hc_prenorm_ref_kernel<<<grid_for(threads, 128), 128, 0, S(stream)>>>(static_cast<const __nv_bfloat16*>(a), b, m, n,
                                                                       k, splits, cps, d, s);
  return cudaGetLastError();
}

int fp8_to_bf16(const void* in, void* out, int64_t n, void* stream) {
  if (n <= 0) return 0;
  fp8_to_bf16_kernel<<<grid_for(n, 256), 256, 0, S(stream)>>>(static_cast<const uint8_t*>(in),
                                                              static_cast<__nv_bfloat16*>(out), n);
  return cudaGetLastError();
}

int copy2d_f32(float* dst, int64_t ds0, int64_t ds1, const float* src, int64_t ss0, int64_t ss1, int64_t rows,
               int64_t cols, void* stream) {
  if (rows * cols <= 0) return 0;
  copy2d_kernel<<<grid_for(rows * cols, 256), 256, 0, S(stream)>>>(dst, ds0, ds1, src, ss0, ss1, rows, cols);
  return cudaGetLastError();
}

int diff_sums(const void* x, DType xt, int64_t ldx, const void* y, DType yt, int64_t ldy, int64_t rows,
              int64_t cols, double* sums, void* stream) {
  if (rows * cols <= 0) return 0;
  const unsigned grid = grid_for(rows * cols, 256) < 2048 ? grid_for(rows * cols, 256) : 2048;
  diff_sums_kernel<<<grid, 256, 0, S(stream)>>>(x, xt, ldx, y, yt, ldy, rows, cols, sums);
  return cudaGetLastError();
}

int count_nonzero_bf16(const void* x, int64_t ld, int64_t rows, int64_t cols, bool poison_ok,
                       unsigned long long* count, void* stream) {
  if (rows * cols <= 0) return 0;
  const unsigned grid = grid_for(rows * cols, 256) < 2048 ? grid_for(rows * cols, 256) : 2048;
  count_nonzero_bf16_kernel<<<grid, 256, 0, S(stream)>>>(static_cast<const uint16_t*>(x), ld, rows, cols, poison_ok,
                                                         count);
  return cudaGetLastError();
}

int stream_read(const ReadRange* ranges, int n, unsigned grid, unsigned block, uint32_t* out, void* stream) {
  if (n < 0 || n > kMaxReadRanges || grid == 0 || block == 0 || block % 32 != 0) return cudaErrorInvalidValue;
  ReadPlan plan{};
  int64_t at = 0;
  for (int r = 0; r < n; ++r) {
    const uintptr_t p = reinterpret_cast<uintptr_t>(ranges[r].ptr);
    if (p % 16 != 0 || ranges[r].bytes < 0) return cudaErrorInvalidValue;
    const int64_t vectors = ranges[r].bytes / 16;
    plan.base[r] = p - static_cast<uintptr_t>(at) * 16;
    at += vectors;
    plan.end[r] = at;
    plan.tail[r] = static_cast<const uint8_t*>(ranges[r].ptr) + vectors * 16;
    plan.tail_bytes[r] = static_cast<int>(ranges[r].bytes - vectors * 16);
  }
  plan.n = n;
  plan.total = at;
  stream_read_kernel<<<grid, block, 0, S(stream)>>>(plan, out);
  return cudaGetLastError();
}

int spin(uint64_t ns, void* stream) {
  spin_kernel<<<1, 1, 0, S(stream)>>>(ns);
  return cudaGetLastError();
}

const char* error_string(int err) { return cudaGetErrorString(static_cast<cudaError_t>(err)); }

}  // namespace dgb::gpu
