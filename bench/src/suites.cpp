// dg-bench suites: copy (the bandwidth roofline), layout (SF transposes), dense BF16 / FP8 GEMMs
// beside cuBLASLt, and the NVFP4 GEMV. Kernel entry points are looked up with dlsym at run time,
// and only compiled in when dg.h declares them, so a suite whose kernel is missing reports
// "absent" instead of failing to build or link.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <stdexcept>

#include "bench.h"
#include "gpu.h"
#include "peers.h"

namespace dgb {

// Poisons the output, makes the first (cold) call, checks it, and queues the call for time_case.
void run_contender(Context& ctx, Result& r, const Call& call, int nsets, void* poison, size_t poison_bytes,
                   const std::function<void(Result&)>& check) {
  try {
    if (poison) DGB_CUDA(cudaMemsetAsync(poison, 0xff, poison_bytes, ctx.cu_stream));
    if (!first_call(ctx, call, &r)) return;
    check(r);
    ctx.pending.push_back(Timed{r.name, call, nsets, false, Result{}});
  } catch (const std::exception& e) {
    r.status = "error";
    r.message = e.what();
  }
}

// The device copy of `bytes` from src to dst as a contender (no output check): the roofline peer
// of suites whose time is bound by memory traffic. The buffers must live until time_case.
void time_copy_contender(Context& ctx, Result& r, void* dst, const void* src, size_t bytes) {
  const cudaStream_t stream = ctx.cu_stream;
  Call copy = [dst, src, bytes, stream](int) {
    const cudaError_t e = cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream);
    return e == cudaSuccess ? std::string() : std::string("cudaMemcpyAsync: ") + cudaGetErrorString(e);
  };
  run_contender(ctx, r, copy, 1, nullptr, 0, [](Result&) {});
}

Case new_case(const char* suite, const Shape& s, std::string label) {
  Case c;
  c.suite = suite;
  c.shape = s;
  c.label = std::move(label);
  return c;
}

void time_case(Context& ctx) {
  measure(ctx, ctx.pending);
  for (Timed& t : ctx.pending) t.call = nullptr;
}

void finish(Context& ctx, Case& c, std::vector<Case>& out) {
  for (const Timed& t : ctx.pending)
    for (Result& r : c.results)
      if (r.name == t.name && t.timed) {
        r.us = t.out.us;
        r.host_us = t.out.host_us;
        r.host_valid = t.out.host_valid;
        if (t.out.status == "error") {
          r.status = "error";
          r.message = t.out.message;
        } else if (r.status != "check_failed") {
          r.status = "ok";
        }
      }
  ctx.pending.clear();
  print_case(c);
  out.push_back(std::move(c));
}

#ifdef DG_GEMM_OPTIONS_INIT
void apply_gemm_config(const GemmConfigArg& g, dg_gemm_options* o) {
  o->block_m = static_cast<int32_t>(g.block_m);
  o->block_n = static_cast<int32_t>(g.block_n);
  o->num_stages = static_cast<int32_t>(g.stages);
  o->cluster = static_cast<int32_t>(g.cluster);
  o->multicast_a = static_cast<int32_t>(g.multicast_a);
  o->num_math_warpgroups = static_cast<int32_t>(g.math_wg);
  o->num_sms = static_cast<int32_t>(g.num_sms);
  o->fp8_promotion = static_cast<int32_t>(g.promotion);
  o->fp8_promotion_slices = static_cast<int32_t>(g.slices);
  o->split_k = static_cast<int32_t>(g.split_k);
  o->kernel = static_cast<int32_t>(g.kernel);
}
#endif

// ---- copy ----------------------------------------------------------------------------------------

void suite_copy(Context& ctx, const std::vector<Shape>& shapes, std::vector<Case>& out) {
  for (size_t i = 0; i < shapes.size(); ++i) {
    const int64_t bytes = align_up(std::max<int64_t>(shapes[i].m, 4), 4);
    Case c = new_case("copy", shapes[i], std::to_string(bytes >> 20) + " MiB");
    progress(c.suite, i, shapes.size(), c.label);
    Result r;
    r.name = "cudaMemcpyAsync";
    r.bytes = 2.0 * static_cast<double>(bytes);  // read + write
    try {
      Buffer src(bytes), dst(bytes);
      DGB_GPU(gpu::fill_randn_f32(src.ptr, bytes / 4, ctx.next_seed(), 1.0f, ctx.cu_stream));
      Call call = [&](int) {
        const cudaError_t e = cudaMemcpyAsync(dst.ptr, src.ptr, bytes, cudaMemcpyDeviceToDevice, ctx.cu_stream);
        return e == cudaSuccess ? std::string() : std::string("cudaMemcpyAsync: ") + cudaGetErrorString(e);
      };
      run_contender(ctx, r, call, 1, dst.ptr, dst.bytes, [&](Result& res) {
        int64_t bad = 0;
        const double d = device_diff(ctx, dst.ptr, gpu::kF32, bytes / 4, src.ptr, gpu::kF32, bytes / 4, 1, bytes / 4, &bad);
        record_check(&res, d, bad, 1e-12, "source buffer");
      });
      time_case(ctx);
    } catch (const std::exception& e) {
      r.status = "error";
      r.message = e.what();
    }
    c.results.push_back(r);
    finish(ctx, c, out);
  }
}

