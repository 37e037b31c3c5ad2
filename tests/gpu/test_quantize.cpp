// FP8 quantization through the public API against a CPU reference that follows
// docs/quantization.md step by step: codes and scales compared bit for bit (the arithmetic is
// deterministic), on fresh random inputs spanning 2^-20 .. 2^20 with all-zero groups, poisoned
// outputs (0xff) so that unwritten bytes show, odd M / K tails, both input dtypes, FP32 / power-of-two
// / packed UE8M0 scales, NaN and inf inputs, the contiguous (indices, psum) and masked layouts (also
// replayed from a CUDA graph with new counts), per-block weights, the MN-major form, the K-grouped form
// (group tails padded to 128 rows, MN-major and K-major codes, host and device counts, a graph replayed
// with new device counts), and end to end (also K-grouped quantize -> the K-grouped FP8 GEMMs):
// quantize -> dg_fp8_gemm_nt and -> the M-grouped FP8 GEMMs (contiguous with NaN in the padding rows
// that must not be read, masked) against reference GEMMs on the unquantized values.
#include <dlfcn.h>
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "dg.h"
#include "gpu_fixture.h"
#include "host_numerics.h"
#include "runtime/device.h"
#include "runtime/driver.h"

namespace {

using Gpu = dg::test::Gpu;
using Buf = dg::test::DeviceBuffer;
using dg::test::Tensor;
using dg::test::bf2f;
using dg::test::f2bf;

constexpr uint8_t kPoison = 0xff;

uint32_t bits_of(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
float from_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// ---------------------------------------------------------------- the reference (docs/quantization.md)
float ref_scale(uint32_t amax_bits, float floor, bool pow2) {
  const float amax = from_bits(std::max(amax_bits, bits_of(floor)));
  float s = amax / 448.0f;
  uint32_t b = bits_of(s);
  if (pow2 && (b & 0x7f800000u) != 0x7f800000u && (b & 0x7fffffu) != 0) b = (b + 0x7fffffu) & 0x7f800000u;
  return from_bits(b);
}

uint8_t ref_code(float x, float scale) {
  const volatile float inv = 1.0f / scale;  // rounded to FP32, then the product rounded to FP32
  const float y = x * inv;
  if (std::isnan(y)) return 0x7f;
  if (y == 0.0f) return std::signbit(y) ? 0x80 : 0x00;
  return dg::test::f_to_e4m3(y);  // round to nearest even, saturating at 448 (inf too)
}

// Codes equal, NaN codes compared as NaN (any sign).
bool same_code(uint8_t got, uint8_t want) {
  if ((want & 0x7f) == 0x7f) return (got & 0x7f) == 0x7f;
  return got == want;
}
bool same_scale(float got, float want) {
  if (std::isnan(want)) return std::isnan(got);
  return bits_of(got) == bits_of(want);
}

// Random values over a wide dynamic range: per group a magnitude 2^[-20, 20], values spread over
// 2^-12 of it and below, random signs; about 1 group in 16 all zeros.
std::vector<float> wide_values(int64_t n, std::mt19937& rng, bool bf16) {
  std::uniform_int_distribution<int> mag(-20, 20), spread(-12, 0), zero(0, 15);
  std::uniform_real_distribution<float> mant(1.0f, 2.0f);
  std::vector<float> v(n);
  for (int64_t i = 0; i < n; i += 128) {
    const int e = mag(rng);
    const bool zeros = zero(rng) == 0;
    for (int64_t j = i; j < std::min(n, i + 128); ++j) {
      float x = zeros ? 0.0f : std::ldexp(mant(rng), e + spread(rng)) * (rng() % 2 ? -1.0f : 1.0f);
      v[j] = bf16 ? bf2f(f2bf(x)) : x;
    }
  }
  return v;
}

// x as the device holds it: BF16 or FP32 words.
std::vector<uint8_t> to_bytes(const std::vector<float>& v, bool bf16) {
  std::vector<uint8_t> out(v.size() * (bf16 ? 2 : 4));
  for (size_t i = 0; i < v.size(); ++i) {
    if (bf16) {
      const uint16_t h = f2bf(v[i]);
      std::memcpy(&out[2 * i], &h, 2);
    } else {
      std::memcpy(&out[4 * i], &v[i], 4);
    }
  }
  return out;
}

int64_t align4(int64_t x) { return (x + 3) / 4 * 4; }

// ---------------------------------------------------------------- per-token problems
struct TokenCase {
  int64_t g = 0;  // 0: rank 2
  int64_t m = 0, k = 0;
  bool bf16 = true, pow2 = false, packed = false;
  float floor = 0.0f;  // 0: default
  int mode = 0;        // 0 plain, 1 indices, 2 psum, 3 masked
  int64_t num_groups = 0;  // indices: G
};

// Row kinds: 1 quantized; 2 padding of a contiguous group (codes and scales 0); 0 untouched (masked
// rows past the count).

void run_token_case(Gpu& gpu, const TokenCase& c, std::mt19937& rng, const std::vector<int32_t>& groups) {
  CAPTURE(c.g);
  CAPTURE(c.m);
  CAPTURE(c.k);
  CAPTURE(c.bf16);
  CAPTURE(c.pow2);
  CAPTURE(c.packed);
  CAPTURE(c.mode);
  const int64_t b = c.g ? c.g : 1, m = c.m, k = c.k, sf_k = (k + 127) / 128;
  const int64_t ld_out = (k + 15) / 16 * 16 + 16;  // a gap after each row: must stay poison
  const float floor = c.floor == 0.0f ? 1e-4f : c.floor;
  const bool pow2 = c.pow2 || c.packed;
  std::vector<float> x = wide_values(b * m * k, rng, c.bf16);
  // Per-row status.
  std::vector<int> kind(b * m, 1);
  if (c.mode == 1) {
    for (int64_t r = 0; r < m; ++r) kind[r] = groups[r] >= 0 && groups[r] < c.num_groups ? 1 : 2;
  } else if (c.mode == 2) {
    std::fill(kind.begin(), kind.end(), 2);
    int32_t end = 0;
    for (int32_t e : groups) {
      const int32_t start = (end + 127) / 128 * 128;
      end = std::max(end, std::min(std::max(e, 0), int32_t(m)));
      for (int64_t r = start; r < end; ++r) kind[r] = 1;
    }
  } else if (c.mode == 3) {
    for (int64_t gi = 0; gi < b; ++gi)
      for (int64_t r = std::max<int64_t>(0, std::min<int64_t>(groups[gi], m)); r < m; ++r) kind[gi * m + r] = 0;
  }
  // Padding rows hold NaN: were they read, codes or scales would show it.
  for (int64_t r = 0; r < b * m; ++r)
    if (kind[r] != 1)
      for (int64_t j = 0; j < k; ++j) x[r * k + j] = NAN;

  const std::vector<uint8_t> xb = to_bytes(x, c.bf16);
  Buf dx(gpu.device, xb.size()), dout(gpu.device, b * m * ld_out);
  const int64_t sf_cols = c.packed ? (sf_k + 3) / 4 : sf_k;
  Buf dsf(gpu.device, b * align4(m) * sf_cols * 4), dgroups(gpu.device, groups.size() * 4 + 4);
  dx.upload(xb.data(), xb.size());
  if (!groups.empty()) dgroups.upload(groups);
  dout.poison(kPoison);
  dsf.poison(kPoison);
  const dg_dtype xd = c.bf16 ? DG_DTYPE_BFLOAT16 : DG_DTYPE_FLOAT32;
  std::vector<int64_t> xs = {m, k}, os = {m, k}, ost = {ld_out, 1}, ss = {m, sf_cols}, sst = {1, align4(m)};
  if (c.g) {
    xs.insert(xs.begin(), b);
    os.insert(os.begin(), b);
    ost.insert(ost.begin(), m * ld_out);
    ss.insert(ss.begin(), b);
    sst.insert(sst.begin(), align4(m) * sf_cols);
  }
  Tensor tx(dx.data(), xd, xs), tout(dout.data(), DG_DTYPE_FLOAT8_E4M3, os, ost);
  Tensor tsf(dsf.data(), c.packed ? DG_DTYPE_UE8M0X4 : DG_DTYPE_FLOAT32, ss, sst);
  Tensor tgroups(dgroups.data(), DG_DTYPE_INT32, {int64_t(groups.size())});
  dg_quant_options o = DG_QUANT_OPTIONS_INIT;
  o.pow2_scales = c.pow2;
  o.amax_floor = c.floor;
  dg_status st;
  if (c.mode == 0) st = dg_quantize_fp8_per_token(gpu.stream, tx.t, tout.t, tsf.t, &o);
  else if (c.mode == 3) st = dg_quantize_fp8_per_token_masked(gpu.stream, tx.t, tout.t, tsf.t, tgroups.t, &o);
  else
    st = dg_quantize_fp8_per_token_contiguous(gpu.stream, tx.t, tout.t, tsf.t, tgroups.t,
                                              c.mode == 1 ? DG_M_GROUPED_LAYOUT_INDICES : DG_M_GROUPED_LAYOUT_PSUM,
                                              c.mode == 1 ? c.num_groups : int64_t(groups.size()), &o);
  REQUIRE_MESSAGE(st == DG_SUCCESS, dg_last_error());
  const std::vector<uint8_t> out = dout.download<uint8_t>();
  const std::vector<uint32_t> sf = dsf.download<uint32_t>();

  int64_t bad_codes = 0, bad_scales = 0, bad_gaps = 0;
  for (int64_t r = 0; r < b * m; ++r) {
    const int64_t gi = r / m, row = r % m;
    for (int64_t kb = 0; kb < sf_k; ++kb) {
      const int64_t k0 = kb * 128, k1 = std::min(k, k0 + 128);
      float want = 0.0f;
      if (kind[r] == 1) {
        uint32_t amax = 0;
        for (int64_t j = k0; j < k1; ++j) amax = std::max(amax, bits_of(x[r * k + j]) & 0x7fffffffu);
        want = ref_scale(amax, floor, pow2);
      }
      for (int64_t j = k0; j < k1; ++j) {
        const uint8_t got = out[r * ld_out + j];
        const uint8_t w = kind[r] == 1 ? ref_code(x[r * k + j], want) : kind[r] == 2 ? 0 : kPoison;
        const bool ok = kind[r] == 1 ? same_code(got, w) : got == w;  // untouched: still the poison byte
        if (!ok && bad_codes++ < 5)
          MESSAGE("code row ", r, " col ", j, ": got ", int(got), " want ", int(w), " x ", x[r * k + j]);
      }
      const int64_t base = gi * align4(m) * sf_cols;
      if (c.packed) {
        const uint32_t word = sf[base + (kb / 4) * align4(m) + row];
        const uint32_t code = (word >> (8 * (kb % 4))) & 0xff;
        const uint32_t w = kind[r] == 1 ? (bits_of(want) >> 23) & 0xff : kind[r] == 2 ? 0 : kPoison;
        if (code != w && bad_scales++ < 5) MESSAGE("packed scale row ", r, " kb ", kb, ": ", code, " want ", w);
      } else {
        const float got = from_bits(sf[base + kb * align4(m) + row]);
        const bool ok = kind[r] == 0 ? sf[base + kb * align4(m) + row] == 0xffffffffu : same_scale(got, want);
        if (!ok && bad_scales++ < 5) MESSAGE("scale row ", r, " kb ", kb, ": ", got, " want ", want);
      }
    }
    for (int64_t j = k; j < ld_out; ++j) bad_gaps += out[r * ld_out + j] != kPoison;
  }
  // Packed words past the last K block hold code 0; the scales' padding rows (M .. align(M, 4)) 0.
  for (int64_t gi = 0; gi < b && c.mode != 3; ++gi)
    for (int64_t row = m; row < align4(m); ++row)
      for (int64_t col = 0; col < sf_cols; ++col) bad_scales += sf[gi * align4(m) * sf_cols + col * align4(m) + row] != 0;
  if (c.packed && sf_k % 4 != 0)
    for (int64_t r = 0; r < b * m; ++r)
      if (kind[r] != 0) {
        const uint32_t word = sf[(r / m) * align4(m) * sf_cols + (sf_cols - 1) * align4(m) + r % m];
        bad_scales += (word >> (8 * (sf_k % 4))) != 0;
      }
  CHECK(bad_codes == 0);
  CHECK(bad_scales == 0);
  CHECK(bad_gaps == 0);
}

}  // namespace

TEST_CASE("quantize per token: codes and scales bit for bit, tails, dtypes, scale formats") {
  Gpu gpu;
  if (!gpu.sm90()) return;
  std::mt19937 rng(20240601);
  for (const bool bf16 : {true, false})
    for (const int64_t m : {int64_t(1), int64_t(77), int64_t(300)})
      for (const int64_t k : {int64_t(7168), int64_t(100), int64_t(136), int64_t(640), int64_t(129), int64_t(2048 + 16)}) {
        TokenCase c;
        c.m = m, c.k = k, c.bf16 = bf16;
        run_token_case(gpu, c, rng, {});
        c.pow2 = true;
        run_token_case(gpu, c, rng, {});
        c.packed = true, c.pow2 = false;
        run_token_case(gpu, c, rng, {});
      }
  TokenCase batched;  // rank 3 with an engine's floor
  batched.g = 3, batched.m = 45, batched.k = 1000, batched.floor = 1e-10f;
  run_token_case(gpu, batched, rng, {});
}

TEST_CASE("quantize per token: NaN, inf and zero groups") {
  Gpu gpu;
  if (!gpu.sm90()) return;
  const int64_t m = 4, k = 512;
  std::vector<float> x(m * k);
  for (int64_t i = 0; i < m * k; ++i) x[i] = std::sin(float(i)) * 3.0f;
  x[0 * k + 5] = NAN;                                  // row 0, group 0: NaN
  x[0 * k + 130] = INFINITY;                           // row 0, group 1: +inf
  x[1 * k + 300] = -INFINITY, x[1 * k + 301] = NAN;    // row 1, group 2: inf and NaN -> NaN
  for (int64_t j = 384; j < 512; ++j) x[2 * k + j] = 0.0f;  // row 2, group 3: zeros
  x[3 * k + 7] = 1e30f;                                // row 3, group 0: finite but huge (FP32 input)
  Buf dx(gpu.device, x.size() * 4), dout(gpu.device, m * k), dsf(gpu.device, 4 * 4 * 4);
  dx.upload(x);
  dout.poison();
  dsf.poison();
  Tensor tx(dx.data(), DG_DTYPE_FLOAT32, {m, k}), tout(dout.data(), DG_DTYPE_FLOAT8_E4M3, {m, k});
  Tensor tsf(dsf.data(), DG_DTYPE_FLOAT32, {m, 4}, {1, 4});
  REQUIRE(dg_quantize_fp8_per_token(gpu.stream, tx.t, tout.t, tsf.t, nullptr) == DG_SUCCESS);
  const std::vector<uint8_t> out = dout.download<uint8_t>();
  const std::vector<float> sf = dsf.download<float>();
  auto scale = [&](int64_t r, int64_t kb) { return sf[kb * 4 + r]; };
  CHECK(std::isnan(scale(0, 0)));
  for (int64_t j = 0; j < 128; ++j) CHECK((out[j] & 0x7f) == 0x7f);
  CHECK(scale(0, 1) == INFINITY);
  for (int64_t j = 128; j < 256; ++j) CHECK((out[j] & 0x7f) == (j == 130 ? 0x7f : 0x00));  // +-0 (x * +0)
  CHECK(std::isnan(scale(1, 2)));
  CHECK(scale(2, 3) == 1e-4f / 448.0f);
  for (int64_t j = 384; j < 512; ++j) CHECK(out[2 * k + j] == 0);
  CHECK(scale(3, 0) == 1e30f / 448.0f);
  CHECK(out[3 * k + 7] == 0x7e);  // 448
  // Groups without special values are untouched by their neighbours'.
  uint32_t amax = 0;
  for (int64_t j = 128; j < 256; ++j) amax = std::max(amax, bits_of(x[1 * k + j]) & 0x7fffffffu);
  CHECK(bits_of(scale(1, 1)) == bits_of(ref_scale(amax, 1e-4f, false)));
  // Packed UE8M0: NaN and inf groups get code 0xff, the zero group the floor's power of two.
  Buf dpk(gpu.device, 4 * 4);
  dpk.poison(0x00);
  Tensor tpk(dpk.data(), DG_DTYPE_UE8M0X4, {m, 1}, {1, 4});
  REQUIRE(dg_quantize_fp8_per_token(gpu.stream, tx.t, tout.t, tpk.t, nullptr) == DG_SUCCESS);
  const std::vector<uint32_t> words = dpk.download<uint32_t>();
  CHECK((words[0] & 0xffff) == 0xffff);          // row 0: groups 0 (NaN) and 1 (inf)
  CHECK(((words[1] >> 16) & 0xff) == 0xff);      // row 1: group 2 (NaN)
  CHECK((words[2] >> 24) == ((bits_of(ref_scale(0, 1e-4f, true)) >> 23) & 0xff));  // row 2: group 3 (zeros)
}

TEST_CASE("quantize per token: M-grouped contiguous layouts (indices, psum)") {
  Gpu gpu;
  if (!gpu.sm90()) return;
  std::mt19937 rng(7);
  const int64_t m = 640;
  std::vector<int32_t> indices(m, -1);
  // Groups of 100, 0, 250 and 1 rows, each starting at a multiple of 128; -1 and out-of-range padding.
  const int32_t sizes[4] = {100, 0, 250, 1};
  int64_t row = 0;
  for (int32_t g = 0; g < 4; ++g) {
    for (int32_t i = 0; i < sizes[g]; ++i) indices[row + i] = g;
    row = (row + sizes[g] + 127) / 128 * 128;
  }
  indices[300] = 7;  // outside [0, G): padding too
  for (const bool packed : {false, true})
    for (const bool bf16 : {true, false}) {
      TokenCase c;
      c.m = m, c.k = 7168 + 64, c.mode = 1, c.packed = packed, c.bf16 = bf16, c.num_groups = 4;
      run_token_case(gpu, c, rng, indices);
    }
  // Psum: ends 100, 100, 356 (group 2 from 128), a decreasing 300 (empty), 700 > M (clipped to 640).
  for (const bool packed : {false, true}) {
    TokenCase c;
    c.m = m, c.k = 1000, c.mode = 2, c.packed = packed;
    run_token_case(gpu, c, rng, {100, 100, 356, 300, 700});
  }
}

TEST_CASE("quantize per token: masked layout, also replayed from a CUDA graph with new counts") {
  Gpu gpu;
  if (!gpu.sm90()) return;
  std::mt19937 rng(11);
  for (const bool packed : {false, true}) {
    TokenCase c;
    c.g = 5, c.m = 64, c.k = 7168, c.mode = 3, c.packed = packed;
    run_token_case(gpu, c, rng, {0, 5, 64, 100, -3});
  }
  // More (row, 512-column) items than the grid has warps, so that each warp takes several in turn
  // and the last round leaves warps idle; K 2000 leaves the last chunk's lanes past K without
  // elements. BF16 and FP32 input.
  for (const bool bf16 : {true, false}) {
    TokenCase c;
    c.g = 9, c.m = 1000, c.k = 2000, c.mode = 3, c.bf16 = bf16;
    run_token_case(gpu, c, rng, {1000, 999, 0, 517, 1000, 3, 1000, 768, 1});
  }
  // More groups than a warp has lanes: a row's group is found 32 groups at a time, so the rows of
  // groups 32-69 take a second and third round of the search; empty, negative and clipped counts
  // among them.
  {
    TokenCase c;
    c.g = 70, c.m = 40, c.k = 384, c.mode = 3;
    std::vector<int32_t> counts(c.g);
    std::uniform_int_distribution<int32_t> count(-2, 45);
    for (auto& n : counts) n = count(rng);
    counts[31] = 0, counts[32] = 40, counts[63] = 0, counts[64] = 1;
    run_token_case(gpu, c, rng, counts);
  }

  // Graph: capture once with counts {3, 9}, replay with {17, 0}.
  const int64_t g = 2, max_m = 32, k = 256;
  std::vector<float> x = wide_values(g * max_m * k, rng, true);
  const std::vector<uint8_t> xb = to_bytes(x, true);
  Buf dx(gpu.device, xb.size()), dout(gpu.device, g * max_m * k), dsf(gpu.device, g * max_m * 2 * 4), dm(gpu.device, 8);
  dx.upload(xb.data(), xb.size());
  dm.upload(std::vector<int32_t>{3, 9});
  Tensor tx(dx.data(), DG_DTYPE_BFLOAT16, {g, max_m, k}), tout(dout.data(), DG_DTYPE_FLOAT8_E4M3, {g, max_m, k});
  Tensor tsf(dsf.data(), DG_DTYPE_FLOAT32, {g, max_m, 2}, {max_m * 2, 1, max_m});
  Tensor tm(dm.data(), DG_DTYPE_INT32, {g});
  REQUIRE(dg_quantize_fp8_per_token_masked(gpu.stream, tx.t, tout.t, tsf.t, tm.t, nullptr) == DG_SUCCESS);  // loads the kernel
  REQUIRE(dg_stream_synchronize(gpu.stream) == DG_SUCCESS);

  void* cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  REQUIRE(cuda != nullptr);
  using Begin = CUresult (*)(CUstream, CUstreamCaptureMode);
  using End = CUresult (*)(CUstream, CUgraph*);
  using Instantiate = CUresult (*)(CUgraphExec*, CUgraph, unsigned long long);
  using GraphLaunch = CUresult (*)(CUgraphExec, CUstream);
  const auto begin = reinterpret_cast<Begin>(dlsym(cuda, "cuStreamBeginCapture_v2"));
  const auto end = reinterpret_cast<End>(dlsym(cuda, "cuStreamEndCapture"));
  const auto instantiate = reinterpret_cast<Instantiate>(dlsym(cuda, "cuGraphInstantiateWithFlags"));
  const auto graph_launch = reinterpret_cast<GraphLaunch>(dlsym(cuda, "cuGraphLaunch"));
  const auto exec_destroy = reinterpret_cast<CUresult (*)(CUgraphExec)>(dlsym(cuda, "cuGraphExecDestroy"));
  const auto graph_destroy = reinterpret_cast<CUresult (*)(CUgraph)>(dlsym(cuda, "cuGraphDestroy"));
  REQUIRE(bool(begin && end && instantiate && graph_launch && exec_destroy && graph_destroy));
  void* raw = nullptr;
  REQUIRE(dg_stream_get_cu_stream(gpu.stream, &raw) == DG_SUCCESS);
  const CUstream s = static_cast<CUstream>(raw);
  CUgraph graph = nullptr;
  CUgraphExec exec = nullptr;
  {
    dg::ContextScope scope;
    REQUIRE(scope.enter(*gpu.device) == DG_SUCCESS);
    REQUIRE(begin(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL) == CUDA_SUCCESS);
    const dg_status st = dg_quantize_fp8_per_token_masked(gpu.stream, tx.t, tout.t, tsf.t, tm.t, nullptr);
    REQUIRE(end(s, &graph) == CUDA_SUCCESS);
    REQUIRE(st == DG_SUCCESS);
    REQUIRE(instantiate(&exec, graph, 0) == CUDA_SUCCESS);
  }
  const int32_t counts[2] = {17, 0};
  dm.upload(counts, sizeof counts);
  dout.poison();
  dsf.poison();
  {
    dg::ContextScope scope;
    REQUIRE(scope.enter(*gpu.device) == DG_SUCCESS);
    REQUIRE(graph_launch(exec, s) == CUDA_SUCCESS);
  }
  REQUIRE(dg_stream_synchronize(gpu.stream) == DG_SUCCESS);
  const std::vector<uint8_t> out = dout.download<uint8_t>();
  const std::vector<float> sf = dsf.download<float>();
  int64_t bad = 0;
  for (int64_t gi = 0; gi < g; ++gi)
    for (int64_t r = 0; r < max_m; ++r)
      for (int64_t kb = 0; kb < 2; ++kb) {
        const int64_t base = (gi * max_m + r) * k + kb * 128;
        const uint32_t sf_word = bits_of(sf[gi * max_m * 2 + kb * max_m + r]);
        if (r >= counts[gi]) {
          bad += sf_word != 0xffffffffu;
          for (int64_t j = 0; j < 128; ++j) bad += out[base + j] != kPoison;
          continue;
        }
        uint32_t amax = 0;
        for (int64_t j = 0; j < 128; ++j) amax = std::max(amax, bits_of(x[base + j]) & 0x7fffffffu);
        const float want = ref_scale(amax, 1e-4f, false);
        bad += sf_word != bits_of(want);
        for (int64_t j = 0; j < 128; ++j) bad += !same_code(out[base + j], ref_code(x[base + j], want));
      }
  CHECK(bad == 0);
  exec_destroy(exec);
  graph_destroy(graph);
  dlclose(cuda);
}

TEST_CASE("quantize per block: 128 x 128 weights, batched, tails") {
  Gpu gpu;
  if (!gpu.sm90()) return;
  std::mt19937 rng(3);
  struct Shape { int64_t g, n, k; bool bf16, pow2; };
  for (const Shape& sh : {Shape{0, 256, 7168, true, false}, Shape{2, 300, 520, true, true}, Shape{0, 129, 100, false, false},
                          Shape{3, 128, 2048, false, true}}) {
    CAPTURE(sh.g);
    CAPTURE(sh.n);
    CAPTURE(sh.k);
    const int64_t b = sh.g ? sh.g : 1, n = sh.n, k = sh.k, nb = (n + 127) / 128, kb = (k + 127) / 128;
    std::vector<float> x(b * n * k);
    // Wide range per 128 x 128 block (the generator's groups run along rows).
    std::vector<float> v = wide_values(b * n * k, rng, sh.bf16);
    x = v;
    const std::vector<uint8_t> xb = to_bytes(x, sh.bf16);
    Buf dx(gpu.device, xb.size()), dout(gpu.device, b * n * k), dsf(gpu.device, b * nb * kb * 4);
    dx.upload(xb.data(), xb.size());
    dout.poison();
    dsf.poison();
    std::vector<int64_t> xs = {n, k}, ss = {nb, kb};
    if (sh.g) xs.insert(xs.begin(), b), ss.insert(ss.begin(), b);
    Tensor tx(dx.data(), sh.bf16 ? DG_DTYPE_BFLOAT16 : DG_DTYPE_FLOAT32, xs), tout(dout.data(), DG_DTYPE_FLOAT8_E4M3, xs);
    Tensor tsf(dsf.data(), DG_DTYPE_FLOAT32, ss);
    dg_quant_options o = DG_QUANT_OPTIONS_INIT;
    o.pow2_scales = sh.pow2;
    REQUIRE_MESSAGE(dg_quantize_fp8_per_block(gpu.stream, tx.t, tout.t, tsf.t, &o) == DG_SUCCESS, dg_last_error());
    const std::vector<uint8_t> out = dout.download<uint8_t>();
    const std::vector<float> sf = dsf.download<float>();
    int64_t bad = 0;
    for (int64_t gi = 0; gi < b; ++gi)
      for (int64_t bi = 0; bi < nb; ++bi)
        for (int64_t bj = 0; bj < kb; ++bj) {
          uint32_t amax = 0;
          for (int64_t r = bi * 128; r < std::min(n, bi * 128 + 128); ++r)
            for (int64_t c = bj * 128; c < std::min(k, bj * 128 + 128); ++c)
              amax = std::max(amax, bits_of(x[(gi * n + r) * k + c]) & 0x7fffffffu);
          const float want = ref_scale(amax, 1e-4f, sh.pow2);
          bad += !same_scale(sf[(gi * nb + bi) * kb + bj], want);
          for (int64_t r = bi * 128; r < std::min(n, bi * 128 + 128); ++r)
            for (int64_t c = bj * 128; c < std::min(k, bj * 128 + 128); ++c)
              bad += !same_code(out[(gi * n + r) * k + c], ref_code(x[(gi * n + r) * k + c], want));
        }
    CHECK(bad == 0);
  }
}

TEST_CASE("quantize MN-major: per column, 128 K rows per scale, the K-grouped GEMMs' layout") {
  Gpu gpu;
  if (!gpu.sm90()) return;
  std::mt19937 rng(5);
  struct Shape { int64_t k, mn; bool bf16; };
  for (const Shape& sh : {Shape{2048, 4096, true}, Shape{1100, 4097, true}, Shape{384, 200, false}, Shape{100, 16, false}}) {
    CAPTURE(sh.k);
    CAPTURE(sh.mn);
    const int64_t k = sh.k, mn = sh.mn, kb = (k + 127) / 128, ld_sf = align4(mn);
    std::vector<float> x = wide_values(k * mn, rng, sh.bf16);
    const std::vector<uint8_t> xb = to_bytes(x, sh.bf16);
    Buf dx(gpu.device, xb.size()), dout(gpu.device, k * mn), dsf(gpu.device, kb * ld_sf * 4);
    dx.upload(xb.data(), xb.size());
    dout.poison();
    dsf.poison();
    Tensor tx(dx.data(), sh.bf16 ? DG_DTYPE_BFLOAT16 : DG_DTYPE_FLOAT32, {k, mn});
    Tensor tout(dout.data(), DG_DTYPE_FLOAT8_E4M3, {k, mn});
    Tensor tsf(dsf.data(), DG_DTYPE_FLOAT32, {mn, kb}, {1, ld_sf});
    REQUIRE_MESSAGE(dg_quantize_fp8_mn_major(gpu.stream, tx.t, tout.t, tsf.t, nullptr) == DG_SUCCESS, dg_last_error());
    const std::vector<uint8_t> out = dout.download<uint8_t>();
    const std::vector<float> sf = dsf.download<float>();
    int64_t bad = 0;
    for (int64_t c = 0; c < mn; ++c)
      for (int64_t b = 0; b < kb; ++b) {
        uint32_t amax = 0;
        for (int64_t r = b * 128; r < std::min(k, b * 128 + 128); ++r) amax = std::max(amax, bits_of(x[r * mn + c]) & 0x7fffffffu);
        const float want = ref_scale(amax, 1e-4f, false);
        bad += !same_scale(sf[b * ld_sf + c], want);
        for (int64_t r = b * 128; r < std::min(k, b * 128 + 128); ++r) bad += !same_code(out[r * mn + c], ref_code(x[r * mn + c], want));
      }
    CHECK(bad == 0);
  }
}

TEST_CASE("quantize -> dg_fp8_gemm_nt matches a reference GEMM on the unquantized values") {
  Gpu gpu;
  if (!gpu.sm90()) return;
  std::mt19937 rng(99);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  for (const bool pow2 : {false, true}) {
    const int64_t m = 256, n = 512, k = 1536;
    std::vector<float> a(m * k), b(n * k);
    for (float& v : a) v = bf2f(f2bf(nd(rng)));
    for (float& v : b) v = bf2f(f2bf(nd(rng) * 0.05f));
    Buf da(gpu.device, m * k * 2), db(gpu.device, n * k * 2), qa(gpu.device, m * k), qb(gpu.device, n * k);
    Buf sfa(gpu.device, m * (k / 128) * 4), sfb(gpu.device, (n / 128) * (k / 128) * 4), dd(gpu.device, m * n * 2);
    da.upload(to_bytes(a, true));
    db.upload(to_bytes(b, true));
    dd.poison();
    Tensor ta(da.data(), DG_DTYPE_BFLOAT16, {m, k}), tb(db.data(), DG_DTYPE_BFLOAT16, {n, k});
    Tensor tqa(qa.data(), DG_DTYPE_FLOAT8_E4M3, {m, k}), tqb(qb.data(), DG_DTYPE_FLOAT8_E4M3, {n, k});
    Tensor tsfa(sfa.data(), DG_DTYPE_FLOAT32, {m, k / 128}, {1, m}), tsfb(sfb.data(), DG_DTYPE_FLOAT32, {n / 128, k / 128});
    Tensor td(dd.data(), DG_DTYPE_BFLOAT16, {m, n});
    dg_quant_options o = DG_QUANT_OPTIONS_INIT;
    o.pow2_scales = pow2;
    REQUIRE(dg_quantize_fp8_per_token(gpu.stream, ta.t, tqa.t, tsfa.t, &o) == DG_SUCCESS);
    REQUIRE(dg_quantize_fp8_per_block(gpu.stream, tb.t, tqb.t, tsfb.t, &o) == DG_SUCCESS);
    REQUIRE_MESSAGE(dg_fp8_gemm_nt(gpu.stream, tqa.t, tsfa.t, tqb.t, tsfb.t, td.t, nullptr, nullptr) == DG_SUCCESS,
                    dg_last_error());
    std::vector<uint16_t> d(m * n);
    dd.download(d.data(), d.size() * 2);
    std::vector<double> ref(m * n), got(m * n);
    dg::test::parallel_for(m, [&](int64_t i) {
      for (int64_t j = 0; j < n; ++j) {
        double acc = 0;
        for (int64_t t = 0; t < k; ++t) acc += double(a[i * k + t]) * b[j * k + t];
        ref[i * n + j] = acc;
        got[i * n + j] = bf2f(d[i * n + j]);
      }
    });
    const double diff = dg::test::calc_diff(ref, got);
    CAPTURE(pow2);
    CHECK(diff < 2e-3);  // FP8 inputs: DeepGEMM's own tests accept 1e-3 on dequantized references
  }
}

TEST_CASE("quantize -> M-grouped FP8 GEMMs (contiguous with padding rows, masked) match a reference") {
  Gpu gpu;
  if (!gpu.sm90()) return;
  std::mt19937 rng(123);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  const int64_t g = 4, n = 256, k = 1024, kb = k / 128;
  std::vector<float> w(g * n * k);
  for (float& v : w) v = bf2f(f2bf(nd(rng) * 0.05f));
  Buf dw(gpu.device, w.size() * 2), qw(gpu.device, w.size()), sfw(gpu.device, g * (n / 128) * kb * 4);
  dw.upload(to_bytes(w, true));
  Tensor tw(dw.data(), DG_DTYPE_BFLOAT16, {g, n, k}), tqw(qw.data(), DG_DTYPE_FLOAT8_E4M3, {g, n, k});
  Tensor tsfw(sfw.data(), DG_DTYPE_FLOAT32, {g, n / 128, kb});
  REQUIRE(dg_quantize_fp8_per_block(gpu.stream, tw.t, tqw.t, tsfw.t, nullptr) == DG_SUCCESS);
  // D rows of group gi against the reference on the unquantized values; `valid` rows compared.
  auto check_rows = [&](const std::vector<float>& x, const std::vector<uint16_t>& d, int64_t row0, int64_t rows,
                        int64_t gi, std::vector<double>& ref, std::vector<double>& got) {
    for (int64_t r = row0; r < row0 + rows; ++r)
      for (int64_t j = 0; j < n; ++j) {
        double acc = 0;
        for (int64_t t = 0; t < k; ++t) acc += double(x[r * k + t]) * w[(gi * n + j) * k + t];
        ref.push_back(acc);
        got.push_back(bf2f(d[r * n + j]));
      }
  };
  SUBCASE("contiguous, indices with -1 padding") {
    const int64_t m = 640;
    const int32_t sizes[4] = {100, 0, 250, 1};
    std::vector<int32_t> idx(m, -1);
    int64_t row = 0;
    std::vector<std::pair<int64_t, int64_t>> spans;
    for (int32_t gi = 0; gi < 4; ++gi) {
      for (int32_t i = 0; i < sizes[gi]; ++i) idx[row + i] = gi;
      spans.push_back({row, sizes[gi]});
      row = (row + sizes[gi] + 127) / 128 * 128;
    }
    std::vector<float> x(m * k);
    for (int64_t r = 0; r < m; ++r)
      for (int64_t t = 0; t < k; ++t) x[r * k + t] = idx[r] < 0 ? NAN : bf2f(f2bf(nd(rng)));  // padding: never read
    Buf dx(gpu.device, x.size() * 2), qa(gpu.device, m * k), sfa(gpu.device, m * kb * 4), di(gpu.device, m * 4);
    Buf dd(gpu.device, m * n * 2);
    dx.upload(to_bytes(x, true));
    di.upload(idx);
    qa.poison();
    sfa.poison();
    dd.poison();
    Tensor tx(dx.data(), DG_DTYPE_BFLOAT16, {m, k}), tqa(qa.data(), DG_DTYPE_FLOAT8_E4M3, {m, k});
    Tensor tsfa(sfa.data(), DG_DTYPE_FLOAT32, {m, kb}, {1, m}), ti(di.data(), DG_DTYPE_INT32, {m});
    Tensor td(dd.data(), DG_DTYPE_BFLOAT16, {m, n});
    REQUIRE(dg_quantize_fp8_per_token_contiguous(gpu.stream, tx.t, tqa.t, tsfa.t, ti.t, DG_M_GROUPED_LAYOUT_INDICES, g,
                                                 nullptr) == DG_SUCCESS);
    REQUIRE_MESSAGE(dg_m_grouped_fp8_gemm_nt_contiguous(gpu.stream, tqa.t, tsfa.t, tqw.t, tsfw.t, td.t, ti.t,
                                                        DG_M_GROUPED_LAYOUT_INDICES, 0, nullptr) == DG_SUCCESS,
                    dg_last_error());
    std::vector<uint16_t> d(m * n);
    dd.download(d.data(), d.size() * 2);
    std::vector<double> ref, got;
    for (int64_t gi = 0; gi < g; ++gi) check_rows(x, d, spans[gi].first, spans[gi].second, gi, ref, got);
    CHECK(dg::test::calc_diff(ref, got) < 2e-3);
    int64_t nonzero_padding = 0;  // padding rows of the computed blocks (rows 0 .. 511): zeros
    for (int64_t r = 0; r < 512; ++r)
      if (idx[r] < 0)
        for (int64_t j = 0; j < n; ++j) nonzero_padding += (d[r * n + j] & 0x7fff) != 0;
    CHECK(nonzero_padding == 0);
  }
  SUBCASE("masked") {
    const int64_t max_m = 128;
    const std::vector<int32_t> counts = {7, 0, 128, 60};
    std::vector<float> x(g * max_m * k);
    for (int64_t r = 0; r < g * max_m; ++r)
      for (int64_t t = 0; t < k; ++t) x[r * k + t] = (r % max_m) < counts[r / max_m] ? bf2f(f2bf(nd(rng))) : NAN;
    Buf dx(gpu.device, x.size() * 2), qa(gpu.device, g * max_m * k), sfa(gpu.device, g * max_m * kb * 4);
    Buf dm(gpu.device, g * 4), dd(gpu.device, g * max_m * n * 2);
    dx.upload(to_bytes(x, true));
    dm.upload(counts);
    qa.poison();
    sfa.poison();
    Tensor tx(dx.data(), DG_DTYPE_BFLOAT16, {g, max_m, k}), tqa(qa.data(), DG_DTYPE_FLOAT8_E4M3, {g, max_m, k});
    Tensor tsfa(sfa.data(), DG_DTYPE_FLOAT32, {g, max_m, kb}, {max_m * kb, 1, max_m});
    Tensor tm(dm.data(), DG_DTYPE_INT32, {g}), td(dd.data(), DG_DTYPE_BFLOAT16, {g, max_m, n});
    REQUIRE(dg_quantize_fp8_per_token_masked(gpu.stream, tx.t, tqa.t, tsfa.t, tm.t, nullptr) == DG_SUCCESS);
    REQUIRE_MESSAGE(dg_m_grouped_fp8_gemm_nt_masked(gpu.stream, tqa.t, tsfa.t, tqw.t, tsfw.t, td.t, tm.t, 64, nullptr) ==
                        DG_SUCCESS,
                    dg_last_error());
    std::vector<uint16_t> d(g * max_m * n);
    dd.download(d.data(), d.size() * 2);
    std::vector<double> ref, got;
    for (int64_t gi = 0; gi < g; ++gi) check_rows(x, d, gi * max_m, counts[gi], gi, ref, got);
    CHECK(dg::test::calc_diff(ref, got) < 2e-3);
  }
}

// ---------------------------------------------------------------- K-grouped (dg_quantize_fp8_k_grouped)
namespace {

struct KGroupedCase {
  int64_t mn = 0;
  std::vector<int64_t> ks;  // as passed (device counts may be negative or run past x)
  bool bf16 = true, pow2 = false, kmajor = false, device = false, specials = false;
  int64_t x_rows = -1;    // device: x's rows; -1: sum(ks)
  int64_t out_rows = -1;  // device: out's rows; -1: sum(align(ks, 128))
  int64_t out_gap = 0;    // MN-major: bytes past MN in each row of out (stay poison)
  int sm_cap = 0;         // > 0: a stream capped to that many SMs, so that CTAs take several blocks
};

// A stream whose config caps the SMs: the K-grouped kernel then gives each CTA several output
// blocks (up to 8), walking from group to group.
struct SmCappedStream {
  dg_stream* stream = nullptr;
  explicit SmCappedStream(int sms) {
    dg_config* cfg = nullptr;
    REQUIRE(dg_config_create(&cfg) == DG_SUCCESS);
    REQUIRE(dg_config_set_int(cfg, DG_CONFIG_NUM_SMS, sms) == DG_SUCCESS);
    REQUIRE_MESSAGE(dg_stream_create(&stream, 0, nullptr, DG_STREAM_CREATE, cfg) == DG_SUCCESS, dg_last_error());
    dg_config_destroy(cfg);
  }
  ~SmCappedStream() { dg_stream_destroy(stream); }
};

// Where each group lands as docs/quantization.md states it: counts below 0 as 0, rows cut at x's
// end, output blocks one group after another, a group that does not fit in out not written.
struct GroupPlace {
  int64_t x_row, rows, blk, blocks;
  bool written;
};
std::vector<GroupPlace> k_grouped_places(const std::vector<int64_t>& ks, int64_t x_rows, int64_t out_blocks) {
  std::vector<GroupPlace> places;
  int64_t end = 0, blk = 0;
  for (int64_t k : ks) {
    const int64_t r0 = std::min(end, x_rows);
    end += std::max<int64_t>(k, 0);
    const int64_t rows = std::min(end, x_rows) - r0, blocks = (rows + 127) / 128;
    places.push_back({r0, rows, blk, blocks, blk + blocks <= out_blocks});
    blk += blocks;
  }
  return places;
}

void run_k_grouped_case(Gpu& gpu, const KGroupedCase& c, std::mt19937& rng) {
  CAPTURE(c.mn);
  CAPTURE(c.ks.size());
  CAPTURE(c.bf16);
  CAPTURE(c.pow2);
  CAPTURE(c.kmajor);
  CAPTURE(c.device);
  CAPTURE(c.sm_cap);
  const int64_t mn = c.mn, ld_sf = align4(mn);
  int64_t sum = 0, padded = 0;
  for (int64_t k : c.ks) sum += std::max<int64_t>(k, 0), padded += (std::max<int64_t>(k, 0) + 127) / 128 * 128;
  const int64_t x_rows = c.x_rows >= 0 ? c.x_rows : sum, out_rows = c.out_rows >= 0 ? c.out_rows : padded;
  const int64_t blocks = out_rows / 128, ld_out = mn + c.out_gap;
  std::vector<float> x = wide_values(x_rows * mn, rng, c.bf16);
  if (c.specials && x_rows > 3 && mn > 3) {
    for (int64_t r = 0; r < std::min<int64_t>(x_rows, 128); ++r) x[r * mn + 1] = 0.0f;  // an all-zero block
    x[2 * mn + 2] = NAN;                                                                 // a NaN column block
    x[3 * mn + 3] = -INFINITY;                                                           // an inf one
  }
  const std::vector<uint8_t> xb = to_bytes(x, c.bf16);
  const int64_t out_bytes = c.kmajor ? mn * out_rows : out_rows * ld_out;
  Buf dx(gpu.device, xb.size() + 16), dout(gpu.device, out_bytes + 16), dsf(gpu.device, blocks * ld_sf * 4 + 16);
  Buf dks(gpu.device, c.ks.size() * 4 + 4);
  if (!xb.empty()) dx.upload(xb.data(), xb.size());
  std::vector<int32_t> ks32(c.ks.begin(), c.ks.end());
  dks.upload(ks32);
  dout.poison(kPoison);
  dsf.poison(kPoison);
  Tensor tx(dx.data(), c.bf16 ? DG_DTYPE_BFLOAT16 : DG_DTYPE_FLOAT32, {x_rows, mn});
  Tensor tout_mn(dout.data(), DG_DTYPE_FLOAT8_E4M3, {out_rows, mn}, {ld_out, 1});
  Tensor tout_k(dout.data(), DG_DTYPE_FLOAT8_E4M3, {mn * out_rows});
  Tensor tsf(dsf.data(), DG_DTYPE_FLOAT32, {mn, blocks}, {1, ld_sf});
  Tensor tks(dks.data(), DG_DTYPE_INT32, {int64_t(c.ks.size())});
  dg_quant_options o = DG_QUANT_OPTIONS_INIT;
  o.pow2_scales = c.pow2;
  std::optional<SmCappedStream> capped;
  if (c.sm_cap > 0) capped.emplace(c.sm_cap);
  dg_stream* stream = capped ? capped->stream : gpu.stream;
  const dg_status st = dg_quantize_fp8_k_grouped(stream, tx.t, c.kmajor ? tout_k.t : tout_mn.t, tsf.t,
                                                 c.device ? nullptr : c.ks.data(), int64_t(c.ks.size()),
                                                 c.device ? tks.t : nullptr, &o);
  REQUIRE_MESSAGE(st == DG_SUCCESS, dg_last_error());
  REQUIRE(dg_stream_synchronize(stream) == DG_SUCCESS);
  const std::vector<uint8_t> out = dout.download<uint8_t>();
  const std::vector<uint32_t> sf = dsf.download<uint32_t>();

  // Expected bytes and words; kind 0: untouched (poison), 1: a code or scale (NaN as NaN).
  std::vector<uint8_t> want_out(out.size(), kPoison), kind_out(out.size(), 0);
  std::vector<uint32_t> want_sf(sf.size(), 0xffffffffu);
  std::vector<uint8_t> kind_sf(sf.size(), 0);
  for (const GroupPlace& g : k_grouped_places(c.ks, x_rows, blocks)) {
    if (!g.written) continue;
    for (int64_t b = 0; b < g.blocks; ++b) {
      for (int64_t col = 0; col < ld_sf; ++col) {
        const int64_t at = (g.blk + b) * ld_sf + col;
        kind_sf[at] = 1;
        want_sf[at] = 0;  // padding columns
        if (col >= mn) continue;
        const int64_t r0 = b * 128, r1 = std::min(g.rows, r0 + 128);
        uint32_t amax = 0;
        for (int64_t r = r0; r < r1; ++r) amax = std::max(amax, bits_of(x[(g.x_row + r) * mn + col]) & 0x7fffffffu);
        const float scale = ref_scale(amax, 1e-4f, c.pow2);
        want_sf[at] = bits_of(scale);
        for (int64_t r = r0; r < r0 + 128; ++r) {
          const int64_t pos = c.kmajor ? g.blk * 128 * mn + col * g.blocks * 128 + r : (g.blk * 128 + r) * ld_out + col;
          kind_out[pos] = 1;
          want_out[pos] = r < r1 ? ref_code(x[(g.x_row + r) * mn + col], scale) : 0;
        }
      }
    }
  }
  int64_t bad_codes = 0, bad_scales = 0;
  for (size_t i = 0; i < out.size(); ++i) {
    const bool ok = kind_out[i] ? same_code(out[i], want_out[i]) : out[i] == kPoison;
    if (!ok && bad_codes++ < 5) MESSAGE("out byte ", i, ": got ", int(out[i]), " want ", int(want_out[i]));
  }
  for (size_t i = 0; i < sf.size(); ++i) {
    const bool ok = kind_sf[i] ? same_scale(from_bits(sf[i]), from_bits(want_sf[i])) : sf[i] == want_sf[i];
    if (!ok && bad_scales++ < 5) MESSAGE("sf word ", i, ": got ", from_bits(sf[i]), " want ", from_bits(want_sf[i]));
  }
  CHECK(bad_codes == 0);
  CHECK(bad_scales == 0);
}

}  // namespace

TEST_CASE("quantize K-grouped: codes and scales bit for bit, group tails, both output forms, host counts") {
  Gpu gpu;
  if (!gpu.sm90()) return;
  std::mt19937 rng(4049);
  for (const int sm_cap : {0, 1}) {
    for (const bool kmajor : {false, true}) {
      KGroupedCase c;
      c.kmajor = kmajor, c.sm_cap = sm_cap;
      c.mn = 256, c.ks = {128, 0, 300, 1, 129}, c.specials = true;
      c.out_gap = kmajor ? 0 : 16;
      run_k_grouped_case(gpu, c, rng);
      c.mn = 200, c.ks = {70, 256, 0}, c.bf16 = false, c.out_gap = kmajor ? 0 : 3;  // element-wise path: MN % 16 != 0
      run_k_grouped_case(gpu, c, rng);
      c.mn = 4096, c.ks = {1000, 2048, 37}, c.bf16 = true, c.pow2 = true, c.out_gap = 0;
      run_k_grouped_case(gpu, c, rng);
      c.mn = 5, c.ks = {3, 130}, c.pow2 = false, c.specials = false;  // fewer columns than a lane's 16
      run_k_grouped_case(gpu, c, rng);
    }
  }
}

TEST_CASE("quantize K-grouped: more groups than one launch carries (600 host counts)") {
  Gpu gpu;
  if (!gpu.sm90()) return;
  std::mt19937 rng(600);
  std::uniform_int_distribution<int> count(0, 140);
  KGroupedCase c;
  c.mn = 48;
  for (int g = 0; g < 600; ++g) c.ks.push_back(g % 9 == 4 ? 0 : count(rng));
  for (const int sm_cap : {0, 1})
    for (const bool kmajor : {false, true}) {
      c.kmajor = kmajor, c.sm_cap = sm_cap;
      run_k_grouped_case(gpu, c, rng);
    }
}

TEST_CASE("quantize K-grouped: device counts, capacities, negative counts, groups that do not fit") {
  Gpu gpu;
  if (!gpu.sm90()) return;
  std::mt19937 rng(77);
  for (const int sm_cap : {0, 1}) {
    for (const bool kmajor : {false, true}) {
      KGroupedCase c;
      c.device = true, c.kmajor = kmajor, c.sm_cap = sm_cap;
      // Exact sizes.
      c.mn = 144, c.ks = {5, 0, 513, 128};
      run_k_grouped_case(gpu, c, rng);
      // x longer than the counts, out with spare blocks (not written), a negative count.
      c.mn = 160, c.ks = {200, -7, 64}, c.x_rows = 400, c.out_rows = 1024;
      run_k_grouped_case(gpu, c, rng);
      // Counts past x's rows (cut there) and a last group that does not fit in out (not written;
      // with the SM cap a CTA walks into it from the group before).
      c.mn = 384, c.ks = {100, 300, 500}, c.x_rows = 700, c.out_rows = 640;
      run_k_grouped_case(gpu, c, rng);
    }
  }
}

TEST_CASE("quantize K-grouped: counts a multiple of 128 give dg_quantize_fp8_mn_major's bytes") {
  Gpu gpu;
  if (!gpu.sm90()) return;
  std::mt19937 rng(128);
  const int64_t mn = 384, kb = 6;
  const std::vector<int64_t> ks = {256, 0, 384, 128};
  std::vector<float> x = wide_values(kb * 128 * mn, rng, true);
  const std::vector<uint8_t> xb = to_bytes(x, true);
  Buf dx(gpu.device, xb.size()), o1(gpu.device, kb * 128 * mn), o2(gpu.device, kb * 128 * mn);
  Buf s1(gpu.device, kb * mn * 4), s2(gpu.device, kb * mn * 4);
  dx.upload(xb.data(), xb.size());
  o1.poison();
  o2.poison(0);
  s1.poison();
  s2.poison(0);
  Tensor tx(dx.data(), DG_DTYPE_BFLOAT16, {kb * 128, mn});
  Tensor t1(o1.data(), DG_DTYPE_FLOAT8_E4M3, {kb * 128, mn}), t2(o2.data(), DG_DTYPE_FLOAT8_E4M3, {kb * 128, mn});
  Tensor ts1(s1.data(), DG_DTYPE_FLOAT32, {mn, kb}, {1, mn}), ts2(s2.data(), DG_DTYPE_FLOAT32, {mn, kb}, {1, mn});
  REQUIRE(dg_quantize_fp8_mn_major(gpu.stream, tx.t, t1.t, ts1.t, nullptr) == DG_SUCCESS);
  REQUIRE(dg_quantize_fp8_k_grouped(gpu.stream, tx.t, t2.t, ts2.t, ks.data(), 4, nullptr, nullptr) == DG_SUCCESS);
  CHECK(o1.download<uint8_t>() == o2.download<uint8_t>());
  CHECK(s1.download<uint32_t>() == s2.download<uint32_t>());
}

TEST_CASE("quantize K-grouped -> K-grouped FP8 GEMMs (nt and tn) match an FP64 reference on the BF16 values") {
  Gpu gpu;
  if (!gpu.sm90()) return;
  std::mt19937 rng(2049);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  const int64_t m = 256, n = 192;
  const std::vector<int64_t> ks = {200, 0, 384, 77, 129};  // tokens per expert, not multiples of 128
  std::vector<int64_t> aligned;
  int64_t rows = 0, padded = 0;
  for (int64_t k : ks) rows += k, padded += (k + 127) / 128 * 128, aligned.push_back((k + 127) / 128 * 128);
  const int64_t g = int64_t(ks.size()), kb = padded / 128;
  std::vector<float> a(rows * m), b(rows * n);
  for (float& v : a) v = bf2f(f2bf(nd(rng)));
  for (float& v : b) v = bf2f(f2bf(nd(rng) * 0.05f));
  std::vector<double> ref(g * m * n, 0.0);
  dg::test::parallel_for(g * m, [&](int64_t gi_i) {
    const int64_t gi = gi_i / m, i = gi_i % m;
    int64_t r0 = 0;
    for (int64_t j = 0; j < gi; ++j) r0 += ks[j];
    for (int64_t j = 0; j < n; ++j) {
      double acc = 0;
      for (int64_t r = r0; r < r0 + ks[gi]; ++r) acc += double(a[r * m + i]) * b[r * n + j];
      ref[(gi * m + i) * n + j] = acc;
    }
  });
  Buf da(gpu.device, a.size() * 2), db(gpu.device, b.size() * 2), qa(gpu.device, padded * m), qb(gpu.device, padded * n);
  Buf sfa(gpu.device, kb * m * 4), sfb(gpu.device, kb * n * 4), dd(gpu.device, g * m * n * 4);
  da.upload(to_bytes(a, true));
  db.upload(to_bytes(b, true));
  Tensor ta(da.data(), DG_DTYPE_BFLOAT16, {rows, m}), tb(db.data(), DG_DTYPE_BFLOAT16, {rows, n});
  Tensor tsfa(sfa.data(), DG_DTYPE_FLOAT32, {m, kb}, {1, m}), tsfb(sfb.data(), DG_DTYPE_FLOAT32, {n, kb}, {1, n});
  Tensor td(dd.data(), DG_DTYPE_FLOAT32, {g, m, n});
  for (const bool kmajor : {true, false}) {
    CAPTURE(kmajor);
    Tensor flat_a(qa.data(), DG_DTYPE_FLOAT8_E4M3, {padded * m}), flat_b(qb.data(), DG_DTYPE_FLOAT8_E4M3, {padded * n});
    Tensor mn_a(qa.data(), DG_DTYPE_FLOAT8_E4M3, {padded, m}), mn_b(qb.data(), DG_DTYPE_FLOAT8_E4M3, {padded, n});
    qa.poison();
    qb.poison();
    sfa.poison();
    sfb.poison();
    dd.poison();
    dg_quant_options qo = DG_QUANT_OPTIONS_INIT;
    qo.pow2_scales = kmajor ? 0 : 1;
    REQUIRE_MESSAGE(dg_quantize_fp8_k_grouped(gpu.stream, ta.t, kmajor ? flat_a.t : mn_a.t, tsfa.t, ks.data(), g, nullptr,
                                              &qo) == DG_SUCCESS,
                    dg_last_error());
    REQUIRE_MESSAGE(dg_quantize_fp8_k_grouped(gpu.stream, tb.t, kmajor ? flat_b.t : mn_b.t, tsfb.t, ks.data(), g, nullptr,
                                              &qo) == DG_SUCCESS,
                    dg_last_error());
    dg_status st;
    if (kmajor) {
      st = dg_k_grouped_fp8_gemm_nt_contiguous(gpu.stream, flat_a.t, tsfa.t, flat_b.t, tsfb.t, td.t, nullptr,
                                               aligned.data(), g, nullptr, nullptr);
    } else {
      size_t ws_bytes = 0;
      REQUIRE(dg_fp8_gemm_workspace_size(DG_GEMM_LAYOUT_TN, m, n, padded, &ws_bytes) == DG_SUCCESS);
      Buf ws(gpu.device, ws_bytes);
      dg_gemm_options go = DG_GEMM_OPTIONS_INIT;
      go.workspace = ws.data();
      go.workspace_size = ws_bytes;
      st = dg_k_grouped_fp8_gemm_tn_contiguous(gpu.stream, mn_a.t, tsfa.t, mn_b.t, tsfb.t, td.t, nullptr, aligned.data(),
                                               g, nullptr, &go);
      REQUIRE(dg_stream_synchronize(gpu.stream) == DG_SUCCESS);  // before ws is freed
    }
    REQUIRE_MESSAGE(st == DG_SUCCESS, dg_last_error());
    const std::vector<float> d = dd.download<float>();
    std::vector<double> got(d.begin(), d.begin() + g * m * n);
    int64_t nonfinite = 0, nonzero_empty = 0;
    for (int64_t i = 0; i < g * m * n; ++i) nonfinite += !std::isfinite(got[i]);
    for (int64_t i = m * n; i < 2 * m * n; ++i) nonzero_empty += got[i] != 0.0;  // group 1 has no rows
    CHECK(nonfinite == 0);
    CHECK(nonzero_empty == 0);
    const double diff = dg::test::calc_diff(ref, got);
    INFO("calc_diff " << diff);
    CHECK(diff < 2e-3);  // FP8 inputs against the unquantized values, as the other quantize -> GEMM tests
  }
}

TEST_CASE("quantize K-grouped: device counts replayed from a CUDA graph with new counts") {
  Gpu gpu;
  if (!gpu.sm90()) return;
  std::mt19937 rng(31);
  const int64_t mn = 256, x_rows = 300, out_rows = 768, blocks = out_rows / 128;
  std::vector<float> x = wide_values(x_rows * mn, rng, true);
  const std::vector<uint8_t> xb = to_bytes(x, true);
  Buf dx(gpu.device, xb.size()), dout(gpu.device, mn * out_rows), dsf(gpu.device, blocks * mn * 4), dks(gpu.device, 12);
  dx.upload(xb.data(), xb.size());
  dks.upload(std::vector<int32_t>{128, 40, 0});
  Tensor tx(dx.data(), DG_DTYPE_BFLOAT16, {x_rows, mn}), tout(dout.data(), DG_DTYPE_FLOAT8_E4M3, {mn * out_rows});
  Tensor tsf(dsf.data(), DG_DTYPE_FLOAT32, {mn, blocks}, {1, mn}), tks(dks.data(), DG_DTYPE_INT32, {3});
  REQUIRE(dg_quantize_fp8_k_grouped(gpu.stream, tx.t, tout.t, tsf.t, nullptr, 3, tks.t, nullptr) == DG_SUCCESS);
  REQUIRE(dg_stream_synchronize(gpu.stream) == DG_SUCCESS);  // the kernel is loaded before capture

  void* cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  REQUIRE(cuda != nullptr);
  const auto begin = reinterpret_cast<CUresult (*)(CUstream, CUstreamCaptureMode)>(dlsym(cuda, "cuStreamBeginCapture_v2"));
  const auto end = reinterpret_cast<CUresult (*)(CUstream, CUgraph*)>(dlsym(cuda, "cuStreamEndCapture"));
  const auto instantiate =
      reinterpret_cast<CUresult (*)(CUgraphExec*, CUgraph, unsigned long long)>(dlsym(cuda, "cuGraphInstantiateWithFlags"));
  const auto graph_launch = reinterpret_cast<CUresult (*)(CUgraphExec, CUstream)>(dlsym(cuda, "cuGraphLaunch"));
  const auto exec_destroy = reinterpret_cast<CUresult (*)(CUgraphExec)>(dlsym(cuda, "cuGraphExecDestroy"));
  const auto graph_destroy = reinterpret_cast<CUresult (*)(CUgraph)>(dlsym(cuda, "cuGraphDestroy"));
  REQUIRE(bool(begin && end && instantiate && graph_launch && exec_destroy && graph_destroy));
  void* raw = nullptr;
  REQUIRE(dg_stream_get_cu_stream(gpu.stream, &raw) == DG_SUCCESS);
  const CUstream s = static_cast<CUstream>(raw);
  CUgraph graph = nullptr;
  CUgraphExec exec = nullptr;
  {
    dg::ContextScope scope;
    REQUIRE(scope.enter(*gpu.device) == DG_SUCCESS);
    REQUIRE(begin(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL) == CUDA_SUCCESS);
    const dg_status st = dg_quantize_fp8_k_grouped(gpu.stream, tx.t, tout.t, tsf.t, nullptr, 3, tks.t, nullptr);
    REQUIRE(end(s, &graph) == CUDA_SUCCESS);
    REQUIRE(st == DG_SUCCESS);
    REQUIRE(instantiate(&exec, graph, 0) == CUDA_SUCCESS);
  }
  // Replayed with new counts: 5 rows, none, then 290 rows (padded: 128 + 0 + 384 rows, 4 blocks).
  const std::vector<int64_t> counts = {5, 0, 290};
  dks.upload(std::vector<int32_t>(counts.begin(), counts.end()));
  dout.poison();
  dsf.poison();
  {
    dg::ContextScope scope;
    REQUIRE(scope.enter(*gpu.device) == DG_SUCCESS);
    REQUIRE(graph_launch(exec, s) == CUDA_SUCCESS);
  }
  REQUIRE(dg_stream_synchronize(gpu.stream) == DG_SUCCESS);
  const std::vector<uint8_t> out = dout.download<uint8_t>();
  const std::vector<float> sf = dsf.download<float>();
  int64_t bad = 0;
  for (const GroupPlace& g : k_grouped_places(counts, x_rows, blocks))
    for (int64_t b = 0; b < g.blocks; ++b)
      for (int64_t col = 0; col < mn; ++col) {
        uint32_t amax = 0;
        const int64_t r0 = b * 128, r1 = std::min(g.rows, r0 + 128);
        for (int64_t r = r0; r < r1; ++r) amax = std::max(amax, bits_of(x[(g.x_row + r) * mn + col]) & 0x7fffffffu);
        const float want = ref_scale(amax, 1e-4f, false);
        bad += !same_scale(sf[(g.blk + b) * mn + col], want);
        for (int64_t r = r0; r < r0 + 128; ++r) {
          const uint8_t got = out[g.blk * 128 * mn + col * g.blocks * 128 + r];
          bad += r < r1 ? !same_code(got, ref_code(x[(g.x_row + r) * mn + col], want)) : got != 0;
        }
      }
  for (int64_t i = 4 * 128 * mn; i < mn * out_rows; ++i) bad += out[i] != 0xff;  // past the groups: untouched
  CHECK(bad == 0);
  exec_destroy(exec);
  graph_destroy(graph);
  dlclose(cuda);
}
