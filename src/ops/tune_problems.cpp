// Problem lists for dg_tune (docs/tuning.md#problem-lists): one line per family of problems,
// expanded into the calls dg_tune times and the shapes their table lines key on.
#include <fmt/format.h>

#include <charconv>
#include <string>

#include "ops/gemm_tuning.h"
#include "ops/gemm_util.h"
#include "runtime/status.h"

namespace dg::ops {
namespace {

// A masked problem's max_m, unless given: twice the expected rows, a multiple of this.
constexpr int64_t kMaskedAlign = 64;
constexpr int64_t kMaxDim = INT32_MAX;

// The fused epilogues a list can ask for (docs/gemm_epilogues.md): SwiGLU, an FP8 D with FP32
// scales in the GEMMs' layout, or both.
enum class ListEpilogue : int { kNone = 0, kSwiGlu = 1, kFp8 = 2, kSwiGluFp8 = 3 };
constexpr const char* kEpilogueNames[] = {"none", "swiglu", "fp8", "swiglu_fp8"};

struct ListLine {
  TuneFamily family = TuneFamily::kDense;
  GemmKind kind = GemmKind::kBf16;
  int layout = DG_GEMM_LAYOUT_NT;
  dg_dtype d_dtype = DG_DTYPE_BFLOAT16;
  bool d_given = false;
  ListEpilogue epilogue = ListEpilogue::kNone;
  int64_t n = 0, k = 0, max_m = 0;
  std::vector<int64_t> ms, gs = {1};
};

std::vector<std::string_view> words_of(std::string_view line) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r')) ++i;
    const size_t s = i;
    while (i < line.size() && line[i] != ' ' && line[i] != '\t' && line[i] != '\r') ++i;
    if (i > s) out.push_back(line.substr(s, i - s));
  }
  return out;
}

bool parse_list(std::string_view v, int64_t lo, int64_t hi, std::vector<int64_t>* out) {
  out->clear();
  size_t pos = 0;
  while (pos <= v.size()) {
    const size_t end = std::min(v.find(',', pos), v.size());
    int64_t x = 0;
    const char* first = v.data() + pos;
    const auto [p, ec] = std::from_chars(first, v.data() + end, x);
    if (ec != std::errc() || p != v.data() + end || end == pos || x < lo || x > hi) return false;
    out->push_back(x);
    pos = end + 1;
  }
  return !out->empty();
}

// The family, dtype and layout words; "" or the reason.
std::string parse_head(const std::vector<std::string_view>& w, ListLine* l, size_t* next) {
  if (w[0] == "dense") l->family = TuneFamily::kDense;
  else if (w[0] == "contiguous") l->family = TuneFamily::kContiguous;
  else if (w[0] == "masked") l->family = TuneFamily::kMasked;
  else if (w[0] == "kgrouped") l->family = TuneFamily::kKGrouped;
  else return fmt::format("\"{}\" (expected dense, contiguous, masked or kgrouped)", std::string(w[0]));
  if (w.size() < 2) return "no dtype (expected fp8, fp8_1d1d or bf16)";
  if (w[1] == "fp8") l->kind = GemmKind::kFp8_1D2D;
  else if (w[1] == "fp8_1d1d" && l->family == TuneFamily::kDense)
    l->kind = GemmKind::kFp8_1D1D, l->d_dtype = DG_DTYPE_FLOAT32;
  else if (w[1] == "bf16") l->kind = GemmKind::kBf16;
  else return fmt::format("\"{}\" (expected fp8, bf16, or fp8_1d1d for dense problems)", std::string(w[1]));
  const bool k_grouped = l->family == TuneFamily::kKGrouped;
  if (k_grouped) {
    // The 1D1D recipe and FP32 D (accumulated) of dg_k_grouped_fp8_gemm_nt_contiguous, and BF16 in
    // the tn layout of dg_k_grouped_bf16_gemm_tn_contiguous.
    if (l->kind == GemmKind::kFp8_1D2D) l->kind = GemmKind::kFp8_1D1D;
    l->layout = l->kind == GemmKind::kBf16 ? DG_GEMM_LAYOUT_TN : DG_GEMM_LAYOUT_NT;
    l->d_dtype = DG_DTYPE_FLOAT32;
  }
  *next = 2;
  if (w.size() > 2 && w[2].find('=') == std::string_view::npos) {
    constexpr const char* kLayouts[] = {"nt", "nn", "tn", "tt"};
    const int tuned = l->layout;
    l->layout = -1;
    for (int i = 0; i < 4; ++i)
      if (w[2] == kLayouts[i]) l->layout = i;
    if (l->layout < 0) return fmt::format("layout \"{}\" (expected nt, nn, tn or tt)", std::string(w[2]));
    if (k_grouped && l->layout != tuned)
      return fmt::format("layout \"{}\": K-grouped problems are tuned in the nt (FP8) and tn (BF16) layouts",
                         std::string(w[2]));
    if (!k_grouped && l->layout != DG_GEMM_LAYOUT_NT && (l->family != TuneFamily::kDense || is_fp8(l->kind)))
      return fmt::format("layout \"{}\": FP8 and grouped problems are tuned in the nt layout", std::string(w[2]));
    *next = 3;
  }
  return "";
}

