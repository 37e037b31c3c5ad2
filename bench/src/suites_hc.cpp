// dg-bench suite "hc-prenorm": dg_tf32_hc_prenorm_gemm (DeepGEMM's tf32_hc_prenorm_gemm) on the
// shapes of DeepGEMM's test: BF16 A [M, K], FP32 B [N, K], D [splits, M, N] and the row sums of
// squares, g carrying num_splits (1: no split). The kernel is bound by reading A once, so beside it:
//   read             a plain streaming read of the same bytes (the bench's read kernel, 4 blocks per
//                    SM of 512 threads): the floor for a kernel that only reads them;
//   cudaMemcpyAsync  a device copy moving as many bytes (reading and writing half of them each).
// Each contender's bytes are libdg's (A, B, D and S), so t/t_dg of the read row is libdg's fraction
// of the read rate and of the copy row its fraction of the device copy rate. libdg's D and S are
// checked against an FP64 reference of every split's partial sums (calc_diff < 1e-6).
#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench.h"
#include "gpu.h"

namespace dgb {

std::vector<Shape> hc_prenorm_shapes() {
  std::vector<Shape> out;
  for (int64_t m : {13, 137, 4096, 8192, 16384})
    for (int64_t k : {28672, 7680, 7168})
      for (int64_t splits : {1, 16}) out.push_back({m, 24, k, splits});
  return out;
}

namespace {

constexpr int kChunk = 32;             // dg.h's split granularity
constexpr double kCheckDiff = 1e-6;    // calc_diff against FP64 (B rounded to TF32: about 1e-8)
constexpr unsigned kReadBlock = 512;
constexpr unsigned kReadBlocksPerSm = 4;

// libdg's D and S against the FP64 reference of every split.
void check(Context& ctx, const Buffer& d, const Buffer& s, const Buffer& ref_d, const Buffer& ref_s, int64_t rows,
           int64_t n, Result& res) {
  int64_t bad_d = 0, bad_s = 0;
  const double dd = device_diff(ctx, d.ptr, gpu::kF32, n, ref_d.ptr, gpu::kF32, n, rows, n, &bad_d);
  const double ds = device_diff(ctx, s.ptr, gpu::kF32, 1, ref_s.ptr, gpu::kF32, 1, rows, 1, &bad_s);
  record_check(&res, dd > ds ? dd : ds, bad_d + bad_s, kCheckDiff, "FP64 per-split sums (D and S)");
}

}  // namespace

void suite_hc_prenorm(Context& ctx, const std::vector<Shape>& shapes, std::vector<Case>& out) {
  auto fn = resolve<decltype(&dg_tf32_hc_prenorm_gemm)>("dg_tf32_hc_prenorm_gemm");
  for (size_t i = 0; i < shapes.size(); ++i) {
    const Shape& sh = shapes[i];
    const int64_t m = sh.m, n = sh.n, k = sh.k, splits = sh.g > 1 ? sh.g : 1;
    Case c = new_case("hc-prenorm", sh,
                      "m=" + std::to_string(m) + " n=" + std::to_string(n) + " k=" + std::to_string(k) +
                          " splits=" + (sh.g > 1 ? std::to_string(splits) : std::string("none")));
    progress(c.suite, i, shapes.size(), c.label);
    Result r, rd, copy;
    r.name = "libdg";
    rd.name = "read";
    copy.name = "cudaMemcpyAsync";
    run_case(ctx, c, r, {&rd, &copy}, out, [&] {
      const int64_t rows = splits * m;
      Buffer a(m * k * 2), b(n * k * 4), d(rows * n * 4), s(rows * 4), ref_d(rows * n * 4), ref_s(rows * 4);
      DGB_GPU(gpu::fill_randn_bf16(a.ptr, m * k, ctx.next_seed(), 1.0f, ctx.cu_stream));
      DGB_GPU(gpu::fill_randn_f32(b.ptr, n * k, ctx.next_seed(), 1.0f, ctx.cu_stream));
      const int64_t chunks = ceil_div(k, kChunk), cps = std::max<int64_t>(1, ceil_div(chunks, splits));
      DGB_GPU(gpu::hc_prenorm_ref(a.ptr, b.as<float>(), m, n, k, splits, cps, ref_d.as<float>(), ref_s.as<float>(),
                                  ctx.cu_stream));
      const int64_t moved = m * k * 2 + n * k * 4 + rows * (n + 1) * 4;
      r.bytes = rd.bytes = copy.bytes = static_cast<double>(moved);
      r.flops = 2.0 * m * n * k;
      Buffer copy_src(moved / 2 + 16), copy_dst(moved / 2 + 16), read_sums(size_t(ctx.dev.sm_count) * kReadBlocksPerSm * 4);
      if (!fn) {
        r.message = "dg_tf32_hc_prenorm_gemm is not exported by this libdg";
        throw std::logic_error("absent");
      }
      std::vector<int64_t> ds = {m, n}, ss = {m};
      if (sh.g > 1) ds.insert(ds.begin(), splits), ss.insert(ss.begin(), splits);
      Tensor ta = make_tensor(a.ptr, DG_DTYPE_BFLOAT16, {m, k}), tb = make_tensor(b.ptr, DG_DTYPE_FLOAT32, {n, k});
      Tensor td = make_tensor(d.ptr, DG_DTYPE_FLOAT32, ds), ts = make_tensor(s.ptr, DG_DTYPE_FLOAT32, ss);
      const int32_t num_splits = sh.g > 1 ? static_cast<int32_t>(splits) : 0;
      Call call = [&](int) { return dg_error(fn(ctx.stream, ta.get(), tb.get(), td.get(), ts.get(), num_splits)); };
      run_contender(ctx, r, call, 1, d.ptr, d.bytes, [&](Result& res) { check(ctx, d, s, ref_d, ref_s, rows, n, res); });
      const std::vector<gpu::ReadRange> ranges = {{a.ptr, m * k * 2}, {b.ptr, n * k * 4}};
      const unsigned grid = static_cast<unsigned>(ctx.dev.sm_count) * kReadBlocksPerSm;
      Call read_call = [&, grid](int) {
        const int e = gpu::stream_read(ranges.data(), static_cast<int>(ranges.size()), grid, kReadBlock,
                                       read_sums.as<uint32_t>(), ctx.cu_stream);
        return e == 0 ? std::string() : std::string("stream_read: ") + gpu::error_string(e);
      };
      run_contender(ctx, rd, read_call, 1, nullptr, 0, [](Result&) {});
      rd.config = "grid=" + std::to_string(grid) + " block=" + std::to_string(kReadBlock);
      time_copy_contender(ctx, copy, copy_dst.ptr, copy_src.ptr, size_t(moved / 2));
      time_case(ctx);
    });
  }
}

}  // namespace dgb
