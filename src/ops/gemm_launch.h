// The one launch path of the SM90 GEMM kernel (templates/kernels/sm90_gemm.cu.j2), shared by the
// dense, M-grouped and K-grouped calls: config choice, kernel loading (compiled together when
// preparing), the kernels that run before the GEMM, the parameters every call fills alike, and the
// launch. A family supplies what differs: its prologue and its TMA maps.
#pragma once
#include <cstdint>

#include "ops/gemm.h"
#include "ops/transpose.h"
#include "runtime/function_ref.h"
#include "runtime/launch.h"

namespace dg::ops {

// An operand as the kernel reads it: base, elements between memory rows, memory order.
struct OperandView {
  const void* data = nullptr;
  int64_t ld = 0;
  Major major = Major::kK;
};

// Transposes that make K-major copies of FP8 operands stored MN-major.
struct OperandCopies {
  TransposeParams params[2];
  int count = 0;
};

// SM90 FP8 WGMMA reads K-major operands only: points the MN-major ones of an FP8 problem (a: [m, k],
// b: [n, k]) at K-major copies in `workspace` (fp8_gemm_workspace's layout; the API checked its size
// and alignment) and returns the transposes that make them. While preparing there is no workspace
// and the copies' addresses are NULL.
OperandCopies k_major_copies(GemmKind kind, int64_t m, int64_t n, int64_t k, void* workspace, OperandView* a,
                             OperandView* b);

// Loads (prepare_only) or runs the copies on the stream.
dg_status run_copies(const dg_stream_s& stream, const OperandCopies& copies, bool prepare_only);

// A call's prologue is asked twice: kLoad compiles and loads every kernel it runs, before anything
// runs (a failing compile leaves the outputs untouched); kRun runs them on the stream.
enum class Phase { kLoad, kRun };
using Prologue = FunctionRef<dg_status(Phase)>;

// Fills the family's fields and TMA maps into `params` (problem size, rasterisation and the
// walk's divisors are filled) and launches `kernel` with `launch` (grid, block, shared memory,
// cluster and PDL set). Runs with the device's context current.
using Launcher =
    FunctionRef<dg_status(const GemmConfig& config, const Kernel& kernel, Sm90GemmParams* params, const LaunchConfig& launch)>;

// Picks the config of `s` on num_sms SMs (heuristic or overrides), loads the GEMM kernel and the
// prologue's; with prepare_only stops there. Else runs the prologue and then `launcher`.
dg_status run_sm90_gemm(const dg_stream_s& stream, const GemmShape& s, int num_sms, const GemmOverride& o,
                        bool prepare_only, Prologue prologue, Launcher launcher);

}  // namespace dg::ops
