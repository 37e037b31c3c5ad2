// The fused GEMM epilogue of dg_gemm_options.epilogue (docs/gemm_epilogues.md): reading it, the
// output dtypes and columns it implies, and its checks against one call.
#pragma once
#include <cstdint>

#include "dg.h"
#include "ops/gemm.h"
#include "runtime/tensor.h"

namespace dg::api {

// options.epilogue read and its own fields checked; `given` is false for NULL.
struct Epilogue {
  bool given = false;
  dg_gemm_epilogue e{};
};
dg_status read_epilogue(const dg_gemm_options& o, Epilogue* out);

// The dtypes d may have with this epilogue (FLOAT8_E4M3 only with one); checks d's dtype.
dg_status check_d_dtype(const Epilogue& e, const dg_tensor_s& d, bool fp32_allowed);

// D's columns for a GEMM of n columns: n, or n / 2 with SwiGLU (DG_ERROR_UNSUPPORTED unless
// n % 256 == 0).
dg_status epilogue_out_cols(const Epilogue& e, int64_t n, int64_t* cols);

// Checks the epilogue against the call (args->shape filled: kind, type, m, n, k, num_groups) and
// fills args->shape.epilogue, the bias and d's scales. has_c: a C term is given; d: the output.
dg_status apply_epilogue(const Epilogue& e, const dg_gemm_options& o, const dg_tensor_s& d, bool has_c,
                         ops::GemmArgs* args);

// The same for a prepare call, which knows d's dtype but no memory: the descriptors of the bias and
// d's scales are checked (their shapes and dtypes choose the kernel), their data is not
// (need_data false).
dg_status apply_epilogue(const Epilogue& e, const dg_gemm_options& o, dg_dtype d_dtype, bool has_c, bool need_data,
                         ops::GemmArgs* args);

}  // namespace dg::api