// One key=value word; "" or the reason.
std::string parse_field(std::string_view word, ListLine* l) {
  const size_t eq = word.find('=');
  if (eq == std::string_view::npos) return fmt::format("\"{}\" (expected key=value)", std::string(word));
  const std::string_view key = word.substr(0, eq), value = word.substr(eq + 1);
  std::vector<int64_t> v;
  const bool grouped = l->family != TuneFamily::kDense;
  if (key == "m" && parse_list(value, 1, kMaxDim, &v)) return l->ms = v, "";
  if (key == "n" && parse_list(value, 1, kMaxDim, &v) && v.size() == 1) return l->n = v[0], "";
  if (key == "k" && parse_list(value, 1, kMaxDim, &v) && v.size() == 1) return l->k = v[0], "";
  if (key == "g" && grouped && parse_list(value, 1, kMaxTableGroups, &v)) return l->gs = v, "";
  if (key == "max_m" && l->family == TuneFamily::kMasked && parse_list(value, 1, kMaxDim, &v) && v.size() == 1 &&
      v[0] % kMaskedAlign == 0)
    return l->max_m = v[0], "";
  const bool d_ok = value == "bf16" || value == "f32";
  if (key == "d" && l->family == TuneFamily::kDense && l->kind != GemmKind::kFp8_1D1D && d_ok)
    return l->d_dtype = value == "f32" ? DG_DTYPE_FLOAT32 : DG_DTYPE_BFLOAT16, l->d_given = true, "";
  if (key == "epilogue" && l->kind != GemmKind::kFp8_1D1D && l->family != TuneFamily::kKGrouped)
    for (int i = 0; i < 4; ++i)
      if (value == kEpilogueNames[i]) return l->epilogue = static_cast<ListEpilogue>(i), "";
  if (l->family == TuneFamily::kKGrouped)
    return fmt::format("\"{}\" (expected m=LIST, n=N, k=K, g=LIST (1..1024), each value 1..2^31-1)",
                       std::string(word));
  return fmt::format("\"{}\" (expected m=LIST, n=N, k=K{}{}, epilogue=none|swiglu|fp8|swiglu_fp8{}, each value "
                     "1..2^31-1)",
                     std::string(word), grouped ? ", g=LIST (1..1024)" : ", d=bf16|f32",
                     l->family == TuneFamily::kMasked ? ", max_m=M (a multiple of 64)" : "",
                     l->kind == GemmKind::kFp8_1D1D ? " (not with fp8_1d1d)" : "");
}

// The problem of `l` with M (rows per group when grouped) `m` and `g` groups.
TuneProblem make_problem(const ListLine& l, int64_t m, int64_t g, int line) {
  TuneProblem p;
  p.family = l.family, p.fp8 = is_fp8(l.kind), p.layout = l.layout, p.line = line;
  GemmShape& s = p.shape;
  s.kind = l.kind, s.n = l.n, s.k = l.k, s.d_dtype = l.d_dtype;
  s.major_a = l.layout == DG_GEMM_LAYOUT_TN || l.layout == DG_GEMM_LAYOUT_TT ? Major::kMN : Major::kK;
  s.major_b = l.layout == DG_GEMM_LAYOUT_NN || l.layout == DG_GEMM_LAYOUT_TN ? Major::kMN : Major::kK;
  constexpr const char* kLayouts[] = {"nt", "nn", "tn", "tt"};
  const char* dtype = l.kind == GemmKind::kBf16                                  ? "bf16"
                      : l.kind == GemmKind::kFp8_1D2D || l.family == TuneFamily::kKGrouped ? "fp8"
                                                                                           : "fp8_1d1d";
  const bool swiglu = l.epilogue == ListEpilogue::kSwiGlu || l.epilogue == ListEpilogue::kSwiGluFp8;
  const bool fp8_d = l.epilogue == ListEpilogue::kFp8 || l.epilogue == ListEpilogue::kSwiGluFp8;
  if (swiglu) s.epilogue.act = Activation::kSwiGlu;
  if (fp8_d) s.epilogue.scales = DScales::kFp32, s.d_dtype = DG_DTYPE_FLOAT8_E4M3;
  const std::string epi = l.epilogue == ListEpilogue::kNone
                              ? std::string()
                              : fmt::format(" epilogue={}", kEpilogueNames[static_cast<int>(l.epilogue)]);
  if (l.family == TuneFamily::kDense) {
    s.m = m;
    p.text = fmt::format("dense {} {} m={} n={} k={}{}{}", dtype, kLayouts[l.layout], m, l.n, l.k,
                         l.d_dtype == DG_DTYPE_FLOAT32 && l.kind != GemmKind::kFp8_1D1D ? " d=f32" : "", epi);
  } else if (l.family == TuneFamily::kKGrouped) {
    // As the call derives it (ops/k_grouped_gemm.cpp): every group's K is k, C is D (D += A_g B_g^T).
    s.type = GemmType::kKGrouped, s.num_groups = g, s.m = m, s.accumulate = true;
    p.text = fmt::format("kgrouped {} g={} m={} n={} k={}", dtype, g, m, l.n, l.k);
  } else if (l.family == TuneFamily::kContiguous) {
    s.type = GemmType::kMGroupedContiguous, s.num_groups = g, s.expected_m = m;
    s.m = g * align_up(m, kMkAlignment);
    p.text = fmt::format("contiguous {} g={} m={} n={} k={}{}", dtype, g, m, l.n, l.k, epi);
  } else {
    s.type = GemmType::kMGroupedMasked, s.num_groups = g;
    s.m = l.max_m ? l.max_m : 2 * align_up(m, kMaskedAlign);
    s.expected_m = std::min(m, s.m);
    p.text = fmt::format("masked {} g={} m={} n={} k={} max_m={}{}", dtype, g, m, l.n, l.k, s.m, epi);
  }
  return p;
}

