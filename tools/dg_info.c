/* dg-info: prints dg_info_report(), the report a bug report starts from (libdg's version and
 * build, NVRTC, the driver, GPUs, the JIT cache and every DG_* variable set). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dg.h"

static const char kUsage[] =
    "Usage: dg-info [--help] [--version]\n"
    "\n"
    "Prints what libdg finds on this machine: its version and build, the NVRTC and CUDA driver\n"
    "it loads (and from where), each GPU and whether libdg runs on it, the JIT cache directory,\n"
    "and the DG_* environment variables that are set. Paste it into bug reports.\n"
    "\n"
    "  --help     this text\n"
    "  --version  the libdg version\n"
    "\n"
    "Exit status: 0 on success (also without a GPU), 1 when the report cannot be made, 2 on a\n"
    "usage error.\n";

/* The report can grow between the size query and the copy (a cache entry appears): a few tries. */
enum { kTries = 3 };

static int print_report(void) {
  for (int attempt = 0; attempt < kTries; ++attempt) {
    size_t size = 0;
    if (dg_info_report(NULL, 0, &size) != DG_SUCCESS) break;
    char* text = malloc(size);
    if (text == NULL) {
      fprintf(stderr, "dg-info: out of memory (%zu bytes)\n", size);
      return 1;
    }
    if (dg_info_report(text, size, NULL) == DG_SUCCESS) {
      fputs(text, stdout);
      free(text);
      return fflush(stdout) == 0 ? 0 : 1;
    }
    free(text);
  }
  fprintf(stderr, "dg-info: %s\n", dg_last_error());
  return 1;
}

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      fputs(kUsage, stdout);
      return 0;
    }
    if (strcmp(argv[i], "--version") == 0) {
      printf("dg-info (libdg) %s\n", dg_version());
      return 0;
    }
    fprintf(stderr, "dg-info: unknown argument '%s'\n\n%s", argv[i], kUsage);
    return 2;
  }
  return print_report();
}
