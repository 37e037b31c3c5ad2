// dg_get_paged_mqa_logits_metadata against the schedule computed on the host (docs/mqa_logits.md#schedule), and
// dg_fp8_paged_mqa_logits against a double-precision reference on the dequantised inputs: random
// block tables (a permutation of the cache) and context lengths including 0 and non-multiples of
// 64, 1-D and 2-D context lengths, clean_logits on and off. The -inf mask and the untouched row
// padding are checked at every entry, values at sampled valid entries; repeated calls must give
// bitwise identical logits; a CUDA graph of both calls replays with new context lengths.
#include <dlfcn.h>
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <string>
#include <vector>

#include "dg.h"
#include "gpu_fixture.h"
#include "host_numerics.h"

namespace {

using Gpu = dg::test::Gpu;
using Buf = dg::test::DeviceBuffer;
using dg::test::bad_logits_in_row;
using dg::test::calc_diff;
using dg::test::e4m3_to_f;
using dg::test::f_to_e4m3;
using dg::test::parallel_for;
using dg::test::Rng;
using dg::test::Tensor;
using dg::test::word_value;

// The schedule of docs/mqa_logits.md#schedule, with a sequence's length the largest of its row.
std::vector<int32_t> host_schedule(const std::vector<int32_t>& ctx, int64_t batch, int64_t cols, int64_t num_sms) {
  std::vector<int64_t> prefix(batch);
  int64_t total = 0;
  for (int64_t b = 0; b < batch; ++b) {
    int64_t len = 0;
    for (int64_t j = 0; j < cols; ++j) len = std::max<int64_t>(len, ctx[b * cols + j]);
    total += (len + 255) / 256;
    prefix[b] = total;
  }
  const int64_t q = total / num_sms, r = total % num_sms;
  std::vector<int32_t> meta(2 * (num_sms + 1));
  for (int64_t s = 0; s <= num_sms; ++s) {
    const int64_t start = s * q + std::min(s, r);
    const int64_t b = std::upper_bound(prefix.begin(), prefix.end(), start) - prefix.begin();
    meta[2 * s] = static_cast<int32_t>(b);
    meta[2 * s + 1] = static_cast<int32_t>(b < batch ? start - (b > 0 ? prefix[b - 1] : 0) : 0);
  }
  return meta;
}

std::vector<int32_t> device_schedule(Gpu& g, const Buf& ctx, int64_t batch, int64_t cols, bool two_d, int num_sms) {
  Buf meta(g.device, 8 * (num_sms + 1));
  meta.poison();
  Tensor tc(ctx.data(), DG_DTYPE_INT32, two_d ? std::vector<int64_t>{batch, cols} : std::vector<int64_t>{batch});
  Tensor tm(meta.data(), DG_DTYPE_INT32, {num_sms + 1, 2});
  const dg_status st = dg_get_paged_mqa_logits_metadata(g.stream, tc.t, 64, num_sms, tm.t);
  REQUIRE_MESSAGE(st == DG_SUCCESS, dg_last_error());
  REQUIRE(dg_stream_synchronize(g.stream) == DG_SUCCESS);
  std::vector<int32_t> out(2 * (num_sms + 1));
  meta.download(out.data(), out.size() * 4);
  return out;
}

// A paged problem on the host: quantised inputs, their dequantised values, lengths and tables.
struct Problem {
  int64_t batch, next_n, h, d, num_blocks, max_blocks, max_ctx;
  bool two_d;
  std::vector<uint8_t> q, cache;  // cache: num_blocks blocks of 64 * (d + 4) bytes
  std::vector<float> qf, w;
  std::vector<int32_t> ctx, table;
  int64_t block_bytes() const { return 64 * (d + 4); }
  float kv_value(int64_t block, int64_t slot, int64_t x) const { return e4m3_to_f(cache[block * block_bytes() + slot * d + x]); }
  float kv_scale(int64_t block, int64_t slot) const {
    float s;
    std::memcpy(&s, &cache[block * block_bytes() + 64 * d + slot * 4], 4);
    return s;
  }
  // Where row r = b * next_n + j ends (exclusive), clipped to [0, max_ctx].
  int64_t row_end(int64_t r) const {
    const int64_t b = r / next_n, j = r % next_n;
    const int64_t e = two_d ? ctx[b * next_n + j] : ctx[b] - next_n + j + 1;
    return std::clamp<int64_t>(e, 0, std::min(max_ctx, max_blocks * 64));
  }
  double reference(int64_t r, int64_t t) const {
    const int64_t b = r / next_n, block = table[b * max_blocks + t / 64], slot = t % 64;
    double s = 0;
    for (int64_t hh = 0; hh < h; ++hh) {
      const float* qq = &qf[(r * h + hh) * d];
      double dot = 0;
      for (int64_t x = 0; x < d; ++x) dot += double(qq[x]) * kv_value(block, slot, x);
      s += double(w[r * h + hh]) * std::max(dot, 0.0);
    }
    return s * kv_scale(block, slot);
  }
};

// Lengths: a mix of 0, short, non-multiples of 64 and long ones around `avg`.
void random_lengths(Problem& p, Rng& rng, int64_t avg) {
  const int64_t cols = p.two_d ? p.next_n : 1;
  p.ctx.assign(p.batch * cols, 0);
  for (int64_t b = 0; b < p.batch; ++b) {
    const int64_t pick = rng.below(6);
    int64_t len = pick == 0 ? 0 : pick == 1 ? 1 + rng.below(70) : avg / 2 + rng.below(avg + 1);
    len = std::min(len, p.max_ctx);
    if (p.two_d) {
      // Each speculative token's own length, the last the longest.
      for (int64_t j = 0; j < p.next_n; ++j)
        p.ctx[b * cols + j] = static_cast<int32_t>(std::max<int64_t>(0, len - (p.next_n - 1 - j) - rng.below(3)));
      p.ctx[b * cols + p.next_n - 1] = static_cast<int32_t>(len);
    } else {
      p.ctx[b] = static_cast<int32_t>(len);
    }
  }
}

Problem make_problem(int64_t batch, int64_t next_n, int64_t h, int64_t d, int64_t avg, bool two_d, uint64_t seed) {
  Problem p;
  p.batch = batch, p.next_n = next_n, p.h = h, p.d = d, p.two_d = two_d;
  p.max_ctx = 2 * avg + 100;
  p.max_blocks = (p.max_ctx + 63) / 64;
  p.num_blocks = batch * p.max_blocks + 3;
  const int64_t rows = batch * next_n;
  p.q.resize(rows * h * d);
  p.qf.resize(p.q.size());
  parallel_for(rows, [&](int64_t r) {
    Rng rng(seed * 7919 + r);
    for (int64_t k = 0; k < h * d; ++k) {
      p.q[r * h * d + k] = f_to_e4m3(rng.uniform());
      p.qf[r * h * d + k] = e4m3_to_f(p.q[r * h * d + k]);
    }
  });
  p.cache.assign(p.num_blocks * p.block_bytes(), 0);
  parallel_for(p.num_blocks, [&](int64_t blk) {
    Rng rng(seed * 104729 + blk);
    std::vector<float> v(d);
    for (int64_t slot = 0; slot < 64; ++slot) {
      float amax = 1e-4f;
      for (auto& x : v) x = rng.uniform() * 3.0f, amax = std::max(amax, std::fabs(x));
      const float s = amax / 448.f;
      for (int64_t x = 0; x < d; ++x) p.cache[blk * p.block_bytes() + slot * d + x] = f_to_e4m3(v[x] / s);
      std::memcpy(&p.cache[blk * p.block_bytes() + 64 * d + slot * 4], &s, 4);
    }
  });
  Rng rng(seed);
  p.w.resize(rows * h);
  for (auto& x : p.w) x = rng.uniform();
  // Every table entry a distinct block of a random permutation.
  std::vector<int32_t> perm(p.num_blocks);
  std::iota(perm.begin(), perm.end(), 0);
  for (int64_t i = p.num_blocks - 1; i > 0; --i) std::swap(perm[i], perm[rng.below(i + 1)]);
  p.table.assign(batch * p.max_blocks, 0);
  for (int64_t i = 0; i < batch * p.max_blocks; ++i) p.table[i] = perm[i];
  random_lengths(p, rng, avg);
  return p;
}

struct Device {
  Buf q, cache, w, ctx, table, meta, logits;
  int64_t ld, num_sms;
  int64_t ldw;  // weights' row stride
  dg_dtype dtype;
  Device(Gpu& g, const Problem& p, dg_dtype out, int64_t sms, int64_t weights_stride = 0)
      : q(g.device, p.q.size()), cache(g.device, p.cache.size()),
        w(g.device, p.batch * p.next_n * (weights_stride ? weights_stride : p.h) * 4),
        ctx(g.device, p.ctx.size() * 4), table(g.device, p.table.size() * 4), meta(g.device, 8 * (sms + 1)),
        logits(g.device, bytes(p, out)), ld(stride(p, out)), num_sms(sms), dtype(out) {
    q.upload(p.q);
    cache.upload(p.cache);
    ldw = weights_stride ? weights_stride : p.h;
    std::vector<float> padded(p.batch * p.next_n * ldw, std::nanf(""));  // padding the kernel must not read
    for (int64_t r = 0; r < p.batch * p.next_n; ++r) std::copy_n(&p.w[r * p.h], p.h, &padded[r * ldw]);
    w.upload(padded);
    ctx.upload(p.ctx);
    table.upload(p.table);
  }
  static int64_t stride(const Problem& p, dg_dtype out) {
    int64_t sizes[2], strides[2];
    REQUIRE(dg_get_mqa_logits_layout(p.batch * p.next_n, p.max_ctx, out, sizes, strides, nullptr) == DG_SUCCESS);
    return strides[0];
  }
  static size_t bytes(const Problem& p, dg_dtype out) {
    size_t b = 0;
    REQUIRE(dg_get_mqa_logits_layout(p.batch * p.next_n, p.max_ctx, out, nullptr, nullptr, &b) == DG_SUCCESS);
    return b;
  }
  // The schedule, then the logits, on the stream.
  dg_status enqueue(Gpu& g, const Problem& p, int32_t clean) {
    const int64_t rows = p.batch * p.next_n;
    Tensor tq(q.data(), DG_DTYPE_FLOAT8_E4M3, {p.batch, p.next_n, p.h, p.d});
    Tensor tc(cache.data(), DG_DTYPE_UINT8, {p.num_blocks, 64, 1, p.d + 4},
              {p.block_bytes(), p.d + 4, p.d + 4, 1});
    Tensor tw(w.data(), DG_DTYPE_FLOAT32, {rows, p.h}, {ldw, 1});
    Tensor tctx(ctx.data(), DG_DTYPE_INT32, p.two_d ? std::vector<int64_t>{p.batch, p.next_n} : std::vector<int64_t>{p.batch});
    Tensor tt(table.data(), DG_DTYPE_INT32, {p.batch, p.max_blocks});
    Tensor tm(meta.data(), DG_DTYPE_INT32, {num_sms + 1, 2});
    Tensor tl(logits.data(), dtype, {rows, p.max_ctx}, {ld, 1});
    dg_status st = dg_get_paged_mqa_logits_metadata(g.stream, tctx.t, 64, static_cast<int32_t>(num_sms), tm.t);
    if (st != DG_SUCCESS) return st;
    return dg_fp8_paged_mqa_logits(g.stream, tq.t, tc.t, tw.t, tctx.t, tt.t, tm.t, p.max_ctx, tl.t, clean);
  }
  std::vector<uint32_t> download_logits(const Problem& p) {
    return logits.download_words(p.batch * p.next_n * ld, dg_dtype_size(dtype));
  }
  std::vector<uint32_t> run(Gpu& g, const Problem& p, int32_t clean) {
    logits.poison();
    std::printf("paged MQA launch: B %lld next_n %lld H %lld D %lld %s %s clean %d ... ",
                static_cast<long long>(p.batch), static_cast<long long>(p.next_n), static_cast<long long>(p.h),
                static_cast<long long>(p.d), p.two_d ? "2-D" : "1-D", dg_dtype_name(dtype), clean);
    std::fflush(stdout);
    const auto t0 = std::chrono::steady_clock::now();
    const dg_status st = enqueue(g, p, clean);
    REQUIRE_MESSAGE(st == DG_SUCCESS, dg_last_error());
    REQUIRE(dg_stream_synchronize(g.stream) == DG_SUCCESS);
    std::printf("done in %.3f s\n", std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    std::fflush(stdout);
    return download_logits(p);
  }
};

// Every entry: finite up to the row's end; -inf past it with clean_logits; the padding past
// max_context_len untouched. Returns the number of entries that break this.
int64_t check_masks(const Problem& p, const std::vector<uint32_t>& out, int64_t ld, dg_dtype dtype, bool clean) {
  const int64_t rows = p.batch * p.next_n;
  std::vector<int64_t> bad(rows, 0);
  parallel_for(rows, [&](int64_t r) {
    bad[r] = bad_logits_in_row(&out[r * ld], ld, p.max_ctx, 0, p.row_end(r), dtype == DG_DTYPE_BFLOAT16, clean);
  });
  int64_t total = 0;
  for (int64_t b : bad) total += b;
  return total;
}

double value_diff(const Problem& p, const std::vector<uint32_t>& out, int64_t ld, dg_dtype dtype, int64_t samples,
                  uint64_t seed) {
  std::vector<std::pair<int64_t, int64_t>> at;
  const int64_t rows = p.batch * p.next_n;
  Rng rng(seed);
  int64_t valid_rows = 0;
  for (int64_t r = 0; r < rows; ++r) valid_rows += p.row_end(r) > 0;
  if (valid_rows == 0) return 0.0;
  while (static_cast<int64_t>(at.size()) < samples) {
    const int64_t r = rng.below(rows), end = p.row_end(r);
    if (end > 0) at.emplace_back(r, rng.below(end));
  }
  std::vector<double> ref(at.size()), got(at.size());
  parallel_for(static_cast<int64_t>(at.size()), [&](int64_t n) {
    ref[n] = p.reference(at[n].first, at[n].second);
    got[n] = word_value(out[at[n].first * ld + at[n].second], dtype == DG_DTYPE_BFLOAT16);
  });
  return calc_diff(ref, got);
}

void check_problem(Gpu& g, Problem& p, dg_dtype out, int repeats, int64_t weights_stride = 0) {
  Device dev(g, p, out, g.device->sm_count, weights_stride);
  for (int32_t clean : {1, 0}) {
    CAPTURE(clean);
    const std::vector<uint32_t> got = dev.run(g, p, clean);
    CHECK(check_masks(p, got, dev.ld, out, clean) == 0);
    const double diff = value_diff(p, got, dev.ld, out, 1 << 14, uint64_t(p.batch * 31 + clean));
    MESSAGE("B " << p.batch << " next_n " << p.next_n << " H " << p.h << " D " << p.d << (p.two_d ? " 2-D " : " 1-D ")
                 << std::string(dg_dtype_name(out)) << " clean " << clean << ": calc_diff " << diff);
    CHECK(diff < 1e-3);
    CHECK(diff < (out == DG_DTYPE_FLOAT32 ? 5e-6 : 3e-5));
    int differ = 0;
    for (int r = 1; r < repeats; ++r) differ += dev.run(g, p, clean) != got;
    CHECK(differ == 0);
  }
}

// CUDA graph calls, looked up in the driver libdg loaded (they are not in libdg's driver table).
struct GraphApi {
  using Begin = CUresult (*)(CUstream, CUstreamCaptureMode);
  using End = CUresult (*)(CUstream, CUgraph*);
  using Instantiate = CUresult (*)(CUgraphExec*, CUgraph, unsigned long long);
  using Launch = CUresult (*)(CUgraphExec, CUstream);
  using ExecDestroy = CUresult (*)(CUgraphExec);
  using Destroy = CUresult (*)(CUgraph);
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  Begin begin = reinterpret_cast<Begin>(sym("cuStreamBeginCapture_v2"));
  End end = reinterpret_cast<End>(sym("cuStreamEndCapture"));
  Instantiate instantiate = reinterpret_cast<Instantiate>(sym("cuGraphInstantiateWithFlags"));
  Launch launch = reinterpret_cast<Launch>(sym("cuGraphLaunch"));
  ExecDestroy exec_destroy = reinterpret_cast<ExecDestroy>(sym("cuGraphExecDestroy"));
  Destroy destroy = reinterpret_cast<Destroy>(sym("cuGraphDestroy"));
  void* sym(const char* name) {
    REQUIRE(lib != nullptr);
    void* f = dlsym(lib, name);
    REQUIRE_MESSAGE(f != nullptr, name);
    return f;
  }
  ~GraphApi() {
    if (lib) dlclose(lib);
  }
};

}  // namespace

TEST_CASE("Paged MQA schedule: the host's split for 1-D and 2-D lengths and several SM counts") {
  Gpu g;
  if (!g.sm90()) return;
  Rng rng(5);
  for (int64_t batch : {0, 1, 3, 64, 1000, 5000})
    for (int64_t cols : {1, 2, 4})
      for (int num_sms : {1, 7, 132, 300}) {
        CAPTURE(batch);
        CAPTURE(cols);
        CAPTURE(num_sms);
        std::vector<int32_t> ctx(std::max<int64_t>(batch * cols, 1));
        for (auto& c : ctx) {
          const int64_t pick = rng.below(5);
          c = pick == 0 ? 0 : pick == 1 ? -static_cast<int32_t>(rng.below(5)) : static_cast<int32_t>(rng.below(pick == 2 ? 300 : 70000));
        }
        Buf dctx(g.device, ctx.size() * 4);
        dctx.upload(ctx);
        const bool two_d = cols > 1 || batch % 2 == 1;  // [B, 1] as well as [B]
        const std::vector<int32_t> got = device_schedule(g, dctx, batch, cols, two_d, num_sms);
        std::vector<int32_t> host_ctx(ctx);
        for (auto& c : host_ctx) c = std::max(c, 0);
        CHECK(got == host_schedule(host_ctx, batch, cols, num_sms));
      }
}

TEST_CASE("Paged MQA logits: B 1, 64 and 256; next_n 1 and 2; 1-D and 2-D lengths; FP32") {
  Gpu g;
  if (!g.sm90()) return;
  for (int64_t batch : {1, 64, 256})
    for (int64_t next_n : {1, 2})
      for (bool two_d : {false, true}) {
        Problem p = make_problem(batch, next_n, 64, 128, batch == 256 ? 1500 : 3000, two_d, uint64_t(batch * 10 + next_n));
        check_problem(g, p, DG_DTYPE_FLOAT32, batch == 64 && next_n == 2 ? 20 : 3);
      }
}

TEST_CASE("Paged MQA logits: every H, D and next_n 4; BF16 logits") {
  Gpu g;
  if (!g.sm90()) return;
  for (int64_t h : {32, 64})
    for (int64_t d : {64, 128})
      for (int64_t next_n : {1, 4}) {
        Problem p = make_problem(9, next_n, h, d, 700, next_n == 4, uint64_t(h + d + next_n));
        // Padded weight rows on half of them.
        check_problem(g, p, h == 64 && d == 128 ? DG_DTYPE_BFLOAT16 : DG_DTYPE_FLOAT32, 2, next_n == 4 ? h + 8 : 0);
      }
}

// The quick suite's paged MQA logits: the schedule and both logits dtypes on 9 sequences, 2-D
// lengths with next_n 2 and H 64 D 128, 1-D with H 32 D 64 and padded weight rows.
TEST_CASE("quick: paged MQA logits" * doctest::test_suite("quick")) {
  Gpu g;
  if (!g.sm90()) return;
  Problem wide = make_problem(9, 2, 64, 128, 700, true, 91);
  check_problem(g, wide, DG_DTYPE_FLOAT32, 1);
  Problem narrow = make_problem(9, 1, 32, 64, 700, false, 92);
  check_problem(g, narrow, DG_DTYPE_BFLOAT16, 1, 40);
}

TEST_CASE("Paged MQA logits: a CUDA graph of the schedule and the logits replays with new context lengths") {
  Gpu g;
  if (!g.sm90()) return;
  Problem p = make_problem(64, 2, 64, 128, 1000, false, 77);
  Device dev(g, p, DG_DTYPE_FLOAT32, g.device->sm_count);
  REQUIRE(dg_paged_mqa_logits_prepare(g.stream, 64, 128, 2, DG_DTYPE_FLOAT32) == DG_SUCCESS);
  GraphApi api;
  void* raw = nullptr;
  REQUIRE(dg_stream_get_cu_stream(g.stream, &raw) == DG_SUCCESS);
  const CUstream s = static_cast<CUstream>(raw);
  dg::ContextScope scope;
  REQUIRE(scope.enter(*g.device) == DG_SUCCESS);
  REQUIRE(api.begin(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL) == CUDA_SUCCESS);
  const dg_status st = dev.enqueue(g, p, 1);
  const std::string err = st == DG_SUCCESS ? std::string() : std::string(dg_last_error());
  CUgraph graph = nullptr;
  REQUIRE(api.end(s, &graph) == CUDA_SUCCESS);
  REQUIRE_MESSAGE(st == DG_SUCCESS, "during capture: " << err);
  CUgraphExec exec = nullptr;
  REQUIRE(api.instantiate(&exec, graph, 0) == CUDA_SUCCESS);
  Rng rng(78);
  for (int replay = 0; replay < 3; ++replay) {
    CAPTURE(replay);
    if (replay > 0) {
      random_lengths(p, rng, 400 + 700 * replay);
      dev.ctx.upload(p.ctx);
    }
    dev.logits.poison();
    REQUIRE(api.launch(exec, s) == CUDA_SUCCESS);
    REQUIRE(dg_stream_synchronize(g.stream) == DG_SUCCESS);
    const std::vector<uint32_t> got = dev.download_logits(p);
    CHECK(check_masks(p, got, dev.ld, DG_DTYPE_FLOAT32, true) == 0);
    const double diff = value_diff(p, got, dev.ld, DG_DTYPE_FLOAT32, 1 << 12, uint64_t(replay));
    MESSAGE("graph replay " << replay << ": calc_diff " << diff);
    CHECK(diff < 5e-6);
  }
  api.exec_destroy(exec);
  api.destroy(graph);
}
