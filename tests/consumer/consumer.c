/* Built by tests/check_consumer.cmake against the installed libdg through pkg-config. */
#include <dg.h>
#include <stdio.h>
#include <string.h>

int main(void) {
  if (strcmp(dg_version(), "0.0.0") == 0 || dg_version_number() != DG_VERSION_NUMBER) {
    fprintf(stderr, "version mismatch: header %d, library %s\n", DG_VERSION_NUMBER, dg_version());
    return 1;
  }
  int64_t aligned = 0;
  if (dg_get_tma_aligned_size(5, 4, &aligned) != DG_SUCCESS || aligned != 8) {
    fprintf(stderr, "dg_get_tma_aligned_size(5, 4) gave %lld\n", (long long)aligned);
    return 1;
  }
  if (dg_get_tma_aligned_size(5, 3, &aligned) != DG_ERROR_INVALID_ARGUMENT || strstr(dg_last_error(), "element_size") == NULL) {
    fprintf(stderr, "expected an element_size error, got '%s'\n", dg_last_error());
    return 1;
  }
  printf("consumer ok: libdg %s\n", dg_version());
  return 0;
}
