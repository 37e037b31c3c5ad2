// Tensor descriptors and the checks built on them, on arbitrary ranks, dtypes, sizes and strides
// (biased towards the int64 boundaries): dg_tensor_create either refuses the descriptor or makes one
// whose sizes, extent and strides later checks can multiply without overflow, and every query and
// entry point that takes tensors (GEMMs dense, M-grouped and K-grouped, the NVFP4 GEMV, the MQA
// logits and their schedule, the scale-layout transforms and the K-grouped packing) given such
// tensors returns a status with a message. UBSan turns any overflow into a crash. Calls run on an
// offline stream whose SM cap stops a valid call before compiling; those that check no SM count
// (the layout kernels) stop at the compiler, an nvcc that does not exist. The input format is
// dg::fuzz::Reader's (fuzz_inputs.h).
//
// The top two bits of the input's last byte add two modes. Failing builds: the calls run on an
// offline stream without the SM cap, so every call that passes validation builds its kernels and
// fails at the missing nvcc (failures are not cached: each call builds again). Callback
// re-entry: a log callback at debug level repeats a kernel-preparing call and a scale-layout call
// on the same stream from inside the callback, for every message the outer calls log; each must
// return (no wait on its own build) with a status, and the outer call's dg_last_error() must
// survive what the callback called.
#include <cstdlib>
#include <cstring>
#include <string>

#include "dg.h"
#include "fuzz.h"
#include "fuzz_inputs.h"

