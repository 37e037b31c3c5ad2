// Pieces of argument checking shared by the dense, M-grouped and K-grouped GEMM entry points.
#pragma once
#include <cstdint>

#include "api/matrix_view.h"
#include "dg.h"
#include "ops/gemm.h"
#include "runtime/tensor.h"

namespace dg::api {

// Reads `options` (NULL: defaults) and checks its enum fields.
dg_status read_options(const dg_gemm_options* options, dg_gemm_options* out);

// The kernel-config fields of the options as the heuristic's overrides.
ops::GemmOverride override_of(const dg_gemm_options& o);

// Picks the memory order of an operand view for TMA: K-major (stride 1 along K, rows 16-byte
// multiples apart) preferred, else MN-major. `ld` receives the stride between TMA rows. With `fp8`
// the messages say how FP8 reads MN-major operands.
dg_status operand_major(const dg_tensor_s& t, const View& v, const char* arg, const char* view_name, bool fp8,
                        ops::Major* major, int64_t* ld);

// Per-token scales [rows, sf_k] as a view: MN-major TMA-aligned (stride 1 along rows, a multiple of
// 4 elements >= rows along K blocks). `ld` receives the stride between K blocks.
dg_status check_token_scales(const dg_tensor_s& t, bool transposed, const char* arg, int64_t rows, int64_t sf_k,
                             int64_t* ld);

// FP8 operands that are MN-major in memory (s.major_a / s.major_b) are read from K-major copies in
// o.workspace (ops::fp8_gemm_workspace's layout): checks that it is given, large enough and
// 256-byte aligned. a_name / b_name: the operands' views for the messages.
dg_status check_workspace(const dg_gemm_options& o, const ops::GemmShape& s, const char* a_name, const char* b_name);

// An INT32 vector of `size` entries, stride 1, non-NULL where it has entries; `what` says what
// the size is in the message.
dg_status check_int_vector(const dg_tensor_s& t, const char* arg, int64_t size, const char* what);

// The K-grouped calls' host ks: num_groups (1 .. 2^31 - 1) entries, each >= 0 and a multiple of
// 128 (dg_get_mk_alignment_for_contiguous_layout()); their sum, below 2^31, in *total.
dg_status check_ks(const int64_t* ks, int64_t num_groups, int64_t* total);

}  // namespace dg::api
