// Two independent steps at once, for calls that may compile several cold kernels (the prepare
// entry points): NVRTC compiles of different kernels overlap, so the call waits about as long as
// its slowest kernel instead of the sum.
#pragma once
#include <functional>

#include "dg.h"

namespace dg::jit {

// Runs `side` on a new thread while `main` runs on this one (both when no thread can be started).
// Returns main's failure, else side's with its message as this thread's dg_last_error(), else
// DG_SUCCESS. An exception in `side` becomes DG_ERROR_OUT_OF_MEMORY or DG_ERROR_INTERNAL.
dg_status run_concurrently(const std::function<dg_status()>& main, const std::function<dg_status()>& side);

}  // namespace dg::jit
