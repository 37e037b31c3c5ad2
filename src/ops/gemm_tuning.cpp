// The tuning table (docs/tuning.md): its text form, the lookup by M bucket, the table of each
// device loaded once, and the config choice on a config-cache miss.
#include "ops/gemm_tuning.h"

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <utility>

#include "ops/gemm_cost_model.h"
#include "ops/gemm_util.h"
#include "runtime/log.h"
#include "runtime/status.h"

namespace dg::ops {
namespace {

constexpr const char* kMagic = "libdg-tuning-table";
constexpr int kOldestTuningFormat = 1;  // lines without EPILOGUE (no fused epilogue)
// A table larger than this is not one dg_tune wrote.
constexpr std::streamoff kMaxTableBytes = 16 << 20;

constexpr const char* kTypeNames[kNumGemmTypes] = {"dense", "contiguous", "masked", "kgrouped", "psum", "batched",
                                                   "batchsum"};
constexpr const char* kKindNames[kNumGemmKinds] = {"bf16", "fp8_1d2d", "fp8_1d1d"};
constexpr const char* kPromotionNames[3] = {"none", "after", "overlap"};  // 0, DG_FP8_PROMOTION_*

// The dense layout name of a pair of operand majors (DeepGEMM's NT naming: A [M, K] is "n").
const char* layout_name(Major a, Major b) {
  if (a == Major::kK) return b == Major::kK ? "nt" : "nn";
  return b == Major::kK ? "tt" : "tn";
}

bool parse_layout(std::string_view t, Major* a, Major* b) {
  if (t == "nt") return *a = Major::kK, *b = Major::kK, true;
  if (t == "nn") return *a = Major::kK, *b = Major::kMN, true;
  if (t == "tn") return *a = Major::kMN, *b = Major::kMN, true;
  if (t == "tt") return *a = Major::kMN, *b = Major::kK, true;
  return false;
}

template <size_t N>
int index_of(const char* const (&names)[N], std::string_view t) {
  for (size_t i = 0; i < N; ++i)
    if (t == names[i]) return static_cast<int>(i);
  return -1;
}

bool parse_int(std::string_view t, int64_t lo, int64_t hi, int64_t* v) {
  const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), *v);
  return ec == std::errc() && end == t.data() + t.size() && *v >= lo && *v <= hi;
}

bool parse_double(std::string_view t, double* v) {
  const std::string s(t);
  char* end = nullptr;
  *v = std::strtod(s.c_str(), &end);
  return !s.empty() && end == s.c_str() + s.size() && std::isfinite(*v) && *v >= 0;
}

std::vector<std::string_view> split_words(std::string_view line) {
  std::vector<std::string_view> words;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r')) ++i;
    const size_t start = i;
    while (i < line.size() && line[i] != ' ' && line[i] != '\t' && line[i] != '\r') ++i;
    if (i > start) words.push_back(line.substr(start, i - start));
  }
  return words;
}

// D's token: bf16, f32, or e4m3 (an FP8 D with FP32 scales, fused epilogue).
const char* d_name(const GemmShape& s) {
  return s.d_dtype == DG_DTYPE_FLOAT8_E4M3 ? "e4m3" : s.d_dtype == DG_DTYPE_FLOAT32 ? "f32" : "bf16";
}

std::string format_entry(const TunedEntry& e) {
  const GemmShape& s = e.shape;
  const GemmOverride& o = e.config;
  return fmt::format("gemm {} {} {} {} {} {} {} {} {} {} {} : {} {} {} {} {} {} {} {} {} {:.2f} {:.2f}\n",
                     kKindNames[static_cast<int>(s.kind)], d_name(s), layout_name(s.major_a, s.major_b),
                     kTypeNames[static_cast<int>(s.type)], s.accumulate ? 1 : 0,
                     s.epilogue.act == Activation::kSwiGlu ? "swiglu" : "none", s.n, s.k, s.m, s.num_groups,
                     s.expected_m, o.block_m, o.block_n, o.stages, o.math_wg, o.cluster, o.multicast_a,
                     kPromotionNames[o.fp8_promotion], o.promotion_slices, o.split_k, e.tuned_us, e.heuristic_us);
}

