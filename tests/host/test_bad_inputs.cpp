// The bad-input matrix: every public entry point that takes arguments x every class of bad input,
// generated from one valid baseline call per entry point. Each case asserts the status and that
// dg_last_error() names the argument. Classes: NULL handles and out-pointers, NULL data pointers of
// operands that are read or written, wrong dtypes, wrong ranks, sizes that disagree, misaligned
// data, sizes whose arithmetic overflows int64, outputs whose elements overlap (strides that
// alias), bad option structs and option values, and enum values out of range. A test also checks
// that dg.h declares no entry point the matrix lacks.
//
// Calls run on a stream whose config caps the SMs above the fake device's count: an argument set
// that passes validation then stops at that check, before any kernel is compiled or launched, so a
// valid baseline shows as the "num_sms" error and a mutation that slipped through fails its case.
#include <doctest/doctest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "dg.h"
#include "fake_driver.h"

namespace {

constexpr int64_t kBig = int64_t(1) << 62;

void* address(int i) { return reinterpret_cast<void*>(0x7f0000000000ull + (uint64_t(i) << 32)); }

struct Spec {
  void* data = nullptr;
  dg_dtype dtype = 0;
  std::vector<int64_t> sizes, strides;  // strides empty: contiguous
};

// The arguments of one call. A tensor that is absent from `tensors` is passed as NULL.
struct Args {
  bool null_stream = false;
  std::map<std::string, Spec> tensors;
  std::map<std::string, int64_t> ints;
  dg_gemm_options gemm = DG_GEMM_OPTIONS_INIT;
  dg_nvfp4_gemv_options gemv = DG_NVFP4_GEMV_OPTIONS_INIT;
  dg_quant_options quant = DG_QUANT_OPTIONS_INIT;
  dg_cublaslt_options lt = DG_CUBLASLT_OPTIONS_INIT;
  dg_sf_recipe recipe = DG_SF_RECIPE_INIT;
  std::set<std::string> null_out;  // out-pointers passed as NULL
};

// dg_tensor handles for the specs of one call, destroyed with it.
class Handles {
 public:
  explicit Handles(const Args& a) {
    for (const auto& [name, s] : a.tensors) {
      dg_tensor* t = nullptr;
      const dg_status st = dg_tensor_create(&t, s.data, s.dtype, int32_t(s.sizes.size()), s.sizes.data(),
                                            s.strides.empty() ? nullptr : s.strides.data());
      REQUIRE_MESSAGE(st == DG_SUCCESS, name, ": ", dg_last_error());
      map_[name] = t;
    }
  }
  ~Handles() {
    for (auto& [name, t] : map_) dg_tensor_destroy(t);
  }
  const dg_tensor* operator[](const std::string& name) const {
    auto it = map_.find(name);
    return it == map_.end() ? nullptr : it->second;
  }

