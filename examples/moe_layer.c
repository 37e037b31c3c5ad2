/* An FP8 MoE expert layer with libdg alone (docs/gemm_epilogues.md#an-moe-expert-layer).
 *
 * DeepSeek-V3's routed experts: hidden 7168, intermediate 2048 (gate + up: 4096). BF16 tokens in,
 * BF16 out, per expert:
 *   quantize x to FP8 (1 x 128 scales)                      dg_quantize_fp8_per_token_{contiguous,masked}
 *   h = SwiGLU(x . w13^T) as FP8 with 1 x 128 scales       M-grouped FP8 GEMM, fused epilogue
 *   y = h . w2^T                                            M-grouped FP8 GEMM, BF16 D
 * Prefill runs the contiguous layout (each expert's tokens padded to 128 rows), decode the masked
 * one (counts on the device) replayed from a CUDA graph. The weights are quantized per 128 x 128
 * block and w13's gate / up rows interleaved with dg_swiglu_interleave, as an engine would load
 * them. The layer is checked against a double-precision reference on the unquantized values for a
 * sample of rows, and timed (CUDA events, median) beside the same layer without the fused FP8
 * output (SwiGLU to BF16, then a separate quantization), the runs interleaved.
 *
 * Device memory, streams, events and graphs come from the CUDA driver, loaded with dlopen. */