// The problem fields of an entry line (words 1..10; format 2: 1..11, EPILOGUE the sixth).
bool parse_entry_shape(const std::vector<std::string_view>& w, int format, GemmShape* s) {
  const int kind = index_of(kKindNames, w[1]), type = index_of(kTypeNames, w[4]);
  const bool fp8_d = format >= 2 && w[2] == "e4m3";
  const bool d_ok = w[2] == "bf16" || w[2] == "f32" || fp8_d;
  if (kind < 0 || type < 0 || !d_ok || !parse_layout(w[3], &s->major_a, &s->major_b)) return false;
  s->kind = static_cast<GemmKind>(kind);
  s->type = static_cast<GemmType>(type);
  s->d_dtype = fp8_d ? DG_DTYPE_FLOAT8_E4M3 : w[2] == "f32" ? DG_DTYPE_FLOAT32 : DG_DTYPE_BFLOAT16;
  if (fp8_d) s->epilogue.scales = DScales::kFp32;
  size_t i = 6;
  if (format >= 2) {
    if (w[6] != "none" && w[6] != "swiglu") return false;
    if (w[6] == "swiglu") s->epilogue.act = Activation::kSwiGlu;
    i = 7;
  }
  int64_t acc = 0;
  return parse_int(w[5], 0, 1, &acc) && (s->accumulate = acc == 1, true) && parse_int(w[i], 1, INT32_MAX, &s->n) &&
         parse_int(w[i + 1], 1, INT32_MAX, &s->k) && parse_int(w[i + 2], 1, INT32_MAX, &s->m) &&
         parse_int(w[i + 3], 1, kMaxTableGroups, &s->num_groups) &&
         parse_int(w[i + 4], 0, INT32_MAX, &s->expected_m);
}

// The config and timing fields of an entry line: the 11 words from `first` (after the ":").
bool parse_entry_config(const std::vector<std::string_view>& w, size_t first, TunedEntry* e) {
  GemmOverride& o = e->config;
  int64_t v[8];
  const std::string_view* f = &w[first];
  const int promotion = index_of(kPromotionNames, f[6]);
  if (!parse_int(f[0], 64, 256, &v[0]) || !parse_int(f[1], 8, 256, &v[1]) || !parse_int(f[2], 1, 64, &v[2]) ||
      !parse_int(f[3], 1, 2, &v[3]) || !parse_int(f[4], 1, 2, &v[4]) || !parse_int(f[5], -1, 1, &v[5]) ||
      promotion < 0 || !parse_int(f[7], 0, 4, &v[6]) || !parse_int(f[8], 1, 8, &v[7]) ||
      !parse_double(f[9], &e->tuned_us) || !parse_double(f[10], &e->heuristic_us))
    return false;
  o.block_m = int(v[0]), o.block_n = int(v[1]), o.stages = int(v[2]), o.math_wg = int(v[3]), o.cluster = int(v[4]);
  o.multicast_a = int(v[5]), o.fp8_promotion = promotion, o.promotion_slices = int(v[6]), o.split_k = int(v[7]);
  o.kernel = DG_GEMM_KERNEL_TILED;
  return true;
}

// One header line "<key> <value>"; the value may hold spaces (GPU names).
bool header_value(std::string_view line, std::string_view key, std::string* value) {
  if (line.size() <= key.size() + 1 || line.substr(0, key.size()) != key || line[key.size()] != ' ') return false;
  std::string_view v = line.substr(key.size() + 1);
  while (!v.empty() && (v.back() == ' ' || v.back() == '\r')) v.remove_suffix(1);
  *value = std::string(v);
  return !value->empty();
}

}  // namespace