 private:
  std::map<std::string, dg_tensor*> map_;
};

struct Context {
  dg_stream* stream = nullptr;  // SM cap above the device: stops valid calls before any compile
};

using Call = std::function<dg_status(const Context&, const Args&, const Handles&)>;

struct Entry {
  std::string name;
  Args baseline;
  Call call;
  // Tensors whose data the call reads or writes (NULL data is an error), and those that must be
  // aligned beyond their element size.
  std::vector<std::string> operands;
  std::vector<std::string> aligned;
  // Options struct the call reads (for the struct_size class): "gemm", "gemv", "lt", "recipe", "quant"
  // or "".
  std::string options;
  // Integer arguments that are enums (value 77 is out of range) or sizes (INT64_MAX overflows).
  std::vector<std::string> enums, sizes;
  // Out-pointers that must not be NULL.
  std::vector<std::string> outs;
  // Tensors that are optional (NULL handle allowed) and so skipped by the NULL-handle class.
  std::set<std::string> optional_tensors;
  // Tensors whose last dimension no other argument fixes (skipped by the size-mismatch class).
  std::set<std::string> free_last_dim;
  // Whether the baseline is expected to stop at the SM cap (launching entry points) rather than
  // succeed; `baseline_alt` names another outcome a valid baseline may have (cuBLASLt not loadable).
  bool stops_at_sm_cap = true;
  std::string baseline_alt;
  // Whether it takes a stream (the NULL-stream case), and whether it checks its tensors' dtype,
  // rank and sizes (dg_tensor_get and _set_data take any descriptor).
  bool stream = false;
  bool validates_tensors = true;
  // Integer arguments of the matrix that are elements of an array argument (the name messages use).
  std::map<std::string, std::string> array_of;
};

const dg_stream* as_stream(const Context& c, const Args& a) { return a.null_stream ? nullptr : c.stream; }
dg_stream* as_mut_stream(const Context& c, const Args& a) { return a.null_stream ? nullptr : c.stream; }

template <typename T>
T* out_or_null(const Args& a, const char* name, T* p) {
  return a.null_out.count(name) ? nullptr : p;
}

const dg_gemm_options* gemm_opts(const Args& a) { return &a.gemm; }

Spec fp8(int i, std::vector<int64_t> sizes) { return Spec{address(i), DG_DTYPE_FLOAT8_E4M3, std::move(sizes), {}}; }
Spec bf16(int i, std::vector<int64_t> sizes) { return Spec{address(i), DG_DTYPE_BFLOAT16, std::move(sizes), {}}; }
Spec f32(int i, std::vector<int64_t> sizes, std::vector<int64_t> strides = {}) {
  return Spec{address(i), DG_DTYPE_FLOAT32, std::move(sizes), std::move(strides)};
}
Spec i32(int i, std::vector<int64_t> sizes) { return Spec{address(i), DG_DTYPE_INT32, std::move(sizes), {}}; }

// dg_bf16_einsum_prepare / dg_fp8_einsum_prepare for "bhr,hdr->bhd": a {b, h, r}, b {h, d, r}.
using EinsumPrepare = dg_status (*)(dg_stream*, const char*, const int64_t*, const int64_t*, int32_t,
                                    const dg_gemm_options*);
Entry einsum_prepare_entry(const char* name, int64_t b, int64_t h, int64_t r, int64_t d, EinsumPrepare prepare) {
  Entry x;
  x.name = name;
  Args& a = x.baseline;
  a.ints = {{"a0", b}, {"a1", h}, {"a2", r}, {"b0", h}, {"b1", d}, {"b2", r}, {"with_c", 0}};
  x.options = "gemm";
  x.enums = {"with_c"};
  x.sizes = {"a0", "a1", "a2", "b0", "b1", "b2"};
  x.array_of = {{"a0", "a_sizes"}, {"a1", "a_sizes"}, {"a2", "a_sizes"},
                {"b0", "b_sizes"}, {"b1", "b_sizes"}, {"b2", "b_sizes"}};
  x.outs = {"a_sizes", "b_sizes"};
  x.stream = true;
  x.call = [prepare](const Context& c, const Args& a, const Handles&) {
    const int64_t as[3] = {a.ints.at("a0"), a.ints.at("a1"), a.ints.at("a2")};
    const int64_t bs[3] = {a.ints.at("b0"), a.ints.at("b1"), a.ints.at("b2")};
    return prepare(as_mut_stream(c, a), "bhr,hdr->bhd", out_or_null(a, "a_sizes", as), out_or_null(a, "b_sizes", bs),
                   int32_t(a.ints.at("with_c")), gemm_opts(a));
  };
  return x;
}

std::vector<Entry> entries() {
  std::vector<Entry> e;
  const int64_t M = 256, N = 256, K = 256;

  // Dense GEMMs: a and b as each layout stores them.
  for (const char* layout : {"nt", "nn", "tn", "tt"}) {
    const bool a_t = layout[0] == 't', b_t = layout[1] == 'n';
    for (const bool is_fp8 : {false, true}) {
      Entry x;
      x.name = std::string(is_fp8 ? "dg_fp8_gemm_" : "dg_bf16_gemm_") + layout;
      Args& a = x.baseline;
      const std::vector<int64_t> a_sizes = a_t ? std::vector<int64_t>{K, M} : std::vector<int64_t>{M, K};
      const std::vector<int64_t> b_sizes = b_t ? std::vector<int64_t>{K, N} : std::vector<int64_t>{N, K};
      a.tensors["a"] = is_fp8 ? fp8(1, a_sizes) : bf16(1, a_sizes);
      a.tensors["b"] = is_fp8 ? fp8(2, b_sizes) : bf16(2, b_sizes);
      a.tensors["d"] = bf16(3, {M, N});
      a.tensors["c"] = bf16(4, {M, N});
      x.operands = {"a", "b", "d", "c"};
      x.aligned = {"a", "b", "d", "c"};
      x.optional_tensors = {"c"};
      if (is_fp8) {
        // sfa: the [M, K/128] view MN-major TMA-aligned; sfb: [N/128, K/128] (transposed with b).
        a.tensors["sfa"] = a_t ? f32(5, {K / 128, M}) : f32(5, {M, K / 128}, {1, M});
        a.tensors["sfb"] = b_t ? f32(6, {K / 128, N / 128}) : f32(6, {N / 128, K / 128});
        x.operands.push_back("sfa");
        x.operands.push_back("sfb");
        x.aligned.push_back("sfa");
        // MN-major operands are copied through a workspace.
        if (a_t || b_t) {
          a.gemm.workspace = address(20);
          a.gemm.workspace_size = size_t(1) << 30;
        }
      }
      x.options = "gemm";
      x.stream = true;
      const std::string fname = x.name;
      x.call = [fname, is_fp8](const Context& c, const Args& a, const Handles& h) -> dg_status {
        dg_stream* s = as_mut_stream(c, a);
        if (!is_fp8) {
          auto f = fname == "dg_bf16_gemm_nt"   ? dg_bf16_gemm_nt
                   : fname == "dg_bf16_gemm_nn" ? dg_bf16_gemm_nn
                   : fname == "dg_bf16_gemm_tn" ? dg_bf16_gemm_tn
                                                : dg_bf16_gemm_tt;
          return f(s, h["a"], h["b"], h["d"], h["c"], gemm_opts(a));
        }
        auto f = fname == "dg_fp8_gemm_nt"   ? dg_fp8_gemm_nt
                 : fname == "dg_fp8_gemm_nn" ? dg_fp8_gemm_nn
                 : fname == "dg_fp8_gemm_tn" ? dg_fp8_gemm_tn
                                             : dg_fp8_gemm_tt;
        return f(s, h["a"], h["sfa"], h["b"], h["sfb"], h["d"], h["c"], gemm_opts(a));
      };
      e.push_back(std::move(x));
    }
  }

  // FP8 GEMM skipping the middle columns of each head: 2 heads of 64 + 64 GEMM columns, D's heads
  // 64 + 32 + 64 wide.
  {
    Entry x;
    x.name = "dg_fp8_gemm_nt_skip_head_mid";
    Args& a = x.baseline;
    a.tensors["a"] = fp8(1, {M, K});
    a.tensors["b"] = fp8(2, {N, K});
    a.tensors["d"] = bf16(3, {M, N / 128 * 160});
    a.tensors["sfa"] = f32(5, {M, K / 128}, {1, M});
    a.tensors["sfb"] = f32(6, {N / 128, K / 128});
    a.ints = {{"left", 64}, {"mid", 32}, {"right", 64}};
    x.sizes = {"left", "mid", "right"};
    x.operands = {"a", "b", "d", "sfa", "sfb"};
    x.aligned = {"a", "b", "d", "sfa"};
    x.options = "gemm";
    x.stream = true;
    x.call = [](const Context& c, const Args& a, const Handles& h) {
      return dg_fp8_gemm_nt_skip_head_mid(as_mut_stream(c, a), h["a"], h["sfa"], h["b"], h["sfb"], h["d"],
                                          a.ints.at("left"), a.ints.at("mid"), a.ints.at("right"), gemm_opts(a));
    };
    e.push_back(std::move(x));
  }

  // cuBLASLt baselines: validated before the library is loaded.
  for (const char* layout : {"nt", "nn", "tn", "tt"}) {
    const bool a_t = layout[0] == 't', b_t = layout[1] == 'n';
    Entry x;
    x.name = std::string("dg_cublaslt_gemm_") + layout;
    Args& a = x.baseline;
    a.tensors["a"] = bf16(1, a_t ? std::vector<int64_t>{K, M} : std::vector<int64_t>{M, K});
    a.tensors["b"] = bf16(2, b_t ? std::vector<int64_t>{K, N} : std::vector<int64_t>{N, K});
    a.tensors["d"] = bf16(3, {M, N});
    a.tensors["c"] = bf16(4, {M, N});
    x.operands = {"a", "b", "d", "c"};
    x.optional_tensors = {"c"};
    x.options = "lt";
    x.stream = true;
    x.baseline_alt = "cuBLASLt";
    const std::string fname = x.name;
    x.call = [fname](const Context& c, const Args& a, const Handles& h) -> dg_status {
      auto f = fname == "dg_cublaslt_gemm_nt"   ? dg_cublaslt_gemm_nt
               : fname == "dg_cublaslt_gemm_nn" ? dg_cublaslt_gemm_nn
               : fname == "dg_cublaslt_gemm_tn" ? dg_cublaslt_gemm_tn
                                                : dg_cublaslt_gemm_tt;
      return f(as_mut_stream(c, a), h["a"], h["b"], h["d"], h["c"], &a.lt);
    };
    e.push_back(std::move(x));
  }

  // M-grouped, contiguous (indices and psum layouts) and masked.
  const int64_t G = 4;
  for (const char* variant : {"fp8_nt", "fp8_nn", "bf16_nt", "bf16_nn"}) {
    const bool is_fp8 = variant[0] == 'f', nn = std::string(variant).find("nn") != std::string::npos;
    Entry x;
    x.name = std::string("dg_m_grouped_") + (is_fp8 ? "fp8" : "bf16") + "_gemm_" + (nn ? "nn" : "nt") + "_contiguous";
    Args& a = x.baseline;
    a.tensors["a"] = is_fp8 ? fp8(1, {M, K}) : bf16(1, {M, K});
    const std::vector<int64_t> b_sizes = nn ? std::vector<int64_t>{G, K, N} : std::vector<int64_t>{G, N, K};
    // FP8 nn needs K-major [N, K] views of b: [G, K, N] sizes with K-major strides.
    Spec b = is_fp8 ? fp8(2, b_sizes) : bf16(2, b_sizes);
    if (is_fp8 && nn) b.strides = {N * K, 1, K};
    a.tensors["b"] = b;
    a.tensors["d"] = bf16(3, {M, N});
    a.tensors["grouped_layout"] = i32(4, {M});
    a.ints["layout"] = DG_M_GROUPED_LAYOUT_INDICES;
    a.ints["expected_m"] = 0;
    x.operands = {"a", "b", "d", "grouped_layout"};
    x.aligned = {"a", "b", "d"};
    if (is_fp8) {
      a.tensors["sfa"] = f32(5, {M, K / 128}, {1, M});
      a.tensors["sfb"] = nn ? f32(6, {G, K / 128, N / 128}) : f32(6, {G, N / 128, K / 128});
      x.operands.push_back("sfa");
      x.operands.push_back("sfb");
      x.aligned.push_back("sfa");
    }
    x.options = "gemm";
    x.enums = {"layout"};
    x.stream = true;
    const std::string fname = x.name;
    x.call = [fname, is_fp8](const Context& c, const Args& a, const Handles& h) -> dg_status {
      dg_stream* s = as_mut_stream(c, a);
      const int32_t layout = int32_t(a.ints.at("layout"));
      const int64_t em = a.ints.at("expected_m");
      if (is_fp8) {
        auto f = fname.find("_nn_") != std::string::npos ? dg_m_grouped_fp8_gemm_nn_contiguous
                                                          : dg_m_grouped_fp8_gemm_nt_contiguous;
        return f(s, h["a"], h["sfa"], h["b"], h["sfb"], h["d"], h["grouped_layout"], layout, em, gemm_opts(a));
      }
      auto f = fname.find("_nn_") != std::string::npos ? dg_m_grouped_bf16_gemm_nn_contiguous
                                                        : dg_m_grouped_bf16_gemm_nt_contiguous;
      return f(s, h["a"], h["b"], h["d"], h["grouped_layout"], layout, em, gemm_opts(a));
    };
    e.push_back(std::move(x));
  }
  for (const bool is_fp8 : {true, false}) {
    Entry x;
    x.name = std::string("dg_m_grouped_") + (is_fp8 ? "fp8" : "bf16") + "_gemm_nt_masked";
    Args& a = x.baseline;
    const int64_t max_m = 128;
    a.tensors["a"] = is_fp8 ? fp8(1, {G, max_m, K}) : bf16(1, {G, max_m, K});
    a.tensors["b"] = is_fp8 ? fp8(2, {G, N, K}) : bf16(2, {G, N, K});
    a.tensors["d"] = bf16(3, {G, max_m, N});
    a.tensors["masked_m"] = i32(4, {G});
    a.ints["expected_m"] = 64;
    x.operands = {"a", "b", "d", "masked_m"};
    x.aligned = {"a", "b", "d"};
    if (is_fp8) {
      a.tensors["sfa"] = f32(5, {G, max_m, K / 128}, {max_m * (K / 128), 1, max_m});
      a.tensors["sfb"] = f32(6, {G, N / 128, K / 128});
      x.operands.push_back("sfa");
      x.operands.push_back("sfb");
      x.aligned.push_back("sfa");
    }
    x.options = "gemm";
    x.stream = true;
    x.call = [is_fp8](const Context& c, const Args& a, const Handles& h) -> dg_status {
      dg_stream* s = as_mut_stream(c, a);
      if (is_fp8)
        return dg_m_grouped_fp8_gemm_nt_masked(s, h["a"], h["sfa"], h["b"], h["sfb"], h["d"], h["masked_m"],
                                               a.ints.at("expected_m"), gemm_opts(a));
      return dg_m_grouped_bf16_gemm_nt_masked(s, h["a"], h["b"], h["d"], h["masked_m"], a.ints.at("expected_m"),
                                              gemm_opts(a));
    };
    e.push_back(std::move(x));
  }

  // K-grouped: FP8 nt (flat operands), FP8 tn (through the workspace), BF16 tn; ks on the host.
  static const int64_t kKs[4] = {128, 0, 256, 128};
  const int64_t KT = 512;  // sum of kKs
  for (const char* variant : {"fp8_nt", "fp8_tn", "bf16_tn"}) {
    const bool is_fp8 = variant[0] == 'f', tn = std::string(variant).find("tn") != std::string::npos;
    Entry x;
    x.name = std::string("dg_k_grouped_") + (is_fp8 ? "fp8" : "bf16") + "_gemm_" + (tn ? "tn" : "nt") + "_contiguous";
    Args& a = x.baseline;
    if (tn) {
      a.tensors["a"] = is_fp8 ? fp8(1, {KT, M}) : bf16(1, {KT, M});
      a.tensors["b"] = is_fp8 ? fp8(2, {KT, N}) : bf16(2, {KT, N});
    } else {
      a.tensors["a"] = fp8(1, {M * KT});
      a.tensors["b"] = fp8(2, {N * KT});
    }
    a.tensors["d"] = f32(3, {G, M, N});
    a.tensors["c"] = f32(4, {G, M, N});
    a.tensors["ks_tensor"] = i32(7, {G});
    a.ints["num_groups"] = G;
    x.operands = {"a", "b", "d", "c", "ks_tensor"};
    x.aligned = {"a", "b", "d", "c"};
    x.optional_tensors = {"c", "ks_tensor"};
    if (is_fp8) {
      a.tensors["sfa"] = f32(5, {M, KT / 128}, {1, M});
      a.tensors["sfb"] = f32(6, {N, KT / 128}, {1, N});
      x.operands.push_back("sfa");
      x.operands.push_back("sfb");
      x.aligned.push_back("sfa");
      x.aligned.push_back("sfb");
      if (tn) {
        a.gemm.workspace = address(20);
        a.gemm.workspace_size = size_t(1) << 30;
      }
    }
    x.options = "gemm";
    x.sizes = {"num_groups"};
    x.stream = true;
    const std::string fname = x.name;
    x.call = [fname, is_fp8](const Context& c, const Args& a, const Handles& h) -> dg_status {
      dg_stream* s = as_mut_stream(c, a);
      const int64_t g = a.ints.at("num_groups");
      if (!is_fp8)
        return dg_k_grouped_bf16_gemm_tn_contiguous(s, h["a"], h["b"], h["d"], h["c"], kKs, g, h["ks_tensor"],
                                                    gemm_opts(a));
      auto f = fname.find("_tn_") != std::string::npos ? dg_k_grouped_fp8_gemm_tn_contiguous
                                                        : dg_k_grouped_fp8_gemm_nt_contiguous;
      return f(s, h["a"], h["sfa"], h["b"], h["sfb"], h["d"], h["c"], kKs, g, h["ks_tensor"], gemm_opts(a));
    };
    e.push_back(std::move(x));
  }
  {
    Entry x;
    x.name = "dg_k_grouped_gemm_prepare";
    Args& a = x.baseline;
    a.ints = {{"ab_dtype", DG_DTYPE_FLOAT8_E4M3}, {"layout", DG_GEMM_LAYOUT_NT}, {"m", M}, {"n", N},
              {"num_groups", G}, {"with_c", 1}};
    x.options = "gemm";
    x.enums = {"ab_dtype", "layout", "with_c"};
    x.sizes = {"m", "n", "num_groups"};
    x.stream = true;
    x.call = [](const Context& c, const Args& a, const Handles&) {
      return dg_k_grouped_gemm_prepare(as_mut_stream(c, a), dg_dtype(a.ints.at("ab_dtype")),
                                       int32_t(a.ints.at("layout")), a.ints.at("m"), a.ints.at("n"), kKs,
                                       a.ints.at("num_groups"), int32_t(a.ints.at("with_c")), gemm_opts(a));
    };
    e.push_back(std::move(x));
  }
  {
    Entry x;
    x.name = "dg_gemm_prepare";
    Args& a = x.baseline;
    a.ints = {{"ab_dtype", DG_DTYPE_BFLOAT16}, {"layout", DG_GEMM_LAYOUT_NT}, {"m", M}, {"n", N}, {"k", K},
              {"d_dtype", DG_DTYPE_BFLOAT16}, {"with_c", 0}};
    x.options = "gemm";
    x.enums = {"ab_dtype", "layout", "d_dtype"};
    x.sizes = {"m", "n", "k"};
    x.stream = true;
    x.call = [](const Context& c, const Args& a, const Handles&) {
      return dg_gemm_prepare(as_mut_stream(c, a), dg_dtype(a.ints.at("ab_dtype")), int32_t(a.ints.at("layout")),
                             a.ints.at("m"), a.ints.at("n"), a.ints.at("k"), dg_dtype(a.ints.at("d_dtype")),
                             int32_t(a.ints.at("with_c")), gemm_opts(a));
    };
    e.push_back(std::move(x));
  }
  {
    Entry x;
    x.name = "dg_m_grouped_gemm_prepare";
    Args& a = x.baseline;
    a.ints = {{"ab_dtype", DG_DTYPE_BFLOAT16}, {"gemm_layout", DG_GEMM_LAYOUT_NT}, {"grouping", DG_M_GROUPED_LAYOUT_INDICES},
              {"num_groups", G}, {"m", M}, {"n", N}, {"k", K}, {"expected_m", 0}};
    x.options = "gemm";
    x.enums = {"ab_dtype", "gemm_layout", "grouping"};
    x.sizes = {"num_groups", "m", "n", "k"};
    x.stream = true;
    x.call = [](const Context& c, const Args& a, const Handles&) {
      return dg_m_grouped_gemm_prepare(as_mut_stream(c, a), dg_dtype(a.ints.at("ab_dtype")),
                                       int32_t(a.ints.at("gemm_layout")), int32_t(a.ints.at("grouping")),
                                       a.ints.at("num_groups"), a.ints.at("m"), a.ints.at("n"), a.ints.at("k"),
                                       a.ints.at("expected_m"), gemm_opts(a));
    };
    e.push_back(std::move(x));
  }
  {
    Entry x;
    x.name = "dg_fp8_gemm_workspace_size";
    Args& a = x.baseline;
    a.ints = {{"layout", DG_GEMM_LAYOUT_TN}, {"m", M}, {"n", N}, {"k", K}};
    x.enums = {"layout"};
    x.sizes = {"m", "n", "k"};
    x.outs = {"bytes"};
    x.stops_at_sm_cap = false;
    x.call = [](const Context&, const Args& a, const Handles&) {
      size_t bytes = 0;
      return dg_fp8_gemm_workspace_size(int32_t(a.ints.at("layout")), a.ints.at("m"), a.ints.at("n"), a.ints.at("k"),
                                        out_or_null(a, "bytes", &bytes));
    };
    e.push_back(std::move(x));
  }

  {
    // NVFP4 GEMV, rank 3: a [M, K/2, L], sfa [M, K/16, L], b [1, K/2, L], sfb [1, K/16, L], c [M, 1, L].
    Entry x;
    x.name = "dg_nvfp4_gemv";
    Args& a = x.baseline;
    const int64_t gm = 128, gk = 256, gl = 2;
    a.tensors["a"] = Spec{address(1), DG_DTYPE_FLOAT4_E2M1X2, {gm, gk / 2, gl}, {gk / 2, 1, gm * gk / 2}};
    a.tensors["sfa"] = Spec{address(2), DG_DTYPE_FLOAT8_E4M3, {gm, gk / 16, gl}, {gk / 16, 1, gm * gk / 16}};
    a.tensors["b"] = Spec{address(3), DG_DTYPE_FLOAT4_E2M1X2, {1, gk / 2, gl}, {gk / 2, 1, gk / 2}};
    a.tensors["sfb"] = Spec{address(4), DG_DTYPE_FLOAT8_E4M3, {1, gk / 16, gl}, {gk / 16, 1, gk / 16}};
    a.tensors["c"] = Spec{address(5), DG_DTYPE_FLOAT16, {gm, 1, gl}, {1, 1, gm}};
    x.operands = {"a", "sfa", "b", "sfb", "c"};
    x.aligned = {"a", "b", "c"};
    x.options = "gemv";
    x.stream = true;
    x.call = [](const Context& c, const Args& a, const Handles& h) {
      return dg_nvfp4_gemv(as_mut_stream(c, a), h["a"], h["sfa"], h["b"], h["sfb"], h["c"], &a.gemv);
    };
    e.push_back(std::move(x));
  }

  {
    // Hyper-connection pre-norm GEMM with 4 splits: a [M, K], b [24, K], d [4, M, 24], sqr_sum [4, M].
    Entry x;
    x.name = "dg_tf32_hc_prenorm_gemm";
    Args& a = x.baseline;
    const int64_t hn = 24, splits = 4;
    a.tensors["a"] = bf16(1, {M, K});
    a.tensors["b"] = f32(2, {hn, K});
    a.tensors["d"] = f32(3, {splits, M, hn});
    a.tensors["sqr_sum"] = f32(4, {splits, M});
    a.ints = {{"num_splits", splits}};
    x.sizes = {"num_splits"};
    x.operands = {"a", "b", "d", "sqr_sum"};
    x.stream = true;
    x.call = [](const Context& c, const Args& a, const Handles& h) {
      return dg_tf32_hc_prenorm_gemm(as_mut_stream(c, a), h["a"], h["b"], h["d"], h["sqr_sum"],
                                     int32_t(a.ints.at("num_splits")));
    };
    e.push_back(std::move(x));
  }

  {
    // Einsum, per-head form: a [b, h, r], b [h, d, r], d [b, h, d].
    Entry x;
    x.name = "dg_bf16_einsum";
    Args& a = x.baseline;
    const int64_t eb = 64, eh = 4, er = 128, ed = 64;
    a.tensors["a"] = bf16(1, {eb, eh, er});
    a.tensors["b"] = bf16(2, {eh, ed, er});
    a.tensors["d"] = bf16(3, {eb, eh, ed});
    x.operands = {"a", "b", "d"};
    x.aligned = {"a", "b", "d"};
    x.optional_tensors = {"c"};
    x.options = "gemm";
    x.stream = true;
    x.call = [](const Context& c, const Args& a, const Handles& h) {
      return dg_bf16_einsum(as_mut_stream(c, a), "bhr,hdr->bhd", h["a"], h["b"], h["d"], h["c"], gemm_opts(a));
    };
    e.push_back(std::move(x));
  }
  {
    // Einsum, batch sum: a [s, m, k], b [s, n, k], d and c FP32 [m, n].
    Entry x;
    x.name = "dg_bf16_einsum";
    Args& a = x.baseline;
    const int64_t es = 4, em = 64, en = 64, ek = 128;
    a.tensors["a"] = bf16(1, {es, em, ek});
    a.tensors["b"] = bf16(2, {es, en, ek});
    a.tensors["d"] = f32(3, {em, en});
    a.tensors["c"] = f32(4, {em, en});
    x.operands = {"a", "b", "d", "c"};
    x.aligned = {"a", "b", "d", "c"};
    x.optional_tensors = {"c"};
    x.options = "gemm";
    x.stream = true;
    x.call = [](const Context& c, const Args& a, const Handles& h) {
      return dg_bf16_einsum(as_mut_stream(c, a), "bmk,bnk->mn", h["a"], h["b"], h["d"], h["c"], gemm_opts(a));
    };
    e.push_back(std::move(x));
  }
  e.push_back(einsum_prepare_entry("dg_bf16_einsum_prepare", 64, 4, 128, 64, dg_bf16_einsum_prepare));

  {
    // FP8 einsum: a [b, h, r], b [h, d, r] E4M3, d [b, h, d]; sfa [b, h, r / 128] MN-major per head,
    // sfb [h, d / 128, r / 128].
    Entry x;
    x.name = "dg_fp8_einsum";
    Args& a = x.baseline;
    const int64_t eb = 64, eh = 4, er = 256, ed = 128;
    a.tensors["a"] = fp8(1, {eb, eh, er});
    a.tensors["b"] = fp8(2, {eh, ed, er});
    a.tensors["d"] = bf16(3, {eb, eh, ed});
    a.tensors["sfa"] = f32(5, {eb, eh, er / 128}, {1, eb * er / 128, eb});
    a.tensors["sfb"] = f32(6, {eh, ed / 128, er / 128});
    x.operands = {"a", "sfa", "b", "sfb", "d"};
    x.aligned = {"a", "sfa", "b", "sfb", "d"};
    x.optional_tensors = {"c"};
    x.options = "gemm";
    x.stream = true;
    x.call = [](const Context& c, const Args& a, const Handles& h) {
      return dg_fp8_einsum(as_mut_stream(c, a), "bhr,hdr->bhd", h["a"], h["sfa"], h["b"], h["sfb"], h["d"], h["c"],
                           gemm_opts(a));
    };
    e.push_back(std::move(x));
  }
  e.push_back(einsum_prepare_entry("dg_fp8_einsum_prepare", 64, 4, 256, 128, dg_fp8_einsum_prepare));

  // Scaling-factor layouts.
  for (const bool packed : {false, true}) {
    Entry x;
    x.name = packed ? "dg_get_mn_major_tma_aligned_packed_ue8m0_tensor" : "dg_get_mn_major_tma_aligned_tensor";
    Args& a = x.baseline;
    a.tensors["sf"] = f32(1, {128, 4});
    a.tensors["out"] = packed ? Spec{address(2), DG_DTYPE_INT32, {128, 1}, {1, 128}} : f32(2, {128, 4}, {1, 128});
    x.operands = {"sf", "out"};
    x.aligned = {"out"};
    x.stops_at_sm_cap = false;
    x.stream = true;
    x.call = [packed](const Context& c, const Args& a, const Handles& h) {
      return (packed ? dg_get_mn_major_tma_aligned_packed_ue8m0_tensor : dg_get_mn_major_tma_aligned_tensor)(
          as_mut_stream(c, a), h["sf"], h["out"]);
    };
    e.push_back(std::move(x));
  }
  for (const bool packed : {false, true}) {
    Entry x;
    x.name = packed ? "dg_get_mn_major_tma_aligned_packed_ue8m0_tensor_layout" : "dg_get_mn_major_tma_aligned_tensor_layout";
    Args& a = x.baseline;
    a.ints = {{"rank", 2}, {"mn", 128}, {"sf_k", 4}};
    x.enums = {"rank"};
    x.sizes = {"mn", "sf_k"};
    x.array_of = {{"mn", "sizes"}, {"sf_k", "sizes"}};
    x.stops_at_sm_cap = false;
    x.call = [packed](const Context&, const Args& a, const Handles&) {
      const int64_t sizes[3] = {a.ints.at("mn"), a.ints.at("sf_k"), 1};
      int64_t out_sizes[3], out_strides[3];
      size_t bytes = 0;
      return (packed ? dg_get_mn_major_tma_aligned_packed_ue8m0_tensor_layout : dg_get_mn_major_tma_aligned_tensor_layout)(
          int32_t(a.ints.at("rank")), out_or_null(a, "sizes", sizes), out_sizes, out_strides, &bytes);
    };
    x.outs = {"sizes"};
    e.push_back(std::move(x));
  }
  // K-grouped UE8M0 packing: sf [sum(ks) / 128, MN], ks on the host (2 + 0 + 5 K blocks, 1 + 0 + 2
  // packed rows). ks is listed with the out-pointers for the NULL class.
  static const int64_t kPackKs[3] = {256, 0, 640};
  for (const bool run : {false, true}) {
    Entry x;
    x.name = run ? "dg_get_k_grouped_mn_major_tma_aligned_packed_ue8m0_tensor"
                 : "dg_get_k_grouped_mn_major_tma_aligned_packed_ue8m0_tensor_layout";
    Args& a = x.baseline;
    a.ints = {{"num_groups", 3}};
    x.sizes = {"num_groups"};
    x.outs = {"ks"};
    x.stops_at_sm_cap = false;
    if (run) {
      a.tensors["sf"] = f32(1, {7, 128});
      a.tensors["out"] = i32(2, {3, 128});
      a.tensors["ks_tensor"] = i32(3, {3});
      x.operands = {"sf", "out", "ks_tensor"};
      x.aligned = {"sf", "out", "ks_tensor"};
      x.optional_tensors = {"ks_tensor"};
      x.stream = true;
    } else {
      a.ints["mn"] = 128;
      x.sizes.push_back("mn");
    }
    x.call = [run](const Context& c, const Args& a, const Handles& h) {
      const int64_t* ks = out_or_null(a, "ks", kPackKs);
      if (run)
        return dg_get_k_grouped_mn_major_tma_aligned_packed_ue8m0_tensor(as_mut_stream(c, a), h["sf"], ks,
                                                                          a.ints.at("num_groups"), h["ks_tensor"],
                                                                          h["out"]);
      int64_t sizes[2], strides[2];
      size_t bytes = 0;
      return dg_get_k_grouped_mn_major_tma_aligned_packed_ue8m0_tensor_layout(a.ints.at("mn"), ks,
                                                                              a.ints.at("num_groups"), sizes, strides,
                                                                              &bytes);
    };
    e.push_back(std::move(x));
  }
  for (const bool run : {false, true}) {
    Entry x;
    x.name = run ? "dg_transform_sf_into_required_layout" : "dg_transform_sf_layout";
    Args& a = x.baseline;
    a.tensors["sf"] = f32(1, {128, 2});
    a.ints = {{"mn", 128}, {"k", 256}};
    a.recipe.arch_major = 9;
    if (run) {
      a.tensors["out"] = f32(2, {128, 2}, {1, 128});
      x.operands = {"sf", "out"};
      x.aligned = {"out"};
      x.stream = true;
    }
    x.options = "recipe";
    x.sizes = {"mn", "k"};
    x.stops_at_sm_cap = false;
    x.call = [run](const Context& c, const Args& a, const Handles& h) {
      if (run)
        return dg_transform_sf_into_required_layout(as_mut_stream(c, a), h["sf"], a.ints.at("mn"), a.ints.at("k"),
                                                    &a.recipe, h["out"]);
      int32_t is_input = 0;
      dg_dtype dtype = 0;
      int64_t sizes[3], strides[3];
      size_t bytes = 0;
      return dg_transform_sf_layout(as_stream(c, a), h["sf"], a.ints.at("mn"), a.ints.at("k"), &a.recipe, &is_input,
                                    &dtype, sizes, strides, &bytes);
    };
    e.push_back(std::move(x));
  }
  {
    // Its two error paths (a NULL buffer with a capacity, a capacity below the report's size) take
    // no class of the matrix: test_info_report.cpp checks them.
    Entry x;
    x.name = "dg_info_report";
    x.stops_at_sm_cap = false;
    x.call = [](const Context&, const Args&, const Handles&) {
      size_t required = 0;
      return dg_info_report(nullptr, 0, &required);
    };
    e.push_back(std::move(x));
  }
  {
    // The problem list and the options are text and a struct the matrix's classes do not cover:
    // tests/unit/test_tuning.cpp checks their errors. A valid call stops at the SM cap.
    Entry x;
    x.name = "dg_tune";
    x.stream = true;
    x.call = [](const Context& c, const Args& a, const Handles&) {
      int64_t tuned = 0;
      dg_tune_options o = DG_TUNE_OPTIONS_INIT;
      o.table_path = "/nonexistent/dg-tuning-table.txt";  // never written: the call stops before
      return dg_tune(as_mut_stream(c, a), "dense fp8 nt n=7168 k=2048 m=4096\n", &o, &tuned);
    };
    e.push_back(std::move(x));
  }
  {
    Entry x;
    x.name = "dg_prepare_problems";
    x.stream = true;
    x.call = [](const Context& c, const Args& a, const Handles&) {
      int64_t prepared = 0;
      return dg_prepare_problems(as_mut_stream(c, a), "dense bf16 nt n=256 k=512 m=16\n", &prepared);
    };
    e.push_back(std::move(x));
  }
  {
    Entry x;
    x.name = "dg_get_tma_aligned_size";
    x.baseline.ints = {{"x", 100}, {"element_size", 2}};
    x.sizes = {"x"};
    x.enums = {"element_size"};
    x.outs = {"aligned"};
    x.stops_at_sm_cap = false;
    x.call = [](const Context&, const Args& a, const Handles&) {
      int64_t aligned = 0;
      return dg_get_tma_aligned_size(a.ints.at("x"), size_t(a.ints.at("element_size")),
                                     out_or_null(a, "aligned", &aligned));
    };
    e.push_back(std::move(x));
  }
  {
    Entry x;
    x.name = "dg_tensor_create";
    x.baseline.ints = {{"dtype", DG_DTYPE_BFLOAT16}, {"rank", 2}, {"size0", 64}, {"size1", 64}};
    x.enums = {"dtype", "rank"};
    x.sizes = {"size0", "size1"};
    x.array_of = {{"size0", "sizes"}, {"size1", "sizes"}};
    x.outs = {"tensor", "sizes"};
    x.stops_at_sm_cap = false;
    x.call = [](const Context&, const Args& a, const Handles&) {
      const int64_t sizes[4] = {a.ints.at("size0"), a.ints.at("size1"), 1, 1};
      dg_tensor* t = nullptr;
      const dg_status s = dg_tensor_create(out_or_null(a, "tensor", &t), address(1), dg_dtype(a.ints.at("dtype")),
                                           int32_t(a.ints.at("rank")), out_or_null(a, "sizes", sizes), nullptr);
      dg_tensor_destroy(t);
      return s;
    };
    e.push_back(std::move(x));
  }
  {
    Entry x;
    x.name = "dg_tensor_get";
    x.baseline.tensors["tensor"] = bf16(1, {4, 4});
    x.stops_at_sm_cap = false;
    x.validates_tensors = false;
    x.call = [](const Context&, const Args&, const Handles& h) {
      return dg_tensor_get(h["tensor"], nullptr, nullptr, nullptr, nullptr, nullptr);
    };
    e.push_back(std::move(x));
  }
  {
    Entry x;
    x.name = "dg_tensor_set_data";
    x.baseline.tensors["tensor"] = bf16(1, {4, 4});
    x.stops_at_sm_cap = false;
    x.validates_tensors = false;
    x.call = [](const Context&, const Args&, const Handles& h) {
      return dg_tensor_set_data(const_cast<dg_tensor*>(h["tensor"]), address(2));
    };
    e.push_back(std::move(x));
  }
  {
    Entry x;
    x.name = "dg_stream_create";
    x.baseline.ints = {{"device", 0}, {"flags", DG_STREAM_BORROW}};
    x.enums = {"flags"};
    x.outs = {"stream"};
    x.stops_at_sm_cap = false;
    x.call = [](const Context&, const Args& a, const Handles&) {
      dg_stream* s = nullptr;
      const dg_status st = dg_stream_create(out_or_null(a, "stream", &s), int32_t(a.ints.at("device")), nullptr,
                                            int32_t(a.ints.at("flags")), nullptr);
      dg_stream_destroy(s);
      return st;
    };
    e.push_back(std::move(x));
  }
  // The named form's gpu_name checks: tests/unit/test_tuning.cpp (named offline streams).
  for (const bool named : {false, true}) {
    Entry x;
    x.name = named ? "dg_stream_create_offline_named" : "dg_stream_create_offline";
    x.baseline.ints = {{"arch_major", 9}, {"arch_minor", 0}, {"num_sms", 132}};
    x.enums = {"arch_major", "arch_minor"};
    x.sizes = {"num_sms"};
    x.outs = {"stream"};
    x.stops_at_sm_cap = false;
    x.call = [named](const Context&, const Args& a, const Handles&) {
      dg_stream* s = nullptr;
      dg_stream** out = out_or_null(a, "stream", &s);
      const int32_t major = int32_t(a.ints.at("arch_major")), minor = int32_t(a.ints.at("arch_minor"));
      const int32_t sms = int32_t(a.ints.at("num_sms"));
      const dg_status st = named ? dg_stream_create_offline_named(out, major, minor, sms, "NVIDIA H200", nullptr)
                                 : dg_stream_create_offline(out, major, minor, sms, nullptr);
      dg_stream_destroy(s);
      return st;
    };
    e.push_back(std::move(x));
  }
  for (const char* name : {"dg_stream_get_cu_stream", "dg_stream_get_device", "dg_stream_synchronize"}) {
    Entry x;
    x.name = name;
    x.stops_at_sm_cap = false;
    x.stream = true;
    const std::string n = name;
    if (n != "dg_stream_synchronize") x.outs = {n == "dg_stream_get_device" ? "device" : "cu_stream"};
    x.call = [n](const Context& c, const Args& a, const Handles&) {
      void* cu = nullptr;
      int32_t dev = 0;
      if (n == "dg_stream_get_cu_stream") return dg_stream_get_cu_stream(as_stream(c, a), out_or_null(a, "cu_stream", &cu));
      if (n == "dg_stream_get_device") return dg_stream_get_device(as_stream(c, a), out_or_null(a, "device", &dev));
      return dg_stream_synchronize(as_mut_stream(c, a));
    };
    e.push_back(std::move(x));
  }
  {
    Entry x;
    x.name = "dg_device_get_capability";
    x.baseline.ints = {{"device", 0}};
    x.outs = {"major", "minor"};
    x.stops_at_sm_cap = false;
    x.call = [](const Context&, const Args& a, const Handles&) {
      int32_t major = 0, minor = 0;
      return dg_device_get_capability(int32_t(a.ints.at("device")), out_or_null(a, "major", &major),
                                      out_or_null(a, "minor", &minor));
    };
    e.push_back(std::move(x));
  }
  {
    Entry x;
    x.name = "dg_device_count";
    x.outs = {"count"};
    x.stops_at_sm_cap = false;
    x.call = [](const Context&, const Args& a, const Handles&) {
      int32_t n = 0;
      return dg_device_count(out_or_null(a, "count", &n));
    };
    e.push_back(std::move(x));
  }
  // Settings.
  {
    Entry x;
    x.name = "dg_config_set_int";
    x.baseline.ints = {{"key", DG_CONFIG_TC_UTIL}, {"value", 50}};
    x.enums = {"key"};
    x.sizes = {"value"};
    x.outs = {"config"};
    x.stops_at_sm_cap = false;
    x.call = [](const Context&, const Args& a, const Handles&) {
      dg_config* cfg = nullptr;
      dg_config_create(&cfg);
      const dg_status s = dg_config_set_int(out_or_null(a, "config", cfg), int32_t(a.ints.at("key")), a.ints.at("value"));
      dg_config_destroy(cfg);
      return s;
    };
    e.push_back(std::move(x));
  }
  {
    Entry x;
    x.name = "dg_config_get_int";
    x.baseline.ints = {{"key", DG_CONFIG_TC_UTIL}};
    x.enums = {"key"};
    x.outs = {"config", "value"};
    x.stops_at_sm_cap = false;
    x.call = [](const Context&, const Args& a, const Handles&) {
      dg_config* cfg = nullptr;
      dg_config_create(&cfg);
      int64_t v = 0;
      const dg_status s =
          dg_config_get_int(out_or_null(a, "config", cfg), int32_t(a.ints.at("key")), out_or_null(a, "value", &v));
      dg_config_destroy(cfg);
      return s;
    };
    e.push_back(std::move(x));
  }
  {
    Entry x;
    x.name = "dg_config_set_string";
    x.baseline.ints = {{"key", DG_CONFIG_CACHE_DIR}};
    x.enums = {"key"};
    x.outs = {"config", "value"};
    x.stops_at_sm_cap = false;
    x.call = [](const Context&, const Args& a, const Handles&) {
      dg_config* cfg = nullptr;
      dg_config_create(&cfg);
      const dg_status s = dg_config_set_string(out_or_null(a, "config", cfg), int32_t(a.ints.at("key")),
                                               out_or_null(a, "value", "/tmp/dg-matrix"));
      dg_config_destroy(cfg);
      return s;
    };
    e.push_back(std::move(x));
  }
  {
    Entry x;
    x.name = "dg_config_get_string";
    x.baseline.ints = {{"key", DG_CONFIG_CACHE_DIR}, {"capacity", 256}};
    x.enums = {"key"};
    x.outs = {"config"};
    x.stops_at_sm_cap = false;
    x.call = [](const Context&, const Args& a, const Handles&) {
      dg_config* cfg = nullptr;
      dg_config_create(&cfg);
      dg_config_set_string(cfg, DG_CONFIG_CACHE_DIR, "/tmp/dg-matrix");
      char buf[256];
      const dg_status s = dg_config_get_string(out_or_null(a, "config", cfg), int32_t(a.ints.at("key")), buf,
                                               size_t(a.ints.at("capacity")), nullptr);
      dg_config_destroy(cfg);
      return s;
    };
    e.push_back(std::move(x));
  }
  {
    Entry x;
    x.name = "dg_config_get_bounds";
    x.baseline.ints = {{"key", DG_CONFIG_NUM_SMS}};
    x.enums = {"key"};
    x.stops_at_sm_cap = false;
    x.call = [](const Context&, const Args& a, const Handles&) {
      return dg_config_get_bounds(int32_t(a.ints.at("key")), nullptr, nullptr);
    };
    e.push_back(std::move(x));
  }
  // MQA logits: H 64, D 128, S_q 8, S_kv 512.
  {
    Entry x;
    x.name = "dg_fp8_mqa_logits";
    Args& a = x.baseline;
    a.tensors["q"] = fp8(1, {8, 64, 128});
    a.tensors["kv"] = fp8(2, {512, 128});
    a.tensors["kv_sf"] = f32(3, {512});
    a.tensors["weights"] = f32(4, {8, 64});
    a.tensors["cu_seq_len_k_start"] = i32(5, {8});
    a.tensors["cu_seq_len_k_end"] = i32(6, {8});
    a.tensors["logits"] = f32(7, {8, 512});
    a.ints["clean_logits"] = 1;
    x.operands = {"q", "kv", "kv_sf", "weights", "cu_seq_len_k_start", "cu_seq_len_k_end", "logits"};
    x.aligned = {"q", "kv", "kv_sf", "weights", "cu_seq_len_k_start", "cu_seq_len_k_end", "logits"};
    x.enums = {"clean_logits"};
    x.stream = true;
    x.call = [](const Context& c, const Args& a, const Handles& h) {
      return dg_fp8_mqa_logits(as_mut_stream(c, a), h["q"], h["kv"], h["kv_sf"], h["weights"], h["cu_seq_len_k_start"],
                               h["cu_seq_len_k_end"], h["logits"], int32_t(a.ints.at("clean_logits")));
    };
    e.push_back(std::move(x));
  }
  // The compressed layout: the same problem, rows of max_seqlen_k = 300 columns.
  {
    Entry x;
    x.name = "dg_fp8_mqa_logits_compressed";
    Args& a = x.baseline;
    a.tensors["q"] = fp8(1, {8, 64, 128});
    a.tensors["kv"] = fp8(2, {512, 128});
    a.tensors["kv_sf"] = f32(3, {512});
    a.tensors["weights"] = f32(4, {8, 64});
    a.tensors["cu_seq_len_k_start"] = i32(5, {8});
    a.tensors["cu_seq_len_k_end"] = i32(6, {8});
    a.tensors["logits"] = f32(7, {8, 300}, {512, 1});
    a.ints = {{"max_seqlen_k", 300}, {"clean_logits", 0}};
    x.operands = {"q", "kv", "kv_sf", "weights", "cu_seq_len_k_start", "cu_seq_len_k_end", "logits"};
    x.aligned = x.operands;
    x.enums = {"clean_logits"};
    x.sizes = {"max_seqlen_k"};
    x.stream = true;
    x.call = [](const Context& c, const Args& a, const Handles& h) {
      return dg_fp8_mqa_logits_compressed(as_mut_stream(c, a), h["q"], h["kv"], h["kv_sf"], h["weights"],
                                          h["cu_seq_len_k_start"], h["cu_seq_len_k_end"], a.ints.at("max_seqlen_k"),
                                          h["logits"], int32_t(a.ints.at("clean_logits")));
    };
    e.push_back(std::move(x));
  }
  // SwiGLU weight interleaving: [G 2, 2I 512, K 256] FP8, blocks of 128 rows.
  {
    Entry x;
    x.name = "dg_swiglu_interleave";
    Args& a = x.baseline;
    a.tensors["src"] = fp8(1, {2, 512, 256});
    a.tensors["dst"] = fp8(2, {2, 512, 256});
    a.ints = {{"block", 128}};
    x.operands = {"src", "dst"};
    x.sizes = {"block"};
    x.stops_at_sm_cap = false;
    x.stream = true;
    x.call = [](const Context& c, const Args& a, const Handles& h) {
      return dg_swiglu_interleave(as_mut_stream(c, a), h["src"], h["dst"], a.ints.at("block"));
    };
    e.push_back(std::move(x));
  }
  // FP8 quantization: x [256, 256] BF16 (G 2 for the batched forms), scales in the GEMMs' layouts.
  for (const char* form : {"per_token", "per_token_contiguous", "per_token_masked", "per_block", "mn_major"}) {
    Entry x;
    x.name = std::string("dg_quantize_fp8_") + form;
    Args& a = x.baseline;
    const std::string f = form;
    const bool masked = f == "per_token_masked";
    const std::vector<int64_t> xs = masked ? std::vector<int64_t>{2, 256, 256} : std::vector<int64_t>{256, 256};
    a.tensors["x"] = bf16(1, xs);
    a.tensors["out"] = fp8(2, xs);
    if (f == "per_block") a.tensors["sf"] = f32(3, {2, 2});
    else if (masked) a.tensors["sf"] = f32(3, {2, 256, 2}, {512, 1, 256});
    else a.tensors["sf"] = f32(3, {256, 2}, {1, 256});
    x.operands = {"x", "out", "sf"};
    x.aligned = {"x", "sf"};
    if (f == "per_token_contiguous") {
      a.tensors["grouped_layout"] = i32(4, {256});
      a.ints = {{"layout", DG_M_GROUPED_LAYOUT_INDICES}, {"num_groups", 4}};
      x.operands.push_back("grouped_layout");
      x.aligned.push_back("grouped_layout");
      x.enums = {"layout"};
      x.sizes = {"num_groups"};
    }
    if (masked) {
      a.tensors["masked_m"] = i32(4, {2});
      x.operands.push_back("masked_m");
      x.aligned.push_back("masked_m");
    }
    x.options = "quant";
    x.stops_at_sm_cap = masked;  // its grid follows the SM count
    x.stream = true;
    x.call = [f](const Context& c, const Args& a, const Handles& h) {
      dg_stream* s = as_mut_stream(c, a);
      if (f == "per_token") return dg_quantize_fp8_per_token(s, h["x"], h["out"], h["sf"], &a.quant);
      if (f == "per_token_masked") return dg_quantize_fp8_per_token_masked(s, h["x"], h["out"], h["sf"], h["masked_m"], &a.quant);
      if (f == "per_block") return dg_quantize_fp8_per_block(s, h["x"], h["out"], h["sf"], &a.quant);
      if (f == "mn_major") return dg_quantize_fp8_mn_major(s, h["x"], h["out"], h["sf"], &a.quant);
      return dg_quantize_fp8_per_token_contiguous(s, h["x"], h["out"], h["sf"], h["grouped_layout"],
                                                  int32_t(a.ints.at("layout")), a.ints.at("num_groups"), &a.quant);
    };
    e.push_back(std::move(x));
  }
  // K-grouped quantization: x [130, 256] BF16 in groups of 100 and 30 rows, out and sf padded to
  // 256 rows, out MN-major [256, 256] or K-major [256 * 256]. ks is listed with the out-pointers for
  // the NULL class (NULL ks with no ks_tensor: no counts at all).
  static const int64_t kQuantKs[2] = {100, 30};
  for (const bool k_major : {false, true}) {
    Entry x;
    x.name = "dg_quantize_fp8_k_grouped";
    Args& a = x.baseline;
    a.tensors["x"] = bf16(1, {130, 256});
    a.tensors["out"] = k_major ? fp8(2, {256 * 256}) : fp8(2, {256, 256});
    a.tensors["sf"] = f32(3, {256, 2}, {1, 256});
    a.ints = {{"num_groups", 2}};
    x.sizes = {"num_groups"};
    x.outs = {"ks"};
    x.operands = {"x", "out", "sf"};
    x.aligned = {"x", "sf"};
    if (k_major) x.aligned.push_back("out");
    x.options = "quant";
    x.stops_at_sm_cap = true;  // its CTAs take more blocks on a device with fewer SMs
    x.stream = true;
    x.call = [](const Context& c, const Args& a, const Handles& h) {
      return dg_quantize_fp8_k_grouped(as_mut_stream(c, a), h["x"], h["out"], h["sf"], out_or_null(a, "ks", kQuantKs),
                                       a.ints.at("num_groups"), h["ks_tensor"], &a.quant);
    };
    e.push_back(std::move(x));
  }
  // Paged MQA logits: B 4, next_n 2, H 64, D 128, 40 cache blocks, 10 per sequence, 600 keys.
  {
    Entry x;
    x.name = "dg_get_paged_mqa_logits_metadata";
    Args& a = x.baseline;
    a.tensors["context_lens"] = i32(1, {4});
    a.tensors["schedule_meta"] = i32(2, {133, 2});
    a.ints = {{"block_kv", 64}, {"num_sms", 132}};
    x.operands = {"context_lens", "schedule_meta"};
    x.aligned = {"context_lens", "schedule_meta"};
    x.enums = {"block_kv"};
    x.sizes = {"num_sms"};
    x.free_last_dim = {"context_lens"};  // B is the schedule's own
    x.stream = true;
    x.call = [](const Context& c, const Args& a, const Handles& h) {
      return dg_get_paged_mqa_logits_metadata(as_mut_stream(c, a), h["context_lens"], int32_t(a.ints.at("block_kv")),
                                              int32_t(a.ints.at("num_sms")), h["schedule_meta"]);
    };
    e.push_back(std::move(x));
  }
  {
    Entry x;
    x.name = "dg_fp8_paged_mqa_logits";
    Args& a = x.baseline;
    a.tensors["q"] = fp8(1, {4, 2, 64, 128});
    a.tensors["kv_cache"] = Spec{address(2), DG_DTYPE_UINT8, {40, 64, 1, 132}, {}};
    a.tensors["weights"] = f32(3, {8, 64});
    a.tensors["context_lens"] = i32(4, {4});
    a.tensors["block_table"] = i32(5, {4, 10});
    a.tensors["schedule_meta"] = i32(6, {133, 2});
    a.tensors["logits"] = f32(7, {8, 600});
    a.ints = {{"max_context_len", 600}, {"clean_logits", 1}};
    x.operands = {"q", "kv_cache", "weights", "context_lens", "block_table", "schedule_meta", "logits"};
    x.aligned = x.operands;
    x.enums = {"clean_logits"};
    x.sizes = {"max_context_len"};
    x.free_last_dim = {"block_table"};  // any number of blocks per sequence
    x.stream = true;
    x.call = [](const Context& c, const Args& a, const Handles& h) {
      return dg_fp8_paged_mqa_logits(as_mut_stream(c, a), h["q"], h["kv_cache"], h["weights"], h["context_lens"],
                                     h["block_table"], h["schedule_meta"], a.ints.at("max_context_len"), h["logits"],
                                     int32_t(a.ints.at("clean_logits")));
    };
    e.push_back(std::move(x));
  }
  {
    Entry x;
    x.name = "dg_paged_mqa_logits_prepare";
    x.baseline.ints = {{"heads", 64}, {"head_dim", 128}, {"next_n", 2}, {"logits_dtype", DG_DTYPE_FLOAT32}};
    x.enums = {"heads", "head_dim", "next_n", "logits_dtype"};
    x.stream = true;
    x.call = [](const Context& c, const Args& a, const Handles&) {
      return dg_paged_mqa_logits_prepare(as_mut_stream(c, a), int32_t(a.ints.at("heads")),
                                         int32_t(a.ints.at("head_dim")), int32_t(a.ints.at("next_n")),
                                         dg_dtype(a.ints.at("logits_dtype")));
    };
    e.push_back(std::move(x));
  }
  {
    Entry x;
    x.name = "dg_get_mqa_logits_layout";
    x.baseline.ints = {{"seq_len", 8}, {"seq_len_kv", 512}, {"logits_dtype", DG_DTYPE_FLOAT32}};
    x.sizes = {"seq_len", "seq_len_kv"};
    x.enums = {"logits_dtype"};
    x.stops_at_sm_cap = false;
    x.call = [](const Context&, const Args& a, const Handles&) {
      int64_t sizes[2], strides[2];
      size_t bytes = 0;
      return dg_get_mqa_logits_layout(a.ints.at("seq_len"), a.ints.at("seq_len_kv"),
                                      dg_dtype(a.ints.at("logits_dtype")), sizes, strides, &bytes);
    };
    e.push_back(std::move(x));
  }
  {
    Entry x;
    x.name = "dg_config_create";
    x.outs = {"config"};
    x.stops_at_sm_cap = false;
    x.call = [](const Context&, const Args& a, const Handles&) {
      dg_config* cfg = nullptr;
      const dg_status s = dg_config_create(out_or_null(a, "config", &cfg));
      dg_config_destroy(cfg);
      return s;
    };
    e.push_back(std::move(x));
  }
  {
    Entry x;
    x.name = "dg_config_clone";
    x.outs = {"source", "config"};
    x.stops_at_sm_cap = false;
    x.call = [](const Context&, const Args& a, const Handles&) {
      dg_config* src = nullptr;
      dg_config_create(&src);
      dg_config* cfg = nullptr;
      const dg_status s = dg_config_clone(out_or_null(a, "source", src), out_or_null(a, "config", &cfg));
      dg_config_destroy(cfg);
      dg_config_destroy(src);
      return s;
    };
    e.push_back(std::move(x));
  }
  {
    Entry x;
    x.name = "dg_set_num_sms";
    x.baseline.ints = {{"num_sms", 0}};
    x.sizes = {"num_sms"};
    x.stops_at_sm_cap = false;
    x.call = [](const Context&, const Args& a, const Handles&) {
      const int64_t v = a.ints.at("num_sms");
      return dg_set_num_sms(v > INT32_MAX ? INT32_MAX : int32_t(v));
    };
    e.push_back(std::move(x));
  }
  {
    Entry x;
    x.name = "dg_set_log_level";
    x.baseline.ints = {{"level", -1}};  // -1: keep the current level
    x.enums = {"level"};
    x.stops_at_sm_cap = false;
    x.call = [](const Context&, const Args& a, const Handles&) {
      const int64_t v = a.ints.at("level");
      return dg_set_log_level(v == -1 ? dg_get_log_level() : int32_t(v));
    };
    e.push_back(std::move(x));
  }
  {
    Entry x;
    x.name = "dg_set_tc_util";
    x.baseline.ints = {{"ratio", 0}};  // tenths: 77 and -5 are out of [0, 1]
    x.enums = {"ratio"};
    x.stops_at_sm_cap = false;
    x.call = [](const Context&, const Args& a, const Handles&) { return dg_set_tc_util(double(a.ints.at("ratio")) / 10.0); };
    e.push_back(std::move(x));
  }
  return e;
}

// Entry points that take nothing to validate (queries, destructors that accept NULL, the log
// callback, which accepts any function including NULL).
const std::set<std::string> kNoArguments = {
    "dg_status_string", "dg_last_error", "dg_version", "dg_version_number", "dg_get_log_level",
    "dg_dtype_size", "dg_dtype_name", "dg_config_destroy", "dg_get_num_sms", "dg_get_tc_util",
    "dg_stream_destroy", "dg_tensor_destroy", "dg_get_mk_alignment_for_contiguous_layout",
    "dg_jit_get_stats", "dg_cublaslt_workspace_size", "dg_cublaslt_available", "dg_set_log_callback"};

struct Case {
  std::string cls, arg;
  Args args;
  std::vector<dg_status> statuses;  // any of these
  std::vector<std::string> needles;  // all of these in dg_last_error()
};

// One wrong dtype per tensor: the first of these that differs from the baseline's.
dg_dtype other_dtype(dg_dtype d) { return d == DG_DTYPE_FLOAT16 ? DG_DTYPE_UINT8 : DG_DTYPE_FLOAT16; }

// The tensors an entry point writes: NVFP4 GEMV's c, every other entry point's d, out, logits,
// schedule_meta and sqr_sum (c of a GEMM is read).
std::vector<std::string> written_tensors(const Entry& x) {
  std::vector<std::string> names;
  for (const auto& [name, spec] : x.baseline.tensors)
    if (name == "d" || name == "out" || name == "logits" || name == "schedule_meta" || name == "sqr_sum" ||
        (name == "c" && x.name == "dg_nvfp4_gemv"))
      names.push_back(name);
  return names;
}

// Whether two elements of the descriptor share an offset (exhaustive: baselines are small).
bool overlaps(const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  if (n <= 1) return false;
  REQUIRE(n <= (int64_t(1) << 22));
  std::vector<int64_t> offsets;
  offsets.reserve(size_t(n));
  std::vector<int64_t> idx(sizes.size(), 0);
  for (int64_t e = 0; e < n; ++e) {
    int64_t off = 0;
    for (size_t d = 0; d < sizes.size(); ++d) off += idx[d] * strides[d];
    offsets.push_back(off);
    for (size_t d = sizes.size(); d-- > 0;) {
      if (++idx[d] < sizes[d]) break;
      idx[d] = 0;
    }
  }
  std::sort(offsets.begin(), offsets.end());
  return std::adjacent_find(offsets.begin(), offsets.end()) != offsets.end();
}

// Stride sets that make `spec`'s elements overlap: all zero, the outermost dimension of size > 1
// at stride 0, and the largest stride brought down onto the smallest.
std::vector<std::vector<int64_t>> aliasing_strides(const Spec& spec) {
  std::vector<int64_t> base = spec.strides;
  if (base.empty()) {
    base.assign(spec.sizes.size(), 1);
    for (size_t i = spec.sizes.size() - 1; i-- > 0;) base[i] = base[i + 1] * std::max<int64_t>(spec.sizes[i + 1], 1);
  }
  std::vector<std::vector<int64_t>> out;
  auto keep = [&](std::vector<int64_t> st) {
    if (overlaps(spec.sizes, st) && std::find(out.begin(), out.end(), st) == out.end()) out.push_back(std::move(st));
  };
  keep(std::vector<int64_t>(base.size(), 0));
  for (size_t d = 0; d < base.size(); ++d)
    if (spec.sizes[d] > 1) {
      std::vector<int64_t> st = base;
      st[d] = 0;
      keep(st);
      break;
    }
  std::vector<int64_t> st = base;
  size_t hi = 0, lo = 0;
  for (size_t d = 0; d < st.size(); ++d) {
    if (spec.sizes[d] <= 1) continue;
    if (st[d] > st[hi] || spec.sizes[hi] <= 1) hi = d;
    if (st[d] < st[lo] || spec.sizes[lo] <= 1) lo = d;
  }
  st[hi] = std::max<int64_t>(st[lo], 1);
  keep(st);
  return out;
}

std::vector<Case> generate(const Entry& x) {
  std::vector<Case> cases;
  const Args& base = x.baseline;
  const std::vector<dg_status> invalid = {DG_ERROR_INVALID_ARGUMENT};
  const std::vector<dg_status> refused = {DG_ERROR_INVALID_ARGUMENT, DG_ERROR_UNSUPPORTED};
  auto add = [&](std::string cls, std::string arg, Args a, std::vector<dg_status> st, std::vector<std::string> needles) {
    cases.push_back(Case{std::move(cls), std::move(arg), std::move(a), std::move(st), std::move(needles)});
  };
  if (x.stream) {
    Args a = base;
    a.null_stream = true;
    add("null_handle", "stream", a, invalid, {"stream"});
  }
  for (const auto& [name, spec] : base.tensors) {
    if (!x.validates_tensors) {
      Args a = base;
      a.tensors.erase(name);
      add("null_handle", name, a, invalid, {name});
      continue;
    }
    if (!x.optional_tensors.count(name)) {
      Args a = base;
      a.tensors.erase(name);
      add("null_handle", name, a, invalid, {name});
    }
    {
      Args a = base;
      a.tensors[name].dtype = other_dtype(spec.dtype);
      add("wrong_dtype", name, a, invalid, {name});
    }
    {
      Args a = base;
      Spec& s = a.tensors[name];
      // Rank 4, which no entry point takes (one more dimension could be a legal batched form).
      if (s.sizes.size() < 4) {
        while (s.sizes.size() < 4) {
          s.sizes.insert(s.sizes.begin(), 2);
          if (!s.strides.empty()) s.strides.insert(s.strides.begin(), int64_t(1) << (20 + s.sizes.size()));
        }
        add("wrong_rank", name, a, invalid, {name});
      }
    }
    if (!x.free_last_dim.count(name)) {
      // A size that disagrees with the other operands (the last dimension grows by 16).
      Args a = base;
      Spec& s = a.tensors[name];
      s.sizes.back() += 16;
      s.strides.clear();
      add("size_mismatch", name, a, refused, {});
    }
    {
      // Sizes at the int64 boundary: a dimension of 2^62 elements (representable, but every
      // product with it overflows or exceeds the kernels' 32-bit indexing).
      Args a = base;
      Spec& s = a.tensors[name];
      s.sizes.front() = kBig / 8;
      s.strides.clear();
      for (size_t i = 1; i < s.sizes.size(); ++i) s.sizes[i] = 1;
      add("overflow", name, a, refused, {});
    }
    if (spec.sizes.size() >= 2) {
      // An empty tensor (last size 0) whose other sizes are huge, the batch size (rank 3) kept: no
      // elements, but a product of the other sizes overflows (the K-grouped D [G, M, 0] once made
      // G x M wrap in a message).
      Args a = base;
      Spec& s = a.tensors[name];
      for (size_t i = s.sizes.size() > 2 ? 1 : 0; i + 1 < s.sizes.size(); ++i) s.sizes[i] = kBig + kBig / 2;
      s.sizes.back() = 0;
      s.strides.clear();
      add("overflow", name, a, refused, {});
    }
  }
  for (const std::string& name : x.operands) {
    Args a = base;
    a.tensors[name].data = nullptr;
    add("null_data", name, a, invalid, {name, "NULL"});
  }
  for (const std::string& name : x.aligned) {
    Args a = base;
    a.tensors[name].data = static_cast<char*>(a.tensors[name].data) + 1;
    add("misaligned", name, a, refused, {name});
  }
  for (const std::string& name : x.outs) {
    Args a = base;
    a.null_out.insert(name);
    add("null_handle", name, a, invalid, {name});
  }
  for (const std::string& name : written_tensors(x)) {
    // Outputs whose elements share memory: threads writing them in parallel would race.
    for (const std::vector<int64_t>& strides : aliasing_strides(base.tensors.at(name))) {
      Args a = base;
      a.tensors[name].strides = strides;
      add("overlap", name, a, refused, {name});
    }
  }
  for (const std::string& name : x.enums) {
    for (const int64_t v : {int64_t(77), int64_t(-5)}) {
      Args a = base;
      a.ints[name] = v;
      add("bad_enum", name, a, refused, {name});
    }
  }
  for (const std::string& name : x.sizes) {
    for (const int64_t v : {INT64_MAX, int64_t(-1)}) {
      Args a = base;
      a.ints[name] = v;
      add("overflow", name, a, refused, {});
    }
  }
  if (x.options == "gemm") {
    Args a = base;
    a.gemm.struct_size = 3;
    add("bad_options", "options", a, invalid, {"options", "struct_size"});
    // Every field the config key packs: a negative value must be refused before it is shifted.
    const std::pair<const char*, int32_t dg_gemm_options::*> fields[] = {
        {"block_m", &dg_gemm_options::block_m},
        {"block_n", &dg_gemm_options::block_n},
        {"num_stages", &dg_gemm_options::num_stages},
        {"cluster", &dg_gemm_options::cluster},
        {"multicast_a", &dg_gemm_options::multicast_a},
        {"num_math_warpgroups", &dg_gemm_options::num_math_warpgroups},
        {"num_sms", &dg_gemm_options::num_sms},
        {"fp8_promotion", &dg_gemm_options::fp8_promotion},
        {"fp8_promotion_slices", &dg_gemm_options::fp8_promotion_slices},
        {"split_k", &dg_gemm_options::split_k}};
    for (const auto& [field, member] : fields) {
      for (const int32_t v : {-16, INT32_MAX}) {
        Args b = base;
        b.gemm.*member = v;
        add("bad_options", std::string("options.") + field, b, invalid, {std::string("options.") + field});
      }
    }
    Args r = base;
    r.gemm.recipe = 9;
    add("bad_enum", "options.recipe", r, invalid, {"options.recipe"});
    Args k = base;
    k.gemm.kernel = -1;
    add("bad_enum", "options.kernel", k, invalid, {"options.kernel"});
  } else if (x.options == "gemv") {
    Args a = base;
    a.gemv.struct_size = 3;
    add("bad_options", "options", a, invalid, {"options", "struct_size"});
    for (const char* field : {"threads_per_row", "vector_bytes", "grid_blocks", "cache_hint"}) {
      Args b = base;
      int32_t* p = std::string(field) == "threads_per_row" ? &b.gemv.threads_per_row
                   : std::string(field) == "vector_bytes"  ? &b.gemv.vector_bytes
                   : std::string(field) == "grid_blocks"   ? &b.gemv.grid_blocks
                                                           : &b.gemv.cache_hint;
      *p = -3;
      add("bad_options", std::string("options.") + field, b, invalid, {std::string("options.") + field});
    }
  } else if (x.options == "lt") {
    Args a = base;
    a.lt.struct_size = 3;
    add("bad_options", "options", a, invalid, {"options", "struct_size"});
    Args w = base;
    w.lt.workspace = static_cast<char*>(address(9)) + 8;
    w.lt.workspace_size = 1024;
    add("misaligned", "options.workspace", w, invalid, {"workspace"});
  } else if (x.options == "quant") {
    Args a = base;
    a.quant.struct_size = 3;
    add("bad_options", "options", a, invalid, {"options", "struct_size"});
    Args p = base;
    p.quant.pow2_scales = 2;
    add("bad_options", "options.pow2_scales", p, invalid, {"options.pow2_scales"});
    for (const float floor : {-1.0f, 1e-38f, INFINITY, NAN}) {
      Args f = base;
      f.quant.amax_floor = floor;
      add("bad_options", "options.amax_floor", f, invalid, {"options.amax_floor"});
    }
  } else if (x.options == "recipe") {
    Args a = base;
    a.recipe.struct_size = 3;
    add("bad_options", "recipe", a, invalid, {"recipe", "struct_size"});
    Args g = base;
    g.recipe.gran_k = -128;
    add("bad_enum", "recipe.gran_k", g, invalid, {"recipe.gran_k"});
    Args n = base;
    n.recipe.num_groups = -1;
    add("bad_options", "recipe.num_groups", n, invalid, {"recipe.num_groups"});
  }
  return cases;
}

// Whether the message opens with `name` as the library formats an argument: the names before the
// first ':' ("b: ...", "m, n, k: ...", "sizes[1]: ...", "options.block_n: ...") include it.
bool opens_with(const std::string& msg, const std::string& name) {
  const size_t colon = msg.find(':');
  if (colon == std::string::npos) return false;
  const std::string head = msg.substr(0, colon);
  for (size_t at = 0; at <= head.size();) {
    const size_t end = std::min(head.find(", ", at), head.size());
    const std::string token = head.substr(at, end - at);
    if (token == name || token.rfind(name + "[", 0) == 0 || token.rfind(name + ".", 0) == 0) return true;
    at = end + 2;
  }
  return false;
}

// Whether `word` occurs in `msg` as a whole identifier.
bool names_word(const std::string& msg, const std::string& word) {
  auto ident = [](char ch) { return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_'; };
  for (size_t at = msg.find(word); at != std::string::npos; at = msg.find(word, at + 1))
    if ((at == 0 || !ident(msg[at - 1])) && (at + word.size() == msg.size() || !ident(msg[at + word.size()])))
      return true;
  return false;
}

// A size-class case on an integer argument must open with that argument (or the array it is an
// element of, `array_of`), or with a tensor that disagrees with it and name the integer in what it
// expected ("sf: size(0) is 128 but ceil(mn / gran_mn) is ..."). One on a tensor may open with any
// argument of the call: a size that disagrees is reported by whichever argument is checked against it.
bool names_its_argument(const Entry& x, const Case& c, const std::string& msg) {
  auto api_name = [&](const std::string& name) {
    auto it = x.array_of.find(name);
    return it == x.array_of.end() ? name : it->second;
  };
  bool opens_with_tensor = false;
  for (const auto& [name, spec] : x.baseline.tensors) opens_with_tensor = opens_with_tensor || opens_with(msg, name);
  if (x.baseline.ints.count(c.arg))
    return opens_with(msg, api_name(c.arg)) || (opens_with_tensor && names_word(msg, c.arg));
  if (opens_with_tensor) return true;
  for (const auto& [name, v] : x.baseline.ints)
    if (opens_with(msg, api_name(name))) return true;
  return false;
}

struct CappedStream {
  dg_stream* stream = nullptr;
  CappedStream() {
    dg_config* cfg = nullptr;
    REQUIRE(dg_config_create(&cfg) == DG_SUCCESS);
    REQUIRE(dg_config_set_int(cfg, DG_CONFIG_NUM_SMS, 1024) == DG_SUCCESS);  // above the fake's 132
    REQUIRE_MESSAGE(dg_stream_create(&stream, 0, nullptr, DG_STREAM_BORROW, cfg) == DG_SUCCESS, dg_last_error());
    dg_config_destroy(cfg);
  }
  ~CappedStream() { dg_stream_destroy(stream); }
};

}  // namespace

TEST_CASE("bad-input matrix: every entry point x every class gives its status and names the argument") {
  dg::test::FakeDriver driver(0);
  CappedStream capped;
  const Context ctx{capped.stream};
  int total = 0;
  std::map<std::string, int> per_class;
  for (const Entry& x : entries()) {
    // The baseline is valid: it succeeds, or (launching entry points) stops at the SM cap.
    {
      INFO(x.name, " baseline");
      Handles h(x.baseline);
      const dg_status s = x.call(ctx, x.baseline, h);
      if (!x.baseline_alt.empty() && s == DG_ERROR_UNSUPPORTED)
        CHECK_MESSAGE(std::strstr(dg_last_error(), x.baseline_alt.c_str()) != nullptr, dg_last_error());
      else if (x.stops_at_sm_cap)
        CHECK_MESSAGE((s == DG_ERROR_INVALID_ARGUMENT && std::strstr(dg_last_error(), "num_sms: 1024") != nullptr),
                      dg_status_string(s), ": ", dg_last_error());
      else
        CHECK_MESSAGE(s == DG_SUCCESS, dg_status_string(s), ": ", dg_last_error());
    }
    for (const Case& c : generate(x)) {
      INFO(x.name, " [", c.cls, "] ", c.arg);
      // Descriptors that cannot be created (sizes whose extent overflows) are that case's
      // outcome: dg_tensor_create refused them naming the sizes.
      bool creatable = true;
      for (const auto& [name, s] : c.args.tensors) {
        dg_tensor* t = nullptr;
        const dg_status st = dg_tensor_create(&t, s.data, s.dtype, int32_t(s.sizes.size()), s.sizes.data(),
                                              s.strides.empty() ? nullptr : s.strides.data());
        dg_tensor_destroy(t);
        if (st != DG_SUCCESS) {
          CHECK(st == DG_ERROR_INVALID_ARGUMENT);
          CHECK(std::strstr(dg_last_error(), "sizes") != nullptr);
          creatable = false;
        }
      }
      if (!creatable) {
        ++total;
        ++per_class[c.cls];
        continue;
      }
      Handles h(c.args);
      const dg_status s = x.call(ctx, c.args, h);
      const std::string msg = dg_last_error();
      bool status_ok = false;
      for (dg_status want : c.statuses) status_ok = status_ok || s == want;
      CHECK_MESSAGE(status_ok, dg_status_string(s), ": ", msg);
      CHECK_MESSAGE(msg.find("num_sms: 1024") == std::string::npos, "passed validation: ", msg);
      if (c.needles.empty()) {
        CHECK_MESSAGE(names_its_argument(x, c, msg), "does not open with the argument's name: ", msg);
      } else {
        for (const std::string& n : c.needles) CHECK_MESSAGE(msg.find(n) != std::string::npos, "lacks '", n, "': ", msg);
      }
      ++total;
      ++per_class[c.cls];
    }
  }
  MESSAGE("bad-input matrix: " << total << " cases");
  for (const auto& [cls, n] : per_class) MESSAGE("  " << cls << ": " << n);
  CHECK(total > 400);
}

TEST_CASE("the bad-input matrix covers every entry point dg.h declares") {
  std::ifstream in(DG_TEST_DATA_DIR "/../../include/dg.h");
  REQUIRE(in);
  std::stringstream text;
  text << in.rdbuf();
  const std::string header = text.str();
  std::set<std::string> covered(kNoArguments.begin(), kNoArguments.end());
  for (const Entry& x : entries()) covered.insert(x.name);
  const std::regex decl(R"(DG_API\s+[\w\s\*]*?\b(dg_\w+)\s*\()");
  int declared = 0;
  for (auto it = std::sregex_iterator(header.begin(), header.end(), decl); it != std::sregex_iterator(); ++it) {
    ++declared;
    const std::string name = (*it)[1];
    CHECK_MESSAGE(covered.count(name) == 1, name, " is declared in dg.h but has no row in the bad-input matrix");
  }
  CHECK(declared > 60);
}

TEST_CASE("sizes whose arithmetic wraps are refused before it: GEMV K = 2 * sizes[1], FP8 ceil(K / 128)") {
  dg::test::FakeDriver driver(0);
  CappedStream capped;
  const Context ctx{capped.stream};
  // NVFP4 GEMV: a's K/2 dimension at 2^62 (K = 2^63 wraps) and one past 2^31 / 2 (K = 2^31).
  for (const int64_t half_k : {kBig, int64_t(INT32_MAX) / 2 + 1}) {
    INFO("a: [1, ", half_k, ", 1]");
    Args a;
    a.tensors["a"] = Spec{address(1), DG_DTYPE_FLOAT4_E2M1X2, {1, half_k, 1}, {}};
    a.tensors["sfa"] = Spec{address(2), DG_DTYPE_FLOAT8_E4M3, {1, 16, 1}, {}};
    a.tensors["b"] = Spec{address(3), DG_DTYPE_FLOAT4_E2M1X2, {1, 128, 1}, {}};
    a.tensors["sfb"] = Spec{address(4), DG_DTYPE_FLOAT8_E4M3, {1, 16, 1}, {}};
    a.tensors["c"] = Spec{address(5), DG_DTYPE_FLOAT16, {1, 1, 1}, {}};
    Handles h(a);
    const dg_status s = dg_nvfp4_gemv(ctx.stream, h["a"], h["sfa"], h["b"], h["sfb"], h["c"], nullptr);
    const std::string msg = dg_last_error();
    CHECK_MESSAGE(s == DG_ERROR_INVALID_ARGUMENT, dg_status_string(s), ": ", msg);
    CHECK_MESSAGE(msg.rfind("a: ", 0) == 0, msg);
    CHECK_MESSAGE(msg.find("2^31") != std::string::npos, msg);
  }
  // FP8 nt, M = N = 1 and K = INT64_MAX: the 2^31 bound on K comes before ceil(K / 128) (K + 127
  // overflows; UBSan reports it).
  {
    Args a;
    a.tensors["a"] = fp8(1, {1, INT64_MAX});
    a.tensors["b"] = fp8(2, {1, INT64_MAX});
    a.tensors["sfa"] = f32(3, {1, 1});
    a.tensors["sfb"] = f32(4, {1, 1});
    a.tensors["d"] = bf16(5, {1, 1});
    Handles h(a);
    const dg_status s = dg_fp8_gemm_nt(ctx.stream, h["a"], h["sfa"], h["b"], h["sfb"], h["d"], nullptr, nullptr);
    const std::string msg = dg_last_error();
    CHECK_MESSAGE(s == DG_ERROR_UNSUPPORTED, dg_status_string(s), ": ", msg);
    CHECK_MESSAGE(msg.rfind("a: ", 0) == 0, msg);
    CHECK_MESSAGE(msg.find("K = " + std::to_string(INT64_MAX)) != std::string::npos, msg);
  }
}

TEST_CASE("launching entry points check the SM cap before asking for a kernel: an offline stream compiles nothing") {
  // The compiler is an nvcc that does not exist, so a call that reached it would fail with
  // DG_ERROR_COMPILE; one that found its kernel already built would count a memory hit.
  const char* old_nvcc = std::getenv("DG_JIT_NVCC_COMPILER");
  const std::string saved = old_nvcc ? old_nvcc : "";
  setenv("DG_JIT_NVCC_COMPILER", "/nonexistent/libdg-host-test/nvcc", 1);
  dg_config* cfg = nullptr;
  const dg_status created = dg_config_create(&cfg);
  if (old_nvcc) setenv("DG_JIT_NVCC_COMPILER", saved.c_str(), 1);
  else unsetenv("DG_JIT_NVCC_COMPILER");
  REQUIRE(created == DG_SUCCESS);
  REQUIRE(dg_config_set_int(cfg, DG_CONFIG_COMPILER, DG_COMPILER_NVCC) == DG_SUCCESS);
  REQUIRE(dg_config_set_int(cfg, DG_CONFIG_NUM_SMS, 1024) == DG_SUCCESS);  // above the 132 described
  REQUIRE(dg_config_set_string(cfg, DG_CONFIG_CACHE_DIR, "") == DG_SUCCESS);
  dg_stream* offline = nullptr;
  REQUIRE(dg_stream_create_offline(&offline, 9, 0, 132, cfg) == DG_SUCCESS);
  dg_config_destroy(cfg);
  const Context ctx{offline};
  int checked = 0;
  for (const Entry& x : entries()) {
    if (!x.stops_at_sm_cap) continue;
    INFO(x.name);
    int64_t compiled = 0, from_disk = 0, hits = 0;
    REQUIRE(dg_jit_get_stats(&compiled, &from_disk, &hits) == DG_SUCCESS);
    const int64_t requests = compiled + from_disk + hits;
    Handles h(x.baseline);
    const dg_status s = x.call(ctx, x.baseline, h);
    if (!x.baseline_alt.empty() && s == DG_ERROR_UNSUPPORTED) {
      CHECK_MESSAGE(std::strstr(dg_last_error(), x.baseline_alt.c_str()) != nullptr, dg_last_error());
    } else {
      const std::string msg = dg_last_error();
      CHECK_MESSAGE((s == DG_ERROR_INVALID_ARGUMENT && msg.find("num_sms: 1024") != std::string::npos),
                    std::string(dg_status_string(s)), ": ", msg);
      ++checked;
    }
    REQUIRE(dg_jit_get_stats(&compiled, &from_disk, &hits) == DG_SUCCESS);
    CHECK_MESSAGE(compiled + from_disk + hits == requests, "a kernel was asked for before the SM cap was checked");
  }
  dg_stream_destroy(offline);
  CHECK(checked > 20);
}

TEST_CASE("dg_fp8_gemm_nt_skip_head_mid: head splits, recipes and options it cannot run are refused by name; narrow parts pass") {
  dg::test::FakeDriver driver(0);
  CappedStream capped;
  const int64_t M = 256, N = 256, K = 256;
  struct Bad {
    int64_t left, mid, right, d_cols;
    dg_dtype d_dtype;
    int64_t k;
    int32_t recipe;
    bool epilogue;
    dg_status want;
    const char* opens;   // the message's first argument ("": not checked)
    const char* needle;  // and a word it contains
  };
  const Bad bad[] = {
      {0, 32, 0, 256, DG_DTYPE_BFLOAT16, K, DG_FP8_RECIPE_1D2D, false, DG_ERROR_INVALID_ARGUMENT, "left", "both 0"},
      {96, 32, 96, 256, DG_DTYPE_BFLOAT16, K, DG_FP8_RECIPE_1D2D, false, DG_ERROR_INVALID_ARGUMENT, "left", "192"},
      {64, 32, 64, 256, DG_DTYPE_BFLOAT16, K, DG_FP8_RECIPE_1D2D, false, DG_ERROR_INVALID_ARGUMENT, "d", "320"},
      {64, 32, 60, 0, DG_DTYPE_FLOAT32, K, DG_FP8_RECIPE_1D2D, false, DG_ERROR_INVALID_ARGUMENT, "left", "124"},
      {-8, 32, 136, 320, DG_DTYPE_BFLOAT16, K, DG_FP8_RECIPE_1D2D, false, DG_ERROR_INVALID_ARGUMENT, "mid", "-8"},
      // Parts no TMA box fits are valid (stored element by element): the call reaches the SM cap.
      {8, 32, 120, 320, DG_DTYPE_BFLOAT16, K, DG_FP8_RECIPE_1D2D, false, DG_ERROR_INVALID_ARGUMENT, "", "num_sms: 1024"},
      {60, 32, 68, 320, DG_DTYPE_FLOAT32, K, DG_FP8_RECIPE_1D2D, false, DG_ERROR_INVALID_ARGUMENT, "", "num_sms: 1024"},
      {64, 32, 64, 320, DG_DTYPE_BFLOAT16, 0, DG_FP8_RECIPE_1D2D, false, DG_ERROR_UNSUPPORTED, "a", "K = 0"},
      {64, 32, 64, 320, DG_DTYPE_FLOAT32, K, DG_FP8_RECIPE_1D1D, false, DG_ERROR_UNSUPPORTED, "options.recipe", "1D2D"},
      {64, 32, 64, 320, DG_DTYPE_BFLOAT16, K, DG_FP8_RECIPE_1D2D, true, DG_ERROR_UNSUPPORTED, "options.epilogue", "NULL"},
      {64, 32, 64, 320, DG_DTYPE_FLOAT8_E4M3, K, DG_FP8_RECIPE_1D2D, false, DG_ERROR_INVALID_ARGUMENT, "d", "FLOAT8"},
  };
  for (const Bad& b : bad) {
    INFO("left ", b.left, " mid ", b.mid, " right ", b.right, " d cols ", b.d_cols, " k ", b.k);
    Args a;
    a.tensors["a"] = fp8(1, {M, b.k});
    a.tensors["b"] = fp8(2, {N, b.k});
    a.tensors["d"] = Spec{address(3), b.d_dtype, {M, b.d_cols}, {}};
    a.tensors["sfa"] = f32(5, {M, (b.k + 127) / 128}, {1, M});
    a.tensors["sfb"] = b.recipe == DG_FP8_RECIPE_1D1D ? f32(6, {N, (b.k + 127) / 128}, {1, N})
                                                       : f32(6, {N / 128, (b.k + 127) / 128});
    Handles h(a);
    dg_gemm_options o = DG_GEMM_OPTIONS_INIT;
    o.recipe = b.recipe;
    dg_gemm_epilogue ep = DG_GEMM_EPILOGUE_INIT;
    if (b.epilogue) o.epilogue = &ep;
    const dg_status s = dg_fp8_gemm_nt_skip_head_mid(capped.stream, h["a"], h["sfa"], h["b"], h["sfb"], h["d"], b.left,
                                                     b.mid, b.right, &o);
    const std::string msg = dg_last_error();
    CHECK_MESSAGE(s == b.want, dg_status_string(s), ": ", msg);
    if (*b.opens) CHECK_MESSAGE(opens_with(msg, b.opens), msg);
    CHECK_MESSAGE(msg.find(b.needle) != std::string::npos, msg);
  }
}
