// The SM90 GEMM kernel's template parameters: one list of fields gives both the kernel key (the
// warm path's integers) and the template context (rendered on a miss); names for kernels and logs;
// the host side of the scheduler's walk.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <iterator>

#include "ops/gemm.h"
#include "ops/gemm_util.h"

namespace dg::ops {
namespace {

constexpr const char* kKindEnumerators[] = {"kBf16", "kFp8_1D2D", "kFp8_1D1D"};
constexpr const char* kKindShortNames[] = {"bf16", "fp8_1d2d", "fp8_1d1d"};
constexpr const char* kKindLogNames[] = {"bf16", "fp8-1d2d", "fp8-1d1d"};
constexpr const char* kTypeEnumerators[] = {"kNormal", "kMGroupedContiguous", "kMGroupedMasked", "kKGrouped",
                                            "kMGroupedContiguousPsum", "kBatched", "kBatchReduced"};
// Kernel-name tags of the grouped types ("" for Normal, whose names predate them).
constexpr const char* kTypeTags[] = {"", "_mgc", "_mgm", "_kg", "_mgp", "_bat", "_bsum"};
constexpr const char* kTypeLogNames[] = {"", " m-grouped contiguous", " m-grouped masked", " k-grouped",
                                         " m-grouped psum", " batched", " batch-reduced"};
constexpr const char* kMajorEnumerators[] = {"kK", "kMN"};
constexpr const char* kActivationEnumerators[] = {"kNone", "kSwiGlu"};
constexpr const char* kBiasEnumerators[] = {"kNone", "kBf16", "kFp32"};
constexpr const char* kScalesEnumerators[] = {"kNone", "kFp32", "kPackedUe8m0"};
static_assert(std::size(kKindEnumerators) == kNumGemmKinds && std::size(kKindShortNames) == kNumGemmKinds &&
                  std::size(kKindLogNames) == kNumGemmKinds,
              "one name per GemmKind");
static_assert(std::size(kTypeEnumerators) == kNumGemmTypes && std::size(kTypeTags) == kNumGemmTypes &&
                  std::size(kTypeLogNames) == kNumGemmTypes,
              "one name per GemmType");
static_assert(std::size(kMajorEnumerators) == 2, "one name per Major");
static_assert(std::size(kActivationEnumerators) == 2 && std::size(kBiasEnumerators) == 3 &&
                  std::size(kScalesEnumerators) == 3,
              "one name per epilogue enumerator");

// How a field's integer appears in the template context.
using Render = codegen::Value (*)(int64_t);
codegen::Value as_int(int64_t v) { return codegen::Value(v); }
codegen::Value as_bool(int64_t v) { return codegen::Value(v ? "true" : "false"); }
codegen::Value as_kind(int64_t v) { return codegen::Value(kKindEnumerators[v]); }
codegen::Value as_major(int64_t v) { return codegen::Value(kMajorEnumerators[v]); }
codegen::Value as_type(int64_t v) { return codegen::Value(kTypeEnumerators[v]); }
codegen::Value as_out_type(int64_t v) {
  return codegen::Value(v == DG_DTYPE_FLOAT32 ? "float" : v == DG_DTYPE_FLOAT8_E4M3 ? "dg::fp8_e4m3" : "dg::bf16");
}
codegen::Value as_activation(int64_t v) { return codegen::Value(kActivationEnumerators[v]); }
codegen::Value as_bias(int64_t v) { return codegen::Value(kBiasEnumerators[v]); }
codegen::Value as_scales(int64_t v) { return codegen::Value(kScalesEnumerators[v]); }

struct Field {
  const char* name;  // the template's variable
  int64_t value;
  Render render;
};

// Everything the kernel's source depends on. smem_bytes follows from the rest but is a template
// variable too (the kernel asserts its layout against it). The alt1_ / alt2_ fields are the
// count-adaptive tiles' (block_n 0: none).
constexpr size_t kMainFields = 27, kAltFields = 8;
using TemplateFields = std::array<Field, kMainFields + kMaxAltTiles * kAltFields>;

constexpr const char* kAltFieldNames[kMaxAltTiles][kAltFields] = {
    {"alt1_block_n", "alt1_stages", "alt1_overlap", "alt1_promote_split", "alt1_d_bufs", "alt1_sfb_boundaries",
     "alt1_stage_aligned", "alt1_smem_bytes"},
    {"alt2_block_n", "alt2_stages", "alt2_overlap", "alt2_promote_split", "alt2_d_bufs", "alt2_sfb_boundaries",
     "alt2_stage_aligned", "alt2_smem_bytes"}};

// Count-adaptive tile `i`'s fields, named as kAltFieldNames[i] orders them, from f[0].
void add_alt_fields(const GemmAltTile& a, int i, Field* f) {
  const int64_t values[kAltFields] = {a.block_n, a.stages, a.overlap, a.promote_split, a.d_bufs, a.sfb_boundaries,
                                      a.stage_aligned, a.smem_bytes};
  const Render renders[kAltFields] = {as_int, as_int, as_bool, as_int, as_int, as_int, as_bool, as_int};
  for (size_t j = 0; j < kAltFields; ++j) f[j] = {kAltFieldNames[i][j], values[j], renders[j]};
}

TemplateFields template_fields(const GemmShape& s, const GemmConfig& c) {
  TemplateFields f = {{{"kind", static_cast<int64_t>(s.kind), as_kind},
                       {"major_a", static_cast<int64_t>(s.major_a), as_major},
                       {"major_b", static_cast<int64_t>(s.major_b), as_major},
                       {"out_type", s.d_dtype, as_out_type},
                       {"reduce_add", s.accumulate, as_bool},
                       {"gemm_type", static_cast<int64_t>(s.type), as_type},
                       {"block_m", c.block_m, as_int},
                       {"block_n", c.block_n, as_int},
                       {"stages", c.stages, as_int},
                       {"math_wg", c.math_wg, as_int},
                       {"cluster", c.cluster, as_int},
                       {"pair_along_n", c.multicast_a, as_bool},
                       {"overlap", c.overlap, as_bool},
                       {"promote_split", c.promote_split, as_int},
                       {"d_bufs", c.d_bufs, as_int},
                       {"split_k", c.split_k, as_int},
                       {"sfb_boundaries", c.sfb_boundaries, as_int},
                       {"stage_aligned", c.stage_aligned, as_bool},
                       {"activation", static_cast<int64_t>(s.epilogue.act), as_activation},
                       {"bias", static_cast<int64_t>(s.epilogue.bias), as_bias},
                       {"scales", static_cast<int64_t>(s.epilogue.scales), as_scales},
                       {"head_left", s.epilogue.head_left, as_int},
                       {"head_mid", s.epilogue.head_mid, as_int},
                       {"head_right", s.epilogue.head_right, as_int},
                       {"k_blocks", c.k_blocks, as_int},
                       {"transpose_d", s.transpose_d, as_bool},
                       {"smem_bytes", c.smem_bytes, as_int}}};
  for (int i = 0; i < kMaxAltTiles; ++i) add_alt_fields(c.alts[i], i, &f[kMainFields + i * kAltFields]);
  return f;
}

const char* out_name(dg_dtype d) {
  return d == DG_DTYPE_FLOAT32 ? "f32" : d == DG_DTYPE_FLOAT8_E4M3 ? "e4m3" : "bf16";
}

// The fused epilogue's tag in kernel names ("" without one).
std::string epilogue_tag(const GemmEpilogue& e) {
  constexpr const char* kBiasTags[] = {"", "_biasbf16", "_biasf32"};
  constexpr const char* kScalesTags[] = {"", "", "_ue8m0"};
  return fmt::format("{}{}{}{}", e.act == Activation::kSwiGlu ? "_swiglu" : "", kBiasTags[static_cast<int>(e.bias)],
                     kScalesTags[static_cast<int>(e.scales)],
                     e.head_split() ? fmt::format("_heads{}_{}_{}", e.head_left, e.head_mid, e.head_right) : "");
}

// The count-adaptive tiles' tag ("" without them): each one's width, stages and what differs.
std::string alt_tag(const GemmConfig& c) {
  std::string tag;
  for (int i = 0; i < c.alt_tiles(); ++i) {
    const GemmAltTile& a = c.alts[i];
    tag += fmt::format("_or{}s{}{}{}{}{}{}", a.block_n, a.stages, a.stage_aligned ? "u" : "", a.overlap ? "ov" : "",
                       a.promote_split > 1 ? fmt::format("p{}", a.promote_split) : std::string(),
                       a.d_bufs ? fmt::format("e{}", a.d_bufs) : std::string(),
                       a.sfb_boundaries ? fmt::format("b{:x}", a.sfb_boundaries) : std::string());
  }
  return tag;
}

std::string kernel_name(const GemmShape& s, const GemmConfig& c) {
  return fmt::format("dg_sm90_{}_gemm{}_{}{}_{}{}{}_{}x{}x{}_s{}{}_w{}_c{}{}{}{}{}{}{}{}{}", kind_short_name(s.kind),
                     kTypeTags[static_cast<int>(s.type)], s.major_a == Major::kK ? "k" : "m",
                     s.major_b == Major::kK ? "k" : "m", out_name(s.d_dtype), epilogue_tag(s.epilogue),
                     s.accumulate ? "_acc" : s.transpose_d ? "_dt" : "", c.block_m, c.block_n, c.block_k, c.stages, c.stage_aligned ? "u" : "",
                     c.math_wg, c.cluster, c.cluster == 2 ? (c.multicast_a ? "a" : "b") : "", c.overlap ? "_ov" : "",
                     c.promote_split > 1 ? fmt::format("_p{}", c.promote_split) : std::string(),
                     c.d_bufs ? fmt::format("_e{}", c.d_bufs) : std::string(),
                     c.split_k > 1 ? fmt::format("_k{}", c.split_k) : std::string(),
                     c.sfb_boundaries ? fmt::format("_b{:x}", c.sfb_boundaries) : std::string(),
                     c.k_blocks ? fmt::format("_kb{}", c.k_blocks) : std::string(), alt_tag(c));
}

// The count-adaptive tiles in describe()'s words ("" without them).
std::string alt_description(const GemmConfig& c) {
  std::string d;
  for (int i = 0; i < c.alt_tiles(); ++i)
    d += fmt::format("{} {}x{} tiles ({} stages)", i == 0 ? ", or" : " or", c.block_m, c.alts[i].block_n,
                     c.alts[i].stages);
  return d.empty() ? d : d + " where the groups' rows make them cheaper";
}

}  // namespace

GemmConfig alt_config(const GemmConfig& c, int i) {
  const GemmAltTile& t = c.alts[i];
  GemmConfig a = c;
  a.block_n = t.block_n, a.stages = t.stages, a.promote_split = t.promote_split;
  a.d_bufs = t.d_bufs, a.d_strip = t.d_strip, a.overlap = t.overlap;
  a.stage_aligned = t.stage_aligned, a.sfb_boundaries = t.sfb_boundaries, a.smem_bytes = t.smem_bytes;
  for (GemmAltTile& cleared : a.alts) cleared = GemmAltTile{};
  return a;
}

const char* kind_enumerator(GemmKind k) { return kKindEnumerators[static_cast<int>(k)]; }
const char* kind_short_name(GemmKind k) { return kKindShortNames[static_cast<int>(k)]; }
const char* gemm_type_enumerator(GemmType t) { return kTypeEnumerators[static_cast<int>(t)]; }

jit::KernelKey gemm_kernel_key(const GemmShape& s, const GemmConfig& c) {
  const auto fields = template_fields(s, c);
  static_assert(std::tuple_size<decltype(fields)>::value <= jit::KernelKey::kMaxParams, "the key holds every field");
  jit::KernelKey key;
  key.family = jit::kFamilySm90Gemm;
  for (const Field& f : fields) key.params[key.count++] = f.value;
  return key;
}

jit::KernelSpec gemm_kernel_spec(const GemmShape& s, const GemmConfig& c) {
  jit::KernelSpec spec;
  spec.template_name = "kernels/sm90_gemm.cu.j2";
  spec.kernel_name = kernel_name(s, c);
  codegen::Value::Map context{{"kernel_name", spec.kernel_name}};
  for (const Field& f : template_fields(s, c)) context.emplace(f.name, f.render(f.value));
  spec.context = codegen::Value(std::move(context));
  return spec;
}

std::string describe(const GemmShape& s, const GemmConfig& c) {
  const std::string groups = s.type == GemmType::kNormal || s.type == GemmType::kBatchReduced ? std::string()
                             : s.type == GemmType::kKGrouped ? fmt::format(" groups={} (non-empty; k = mean K)", s.num_groups)
                             : s.type == GemmType::kBatched  ? fmt::format(" batches={}", s.num_groups)
                                                             : fmt::format(" groups={} expected_m={}", s.num_groups, s.expected_m);
  return fmt::format(
      "{}{} gemm{} m={} n={} k={} a={} b={} d={}{}: block {}x{}x{}, {} stages, {} math WG, cluster {}{}{}, {} SMs, grid {}, "
      "raster bands of {} along {}, smem {} B{}{}, est {:.1f} us",
      kKindLogNames[static_cast<int>(s.kind)], kTypeLogNames[static_cast<int>(s.type)], groups, s.m, s.n, s.k,
      s.major_a == Major::kK ? "K-major" : "M-major", s.major_b == Major::kK ? "K-major" : "N-major",
      std::string(out_name(s.d_dtype)) + (s.epilogue.active() ? " epilogue" + epilogue_tag(s.epilogue) : std::string()),
      s.accumulate ? " (+=)" : s.transpose_d ? " (operands swapped, D stored transposed)" : "", c.block_m, c.block_n, c.block_k,
      c.stages, c.math_wg, c.cluster, c.cluster == 2 ? (c.multicast_a ? " (multicast A)" : " (multicast B)") : "",
      std::string(c.overlap ? ", overlapped promotion" : "") +
          (c.promote_split > 1 ? fmt::format(" in {} column slices", c.promote_split) : std::string()),
      c.num_sms, c.grid, c.raster_band, c.raster_along_n ? "N" : "M", c.smem_bytes,
      c.d_bufs ? fmt::format(" ({} rotating epilogue strips)", c.d_bufs) : std::string(),
      (c.split_k <= 1                         ? std::string()
       : s.type == GemmType::kMGroupedMasked ? std::string(", a last round at most half full split over CTA pairs")
                                              : fmt::format(", split-K over {} CTAs", c.split_k)) +
          alt_description(c),
      c.estimate_us);
}

FastDiv fast_div(uint32_t d) {
  FastDiv f{d, 0, 0};
  while (f.shift < 32 && (uint64_t{1} << f.shift) < d) ++f.shift;  // ceil(log2 d)
  // (2^shift - d) < d, so the quotient fits 32 bits.
  f.mul = static_cast<uint32_t>(((uint64_t{1} << 32) * ((uint64_t{1} << f.shift) - d)) / d + 1);
  return f;
}

WalkDivisors walk_divisors(int64_t units_m, int64_t units_n, int band, bool along_n) {
  const uint32_t b = static_cast<uint32_t>(std::max(band, 1));
  const uint32_t cut = static_cast<uint32_t>(std::max<int64_t>(along_n ? units_n : units_m, 1));
  const uint32_t across = static_cast<uint32_t>(along_n ? units_m : units_n);
  WalkDivisors w;
  w.per_band = fast_div(std::max(b * across, 1u));
  w.band = fast_div(b);
  w.last_band = (cut - 1) / b;
  w.last = fast_div(cut - w.last_band * b);
  w.per_slot = fast_div(static_cast<uint32_t>(std::max<int64_t>(units_m * units_n, 1)));
  return w;
}

}  // namespace dg::ops