// ---- layout ----------------------------------------------------------------------------------------

void suite_layout(Context& ctx, const std::vector<Shape>& shapes, std::vector<Case>& out) {
  auto fn = resolve<decltype(&dg_get_mn_major_tma_aligned_tensor)>("dg_get_mn_major_tma_aligned_tensor");
  auto fn_layout =
      resolve<decltype(&dg_get_mn_major_tma_aligned_tensor_layout)>("dg_get_mn_major_tma_aligned_tensor_layout");
  for (size_t i = 0; i < shapes.size(); ++i) {
    const Shape& s = shapes[i];
    const int64_t mn = s.m, g = s.g, sfk = ceil_div(std::max<int64_t>(s.k, 1), 128);
    Case c = new_case("layout", s,
                      "g=" + std::to_string(g) + " mn=" + std::to_string(mn) + " sf_k=" + std::to_string(sfk));
    progress(c.suite, i, shapes.size(), c.label);
    Result r, peer;
    r.name = "libdg";
    peer.name = "cudaMemcpyAsync";
    run_case(ctx, c, r, {&peer}, out, [&] {
      if (!fn || !fn_layout) {
        r.message = "dg_get_mn_major_tma_aligned_tensor is not exported by this libdg";
        throw std::logic_error("absent");
      }
      const int rank = g > 1 ? 3 : 2;
      std::vector<int64_t> sizes = rank == 3 ? std::vector<int64_t>{g, mn, sfk} : std::vector<int64_t>{mn, sfk};
      int64_t out_sizes[DG_MAX_RANK] = {}, out_strides[DG_MAX_RANK] = {};
      size_t out_bytes = 0;
      const dg_status ls = fn_layout(rank, sizes.data(), out_sizes, out_strides, &out_bytes);
      if (ls != DG_SUCCESS) throw std::runtime_error("dg_get_mn_major_tma_aligned_tensor_layout: " + dg_error(ls));
      const int64_t in_elems = g * mn * sfk;
      Buffer in(in_elems * 4), outb(out_bytes), scratch(in_elems * 4);
      DGB_GPU(gpu::fill_randn_f32(in.ptr, in_elems, ctx.next_seed(), 1.0f, ctx.cu_stream));
      Tensor tin = make_tensor(in.ptr, DG_DTYPE_FLOAT32, sizes);
      Tensor tout = make_tensor(outb.ptr, DG_DTYPE_FLOAT32, std::vector<int64_t>(out_sizes, out_sizes + rank),
                                std::vector<int64_t>(out_strides, out_strides + rank));
      r.bytes = static_cast<double>(in_elems * 4 + static_cast<int64_t>(out_bytes));
      Call call = [&](int) { return dg_error(fn(ctx.stream, tin.get(), tout.get())); };
      run_contender(ctx, r, call, 1, outb.ptr, outb.bytes, [&](Result& res) {
        std::vector<float> hin(in_elems), hout(out_bytes / 4);
        DGB_CUDA(cudaMemcpy(hin.data(), in.ptr, in_elems * 4, cudaMemcpyDeviceToHost));
        DGB_CUDA(cudaMemcpy(hout.data(), outb.ptr, out_bytes, cudaMemcpyDeviceToHost));
        const int64_t s0 = rank == 3 ? out_strides[0] : 0, s1 = out_strides[rank - 2], s2 = out_strides[rank - 1];
        int64_t bad = 0;
        for (int64_t gi = 0; gi < g; ++gi)
          for (int64_t x = 0; x < mn; ++x)
            for (int64_t kb = 0; kb < sfk; ++kb) {
              const float want = hin[(gi * mn + x) * sfk + kb];
              const float got = hout[gi * s0 + x * s1 + kb * s2];
              if (std::memcmp(&want, &got, 4) != 0) ++bad;
            }
        // diff = mismatching elements: an exact copy is required.
        res.diff = static_cast<double>(bad);
        res.threshold = 0.5;
        res.reference = "the input, element by element (exact)";
        if (bad) {
          res.status = "check_failed";
          res.message = std::to_string(bad) + " of " + std::to_string(in_elems) + " elements differ";
        }
      });
      // Roofline peer: copying the input's bytes once.
      peer.bytes = 2.0 * in_elems * 4;
      time_copy_contender(ctx, peer, scratch.ptr, in.ptr, size_t(in_elems) * 4);
      time_case(ctx);
    });
  }
}

