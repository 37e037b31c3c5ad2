// dg-bench suite "quant": per-token 1 x 128 FP8 quantization of BF16 activations [M, K] (g > 1: a
// batch [g, M, K]) by dg_quantize_fp8_per_token, scales written MN-major TMA-aligned for the GEMMs.
// Beside it, on the same input: a per-group kernel as inference engines write it (one warp per 1 x 128
// group, scales K-major; gpu::quant_per_token), and cudaMemcpyAsync moving the same number of bytes
// (reading and writing half of them each), so that the copy's time ratio is libdg's fraction of
// the device copy rate. libdg's codes and scales must equal the per-group kernel's bit for bit
// (the same arithmetic: amax clamped at 1e-4, scale = amax / 448, codes = E4M3(x * (1 / scale))).
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench.h"
#include "gpu.h"

namespace dgb {

std::vector<Shape> quant_shapes() {
  std::vector<Shape> out;
  for (int64_t k : {7168, 2048})
    for (int64_t m : {128, 1024, 4096, 8192, 32768}) out.push_back({m, 0, k, 1});
  out.push_back({256, 0, 7168, 32});  // a decode batch of 32 experts' tokens
  return out;
}

namespace {

// libdg's [G, M, KB] MN-major scales and codes against the per-group kernel's K-major ones.
void check_against_peer(Context& ctx, const Buffer& q, const Buffer& sf, const Buffer& q_ref, const Buffer& sf_ref,
                        int64_t g, int64_t m, int64_t k, Result& res) {
  const int64_t kb = ceil_div(k, 128), rows = g * m, sf_ld = align_up(m, 4);
  std::vector<uint8_t> hq(rows * k), hq_ref(rows * k);
  std::vector<float> hsf(sf.bytes / 4), hsf_ref(rows * kb);
  DGB_CUDA(cudaStreamSynchronize(ctx.cu_stream));
  DGB_CUDA(cudaMemcpy(hq.data(), q.ptr, hq.size(), cudaMemcpyDeviceToHost));
  DGB_CUDA(cudaMemcpy(hq_ref.data(), q_ref.ptr, hq_ref.size(), cudaMemcpyDeviceToHost));
  DGB_CUDA(cudaMemcpy(hsf.data(), sf.ptr, sf.bytes, cudaMemcpyDeviceToHost));
  DGB_CUDA(cudaMemcpy(hsf_ref.data(), sf_ref.ptr, hsf_ref.size() * 4, cudaMemcpyDeviceToHost));
  int64_t bad = 0;
  for (int64_t i = 0; i < rows * k; ++i) bad += hq[i] != hq_ref[i];
  // The per-group kernel's rows are the batches' rows one after the other; libdg's batches are
  // align(M, 4) * KB scales apart, their K blocks align(M, 4) apart.
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t b = 0; b < kb; ++b) {
      const float want = hsf_ref[r * kb + b];
      const float got = hsf[(r / m) * sf_ld * kb + b * sf_ld + r % m];
      bad += std::memcmp(&want, &got, 4) != 0;
    }
  res.diff = static_cast<double>(bad);
  res.threshold = 0.5;
  res.reference = "the per-group kernel's codes and scales (exact)";
  if (bad) {
    res.status = "check_failed";
    res.message = std::to_string(bad) + " codes or scales differ";
  }
}

}  // namespace

void suite_quant(Context& ctx, const std::vector<Shape>& shapes, std::vector<Case>& out) {
  auto fn = resolve<decltype(&dg_quantize_fp8_per_token)>("dg_quantize_fp8_per_token");
  for (size_t i = 0; i < shapes.size(); ++i) {
    const Shape& s = shapes[i];
    const int64_t g = std::max<int64_t>(s.g, 1), m = s.m, k = s.k, kb = ceil_div(k, 128), rows = g * m;
    Case c = new_case("quant", s, "g=" + std::to_string(g) + " m=" + std::to_string(m) + " k=" + std::to_string(k));
    progress(c.suite, i, shapes.size(), c.label);
    Result r, naive, copy;
    r.name = "libdg";
    naive.name = "per-group kernel";
    copy.name = "cudaMemcpyAsync";
    run_case(ctx, c, r, {&naive, &copy}, out, [&] {
      Buffer x(rows * k * 2), q(rows * k), q_ref(rows * k), sf_ref(rows * kb * 4);
      const int64_t sf_ld = align_up(m, 4);
      Buffer sf(g * sf_ld * kb * 4);
      const int64_t moved = rows * k * 3 + rows * kb * 4;  // read BF16, write E4M3 and the scales
      Buffer copy_src(moved / 2 + 16), copy_dst(moved / 2 + 16);
      DGB_GPU(gpu::fill_randn_bf16(x.ptr, rows * k, ctx.next_seed(), 1.0f, ctx.cu_stream));
      if (!fn) {
        r.message = "dg_quantize_fp8_per_token is not exported by this libdg";
        throw std::logic_error("absent");
      }
      std::vector<int64_t> xs = {m, k}, ss = {m, kb}, sst = {1, sf_ld};
      if (g > 1) xs.insert(xs.begin(), g), ss.insert(ss.begin(), g), sst.insert(sst.begin(), sf_ld * kb);
      Tensor tx = make_tensor(x.ptr, DG_DTYPE_BFLOAT16, xs), tq = make_tensor(q.ptr, DG_DTYPE_FLOAT8_E4M3, xs);
      Tensor tsf = make_tensor(sf.ptr, DG_DTYPE_FLOAT32, ss, sst);
      r.bytes = naive.bytes = copy.bytes = static_cast<double>(moved);
      Call call = [&](int) { return dg_error(fn(ctx.stream, tx.get(), tq.get(), tsf.get(), nullptr)); };
      Call per_group = [&](int) {
        const int e = gpu::quant_per_token(x.ptr, rows, k, q_ref.ptr, sf_ref.as<float>(), ctx.cu_stream);
        return e == 0 ? std::string() : std::string(cudaGetErrorString(static_cast<cudaError_t>(e)));
      };
      run_contender(ctx, naive, per_group, 1, q_ref.ptr, q_ref.bytes, [](Result&) {});
      run_contender(ctx, r, call, 1, q.ptr, q.bytes, [&](Result& res) {
        check_against_peer(ctx, q, sf, q_ref, sf_ref, g, m, k, res);
      });
      time_copy_contender(ctx, copy, copy_dst.ptr, copy_src.ptr, size_t(moved / 2));
      time_case(ctx);
    });
  }
}

}  // namespace dgb
