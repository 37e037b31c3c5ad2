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

__global__ void spin_kernel(uint64_t ns) {
  uint64_t start;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  for (;;) {
    uint64_t now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    if (now - start >= ns) break;
  }
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

int spin(uint64_t ns, void* stream) {
  spin_kernel<<<1, 1, 0, S(stream)>>>(ns);
  return cudaGetLastError();
}

const char* error_string(int err) { return cudaGetErrorString(static_cast<cudaError_t>(err)); }

}  // namespace dgb::gpu
