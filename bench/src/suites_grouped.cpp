// dg-bench M-grouped suites (the MoE experts' GEMMs): contiguous and masked layouts, FP8 1D2D and
// BF16, libdg beside one cuBLASLt BF16 GEMM per group. The same steps as suite_dense (suites.cpp):
// entry points looked up with dlsym (compiled in only when dg.h declares them), fresh inputs per
// case, rotated over 4 sets when they would fit in L2, poisoned outputs, a check against an FP32
// reference, then every checked contender timed together.
#include <algorithm>
#include <stdexcept>
#include <string>

#include "bench.h"
#include "gpu.h"
#include "grouped.h"

namespace dgb {
namespace {

struct GroupedSet {
  Buffer a, b;          // BF16: a [total_rows, K], b [G, N, K] (FP8 suites: only set 0 keeps them)
  Buffer aq, bq;        // E4M3
  Buffer sfa, sfb;      // FP32 row-major [total_rows, KB], [G, NB, KB]
  Buffer sfa_dg;        // libdg's sfa: MN-major TMA-aligned (per group for masked)
  Tensor ta, tb, taq, tbq, tsfa_dg, tsfb;
  std::vector<Tensor> group_a, group_b;  // BF16 [rows[g], K] and [N, K] views, null for empty groups
};

std::string join_rows(const GroupPlan& p) {
  std::string s;
  for (int64_t r : p.rows) s += (s.empty() ? "" : ",") + std::to_string(r);
  return s;
}

}  // namespace

void suite_m_grouped(Context& ctx, bool masked, bool fp8, const std::vector<Shape>& shapes, std::vector<Case>& out) {
  const char* suite = masked ? (fp8 ? "masked-fp8" : "masked-bf16") : (fp8 ? "contiguous-fp8" : "contiguous-bf16");
  auto fn_align = resolve<decltype(&dg_get_mk_alignment_for_contiguous_layout)>(
      "dg_get_mk_alignment_for_contiguous_layout");
#ifdef DG_M_GROUPED_LAYOUT_INDICES
  const std::string entry = std::string("dg_m_grouped_") + (fp8 ? "fp8" : "bf16") + "_gemm_nt_" +
                            (masked ? "masked" : "contiguous");
  auto fn_cont_fp8 = resolve<decltype(&dg_m_grouped_fp8_gemm_nt_contiguous)>("dg_m_grouped_fp8_gemm_nt_contiguous");
  auto fn_cont_bf16 = resolve<decltype(&dg_m_grouped_bf16_gemm_nt_contiguous)>("dg_m_grouped_bf16_gemm_nt_contiguous");
  auto fn_mask_fp8 = resolve<decltype(&dg_m_grouped_fp8_gemm_nt_masked)>("dg_m_grouped_fp8_gemm_nt_masked");
  auto fn_mask_bf16 = resolve<decltype(&dg_m_grouped_bf16_gemm_nt_masked)>("dg_m_grouped_bf16_gemm_nt_masked");
  const bool exported = masked ? (fp8 ? fn_mask_fp8 != nullptr : fn_mask_bf16 != nullptr)
                               : (fp8 ? fn_cont_fp8 != nullptr : fn_cont_bf16 != nullptr) && fn_align != nullptr;
  const std::string libdg_absent = exported ? "" : entry + " is not exported by this libdg";
#else
  const std::string libdg_absent = "dg.h declared no M-grouped GEMM when dg-bench was built";
#endif
  const int64_t alignment = fn_align ? fn_align() : 128;
  const bool lt_ok = dg_cublaslt_available() == DG_SUCCESS;
  const std::string lt_why = lt_ok ? "" : dg_last_error();

  for (size_t ci = 0; ci < shapes.size(); ++ci) {
    const Shape& s = shapes[ci];
    const int64_t G = s.g, N = s.n, K = s.k, KB = ceil_div(K, 128), NB = ceil_div(N, 128);
    Case c = new_case(suite, s,
                      "g=" + std::to_string(G) + " m=" + std::to_string(s.m) + " n=" + std::to_string(N) +
                          " k=" + std::to_string(K));
    progress(suite, ci, shapes.size(), c.label);
    try {
      const GroupPlan plan =
          masked ? masked_plan(G, s.m, ctx.next_seed()) : contiguous_plan(G, s.m, alignment, ctx.next_seed());
      const int64_t M = plan.total_rows, rows = plan.valid_rows();
      c.note = "m = expected rows per group; drawn rows per group " + join_rows(plan) +
               (masked ? "; max_m " + std::to_string(plan.max_m) + ", expected_m hint " + std::to_string(plan.expected_m)
                       : "; M " + std::to_string(M) + " (groups padded to " + std::to_string(alignment) +
                             " rows), expected_m 0 (M / G)");
      GemmBytes gb;
      gb.a_elem = gb.b_elem = fp8 ? 1 : 2;
      gb.sfa_per_token = gb.sfb_per_block = fp8;
      const double bytes = grouped_gemm_bytes(rows, plan.used_groups(), N, K, gb);
      const double flops = gemm_flops(rows, N, K);
      const double peak = fp8 ? ctx.dev.peak_fp8 : ctx.dev.peak_bf16;
      const double input_bytes = bytes - 2.0 * static_cast<double>(rows) * N;  // all but D
      const int nsets = input_bytes < 2.0 * ctx.dev.l2_bytes ? 4 : 1;        // rotate inputs that would fit in L2

      std::vector<GroupedSet> sets(nsets);
      for (int si = 0; si < nsets; ++si) {
        GroupedSet& d = sets[si];
        d.a = Buffer(M * K * 2);
        d.b = Buffer(G * N * K * 2);
        DGB_GPU(gpu::fill_randn_bf16(d.a.ptr, M * K, ctx.next_seed(), 1.0f, ctx.cu_stream));
        DGB_GPU(gpu::fill_randn_bf16(d.b.ptr, G * N * K, ctx.next_seed(), 1.0f, ctx.cu_stream));
        // Contiguous padding rows of A are zero (as bench/peer_bench.py has them); masked rows past
        // masked_m stay random: the kernel must not read them.
        for (int64_t g = 0; g < G && !masked; ++g)
          DGB_CUDA(cudaMemsetAsync(d.a.as<uint8_t>() + (plan.start[g] + plan.rows[g]) * K * 2, 0,
                                   plan.rest_rows(g) * K * 2, ctx.cu_stream));
        d.ta = masked ? make_tensor(d.a.ptr, DG_DTYPE_BFLOAT16, {G, plan.max_m, K})
                      : make_tensor(d.a.ptr, DG_DTYPE_BFLOAT16, {M, K});
        d.tb = make_tensor(d.b.ptr, DG_DTYPE_BFLOAT16, {G, N, K});
        // Per-group views: set 0's feed the reference, every BF16 set's the per-group cuBLASLt peer.
        if (si == 0 || !fp8) {
          d.group_a.resize(G);
          d.group_b.resize(G);
          for (int64_t g = 0; g < G; ++g) {
            if (plan.rows[g] == 0) continue;
            d.group_a[g] = make_tensor(d.a.as<uint8_t>() + plan.start[g] * K * 2, DG_DTYPE_BFLOAT16, {plan.rows[g], K});
            d.group_b[g] = make_tensor(d.b.as<uint8_t>() + g * N * K * 2, DG_DTYPE_BFLOAT16, {N, K});
          }
        }
        if (!fp8) continue;
        d.aq = Buffer(M * K);
        d.sfa = Buffer(M * KB * 4);
        DGB_GPU(gpu::quant_per_token(d.a.ptr, M, K, d.aq.ptr, d.sfa.as<float>(), ctx.cu_stream));
        d.bq = Buffer(G * N * K);
        d.sfb = Buffer(G * NB * KB * 4);
        for (int64_t g = 0; g < G; ++g)
          DGB_GPU(gpu::quant_per_block(d.b.as<uint8_t>() + g * N * K * 2, N, K, d.bq.as<uint8_t>() + g * N * K,
                                       d.sfb.as<float>() + g * NB * KB, ctx.cu_stream));
        if (masked) {
          // [G, max_m, KB] with strides (am * KB, 1, am): each group's block MN-major.
          const int64_t mm = plan.max_m, am = align_up(mm, 4);
          d.sfa_dg = Buffer(G * am * KB * 4);
          DGB_CUDA(cudaMemsetAsync(d.sfa_dg.ptr, 0, d.sfa_dg.bytes, ctx.cu_stream));
          for (int64_t g = 0; g < G; ++g)
            DGB_GPU(gpu::copy2d_f32(d.sfa_dg.as<float>() + g * am * KB, 1, am, d.sfa.as<float>() + g * mm * KB, KB, 1,
                                    mm, KB, ctx.cu_stream));
          d.taq = make_tensor(d.aq.ptr, DG_DTYPE_FLOAT8_E4M3, {G, mm, K});
          d.tsfa_dg = make_tensor(d.sfa_dg.ptr, DG_DTYPE_FLOAT32, {G, mm, KB}, {am * KB, 1, am});
        } else {
          const int64_t am = align_up(M, 4);
          d.sfa_dg = Buffer(am * KB * 4);
          DGB_CUDA(cudaMemsetAsync(d.sfa_dg.ptr, 0, d.sfa_dg.bytes, ctx.cu_stream));
          DGB_GPU(gpu::copy2d_f32(d.sfa_dg.as<float>(), 1, am, d.sfa.as<float>(), KB, 1, M, KB, ctx.cu_stream));
          d.taq = make_tensor(d.aq.ptr, DG_DTYPE_FLOAT8_E4M3, {M, K});
          d.tsfa_dg = make_tensor(d.sfa_dg.ptr, DG_DTYPE_FLOAT32, {M, KB}, {1, am});
        }
        d.sfa = Buffer();
        d.tbq = make_tensor(d.bq.ptr, DG_DTYPE_FLOAT8_E4M3, {G, N, K});
        d.tsfb = make_tensor(d.sfb.ptr, DG_DTYPE_FLOAT32, {G, NB, KB});
        if (si > 0) {  // only set 0's BF16 values feed the reference
          d.ta.reset();
          d.tb.reset();
          d.a = Buffer();
          d.b = Buffer();
        }
      }

      // The group tensor: m_indices INT32 [M] (contiguous) or masked_m INT32 [G] in device memory.
      std::vector<int32_t> host_groups;
      if (masked)
        for (int64_t r : plan.rows) host_groups.push_back(static_cast<int32_t>(r));
      else
        host_groups = contiguous_indices(plan);
      Buffer groups(host_groups.size() * 4);
      DGB_CUDA(cudaMemcpyAsync(groups.ptr, host_groups.data(), groups.bytes, cudaMemcpyHostToDevice, ctx.cu_stream));
      Tensor tgroups = make_tensor(groups.ptr, DG_DTYPE_INT32, {static_cast<int64_t>(host_groups.size())});

      Buffer dbuf(M * N * 2);
      Tensor td = masked ? make_tensor(dbuf.ptr, DG_DTYPE_BFLOAT16, {G, plan.max_m, N})
                         : make_tensor(dbuf.ptr, DG_DTYPE_BFLOAT16, {M, N});
      std::vector<Tensor> group_d(G);
      for (int64_t g = 0; g < G; ++g)
        if (plan.rows[g] > 0)
          group_d[g] = make_tensor(dbuf.as<uint8_t>() + plan.start[g] * N * 2, DG_DTYPE_BFLOAT16, {plan.rows[g], N});
      dg_cublaslt_options lt = DG_CUBLASLT_OPTIONS_INIT;
      lt.workspace = ctx.workspace.ptr;
      lt.workspace_size = ctx.workspace.bytes;

      // Reference: per group, the FP32 product of the unquantised BF16 inputs (docs/README.md#how-results-are-checked) by
      // cuBLASLt, compact: group g's rows from row offset[g] of [valid rows, N].
      const std::vector<int64_t> offset = reference_offsets(plan);
      Buffer ref(std::max<int64_t>(rows, 1) * N * 4);
      std::string ref_error = lt_ok ? "" : "cuBLASLt unavailable: " + lt_why;
      for (int64_t g = 0; g < G && ref_error.empty(); ++g) {
        if (plan.rows[g] == 0) continue;
        Tensor tref = make_tensor(ref.as<uint8_t>() + offset[g] * N * 4, DG_DTYPE_FLOAT32, {plan.rows[g], N});
        ref_error = dg_error(
            dg_cublaslt_gemm_nt(ctx.stream, sets[0].group_a[g].get(), sets[0].group_b[g].get(), tref.get(), nullptr, &lt));
      }
      // What is compared: each group's valid rows, against the reference. What else is read: the
      // rows after them, which dg.h says are written as zeros (contiguous padding rows all lie in
      // computed 128-row blocks, as every group starts on one) or, masked, as zeros to the end of
      // their tile and not at all past it (so zero or still the poison).
      std::vector<DiffBlock> valid;
      std::vector<RowBlock> rest;
      for (int64_t g = 0; g < G; ++g) {
        if (plan.rows[g] > 0)
          valid.push_back({dbuf.as<uint8_t>() + plan.start[g] * N * 2, ref.as<uint8_t>() + offset[g] * N * 4, plan.rows[g]});
        if (plan.rest_rows(g) > 0) rest.push_back({dbuf.as<uint8_t>() + (plan.start[g] + plan.rows[g]) * N * 2, plan.rest_rows(g)});
      }
      const std::string ref_name = std::string("cuBLASLt FP32 product of the BF16 inputs per group, on ") +
                                   (masked ? "each group's first masked_m rows" : "the rows of m_indices >= 0");
      auto check = [&](double thr, bool check_rest) {
        return [&, thr, check_rest](Result& r) {
          if (!ref_error.empty()) {
            r.reference = "none";
            r.message = "not checked: " + ref_error;
            return;
          }
          int64_t bad = 0;
          const double diff = device_diff(ctx, valid, gpu::kBF16, N, gpu::kF32, N, N, &bad);
          record_check(&r, diff, bad, thr,
                       ref_name + (!check_rest ? ""
                                   : masked   ? "; later rows zero or unwritten"
                                              : "; padding rows zero"));
          if (!check_rest || r.status == "check_failed") return;
          const int64_t stray = device_count_nonzero_bf16(ctx, rest, N, N, masked);
          if (stray > 0) {
            r.status = "check_failed";
            r.message = std::to_string(stray) +
                        (masked ? " outputs past masked_m written with a value other than zero"
                                : " outputs of padding rows (m_indices -1) not written as zeros");
          }
        };
      };

      Result dg;
      dg.name = "libdg";
      dg.flops = flops, dg.bytes = bytes, dg.peak_tflops = peak;
      if (!libdg_absent.empty()) {
        dg.message = libdg_absent;
        c.results.push_back(dg);
      } else {
#ifdef DG_M_GROUPED_LAYOUT_INDICES
        const dg_gemm_options go = DG_GEMM_OPTIONS_INIT;
        const int64_t hint = plan.expected_m;
        auto run_libdg = [&](Result& r, const dg_gemm_options& opts) {
          Call call;
          if (masked && fp8)
            call = [&, opts, hint](int set) {
              const GroupedSet& x = sets[set];
              return dg_error(fn_mask_fp8(ctx.stream, x.taq.get(), x.tsfa_dg.get(), x.tbq.get(), x.tsfb.get(), td.get(),
                                          tgroups.get(), hint, &opts));
            };
          else if (masked)
            call = [&, opts, hint](int set) {
              const GroupedSet& x = sets[set];
              return dg_error(fn_mask_bf16(ctx.stream, x.ta.get(), x.tb.get(), td.get(), tgroups.get(), hint, &opts));
            };
          else if (fp8)
            call = [&, opts, hint](int set) {
              const GroupedSet& x = sets[set];
              return dg_error(fn_cont_fp8(ctx.stream, x.taq.get(), x.tsfa_dg.get(), x.tbq.get(), x.tsfb.get(), td.get(),
                                          tgroups.get(), DG_M_GROUPED_LAYOUT_INDICES, hint, &opts));
            };
          else
            call = [&, opts, hint](int set) {
              const GroupedSet& x = sets[set];
              return dg_error(fn_cont_bf16(ctx.stream, x.ta.get(), x.tb.get(), td.get(), tgroups.get(),
                                           DG_M_GROUPED_LAYOUT_INDICES, hint, &opts));
            };
          run_contender(ctx, r, call, nsets, dbuf.ptr, dbuf.bytes, check(fp8 ? 1e-3 : 1e-5, true));
        };
        run_libdg(dg, go);
        c.results.push_back(dg);
        for (const GemmConfigArg& g : ctx.opts.gemm_configs) {
          Result r;
          r.name = "libdg[" + g.text + "]";
          r.flops = flops, r.bytes = bytes, r.peak_tflops = peak;
          dg_gemm_options o = go;
          apply_gemm_config(g, &o);
          run_libdg(r, o);
          c.results.push_back(r);
        }
#endif
      }

      // What a caller without a grouped kernel runs: one cuBLASLt GEMM per non-empty group, the
      // group sizes known on the host. BF16 only (cuBLASLt has no 1D2D FP8 without dg-bench's own
      // block-scaled peer, which takes no groups).
      if (!fp8 && ctx.opts.peers) {
        Result p;
        p.name = "cublaslt-bf16-per-group";
        p.flops = flops, p.bytes = bytes, p.peak_tflops = peak;
        if (!lt_ok) {
          p.message = lt_why;
        } else {
          Call call = [&](int set) {
            const GroupedSet& x = sets[set];
            for (int64_t g = 0; g < G; ++g) {
              if (!group_d[g]) continue;
              const dg_status st = dg_cublaslt_gemm_nt(ctx.stream, x.group_a[g].get(), x.group_b[g].get(),
                                                       group_d[g].get(), nullptr, &lt);
              if (st != DG_SUCCESS) return dg_error(st);
            }
            return std::string();
          };
          run_contender(ctx, p, call, nsets, dbuf.ptr, dbuf.bytes, check(1e-5, false));
        }
        c.results.push_back(p);
      }
      time_case(ctx);
    } catch (const std::exception& e) {
      c.note += std::string(c.note.empty() ? "" : "; ") + "case failed: " + e.what();
    }
    finish(ctx, c, out);
  }
}

}  // namespace dgb