namespace {

using dg::fuzz::Reader;

// A descriptor in the format dg::fuzz::write_tensor writes.
dg_tensor* make(Reader& r) {
  const int32_t rank = int32_t(r.u(1) % 6);  // 0 and 5 are invalid
  const dg_dtype dtype = dg_dtype(r.u(1) % 11);
  int64_t sizes[DG_MAX_RANK + 1] = {}, strides[DG_MAX_RANK + 1] = {};
  for (int i = 0; i <= DG_MAX_RANK; ++i) sizes[i] = r.dim();
  const bool with_strides = r.u(1) & 1;
  for (int i = 0; i <= DG_MAX_RANK; ++i) strides[i] = r.dim();
  void* data = reinterpret_cast<void*>(uintptr_t(r.u(2)) << 4);
  dg_tensor* t = nullptr;
  const dg_status s = dg_tensor_create(&t, data, dtype, rank, sizes, with_strides ? strides : nullptr);
  if (s != DG_SUCCESS) {
    FUZZ_ASSERT(t == nullptr);
    FUZZ_ASSERT(s == DG_ERROR_INVALID_ARGUMENT && dg_last_error()[0] != '\0');
    return nullptr;
  }
  int64_t got_sizes[DG_MAX_RANK], got_strides[DG_MAX_RANK];
  int32_t got_rank = 0;
  FUZZ_ASSERT(dg_tensor_get(t, nullptr, nullptr, &got_rank, got_sizes, got_strides) == DG_SUCCESS);
  FUZZ_ASSERT(got_rank == rank);
  for (int i = 0; i < rank; ++i) FUZZ_ASSERT(got_sizes[i] == sizes[i] && got_sizes[i] >= 0);
  return t;
}

constexpr int kModeReenter = 1, kModeFailingBuild = 2;

// What the re-entering callback calls with, and how often it ran.
struct Reentry {
  dg_stream* stream = nullptr;
  const dg_tensor* sf = nullptr;
  const dg_tensor* out = nullptr;
  int calls = 0;
};
thread_local Reentry* t_reentry = nullptr;

void valid_status(dg_status s) { FUZZ_ASSERT(s >= DG_SUCCESS && s < DG_ERROR_INTERNAL); }

void reenter(int32_t, const char*, void*) {
  Reentry* r = t_reentry;
  if (r == nullptr) return;
  ++r->calls;
  valid_status(dg_gemm_prepare(r->stream, DG_DTYPE_BFLOAT16, DG_GEMM_LAYOUT_NT, 128, 128, 0, DG_DTYPE_BFLOAT16, 0,
                               nullptr));
  valid_status(dg_get_mn_major_tma_aligned_tensor(r->stream, r->sf, r->out));
  dg_get_tma_aligned_size(-1, 1, nullptr);  // a failure of its own, not the outer call's message
}

void check(dg_status s) {
  valid_status(s);
  if (s != DG_SUCCESS) {
    FUZZ_ASSERT(dg_last_error()[0] != '\0');
    FUZZ_ASSERT(std::strncmp(dg_last_error(), "aligned: out-pointer is NULL", 28) != 0);  // the callback's
  }
}

dg_stream* offline_stream(bool capped) {
  dg_config* cfg = nullptr;
  dg_config_create(&cfg);
  dg_config_set_int(cfg, DG_CONFIG_COMPILER, DG_COMPILER_NVCC);
  if (capped) dg_config_set_int(cfg, DG_CONFIG_NUM_SMS, 1024);  // above the device's 132: no compile
  dg_config_set_string(cfg, DG_CONFIG_CACHE_DIR, "");
  dg_stream* s = nullptr;
  FUZZ_ASSERT(dg_stream_create_offline(&s, 9, 0, 132, cfg) == DG_SUCCESS);
  dg_config_destroy(cfg);
  return s;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static dg_stream* capped = [] {
    dg_set_log_level(DG_LOG_OFF);
    setenv("DG_JIT_NVCC_COMPILER", "/nonexistent/libdg-fuzz/nvcc", 1);  // read by dg_config_create
    return offline_stream(true);
  }();
  static dg_stream* uncapped = offline_stream(false);
  const int mode = size > 0 ? data[size - 1] >> 6 : 0;
  dg_stream* stream = mode & kModeFailingBuild ? uncapped : capped;
  Reader r{data, size};
  dg_tensor* t[5] = {};
  for (auto& x : t) x = make(r);
  Reentry reentry{stream, t[0], t[2], 0};
  if (mode & kModeReenter) {
    t_reentry = &reentry;
    dg_set_log_callback(reenter, nullptr);
    dg_set_log_level(DG_LOG_DEBUG);  // every failure is logged: the callback runs after most calls
  }
  const int64_t a = r.dim(), b = r.dim(), c = r.dim();
  // Queries on raw sizes.
  int64_t sizes3[3] = {a, b, c}, out_sizes[3], out_strides[3];
  size_t bytes = 0;
  check(dg_get_mn_major_tma_aligned_tensor_layout(int32_t(r.u(1) % 4), sizes3, out_sizes, out_strides, &bytes));
  check(dg_get_mn_major_tma_aligned_packed_ue8m0_tensor_layout(int32_t(r.u(1) % 4), sizes3, out_sizes, out_strides,
                                                               &bytes));
  int64_t aligned = 0;
  check(dg_get_tma_aligned_size(a, size_t(r.u(1) % 20), &aligned));
  check(dg_fp8_gemm_workspace_size(int32_t(r.u(1) % 5), a, b, c, &bytes));
  const dg_dtype ab_dtype = r.u(1) & 1 ? DG_DTYPE_FLOAT8_E4M3 : DG_DTYPE_BFLOAT16;  // read in order: the
  const int32_t layout = int32_t(r.u(1) % 5);                                          // seeds' format
  check(dg_gemm_prepare(stream, ab_dtype, layout, a, b, c, DG_DTYPE_BFLOAT16, 0, nullptr));
  // Scale layouts and GEMMs on the descriptors.
  dg_sf_recipe recipe = DG_SF_RECIPE_INIT;
  recipe.arch_major = r.u(1) & 1 ? 10 : 9;
  recipe.gran_mn = r.u(1) & 1 ? 128 : 1;
  int32_t is_input = 0;
  dg_dtype dtype = 0;
  check(dg_transform_sf_layout(nullptr, t[0], a, b, &recipe, &is_input, &dtype, out_sizes, out_strides, &bytes));
  dg_gemm_options options = DG_GEMM_OPTIONS_INIT;
  options.recipe = int32_t(r.u(1) % 3);
  options.block_n = int32_t(int8_t(r.u(1)));
  options.workspace = reinterpret_cast<void*>(uintptr_t(r.u(1)) << 8);
  options.workspace_size = size_t(r.u(4));
  check(dg_bf16_gemm_nt(stream, t[0], t[1], t[2], t[3], &options));
  check(dg_bf16_gemm_tn(stream, t[0], t[1], t[2], nullptr, &options));
  check(dg_fp8_gemm_nt(stream, t[0], t[3], t[1], t[4], t[2], nullptr, &options));
  check(dg_fp8_gemm_tt(stream, t[0], t[3], t[1], t[4], t[2], t[2], &options));
  check(dg_m_grouped_bf16_gemm_nt_contiguous(stream, t[0], t[1], t[2], t[3], int32_t(r.u(1) % 3), a, &options));
  check(dg_m_grouped_fp8_gemm_nt_masked(stream, t[0], t[3], t[1], t[4], t[2], t[3], b, &options));
  // K-grouped: up to 8 groups' K from the input, with or without a device copy of them.
  int64_t ks[8];
  const int64_t groups = int64_t(r.u(1) % 9);
  const dg_tensor* ks_tensor = r.u(1) & 1 ? t[4] : nullptr;
  for (auto& k : ks) k = r.dim();
  check(dg_k_grouped_fp8_gemm_nt_contiguous(stream, t[0], t[3], t[1], t[4], t[2], nullptr, ks, groups, ks_tensor,
                                            &options));
  check(dg_k_grouped_fp8_gemm_tn_contiguous(stream, t[0], t[3], t[1], t[4], t[2], t[2], ks, groups, nullptr, &options));
  check(dg_k_grouped_bf16_gemm_tn_contiguous(stream, t[0], t[1], t[2], t[3], ks, groups, ks_tensor, &options));
  // Appended after the fields above (older seeds read zeros here): two more descriptors t[5], t[6]
  // and the scalars of the calls below. Each call names which descriptor is which argument.
  dg_tensor* u[2] = {make(r), make(r)};
  dg_nvfp4_gemv_options gemv = DG_NVFP4_GEMV_OPTIONS_INIT;
  gemv.grid_blocks = int32_t(int8_t(r.u(1)));
  const int32_t clean_logits = int32_t(r.u(1) % 3);
  const int32_t block_kv = int32_t(r.u(2));
  const int64_t num_sms = r.dim(), max_context_len = r.dim();
  const dg_dtype logits_dtype = dg_dtype(r.u(1) % 11);
  // NVFP4 GEMV: a, sfa, b, sfb, c.
  check(dg_nvfp4_gemv(stream, t[0], t[3], t[1], t[4], t[2], &gemv));
  // MQA logits: q, kv, kv_sf, weights, cu_seq_len_k_start, _end, logits (compressed: with
  // max_context_len as max_seqlen_k); the paged schedule: context_lens, schedule_meta; paged: q,
  // kv_cache, weights, context_lens, block_table, schedule_meta, logits.
  check(dg_fp8_mqa_logits(stream, t[0], t[1], t[3], t[4], u[0], u[1], t[2], clean_logits));
  check(dg_fp8_mqa_logits_compressed(stream, t[0], t[1], t[3], t[4], u[0], u[1], max_context_len, t[2], clean_logits));
  check(dg_get_paged_mqa_logits_metadata(stream, u[0], block_kv, int32_t(num_sms), u[1]));
  check(dg_fp8_paged_mqa_logits(stream, t[0], t[1], t[4], u[0], t[3], u[1], max_context_len, t[2], clean_logits));
  check(dg_get_mqa_logits_layout(a, b, logits_dtype, out_sizes, out_strides, &bytes));
  // Scale layouts: sf t[0] into out t[2]; the K-grouped packing with the K-grouped fields above.
  check(dg_get_mn_major_tma_aligned_tensor(stream, t[0], t[2]));
  check(dg_get_mn_major_tma_aligned_packed_ue8m0_tensor(stream, t[0], t[2]));
  check(dg_transform_sf_into_required_layout(stream, t[0], a, b, &recipe, t[2]));
  check(dg_get_k_grouped_mn_major_tma_aligned_packed_ue8m0_tensor_layout(a, ks, groups, out_sizes, out_strides,
                                                                         &bytes));
  check(dg_get_k_grouped_mn_major_tma_aligned_packed_ue8m0_tensor(stream, t[0], ks, groups, ks_tensor, t[2]));
  if (mode & kModeReenter) {
    int64_t aligned_out = 0;
    FUZZ_ASSERT(dg_get_tma_aligned_size(-1, 1, &aligned_out) == DG_ERROR_INVALID_ARGUMENT);  // logged
    FUZZ_ASSERT(std::strncmp(dg_last_error(), "x: -1", 5) == 0);
    dg_set_log_level(DG_LOG_OFF);
    dg_set_log_callback(nullptr, nullptr);
    t_reentry = nullptr;
    FUZZ_ASSERT(reentry.calls > 0);
  }
  for (auto& x : u) dg_tensor_destroy(x);
  for (auto& x : t) dg_tensor_destroy(x);
  return 0;
}