std::string tuning_library_version() {
  return fmt::format("{}.{}.{}", DG_VERSION_MAJOR, DG_VERSION_MINOR, DG_VERSION_PATCH);
}

std::string format_tuning_table(const TuningTable& t) {
  std::string out = fmt::format(
      "{} {}\nlibdg {}\ngpu {}\nsms {}\n"
      "# gemm KIND D LAYOUT TYPE ACCUMULATE EPILOGUE N K M G EXPECTED_M : BLOCK_M BLOCK_N STAGES MATH_WG CLUSTER "
      "MULTICAST_A "
      "PROMOTION SLICES SPLIT_K TUNED_US HEURISTIC_US\n",
      kMagic, kTuningFormatVersion, t.version, t.gpu, t.sms);
  for (const TunedEntry& e : t.entries) out += format_entry(e);
  return out;
}

bool parse_tuning_table(std::string_view text, TuningTable* out, std::string* why) {
  TuningTable t;
  int line_no = 0, header = 0, format = 0;
  std::string value;
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t end = std::min(text.find('\n', pos), text.size());
    const std::string_view line = text.substr(pos, end - pos);
    pos = end + 1, ++line_no;
    const std::vector<std::string_view> w = split_words(line);
    if (w.empty() || w[0][0] == '#') continue;
    bool ok = true;
    if (header == 0) {
      for (int f = kOldestTuningFormat; f <= kTuningFormatVersion; ++f)
        if (w.size() == 2 && w[0] == kMagic && w[1] == std::to_string(f)) format = f;
      if (format == 0)
        return *why = fmt::format("line {}: expected \"{} {}\" (formats {} to {} are read)", line_no, kMagic,
                                  kTuningFormatVersion, kOldestTuningFormat, kTuningFormatVersion), false;
    } else if (header == 1) {
      ok = header_value(line, "libdg", &t.version);
    } else if (header == 2) {
      ok = header_value(line, "gpu", &t.gpu);
    } else if (header == 3) {
      int64_t sms = 0;
      ok = w.size() == 2 && w[0] == "sms" && parse_int(w[1], 1, 1024, &sms);
      t.sms = static_cast<int>(sms);
    } else {
      TunedEntry e;
      const size_t colon = format >= 2 ? 12 : 11;  // the problem's words, then ":", then 11 more
      ok = w.size() == colon + 12 && w[0] == "gemm" && w[colon] == ":" && parse_entry_shape(w, format, &e.shape) &&
           parse_entry_config(w, colon + 1, &e);
      if (ok) t.entries.push_back(e);
    }
    if (!ok) return *why = fmt::format("line {}: cannot read \"{}\"", line_no, std::string(line)), false;
    header = std::min(header + 1, 4);
  }
  if (header < 4) return *why = "the header (format, libdg, gpu, sms lines) is incomplete", false;
  *out = std::move(t);
  return true;
}

int64_t bucket_of(const GemmShape& s) {
  if (s.type == GemmType::kKGrouped) return s.k;
  return is_m_grouped(s.type) ? std::max<int64_t>(s.expected_m, 1) : s.m;
}

bool same_tuning_key(const GemmShape& a, const GemmShape& b) {
  const bool exact = a.type == GemmType::kKGrouped ? a.m == b.m : a.k == b.k && a.num_groups == b.num_groups;
  return a.kind == b.kind && a.d_dtype == b.d_dtype && a.major_a == b.major_a && a.major_b == b.major_b &&
         a.accumulate == b.accumulate && a.type == b.type && a.n == b.n && exact && a.transpose_d == b.transpose_d &&
         a.epilogue.act == b.epilogue.act && a.epilogue.bias == b.epilogue.bias &&
         a.epilogue.scales == b.epilogue.scales;
}

