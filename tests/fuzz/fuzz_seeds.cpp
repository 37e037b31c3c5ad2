// Writes the fuzz targets' generated seeds, each in its target's input format (fuzz_inputs.h), into
// OUT_DIR/<target>/: what the repository's files alone cannot give.
//   template:   every kernel template with each representative context the library builds for it
//               (tests/compile/kernel_specs.h), and every golden case (CASES_DIR: X.j2 with X.json)
//               with its context, as "{#context JSON #}" + template.
//   json:       those contexts as JSON documents, and all of them in one.
//   cache_file: entries written by the library's own cache writer (empty to 4 KiB payloads), as the
//               file, behind a link, and valid entries with header or payload bytes overwritten.
//   tensor:     valid descriptors for each family of entry point the target calls, so that mutants
//               start past argument validation.
//
//   fuzz_seeds OUT_DIR CASES_DIR...
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

#include "dg.h"
#include "dg_embedded.h"
#include "fuzz_inputs.h"
#include "jit/disk_cache.h"
#include "kernel_specs.h"

namespace {

namespace fs = std::filesystem;

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

int written = 0;

void write_seed(const fs::path& dir, const std::string& name, const std::string& bytes) {
  fs::create_directories(dir);
  std::ofstream out(dir / name, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), std::streamsize(bytes.size()));
  if (!out) throw std::runtime_error("cannot write " + (dir / name).string());
  ++written;
}

std::string with_context(const std::string& json, const std::string& source) {
  return std::string(dg::fuzz::kContextTag) + json + " #}" + source;
}

void template_and_json_seeds(const fs::path& out, const std::vector<fs::path>& case_dirs) {
  std::string all = "{";
  for (const auto& [family, specs] : dg::test::representative_kernel_specs()) {
    all += (all.size() > 1 ? ", \"" : "\"") + family + "\": [";
    for (size_t i = 0; i < specs.size(); ++i) {
      const dg::embedded::File* file = dg::embedded::find(specs[i].template_name);
      if (file == nullptr) throw std::runtime_error("no embedded template " + specs[i].template_name);
      const std::string json = dg::test::to_json(specs[i].context);
      const std::string name = family + "-" + std::to_string(i);
      write_seed(out / "template", name + ".cu.j2", with_context(json, std::string(file->data)));
      write_seed(out / "json", name + ".json", json);
      all += (i > 0 ? ", " : "") + json;
    }
    all += "]";
  }
  write_seed(out / "json", "kernel_contexts.json", all + "}");
  for (const fs::path& dir : case_dirs)
    for (const auto& e : fs::directory_iterator(dir)) {
      if (e.path().extension() != ".j2") continue;
      fs::path context = e.path();
      context.replace_extension(".json");
      if (fs::exists(context))
        write_seed(out / "template", dir.filename().string() + "-" + e.path().filename().string(),
                   with_context(read_file(context), read_file(e.path())));
    }
}

