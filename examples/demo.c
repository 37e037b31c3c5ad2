/* libdg demo.
 *
 * With a GPU: JIT-compiles a BF16 GEMM, runs D = A @ B^T on random data and checks it against a
 * double-precision CPU reference. Without one: JIT-compiles the same kernel for an H100 through an
 * offline stream (into the disk cache), which is what a container build without a GPU would do.
 * `dg-demo --help` lists the options (the shape, D's dtype).
 *
 * The demo reaches device memory through the CUDA driver, loaded with dlopen so that the binary
 * also starts on machines without one; programs that use the CUDA runtime or PyTorch already
 * have their own allocator and pass its pointers to dg_tensor_create. */
#include <dg.h>
#include <dlfcn.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CHECK(call)                                                                         \
  do {                                                                                      \
    dg_status s_ = (call);                                                                  \
    if (s_ != DG_SUCCESS) {                                                                 \
      fprintf(stderr, "%s failed: %s: %s\n", #call, dg_status_string(s_), dg_last_error()); \
      return 1;                                                                             \
    }                                                                                       \
  } while (0)

/* The problem: --shape M,N,K and --dtype (of D). */
static int M = 1000, N = 2112, K = 1536;
static dg_dtype D_DTYPE = DG_DTYPE_BFLOAT16;
/* The CPU reference costs M * N * K multiply-adds: shapes past this take minutes to check. */
static const double kMaxReferenceMacs = 64.0 * 1024 * 1024 * 1024;
static const long kMaxDim = 1L << 20;

static const char kUsage[] =
    "Usage: dg-demo [--shape M,N,K] [--dtype bf16|fp32] [--help] [--version]\n"
    "\n"
    "With a GPU: D = A @ B^T with BF16 A [M, K] and B [N, K] of random values, checked against a\n"
    "double-precision CPU reference (DeepGEMM's calc_diff). Without one: compiles that kernel for an\n"
    "H100 (sm_90a, 132 SMs) into the JIT disk cache through an offline stream.\n"
    "\n"
    "  --shape M,N,K   the problem (default 1000,2112,1536; each 1..1048576, M*N*K <= 2^36)\n"
    "  --dtype T       D's dtype: bf16 (default) or fp32\n"
    "  --help          this text\n"
    "  --version       the libdg version\n"
    "\n"
    "Exit status: 0 on success, 1 on a failure, 2 on a usage error.\n";

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

static uint16_t to_bf16(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  u += 0x7fffu + ((u >> 16) & 1u); /* round to nearest even */
  return (uint16_t)(u >> 16);
}

static float from_bf16(uint16_t b) {
  uint32_t u = (uint32_t)b << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}

/* Standard normal samples (Box-Muller) rounded to BF16. */
static void fill_random(uint16_t* v, size_t n, unsigned* seed) {
  for (size_t i = 0; i < n; ++i) {
    double u1 = (rand_r(seed) + 1.0) / (RAND_MAX + 2.0), u2 = rand_r(seed) / (RAND_MAX + 1.0);
    v[i] = to_bf16((float)(sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2)));
  }
}

/* The few driver entry points the demo needs for memory. */
struct driver {
  int (*ctx_retain)(void**, int);
  int (*ctx_set)(void*);
  int (*alloc)(uint64_t*, size_t);
  int (*free)(uint64_t);
  int (*h2d)(uint64_t, const void*, size_t);
  int (*d2h)(void*, uint64_t, size_t);
  int (*memset8)(uint64_t, unsigned char, size_t);
};

static int load_driver(struct driver* d) {
  void* lib = dlopen("libcuda.so.1", RTLD_NOW);
  if (!lib) return 0;
  *(void**)&d->ctx_retain = dlsym(lib, "cuDevicePrimaryCtxRetain");
  *(void**)&d->ctx_set = dlsym(lib, "cuCtxSetCurrent");
  *(void**)&d->alloc = dlsym(lib, "cuMemAlloc_v2");
  *(void**)&d->free = dlsym(lib, "cuMemFree_v2");
  *(void**)&d->h2d = dlsym(lib, "cuMemcpyHtoD_v2");
  *(void**)&d->d2h = dlsym(lib, "cuMemcpyDtoH_v2");
  *(void**)&d->memset8 = dlsym(lib, "cuMemsetD8_v2");
  return d->ctx_retain && d->ctx_set && d->alloc && d->free && d->h2d && d->d2h && d->memset8;
}