// Sizes the calls cannot take: "" or the reason.
std::string check_sizes(const TuneProblem& p) {
  const GemmShape& s = p.shape;
  if (s.m > kMaxDim || s.num_groups * s.m > kMaxDim) return "the rows of A reach 2^31";
  if (p.family == TuneFamily::kKGrouped) {
    if (s.k % kScaleBlock != 0) return "K-grouped problems need k % 128 == 0 (each group's K)";
    if (s.num_groups * s.k > kMaxDim) return "the groups' K (g * k) reaches 2^31";
  }
  if (p.fp8 && s.k % 16 != 0) return "FP8 problems need K % 16 == 0 (16-byte rows)";
  if (!p.fp8 && s.k % 8 != 0) return "BF16 problems are tuned with K % 8 == 0";
  if (s.n % 8 != 0) return "problems are tuned with N % 8 == 0 (16-byte rows of D)";
  if (s.epilogue.act == Activation::kSwiGlu && s.n % (2 * kSwiGluBlock) != 0)
    return "SwiGLU needs N % 256 == 0 (blocks of 128 gate and 128 up rows)";
  return "";
}

}  // namespace

dg_status parse_problem_list(std::string_view text, const char* arg, std::vector<TuneProblem>* out) {
  std::vector<TuneProblem> problems;
  int line_no = 0;
  for (size_t pos = 0; pos < text.size();) {
    const size_t end = std::min(text.find('\n', pos), text.size());
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1, ++line_no;
    line = line.substr(0, std::min(line.find('#'), line.size()));
    const std::vector<std::string_view> w = words_of(line);
    if (w.empty()) continue;
    ListLine l;
    size_t next = 0;
    std::string why = parse_head(w, &l, &next);
    for (size_t i = next; i < w.size() && why.empty(); ++i) why = parse_field(w[i], &l);
    if (why.empty() && (l.ms.empty() || l.n == 0 || l.k == 0)) why = "m=, n= and k= are required";
    if (why.empty() && l.epilogue != ListEpilogue::kNone && l.d_given && l.d_dtype == DG_DTYPE_FLOAT32)
      why = "epilogue= writes a BF16 or FP8 D (not with d=f32)";
    if (why.empty() && l.family != TuneFamily::kDense && l.gs.size() == 1 && l.gs[0] == 1 && w.size() > 0) {
      bool has_g = false;
      for (std::string_view x : w) has_g = has_g || x.substr(0, 2) == "g=";
      if (!has_g) why = "g= (the number of groups) is required for grouped problems";
    }
    for (int64_t g : l.gs)
      for (int64_t m : l.ms) {
        if (!why.empty()) break;
        problems.push_back(make_problem(l, m, g, line_no));
        why = check_sizes(problems.back());
        if (why.empty() && static_cast<int64_t>(problems.size()) > kMaxTuneProblems)
          why = fmt::format("more than {} problems", kMaxTuneProblems);
      }
    if (!why.empty()) return fail(DG_ERROR_INVALID_ARGUMENT, "{}: line {}: {}", arg, line_no, why);
  }
  if (problems.empty())
    return fail(DG_ERROR_INVALID_ARGUMENT,
                "{}: no problems (expected lines such as \"dense fp8 nt n=7168 k=2048 m=4096\")", arg);
  *out = std::move(problems);
  return DG_SUCCESS;
}

}  // namespace dg::ops