#include <dg.h>
#include <dlfcn.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(call)                                                                         \
  do {                                                                                      \
    dg_status s_ = (call);                                                                  \
    if (s_ != DG_SUCCESS) {                                                                 \
      fprintf(stderr, "%s failed: %s: %s\n", #call, dg_status_string(s_), dg_last_error()); \
      exit(1);                                                                              \
    }                                                                                       \
  } while (0)
#define CU(call)                                                   \
  do {                                                             \
    int r_ = (call);                                               \
    if (r_ != 0) {                                                 \
      fprintf(stderr, "%s failed: CUDA error %d\n", #call, r_);    \
      exit(1);                                                     \
    }                                                              \
  } while (0)

static const char kUsage[] =
    "Usage: dg-moe-layer [--mode prefill|decode] [--experts G] [--tokens T] [--iters N] [--help] [--version]\n"
    "\n"
    "Runs DeepSeek-V3's routed-expert layer (hidden 7168, intermediate 2048) with libdg alone: FP8\n"
    "quantization, the gate/up GEMM with a fused SwiGLU + FP8 epilogue, the down GEMM. Checks sampled\n"
    "rows against a double-precision reference and prints the layer's time beside the same layer\n"
    "without the fused FP8 output.\n"
    "\n"
    "  --mode M      prefill (contiguous layout, default) or decode (masked layout, CUDA graph)\n"
    "  --experts G   experts on this GPU (default 8 for prefill, 32 for decode; 1..256)\n"
    "  --tokens T    tokens per expert (default 1024 for prefill, 32 for decode; decode: 1..256)\n"
    "  --iters N     timed iterations of each variant (default 20)\n"
    "\n"
    "Exit status: 0 on success, 1 on a failure, 2 on a usage error.\n";

enum { kHidden = 7168, kInter = 2048, kBlock = 128 };

/* ------------------------------------------------------------------ the driver */
typedef uint64_t devptr;
static struct {
  int (*init)(unsigned);
  int (*ctx_retain)(void**, int);
  int (*ctx_set)(void*);
  int (*alloc)(devptr*, size_t);
  int (*free)(devptr);
  int (*h2d)(devptr, const void*, size_t);
  int (*d2h)(void*, devptr, size_t);
  int (*stream_create)(void**, unsigned);
  int (*stream_sync)(void*);
  int (*event_create)(void**, unsigned);
  int (*event_record)(void*, void*);
  int (*event_sync)(void*);
  int (*event_elapsed)(float*, void*, void*);
  int (*begin_capture)(void*, int);
  int (*end_capture)(void*, void**);
  int (*instantiate)(void**, void*, unsigned long long);
  int (*graph_launch)(void*, void*);
} cu;

static void* sym(void* lib, const char* a, const char* b) {
  void* p = dlsym(lib, a);
  return p != NULL || b == NULL ? p : dlsym(lib, b);
}

static int load_driver(void) {
  void* lib = dlopen("libcuda.so.1", RTLD_NOW);
  if (!lib) return 0;
  *(void**)&cu.init = sym(lib, "cuInit", NULL);
  *(void**)&cu.ctx_retain = sym(lib, "cuDevicePrimaryCtxRetain", NULL);
  *(void**)&cu.ctx_set = sym(lib, "cuCtxSetCurrent", NULL);
  *(void**)&cu.alloc = sym(lib, "cuMemAlloc_v2", NULL);
  *(void**)&cu.free = sym(lib, "cuMemFree_v2", NULL);
  *(void**)&cu.h2d = sym(lib, "cuMemcpyHtoD_v2", NULL);
  *(void**)&cu.d2h = sym(lib, "cuMemcpyDtoH_v2", NULL);
  *(void**)&cu.stream_create = sym(lib, "cuStreamCreate", NULL);
  *(void**)&cu.stream_sync = sym(lib, "cuStreamSynchronize", NULL);
  *(void**)&cu.event_create = sym(lib, "cuEventCreate", NULL);
  *(void**)&cu.event_record = sym(lib, "cuEventRecord", NULL);
  *(void**)&cu.event_sync = sym(lib, "cuEventSynchronize", NULL);
  *(void**)&cu.event_elapsed = sym(lib, "cuEventElapsedTime_v2", "cuEventElapsedTime");
  *(void**)&cu.begin_capture = sym(lib, "cuStreamBeginCapture_v2", "cuStreamBeginCapture");
  *(void**)&cu.end_capture = sym(lib, "cuStreamEndCapture", NULL);
  *(void**)&cu.instantiate = sym(lib, "cuGraphInstantiateWithFlags", NULL);
  *(void**)&cu.graph_launch = sym(lib, "cuGraphLaunch", NULL);
  void** fns = (void**)&cu;
  for (size_t i = 0; i < sizeof(cu) / sizeof(void*); ++i)
    if (fns[i] == NULL) return 0;
  return 1;
}

static devptr dev_alloc(size_t bytes) {
  devptr p = 0;
  CU(cu.alloc(&p, bytes));
  return p;
}

static dg_tensor* tensor(devptr p, dg_dtype dtype, int rank, const int64_t* sizes, const int64_t* strides) {
  dg_tensor* t = NULL;
  CHECK(dg_tensor_create(&t, (void*)(uintptr_t)p, dtype, rank, sizes, strides));
  return t;
}

/* ------------------------------------------------------------------ host values */
static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static float uniform(void) { /* [-1, 1) */
  rng_state ^= rng_state << 13, rng_state ^= rng_state >> 7, rng_state ^= rng_state << 17;
  return (float)((rng_state >> 40) * (2.0 / 16777216.0) - 1.0);
}
static uint16_t to_bf16(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  u += 0x7fffu + ((u >> 16) & 1u);
  return (uint16_t)(u >> 16);
}
static double from_bf16(uint16_t b) {
  uint32_t u = (uint32_t)b << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}
static uint16_t* random_bf16(size_t n, float scale) {
  uint16_t* v = malloc(n * sizeof(uint16_t));
  if (!v) {
    fprintf(stderr, "out of host memory\n");
    exit(1);
  }
  for (size_t i = 0; i < n; ++i) v[i] = to_bf16(uniform() * scale);
  return v;
}
static devptr upload(const void* host, size_t bytes) {
  devptr p = dev_alloc(bytes);
  CU(cu.h2d(p, host, bytes));
  return p;
}

/* ------------------------------------------------------------------ the layer */
struct weights {
  dg_tensor *w13, *s13, *w2, *s2; /* FP8 codes and 128 x 128 block scales, w13 interleaved */
  uint16_t *w13_host, *w2_host;   /* the BF16 values, [G, 2I, H] (gate rows, then up) and [G, H, I] */
};

/* Quantizes BF16 weights [G, rows, cols] per 128 x 128 block on the device. */
static void quantize_weights(dg_stream* s, devptr bf16, int64_t g, int64_t rows, int64_t cols, devptr* q, devptr* sf) {
  const int64_t sizes[3] = {g, rows, cols}, sf_sizes[3] = {g, rows / kBlock, cols / kBlock};
  *q = dev_alloc((size_t)(g * rows * cols));
  *sf = dev_alloc((size_t)(g * (rows / kBlock) * (cols / kBlock) * 4));
  dg_tensor *tx = tensor(bf16, DG_DTYPE_BFLOAT16, 3, sizes, NULL), *tq = tensor(*q, DG_DTYPE_FLOAT8_E4M3, 3, sizes, NULL);
  dg_tensor* tsf = tensor(*sf, DG_DTYPE_FLOAT32, 3, sf_sizes, NULL);
  CHECK(dg_quantize_fp8_per_block(s, tx, tq, tsf, NULL));
  dg_tensor_destroy(tx), dg_tensor_destroy(tq), dg_tensor_destroy(tsf);
}

static void make_weights(dg_stream* s, int64_t g, struct weights* w) {
  const int64_t i2 = 2 * kInter;
  w->w13_host = random_bf16((size_t)(g * i2 * kHidden), 0.04f);
  w->w2_host = random_bf16((size_t)(g * kHidden * kInter), 0.06f);
  devptr b13 = upload(w->w13_host, (size_t)(g * i2 * kHidden * 2)), b2 = upload(w->w2_host, (size_t)(g * kHidden * kInter * 2));
  devptr q13, s13, q2, s2;
  quantize_weights(s, b13, g, i2, kHidden, &q13, &s13);
  quantize_weights(s, b2, g, kHidden, kInter, &q2, &s2);
  /* Gate and up rows interleaved in blocks of 128, their block scales with them. */
  const int64_t w_sizes[3] = {g, i2, kHidden}, s_sizes[3] = {g, i2 / kBlock, kHidden / kBlock};
  devptr q13i = dev_alloc((size_t)(g * i2 * kHidden)), s13i = dev_alloc((size_t)(g * s_sizes[1] * s_sizes[2] * 4));
  dg_tensor *src = tensor(q13, DG_DTYPE_FLOAT8_E4M3, 3, w_sizes, NULL), *ssrc = tensor(s13, DG_DTYPE_FLOAT32, 3, s_sizes, NULL);
  w->w13 = tensor(q13i, DG_DTYPE_FLOAT8_E4M3, 3, w_sizes, NULL);
  w->s13 = tensor(s13i, DG_DTYPE_FLOAT32, 3, s_sizes, NULL);
  CHECK(dg_swiglu_interleave(s, src, w->w13, kBlock));
  CHECK(dg_swiglu_interleave(s, ssrc, w->s13, 1));
  const int64_t w2_sizes[3] = {g, kHidden, kInter}, s2_sizes[3] = {g, kHidden / kBlock, kInter / kBlock};
  w->w2 = tensor(q2, DG_DTYPE_FLOAT8_E4M3, 3, w2_sizes, NULL);
  w->s2 = tensor(s2, DG_DTYPE_FLOAT32, 3, s2_sizes, NULL);
  CHECK(dg_stream_synchronize(s));
  dg_tensor_destroy(src), dg_tensor_destroy(ssrc);
  cu.free(b13), cu.free(b2), cu.free(q13), cu.free(s13);
}

/* The activations of one layout: rows [M, .] (contiguous) or [G, max_m, .] (masked). */
struct acts {
  int masked;
  int64_t g, rows; /* rows: M (contiguous) or max_m (masked) */
  dg_tensor *x, *qx, *sx, *h8, *sh, *hb, *y, *groups;
};

static int64_t align_up(int64_t a, int64_t b) { return (a + b - 1) / b * b; }

static dg_tensor* act_tensor(const struct acts* a, devptr p, dg_dtype dt, int64_t cols) {
  const int64_t sizes3[3] = {a->g, a->rows, cols}, sizes2[2] = {a->rows, cols};
  return a->masked ? tensor(p, dt, 3, sizes3, NULL) : tensor(p, dt, 2, sizes2, NULL);
}
/* Per-token scales of `cols` columns in the MN-major TMA-aligned layout the GEMMs read. */
static dg_tensor* scale_tensor(const struct acts* a, int64_t cols) {
  const int64_t kb = cols / kBlock, ar = align_up(a->rows, 4);
  devptr p = dev_alloc((size_t)(a->g * ar * kb * 4));
  const int64_t sizes3[3] = {a->g, a->rows, kb}, strides3[3] = {ar * kb, 1, ar};
  const int64_t sizes2[2] = {a->rows, kb}, strides2[2] = {1, ar};
  return a->masked ? tensor(p, DG_DTYPE_FLOAT32, 3, sizes3, strides3) : tensor(p, DG_DTYPE_FLOAT32, 2, sizes2, strides2);
}

static void make_acts(struct acts* a, const uint16_t* x_host, const int32_t* groups, int64_t n_groups) {
  const int64_t cells = a->masked ? a->g * a->rows : a->rows;
  a->x = act_tensor(a, upload(x_host, (size_t)(cells * kHidden * 2)), DG_DTYPE_BFLOAT16, kHidden);
  a->qx = act_tensor(a, dev_alloc((size_t)(cells * kHidden)), DG_DTYPE_FLOAT8_E4M3, kHidden);
  a->sx = scale_tensor(a, kHidden);
  a->h8 = act_tensor(a, dev_alloc((size_t)(cells * kInter)), DG_DTYPE_FLOAT8_E4M3, kInter);
  a->sh = scale_tensor(a, kInter);
  a->hb = act_tensor(a, dev_alloc((size_t)(cells * kInter * 2)), DG_DTYPE_BFLOAT16, kInter);
  a->y = act_tensor(a, dev_alloc((size_t)(cells * kHidden * 2)), DG_DTYPE_BFLOAT16, kHidden);
  const int64_t gs[1] = {n_groups};
  a->groups = tensor(upload(groups, (size_t)n_groups * 4), DG_DTYPE_INT32, 1, gs, NULL);
}

static void quantize(dg_stream* s, const struct acts* a, const dg_tensor* x, const dg_tensor* q, const dg_tensor* sf) {
  if (a->masked) CHECK(dg_quantize_fp8_per_token_masked(s, x, q, sf, a->groups, NULL));
  else CHECK(dg_quantize_fp8_per_token_contiguous(s, x, q, sf, a->groups, DG_M_GROUPED_LAYOUT_INDICES, a->g, NULL));
}

static void grouped_gemm(dg_stream* s, const struct acts* a, const dg_tensor* x, const dg_tensor* sx, const dg_tensor* w,
                         const dg_tensor* sw, const dg_tensor* d, int64_t expected_m, const dg_gemm_epilogue* e) {
  dg_gemm_options o = DG_GEMM_OPTIONS_INIT;
  o.epilogue = e;
  if (a->masked) CHECK(dg_m_grouped_fp8_gemm_nt_masked(s, x, sx, w, sw, d, a->groups, expected_m, &o));
  else CHECK(dg_m_grouped_fp8_gemm_nt_contiguous(s, x, sx, w, sw, d, a->groups, DG_M_GROUPED_LAYOUT_INDICES, 0, &o));
}

/* One layer: fused (SwiGLU + FP8 from the GEMM) or unfused (SwiGLU to BF16, then quantization). */
static void layer(dg_stream* s, const struct acts* a, const struct weights* w, int64_t expected_m, int fused) {
  quantize(s, a, a->x, a->qx, a->sx);
  dg_gemm_epilogue e = DG_GEMM_EPILOGUE_INIT;
  e.activation = DG_ACTIVATION_SWIGLU;
  if (fused) {
    e.d_scales = a->sh;
    grouped_gemm(s, a, a->qx, a->sx, w->w13, w->s13, a->h8, expected_m, &e);
  } else {
    grouped_gemm(s, a, a->qx, a->sx, w->w13, w->s13, a->hb, expected_m, &e);
    quantize(s, a, a->hb, a->h8, a->sh);
  }
  grouped_gemm(s, a, a->h8, a->sh, w->w2, w->s2, a->y, expected_m, NULL);
}

/* ------------------------------------------------------------------ reference and timing */
static double silu(double v) { return v / (1.0 + exp(-v)); }

/* calc_diff (1 - 2 sum(x y) / sum(x^2 + y^2)) of y's rows `rows[0..n)` (expert `expert[i]`) against
 * the double-precision layer on the BF16 values. */
static double check_rows(const struct acts* a, const struct weights* w, const uint16_t* x, const int64_t* rows,
                         const int64_t* expert, int n) {
  const int64_t cells = a->masked ? a->g * a->rows : a->rows;
  uint16_t* y = malloc((size_t)(cells * kHidden * 2));
  void* yp = NULL;
  CHECK(dg_tensor_get(a->y, &yp, NULL, NULL, NULL, NULL));
  CU(cu.d2h(y, (devptr)(uintptr_t)yp, (size_t)(cells * kHidden * 2)));
  double xy = 0, xx_yy = 0;
  double* h = malloc(sizeof(double) * kInter);
  for (int i = 0; i < n; ++i) {
    const uint16_t* xr = x + rows[i] * kHidden;
    const uint16_t* w13 = w->w13_host + expert[i] * 2 * kInter * kHidden;
    const uint16_t* w2 = w->w2_host + expert[i] * kHidden * kInter;
    for (int j = 0; j < kInter; ++j) {
      double gate = 0, up = 0;
      for (int t = 0; t < kHidden; ++t) {
        gate += from_bf16(xr[t]) * from_bf16(w13[(int64_t)j * kHidden + t]);
        up += from_bf16(xr[t]) * from_bf16(w13[(int64_t)(kInter + j) * kHidden + t]);
      }
      h[j] = silu(gate) * up;
    }
    for (int c = 0; c < kHidden; ++c) {
      double ref = 0;
      for (int j = 0; j < kInter; ++j) ref += h[j] * from_bf16(w2[(int64_t)c * kInter + j]);
      const double got = from_bf16(y[rows[i] * kHidden + c]);
      xy += got * ref, xx_yy += got * got + ref * ref;
    }
  }
  free(h), free(y);
  return 1.0 - 2.0 * xy / xx_yy;
}

static int cmp_float(const void* p, const void* q) {
  const float a = *(const float*)p, b = *(const float*)q;
  return (a > b) - (a < b);
}

/* Median milliseconds of `iters` runs of each variant, interleaved: run(v) launches variant v. */
static void time_variants(void* stream, int iters, void (*run)(int, void*), void* ctx, float* median) {
  void *e0, *e1;
  CU(cu.event_create(&e0, 0));
  CU(cu.event_create(&e1, 0));
  float* t = malloc(sizeof(float) * 2 * (size_t)iters);
  for (int i = 0; i < iters; ++i)
    for (int v = 0; v < 2; ++v) {
      CU(cu.event_record(e0, stream));
      run(v, ctx);
      CU(cu.event_record(e1, stream));
      CU(cu.event_sync(e1));
      CU(cu.event_elapsed(&t[v * iters + i], e0, e1));
    }
  for (int v = 0; v < 2; ++v) {
    qsort(t + v * iters, (size_t)iters, sizeof(float), cmp_float);
    median[v] = t[v * iters + iters / 2];
  }
  free(t);
}

struct run_ctx {
  dg_stream* s;
  const struct acts* a;
  const struct weights* w;
  int64_t expected_m;
  void* graphs[2]; /* decode: the instantiated graph of each variant */
  void* cu_stream;
};

static void run_direct(int v, void* p) {
  struct run_ctx* c = p;
  layer(c->s, c->a, c->w, c->expected_m, v == 0);
}
static void run_graph(int v, void* p) {
  struct run_ctx* c = p;
  CU(cu.graph_launch(c->graphs[v], c->cu_stream));
}

/* ------------------------------------------------------------------ main */
static int parse_int(const char* v, long lo, long hi, long* out) {
  char* end = NULL;
  const long x = strtol(v, &end, 10);
  if (end == v || *end != 0 || x < lo || x > hi) return 0;
  *out = x;
  return 1;
}

int main(int argc, char** argv) {
  int decode = 0;
  long experts = 0, tokens = 0, iters = 20;
  for (int i = 1; i < argc; ++i) {
    const char* arg = argv[i];
    if (!strcmp(arg, "--help") || !strcmp(arg, "-h")) return fputs(kUsage, stdout), 0;
    if (!strcmp(arg, "--version")) return printf("dg-moe-layer (libdg) %s\n", dg_version()), 0;
    const char* v = i + 1 < argc ? argv[i + 1] : NULL;
    int ok = v != NULL;
    if (!strcmp(arg, "--mode")) ok = ok && (!strcmp(v, "prefill") || !strcmp(v, "decode")), decode = ok && !strcmp(v, "decode");
    else if (!strcmp(arg, "--experts")) ok = ok && parse_int(v, 1, 256, &experts);
    else if (!strcmp(arg, "--tokens")) ok = ok && parse_int(v, 1, 1 << 16, &tokens);
    else if (!strcmp(arg, "--iters")) ok = ok && parse_int(v, 1, 10000, &iters);
    else ok = 0;
    if (!ok) return fprintf(stderr, "dg-moe-layer: bad argument '%s%s%s'\n\n%s", arg, v ? " " : "", v ? v : "", kUsage), 2;
    ++i;
  }
  if (!experts) experts = decode ? 32 : 8;
  if (!tokens) tokens = decode ? 32 : 1024;
  if (decode && tokens > 256) return fprintf(stderr, "dg-moe-layer: decode takes --tokens up to 256\n"), 2;

  int32_t devices = 0;
  if (dg_device_count(&devices) != DG_SUCCESS || devices == 0) {
    printf("dg-moe-layer: no GPU here (%s)\n", dg_last_error());
    return 1;
  }
  void* ctx = NULL;
  void* cu_stream = NULL;
  if (!load_driver() || cu.init(0) || cu.ctx_retain(&ctx, 0) || cu.ctx_set(ctx) || cu.stream_create(&cu_stream, 1)) {
    fprintf(stderr, "cannot use the CUDA driver\n");
    return 1;
  }
  dg_stream* s = NULL;
  CHECK(dg_stream_create(&s, 0, cu_stream, DG_STREAM_BORROW, NULL));

  struct weights w;
  make_weights(s, experts, &w);
  /* Tokens: contiguous rows grouped per expert, each group padded to 128; masked [G, max_m] with
   * counts spread over [T/2, T]. */
  struct acts a = {0};
  a.masked = decode, a.g = experts;
  const int64_t per_group = decode ? align_up(tokens, 64) : align_up(tokens, kBlock);
  a.rows = decode ? per_group : experts * per_group;
  const int64_t cells = decode ? experts * per_group : a.rows;
  int32_t* groups = malloc(sizeof(int32_t) * (size_t)(decode ? experts : cells));
  int64_t* count = malloc(sizeof(int64_t) * (size_t)experts);
  for (int64_t g = 0; g < experts; ++g) {
    count[g] = decode ? tokens - (g * 7919) % (tokens / 2 + 1) : tokens;
    if (decode) groups[g] = (int32_t)count[g];
    else
      for (int64_t r = 0; r < per_group; ++r) groups[g * per_group + r] = r < count[g] ? (int32_t)g : -1;
  }
  uint16_t* x = random_bf16((size_t)(cells * kHidden), 1.0f);
  make_acts(&a, x, groups, decode ? experts : cells);

  /* Correctness: two rows per expert (its first and last token) of the fused layer. */
  layer(s, &a, &w, tokens, 1);
  CHECK(dg_stream_synchronize(s));
  const int n_check = (int)(experts < 16 ? 2 * experts : 32);
  int64_t rows[32], expert[32];
  for (int i = 0; i < n_check; ++i) {
    const int64_t g = i / 2 * (experts / (n_check / 2));
    expert[i] = g;
    rows[i] = g * per_group + (i % 2 ? count[g] - 1 : 0);
  }
  const double diff = check_rows(&a, &w, x, rows, expert, n_check);

  struct run_ctx rc = {s, &a, &w, tokens, {NULL, NULL}, cu_stream};
  float ms[2];
  if (decode) {
    for (int v = 0; v < 2; ++v) {  /* kernels are loaded by the calls above; capture each variant */
      layer(s, &a, &w, tokens, v == 0);
      void* graph = NULL;
      CU(cu.begin_capture(cu_stream, 0));
      layer(s, &a, &w, tokens, v == 0);
      CU(cu.end_capture(cu_stream, &graph));
      CU(cu.instantiate(&rc.graphs[v], graph, 0));
    }
    time_variants(cu_stream, (int)iters, run_graph, &rc, ms);
  } else {
    layer(s, &a, &w, tokens, 0);
    time_variants(cu_stream, (int)iters, run_direct, &rc, ms);
  }
  int64_t total = 0;
  for (int64_t g = 0; g < experts; ++g) total += count[g];
  const double flops = 2.0 * total * (2.0 * kInter * kHidden + (double)kHidden * kInter);
  printf("libdg %s, MoE expert layer (hidden %d, intermediate %d), %s: %ld experts, %lld tokens\n", dg_version(), kHidden,
         kInter, decode ? "decode (masked, CUDA graph)" : "prefill (contiguous)", experts, (long long)total);
  printf("  fused   (SwiGLU + FP8 in the GEMM epilogue): %8.1f us  %6.1f TFLOPS\n", ms[0] * 1e3, flops / (ms[0] * 1e-3) / 1e12);
  printf("  unfused (SwiGLU to BF16, then quantization):  %8.1f us  %6.1f TFLOPS\n", ms[1] * 1e3, flops / (ms[1] * 1e-3) / 1e12);
  printf("  fused / unfused speed: %.3fx; check: calc_diff %.2e over %d rows\n", ms[1] / ms[0], diff, n_check);
  if (!(diff < 1e-2)) {
    fprintf(stderr, "FAILED: the layer differs from the reference\n");
    return 1;
  }
  printf("OK\n");
  return 0;
}