/* Compile only: no GPU here. */
static int compile_offline(void) {
  dg_stream* offline = NULL;
  CHECK(dg_stream_create_offline(&offline, 9, 0, 132, NULL));
  const double t0 = now();
  CHECK(dg_gemm_prepare(offline, DG_DTYPE_BFLOAT16, DG_GEMM_LAYOUT_NT, M, N, K, D_DTYPE, 0, NULL));
  int64_t compiled = 0, from_disk = 0;
  CHECK(dg_jit_get_stats(&compiled, &from_disk, NULL));
  printf("JIT: the BF16 GEMM kernel (D %s) for %dx%dx%d on an H100 (sm_90a, 132 SMs) is ready in the disk cache: "
         "%lld compiled, %lld found on disk, %.2f s\n",
         dg_dtype_name(D_DTYPE), M, N, K, (long long)compiled, (long long)from_disk, now() - t0);
  dg_stream_destroy(offline);
  return 0;
}

static int run_on_gpu(void) {
  struct driver cu;
  void* ctx = NULL;
  if (!load_driver(&cu) || cu.ctx_retain(&ctx, 0) != 0 || cu.ctx_set(ctx) != 0) {
    fprintf(stderr, "cannot use the CUDA driver for device memory\n");
    return 1;
  }
  uint16_t* a = malloc(sizeof(uint16_t) * M * K);
  uint16_t* b = malloc(sizeof(uint16_t) * N * K);
  const size_t d_elem = dg_dtype_size(D_DTYPE);
  void* d = malloc(d_elem * M * N);
  unsigned seed = (unsigned)time(NULL);
  fill_random(a, (size_t)M * K, &seed);
  fill_random(b, (size_t)N * K, &seed);
  uint64_t da, db, dd;
  if (cu.alloc(&da, sizeof(uint16_t) * M * K) || cu.alloc(&db, sizeof(uint16_t) * N * K) ||
      cu.alloc(&dd, d_elem * M * N) || cu.h2d(da, a, sizeof(uint16_t) * M * K) ||
      cu.h2d(db, b, sizeof(uint16_t) * N * K) || cu.memset8(dd, 0xff, d_elem * M * N)) {
    fprintf(stderr, "device memory setup failed\n");
    return 1;
  }

  dg_stream* stream = NULL;
  CHECK(dg_stream_create(&stream, 0, NULL, DG_STREAM_BORROW, NULL));
  int64_t a_sizes[2] = {M, K}, b_sizes[2] = {N, K}, d_sizes[2] = {M, N};
  dg_tensor *ta, *tb, *td;
  CHECK(dg_tensor_create(&ta, (void*)(uintptr_t)da, DG_DTYPE_BFLOAT16, 2, a_sizes, NULL));
  CHECK(dg_tensor_create(&tb, (void*)(uintptr_t)db, DG_DTYPE_BFLOAT16, 2, b_sizes, NULL));
  CHECK(dg_tensor_create(&td, (void*)(uintptr_t)dd, D_DTYPE, 2, d_sizes, NULL));

  double t0 = now();
  CHECK(dg_bf16_gemm_nt(stream, ta, tb, td, NULL, NULL));
  CHECK(dg_stream_synchronize(stream));
  const double cold = now() - t0;
  t0 = now();
  CHECK(dg_bf16_gemm_nt(stream, ta, tb, td, NULL, NULL));
  CHECK(dg_stream_synchronize(stream));
  const double warm = now() - t0;
  if (cu.d2h(d, dd, d_elem * M * N)) {
    fprintf(stderr, "copy back failed\n");
    return 1;
  }

  /* DeepGEMM's calc_diff: 1 - 2 sum(x y) / sum(x^2 + y^2), against a double-precision reference. */
  double xy = 0, xx_yy = 0;
  int non_finite = 0;
  for (int i = 0; i < M; ++i) {
    for (int j = 0; j < N; ++j) {
      double ref = 0;
      for (int k = 0; k < K; ++k) ref += (double)from_bf16(a[(size_t)i * K + k]) * from_bf16(b[(size_t)j * K + k]);
      const size_t at = (size_t)i * N + j;
      const double got = D_DTYPE == DG_DTYPE_FLOAT32 ? ((const float*)d)[at] : from_bf16(((const uint16_t*)d)[at]);
      non_finite += !isfinite(got);
      xy += got * ref;
      xx_yy += got * got + ref * ref;
    }
  }
  const double diff = 1.0 - 2.0 * xy / xx_yy;
  printf("BF16 GEMM %dx%dx%d, D %s: first call (JIT + run) %.3f s, second call %.3f ms, calc_diff %.2e, %d non-finite\n",
         M, N, K, dg_dtype_name(D_DTYPE), cold, warm * 1e3, diff, non_finite);
  dg_tensor_destroy(ta);
  dg_tensor_destroy(tb);
  dg_tensor_destroy(td);
  dg_stream_destroy(stream);
  cu.free(da);
  cu.free(db);
  cu.free(dd);
  free(a);
  free(b);
  free(d);
  if (non_finite || !(diff < 1e-5)) {
    fprintf(stderr, "FAILED: result differs from the reference\n");
    return 1;
  }
  printf("OK\n");
  return 0;
}