// ---- dense GEMMs -----------------------------------------------------------------------------------

namespace {

struct DenseSet {
  Buffer a, b;            // BF16 inputs (FP8 suite: only set 0 keeps them, for the reference)
  Buffer aq, bq;          // E4M3
  Buffer sfa, sfb;        // FP32 row-major [M, KB], [NB, KB]
  Buffer sfa_dg;          // libdg: MN-major, TMA-aligned [M, KB] with stride (1, align(M, 4))
  Buffer sfa_lt, sfb_lt;  // cuBLASLt block-scaled layouts
  Tensor ta, tb, taq, tbq, tsfa_dg, tsfb;
};

}  // namespace

void suite_dense(Context& ctx, bool fp8, const std::vector<Shape>& shapes, std::vector<Case>& out) {
  const char* suite = fp8 ? "dense-fp8" : "dense-bf16";
#ifdef DG_GEMM_OPTIONS_INIT
  auto fn_bf16 = resolve<decltype(&dg_bf16_gemm_nt)>("dg_bf16_gemm_nt");
  auto fn_fp8 = resolve<decltype(&dg_fp8_gemm_nt)>("dg_fp8_gemm_nt");
  const char* libdg_absent = (fp8 ? fn_fp8 == nullptr : fn_bf16 == nullptr)
                                 ? (fp8 ? "dg_fp8_gemm_nt is not exported by this libdg"
                                        : "dg_bf16_gemm_nt is not exported by this libdg")
                                 : nullptr;
#else
  const char* libdg_absent = "dg.h declared no GEMM (dg_gemm_options) when dg-bench was built";
#endif
  const bool lt_ok = dg_cublaslt_available() == DG_SUCCESS;
  const std::string lt_why = lt_ok ? "" : dg_last_error();
  BlockScaledFp8 block;
  std::string block_why;
  const bool block_loaded = fp8 && ctx.opts.peers && block.load(&block_why);

  for (size_t ci = 0; ci < shapes.size(); ++ci) {
    const Shape& s = shapes[ci];
    const int64_t M = s.m, N = s.n, K = s.k, KB = ceil_div(K, 128), NB = ceil_div(N, 128);
    Case c = new_case(suite, s, to_string(s));
    progress(suite, ci, shapes.size(), c.label);
    try {
      const double input_bytes = fp8 ? static_cast<double>(M * K + N * K) : 2.0 * (M * K + N * K);
      const int nsets = input_bytes < 2.0 * ctx.dev.l2_bytes ? 4 : 1;  // rotate inputs that would fit in L2
      std::vector<DenseSet> sets(nsets);
      for (int si = 0; si < nsets; ++si) {
        DenseSet& d = sets[si];
        d.a = Buffer(M * K * 2);
        d.b = Buffer(N * K * 2);
        DGB_GPU(gpu::fill_randn_bf16(d.a.ptr, M * K, ctx.next_seed(), 1.0f, ctx.cu_stream));
        DGB_GPU(gpu::fill_randn_bf16(d.b.ptr, N * K, ctx.next_seed(), 1.0f, ctx.cu_stream));
        d.ta = make_tensor(d.a.ptr, DG_DTYPE_BFLOAT16, {M, K});
        d.tb = make_tensor(d.b.ptr, DG_DTYPE_BFLOAT16, {N, K});
        if (!fp8) continue;
        d.aq = Buffer(M * K);
        d.bq = Buffer(N * K);
        d.sfa = Buffer(M * KB * 4);
        d.sfb = Buffer(NB * KB * 4);
        DGB_GPU(gpu::quant_per_token(d.a.ptr, M, K, d.aq.ptr, d.sfa.as<float>(), ctx.cu_stream));
        DGB_GPU(gpu::quant_per_block(d.b.ptr, N, K, d.bq.ptr, d.sfb.as<float>(), ctx.cu_stream));
        const int64_t am = align_up(M, 4);
        d.sfa_dg = Buffer(am * KB * 4);
        DGB_CUDA(cudaMemsetAsync(d.sfa_dg.ptr, 0, d.sfa_dg.bytes, ctx.cu_stream));
        DGB_GPU(gpu::copy2d_f32(d.sfa_dg.as<float>(), 1, am, d.sfa.as<float>(), KB, 1, M, KB, ctx.cu_stream));
        d.sfa_lt = Buffer(am * KB * 4);
        DGB_CUDA(cudaMemsetAsync(d.sfa_lt.ptr, 0, d.sfa_lt.bytes, ctx.cu_stream));
        DGB_GPU(gpu::copy2d_f32(d.sfa_lt.as<float>(), 1, M, d.sfa.as<float>(), KB, 1, M, KB, ctx.cu_stream));
        const int64_t l4 = BlockScaledFp8::sfb_ld(K);
        d.sfb_lt = Buffer(NB * l4 * 4);
        DGB_CUDA(cudaMemsetAsync(d.sfb_lt.ptr, 0, d.sfb_lt.bytes, ctx.cu_stream));
        DGB_GPU(gpu::copy2d_f32(d.sfb_lt.as<float>(), l4, 1, d.sfb.as<float>(), KB, 1, NB, KB, ctx.cu_stream));
        d.taq = make_tensor(d.aq.ptr, DG_DTYPE_FLOAT8_E4M3, {M, K});
        d.tbq = make_tensor(d.bq.ptr, DG_DTYPE_FLOAT8_E4M3, {N, K});
        d.tsfa_dg = make_tensor(d.sfa_dg.ptr, DG_DTYPE_FLOAT32, {M, KB}, {1, am});
        d.tsfb = make_tensor(d.sfb.ptr, DG_DTYPE_FLOAT32, {NB, KB});
        if (si > 0) {  // only set 0's BF16 values feed the reference
          d.a = Buffer();
          d.b = Buffer();
          d.ta.reset();
          d.tb.reset();
        }
      }
      Buffer dbuf(M * N * 2), ref(M * N * 4);
      Tensor td = make_tensor(dbuf.ptr, DG_DTYPE_BFLOAT16, {M, N});
      Tensor tref = make_tensor(ref.ptr, DG_DTYPE_FLOAT32, {M, N});
      dg_cublaslt_options lt = DG_CUBLASLT_OPTIONS_INIT;
      lt.workspace = ctx.workspace.ptr;
      lt.workspace_size = ctx.workspace.bytes;

      // Reference: FP32 product of the unquantised BF16 inputs (docs/README.md#how-results-are-checked),
      // by cuBLASLt.
      std::string ref_error = lt_ok ? dg_error(dg_cublaslt_gemm_nt(ctx.stream, sets[0].ta.get(), sets[0].tb.get(),
                                                                  tref.get(), nullptr, &lt))
                                    : "cuBLASLt unavailable: " + lt_why;
      const std::string ref_name = "cuBLASLt FP32 product of the BF16 inputs";
      auto check_against = [&](const void* x, const void* y, double thr, const std::string& name) {
        return [&ctx, x, y, thr, name, M, N, &ref_error](Result& r) {
          if (!ref_error.empty()) {
            r.reference = "none";
            r.message = "not checked: " + ref_error;
            return;
          }
          int64_t bad = 0;
          const double diff = device_diff(ctx, x, gpu::kBF16, N, y, gpu::kF32, N, M, N, &bad);
          record_check(&r, diff, bad, thr, name);
        };
      };

      GemmBytes gb;
      gb.a_elem = gb.b_elem = fp8 ? 1 : 2;
      gb.sfa_per_token = gb.sfb_per_block = fp8;
      const double flops = gemm_flops(M, N, K);
      const double peak = fp8 ? ctx.dev.peak_fp8 : ctx.dev.peak_bf16;

      // libdg
      Result dg;
      dg.name = "libdg";
      dg.flops = flops, dg.bytes = gemm_bytes(M, N, K, gb), dg.peak_tflops = peak;
      if (libdg_absent) {
        dg.message = libdg_absent;
      } else {
#ifdef DG_GEMM_OPTIONS_INIT
        const dg_gemm_options go = DG_GEMM_OPTIONS_INIT;
        auto run_libdg = [&](Result& r, const dg_gemm_options& opts) {
          Call call = [&, opts](int set) {
            DenseSet& d = sets[set];
            return fp8 ? dg_error(fn_fp8(ctx.stream, d.taq.get(), d.tsfa_dg.get(), d.tbq.get(), d.tsfb.get(), td.get(),
                                         nullptr, &opts))
                       : dg_error(fn_bf16(ctx.stream, d.ta.get(), d.tb.get(), td.get(), nullptr, &opts));
          };
          run_contender(ctx, r, call, nsets, dbuf.ptr, dbuf.bytes,
                        check_against(dbuf.ptr, ref.ptr, fp8 ? 1e-3 : 1e-5, ref_name));
        };
        run_libdg(dg, go);
        c.results.push_back(dg);
        for (const GemmConfigArg& g : ctx.opts.gemm_configs) {
          Result r;
          r.name = "libdg[" + g.text + "]";
          r.flops = dg.flops, r.bytes = dg.bytes, r.peak_tflops = peak;
          dg_gemm_options o = go;
          apply_gemm_config(g, &o);
          run_libdg(r, o);
          c.results.push_back(r);
        }
#endif
      }
      if (libdg_absent) c.results.push_back(dg);

      if (!ctx.opts.peers) {
        time_case(ctx);
        finish(ctx, c, out);
        continue;
      }
      if (!fp8) {
        Result p;
        p.name = "cublaslt-bf16";
        p.flops = flops, p.bytes = gemm_bytes(M, N, K, gb), p.peak_tflops = peak;
        if (!lt_ok) {
          p.message = lt_why;
        } else {
          Call call = [&](int set) {
            return dg_error(dg_cublaslt_gemm_nt(ctx.stream, sets[set].ta.get(), sets[set].tb.get(), td.get(), nullptr, &lt));
          };
          run_contender(ctx, p, call, nsets, dbuf.ptr, dbuf.bytes, check_against(dbuf.ptr, ref.ptr, 1e-5, ref_name));
        }
        c.results.push_back(p);
      } else {
        // cuBLASLt FP8 without scales: checked against the FP32 product of the FP8 values as BF16.
        Result p;
        p.name = "cublaslt-fp8-noscale";
        GemmBytes raw = gb;
        raw.sfa_per_token = raw.sfb_per_block = false;
        p.flops = flops, p.bytes = gemm_bytes(M, N, K, raw), p.peak_tflops = peak;
        if (!lt_ok) {
          p.message = lt_why;
        } else {
          Buffer a16(M * K * 2), b16(N * K * 2), ref_raw(M * N * 4);
          DGB_GPU(gpu::fp8_to_bf16(sets[0].aq.ptr, a16.ptr, M * K, ctx.cu_stream));
          DGB_GPU(gpu::fp8_to_bf16(sets[0].bq.ptr, b16.ptr, N * K, ctx.cu_stream));
          Tensor ta16 = make_tensor(a16.ptr, DG_DTYPE_BFLOAT16, {M, K});
          Tensor tb16 = make_tensor(b16.ptr, DG_DTYPE_BFLOAT16, {N, K});
          Tensor traw = make_tensor(ref_raw.ptr, DG_DTYPE_FLOAT32, {M, N});
          std::string raw_error =
              dg_error(dg_cublaslt_gemm_nt(ctx.stream, ta16.get(), tb16.get(), traw.get(), nullptr, &lt));
          Call call = [&](int set) {
            return dg_error(dg_cublaslt_gemm_nt(ctx.stream, sets[set].taq.get(), sets[set].tbq.get(), td.get(), nullptr, &lt));
          };
          run_contender(ctx, p, call, nsets, dbuf.ptr, dbuf.bytes, [&](Result& r) {
            if (!raw_error.empty()) {
              r.reference = "none";
              r.message = "not checked: " + raw_error;
              return;
            }
            int64_t bad = 0;
            const double diff = device_diff(ctx, dbuf.ptr, gpu::kBF16, N, ref_raw.ptr, gpu::kF32, N, M, N, &bad);
            record_check(&r, diff, bad, 1e-5, "cuBLASLt FP32 product of the unscaled FP8 values (as BF16)");
          });
        }
        c.results.push_back(p);

        Result q;
        q.name = "cublaslt-fp8-block";
        q.flops = flops, q.bytes = gemm_bytes(M, N, K, gb), q.peak_tflops = peak;
        std::string why = block_why;
        if (block_loaded && block.prepare(M, N, K, ctx.workspace.ptr, ctx.workspace.bytes, &why)) {
          Call call = [&](int set) {
            DenseSet& d = sets[set];
            return block.run(d.aq.ptr, d.sfa_lt.as<float>(), d.bq.ptr, d.sfb_lt.as<float>(), dbuf.ptr, ctx.cu_stream);
          };
          run_contender(ctx, q, call, nsets, dbuf.ptr, dbuf.bytes, check_against(dbuf.ptr, ref.ptr, 1e-3, ref_name));
        } else {
          q.message = why;
        }
        c.results.push_back(q);
      }
      time_case(ctx);
    } catch (const std::exception& e) {
      c.note = std::string("case failed: ") + e.what();
    }
    finish(ctx, c, out);
  }
}

