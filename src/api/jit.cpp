// JIT statistics.
#include "jit/kernel_cache.h"
#include "runtime/status.h"

extern "C" {

DG_API dg_status dg_jit_get_stats(int64_t* compiled, int64_t* loaded_from_disk, int64_t* memory_hits) {
  const dg::jit::Stats& s = dg::jit::stats();
  if (compiled) *compiled = s.compiled.load();
  if (loaded_from_disk) *loaded_from_disk = s.loaded_from_disk.load();
  if (memory_hits) *memory_hits = s.memory_hits.load();
  return DG_SUCCESS;
}

}  // extern "C"