static int usage_error(const char* fmt, const char* arg) {
  fprintf(stderr, "dg-demo: ");
  fprintf(stderr, fmt, arg);
  fprintf(stderr, "\n\n%s", kUsage);
  return 2;
}

static int parse_shape(const char* text) {
  long m = 0, n = 0, k = 0;
  char tail = 0;
  if (sscanf(text, "%ld,%ld,%ld%c", &m, &n, &k, &tail) != 3 || m < 1 || n < 1 || k < 1 || m > kMaxDim ||
      n > kMaxDim || k > kMaxDim || (double)m * n * k > kMaxReferenceMacs)
    return 0;
  M = (int)m, N = (int)n, K = (int)k;
  return 1;
}

/* -1 to run, else the exit status (an option answered, or a usage error). */
static int parse_args(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const char* arg = argv[i];
    if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
      fputs(kUsage, stdout);
      return 0;
    } else if (strcmp(arg, "--version") == 0) {
      printf("dg-demo (libdg) %s\n", dg_version());
      return 0;
    } else if (strcmp(arg, "--shape") == 0 || strcmp(arg, "--dtype") == 0) {
      if (i + 1 >= argc) return usage_error("%s needs a value", arg);
      const char* value = argv[++i];
      if (arg[2] == 's' && !parse_shape(value))
        return usage_error("--shape '%s': expected M,N,K, each 1..1048576, M*N*K <= 2^36", value);
      if (arg[2] == 'd') {
        if (strcmp(value, "bf16") == 0 || strcmp(value, "bfloat16") == 0) D_DTYPE = DG_DTYPE_BFLOAT16;
        else if (strcmp(value, "fp32") == 0 || strcmp(value, "float32") == 0) D_DTYPE = DG_DTYPE_FLOAT32;
        else return usage_error("--dtype '%s': expected bf16 or fp32", value);
      }
    } else {
      return usage_error("unknown argument '%s'", arg);
    }
  }
  return -1;
}

int main(int argc, char** argv) {
  const int parsed = parse_args(argc, argv);
  if (parsed >= 0) return parsed;
  printf("libdg %s\n", dg_version());
  int32_t devices = 0;
  if (dg_device_count(&devices) != DG_SUCCESS || devices == 0) {
    printf("no GPU here (%s)\n", devices == 0 && dg_last_error()[0] ? dg_last_error() : "0 devices");
    return compile_offline();
  }
  int32_t major = 0, minor = 0;
  CHECK(dg_device_get_capability(0, &major, &minor));
  printf("device 0: compute capability %d.%d, %d SMs\n", major, minor, dg_get_num_sms());
  return run_on_gpu();
}