// ---- NVFP4 GEMV -----------------------------------------------------------------------------------

namespace {

float e2m1(int code) {
  static const float mag[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
  return (code & 8) ? -mag[code & 7] : mag[code & 7];
}

// The integer after " key=" in a DG_PRINT_CONFIGS line; -1 when absent.
int64_t config_value(const std::string& line, const std::string& key) {
  const size_t at = line.find(" " + key + "=");
  if (at == std::string::npos) return -1;
  return std::strtoll(line.c_str() + at + key.size() + 2, nullptr, 10);
}

float half_to_float(uint16_t h) {
  const int sign = h >> 15, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
  float v;
  if (exp == 0) v = std::ldexp(static_cast<float>(man), -24);
  else if (exp == 31) v = man ? NAN : INFINITY;
  else v = std::ldexp(1.0f + man / 1024.0f, exp - 15);
  return sign ? -v : v;
}

}  // namespace

void suite_nvfp4_gemv(Context& ctx, const std::vector<Shape>& shapes, std::vector<Case>& out) {
#ifdef DG_NVFP4_GEMV_OPTIONS_INIT
  auto fn = resolve<decltype(&dg_nvfp4_gemv)>("dg_nvfp4_gemv");
#else
  void* fn = nullptr;
#endif
  for (size_t ci = 0; ci < shapes.size(); ++ci) {
    const Shape& s = shapes[ci];
    const int64_t M = s.m, K = s.k, L = s.g, Np = 128;  // n is ignored: a GEMV
    Case c = new_case("nvfp4-gemv", s, "m=" + std::to_string(M) + " k=" + std::to_string(K) + " l=" + std::to_string(L));
    progress(c.suite, ci, shapes.size(), c.label);
    Result r;
    r.name = "libdg";
    const double a_bytes = static_cast<double>(M) * K / 2 * L, sfa_bytes = static_cast<double>(M) * K / 16 * L;
    r.bytes = a_bytes + sfa_bytes + static_cast<double>(K) / 2 * L + static_cast<double>(K) / 16 * L + 2.0 * M * L;
    r.flops = 2.0 * M * K * L;
    if (!fn) {
      r.message = "dg_nvfp4_gemv is not available in this libdg";
      c.results.push_back(r);
    } else {
#ifdef DG_NVFP4_GEMV_OPTIONS_INIT
      try {
        if (K % 32 != 0) throw std::runtime_error("K must be a multiple of 32");
        std::mt19937_64 rng(ctx.next_seed());
        auto rand_bytes = [&](std::vector<uint8_t>& v) {
          for (auto& x : v) x = static_cast<uint8_t>(rng());
        };
        // Scales: positive E4M3 in [2^-2, 2^2) so that sums stay well inside FP16.
        auto rand_scales = [&](std::vector<uint8_t>& v) {
          for (auto& x : v) x = static_cast<uint8_t>(((5 + rng() % 4) << 3) | (rng() % 8));
        };
        std::vector<uint8_t> ha(M * K / 2 * L), hsfa(M * K / 16 * L), hb(Np * K / 2 * L), hsfb(Np * K / 16 * L);
        rand_bytes(ha), rand_bytes(hb), rand_scales(hsfa), rand_scales(hsfb);
        Buffer a(ha.size()), sfa(hsfa.size()), b(hb.size()), sfb(hsfb.size()), cbuf(M * L * 2);
        DGB_CUDA(cudaMemcpy(a.ptr, ha.data(), ha.size(), cudaMemcpyHostToDevice));
        DGB_CUDA(cudaMemcpy(sfa.ptr, hsfa.data(), hsfa.size(), cudaMemcpyHostToDevice));
        DGB_CUDA(cudaMemcpy(b.ptr, hb.data(), hb.size(), cudaMemcpyHostToDevice));
        DGB_CUDA(cudaMemcpy(sfb.ptr, hsfb.data(), hsfb.size(), cudaMemcpyHostToDevice));
        const int64_t K2 = K / 2, K16 = K / 16;
        Tensor ta = make_tensor(a.ptr, DG_DTYPE_FLOAT4_E2M1X2, {M, K2, L}, {K2, 1, M * K2});
        Tensor tsfa = make_tensor(sfa.ptr, DG_DTYPE_FLOAT8_E4M3, {M, K16, L}, {K16, 1, M * K16});
        Tensor tb = make_tensor(b.ptr, DG_DTYPE_FLOAT4_E2M1X2, {Np, K2, L}, {K2, 1, Np * K2});
        Tensor tsfb = make_tensor(sfb.ptr, DG_DTYPE_FLOAT8_E4M3, {Np, K16, L}, {K16, 1, Np * K16});
        Tensor tc = make_tensor(cbuf.ptr, DG_DTYPE_FLOAT16, {M, 1, L}, {1, 1, M});
        auto check = [&](Result& res) {
          std::vector<uint16_t> hc(M * L);
          DGB_CUDA(cudaMemcpy(hc.data(), cbuf.ptr, hc.size() * 2, cudaMemcpyDeviceToHost));
          std::vector<double> got(M * L), want(M * L);
          int64_t not_close = 0, nonfinite = 0;
          for (int64_t l = 0; l < L; ++l) {
            std::vector<double> bv(K);
            for (int64_t k = 0; k < K; ++k) {
              const uint8_t byte = hb[l * Np * K2 + k / 2];
              bv[k] = e2m1((k % 2) ? byte >> 4 : byte & 15) * e4m3_to_float(hsfb[l * Np * K16 + k / 16]);
            }
            for (int64_t m = 0; m < M; ++m) {
              double acc = 0;
              const uint8_t* row = &ha[l * M * K2 + m * K2];
              const uint8_t* srow = &hsfa[l * M * K16 + m * K16];
              for (int64_t k16 = 0; k16 < K16; ++k16) {
                double blk = 0;
                for (int64_t j = 0; j < 16; ++j) {
                  const int64_t k = k16 * 16 + j;
                  blk += e2m1((k % 2) ? row[k / 2] >> 4 : row[k / 2] & 15) * bv[k];
                }
                acc += blk * e4m3_to_float(srow[k16]);
              }
              const double g = half_to_float(hc[l * M + m]);
              got[l * M + m] = g, want[l * M + m] = acc;
              if (!std::isfinite(g)) ++nonfinite;
              else if (std::fabs(g - acc) > 1e-3 + 1e-3 * std::fabs(acc)) ++not_close;
            }
          }
          record_check(&res, calc_diff(got.data(), want.data(), M * L), nonfinite, 1e-5,
                       "double-precision host GEMV of the decoded NVFP4 values");
          if (not_close > 0 && res.status != "check_failed") {
            res.status = "check_failed";
            res.message = std::to_string(not_close) + " outputs outside rtol = atol = 1e-3";
          }
        };
        // The heuristic's config ("libdg"), then each --gemv-config. Options outlive the calls.
        std::vector<dg_nvfp4_gemv_options> opts(ctx.opts.gemv_configs.size(), dg_nvfp4_gemv_options DG_NVFP4_GEMV_OPTIONS_INIT);
        for (size_t q = 0; q <= opts.size(); ++q) {
          const dg_nvfp4_gemv_options* o = nullptr;
          Result x = r;
          if (q > 0) {
            const GemvConfigArg& g = ctx.opts.gemv_configs[q - 1];
            dg_nvfp4_gemv_options& w = opts[q - 1];
            w.threads_per_row = static_cast<int32_t>(g.threads_per_row);
            w.row_groups = static_cast<int32_t>(g.row_groups);
            w.chunks_per_thread = static_cast<int32_t>(g.chunks);
            w.rows_per_round = static_cast<int32_t>(g.rows);
            w.vector_bytes = static_cast<int32_t>(g.vec);
            w.grid_blocks = static_cast<int32_t>(g.grid);
            w.cache_hint = static_cast<int32_t>(g.hint);
            w.prefetch = static_cast<int32_t>(g.prefetch);
            o = &w;
            x.name = "libdg[" + g.text + "]";
          }
          Call call = [&, o](int) { return dg_error(fn(ctx.stream, ta.get(), tsfa.get(), tb.get(), tsfb.get(), tc.get(), o)); };
          run_contender(ctx, x, call, 1, cbuf.ptr, cbuf.bytes, check);
          c.results.push_back(x);
        }

        // "read": a plain streaming read of the bytes the GEMV reads (a, sfa, row 0 of b and sfb per
        // batch) with the heuristic GEMV's grid and block, read from its DG_PRINT_CONFIGS line: the
        // floor of the GEMV's time for its launch; t/t_dg of this row is t_read / t_gemv. Each
        // --gemv-config contender of another grid or block gets its own "read[grid=G,block=B]".
        std::vector<gpu::ReadRange> ranges = {{a.ptr, static_cast<int64_t>(ha.size())},
                                              {sfa.ptr, static_cast<int64_t>(hsfa.size())}};
        for (int64_t l = 0; l < L; ++l) {
          ranges.push_back({static_cast<const uint8_t*>(b.ptr) + l * Np * K2, K2});
          ranges.push_back({static_cast<const uint8_t*>(sfb.ptr) + l * Np * K16, K16});
        }
        // The expected sum: every whole 16-byte vector as four little-endian words, the rest by bytes.
        uint32_t want = 0;
        auto add = [&](const uint8_t* p, int64_t n) {
          const int64_t whole = n / 16 * 16;
          for (int64_t i = 0; i < whole; i += 4) {
            uint32_t w;
            std::memcpy(&w, p + i, 4);
            want += w;
          }
          for (int64_t i = whole; i < n; ++i) want += p[i];
        };
        add(ha.data(), static_cast<int64_t>(ha.size()));
        add(hsfa.data(), static_cast<int64_t>(hsfa.size()));
        for (int64_t l = 0; l < L; ++l) add(&hb[l * Np * K2], K2), add(&hsfb[l * Np * K16], K16);
        std::vector<std::pair<int64_t, int64_t>> geometries;
        std::vector<std::unique_ptr<Buffer>> sums;  // one per read contender, alive until the case is timed
        const size_t gemv_contenders = c.results.size();
        for (size_t q = 0; q < gemv_contenders; ++q) {
          const int64_t grid = config_value(c.results[q].config, "grid"), block = config_value(c.results[q].config, "block");
          const bool known = grid > 0 && block > 0;
          if (q > 0 && (!known || std::find(geometries.begin(), geometries.end(), std::make_pair(grid, block)) !=
                                      geometries.end()))
            continue;
          Result rd;
          rd.name = q == 0 ? "read" : "read[grid=" + std::to_string(grid) + ",block=" + std::to_string(block) + "]";
          for (const gpu::ReadRange& x : ranges) rd.bytes += static_cast<double>(x.bytes);
          if (!known) {
            rd.message = "the GEMV's grid and block are not in its DG_PRINT_CONFIGS line";
          } else if (ranges.size() > static_cast<size_t>(gpu::kMaxReadRanges)) {
            rd.message = "more than " + std::to_string(gpu::kMaxReadRanges / 2 - 1) + " batches";
          } else {
            geometries.emplace_back(grid, block);
            sums.push_back(std::make_unique<Buffer>(grid * 4));
            uint32_t* out = sums.back()->as<uint32_t>();
            Call call = [&, grid, block, out](int) {
              const int e = gpu::stream_read(ranges.data(), static_cast<int>(ranges.size()), static_cast<unsigned>(grid),
                                             static_cast<unsigned>(block), out, ctx.cu_stream);
              return e == 0 ? std::string() : std::string("stream_read: ") + gpu::error_string(e);
            };
            run_contender(ctx, rd, call, 1, out, grid * 4, [&, grid, out](Result& res) {
              std::vector<uint32_t> got(grid);
              DGB_CUDA(cudaMemcpy(got.data(), out, grid * 4, cudaMemcpyDeviceToHost));
              uint32_t sum = 0;
              for (uint32_t v : got) sum += v;
              res.reference = "32-bit word sum of the bytes, on the host";
              res.diff = sum == want ? 0.0 : 1.0;
              res.threshold = 0.5;
              if (sum != want) {
                res.status = "check_failed";
                res.message = "block sums add up to " + std::to_string(sum) + ", expected " + std::to_string(want);
              }
            });
            rd.config = "grid=" + std::to_string(grid) + " block=" + std::to_string(block);
          }
          c.results.push_back(rd);
        }
        time_case(ctx);
      } catch (const std::exception& e) {
        r.status = "error";
        r.message = e.what();
        c.results.push_back(r);
      }
#endif
    }
    c.note = "t/t_dg of read is t_read / t_gemv: a plain streaming read of the same bytes with the same grid and block";
    finish(ctx, c, out);
  }
}

}  // namespace dgb
