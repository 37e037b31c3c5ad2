/* dg-tune: tunes the GEMM kernel configs of a problem list on this GPU and writes the tuning table
 * that libdg's GEMM calls then consult (dg_tune; docs/tuning.md); with --prepare, compiles the
 * kernels the list's calls run into the JIT cache instead (dg_prepare_problems), on a GPU or, with
 * --offline, for a named GPU on a machine without one. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dg.h"

static const char kUsage[] =
    "Usage: dg-tune [options] PROBLEM_LIST\n"
    "\n"
    "Times the heuristic's best-ranked kernel configs of each GEMM problem of PROBLEM_LIST on a GPU\n"
    "and writes the fastest of each into the tuning table that libdg's GEMM calls consult (by\n"
    "default the GPU's table beside the JIT cache: $DG_TUNING_TABLE, else\n"
    "$DG_JIT_CACHE_DIR/libdg/tuning-<gpu>-<sms>sm.txt). A problem list has one line per family of\n"
    "problems, e.g.\n"
    "    dense fp8 nt n=24576 k=1536 m=128,256,4096\n"
    "    contiguous fp8 n=4096 k=7168 g=8,32 m=512\n"
    "    masked fp8 n=4096 k=7168 g=32 m=8,16,32,64\n"
    "    contiguous fp8 n=4096 k=7168 g=8 m=512 epilogue=swiglu_fp8   (the fused gate / up GEMM)\n"
    "    kgrouped fp8 n=7168 k=4096 g=8 m=4096                        (weight gradients, K per group)\n"
    "(docs/tuning.md; tools/problems/ holds DeepSeek-V3's and Llama lists).\n"
    "\n"
    "With --prepare it times nothing and writes no table: it compiles into the JIT cache the kernel\n"
    "each problem's calls run (the table's config for a tuned problem, else the heuristic's), on the\n"
    "GPU, or with --offline for a GPU this machine need not have, e.g. while building a container:\n"
    "    dg-tune --prepare --offline \"NVIDIA H200\" -o tuning-h200.txt tools/problems/deepseek-v3.txt\n"
    "\n"
    "  -o, --output PATH       the table to write (default: the GPU's table, as above)\n"
    "  -d, --device N          the CUDA device (default 0)\n"
    "  -c, --candidates N      configs timed per problem, the heuristic's own first: 1..16 (default 4)\n"
    "  -r, --repetitions N     timed runs of each config, medians compared: 1..100 (default 7;\n"
    "                          masked problems: on each of 8 samples of counts spread around m)\n"
    "      --replace           write only this list's problems (default: keep the table's others)\n"
    "      --prepare           compile the kernels the list's calls run instead of tuning; -o then\n"
    "                          names the table to read (default: the GPU's, as above)\n"
    "      --offline GPU_NAME  with --prepare: no GPU; compile for this GPU as the driver names it\n"
    "                          (e.g. \"NVIDIA H200\"; SM90), into $DG_JIT_CACHE_DIR\n"
    "      --sms N             with --offline: the GPU's SM count, 1..1024 (default 132)\n"
    "  -q, --quiet             no progress lines\n"
    "  -h, --help              this text\n"
    "      --version           the libdg version\n"
    "\n"
    "Exit status: 0 when the table is written (--prepare: the kernels compiled), 1 when tuning or\n"
    "compiling fails (the reason on stderr; no table is written), 2 on a usage error.\n";

/* Problem lists larger than this are not lists. */
enum { kMaxListBytes = 16 << 20 };

struct Args {
  const char* list;
  const char* output;
  const char* offline; /* --offline: the GPU's name */
  int device, candidates, repetitions, replace, quiet, prepare, sms;
};

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static double g_start;

static void on_progress(int64_t done, int64_t total, const char* line, void* user_data) {
  (void)done, (void)total, (void)user_data;
  fprintf(stderr, "dg-tune %7.1f s  %s\n", now_s() - g_start, line);
  fflush(stderr);
}