double bucket_ratio(const GemmShape& a, const GemmShape& b) {
  const auto ratio = [](int64_t x, int64_t y) {
    return double(std::max<int64_t>(std::max(x, y), 1)) / double(std::max<int64_t>(std::min(x, y), 1));
  };
  const double r = ratio(bucket_of(a), bucket_of(b));
  return a.type == GemmType::kKGrouped ? std::max(r, ratio(a.num_groups, b.num_groups)) : r;
}

const TunedEntry* find_tuned(const TuningTable& t, const GemmShape& s) {
  const TunedEntry* best = nullptr;
  double best_ratio = kMaxBucketRatio;
  for (const TunedEntry& e : t.entries) {
    if (!same_tuning_key(e.shape, s)) continue;
    const double ratio = bucket_ratio(e.shape, s);
    const bool nearer = ratio < best_ratio ||
                        (ratio == best_ratio && (best == nullptr || bucket_of(e.shape) < bucket_of(best->shape)));
    if (nearer) best = &e, best_ratio = ratio;
  }
  return best;
}

std::string default_tuning_table_path(const std::string& cache_dir, const std::string& gpu, int sms) {
  if (cache_dir.empty()) return "";
  std::string slug;
  for (char c : gpu) {
    const char l = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
    const bool keep = (l >= 'a' && l <= 'z') || (l >= '0' && l <= '9');
    if (keep) slug += l;
    else if (!slug.empty() && slug.back() != '-') slug += '-';
  }
  while (!slug.empty() && slug.back() == '-') slug.pop_back();
  return fmt::format("{}/libdg/tuning-{}-{}sm.txt", cache_dir, slug.empty() ? "gpu" : slug, sms);
}

std::string tuning_table_path(const dg_stream_s& stream) {
  const Config& c = config_of(stream);
  if (c.tuning_table == kTuningTableOff) return "";
  if (!c.tuning_table.empty()) return c.tuning_table;
  return default_tuning_table_path(c.cache_dir, stream.device->name, stream.device->sm_count);
}

namespace {

using TableKey = std::pair<const Device*, std::string>;

struct LoadedTables {
  std::mutex mu;
  std::map<TableKey, std::shared_ptr<const TuningTable>> tables;  // nullptr: no usable table there
};

LoadedTables& loaded_tables() {
  static LoadedTables* t = new LoadedTables;  // never destroyed: calls may run during exit
  return *t;
}

// The table at `path` if it is one for `device`; nullptr (with a warning unless it is missing).
std::shared_ptr<const TuningTable> read_table(const Device& device, const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    if (errno != ENOENT) log::warn("ignoring tuning table {}: cannot read it ({})", path, std::strerror(errno));
    return nullptr;
  }
  std::ostringstream text;
  text << in.rdbuf();
  if (text.tellp() > kMaxTableBytes) {
    log::warn("ignoring tuning table {}: larger than {} bytes, not a table dg_tune writes", path, kMaxTableBytes);
    return nullptr;
  }
  auto table = std::make_shared<TuningTable>();
  std::string why;
  if (!parse_tuning_table(text.str(), table.get(), &why)) {
    log::warn("ignoring tuning table {}: {} (run dg-tune again to rewrite it)", path, why);
    return nullptr;
  }
  if (table->gpu != device.name || table->sms != device.sm_count || table->version != tuning_library_version()) {
    log::warn("ignoring tuning table {}: written for {} ({} SMs) by libdg {}; this is {} ({} SMs), libdg {} (run "
              "dg-tune on this GPU)",
              path, table->gpu, table->sms, table->version, device.name, device.sm_count, tuning_library_version());
    return nullptr;
  }
  log::debug("tuning table {}: {} tuned problems", path, table->entries.size());
  return table;
}

}  // namespace

std::shared_ptr<const TuningTable> read_tuning_table(const Device& device, const std::string& path) {
  return read_table(device, path);
}

