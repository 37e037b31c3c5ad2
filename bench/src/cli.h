// Command-line parsing, suite names and the built-in shape sets of dg-bench (DeepGEMM's test shapes).
// Header-only and free of CUDA so that tests/unit can check it without a GPU.
#pragma once
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

namespace dgb {

struct Shape {
  int64_t m = 0, n = 0, k = 0;
  int64_t g = 1;  // groups (or batches); 1 for dense
  bool operator==(const Shape& o) const { return m == o.m && n == o.n && k == o.k && g == o.g; }
};

inline std::string to_string(const Shape& s) {
  std::string out = "m=" + std::to_string(s.m) + " n=" + std::to_string(s.n) + " k=" + std::to_string(s.k);
  if (s.g != 1) out = "g=" + std::to_string(s.g) + " " + out;
  return out;
}

// Suites in the order they run by default.
inline const std::vector<std::string>& known_suites() {
  static const std::vector<std::string> names = {
      "copy", "layout", "dense-bf16", "dense-fp8", "nvfp4-gemv",
      "contiguous-fp8", "contiguous-bf16", "masked-fp8", "masked-bf16", "quant", "hc-prenorm"};
  return names;
}

// Names --suite accepts for several suites at once.
inline std::vector<std::string> suite_alias(const std::string& name) {
  if (name == "m-grouped") return {"contiguous-fp8", "contiguous-bf16", "masked-fp8", "masked-bf16"};
  return {};
}

inline bool is_known_suite(const std::string& name) {
  for (const auto& k : known_suites())
    if (k == name) return true;
  return false;
}

// The seven DeepSeek-V3 projection (N, K) pairs with BF16 D, as DeepGEMM's tests use them.
inline const std::vector<std::pair<int64_t, int64_t>>& deepseek_nk() {
  static const std::vector<std::pair<int64_t, int64_t>> nk = {
      {2112, 7168}, {576, 7168}, {24576, 1536}, {32768, 512}, {7168, 16384}, {4096, 7168}, {7168, 2048}};
  return nk;
}

// Dense forward set: M in {1, 128, 4096} x the seven (N, K) pairs = 21 shapes.
inline std::vector<Shape> dense_shapes() {
  std::vector<Shape> out;
  for (int64_t m : {1, 128, 4096})
    for (auto nk : deepseek_nk()) out.push_back({m, nk.first, nk.second, 1});
  return out;
}

// The M-grouped (MoE) sets of DeepGEMM's tests: (G, expected rows per group) x these
// (N, K), carried as g = G, m = expected rows per group.
inline const std::vector<std::pair<int64_t, int64_t>>& moe_nk() {
  static const std::vector<std::pair<int64_t, int64_t>> nk = {{4096, 7168}, {7168, 2048}, {6144, 7168}};
  return nk;
}

inline std::vector<Shape> grouped_shapes(const std::vector<std::pair<int64_t, int64_t>>& groups_and_m) {
  std::vector<Shape> out;
  for (auto nk : moe_nk())
    for (auto gm : groups_and_m) out.push_back({gm.second, nk.first, nk.second, gm.first});
  return out;
}

// Contiguous: (G, expected m) in {(4, 8192), (8, 4096), (32, 256)} x 3 (N, K) = 9 shapes.
inline std::vector<Shape> contiguous_shapes() { return grouped_shapes({{4, 8192}, {8, 4096}, {32, 256}}); }

// Masked (max_m 4096): (G, expected m) in {(1, 1024), (2, 512), (4, 256), (32, 192), (6, 1024),
// (32, 20)} x 3 (N, K) = 18 shapes.
inline std::vector<Shape> masked_shapes() {
  return grouped_shapes({{1, 1024}, {2, 512}, {4, 256}, {32, 192}, {6, 1024}, {32, 20}});
}

// NVFP4 GEMV (docs/nvfp4_gemv.md), GPU MODE's ranked shapes: (M, K, L) carried as m, k and g (n = 1).
inline std::vector<Shape> nvfp4_gemv_shapes() {
  return {{7168, 1, 16384, 1}, {4096, 1, 7168, 8}, {7168, 1, 2048, 4}};
}

// Layout suite (shapes of DeepGEMM's layout test): SF transposes of [G, MN, ceil(K / 128)]; m = MN,
// k = K, g = G.
inline std::vector<Shape> layout_shapes() {
  std::vector<Shape> out;
  for (int64_t g : {1, 4})
    for (int64_t mn : {4096, 4097, 8192})
      for (int64_t k : {7168, 7296}) out.push_back({mn, 0, k, g});
  return out;
}

// Copy suite: bytes per copy carried in m (n = k = 1).
inline std::vector<Shape> copy_shapes() {
  return {{int64_t(64) << 20, 1, 1, 1}, {int64_t(256) << 20, 1, 1, 1}, {int64_t(1) << 30, 1, 1, 1}};
}

inline bool parse_int(const std::string& text, int64_t* value) {
  if (text.empty()) return false;
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (errno != 0 || end == text.c_str() || *end != '\0') return false;
  *value = v;
  return true;
}

inline std::vector<std::string> split(const std::string& text, char sep) {
  std::vector<std::string> parts;
  std::string cur;
  for (char c : text) {
    if (c == sep) {
      parts.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  parts.push_back(cur);
  return parts;
}

// "m,n,k" or "m,n,k,g"; every value >= 0, g >= 1. Returns false with a message.
inline bool parse_shape(const std::string& text, Shape* shape, std::string* error) {
  const auto parts = split(text, ',');
  if (parts.size() != 3 && parts.size() != 4) {
    *error = "--shape '" + text + "': expected m,n,k or m,n,k,g";
    return false;
  }
  int64_t v[4] = {0, 0, 0, 1};
  for (size_t i = 0; i < parts.size(); ++i) {
    if (!parse_int(parts[i], &v[i]) || v[i] < 0) {
      *error = "--shape '" + text + "': '" + parts[i] + "' is not a non-negative integer";
      return false;
    }
  }
  if (v[3] < 1) {
    *error = "--shape '" + text + "': g must be >= 1";
    return false;
  }
  *shape = {v[0], v[1], v[2], v[3]};
  return true;
}

// An explicit libdg GEMM kernel config (the dg_gemm_options override fields; 0 = heuristic,
// multicast_a -1 = heuristic), parsed from "key=value,..." with the keys below. `text` labels the
// contender "libdg[text]" beside the heuristic's own "libdg".
struct GemmConfigArg {
  std::string text;
  int64_t block_m = 0, block_n = 0, stages = 0, cluster = 0, multicast_a = -1, math_wg = 0, num_sms = 0;
  int64_t promotion = 0, slices = 0, split_k = 0, kernel = 0;
};

// Parses "key=integer,..." into the fields named by `keys` (fields not named keep their value).
inline bool parse_key_values(const std::string& flag, const std::string& text,
                             const std::vector<std::pair<const char*, int64_t*>>& keys, std::string* error) {
  for (const auto& item : split(text, ',')) {
    const auto kv = split(item, '=');
    int64_t v = 0;
    if (kv.size() != 2 || !parse_int(kv[1], &v) || v < -1) {
      *error = flag + " '" + text + "': '" + item + "' is not key=integer";
      return false;
    }
    int64_t* field = nullptr;
    std::string known;
    for (const auto& [name, f] : keys) {
      if (kv[0] == name) field = f;
      known += (known.empty() ? "" : ", ") + std::string(name);
    }
    if (!field) {
      *error = flag + " '" + text + "': unknown key '" + kv[0] + "' (known: " + known + ")";
      return false;
    }
    *field = v;
  }
  return true;
}

inline bool parse_gemm_config(const std::string& text, GemmConfigArg* cfg, std::string* error) {
  GemmConfigArg c;
  c.text = text;
  if (!parse_key_values("--gemm-config", text,
                        {{"bm", &c.block_m}, {"bn", &c.block_n}, {"stages", &c.stages}, {"cluster", &c.cluster},
                         {"mca", &c.multicast_a}, {"wg", &c.math_wg}, {"sms", &c.num_sms}, {"promo", &c.promotion},
                         {"slices", &c.slices}, {"splitk", &c.split_k}, {"kernel", &c.kernel}},
                        error))
    return false;
  *cfg = c;
  return true;
}

// An explicit NVFP4 GEMV config (the dg_nvfp4_gemv_options fields; 0 = heuristic), labelled
// "libdg[text]" beside the heuristic's "libdg".
struct GemvConfigArg {
  std::string text;
  int64_t threads_per_row = 0, row_groups = 0, chunks = 0, rows = 0, vec = 0, grid = 0, hint = 0, prefetch = 0;
};

inline bool parse_gemv_config(const std::string& text, GemvConfigArg* cfg, std::string* error) {
  GemvConfigArg c;
  c.text = text;
  if (!parse_key_values("--gemv-config", text,
                        {{"kt", &c.threads_per_row}, {"rg", &c.row_groups}, {"nc", &c.chunks}, {"rows", &c.rows},
                         {"vec", &c.vec}, {"grid", &c.grid}, {"hint", &c.hint}, {"prefetch", &c.prefetch}},
                        error))
    return false;
  *cfg = c;
  return true;
}

struct Options {
  std::vector<std::string> suites;  // empty: every known suite
  std::vector<Shape> shapes;        // empty: each suite's built-in set
  int reps = 50;                    // timed repetitions per contender (>= 30 enforced)
  int warmup = 5;
  int host_calls = 100;             // back-to-back calls for the host-overhead measurement
  int device = 0;
  uint64_t seed = 0x5eed;
  bool peers = true;                // time cuBLASLt beside libdg
  std::vector<GemmConfigArg> gemm_configs;  // extra libdg GEMM contenders with explicit configs
  std::vector<GemvConfigArg> gemv_configs;  // extra libdg NVFP4 GEMV contenders with explicit configs
  bool list = false;
  bool help = false;
  bool version = false;
  std::string json_path, csv_path;
};

inline const char* usage() {
  return "usage: dg-bench [--suite NAME[,NAME..]] [--shape m,n,k[,g]]... [--reps N] [--warmup N]\n"
         "                [--host-calls N] [--device I] [--seed S] [--no-peers] [--json FILE] [--csv FILE]\n"
         "                [--gemm-config key=v,...]... [--gemv-config key=v,...]... [--list] [--help]\n"
         "                [--version]\n"
         "suites: copy, layout, dense-bf16, dense-fp8, nvfp4-gemv, contiguous-fp8, contiguous-bf16,\n"
         "  masked-fp8, masked-bf16, quant, hc-prenorm (default: all); m-grouped = contiguous-fp8,\n"
         "  contiguous-bf16, masked-fp8, masked-bf16 (the M-grouped GEMMs)\n"
         "--shape replaces the built-in shapes of the selected suites (repeatable); M-grouped suites:\n"
         "  m = expected rows per group, g = groups; hc-prenorm: g = num_splits (1: no split).\n"
         "--gemm-config adds a libdg GEMM contender with an explicit kernel config (repeatable); keys:\n"
         "  bm, bn, stages, cluster, mca (1 shares A, 0 shares B), wg (math warp-groups), sms,\n"
         "  promo (FP8: 1 after, 2 overlapped), slices (FP8: 1, 2, 4), splitk (1, 2, 4, 8 CTAs per tile),\n"
         "  kernel (1 tiled, 2 skinny: M <= 32; its stages = units in flight per warp, splitk = CTAs per tile);\n"
         "  e.g. bm=128,bn=256,stages=4,cluster=2\n"
         "--gemv-config adds a libdg NVFP4 GEMV contender with an explicit config (repeatable); keys:\n"
         "  kt (threads per row), rg (row groups), nc (chunks per thread), rows (rows per round),\n"
         "  vec (16 or 8 bytes per load), grid (blocks), hint (cache hint 0..3), prefetch (-1, 0, 1);\n"
         "  e.g. kt=32,nc=4,rows=2\n";
}

// Parses argv into `opts`; false with a message on a bad argument.
inline bool parse_args(int argc, const char* const* argv, Options* opts, std::string* error) {
  auto need = [&](int& i, const std::string& flag, std::string* value) {
    if (i + 1 >= argc) {
      *error = flag + ": missing value";
      return false;
    }
    *value = argv[++i];
    return true;
  };
  auto need_int = [&](int& i, const std::string& flag, int64_t lo, int64_t* out) {
    std::string v;
    if (!need(i, flag, &v)) return false;
    if (!parse_int(v, out) || *out < lo) {
      *error = flag + ": '" + v + "' is not an integer >= " + std::to_string(lo);
      return false;
    }
    return true;
  };
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    std::string v;
    int64_t x = 0;
    if (arg == "--suite" || arg == "-s") {
      if (!need(i, arg, &v)) return false;
      for (const auto& name : split(v, ',')) {
        std::vector<std::string> names = suite_alias(name);
        if (names.empty() && is_known_suite(name)) names.push_back(name);
        if (names.empty()) {
          std::string known;
          for (const auto& k : known_suites()) known += k + ", ";
          *error = "--suite: unknown suite '" + name + "' (known: " + known + "m-grouped)";
          return false;
        }
        for (const auto& n : names) {
          bool dup = false;
          for (const auto& s : opts->suites) dup = dup || s == n;
          if (!dup) opts->suites.push_back(n);
        }
      }
    } else if (arg == "--shape") {
      if (!need(i, arg, &v)) return false;
      Shape s;
      if (!parse_shape(v, &s, error)) return false;
      opts->shapes.push_back(s);
    } else if (arg == "--reps") {
      if (!need_int(i, arg, 30, &x)) return false;
      opts->reps = static_cast<int>(x);
    } else if (arg == "--warmup") {
      if (!need_int(i, arg, 1, &x)) return false;
      opts->warmup = static_cast<int>(x);
    } else if (arg == "--host-calls") {
      if (!need_int(i, arg, 1, &x)) return false;
      opts->host_calls = static_cast<int>(x);
    } else if (arg == "--device") {
      if (!need_int(i, arg, 0, &x)) return false;
      opts->device = static_cast<int>(x);
    } else if (arg == "--seed") {
      if (!need_int(i, arg, 0, &x)) return false;
      opts->seed = static_cast<uint64_t>(x);
    } else if (arg == "--no-peers") {
      opts->peers = false;
    } else if (arg == "--gemm-config") {
      if (!need(i, arg, &v)) return false;
      GemmConfigArg g;
      if (!parse_gemm_config(v, &g, error)) return false;
      opts->gemm_configs.push_back(g);
    } else if (arg == "--gemv-config") {
      if (!need(i, arg, &v)) return false;
      GemvConfigArg g;
      if (!parse_gemv_config(v, &g, error)) return false;
      opts->gemv_configs.push_back(g);
    } else if (arg == "--json") {
      if (!need(i, arg, &opts->json_path)) return false;
    } else if (arg == "--csv") {
      if (!need(i, arg, &opts->csv_path)) return false;
    } else if (arg == "--list") {
      opts->list = true;
    } else if (arg == "--help" || arg == "-h") {
      opts->help = true;
    } else if (arg == "--version") {
      opts->version = true;
    } else {
      *error = "unknown argument '" + arg + "'";
      return false;
    }
  }
  return true;
}

}  // namespace dgb