void cache_seeds(const fs::path& out) {
  using namespace dg::fuzz;
  const fs::path scratch = out / "cache_file.tmp";
  fs::remove_all(scratch);
  fs::create_directories(scratch);
  dg_set_log_level(DG_LOG_OFF);
  dg::jit::DiskCache cache(scratch.string());
  const auto key = dg::jit::digest(kCacheKeyText);
  const fs::path entry = cache.path_for(kCacheFamily, key);
  std::vector<std::vector<char>> payloads = {{}, {'x'}, std::vector<char>(200, 'p'), std::vector<char>(4096)};
  for (size_t i = 0; i < payloads.back().size(); ++i) payloads.back()[i] = static_cast<char>(i * 131 % 251);
  for (size_t i = 0; i < payloads.size(); ++i) {
    cache.store(kCacheFamily, key, payloads[i]);
    const std::string file = read_file(entry);
    if (file.size() != 40 + payloads[i].size()) throw std::runtime_error("the cache did not store " + entry.string());
    const std::string n = std::to_string(payloads[i].size());
    write_seed(out / "cache_file", "entry-" + n, char(kCacheBytes) + file);
    write_seed(out / "cache_file", "link-" + n, char(kCacheLink) + file);
  }
  // Overwrites of the 200-byte entry: magic, format version, key, payload size (low and high
  // byte), checksum, a payload byte; and one that writes the bytes already there.
  const std::string base = read_file(entry);
  for (const int at : {0, 4, 8, 24, 31, 32, 100}) {
    std::string seed(1, char(kCacheOverwrite));
    seed += char(at);
    seed += char(base[size_t(at)] ^ 1);
    write_seed(out / "cache_file", "overwrite-" + std::to_string(at), seed);
  }
  write_seed(out / "cache_file", "overwrite-same", std::string(1, char(kCacheOverwrite)) + '\x10' + base[16]);
  write_seed(out / "cache_file", "fifo", std::string(1, char(kCacheFifo)));
  write_seed(out / "cache_file", "directory", std::string(1, char(kCacheDirectory)));
  // Each again with the log callback that re-enters the load (the first byte's top bit).
  std::vector<fs::path> plain;
  for (const auto& e : fs::directory_iterator(out / "cache_file"))
    if (e.path().filename().string().find("+reenter") == std::string::npos) plain.push_back(e.path());
  for (const fs::path& p : plain) {
    std::ifstream in(p, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (bytes.empty()) continue;
    bytes[0] = char(static_cast<unsigned char>(bytes[0]) | dg::fuzz::kCacheReenter);
    write_seed(out / "cache_file", p.filename().string() + "+reenter", bytes);
  }
  fs::remove_all(scratch);
}

// fuzz_tensor reads five descriptors t[0..4], scalars a, b, c, then the query and option bytes,
// then the K-grouped fields, then two more descriptors and the scalars of the GEMV, MQA and layout
// calls (see its LLVMFuzzerTestOneInput). Each seed is valid for one family.
void tensor_seeds(const fs::path& out) {
  using dg::fuzz::Writer;
  using dg::fuzz::write_tensor;
  const int64_t M = 256, N = 384, K = 512, G = 2, SK = K / 128;
  const dg_dtype bf = DG_DTYPE_BFLOAT16, f8 = DG_DTYPE_FLOAT8_E4M3, f32 = DG_DTYPE_FLOAT32, i32 = DG_DTYPE_INT32;
  auto tail_with = [&](Writer& w, int32_t grouped_layout, int64_t a, int64_t b, int64_t c) {
    w.dim(a), w.dim(b), w.dim(c);
    w.u(2, 1), w.u(2, 1);          // layout queries: rank 2
    w.u(4, 1);                     // dg_get_tma_aligned_size: element size
    w.u(DG_GEMM_LAYOUT_NT, 1);     // workspace size
    w.u(0, 1), w.u(DG_GEMM_LAYOUT_NT, 1);  // prepare: BF16, layout
    w.u(0, 1), w.u(0, 1);          // recipe: SM90, per-token
    w.u(0, 1), w.u(0, 1), w.u(0, 1), w.u(0, 4);  // options: recipe, block_n, workspace, size
    w.u(static_cast<uint64_t>(grouped_layout), 1);
  };
  auto tail = [&](Writer& w, int32_t grouped_layout) { tail_with(w, grouped_layout, M, N, K); };
  auto k_grouped = [&](Writer& w, bool ks_tensor) {
    w.u(G, 1), w.u(ks_tensor ? 1 : 0, 1);
    for (int i = 0; i < 8; ++i) w.dim(i < G ? K / G : 0);
  };
  {  // BF16 nt with C, and the tn entry point's views of it
    Writer w;
    write_tensor(w, 2, bf, {M, K}, {}, 0x100);
    write_tensor(w, 2, bf, {N, K}, {}, 0x200);
    write_tensor(w, 2, f32, {M, N}, {}, 0x300);
    write_tensor(w, 2, f32, {M, N}, {N, 1}, 0x400);
    write_tensor(w, 0, 0, {}, {}, 0);
    tail(w, DG_M_GROUPED_LAYOUT_INDICES);
    write_seed(out / "tensor", "bf16-nt", w.bytes);
  }
  {  // FP8 nt 1D2D: sfa MN-major TMA-aligned, sfb per 128x128 block
    Writer w;
    write_tensor(w, 2, f8, {M, K}, {}, 0x100);
    write_tensor(w, 2, f8, {N, K}, {}, 0x200);
    write_tensor(w, 2, bf, {M, N}, {}, 0x300);
    write_tensor(w, 2, f32, {M, SK}, {1, M}, 0x400);
    write_tensor(w, 2, f32, {(N + 127) / 128, SK}, {}, 0x500);
    tail(w, DG_M_GROUPED_LAYOUT_INDICES);
    write_seed(out / "tensor", "fp8-nt", w.bytes);
  }
  {  // M-grouped BF16 contiguous with per-row indices
    Writer w;
    write_tensor(w, 2, bf, {M, K}, {}, 0x100);
    write_tensor(w, 3, bf, {G, N, K}, {}, 0x200);
    write_tensor(w, 2, bf, {M, N}, {}, 0x300);
    write_tensor(w, 1, i32, {M}, {}, 0x400);
    write_tensor(w, 0, 0, {}, {}, 0);
    tail(w, DG_M_GROUPED_LAYOUT_INDICES);
    write_seed(out / "tensor", "m-grouped-bf16-contiguous", w.bytes);
  }
  {  // M-grouped FP8 masked: sfa [G, max_m, SK] MN-major per group; t[3] is sfa and masked_m at once,
     // so this one stops at masked_m; the mutants take it from there
    Writer w;
    write_tensor(w, 3, f8, {G, M, K}, {}, 0x100);
    write_tensor(w, 3, f8, {G, N, K}, {}, 0x200);
    write_tensor(w, 3, bf, {G, M, N}, {}, 0x300);
    write_tensor(w, 3, f32, {G, M, SK}, {M * SK, 1, M}, 0x400);
    write_tensor(w, 3, f32, {G, (N + 127) / 128, SK}, {}, 0x500);
    tail(w, DG_M_GROUPED_LAYOUT_INDICES);
    write_seed(out / "tensor", "m-grouped-fp8-masked", w.bytes);
  }
  {  // K-grouped FP8 nt: a and b packed per group ([MN, k_g] blocks), scales [MN, K/128] MN-major
    Writer w;
    write_tensor(w, 1, f8, {M * K}, {}, 0x100);
    write_tensor(w, 1, f8, {N * K}, {}, 0x200);
    write_tensor(w, 3, f32, {G, M, N}, {}, 0x300);
    write_tensor(w, 2, f32, {M, SK}, {1, M}, 0x400);
    write_tensor(w, 2, f32, {N, SK}, {1, N}, 0x500);
    tail(w, DG_M_GROUPED_LAYOUT_INDICES);
    k_grouped(w, false);
    write_seed(out / "tensor", "k-grouped-fp8-nt", w.bytes);
  }
  {  // K-grouped BF16 tn: a [K, M], b [K, N], with C and the group sizes on the device too
    Writer w;
    write_tensor(w, 2, bf, {K, M}, {}, 0x100);
    write_tensor(w, 2, bf, {K, N}, {}, 0x200);
    write_tensor(w, 3, f32, {G, M, N}, {}, 0x300);
    write_tensor(w, 3, f32, {G, M, N}, {}, 0x400);
    write_tensor(w, 1, i32, {G}, {}, 0x500);
    tail(w, DG_M_GROUPED_LAYOUT_INDICES);
    k_grouped(w, true);
    write_seed(out / "tensor", "k-grouped-bf16-tn", w.bytes);
  }
  // The calls after the K-grouped fields: descriptors t[5], t[6], then the GEMV's grid_blocks,
  // clean_logits, block_kv, num_sms, max_context_len and the logits dtype.
  auto rest = [&](Writer& w, int64_t num_sms, int64_t max_context_len) {
    w.u(0, 1), w.u(1, 1), w.u(64, 2), w.dim(num_sms), w.dim(max_context_len), w.u(f32, 1);
  };
  auto none = [&](Writer& w) { write_tensor(w, 0, 0, {}, {}, 0); };
  {  // NVFP4 GEMV, rank 2: a [M, K/2], b [1, K/2] (FP4 pairs), sfa [M, K/16], sfb [1, K/16], c [M, 1]
    Writer w;
    write_tensor(w, 2, DG_DTYPE_FLOAT4_E2M1X2, {M, K / 2}, {}, 0x100);
    write_tensor(w, 2, DG_DTYPE_FLOAT4_E2M1X2, {1, K / 2}, {}, 0x200);
    write_tensor(w, 2, DG_DTYPE_FLOAT16, {M, 1}, {}, 0x300);
    write_tensor(w, 2, f8, {M, K / 16}, {}, 0x400);
    write_tensor(w, 2, f8, {1, K / 16}, {}, 0x500);
    tail(w, DG_M_GROUPED_LAYOUT_INDICES);
    k_grouped(w, false);
    none(w), none(w);
    rest(w, 132, 0);
    write_seed(out / "tensor", "nvfp4-gemv", w.bytes);
  }
  // MQA logits: S_q 8, H 64, D 128, S_kv 512; paged: B 4, next_n 2, 40 blocks of 64, 10 per sequence.
  const int64_t S = 8, H = 64, D = 128, SKV = 512, B = 4, NEXT = 2, BLOCKS = 40, BLOCK_KV = 64, CTX = 600;
  {  // non-paged: q, kv, logits, kv_sf, weights, then cu_seq_len_k_start and _end as t[5], t[6]
    Writer w;
    write_tensor(w, 3, f8, {S, H, D}, {}, 0x100);
    write_tensor(w, 2, f8, {SKV, D}, {}, 0x200);
    write_tensor(w, 2, f32, {S, SKV}, {}, 0x300);
    write_tensor(w, 1, f32, {SKV}, {}, 0x400);
    write_tensor(w, 2, f32, {S, H}, {}, 0x500);
    tail_with(w, DG_M_GROUPED_LAYOUT_INDICES, S, SKV, K);  // the logits layout query's seq_len, seq_len_kv
    k_grouped(w, false);
    write_tensor(w, 1, i32, {S}, {}, 0x600);
    write_tensor(w, 1, i32, {S}, {}, 0x700);
    rest(w, 132, 0);
    write_seed(out / "tensor", "mqa-logits", w.bytes);
  }
  {  // the paged schedule: context_lens and schedule_meta [num_sms + 1, 2] as t[5], t[6]
    Writer w;
    for (int i = 0; i < 5; ++i) none(w);
    tail(w, DG_M_GROUPED_LAYOUT_INDICES);
    k_grouped(w, false);
    write_tensor(w, 1, i32, {B}, {}, 0x600);
    write_tensor(w, 2, i32, {133, 2}, {}, 0x700);
    rest(w, 132, 0);
    write_seed(out / "tensor", "paged-mqa-logits-metadata", w.bytes);
  }
  {  // paged: q, kv_cache (D FP8 bytes + 4 scale bytes per key), logits, block_table, weights, then
     // context_lens and schedule_meta
    Writer w;
    write_tensor(w, 4, f8, {B, NEXT, H, D}, {}, 0x100);
    write_tensor(w, 4, DG_DTYPE_UINT8, {BLOCKS, BLOCK_KV, 1, D + 4}, {}, 0x200);
    write_tensor(w, 2, f32, {B * NEXT, CTX}, {}, 0x300);
    write_tensor(w, 2, i32, {B, BLOCKS / B}, {}, 0x400);
    write_tensor(w, 2, f32, {B * NEXT, H}, {}, 0x500);
    tail(w, DG_M_GROUPED_LAYOUT_INDICES);
    k_grouped(w, false);
    write_tensor(w, 1, i32, {B}, {}, 0x600);
    write_tensor(w, 2, i32, {133, 2}, {}, 0x700);
    rest(w, 132, CTX);
    write_seed(out / "tensor", "paged-mqa-logits", w.bytes);
  }
  // Scale layouts: sf t[0] [MN, SK] K-major; out t[2] as the library's layout queries give it.
  auto sf_seed = [&](const char* name, dg_dtype out_dtype, const int64_t* sizes, const int64_t* strides, int64_t a,
                     int64_t b, const std::vector<int64_t>& sf_sizes) {
    Writer w;
    write_tensor(w, 2, f32, {sf_sizes[0], sf_sizes[1]}, {}, 0x100);
    none(w);
    write_tensor(w, 2, out_dtype, {sizes[0], sizes[1]}, {strides[0], strides[1]}, 0x300);
    none(w), none(w);
    tail_with(w, DG_M_GROUPED_LAYOUT_INDICES, a, b, K);
    k_grouped(w, false);
    none(w), none(w);
    rest(w, 132, 0);
    write_seed(out / "tensor", name, w.bytes);
  };
  int64_t sizes[3], strides[3];
  size_t bytes = 0;
  const int64_t mn_sk[2] = {M, SK};
  auto require = [](dg_status s) {
    if (s != DG_SUCCESS) throw std::runtime_error(std::string("layout query: ") + dg_last_error());
  };
  require(dg_get_mn_major_tma_aligned_tensor_layout(2, mn_sk, sizes, strides, &bytes));
  sf_seed("mn-major-sf", f32, sizes, strides, M, N, {M, SK});
  require(dg_get_mn_major_tma_aligned_packed_ue8m0_tensor_layout(2, mn_sk, sizes, strides, &bytes));
  sf_seed("mn-major-packed-sf", i32, sizes, strides, M, N, {M, SK});
  {  // dg_transform_sf_into_required_layout: mn = a, k = b, the recipe the tail writes (SM90, per token)
    dg_sf_recipe recipe = DG_SF_RECIPE_INIT;
    recipe.arch_major = 9;
    recipe.gran_mn = 1;
    dg_tensor* sf = nullptr;
    require(dg_tensor_create(&sf, reinterpret_cast<void*>(0x1000), f32, 2, mn_sk, nullptr));
    int32_t is_input = 0;
    dg_dtype dtype = 0;
    const dg_status s = dg_transform_sf_layout(nullptr, sf, M, K, &recipe, &is_input, &dtype, sizes, strides, &bytes);
    dg_tensor_destroy(sf);
    require(s);
    sf_seed("transform-sf", dtype, sizes, strides, M, K, {M, SK});
  }
  {  // K-grouped packing: mn = a, the K-grouped fields' ks (K / G each); sf [sum(ks) / 128, MN]
    const int64_t ks[2] = {K / G, K / G};
    require(dg_get_k_grouped_mn_major_tma_aligned_packed_ue8m0_tensor_layout(M, ks, G, sizes, strides, &bytes));
    sf_seed("k-grouped-packed-sf", i32, sizes, strides, M, N, {K / 128, M});
  }
  // Each seed again in the target's three other modes (the top bits of the last byte): failing
  // builds, callback re-entry, both. The byte added is read as trailing zeros were before.
  std::vector<fs::path> plain;
  for (const auto& e : fs::directory_iterator(out / "tensor"))
    if (e.path().filename().string().find("+mode") == std::string::npos) plain.push_back(e.path());
  for (const fs::path& p : plain) {
    std::ifstream in(p, std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    for (const int mode : {1, 2, 3})
      write_seed(out / "tensor", p.filename().string() + "+mode" + std::to_string(mode),
                 bytes + char(mode << 6));
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: fuzz_seeds OUT_DIR CASES_DIR...\n";
    return 2;
  }
  try {
    const fs::path out = argv[1];
    std::vector<fs::path> case_dirs(argv + 2, argv + argc);
    for (const char* target : {"template", "json", "cache_file", "tensor"}) fs::remove_all(out / target);
    template_and_json_seeds(out, case_dirs);
    cache_seeds(out);
    tensor_seeds(out);
  } catch (const std::exception& e) {
    std::cerr << "fuzz_seeds: " << e.what() << "\n";
    return 1;
  }
  std::cout << "fuzz_seeds: " << written << " seeds in " << argv[1] << "\n";
  return 0;
}