std::shared_ptr<const TuningTable> tuning_table_for(const Device& device, const std::string& path) {
  LoadedTables& loaded = loaded_tables();
  const TableKey key{&device, path};
  {
    std::lock_guard<std::mutex> lock(loaded.mu);
    auto it = loaded.tables.find(key);
    if (it != loaded.tables.end()) return it->second;
  }
  // Read outside the lock; two threads that read at once keep the first result.
  std::shared_ptr<const TuningTable> table = read_table(device, path);
  std::lock_guard<std::mutex> lock(loaded.mu);
  return loaded.tables.emplace(key, std::move(table)).first->second;
}

void publish_tuning_table(const Device& device, const std::string& path, std::shared_ptr<const TuningTable> table) {
  LoadedTables& loaded = loaded_tables();
  std::lock_guard<std::mutex> lock(loaded.mu);
  loaded.tables[TableKey{&device, path}] = std::move(table);
}

namespace {

// mkdir -p of the directory that holds `path`; "" on success, else the reason.
std::string make_parent_dirs(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos || slash == 0) return "";
  const std::string dir = path.substr(0, slash);
  for (size_t i = 1; i <= dir.size(); ++i) {
    if (i != dir.size() && dir[i] != '/') continue;
    if (mkdir(dir.substr(0, i).c_str(), 0755) != 0 && errno != EEXIST)
      return fmt::format("cannot create {}: {}", dir.substr(0, i), std::strerror(errno));
  }
  struct stat st{};
  if (stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return fmt::format("{} is not a directory", dir);
  return "";
}

}  // namespace

dg_status write_tuning_table(const std::string& path, const TuningTable& t) {
  if (path.empty()) return fail(DG_ERROR_INVALID_ARGUMENT, "table path: empty (expected a file path)");
  const std::string dir_error = make_parent_dirs(path);
  if (!dir_error.empty()) return fail(DG_ERROR_INVALID_ARGUMENT, "table path {}: {}", path, dir_error);
  static std::atomic<unsigned> counter{0};
  const std::string tmp = fmt::format("{}.tmp.{}.{}", path, static_cast<long>(getpid()), counter++);
  const std::string text = format_tuning_table(t);
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (f == nullptr)
    return fail(DG_ERROR_INVALID_ARGUMENT, "table path {}: cannot write {}: {}", path, tmp, std::strerror(errno));
  bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  ok = (std::fflush(f) == 0) && ok;
  ok = (fsync(fileno(f)) == 0) && ok;
  const int err = errno;
  ok = (std::fclose(f) == 0) && ok;
  if (!ok || std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int e = ok ? errno : err;
    std::remove(tmp.c_str());
    return fail(DG_ERROR_INVALID_ARGUMENT, "table path {}: cannot write it: {}", path, std::strerror(e));
  }
  return DG_SUCCESS;
}

dg_status choose_tuned_gemm_config(const dg_stream_s& stream, const GemmShape& s, int num_sms, const GemmOverride& o,
                                   GemmConfig* out) {
  const Sm90CostModel& model = sm90_cost_model(stream.device->name);
  // Tables are measured on every SM: a capped call plans for its own SM count.
  const int sms = o.num_sms > 0 ? o.num_sms : num_sms;
  if (!has_config_override(o) && sms == stream.device->sm_count) {
    const std::string path = tuning_table_path(stream);
    const std::shared_ptr<const TuningTable> table = path.empty() ? nullptr : tuning_table_for(*stream.device, path);
    const TunedEntry* e = table ? find_tuned(*table, s) : nullptr;
    if (e != nullptr && !e->keeps_heuristic()) {
      GemmConfig c;
      if (choose_entry_config(s, num_sms, e->config, o, model, &c) == DG_SUCCESS) {
        *out = c;
        return DG_SUCCESS;
      }
      const char* dim = s.type == GemmType::kKGrouped ? "K" : "M";
      log::debug("tuning table {}: the entry for {} = {} cannot run {} = {} ({}); using the heuristic", path, dim,
                 bucket_of(e->shape), dim, bucket_of(s), last_error());
    }
  }
  return choose_gemm_config(s, num_sms, o, model, out);
}

}  // namespace dg::ops