/* A whole number in [lo, hi] from `text`; 0 when it is not one. */
static int parse_int(const char* text, int lo, int hi, int* out) {
  char* end = NULL;
  errno = 0;
  const long v = strtol(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0' || v < lo || v > hi) return 0;
  *out = (int)v;
  return 1;
}

static int usage_error(const char* what, const char* arg) {
  fprintf(stderr, "dg-tune: %s '%s'\n\n%s", what, arg, kUsage);
  return 2;
}

/* 0 to tune, 1 when an option was answered, 2 on a usage error. */
static int parse_args(int argc, char** argv, struct Args* a) {
  for (int i = 1; i < argc; ++i) {
    const char* s = argv[i];
    const int has_value = i + 1 < argc;
    if (!strcmp(s, "-h") || !strcmp(s, "--help")) return fputs(kUsage, stdout), 1;
    if (!strcmp(s, "--version")) return printf("dg-tune (libdg) %s\n", dg_version()), 1;
    if (!strcmp(s, "--replace")) a->replace = 1;
    else if (!strcmp(s, "--prepare")) a->prepare = 1;
    else if (!strcmp(s, "--offline") && has_value) a->offline = argv[++i];
    else if (!strcmp(s, "--sms") && has_value) {
      if (!parse_int(argv[++i], 1, 1024, &a->sms)) return usage_error("bad SM count (1..1024)", argv[i]);
    }
    else if (!strcmp(s, "-q") || !strcmp(s, "--quiet")) a->quiet = 1;
    else if ((!strcmp(s, "-o") || !strcmp(s, "--output")) && has_value) a->output = argv[++i];
    else if ((!strcmp(s, "-d") || !strcmp(s, "--device")) && has_value) {
      if (!parse_int(argv[++i], 0, 1023, &a->device)) return usage_error("bad device", argv[i]);
    } else if ((!strcmp(s, "-c") || !strcmp(s, "--candidates")) && has_value) {
      if (!parse_int(argv[++i], 1, 16, &a->candidates)) return usage_error("bad candidate count (1..16)", argv[i]);
    } else if ((!strcmp(s, "-r") || !strcmp(s, "--repetitions")) && has_value) {
      if (!parse_int(argv[++i], 1, 100, &a->repetitions)) return usage_error("bad repetitions (1..100)", argv[i]);
    } else if (s[0] == '-' && s[1] != '\0') {
      return usage_error(has_value ? "unknown option" : "unknown option or missing value", s);
    } else if (a->list == NULL) {
      a->list = s;
    } else {
      return usage_error("more than one problem list", s);
    }
  }
  if (a->list == NULL) return fprintf(stderr, "dg-tune: no problem list\n\n%s", kUsage), 2;
  if (a->offline != NULL && !a->prepare)
    return usage_error("--offline needs --prepare (tuning runs on a GPU); got --offline", a->offline);
  return 0;
}

/* The file's text, NUL-terminated (free it); NULL with a message on stderr. */
static char* read_list(const char* path) {
  FILE* f = fopen(path, "rb");
  if (f == NULL) return fprintf(stderr, "dg-tune: cannot open %s: %s\n", path, strerror(errno)), NULL;
  char* text = malloc(kMaxListBytes + 1);
  const size_t n = text ? fread(text, 1, kMaxListBytes + 1, f) : 0;
  const int failed = text == NULL || ferror(f) || n > kMaxListBytes;
  fclose(f);
  if (failed) {
    fprintf(stderr, "dg-tune: cannot read %s (%s)\n", path,
            text ? "larger than 16 MiB or unreadable" : "out of memory");
    free(text);
    return NULL;
  }
  text[n] = '\0';
  return text;
}

/* The stream to prepare or tune on: the GPU's, or (--offline) a description of the named GPU;
 * -o's table for --prepare. */
static dg_status open_stream(const struct Args* a, dg_stream** stream) {
  dg_config* config = NULL;
  dg_status st = DG_SUCCESS;
  if (a->prepare && a->output != NULL) {
    st = dg_config_create(&config);
    if (st == DG_SUCCESS) st = dg_config_set_string(config, DG_CONFIG_TUNING_TABLE, a->output);
  }
  if (st == DG_SUCCESS)
    st = a->offline != NULL ? dg_stream_create_offline_named(stream, 9, 0, a->sms, a->offline, config)
                            : dg_stream_create(stream, a->device, NULL, DG_STREAM_CREATE, config);
  dg_config_destroy(config);
  return st;
}

int main(int argc, char** argv) {
  struct Args a = {NULL, NULL, NULL, 0, 0, 0, 0, 0, 0, 132};
  const int parsed = parse_args(argc, argv, &a);
  if (parsed != 0) return parsed == 1 ? 0 : 2;
  char* list = read_list(a.list);
  if (list == NULL) return 1;
  g_start = now_s();
  dg_stream* stream = NULL;
  dg_status st = open_stream(&a, &stream);
  int64_t done = 0;
  if (st == DG_SUCCESS && a.prepare) {
    st = dg_prepare_problems(stream, list, &done);
  } else if (st == DG_SUCCESS) {
    dg_tune_options options = DG_TUNE_OPTIONS_INIT;
    options.candidates = a.candidates, options.repetitions = a.repetitions;
    options.table_path = a.output, options.replace = a.replace;
    options.progress = a.quiet ? NULL : on_progress;
    st = dg_tune(stream, list, &options, &done);
  }
  dg_stream_destroy(stream);
  free(list);
  if (st != DG_SUCCESS) {
    fprintf(stderr, "dg-tune: %s: %s\n", dg_status_string(st), dg_last_error());
    return 1;
  }
  if (!a.quiet)
    fprintf(stderr, "dg-tune: %s %lld problems of %s in %.1f s\n", a.prepare ? "prepared the kernels of" : "tuned",
            (long long)done, a.list, now_s() - g_start);
  return 0;
}
