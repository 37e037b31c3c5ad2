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
  fs::remove_all(scratch);
}

// fuzz_tensor reads five descriptors t[0..4], scalars a, b, c, then the query and option bytes,
// then the K-grouped fields (see its LLVMFuzzerTestOneInput). Each seed is valid for one family.
void tensor_seeds(const fs::path& out) {
  using dg::fuzz::Writer;
  using dg::fuzz::write_tensor;
  const int64_t M = 256, N = 384, K = 512, G = 2, SK = K / 128;
  const dg_dtype bf = DG_DTYPE_BFLOAT16, f8 = DG_DTYPE_FLOAT8_E4M3, f32 = DG_DTYPE_FLOAT32, i32 = DG_DTYPE_INT32;
  auto tail = [&](Writer& w, int32_t grouped_layout) {
    w.dim(M), w.dim(N), w.dim(K);  // a, b, c
    w.u(2, 1), w.u(2, 1);          // layout queries: rank 2
    w.u(4, 1);                     // dg_get_tma_aligned_size: element size
    w.u(DG_GEMM_LAYOUT_NT, 1);     // workspace size
    w.u(0, 1), w.u(DG_GEMM_LAYOUT_NT, 1);  // prepare: BF16, layout
    w.u(0, 1), w.u(0, 1);          // recipe: SM90, per-token
    w.u(0, 1), w.u(0, 1), w.u(0, 1), w.u(0, 4);  // options: recipe, block_n, workspace, size
    w.u(static_cast<uint64_t>(grouped_layout), 1);
  };
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
